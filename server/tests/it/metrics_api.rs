//! `/api/v1/jobs/{name}/metrics` as writers and charts use it: batches (also
//! as Python's `json.dumps` writes NaN), envelopes, CSV, bad points, another
//! account's job, and the job's own token, which writes that job's metrics
//! and nothing else.

use std::time::Duration;

use crate::common::rest::key_for;
use crate::common::site::{site, text, Site};
use axum::body::Body;
use http::{header, Method, Request, StatusCode};
use serde_json::{json, Value};

async fn call(
    site: &Site,
    method: Method,
    path: &str,
    key: &str,
    body: Option<String>,
) -> (StatusCode, String) {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {key}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.map(Body::from).unwrap_or_else(Body::empty))
        .unwrap();
    let res = site.send(req).await;
    (res.status(), text(res).await)
}

async fn submit(site: &Site, key: &str, name: &str, script: &str) {
    let spec = json!({
        "name": name, "command": ["sh", "-c", script], "num_trainers": 1,
    });
    let (status, body) = call(
        site,
        Method::POST,
        "/api/v1/jobs",
        key,
        Some(spec.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_posted_with_a_key_is_charted_and_exported() {
    let site = site().await;
    let key = key_for(&site, "vision").await;
    submit(&site, &key, "mnist", "true").await;

    // As Python's json.dumps writes it: bare NaN and Infinity.
    let body = r#"[{"tag": "train/loss", "step": 0, "value": 2.5, "wall_time": 1700000000.5},
                   {"tag": "train/loss", "step": 1, "value": NaN},
                   {"tag": "train/loss", "step": 2, "value": Infinity},
                   {"tag": "train/loss", "step": 3, "value": "-Infinity"},
                   {"tag": "train/acc", "step": 0, "value": 0.5}]"#;
    let (status, answer) = call(
        &site,
        Method::POST,
        "/api/v1/jobs/mnist/metrics",
        &key,
        Some(body.into()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let summary: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(summary, json!({"accepted": 5, "tags": 2, "replaced": 0}));

    // {"points": [...]} is taken too.
    let wrapped = json!({"points": [{"tag": "train/acc", "step": 1, "value": 0.75}]});
    let (status, _) = call(
        &site,
        Method::POST,
        "/api/v1/jobs/mnist/metrics",
        &key,
        Some(wrapped.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let (_, tags) = call(&site, Method::GET, "/api/v1/jobs/mnist/metrics", &key, None).await;
    let tags: Value = serde_json::from_str(&tags).unwrap();
    assert_eq!(
        tags,
        json!([{"tag": "train/acc", "points": 2, "last_step": 1, "last_value": 0.75},
               {"tag": "train/loss", "points": 4, "last_step": 3, "last_value": "-Infinity"}])
    );

    // The tag has a slash: the route takes the rest of the path.
    let (status, series) = call(
        &site,
        Method::GET,
        "/api/v1/jobs/mnist/metrics/train/loss?width=100",
        &key,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{series}");
    let series: Value = serde_json::from_str(&series).unwrap();
    let values: Vec<&Value> = series["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["value"])
        .collect();
    assert_eq!(
        values,
        [
            &json!(2.5),
            &json!("NaN"),
            &json!("Infinity"),
            &json!("-Infinity")
        ]
    );
    assert_eq!(series["points"][0]["wall_time"], json!(1_700_000_000.5));
    assert_eq!(
        (series["total"].clone(), series["nan"].clone()),
        (json!(4), json!(1))
    );
    assert_eq!(series["full_resolution"], json!(true));

    let (status, csv) = call(
        &site,
        Method::GET,
        "/api/v1/jobs/mnist/metrics/train/loss?format=csv&from=1",
        &key,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "step,wall_time,value");
    assert_eq!(lines.len(), 4);
    assert!(
        lines[1].starts_with("1,") && lines[1].ends_with(",NaN"),
        "{csv}"
    );
    assert!(lines[3].ends_with(",-Infinity"), "{csv}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_batches_are_refused_whole_with_the_point_at_fault() {
    let site = site().await;
    let key = key_for(&site, "vision").await;
    let eve = key_for(&site, "speech").await;
    submit(&site, &key, "mnist", "true").await;
    let post = |key: String, body: String| {
        let site = &site;
        async move {
            call(
                site,
                Method::POST,
                "/api/v1/jobs/mnist/metrics",
                &key,
                Some(body),
            )
            .await
        }
    };

    let (status, body) = post(
        key.clone(),
        r#"[{"tag":"loss","step":0,"value":1},{"tag":"loss","step":1,"value":"lots"}]"#.into(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("lots"), "{body}");

    let (status, body) = post(
        key.clone(),
        r#"[{"tag":"loss","step":0,"value":1},{"tag":"loss","step":1,"value":2,"wall_time":1700000000000}]"#.into(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let err: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(err["error"]["field"], "[1].wall_time");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("milliseconds"));

    let many: Vec<Value> = (0..10_001)
        .map(|s| json!({"tag": "loss", "step": s, "value": 1.0}))
        .collect();
    let (status, body) = post(key.clone(), Value::Array(many).to_string()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("at most 10000 points"), "{body}");

    let (status, _) = post(eve, r#"[{"tag":"loss","step":0,"value":1}]"#.into()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another account's job");

    let (_, tags) = call(&site, Method::GET, "/api/v1/jobs/mnist/metrics", &key, None).await;
    assert_eq!(tags, "[]", "nothing of a refused batch is kept");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_jobs_own_token_writes_that_jobs_metrics_and_nothing_else() {
    let site = site().await;
    let key = key_for(&site, "vision").await;
    submit(&site, &key, "other", "sleep 30").await;
    submit(
        &site,
        &key,
        "train",
        "echo \"token $PADDLECLOUD_JOB_TOKEN\"; sleep 30",
    )
    .await;
    let token = {
        let mut found = None;
        for _ in 0..100 {
            let (_, log) = call(
                &site,
                Method::GET,
                "/api/v1/jobs/train/pods/trainer-0/log",
                &key,
                None,
            )
            .await;
            if let Some(t) = log.lines().find_map(|l| l.strip_prefix("token ")) {
                found = Some(t.trim().to_owned());
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        found.expect("the job printed its token")
    };
    assert!(token.starts_with("pcj_"), "{token}");

    let point = r#"[{"tag":"loss","step":0,"value":1.5}]"#;
    let (status, body) = call(
        &site,
        Method::POST,
        "/api/v1/jobs/train/metrics",
        &token,
        Some(point.into()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = call(
        &site,
        Method::GET,
        "/api/v1/jobs/train/metrics/loss",
        &token,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    for (method, path) in [
        (Method::POST, "/api/v1/jobs/other/metrics"),
        (Method::GET, "/api/v1/jobs"),
        (Method::POST, "/api/v1/jobs/train/stop"),
        (Method::GET, "/api/v1/jobs/train/pods/trainer-0/log"),
    ] {
        let (status, body) = call(&site, method.clone(), path, &token, Some(point.into())).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {body}");
    }
    // Once the job is deleted its token is worth nothing.
    call(&site, Method::DELETE, "/api/v1/jobs/train", &key, None).await;
    let (status, _) = call(
        &site,
        Method::POST,
        "/api/v1/jobs/train/metrics",
        &token,
        Some(point.into()),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
