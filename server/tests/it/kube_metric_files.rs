//! Metric files written inside pods on the real node reach PaddleBoard as a
//! local job's do (`paddlecloud.ship`, see docs/paddleboard.md): several
//! files, a run resumed into a second file of the same folder, each point
//! on the board within 2 s of being written, the pod reaching nothing but
//! the console.

use crate::common;
use crate::real_node::{log, wait_for, NodeConsole};

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{Method, StatusCode};
use serde_json::json;

use common::rest::Endpoint;

/// Writes `runs/a` (6 points 1.5 s apart, each printed with the time it was
/// flushed), resumes it in a second file, and writes `runs/b`.
const WRITER: &str = r#"
import time
from visualdl import LogWriter
a = LogWriter(logdir="runs/a")
for step in range(6):
    a.add_scalar(tag="loss", value=1.0 / (step + 1), step=step)
    a.flush()
    print(f"wrote {step} at {time.time():.3f}", flush=True)
    time.sleep(1.5)
a.close()
resumed = LogWriter(logdir="runs/a")
resumed.add_scalar(tag="loss", value=0.01, step=6)
resumed.close()
b = LogWriter(logdir="runs/b")
b.add_scalar(tag="acc", value=0.9, step=0)
b.close()
print("done", flush=True)
"#;

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The steps of `tag`'s series and their values, as the board serves them.
async fn series(to: &Endpoint<'_>, key: &str, job: &str, tag: &str) -> BTreeMap<u64, f64> {
    let path = format!("/api/v1/jobs/{job}/metrics/{tag}?format=csv");
    let got = to.call(Method::GET, &path, Some(key), None).await;
    if got.status != StatusCode::OK {
        return BTreeMap::new();
    }
    got.body
        .lines()
        .skip(1)
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            let step = cells.first()?.parse().ok()?;
            let value = cells.last()?.parse().ok()?;
            Some((step, value))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visualdl_files_written_in_a_pod_are_on_the_board_within_two_seconds_resumed_runs_included_on_a_real_node(
) {
    let Some(NodeConsole { site, key, .. }) = NodeConsole::start("vdl", "metric files").await
    else {
        return;
    };
    let to = Endpoint::Here(&site);
    let spec = json!({
        "name": "live", "image": "paddlepaddle/paddle:3.3.1",
        "command": ["python3", "-c", WRITER],
        "num_trainers": 1, "trainer": {"cpu": "500m", "memory": "512Mi"},
    });
    let made = to
        .call(Method::POST, "/api/v1/jobs", Some(&key), Some(spec))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);

    // When each step was first seen on the board.
    let mut seen: BTreeMap<u64, f64> = BTreeMap::new();
    let deadline = now() + 180.0;
    while seen.len() < 6 {
        for step in series(&to, &key, "live", "runs/a/loss").await.into_keys() {
            seen.entry(step).or_insert_with(now);
        }
        assert!(now() < deadline, "only steps {seen:?} reached the board");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_for(&to, &key, "live", "succeeded", Duration::from_secs(60)).await;
    let printed = log(&to, &key, "live", "trainer-0").await;
    let written: BTreeMap<u64, f64> = printed
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("wrote ")?;
            let (step, at) = rest.split_once(" at ")?;
            Some((step.parse().ok()?, at.trim().parse().ok()?))
        })
        .collect();
    assert_eq!(written.len(), 6, "{printed}");
    let lags: Vec<(u64, f64)> = written
        .iter()
        .map(|(step, at)| (*step, seen[step] - at))
        .collect();
    eprintln!("seconds from a point's flush in the pod to the board: {lags:?}");
    for (step, lag) in &lags {
        assert!(
            *lag < 2.0,
            "step {step} took {lag:.2} s to reach the board: {lags:?}"
        );
    }

    // The resumed run's file and the second folder's, sent by the last pass.
    let loss = series(&to, &key, "live", "runs/a/loss").await;
    assert_eq!(
        loss.keys().copied().collect::<Vec<_>>(),
        (0..7).collect::<Vec<_>>(),
        "{loss:?}"
    );
    assert!((loss[&2] - 1.0 / 3.0).abs() < 1e-6, "{loss:?}");
    assert!((loss[&6] - 0.01).abs() < 1e-6, "{loss:?}");
    let acc = series(&to, &key, "live", "runs/b/acc").await;
    assert_eq!(acc.len(), 1, "{acc:?}");
    assert!((acc[&0] - 0.9).abs() < 1e-6, "{acc:?}");
}
