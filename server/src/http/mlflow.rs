//! The MLflow tracking API's routes, `/api/2.0/mlflow/…`, on
//! [`crate::mlflow`]'s service and wire shapes.

use app::error::AppError;
use app::models::MetricPoint;
use app::ports::Principal;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::caller::{Caller, Writer};
use super::AppState;
use crate::mlflow::tracking::RunRow;
use crate::mlflow::wire::{
    int64, KeyValue, Metric, MetricOut, MlflowError, MlflowRun, RunData, RUN_STATUSES,
};
use crate::time::now_ms;

type Answer = Result<Json<Value>, MlflowError>;

/// `/api/2.0/mlflow/...`.
pub fn router() -> Router<AppState> {
    const API: &str = "/api/2.0/mlflow";
    Router::new()
        .route(
            &format!("{API}/experiments/create"),
            post(create_experiment),
        )
        .route(&format!("{API}/experiments/get"), get(get_experiment))
        .route(
            &format!("{API}/experiments/get-by-name"),
            get(get_experiment_by_name),
        )
        .route(&format!("{API}/runs/create"), post(create_run))
        .route(&format!("{API}/runs/get"), get(get_run))
        .route(&format!("{API}/runs/update"), post(update_run))
        .route(&format!("{API}/runs/log-metric"), post(log_metric))
        .route(&format!("{API}/runs/log-batch"), post(log_batch))
        .route(&format!("{API}/runs/log-parameter"), post(log_param))
        .route(&format!("{API}/runs/set-tag"), post(set_tag))
        .route(&format!("{API}/metrics/get-history"), get(get_history))
        .route(
            &format!("{API}/{{*rest}}"),
            axum::routing::any(|| async {
                MlflowError {
                    status: http::StatusCode::NOT_FOUND,
                    code: "ENDPOINT_NOT_FOUND",
                    message: "This MLflow endpoint is not served by PaddleCloud Console.".into(),
                }
            }),
        )
}

/// A JSON body, with MLflow's error when it cannot be read.
fn body<T: serde::de::DeserializeOwned>(raw: &[u8]) -> Result<T, MlflowError> {
    serde_json::from_slice(raw).map_err(|err| MlflowError {
        status: http::StatusCode::BAD_REQUEST,
        code: "BAD_REQUEST",
        message: format!("The request body could not be read: {err}"),
    })
}

#[derive(Deserialize)]
struct CreateExperiment {
    name: String,
    #[serde(default)]
    tags: Vec<KeyValue>,
}

async fn create_experiment(
    State(state): State<AppState>,
    Writer(who): Writer,
    raw: axum::body::Bytes,
) -> Answer {
    let req: CreateExperiment = body(&raw)?;
    let id = state
        .mlflow
        .create_experiment(who.me.account.id, &req.name, &req.tags)
        .await?;
    Ok(Json(json!({ "experiment_id": id })))
}

#[derive(Deserialize)]
struct ExperimentId {
    experiment_id: String,
}

async fn get_experiment(
    State(state): State<AppState>,
    Caller(who): Caller,
    Query(q): Query<ExperimentId>,
) -> Answer {
    let exp = state
        .mlflow
        .experiment(who.me.account.id, &q.experiment_id)
        .await?;
    Ok(Json(json!({ "experiment": exp })))
}

#[derive(Deserialize)]
struct ExperimentName {
    experiment_name: String,
}

async fn get_experiment_by_name(
    State(state): State<AppState>,
    Caller(who): Caller,
    Query(q): Query<ExperimentName>,
) -> Answer {
    let exp = state
        .mlflow
        .experiment_by_name(who.me.account.id, &q.experiment_name)
        .await?;
    Ok(Json(json!({ "experiment": exp })))
}

#[derive(Deserialize)]
struct CreateRun {
    #[serde(default)]
    experiment_id: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    run_name: Option<String>,
    #[serde(default, deserialize_with = "int64")]
    start_time: Option<i64>,
    #[serde(default)]
    tags: Vec<KeyValue>,
}

async fn create_run(
    State(state): State<AppState>,
    Writer(who): Writer,
    raw: axum::body::Bytes,
) -> Answer {
    let mut req: CreateRun = body(&raw)?;
    let tag_name = req
        .tags
        .iter()
        .find(|t| t.key == "mlflow.runName")
        .map(|t| t.value.clone());
    if let (Some(a), Some(b)) = (&req.run_name, &tag_name) {
        if a != b {
            return Err(MlflowError::invalid(format!(
                "Both 'run_name' argument and 'mlflow.runName' tag are specified, but with \
                 different values (run_name='{a}', mlflow.runName='{b}')."
            )));
        }
    }
    let run_name = req.run_name.clone().or(tag_name).unwrap_or_else(|| {
        let mut raw = [0u8; 3];
        let _ = getrandom::fill(&mut raw);
        format!("run-{}", hex::encode(raw))
    });
    if !req.tags.iter().any(|t| t.key == "mlflow.runName") {
        req.tags.push(KeyValue {
            key: "mlflow.runName".into(),
            value: run_name.clone(),
        });
    }
    let experiment = req
        .experiment_id
        .as_deref()
        .unwrap_or(crate::mlflow::tracking::DEFAULT_EXPERIMENT);
    let run = state
        .mlflow
        .create_run(
            &who.me,
            experiment,
            &run_name,
            req.user_id.as_deref().unwrap_or(&who.me.email),
            req.start_time.unwrap_or_else(now_ms),
            &req.tags,
        )
        .await?;
    tracing::info!(account = %who.me.account.name, job = %run.job, "MLflow run started");
    let (params, tags) = state.mlflow.params_and_tags(&run.info.run_id).await?;
    Ok(Json(
        json!({ "run": MlflowRun { info: run.info, data: RunData { metrics: vec![], params, tags } } }),
    ))
}

