//! The queue explains itself: jobs of two accounts compete for a machine
//! made small (`--local-cpus 2`), with priorities; the order they start in,
//! and what the queue says while they wait, are what a user would check.

use http::{Method, StatusCode};
use serde_json::{json, Value};
use server::console::Config;
use server::local::capacity::{CapacitySettings, GpuSetting};

use crate::common;
use crate::common::rest::{call, key_and_cookie, wait_for};
use crate::common::site::{site_from, Site};
use crate::common::smtp::SmtpServer;
use crate::members::join;

/// A one-trainer job of `cpu` CPUs sleeping `secs`, at `priority`.
fn job(name: &str, cpu: &str, secs: u32, priority: &str) -> Value {
    json!({
        "name": name,
        "command": ["sleep", secs.to_string()],
        "num_trainers": 1,
        "trainer": {"cpu": cpu, "memory": "64Mi"},
        "priority": priority,
    })
}

async fn submit(site: &Site, key: &str, spec: Value) -> (StatusCode, Value) {
    let got = call(site, Method::POST, "/api/v1/jobs", Some(key), Some(spec)).await;
    let body = serde_json::from_str(&got.body).unwrap_or(Value::Null);
    (got.status, body)
}

async fn queue(site: &Site, key: &str) -> Value {
    let got = call(site, Method::GET, "/api/v1/queue", Some(key), None).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    got.json()
}

