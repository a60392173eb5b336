//! Stalled jobs and stack dumps on the real node (issue 44 item 3): a
//! Python job in a container of the node's `python:3.11-slim` image prints
//! a line and sleeps; the stall watcher, driven half an hour ahead, reads
//! its pod's log through the API server and marks it stalled; a stack dump
//! streams the console's py-spy into the pod with `exec`, reads the
//! sleeping interpreter, and writes the dump into the container's output,
//! where the pod's log shows it, without it counting as a sign of life.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::json;

use crate::common::rest::Endpoint;
use crate::real_node::{job, log, NodeConsole};

const PROGRAM: &str = "import time\nprint('waiting for a peer', flush=True)\ntime.sleep(600)\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_pod_is_marked_stalled_and_dumped_with_py_spy_through_exec_on_a_real_node() {
    let Some(NodeConsole { site, key, .. }) = NodeConsole::start("stl", "stalls").await else {
        return;
    };
    let to = Endpoint::Here(&site);
    let spec = json!({
        "name": "peer", "image": "python:3.11-slim",
        "command": ["python3", "-u", "-c", PROGRAM],
        "num_trainers": 1, "trainer": {"cpu": "200m", "memory": "128Mi"},
    });
    let made = to
        .call(Method::POST, "/api/v1/jobs", Some(&key), Some(spec))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let deadline = Instant::now() + Duration::from_secs(180);
    while !log(&to, &key, "peer", "trainer-0")
        .await
        .contains("waiting for a peer")
    {
        assert!(
            Instant::now() < deadline,
            "{}",
            job(&to, &key, "peer").await
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let watch = server::stalls::StallWatch::new(site.db.pool.clone(), Duration::from_secs(1800));
    let now = server::time::now_ms();
    watch.pass_at(&site.services, now + 31 * 60_000).await;
    let marked = job(&to, &key, "peer").await;
    let since = marked["stalled_since"].as_i64().expect("stalled");
    assert!(since <= now, "{marked}");

    let dumped = to
        .call(
            Method::POST,
            "/api/v1/jobs/peer/stack-dump",
            Some(&key),
            None,
        )
        .await;
    assert_eq!(dumped.status, StatusCode::OK, "{}", dumped.body);
    let first = dumped.json()[0].clone();
    assert_eq!(first["pod"], "trainer-0");
    assert!(first.get("error").is_none(), "{first:#?}");
    let text = first["text"].as_str().unwrap();
    assert!(text.contains("MainThread"), "{text}");
    assert!(text.contains("<module> (<string>:3)"), "{text}");

    // In the pod's own log, stamped by the kubelet.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let shown = log(&to, &key, "peer", "trainer-0").await;
        if shown.contains("===== end of stack dump =====") {
            assert!(
                shown.contains("===== stack dump of trainer-0 (py-spy) at "),
                "{shown}"
            );
            assert!(shown.contains("<module> (<string>:3)"), "{shown}");
            break;
        }
        assert!(Instant::now() < deadline, "{shown}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Not a sign of life.
    watch.pass_at(&site.services, now + 32 * 60_000).await;
    assert_eq!(job(&to, &key, "peer").await["stalled_since"], since);

    let stopped = to
        .call(Method::POST, "/api/v1/jobs/peer/stop", Some(&key), None)
        .await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
}
