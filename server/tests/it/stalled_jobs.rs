//! Stalled jobs (issue 44 item 3), with a real Python job on the local
//! executor that prints one line and then sleeps: the stall watcher,
//! driven half an hour ahead, marks it stalled (its REST record, its
//! history, the badge in the table, the banner on its page) and tells a
//! subscriber; a stack dump through REST runs a real py-spy (built from
//! PyPI by the console, as `make run` would) on the replica and writes the
//! dump into its log, where the log API shows it, without the dump
//! counting as a sign of life; a metric point clears the mark; a job with
//! no running replica is a 409 (a viewer's 403: the role matrix).

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common;
use crate::common::rest::{call, key_and_cookie, wait_for, Answer};
use crate::common::site::Site;

const MIN: i64 = 60_000;

async fn api(site: &Site, key: &str, method: Method, path: &str, body: Option<Value>) -> Answer {
    call(site, method, path, Some(key), body).await
}

async fn job(site: &Site, key: &str, name: &str) -> Value {
    let got = api(
        site,
        key,
        Method::GET,
        &format!("/api/v1/jobs/{name}"),
        None,
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    got.json()
}

async fn log(site: &Site, key: &str, name: &str) -> String {
    let got = api(
        site,
        key,
        Method::GET,
        &format!("/api/v1/jobs/{name}/pods/trainer-0/log?tail=200"),
        None,
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    got.body
}

/// The first delivery of subscription `sub`, once there is one.
async fn first_delivery(site: &Site, key: &str, sub: i64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let path = format!("/api/v1/notifications/deliveries?subscription={sub}");
        let got = api(site, key, Method::GET, &path, None).await;
        if let Some(d) = got.json().as_array().and_then(|l| l.first()) {
            return d.clone();
        }
        assert!(Instant::now() < deadline, "nothing delivered to {sub}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

on_both_databases!(
    a_quiet_python_job_is_marked_stalled_told_dumped_with_py_spy_and_cleared_when_it_moves,
    super::stalled_job
);
async fn stalled_job(db: common::TestDb) {
    let config = common::site::config(&db);
    let site = common::site::site_from(db, config).await;
    let (key, cookie) = key_and_cookie(&site, "quiet").await;
    let sub = api(
        &site,
        &key,
        Method::POST,
        "/api/v1/notifications/subscriptions",
        Some(
            json!({"subject": {"kind": "account"}, "events": ["stalled"],
                    "channel": {"kind": "email"}}),
        ),
    )
    .await;
    assert_eq!(sub.status, StatusCode::CREATED, "{}", sub.body);
    let sub = sub.json()["id"].as_i64().unwrap();

    let spec = json!({"name": "hang", "num_trainers": 1,
        "command": ["python3", "-u", "-c",
                    "import time\nprint('loading the data', flush=True)\ntime.sleep(600)\n"],
        "trainer": {"cpu": "500m", "memory": "256Mi"}});
    let made = api(&site, &key, Method::POST, "/api/v1/jobs", Some(spec)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    wait_for(&site, &key, "hang", "running").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !log(&site, &key, "hang").await.contains("loading the data") {
        assert!(Instant::now() < deadline, "the job never printed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(job(&site, &key, "hang")
        .await
        .get("stalled_since")
        .is_none());
    // The interpreter's start-up used CPU: wait until the sampler (1 s
    // here) has seen it idle for a while, so that what the watcher judges
    // ahead is the sleep, not a sample still on its way.
    let store = server::storage::stalls::StallStore::new(site.db.pool.clone());
    let printed = server::time::now_ms();
    loop {
        let now = server::time::now_ms();
        let running = store.running(0).await.unwrap();
        let cpu_at = running[0].activity.cpu_at;
        if now - printed >= 2_500 && cpu_at.is_none_or(|t| now - t >= 2_500) {
            break;
        }
        assert!(now - printed < 30_000, "still busy: {cpu_at:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Half an hour of quiet later, by the watcher's clock.
    let watch = server::stalls::StallWatch::new(site.db.pool.clone(), Duration::from_secs(1800));
    let started = server::time::now_ms();
    watch.pass_at(&site.services, started + 29 * MIN).await;
    assert!(
        job(&site, &key, "hang")
            .await
            .get("stalled_since")
            .is_none(),
        "stalled before its half hour"
    );
    watch.pass_at(&site.services, started + 31 * MIN).await;
    let marked = job(&site, &key, "hang").await;
    let since = marked["stalled_since"].as_i64().expect("stalled");
    assert!(since <= started, "since {since}, judged from {started}");
    assert_eq!(marked["status"], "running");

    // Told, in its history, badged in the table, bannered on its page.
    let told = first_delivery(&site, &key, sub).await;
    assert_eq!(told["notice"]["event"], "stalled", "{told:#?}");
    let said = told["notice"]["message"].as_str().unwrap();
    assert!(
        said.starts_with("No log line, metric point or CPU use since"),
        "{said}"
    );
    let detail = api(&site, &key, Method::GET, "/api/v1/jobs/hang/detail", None).await;
    let history = detail.json()["history"].clone();
    assert!(
        history
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["state"] == "stalled" && e["pod"].is_null()),
        "{history:#?}"
    );
    let table = site.page_ok(&cookie, "/jobs").await;
    assert!(
        table.contains(r#"data-testid="stalled""#),
        "no badge in the table"
    );
    let page = site.page_ok(&cookie, "/jobs/hang").await;
    assert!(page.contains(r#"data-testid="job-stalled""#), "no banner");
    assert!(
        page.contains(r#"data-testid="stack-dump""#),
        "no dump button"
    );

    // A stack dump: py-spy reads the sleeping interpreter.
    let dumped = api(
        &site,
        &key,
        Method::POST,
        "/api/v1/jobs/hang/stack-dump",
        None,
    )
    .await;
    assert_eq!(dumped.status, StatusCode::OK, "{}", dumped.body);
    let dumps = dumped.json();
    let first = &dumps.as_array().unwrap()[0];
    assert_eq!(first["pod"], "trainer-0");
    assert!(first.get("error").is_none(), "{first:#?}");
    let text = first["text"].as_str().unwrap();
    assert!(text.contains("MainThread"), "{text}");
    assert!(text.contains("<module> (<string>:3)"), "{text}");
    let shown = log(&site, &key, "hang").await;
    assert!(
        shown.contains("===== stack dump of trainer-0 (py-spy) at "),
        "{shown}"
    );
    assert!(shown.contains("<module> (<string>:3)"), "{shown}");
    assert!(shown.contains("===== end of stack dump ====="), "{shown}");

    // The dump is not a sign of life: still stalled since the same time.
    watch.pass_at(&site.services, started + 32 * MIN).await;
    let after = job(&site, &key, "hang").await;
    let detail = api(&site, &key, Method::GET, "/api/v1/jobs/hang/detail", None).await;
    assert_eq!(
        after["stalled_since"],
        since,
        "{}\n{}",
        detail.body,
        log(&site, &key, "hang").await
    );

    // A metric point is life: the mark is cleared, and the history says so.
    let sent = api(
        &site,
        &key,
        Method::POST,
        "/api/v1/jobs/hang/metrics",
        Some(json!([{"tag": "loss", "step": 1, "value": 0.5}])),
    )
    .await;
    assert!(sent.status.is_success(), "{}", sent.body);
    watch.pass_at(&site.services, server::time::now_ms()).await;
    assert!(job(&site, &key, "hang")
        .await
        .get("stalled_since")
        .is_none());
    let detail = api(&site, &key, Method::GET, "/api/v1/jobs/hang/detail", None).await;
    assert!(
        detail.json()["history"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["state"] == "running"
                && e["message"].as_str().unwrap().starts_with("Moving again")),
        "{}",
        detail.body
    );

    // Stopped, there is nothing to dump.
    let stopped = api(&site, &key, Method::POST, "/api/v1/jobs/hang/stop", None).await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
    let none = api(
        &site,
        &key,
        Method::POST,
        "/api/v1/jobs/hang/stack-dump",
        None,
    )
    .await;
    assert_eq!(none.status, StatusCode::CONFLICT, "{}", none.body);
}

/// A console whose local executor has two GPUs: simulated, as
/// `local_scheduling.rs` does, for this machine has none.
async fn machine_with_gpus(db: common::TestDb) -> Site {
    let config = common::site::config(&db);
    let config = server::console::Config {
        local_capacity: server::local::capacity::CapacitySettings {
            gpus: server::local::capacity::GpuSetting::Count(2),
            ..config.local_capacity.clone()
        },
        ..config
    };
    common::site::site_from(db, config).await
}

/// GPU utilisation samples for `pod` of job `job_id` at `at` (Unix ms):
/// what the sampler writes from `nvidia-smi`, which this machine lacks,
/// written here in its place.
async fn gpu_samples(site: &Site, job_id: i64, at: &[i64], percent: f64) {
    let samples: Vec<app::models::PodSample> = at
        .iter()
        .map(|t| app::models::PodSample {
            pod: "trainer-0".into(),
            t: *t as f64 / 1000.0,
            usage: app::models::PodUsage {
                gpu_util: Some(percent),
                gpu_memory: Some(1e9),
                ..Default::default()
            },
        })
        .collect();
    server::storage::samples::ResourceStore::new(site.db.pool.clone())
        .insert(job_id, &samples)
        .await
        .unwrap();
}

on_both_databases!(
    gpus_held_under_five_percent_for_the_window_warn_the_owner_and_show_to_the_site_admin,
    super::idle_gpus
);
async fn idle_gpus(db: common::TestDb) {
    let site = machine_with_gpus(db).await;
    let (key, cookie) = key_and_cookie(&site, "gpus").await;
    let spec = json!({"name": "holder", "num_trainers": 1, "command": ["sleep", "600"],
        "trainer": {"cpu": "100m", "memory": "64Mi", "gpu": 1}});
    let made = api(&site, &key, Method::POST, "/api/v1/jobs", Some(spec)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    wait_for(&site, &key, "holder", "running").await;
    let sub = api(
        &site,
        &key,
        Method::POST,
        "/api/v1/notifications/subscriptions",
        Some(
            json!({"subject": {"kind": "job", "name": "holder"}, "events": ["idle_gpus"],
                    "channel": {"kind": "email"}}),
        ),
    )
    .await;
    assert_eq!(sub.status, StatusCode::CREATED, "{}", sub.body);
    let sub = sub.json()["id"].as_i64().unwrap();
    let store = server::storage::stalls::StallStore::new(site.db.pool.clone());
    let id = store.running(0).await.unwrap()[0].id;

    // Half an hour ahead, every sample of the window at 2%.
    let watch = server::stalls::StallWatch::new(site.db.pool.clone(), Duration::from_secs(1800));
    let now = server::time::now_ms() + 31 * MIN;
    let window: Vec<i64> = (0..30).map(|m| now - m * MIN).collect();
    gpu_samples(&site, id, &window, 2.0).await;
    watch.pass_at(&site.services, now).await;
    let marked = job(&site, &key, "holder").await;
    assert_eq!(marked["gpus_idle_since"], now - 30 * MIN, "{marked}");

    // The owner is told; the table and the page say so.
    let told = first_delivery(&site, &key, sub).await;
    assert_eq!(told["notice"]["event"], "idle_gpus", "{told:#?}");
    let said = told["notice"]["message"].as_str().unwrap();
    assert!(
        said.starts_with("1 GPU held under 5% utilisation since"),
        "{said}"
    );
    let table = site.page_ok(&cookie, "/jobs").await;
    assert!(table.contains(r#"data-testid="gpus-idle""#), "no badge");
    let page = site.page_ok(&cookie, "/jobs/holder").await;
    assert!(page.contains(r#"data-testid="job-gpus-idle""#), "no banner");

    // The site admin sees it across accounts; the account's owner may not.
    let admin = site.admin_key().await;
    let listed = api(&site, &admin, Method::GET, "/api/v1/admin/idle-gpus", None).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let rows = listed.json();
    assert_eq!(rows[0]["account"], "gpus", "{rows}");
    assert_eq!(rows[0]["job"], "holder", "{rows}");
    assert_eq!(rows[0]["gpus"], 1, "{rows}");
    let admin_cookie = site.admin_cookie().await;
    let admin_page = site.page_ok(&admin_cookie, "/admin").await;
    assert!(
        admin_page.contains(r#"data-testid="idle-gpus""#)
            && admin_page.contains(r#"data-account="gpus" data-job="holder""#),
        "the admin page does not list it"
    );
    let refused = api(&site, &key, Method::GET, "/api/v1/admin/idle-gpus", None).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);

    // One busy sample clears it.
    gpu_samples(&site, id, &[now + 1_000], 40.0).await;
    watch.pass_at(&site.services, now + 2_000).await;
    assert!(job(&site, &key, "holder")
        .await
        .get("gpus_idle_since")
        .is_none());
    let listed = api(&site, &admin, Method::GET, "/api/v1/admin/idle-gpus", None).await;
    assert_eq!(listed.json(), json!([]));
    api(&site, &key, Method::POST, "/api/v1/jobs/holder/stop", None).await;
}
