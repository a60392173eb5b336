//! Metric alerts (issue 44 item 2), with a real running job on the local
//! executor whose metrics arrive through the REST API: a NaN in the middle
//! of a batch fires once and resolves when finite points follow; a value
//! above a threshold fires and resolves when it comes back; a silence is
//! judged from when the last point arrived (the controller driven at a
//! later time); each alert is told to a webhook that follows the account
//! for alerts, marked on the tag's PaddleBoard chart, and listed; bad
//! rules are refused naming the field; deleting the rule or the job takes
//! its alerts along.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common;
use crate::common::rest::{call, key_and_cookie, wait_for, Answer};
use crate::common::site::Site;

async fn api(site: &Site, key: &str, method: Method, path: &str, body: Option<Value>) -> Answer {
    call(site, method, path, Some(key), body).await
}

async fn rule(site: &Site, key: &str, body: Value) -> Answer {
    api(site, key, Method::POST, "/api/v1/alert-rules", Some(body)).await
}

async fn points(site: &Site, key: &str, job: &str, body: Value) {
    let sent = api(
        site,
        key,
        Method::POST,
        &format!("/api/v1/jobs/{job}/metrics"),
        Some(body),
    )
    .await;
    assert!(sent.status.is_success(), "{}", sent.body);
}

/// Polls the account's alerts until `done`.
async fn alerts_until(site: &Site, key: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = api(site, key, Method::GET, "/api/v1/alerts", None).await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.body);
        let list = got.json().as_array().unwrap().clone();
        if done(&list) {
            return list;
        }
        assert!(Instant::now() < deadline, "{list:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn of_rule<'a>(list: &'a [Value], rule: &str) -> Vec<&'a Value> {
    list.iter().filter(|a| a["rule"] == rule).collect()
}