#[derive(Deserialize)]
struct RunId {
    #[serde(default)]
    run_id: Option<String>,
    #[serde(default)]
    run_uuid: Option<String>,
}

impl RunId {
    fn id(&self) -> Result<&str, MlflowError> {
        self.run_id
            .as_deref()
            .or(self.run_uuid.as_deref())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| MlflowError::invalid("Missing value for required parameter 'run_id'."))
    }
}

async fn run_of(state: &AppState, who: &Principal, id: &RunId) -> Result<RunRow, MlflowError> {
    state.mlflow.run(who.me.account.id, id.id()?).await
}

async fn get_run(
    State(state): State<AppState>,
    Caller(who): Caller,
    Query(q): Query<RunId>,
) -> Answer {
    let run = run_of(&state, &who, &q).await?;
    let (params, tags) = state.mlflow.params_and_tags(&run.info.run_id).await?;
    let metrics_port = &state.services.metrics;
    let mut metrics = Vec::new();
    for tag in metrics_port.tags(&who.me.account, &run.job).await? {
        let Some(step) = tag.last_step else { continue };
        if let Some(p) = metrics_port
            .points(&who.me.account, &run.job, &tag.tag, Some(step), Some(step))
            .await?
            .last()
        {
            metrics.push(MetricOut {
                key: tag.tag,
                value: p.value,
                timestamp: (p.wall_time * 1000.0).round() as i64,
                step: p.step,
            });
        }
    }
    Ok(Json(
        json!({ "run": MlflowRun { info: run.info, data: RunData { metrics, params, tags } } }),
    ))
}

#[derive(Deserialize)]
struct UpdateRun {
    #[serde(flatten)]
    id: RunId,
    #[serde(default)]
    status: Option<String>,
    #[serde(default, deserialize_with = "int64")]
    end_time: Option<i64>,
    #[serde(default)]
    run_name: Option<String>,
}

async fn update_run(
    State(state): State<AppState>,
    Writer(who): Writer,
    raw: axum::body::Bytes,
) -> Answer {
    let req: UpdateRun = body(&raw)?;
    if let Some(status) = &req.status {
        if !RUN_STATUSES.contains(&status.as_str()) {
            return Err(MlflowError::invalid(format!(
                "Invalid run status '{status}': use one of {}.",
                RUN_STATUSES.join(", ")
            )));
        }
    }
    let run = run_of(&state, &who, &req.id).await?;
    state
        .mlflow
        .update_run(
            &run,
            req.status.as_deref(),
            req.end_time,
            req.run_name.as_deref(),
        )
        .await?;
    let info = state
        .mlflow
        .run(who.me.account.id, &run.info.run_id)
        .await?
        .info;
    Ok(Json(json!({ "run_info": info })))
}

/// Metric points as PaddleBoard stores them.
fn to_points(metrics: &[Metric]) -> Result<Vec<MetricPoint>, MlflowError> {
    metrics
        .iter()
        .map(|m| {
            crate::mlflow::wire::validate_key("metric", &m.key)?;
            let ts = m.timestamp.unwrap_or_else(now_ms);
            if ts < 0 {
                return Err(MlflowError::invalid(
                    "A metric's timestamp must not be negative.",
                ));
            }
            Ok(MetricPoint {
                tag: m.key.clone(),
                step: m.step.unwrap_or(0),
                value: m.value,
                wall_time: Some(ts as f64 / 1000.0),
            })
        })
        .collect()
}

async fn store_metrics(
    state: &AppState,
    who: &Principal,
    run: &RunRow,
    metrics: &[Metric],
) -> Result<(), MlflowError> {
    if metrics.is_empty() {
        return Ok(());
    }
    let points = to_points(metrics)?;
    state
        .services
        .metrics
        .append(&who.me.account, &run.job, points)
        .await?;
    Ok(())
}

#[derive(Deserialize)]
struct LogMetric {
    #[serde(flatten)]
    id: RunId,
    #[serde(flatten)]
    metric: Metric,
}

async fn log_metric(
    State(state): State<AppState>,
    Writer(who): Writer,
    raw: axum::body::Bytes,
) -> Answer {
    let req: LogMetric = body(&raw)?;
    let run = run_of(&state, &who, &req.id).await?;
    store_metrics(&state, &who, &run, &[req.metric]).await?;
    Ok(Json(json!({})))
}

