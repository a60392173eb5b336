//! `/api/v1/pipelines`: submit a pipeline run, list and read runs with
//! their nodes, stop one, retry one from what failed.

use app::models::{PipelineRun, PipelineSubmit};
use axum::extract::{Path, State};
use axum::response::Response;
use axum::Json;
use serde::Serialize;

use super::json::JsonBody;
use super::templates::created;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// The account's pipeline runs, newest first (without their nodes).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PipelineRunList {
    /// The runs.
    pub runs: Vec<PipelineRun>,
}

/// Submits a run of a pipeline. Everything is checked first (the graph:
/// unknown nodes, cycles named, duplicate names; the values; the job each
/// node starts with); then the run is recorded and its first nodes start
/// as jobs.
#[utoipa::path(post, path = "/api/v1/pipelines", tag = "pipelines", request_body = PipelineSubmit,
    responses(
        (status = 201, description = "Submitted; `Location` is the run's URL", body = PipelineRun),
        (status = 400, description = "A bad field, named in `field` (e.g. `nodes[2].after`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 409, description = "A run of that name exists", body = ErrorBody),
    ))]
pub async fn submit(
    State(state): State<AppState>,
    Writer(who): Writer,
    submit: Result<JsonBody<PipelineSubmit>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(submit) = submit?;
    let run = app::use_cases::pipelines::submit_pipeline(&state.services, &who, submit).await?;
    Ok(created(&format!("/api/v1/pipelines/{}", run.name), &run))
}

/// The account's runs, newest first.
#[utoipa::path(get, path = "/api/v1/pipelines", tag = "pipelines",
    responses(
        (status = 200, description = "The runs", body = PipelineRunList),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<PipelineRunList>, ApiError> {
    let runs = state.services.pipelines.list(&who.me.account).await?;
    Ok(Json(PipelineRunList { runs }))
}

/// One run with every node: its status (and why it waits, was skipped or
/// failed), tries and job.
#[utoipa::path(get, path = "/api/v1/pipelines/{name}", tag = "pipelines",
    params(("name" = String, Path, description = "The run's name")),
    responses(
        (status = 200, description = "The run", body = PipelineRun),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such run in the account", body = ErrorBody),
    ))]
pub async fn get_one(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<PipelineRun>, ApiError> {
    Ok(Json(
        state.services.pipelines.get(&who.me.account, &name).await?,
    ))
}

/// Stops a running run: its running jobs are stopped, what had not ended
/// is marked stopped.
#[utoipa::path(post, path = "/api/v1/pipelines/{name}/stop", tag = "pipelines",
    params(("name" = String, Path, description = "The run's name")),
    responses(
        (status = 200, description = "The stopped run", body = PipelineRun),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such run in the account", body = ErrorBody),
        (status = 409, description = "It has ended already", body = ErrorBody),
    ))]
pub async fn stop(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<PipelineRun>, ApiError> {
    Ok(Json(state.services.pipelines.stop(&who.me, &name).await?))
}

/// "Retry from failed": a run that failed or was stopped runs again,
/// keeping what succeeded; the other nodes run anew (a try more each).
#[utoipa::path(post, path = "/api/v1/pipelines/{name}/retry", tag = "pipelines",
    params(("name" = String, Path, description = "The run's name")),
    responses(
        (status = 200, description = "The run, running again", body = PipelineRun),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such run in the account", body = ErrorBody),
        (status = 409, description = "It is running or succeeded", body = ErrorBody),
    ))]
pub async fn retry(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<PipelineRun>, ApiError> {
    Ok(Json(state.services.pipelines.retry(&who.me, &name).await?))
}