on_both_databases!(
    alerts_fire_on_a_nan_a_threshold_and_a_silence_and_resolve_by_themselves,
    super::alerts_fire_and_resolve
);
async fn alerts_fire_and_resolve(db: common::TestDb) {
    let config = common::site::config(&db);
    let site = common::site::site_from(db, config).await;
    let (key, cookie) = key_and_cookie(&site, "watch").await;
    let job = json!({"name": "diverge", "command": ["sleep", "120"], "num_trainers": 1,
                     "trainer": {"cpu": "100m", "memory": "64Mi"}});
    let made = api(&site, &key, Method::POST, "/api/v1/jobs", Some(job)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    wait_for(&site, &key, "diverge", "running").await;

    // Refused, naming the field.
    for (body, field) in [
        (
            json!({"name": "x", "tag": " ", "condition": {"kind": "not_finite"}}),
            "tag",
        ),
        (
            json!({"name": "x", "tag": "loss", "condition": {"kind": "silent", "minutes": 0}}),
            "condition.minutes",
        ),
        (
            json!({"name": "Not A Name", "tag": "loss", "condition": {"kind": "not_finite"}}),
            "name",
        ),
    ] {
        let refused = rule(&site, &key, body).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
        assert_eq!(
            refused.error().1.as_deref(),
            Some(field),
            "{}",
            refused.body
        );
    }
    for body in [
        json!({"name": "nan", "tag": "loss", "condition": {"kind": "not_finite"}}),
        json!({"name": "high", "tag": "loss", "condition": {"kind": "above", "threshold": 10}}),
        json!({"name": "quiet", "tag": "acc", "job": "diverge",
               "condition": {"kind": "silent", "minutes": 1}}),
    ] {
        let saved = rule(&site, &key, body).await;
        assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
    }
    let again = rule(
        &site,
        &key,
        json!({"name": "nan", "tag": "loss", "condition": {"kind": "not_finite"}}),
    )
    .await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);

    // A NaN in the middle of a batch whose newest value is fine: told once,
    // then resolved (the newest point is finite and past it).
    points(
        &site,
        &key,
        "diverge",
        json!([{"tag": "loss", "step": 1, "value": 1.0},
               {"tag": "loss", "step": 2, "value": "NaN"},
               {"tag": "loss", "step": 3, "value": 0.5}]),
    )
    .await;
    let list = alerts_until(&site, &key, |l| {
        of_rule(l, "nan")
            .first()
            .is_some_and(|a| a.get("resolved_at").is_some())
    })
    .await;
    let nan = of_rule(&list, "nan");
    assert_eq!(nan.len(), 1, "{list:#?}");
    assert_eq!(nan[0]["step"], 2);
    assert_eq!(nan[0]["job"], "diverge");
    assert_eq!(nan[0]["message"], "loss is NaN or infinite at step 2");
    assert!(of_rule(&list, "high").is_empty(), "{list:#?}");

    // Above the threshold: open until a value comes back under it.
    points(
        &site,
        &key,
        "diverge",
        json!([{"tag": "loss", "step": 4, "value": 12.5}]),
    )
    .await;
    let list = alerts_until(&site, &key, |l| !of_rule(l, "high").is_empty()).await;
    let high = of_rule(&list, "high");
    assert_eq!(high[0]["message"], "loss is above 10 at step 4: 12.5");
    assert_eq!(high[0]["value"], 12.5);
    assert!(high[0].get("resolved_at").is_none(), "{list:#?}");
    let rules = api(&site, &key, Method::GET, "/api/v1/alert-rules", None)
        .await
        .json();
    let open_of = |rules: &Value, name: &str| {
        rules
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()["open"]
            .clone()
    };
    assert_eq!(open_of(&rules, "high"), 1, "{rules:#}");
    // The job's page data (and its page) carry it.
    let detail = api(
        &site,
        &key,
        Method::GET,
        "/api/v1/jobs/diverge/detail",
        None,
    )
    .await
    .json();
    let on_job: Vec<&Value> = detail["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["rule"] == "high" && a.get("resolved_at").is_none())
        .collect();
    assert_eq!(on_job.len(), 1, "{detail:#}");
    let page = site.page_ok(&cookie, "/jobs/diverge").await;
    assert!(
        page.contains("data-testid=\"job-alerts\""),
        "no alerts on the job page"
    );

    // The chart of the tag marks both alerts at their steps.
    let board = site
        .page_ok(&cookie, "/paddleboard?job=diverge&tags=loss")
        .await;
    assert!(board.contains("class=\"alert-mark"), "no mark on the chart");
    assert!(
        board.contains("loss is above 10 at step 4: 12.5"),
        "{board}"
    );
    assert!(board.contains("loss is NaN or infinite at step 2"));

    points(
        &site,
        &key,
        "diverge",
        json!([{"tag": "loss", "step": 5, "value": 3.0}]),
    )
    .await;
    alerts_until(&site, &key, |l| {
        of_rule(l, "high")
            .first()
            .is_some_and(|a| a.get("resolved_at").is_some())
    })
    .await;
    // A second NaN later is a new alert.
    points(
        &site,
        &key,
        "diverge",
        json!([{"tag": "loss", "step": 6, "value": "Infinity"}]),
    )
    .await;
    let list = alerts_until(&site, &key, |l| of_rule(l, "nan").len() == 2).await;
    assert_eq!(of_rule(&list, "nan")[0]["step"], 6, "{list:#?}");

    // Silence: judged from when the last point of `acc` came (none yet:
    // from the job's start). Driven a minute and more ahead.
    let alerts = server::alerts::SqlAlerts::new(site.db.pool.clone());
    alerts
        .controller()
        .pass_at(server::time::now_ms() + 61_000)
        .await;
    let list = alerts_until(&site, &key, |l| !of_rule(l, "quiet").is_empty()).await;
    assert_eq!(
        of_rule(&list, "quiet")[0]["message"],
        "acc has had no point in 1 min"
    );

    // Deleting a rule takes its alerts; deleting the job takes the rest.
    let gone = api(
        &site,
        &key,
        Method::DELETE,
        "/api/v1/alert-rules/high",
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    let list = api(&site, &key, Method::GET, "/api/v1/alerts", None)
        .await
        .json();
    assert!(of_rule(list.as_array().unwrap(), "high").is_empty());
    let stopped = api(&site, &key, Method::POST, "/api/v1/jobs/diverge/stop", None).await;
    assert!(stopped.status.is_success(), "{}", stopped.body);
    wait_for(&site, &key, "diverge", "stopped").await;
    let deleted = api(&site, &key, Method::DELETE, "/api/v1/jobs/diverge", None).await;
    assert!(deleted.status.is_success(), "{}", deleted.body);
    let list = api(&site, &key, Method::GET, "/api/v1/alerts?job=diverge", None)
        .await
        .json();
    assert_eq!(list, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_is_told_to_whoever_follows_the_job_for_alerts() {
    let site = common::site::site().await;
    let (key, _) = key_and_cookie(&site, "told").await;
    let hooks = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let taken = hooks.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let taken = taken.clone();
            async move {
                taken.lock().unwrap().push(body);
                StatusCode::NO_CONTENT
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    let job = json!({"name": "watched", "command": ["sleep", "120"], "num_trainers": 1,
                     "trainer": {"cpu": "100m", "memory": "64Mi"}});
    let made = api(&site, &key, Method::POST, "/api/v1/jobs", Some(job)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    wait_for(&site, &key, "watched", "running").await;
    let sub = api(
        &site,
        &key,
        Method::POST,
        "/api/v1/notifications/subscriptions",
        Some(
            json!({"subject": {"kind": "job", "name": "watched"}, "events": ["alert"],
                    "channel": {"kind": "webhook", "url": url}}),
        ),
    )
    .await;
    assert_eq!(sub.status, StatusCode::CREATED, "{}", sub.body);
    let saved = rule(
        &site,
        &key,
        json!({"name": "low-acc", "tag": "acc", "condition": {"kind": "below", "threshold": 0.5}}),
    )
    .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
    points(
        &site,
        &key,
        "watched",
        json!([{"tag": "acc", "step": 9, "value": 0.25}]),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let body = loop {
        if let Some(b) = hooks
            .lock()
            .unwrap()
            .iter()
            .find(|b| b.contains("job.alert"))
        {
            break b.clone();
        }
        assert!(Instant::now() < deadline, "no alert was posted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["data"]["name"], "watched");
    assert_eq!(
        body["data"]["message"],
        "alert low-acc: acc is below 0.5 at step 9: 0.25"
    );
    let stopped = api(&site, &key, Method::POST, "/api/v1/jobs/watched/stop", None).await;
    assert!(stopped.status.is_success(), "{}", stopped.body);
}
