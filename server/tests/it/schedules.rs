//! Schedules: a template run on a cron pattern (every two seconds here) by
//! the console's own controller, with real jobs on the local executor; a
//! tick whose previous run still goes skipped; pause and resume; ticks
//! missed while no console ran caught up as `catch_up` says; two
//! controllers over one database starting each tick once; bad patterns,
//! timezones, templates and values refused naming the field.

use std::time::{Duration, Instant};

use app::models::TickOutcome;
use http::{Method, StatusCode};
use serde_json::{json, Value};
use server::controller::Controller;

use crate::common;
use crate::common::rest::{call, key_and_cookie, Answer};
use crate::common::site::Site;

async fn api(site: &Site, key: &str, method: Method, path: &str, body: Option<Value>) -> Answer {
    call(site, method, path, Some(key), body).await
}

/// A template whose job sleeps `{{secs}}` seconds.
async fn sleeper(site: &Site, key: &str) {
    let template = json!({
        "name": "sleeper",
        "parameters": [{"name": "secs", "type": "int", "min": 0, "max": 60, "default": 0}],
        "job": {"command": ["sleep", "{{secs}}"], "num_trainers": 1,
                "trainer": {"cpu": "100m", "memory": "64Mi"}},
    });
    let saved = api(site, key, Method::POST, "/api/v1/templates", Some(template)).await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
}

fn every_two_seconds(name: &str, secs: u32) -> Value {
    json!({
        "name": name, "cron": "*/2 * * * * *", "timezone": "Europe/Berlin",
        "target": {"kind": "template", "name": "sleeper", "values": {"secs": secs}},
    })
}

/// Polls schedule `name` until `done` holds of its runs.
async fn runs_until(
    site: &Site,
    key: &str,
    name: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = api(
            site,
            key,
            Method::GET,
            &format!("/api/v1/schedules/{name}"),
            None,
        )
        .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.body);
        let runs = got.json()["runs"].as_array().unwrap().clone();
        if done(&runs) {
            return runs;
        }
        assert!(Instant::now() < deadline, "{name}: {runs:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn count(runs: &[Value], outcome: &str) -> usize {
    runs.iter().filter(|r| r["outcome"] == outcome).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_runs_on_its_cron_skipping_ticks_while_the_previous_run_goes_and_pauses() {
    let site = common::site::site().await;
    let (key, _) = key_and_cookie(&site, "sched").await;
    sleeper(&site, &key).await;

    // Refused, naming the field: a bad pattern, a timezone that is none,
    // a template the account does not have, a value its parameter refuses.
    let bad = |body: Value, field: &'static str| {
        let (site, key) = (&site, &key);
        async move {
            let got = api(site, key, Method::POST, "/api/v1/schedules", Some(body)).await;
            assert_eq!(got.status, StatusCode::BAD_REQUEST, "{}", got.body);
            assert_eq!(got.json()["error"]["field"], field, "{}", got.body);
        }
    };
    let mut spec = every_two_seconds("quick", 0);
    spec["cron"] = json!("61 * * * *");
    bad(spec, "cron").await;
    let mut spec = every_two_seconds("quick", 0);
    spec["timezone"] = json!("Mars/Olympus");
    bad(spec, "timezone").await;
    let mut spec = every_two_seconds("quick", 0);
    spec["target"]["name"] = json!("nothing");
    bad(spec, "target.name").await;
    bad(every_two_seconds("quick", 99), "target.values.secs").await;

    // Every two seconds, each run sleeping five: while one runs, the next
    // ticks are skipped (overlap: forbid, the default).
    let made = api(
        &site,
        &key,
        Method::POST,
        "/api/v1/schedules",
        Some(every_two_seconds("slow", 5)),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let made = made.json();
    assert_eq!(
        (made["overlap"].clone(), made["catch_up"].clone()),
        (json!("forbid"), json!("latest"))
    );
    assert!(made["next_at"].as_i64().is_some(), "{made}");
    let taken = api(
        &site,
        &key,
        Method::POST,
        "/api/v1/schedules",
        Some(every_two_seconds("slow", 5)),
    )
    .await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.body);

    // (A tick is claimed before its run starts: wait until each started
    // one names its run.)
    let runs = runs_until(&site, &key, "slow", |runs| {
        count(runs, "started") >= 2
            && count(runs, "skipped") >= 2
            && runs
                .iter()
                .all(|r| r["outcome"] != "started" || r["started"].is_string())
    })
    .await;
    let started: Vec<&Value> = runs.iter().filter(|r| r["outcome"] == "started").collect();
    let job = started[0]["started"].as_str().unwrap();
    assert!(
        job.starts_with("slow-2"),
        "a tick's job is named by its time: {job}"
    );
    let skipped = runs.iter().find(|r| r["outcome"] == "skipped").unwrap();
    assert!(
        skipped["message"]
            .as_str()
            .unwrap()
            .contains("was still running"),
        "{skipped}"
    );
    // The job is real and records the template it ran.
    let got = api(
        &site,
        &key,
        Method::GET,
        &format!("/api/v1/jobs/{job}"),
        None,
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    assert_eq!(got.json()["spec"]["template"]["name"], "sleeper");
    // Ticks are two seconds apart, each once.
    let mut ticks: Vec<i64> = runs.iter().map(|r| r["tick"].as_i64().unwrap()).collect();
    ticks.sort();
    assert!(ticks.windows(2).all(|w| w[1] - w[0] == 2000), "{ticks:?}");

    // Paused: nothing more; resumed: it goes on.
    let paused = api(
        &site,
        &key,
        Method::POST,
        "/api/v1/schedules/slow/pause",
        None,
    )
    .await;
    assert_eq!(paused.status, StatusCode::OK, "{}", paused.body);
    assert_eq!(
        (
            paused.json()["paused"].clone(),
            paused.json()["next_at"].clone()
        ),
        (json!(true), Value::Null)
    );
    let before = runs_until(&site, &key, "slow", |_| true).await.len();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        runs_until(&site, &key, "slow", |_| true).await.len(),
        before,
        "a paused schedule ran"
    );
    let resumed = api(
        &site,
        &key,
        Method::POST,
        "/api/v1/schedules/slow/resume",
        None,
    )
    .await;
    assert_eq!(resumed.json()["paused"], false);
    runs_until(&site, &key, "slow", |runs| runs.len() > before).await;

    // The list; a viewer reads but does not change; delete.
    let listed = api(&site, &key, Method::GET, "/api/v1/schedules", None)
        .await
        .json();
    assert_eq!(listed[0]["name"], "slow");
    assert_eq!(listed[0]["target"]["kind"], "template");
    let gone = api(&site, &key, Method::DELETE, "/api/v1/schedules/slow", None).await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    let got = api(&site, &key, Method::GET, "/api/v1/schedules/slow", None).await;
    assert_eq!(got.status, StatusCode::NOT_FOUND);
}

