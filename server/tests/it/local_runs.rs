//! Local runs through the REST API, as the SDK and the CLI report them: a
//! start recorded once however often it is sent, output taken once from
//! replayed chunks (a gap refused naming the offset), each way of ending,
//! a run whose heartbeats stop marked lost and brought back by a late one,
//! and the run in the job table, its log console and PaddleBoard.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common;
use crate::common::rest::{call, Answer};
use crate::common::site::Site;

async fn post(site: &Site, key: &str, path: &str, body: Value) -> Answer {
    call(site, Method::POST, path, Some(key), Some(body)).await
}

fn start(client_id: &str) -> Value {
    json!({"client_id": client_id, "params": {"lr": 0.1, "layers": 3},
           "facts": {"host": "laptop", "user": "ada", "command": ["python", "train.py", "--lr", "0.1"],
                     "working_dir": "/home/ada/fit", "python": "3.11.2",
                     "packages": {"paddlepaddle": "3.0.0"},
                     "git": {"commit": "0123abcd", "branch": "main", "dirty": true, "diff": "+lr = 0.1\n"},
                     "client": "python"}})
}

async fn job(site: &Site, key: &str, name: &str) -> Value {
    call(
        site,
        Method::GET,
        &format!("/api/v1/jobs/{name}"),
        Some(key),
        None,
    )
    .await
    .json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_run_is_recorded_once_and_its_output_taken_once_however_often_it_is_sent() {
    let site = common::site::site().await;
    let (key, cookie) = common::rest::key_and_cookie(&site, "laptops").await;
    let first = post(&site, &key, "/api/v1/local-runs", start("c-1")).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let name = first.json()["name"].as_str().unwrap().to_owned();
    assert_eq!(name, "train");
    let again = post(&site, &key, "/api/v1/local-runs", start("c-1")).await;
    assert_eq!(
        again.json()["name"],
        "train",
        "the same client id: the same run"
    );
    let other = post(&site, &key, "/api/v1/local-runs", start("c-2")).await;
    assert_eq!(other.json()["name"], "train-2", "another run of train.py");

    let recorded = job(&site, &key, "train").await;
    assert_eq!(recorded["status"], "running");
    assert_eq!(recorded["source"], "local");
    let run = call(
        &site,
        Method::GET,
        "/api/v1/local-runs/train",
        Some(&key),
        None,
    )
    .await
    .json();
    assert_eq!(run["params"]["lr"], 0.1);
    assert_eq!(run["facts"]["host"], "laptop");
    assert_eq!(run["facts"]["git"]["dirty"], true);
    let more = post(
        &site,
        &key,
        "/api/v1/local-runs/train/params",
        json!({"layers": 4, "batch": 64}),
    )
    .await;
    assert_eq!(
        more.json()["params"],
        json!({"lr": 0.1, "layers": 4, "batch": 64})
    );

    // Output: a chunk, the same chunk again, one overlapping, then a gap.
    let log = |offset: u64, text: &str| json!({"offset": offset, "text": text});
    let path = "/api/v1/local-runs/train/log";
    assert_eq!(
        post(&site, &key, path, log(0, "epoch 1\n")).await.json()["length"],
        8
    );
    assert_eq!(
        post(&site, &key, path, log(0, "epoch 1\n")).await.json()["length"],
        8
    );
    assert_eq!(
        post(&site, &key, path, log(0, "epoch 1\nepoch 2\n"))
            .await
            .json()["length"],
        16
    );
    let printed = || async {
        let url = "/api/v1/jobs/train/pods/trainer-0/log";
        call(&site, Method::GET, url, Some(&key), None).await.body
    };
    let gap = post(&site, &key, path, log(40, "epoch 9\n")).await;
    assert_eq!(gap.status, StatusCode::CONFLICT, "{}", gap.body);
    assert!(gap.body.contains("send from offset 16"), "{}", gap.body);
    assert_eq!(printed().await, "epoch 1\nepoch 2\n");

    // A line cut between chunks goes on in the next; one the run ended
    // inside stays as it was printed, without a newline it never had.
    post(&site, &key, path, log(16, "READY")).await;
    post(&site, &key, path, log(21, " True\ndone")).await;
    assert_eq!(printed().await, "epoch 1\nepoch 2\nREADY True\ndone");

    // The run's metrics go where any job's go; PaddleBoard charts them.
    let points = json!([{"tag": "loss", "step": 0, "value": 1.5}, {"tag": "loss", "step": 1, "value": 0.75}]);
    let wrote = post(&site, &key, "/api/v1/jobs/train/metrics", points.clone()).await;
    assert!(wrote.status.is_success(), "{}", wrote.body);
    post(&site, &key, "/api/v1/jobs/train/metrics", points).await;
    let tags = call(
        &site,
        Method::GET,
        "/api/v1/jobs/train/metrics",
        Some(&key),
        None,
    )
    .await
    .json();
    assert_eq!(
        tags[0]["points"], 2,
        "replayed points replace, not add: {tags}"
    );

    // The job table says where it ran; the filter shows only local runs.
    let table = common::site::text(site.get("/jobs?source=local", Some(&cookie)).await).await;
    assert!(table.contains("laptop"), "{table}");
    assert!(table.contains(r#"data-job="train""#), "{table}");
    let console_only =
        common::site::text(site.get("/jobs?source=console", Some(&cookie)).await).await;
    assert!(
        !console_only.contains(r#"data-job="train""#),
        "{console_only}"
    );

    // The job's page says where and how it ran; "Run on the cluster" makes
    // a template of the same command whose --lr is a parameter.
    let page = common::site::text(site.get("/jobs/train/resources", Some(&cookie)).await).await;
    assert!(page.contains(r#"data-testid="local-run""#), "{page}");
    assert!(page.contains("laptop as ada"), "{page}");
    assert!(page.contains("python train.py --lr 0.1"), "{page}");
    assert!(
        page.contains("0123abcd (main) with uncommitted changes"),
        "{page}"
    );
    assert!(page.contains("+lr = 0.1"), "{page}");
    assert!(page.contains("layers = 4"), "{page}");
    assert!(page.contains(r#"href="/jobs/train/template""#), "{page}");
    let template = common::site::text(site.get("/jobs/train/template", Some(&cookie)).await).await;
    assert!(template.contains("{{lr}}"), "{template}");
    assert!(
        template.contains("From the local run train on laptop"),
        "{template}"
    );

    // Another account sees nothing of it.
    let stranger = common::rest::key_for(&site, "strangers").await;
    let theirs = post(&site, &stranger, path, log(16, "x\n")).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_way_a_local_run_ends_sets_its_status_once() {
    let site = common::site::site().await;
    let key = common::rest::key_for(&site, "enders").await;
    let cases = [
        (
            "ok",
            json!({"outcome": "succeeded", "exit_code": 0}),
            "succeeded",
            "",
        ),
        (
            "boom",
            json!({"outcome": "failed", "message": "ValueError: bad lr"}),
            "failed",
            "ValueError: bad lr",
        ),
        (
            "exit",
            json!({"outcome": "failed", "exit_code": 3}),
            "failed",
            "It exited with code 3.",
        ),
        (
            "ctrl",
            json!({"outcome": "stopped", "message": "KeyboardInterrupt"}),
            "stopped",
            "KeyboardInterrupt",
        ),
    ];
    for (name, end, status, message) in cases {
        let mut body = start(&format!("end-{name}"));
        body["name"] = json!(name);
        assert_eq!(
            post(&site, &key, "/api/v1/local-runs", body).await.status,
            StatusCode::CREATED
        );
        let ended = post(&site, &key, &format!("/api/v1/local-runs/{name}/end"), end).await;
        assert_eq!(ended.status, StatusCode::OK, "{}", ended.body);
        let job = job(&site, &key, name).await;
        assert_eq!(
            (
                job["status"].as_str().unwrap(),
                job["message"].as_str().unwrap()
            ),
            (status, message)
        );
        assert!(job["finished_at"].is_i64());
        // A replayed end changes nothing.
        let again = post(
            &site,
            &key,
            &format!("/api/v1/local-runs/{name}/end"),
            json!({"outcome": "succeeded"}),
        )
        .await;
        assert_eq!(again.json()["status"], status);
    }
    let bad = post(
        &site,
        &key,
        "/api/v1/local-runs",
        json!({"client_id": "has space"}),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.error().1.as_deref(), Some("client_id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_heartbeats_stop_is_lost_and_a_late_heartbeat_brings_it_back() {
    let site = common::site::site_configured(|config, _| server::console::Config {
        local_run_lost_after: Duration::from_secs(2),
        ..config
    })
    .await;
    let key = common::rest::key_for(&site, "sleepers").await;
    let mut body = start("lost-1");
    body["name"] = json!("nap");
    assert_eq!(
        post(&site, &key, "/api/v1/local-runs", body).await.status,
        StatusCode::CREATED
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    let lost = loop {
        let job = job(&site, &key, "nap").await;
        if job["status"] == "lost" {
            break job;
        }
        assert!(Instant::now() < deadline, "never lost: {job}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        lost["message"]
            .as_str()
            .unwrap()
            .starts_with("No heartbeat since"),
        "{lost}"
    );
    let beat = post(&site, &key, "/api/v1/local-runs/nap/heartbeat", json!({})).await;
    assert_eq!(beat.json()["status"], "running");
    assert_eq!(job(&site, &key, "nap").await["finished_at"], Value::Null);
    // Stop on the console cannot reach the laptop: the next heartbeat asks.
    let asked = post(&site, &key, "/api/v1/jobs/nap/stop", json!({})).await;
    assert_eq!(asked.json()["status"], "running", "{}", asked.body);
    assert!(
        asked.json()["message"]
            .as_str()
            .unwrap()
            .contains("asked it to stop"),
        "{}",
        asked.body
    );
    let beat = post(&site, &key, "/api/v1/local-runs/nap/heartbeat", json!({})).await;
    assert_eq!(beat.json(), json!({"status": "running", "stop": true}));
    // Its real end, reported late, replaces "lost".
    post(
        &site,
        &key,
        "/api/v1/local-runs/nap/end",
        json!({"outcome": "succeeded"}),
    )
    .await;
    assert_eq!(job(&site, &key, "nap").await["status"], "succeeded");
}
