//! `/api/v1/local-runs`: what a program run outside the console reports of
//! itself (the SDK's `paddlecloud.run()`, the CLI's `paddlecloud run --`):
//! its start, output, heartbeats and end. Its metrics go where any job's
//! do (`POST /api/v1/jobs/{name}/metrics`). Every report is idempotent, so
//! a client that was offline replays its spool as it is.

use app::models::{Beat, Job, LocalRun, LocalRunEnd, LocalRunStart, LogAck, LogChunk};
use axum::extract::{Path, State};
use axum::response::Response;
use axum::Json;

use super::json::JsonBody;
use super::templates::created;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::Writer;
use crate::http::AppState;

/// A run starts: it becomes a running job (`source: local`) named `name`,
/// or after its program (`train`, `train-2`, …). The same `client_id` again
/// answers with the run it started.
#[utoipa::path(post, path = "/api/v1/local-runs", tag = "local-runs", request_body = LocalRunStart,
    responses(
        (status = 201, description = "Recorded (or recorded already); `Location` is the job's URL", body = Job),
        (status = 400, description = "A bad field, named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 409, description = "A job of that name exists", body = ErrorBody),
    ))]
pub async fn start(
    State(state): State<AppState>,
    Writer(who): Writer,
    start: Result<JsonBody<LocalRunStart>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(start) = start?;
    let job = state.services.local_runs.start(&who.me, start).await?;
    Ok(created(&format!("/api/v1/jobs/{}", job.name), &job))
}

/// Its parameters, where and how it ran, its last heartbeat and how much of
/// its output is recorded.
#[utoipa::path(get, path = "/api/v1/local-runs/{name}", tag = "local-runs",
    params(("name" = String, Path, description = "The run's job")),
    responses(
        (status = 200, description = "The run", body = LocalRun),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such local run in the account", body = ErrorBody),
    ))]
pub async fn get_one(
    State(state): State<AppState>,
    crate::http::caller::Caller(who): crate::http::caller::Caller,
    Path(name): Path<String>,
) -> Result<Json<LocalRun>, ApiError> {
    Ok(Json(
        state
            .services
            .local_runs
            .get(&who.me.account, &name)
            .await?,
    ))
}

/// Parameters learnt after the start (`run.log_params`): added, a name
/// given again taking the new value.
#[utoipa::path(post, path = "/api/v1/local-runs/{name}/params", tag = "local-runs",
    request_body(content = Object, description = "`{name: value}`"),
    params(("name" = String, Path, description = "The run's job")),
    responses(
        (status = 200, description = "The run with every parameter", body = LocalRun),
        (status = 400, description = "Too many parameters", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such local run in the account", body = ErrorBody),
    ))]
pub async fn params(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    params: Result<JsonBody<std::collections::BTreeMap<String, serde_json::Value>>, ApiError>,
) -> Result<Json<LocalRun>, ApiError> {
    let JsonBody(params) = params?;
    let run = state
        .services
        .local_runs
        .log_params(&who.me.account, &name, params)
        .await?;
    Ok(Json(run))
}

/// Output from byte `offset` on: what arrived already is skipped, so a
/// chunk sent twice is recorded once.
#[utoipa::path(post, path = "/api/v1/local-runs/{name}/log", tag = "local-runs", request_body = LogChunk,
    params(("name" = String, Path, description = "The run's job")),
    responses(
        (status = 200, description = "Bytes of output recorded now", body = LogAck),
        (status = 400, description = "Too long, or an offset inside a character", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such local run in the account", body = ErrorBody),
        (status = 409, description = "A gap: the message says the offset expected", body = ErrorBody),
    ))]
pub async fn log(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    chunk: Result<JsonBody<LogChunk>, ApiError>,
) -> Result<Json<LogAck>, ApiError> {
    let JsonBody(chunk) = chunk?;
    let ack = state
        .services
        .local_runs
        .log(&who.me.account, &name, chunk)
        .await?;
    Ok(Json(ack))
}

/// The run is alive (clients beat every 10 s; without one for the
/// console's window it is marked lost, and a beat brings it back).
#[utoipa::path(post, path = "/api/v1/local-runs/{name}/heartbeat", tag = "local-runs",
    params(("name" = String, Path, description = "The run's job")),
    responses(
        (status = 200, description = "Its status, and whether Stop was pressed", body = Beat),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such local run in the account", body = ErrorBody),
    ))]
pub async fn heartbeat(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Beat>, ApiError> {
    let beat = state
        .services
        .local_runs
        .heartbeat(&who.me.account, &name)
        .await?;
    Ok(Json(beat))
}

/// How it ended: succeeded, failed (an exception, a non-zero exit) or
/// stopped (interrupted). Reported again, nothing changes.
#[utoipa::path(post, path = "/api/v1/local-runs/{name}/end", tag = "local-runs", request_body = LocalRunEnd,
    params(("name" = String, Path, description = "The run's job")),
    responses(
        (status = 200, description = "The job as it ended", body = Job),
        (status = 400, description = "A bad field, named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such local run in the account", body = ErrorBody),
    ))]
pub async fn end(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    end: Result<JsonBody<LocalRunEnd>, ApiError>,
) -> Result<Json<Job>, ApiError> {
    let JsonBody(end) = end?;
    let job = state
        .services
        .local_runs
        .end(&who.me.account, &name, end)
        .await?;
    Ok(Json(job))
}