#[derive(Deserialize)]
struct LogBatch {
    #[serde(flatten)]
    id: RunId,
    #[serde(default)]
    metrics: Vec<Metric>,
    #[serde(default)]
    params: Vec<KeyValue>,
    #[serde(default)]
    tags: Vec<KeyValue>,
}

async fn log_batch(
    State(state): State<AppState>,
    Writer(who): Writer,
    raw: axum::body::Bytes,
) -> Answer {
    let req: LogBatch = body(&raw)?;
    if req.metrics.len() > 1000 || req.params.len() > 100 || req.tags.len() > 100 {
        return Err(MlflowError::invalid(
            "A batch logging request can contain at most 1000 metrics, 100 params and 100 tags.",
        ));
    }
    let run = run_of(&state, &who, &req.id).await?;
    check_params(&req.params)?;
    state
        .mlflow
        .log_params(&run.info.run_id, &req.params)
        .await?;
    state.mlflow.set_tags(&run.info.run_id, &req.tags).await?;
    store_metrics(&state, &who, &run, &req.metrics).await?;
    Ok(Json(json!({})))
}

fn check_params(params: &[KeyValue]) -> Result<(), MlflowError> {
    for (i, p) in params.iter().enumerate() {
        crate::mlflow::wire::validate_key("parameter", &p.key)?;
        if p.value.chars().count() > 6000 {
            return Err(MlflowError::invalid(format!(
                "Param value for '{}' is longer than 6000 characters.",
                p.key
            )));
        }
        if params[..i]
            .iter()
            .any(|q| q.key == p.key && q.value != p.value)
        {
            return Err(MlflowError::invalid(format!(
                "Duplicate parameter key '{}' with different values in one batch.",
                p.key
            )));
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct LogParam {
    #[serde(flatten)]
    id: RunId,
    key: String,
    #[serde(default)]
    value: String,
}

async fn log_param(
    State(state): State<AppState>,
    Writer(who): Writer,
    raw: axum::body::Bytes,
) -> Answer {
    let req: LogParam = body(&raw)?;
    let run = run_of(&state, &who, &req.id).await?;
    let param = KeyValue {
        key: req.key,
        value: req.value,
    };
    check_params(std::slice::from_ref(&param))?;
    state.mlflow.log_params(&run.info.run_id, &[param]).await?;
    Ok(Json(json!({})))
}

async fn set_tag(
    State(state): State<AppState>,
    Writer(who): Writer,
    raw: axum::body::Bytes,
) -> Answer {
    let req: LogParam = body(&raw)?;
    let run = run_of(&state, &who, &req.id).await?;
    if req.value.chars().count() > 8000 {
        return Err(MlflowError::invalid(
            "A tag value is at most 8000 characters.",
        ));
    }
    let tag = KeyValue {
        key: req.key,
        value: req.value,
    };
    crate::mlflow::wire::validate_key("tag", &tag.key)?;
    state.mlflow.set_tags(&run.info.run_id, &[tag]).await?;
    Ok(Json(json!({})))
}

#[derive(Deserialize)]
struct History {
    #[serde(flatten)]
    id: RunId,
    metric_key: String,
    #[serde(default)]
    max_results: Option<i64>,
    #[serde(default)]
    page_token: Option<String>,
}

/// Every point of a metric, by step, in pages (`next_page_token` until the last).
async fn get_history(
    State(state): State<AppState>,
    Caller(who): Caller,
    Query(q): Query<History>,
) -> Answer {
    let run = run_of(&state, &who, &q.id).await?;
    let max = match q.max_results {
        Some(n) if n <= 0 => {
            return Err(MlflowError::invalid(
                "max_results must be a positive number.",
            ))
        }
        Some(n) => (n as usize).min(25_000),
        None => 25_000,
    };
    let offset: usize = match q.page_token.as_deref().filter(|t| !t.is_empty()) {
        Some(t) => t
            .parse()
            .map_err(|_| MlflowError::invalid(format!("Invalid page token '{t}'.")))?,
        None => 0,
    };
    let points = match state
        .services
        .metrics
        .points(&who.me.account, &run.job, &q.metric_key, None, None)
        .await
    {
        Ok(points) => points,
        // A metric never logged has no history, as in MLflow.
        Err(AppError::NotFound { .. }) => return Ok(Json(json!({}))),
        Err(err) => return Err(err.into()),
    };
    let page: Vec<MetricOut> = points
        .iter()
        .skip(offset)
        .take(max)
        .map(|p| MetricOut {
            key: q.metric_key.clone(),
            value: p.value,
            timestamp: (p.wall_time * 1000.0).round() as i64,
            step: p.step,
        })
        .collect();
    let mut answer = json!({ "metrics": page });
    if offset + max < points.len() {
        answer["next_page_token"] = json!((offset + max).to_string());
    }
    Ok(Json(answer))
}

impl IntoResponse for MlflowError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(serde_json::json!({ "error_code": self.code, "message": self.message })),
        )
            .into_response()
    }
}