/// The schedule `name`'s row: where the controller left it.
async fn set_times(site: &Site, name: &str, last_tick: i64, next_at: i64) {
    sqlx::query(
        "UPDATE schedules SET last_tick = $1, next_at = $2, created_at = $1 WHERE name = $3",
    )
    .bind(last_tick)
    .bind(next_at)
    .bind(name)
    .execute(&site.db.pool)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticks_missed_while_no_console_ran_are_caught_up_as_catch_up_says_and_each_runs_once() {
    let site = common::site::site().await;
    let (key, _) = key_and_cookie(&site, "catchup").await;
    sleeper(&site, &key).await;
    let now = server::time::now_ms();
    let hour = 3_600_000;
    // Hourly, in a timezone with half hours: ticks at hh:30 UTC.
    // `all` lets its runs overlap: with `forbid` a catch-up tick would be
    // skipped while the one before it still ran.
    for (name, catch_up, overlap) in [
        ("latest", "latest", "forbid"),
        ("all", "all", "allow"),
        ("none", "none", "forbid"),
    ] {
        let spec = json!({
            "name": name, "cron": "0 * * * *", "timezone": "Asia/Kolkata",
            "catch_up": catch_up, "overlap": overlap,
            "target": {"kind": "template", "name": "sleeper"},
        });
        let made = api(&site, &key, Method::POST, "/api/v1/schedules", Some(spec)).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
        // As if the console had stopped five hours ago.
        set_times(&site, name, now - 5 * hour, now - 5 * hour + 1).await;
    }
    // Two controllers over the one database pass at once, as two replicas
    // would if a lease were ever held twice: every tick is dealt with once.
    let a = server::schedules::SqlSchedules::new(site.db.pool.clone()).controller();
    let b = server::schedules::SqlSchedules::new(site.db.pool.clone()).controller();
    tokio::join!(a.pass(&site.services), b.pass(&site.services));
    let account = site.owner("catchup").await.account;
    let of = |name: &'static str| {
        let site = &site;
        let account = account.clone();
        async move {
            site.services
                .schedules
                .get(&account, name)
                .await
                .unwrap()
                .runs
        }
    };
    let outcomes = |runs: &[app::models::ScheduleRun], o: TickOutcome| {
        runs.iter().filter(|r| r.outcome == o).count()
    };
    // The console's own controller runs too (woken by the jobs these passes
    // start) and may have claimed a tick whose run it is still starting:
    // wait until every started tick names its run.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (latest, all) = (of("latest").await, of("all").await);
        let naming = |runs: &[app::models::ScheduleRun]| {
            runs.iter()
                .all(|r| r.outcome != TickOutcome::Started || r.started.is_some())
        };
        if naming(&latest) && naming(&all) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{latest:?} {all:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let latest = of("latest").await;
    assert_eq!(latest.len(), 5, "{latest:?}");
    assert_eq!(
        (
            outcomes(&latest, TickOutcome::Started),
            outcomes(&latest, TickOutcome::Missed)
        ),
        (1, 4)
    );
    assert_eq!(
        latest[0].outcome,
        TickOutcome::Started,
        "the newest tick runs"
    );
    assert!(
        latest[0].tick % hour == hour / 2,
        "ticks at half past, UTC: {}",
        latest[0].tick
    );
    let all = of("all").await;
    assert_eq!(outcomes(&all, TickOutcome::Started), 5, "{all:?}");
    // Only a tick under a minute old would run (the one due now).
    let none = of("none").await;
    assert_eq!(none.len(), 5, "{none:?}");
    assert!(outcomes(&none, TickOutcome::Missed) >= 4, "{none:?}");
    // One job per started tick, named by it.
    for run in latest
        .iter()
        .chain(&all)
        .filter(|r| r.outcome == TickOutcome::Started)
    {
        let job = run
            .started
            .clone()
            .unwrap_or_else(|| panic!("a started tick names its run: {run:?}"));
        assert!(
            job.starts_with("latest-") || job.starts_with("all-"),
            "{job}"
        );
        let got = api(
            &site,
            &key,
            Method::GET,
            &format!("/api/v1/jobs/{job}"),
            None,
        )
        .await;
        assert_eq!(got.status, StatusCode::OK, "{job}: {}", got.body);
    }
    // A schedule moved on is not due again until its next tick.
    let again = of("latest").await.len();
    a.pass(&site.services).await;
    assert_eq!(of("latest").await.len(), again);
}