/// `(position, account, name or "")` of each waiting request.
fn order(q: &Value) -> Vec<(u64, String, String)> {
    q["waiting"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["position"].as_u64().unwrap(),
                w["work"]["account"].as_str().unwrap().to_owned(),
                w["work"]["name"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

async fn status(site: &Site, key: &str, name: &str) -> String {
    call(
        site,
        Method::GET,
        &format!("/api/v1/jobs/{name}"),
        Some(key),
        None,
    )
    .await
    .json()["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A console whose machine has 2 CPUs (and 8 GiB, no GPU), its config
/// otherwise `config`'s.
async fn two_cpus(db: common::TestDb, config: Config) -> Site {
    let cfg = Config {
        local_capacity: CapacitySettings {
            cpu_millis: Some(2000),
            memory_bytes: Some(8 << 30),
            gpus: GpuSetting::Count(0),
        },
        ..config
    };
    site_from(db, cfg).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_of_two_accounts_wait_in_fair_share_and_priority_order_and_the_queue_says_why() {
    let db = common::sqlite().await;
    let smtp = SmtpServer::start().await;
    let mailing = Config {
        mail: server::mail::MailChoice::Smtp(smtp.url.clone()),
        public_url: Some("http://console.test".to_owned()),
        ..common::site::config(&db)
    };
    let site = two_cpus(db, mailing).await;
    let (acme, acme_page) = key_and_cookie(&site, "acme").await;
    let (beta, _) = key_and_cookie(&site, "beta").await;
    join(&site, &smtp, &acme, "bob@example.com", "member").await;
    let bob = server::access_keys::SqlAccessKeys::new(site.db.pool.clone())
        .create_for("acme", "bob@example.com", "k", Default::default())
        .await
        .unwrap()
        .key;

    // acme fills the machine.
    let (s, body) = submit(&site, &acme, job("hog", "2", 600, "normal")).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    wait_for(&site, &acme, "hog", "running").await;

    // A member may not ask for high priority until an owner allows it.
    let (s, body) = submit(&site, &bob, job("bobs", "1", 1, "high")).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("High priority is for the account's owners"),
        "{body}"
    );
    let (s, body) = submit(&site, &acme, job("typo", "1", 1, "urgent")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["field"], "priority", "{body}");

    // Waiting: acme's normal one, then beta's low one, then acme's high one
    // (by bob, once allowed).
    let (s, body) = submit(&site, &acme, job("first", "1", 600, "normal")).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    let (s, body) = submit(&site, &beta, job("late", "1", 600, "low")).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    let members = call(&site, Method::GET, "/api/v1/members", Some(&acme), None).await;
    let bob_id = members.json()["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == "bob@example.com")
        .map(|m| m["user_id"].as_i64().unwrap())
        .unwrap();
    let allowed = call(
        &site,
        Method::PUT,
        &format!("/api/v1/members/{bob_id}/priority"),
        Some(&acme),
        Some(json!({"high": true})),
    )
    .await;
    assert_eq!(allowed.status, StatusCode::NO_CONTENT, "{}", allowed.body);
    let members = call(&site, Method::GET, "/api/v1/members", Some(&bob), None).await;
    assert!(
        members.body.contains("\"high_priority\":true"),
        "{}",
        members.body
    );
    let (s, body) = submit(&site, &bob, job("urgent", "1", 600, "high")).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");

    // beta holds nothing, acme the whole machine: beta's goes first
    // whatever acme marks high; then acme's, high before normal.
    let seen = queue(&site, &acme).await;
    assert_eq!(
        order(&seen),
        vec![
            (1, "beta".into(), "".into()),
            (2, "acme".into(), "urgent".into()),
            (3, "acme".into(), "first".into()),
        ],
        "{seen}"
    );
    let head = &seen["waiting"][0];
    assert_eq!(head["reason"], "waiting for 1 CPU: 0 free", "{seen}");
    assert_eq!(head["held_by"][0]["name"], "hog", "{seen}");
    assert_eq!(head["priority"], "low");
    assert_eq!(seen["shares"][0]["account"], "acme");
    assert_eq!(seen["shares"][0]["share"], 1.0);
    // beta sees its own by name and acme's without.
    let theirs = queue(&site, &beta).await;
    assert_eq!(
        order(&theirs),
        vec![
            (1, "beta".into(), "late".into()),
            (2, "acme".into(), "".into()),
            (3, "acme".into(), "".into()),
        ],
        "{theirs}"
    );
    assert_eq!(theirs["waiting"][0]["held_by"][0]["name"], Value::Null);
    // The page says the same, with the rule.
    let page = site.page_ok(&acme_page, "/queue").await;
    assert!(page.contains("data-testid=\"queue-rule\""), "{page}");
    assert!(
        page.contains("data-position=\"2\" data-name=\"urgent\""),
        "{page}"
    );

    // The machine frees: beta's and acme's high one take it; the normal waits.
    let stopped = call(
        &site,
        Method::POST,
        "/api/v1/jobs/hog/stop",
        Some(&acme),
        None,
    )
    .await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
    wait_for(&site, &beta, "late", "running").await;
    wait_for(&site, &acme, "urgent", "running").await;
    assert_eq!(status(&site, &acme, "first").await, "pending");
    let seen = queue(&site, &acme).await;
    assert_eq!(
        order(&seen),
        vec![(1, "acme".into(), "first".into())],
        "{seen}"
    );
    let mut holders: Vec<String> = seen["waiting"][0]["held_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap_or("beta's").to_owned())
        .collect();
    holders.sort();
    assert_eq!(holders, vec!["beta's", "urgent"], "{seen}");
    for (key, name) in [(&beta, "late"), (&acme, "urgent"), (&acme, "first")] {
        call(
            &site,
            Method::POST,
            &format!("/api/v1/jobs/{name}/stop"),
            Some(key),
            None,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_past_its_time_limit_fails_saying_so_and_the_queue_estimates_starts_from_limits() {
    let db = common::sqlite().await;
    let config = common::site::config(&db);
    let site = two_cpus(db, config).await;
    let (key, _) = key_and_cookie(&site, "timed").await;
    let mut bad = job("bad", "1", 1, "normal");
    bad["max_runtime"] = json!("90x");
    let (s, body) = submit(&site, &key, bad).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["field"], "max_runtime", "{body}");

    let mut bounded = job("bounded", "2", 600, "normal");
    bounded["max_runtime"] = json!("10s");
    let (s, body) = submit(&site, &key, bounded).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    wait_for(&site, &key, "bounded", "running").await;
    let (s, body) = submit(&site, &key, job("next", "1", 1, "normal")).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    let (s, body) = submit(&site, &key, job("open-ended", "2", 600, "normal")).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    let (s, body) = submit(&site, &key, job("after", "1", 1, "normal")).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");

    let now = server::time::now_ms();
    // A submitted job joins the machine's queue once its supervisor has
    // started: wait until all three are in it.
    let mut seen = queue(&site, &key).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while seen["waiting"].as_array().map_or(0, Vec::len) < 3 {
        assert!(std::time::Instant::now() < deadline, "{seen}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        seen = queue(&site, &key).await;
    }
    let ends = seen["running"][0]["ends_by"]
        .as_i64()
        .expect("the limit's end");
    assert!(ends > now && ends <= now + 10_000, "{seen}");
    // `next` starts when `bounded` ends, at the latest. `open-ended` needs
    // both CPUs, one of which `next` (no limit) then holds: no estimate for
    // it, nor for `after` behind it.
    let starts: Vec<Option<i64>> = seen["waiting"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["starts_by"].as_i64())
        .collect();
    assert_eq!(starts, vec![Some(ends), None, None], "{seen}");

    // (Longer than `wait_for` waits: the limit is 10 s from its start.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    while status(&site, &key, "bounded").await != "failed" {
        assert!(std::time::Instant::now() < deadline, "bounded never failed");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let failed = wait_for(&site, &key, "bounded", "failed").await;
    assert_eq!(
        failed["message"], "Ran past its time limit of 10s: stopped.",
        "{failed}"
    );
    wait_for(&site, &key, "next", "succeeded").await;
    call(
        &site,
        Method::POST,
        "/api/v1/jobs/open-ended/stop",
        Some(&key),
        None,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_preemption_on_a_high_job_stops_its_accounts_low_job_which_queues_again_and_resumes() {
    let db = common::sqlite().await;
    let config = Config {
        preemption_grace: Some(std::time::Duration::from_secs(10)),
        ..common::site::config(&db)
    };
    let site = two_cpus(db, config).await;
    let (key, cookie) = key_and_cookie(&site, "preempt").await;
    // A low job that takes the machine, says when it starts, and takes its
    // time to stop on SIGTERM (a checkpoint, say).
    let mut sweep = job("sweep", "2", 600, "low");
    sweep["command"] = json!([
        "sh",
        "-c",
        "echo run started; trap 'echo saving a checkpoint; sleep 5; exit 0' TERM; \
         while true; do sleep 0.2; done"
    ]);
    let (s, body) = submit(&site, &key, sweep).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    wait_for(&site, &key, "sweep", "running").await;
    let url = "/api/v1/jobs/sweep/pods/trainer-0/log";
    let log = || async { call(&site, Method::GET, url, Some(&key), None).await.body };
    for _ in 0..200 {
        if log().await.contains("run started") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    let (s, body) = submit(&site, &key, job("urgent", "2", 1, "high")).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    // While it saves, the queue shows it giving its room back.
    let mut marked = false;
    for _ in 0..100 {
        let q = queue(&site, &key).await;
        let sweep = q["running"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["work"]["name"] == "sweep")
            .cloned();
        if sweep.as_ref().is_some_and(|h| h["preempted"] == true) {
            assert_eq!(order(&q), vec![(1, "preempt".into(), "urgent".into())]);
            assert_eq!(
                q["waiting"][0]["reason"], "waiting for 2 CPUs: 0 free; preempting job sweep",
                "{q}"
            );
            // The page marks it too.
            let page = site.page_ok(&cookie, "/queue").await;
            assert!(page.contains("data-testid=\"preempted\""), "{page}");
            marked = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    }
    assert!(marked, "the low job was never marked preempted");
    // It stops cleanly, waits again saying why, and the high one runs.
    wait_for(&site, &key, "urgent", "running").await;
    let waiting = wait_for(&site, &key, "sweep", "pending").await;
    let said = waiting["message"].as_str().unwrap();
    assert!(
        said.starts_with("Preempted by job urgent (high priority)"),
        "{waiting}"
    );
    assert!(log().await.contains("saving a checkpoint"));
    // Once the high one is done, the low one runs again from the start.
    wait_for(&site, &key, "urgent", "succeeded").await;
    wait_for(&site, &key, "sweep", "running").await;
    for _ in 0..200 {
        if log().await.matches("run started").count() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        log().await.matches("run started").count(),
        2,
        "{}",
        log().await
    );
    let pods = call(&site, Method::GET, "/api/v1/jobs/sweep", Some(&key), None)
        .await
        .json();
    assert_eq!(pods["status"], "running", "{pods}");
    // Its history keeps the preempted run: stopped, then waiting again.
    let detail = call(
        &site,
        Method::GET,
        "/api/v1/jobs/sweep/detail",
        Some(&key),
        None,
    )
    .await
    .json();
    let said: Vec<&str> = detail["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["message"].as_str())
        .collect();
    assert!(
        said.iter()
            .any(|m| m.starts_with("Stopped to give its room")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|m| m.starts_with("Preempted by job urgent")),
        "{said:?}"
    );
    call(
        &site,
        Method::POST,
        "/api/v1/jobs/sweep/stop",
        Some(&key),
        None,
    )
    .await;
    wait_for(&site, &key, "sweep", "stopped").await;
}
