//! `/api/v1/experiments`: start a search over a template's parameters, list
//! and read experiments with their trials, and steer one (pause, resume,
//! stop, more trials, failed trials again).

use app::error::AppError;
use app::models::{Experiment, ExperimentSpec, ExperimentSummary, Trial};
use axum::extract::{Path, State};
use axum::response::Response;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::json::JsonBody;
use super::templates::created;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// The account's experiments, newest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ExperimentList {
    /// Each without its trials, with their counts and the best one.
    pub experiments: Vec<ExperimentSummary>,
}

/// How many trials to add.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct Extend {
    /// Trials added to the experiment's total (which stays at most 1,000).
    #[schema(minimum = 1, maximum = 1000)]
    pub more: u32,
}

/// Starts an experiment. Everything is checked first (its fields, the
/// search space against the template's parameters, the job a trial would
/// run); then it is recorded and its first trials start as jobs.
#[utoipa::path(post, path = "/api/v1/experiments", tag = "experiments", request_body = ExperimentSpec,
    responses(
        (status = 201, description = "Started; `Location` is the experiment's URL", body = Experiment),
        (status = 400, description = "A bad field, named in `field` (e.g. `parameters[0].max`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 409, description = "An experiment of that name exists", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    Writer(who): Writer,
    spec: Result<JsonBody<ExperimentSpec>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(spec) = spec?;
    let e = app::use_cases::experiments::create_experiment(&state.services, &who, spec).await?;
    Ok(created(&format!("/api/v1/experiments/{}", e.name), &e))
}

/// The account's experiments, newest first.
#[utoipa::path(get, path = "/api/v1/experiments", tag = "experiments",
    responses(
        (status = 200, description = "The experiments", body = ExperimentList),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<ExperimentList>, ApiError> {
    let all = state.services.experiments.list(&who.me.account).await?;
    Ok(Json(ExperimentList {
        experiments: all.iter().map(Experiment::summary).collect(),
    }))
}

/// One experiment with every trial: its values, status (and why it waits,
/// failed or was stopped early), objective and job.
#[utoipa::path(get, path = "/api/v1/experiments/{name}", tag = "experiments",
    params(("name" = String, Path, description = "The experiment's name")),
    responses(
        (status = 200, description = "The experiment", body = Experiment),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such experiment in the account", body = ErrorBody),
    ))]
pub async fn get_one(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<Experiment>, ApiError> {
    Ok(Json(
        state
            .services
            .experiments
            .get(&who.me.account, &name)
            .await?,
    ))
}

/// The trial with the best objective so far (of those that ran to their
/// end; the earliest of equals).
#[utoipa::path(get, path = "/api/v1/experiments/{name}/best", tag = "experiments",
    params(("name" = String, Path, description = "The experiment's name")),
    responses(
        (status = 200, description = "The best trial", body = Trial),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such experiment, or no trial has finished with a value yet", body = ErrorBody),
    ))]
pub async fn best(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<Trial>, ApiError> {
    let e = state
        .services
        .experiments
        .get(&who.me.account, &name)
        .await?;
    let best = e
        .best()
        .cloned()
        .ok_or_else(|| AppError::not_found(format!("A finished trial of “{name}”")))?;
    Ok(Json(best))
}

/// Starts no new trial; those running go on.
#[utoipa::path(post, path = "/api/v1/experiments/{name}/pause", tag = "experiments",
    params(("name" = String, Path, description = "The experiment's name")),
    responses(
        (status = 200, description = "The paused experiment", body = Experiment),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such experiment in the account", body = ErrorBody),
        (status = 409, description = "It is not running", body = ErrorBody),
    ))]
pub async fn pause(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Experiment>, ApiError> {
    Ok(Json(
        state.services.experiments.pause(&who.me, &name).await?,
    ))
}

/// Starts trials again after a pause.
#[utoipa::path(post, path = "/api/v1/experiments/{name}/resume", tag = "experiments",
    params(("name" = String, Path, description = "The experiment's name")),
    responses(
        (status = 200, description = "The running experiment", body = Experiment),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such experiment in the account", body = ErrorBody),
        (status = 409, description = "It is not paused", body = ErrorBody),
    ))]
pub async fn resume(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Experiment>, ApiError> {
    Ok(Json(
        state.services.experiments.resume(&who.me, &name).await?,
    ))
}

/// Ends the experiment: its running trials' jobs are stopped.
#[utoipa::path(post, path = "/api/v1/experiments/{name}/stop", tag = "experiments",
    params(("name" = String, Path, description = "The experiment's name")),
    responses(
        (status = 200, description = "The stopped experiment", body = Experiment),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such experiment in the account", body = ErrorBody),
        (status = 409, description = "It has ended already", body = ErrorBody),
    ))]
pub async fn stop(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Experiment>, ApiError> {
    Ok(Json(state.services.experiments.stop(&who.me, &name).await?))
}

/// More trials: an experiment that ended runs again, its search learning
/// from every trial so far.
#[utoipa::path(post, path = "/api/v1/experiments/{name}/extend", tag = "experiments",
    params(("name" = String, Path, description = "The experiment's name")),
    request_body = Extend,
    responses(
        (status = 200, description = "The experiment, with its new total", body = Experiment),
        (status = 400, description = "`more` out of range", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such experiment in the account", body = ErrorBody),
        (status = 409, description = "It failed (run its failed trials again)", body = ErrorBody),
    ))]
pub async fn extend(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    body: Result<JsonBody<Extend>, ApiError>,
) -> Result<Json<Experiment>, ApiError> {
    let JsonBody(body) = body?;
    Ok(Json(
        state
            .services
            .experiments
            .extend(&who.me, &name, body.more)
            .await?,
    ))
}

/// Runs each failed trial's values again as a new trial; an experiment
/// that ended runs again.
#[utoipa::path(post, path = "/api/v1/experiments/{name}/retry", tag = "experiments",
    params(("name" = String, Path, description = "The experiment's name")),
    responses(
        (status = 200, description = "The experiment, with the new trials", body = Experiment),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such experiment in the account", body = ErrorBody),
        (status = 409, description = "No failed trial to run again", body = ErrorBody),
    ))]
pub async fn retry(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Experiment>, ApiError> {
    Ok(Json(
        state
            .services
            .experiments
            .retry_failed(&who.me, &name)
            .await?,
    ))
}
