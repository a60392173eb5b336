//! The MLflow tracking API's own rules, beyond what the real client checks
//! (`sdk/python/tests/mlflow_compat.py`): tenants, errors in MLflow's shape,
//! runs attached to an existing job, and runs deleted with their job.

use crate::common::rest::key_for;
use crate::common::site::{site, text, Site};
use axum::body::Body;
use http::{header, Method, Request, StatusCode};
use serde_json::{json, Value};

async fn mlflow(
    site: &Site,
    method: Method,
    path: &str,
    key: Option<&str>,
    body: Value,
) -> (StatusCode, Value) {
    let mut req = Request::builder()
        .method(method.clone())
        .uri(format!("/api/2.0/mlflow/{path}"))
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(key) = key {
        req = req.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    let body = if method == Method::GET {
        Body::empty()
    } else {
        Body::from(body.to_string())
    };
    let res = site.send(req.body(body).unwrap()).await;
    let status = res.status();
    let text = text(res).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_belong_to_their_account_and_errors_are_in_mlflows_shape() {
    let site = site().await;
    let ann = key_for(&site, "vision").await;
    let eve = key_for(&site, "speech").await;

    let (status, body) = mlflow(
        &site,
        Method::GET,
        "experiments/get-by-name?experiment_name=x",
        None,
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error_code"], "UNAUTHENTICATED");
    let (status, body) = mlflow(
        &site,
        Method::GET,
        "experiments/get-by-name?experiment_name=x",
        Some("pck_wrong"),
        json!({}),
    )
    .await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("UNAUTHENTICATED"))
    );

    let (status, created) = mlflow(
        &site,
        Method::POST,
        "runs/create",
        Some(&ann),
        json!({"experiment_id": "0", "run_name": "Baseline 1"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let run_id = created["run"]["info"]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(run_id.len(), 32);

    for path in [
        format!("runs/get?run_id={run_id}"),
        format!("metrics/get-history?run_id={run_id}&metric_key=loss"),
    ] {
        let (status, body) = mlflow(&site, Method::GET, &path, Some(&eve), json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(body["error_code"], "RESOURCE_DOES_NOT_EXIST");
    }
    let (status, body) = mlflow(
        &site,
        Method::POST,
        "runs/log-metric",
        Some(&eve),
        json!({"run_id": run_id, "key": "loss", "value": 1.0, "step": 0}),
    )
    .await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::NOT_FOUND, Some("RESOURCE_DOES_NOT_EXIST"))
    );

    let (status, body) = mlflow(
        &site,
        Method::POST,
        "runs/log-metric",
        Some(&ann),
        json!({"run_id": run_id, "key": "bad;key", "value": 1.0}),
    )
    .await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("INVALID_PARAMETER_VALUE"))
    );
    let (status, body) = mlflow(
        &site,
        Method::POST,
        "runs/log-batch",
        Some(&ann),
        json!({"run_id": run_id, "metrics": "nope"}),
    )
    .await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("BAD_REQUEST"))
    );
    let (status, body) = mlflow(
        &site,
        Method::GET,
        "logged-models/search",
        Some(&ann),
        json!({}),
    )
    .await;
    assert_eq!(
        (status, body["error_code"].as_str()),
        (StatusCode::NOT_FOUND, Some("ENDPOINT_NOT_FOUND"))
    );

    // The run is a job of ann's named after it; deleting the job deletes the run.
    let res = site
        .send(
            Request::get("/api/v1/jobs/baseline-1")
                .header(header::AUTHORIZATION, format!("Bearer {ann}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let job: Value = serde_json::from_str(&text(res).await).unwrap();
    assert_eq!(
        (job["source"].as_str(), job["status"].as_str()),
        (Some("mlflow"), Some("running"))
    );
    site.send(
        Request::delete("/api/v1/jobs/baseline-1")
            .header(header::AUTHORIZATION, format!("Bearer {ann}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    let (status, _) = mlflow(
        &site,
        Method::GET,
        &format!("runs/get?run_id={run_id}"),
        Some(&ann),
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_tagged_with_a_job_logs_that_jobs_metrics_and_leaves_its_status_alone() {
    let site = site().await;
    let ann = key_for(&site, "vision").await;
    let spec = json!({"name": "trainer", "command": ["sh", "-c", "sleep 30"], "num_trainers": 1});
    let res = site
        .send(
            Request::post("/api/v1/jobs")
                .header(header::AUTHORIZATION, format!("Bearer {ann}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(spec.to_string()))
                .unwrap(),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);

    let (_, created) = mlflow(
        &site,
        Method::POST,
        "runs/create",
        Some(&ann),
        json!({"experiment_id": "0", "tags": [{"key": "paddlecloud.job", "value": "trainer"}]}),
    )
    .await;
    let run_id = created["run"]["info"]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = mlflow(&site, Method::POST, "runs/log-batch", Some(&ann), json!({"run_id": run_id, "metrics": [{"key": "loss", "value": "NaN", "timestamp": 1700000000123i64, "step": 7}]})).await;
    assert_eq!(status, StatusCode::OK);
    mlflow(
        &site,
        Method::POST,
        "runs/update",
        Some(&ann),
        json!({"run_id": run_id, "status": "FINISHED", "end_time": 1700000001000i64}),
    )
    .await;

    let res = site
        .send(
            Request::get("/api/v1/jobs/trainer/metrics/loss")
                .header(header::AUTHORIZATION, format!("Bearer {ann}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    let series: Value = serde_json::from_str(&text(res).await).unwrap();
    assert_eq!(
        series["points"],
        json!([{"step": 7, "wall_time": 1700000000.123, "value": "NaN"}])
    );
    let res = site
        .send(
            Request::get("/api/v1/jobs/trainer")
                .header(header::AUTHORIZATION, format!("Bearer {ann}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    let job: Value = serde_json::from_str(&text(res).await).unwrap();
    assert_eq!(job["source"], "console");
    assert_ne!(job["status"], "succeeded", "the run's end is not the job's");
}
