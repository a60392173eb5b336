//! Batch scoring: a model version over a dataset version as a job of N
//! replicas, its predictions written as a new version of an output
//! dataset; how far one got; a retry that redoes only what is missing.

use app::models::{Job, ScoringForm, ScoringProgress};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{header, HeaderValue, StatusCode};

use super::json::JsonBody;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// A job with its `Location`, as a 201.
fn created(job: &Job) -> Response {
    let mut response = (StatusCode::CREATED, Json(job)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/api/v1/scorings/{}", job.name)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// Starts a batch scoring: the model version (or the one its alias names)
/// scores every `.jsonl` and `.csv` file of the dataset version, the files
/// shared among the replicas; the output dataset (made if need be) gets a
/// new version, complete when every file's predictions are in. The job
/// counts against the quota as any job does.
#[utoipa::path(post, path = "/api/v1/scorings", tag = "scorings",
    request_body = ScoringForm,
    responses(
        (status = 201, description = "The scoring's job; `Location` is its progress", body = Job),
        (status = 400, description = "A bad field: no such model or version, no saved dataset version, a bad name, named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer, or over the account's quota", body = ErrorBody),
        (status = 409, description = "The job's name is taken", body = ErrorBody),
    ))]
pub async fn start(
    State(state): State<AppState>,
    Writer(who): Writer,
    form: Result<JsonBody<ScoringForm>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(form) = form?;
    let job = app::use_cases::scoring::score_dataset(&state.services, &who, form).await?;
    tracing::info!(account = %who.me.account.name, job = %job.name, user = %who.me.email, "batch scoring started");
    Ok(created(&job))
}

/// How far a scoring job got: its input files, those whose predictions are
/// in the output version, and that version's state.
#[utoipa::path(get, path = "/api/v1/scorings/{name}", tag = "scorings",
    params(("name" = String, Path, description = "The scoring's job (any of its tries)")),
    responses(
        (status = 200, description = "Its progress", body = ScoringProgress),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such job in this account, or it scores nothing", body = ErrorBody),
    ))]
pub async fn progress(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<ScoringProgress>, ApiError> {
    Ok(Json(
        app::use_cases::scoring::scoring(&state.services, &who.me, &name).await?,
    ))
}

/// Tries a scoring again after it ended without finishing its output: a new
/// job with the same model version, input and output version, whose
/// replicas skip the files already scored.
#[utoipa::path(post, path = "/api/v1/scorings/{name}/retry", tag = "scorings",
    params(("name" = String, Path, description = "The try to follow (its job)")),
    responses(
        (status = 201, description = "The new try's job", body = Job),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer, or over the account's quota", body = ErrorBody),
        (status = 404, description = "No such job in this account, or it scores nothing", body = ErrorBody),
        (status = 409, description = "It still runs, its output is complete, or the output version is gone", body = ErrorBody),
    ))]
pub async fn retry(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let job = app::use_cases::scoring::retry_scoring(&state.services, &who, &name).await?;
    tracing::info!(account = %who.me.account.name, job = %job.name, after = %name, user = %who.me.email, "batch scoring retried");
    Ok(created(&job))
}
