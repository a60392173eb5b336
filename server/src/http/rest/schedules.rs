//! `/api/v1/schedules`: templates, pipelines and notebook files run on a
//! cron schedule; each schedule's runs (ticks) with what they started.

use app::models::{Schedule, ScheduleSpec};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{header, HeaderValue, StatusCode};

use super::json::JsonBody;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// The account's schedules by name (without their runs).
#[utoipa::path(get, path = "/api/v1/schedules", tag = "schedules",
    responses(
        (status = 200, description = "The schedules", body = Vec<Schedule>),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<Schedule>>, ApiError> {
    Ok(Json(state.services.schedules.list(&who.me.account).await?))
}

/// Saves a schedule: a template, a pipeline or a notebook file run on a
/// cron pattern in a timezone. What it runs is checked now (the template
/// and its values, the pipeline, the notebook file and its parameters);
/// its first tick is the first after now.
#[utoipa::path(post, path = "/api/v1/schedules", tag = "schedules",
    request_body = ScheduleSpec,
    responses(
        (status = 201, description = "Saved; `Location` is its URL", body = Schedule),
        (status = 400, description = "A bad field (`cron`, `timezone`, `target.…`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "The notebook is not the caller's", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    Writer(who): Writer,
    spec: Result<JsonBody<ScheduleSpec>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(spec) = spec?;
    let made = app::use_cases::schedules::create_schedule(&state.services, &who, spec).await?;
    let mut response = (StatusCode::CREATED, Json(&made)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/api/v1/schedules/{}", made.spec.name)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// One schedule with its newest runs: each tick, what became of it
/// (started, skipped, missed, failed), what it started and its status now.
#[utoipa::path(get, path = "/api/v1/schedules/{name}", tag = "schedules",
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 200, description = "The schedule", body = Schedule),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such schedule in the account", body = ErrorBody),
    ))]
pub async fn get_one(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<Schedule>, ApiError> {
    let services = &state.services;
    Ok(Json(
        app::use_cases::schedules::schedule_page(services, &who.me.account, &name).await?,
    ))
}

/// Deletes a schedule and the record of its runs (what they started stays).
#[utoipa::path(delete, path = "/api/v1/schedules/{name}", tag = "schedules",
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such schedule in the account", body = ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.services.schedules.delete(&who.me, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Pauses a schedule: no tick runs until it is resumed.
#[utoipa::path(post, path = "/api/v1/schedules/{name}/pause", tag = "schedules",
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 200, description = "The paused schedule", body = Schedule),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such schedule in the account", body = ErrorBody),
    ))]
pub async fn pause(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Schedule>, ApiError> {
    Ok(Json(
        state
            .services
            .schedules
            .set_paused(&who.me, &name, true)
            .await?,
    ))
}

/// Resumes a schedule: ticks from now on (those missed while it was
/// paused are not caught up).
#[utoipa::path(post, path = "/api/v1/schedules/{name}/resume", tag = "schedules",
    params(("name" = String, Path, description = "The schedule's name")),
    responses(
        (status = 200, description = "The resumed schedule", body = Schedule),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such schedule in the account", body = ErrorBody),
    ))]
pub async fn resume(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Schedule>, ApiError> {
    Ok(Json(
        state
            .services
            .schedules
            .set_paused(&who.me, &name, false)
            .await?,
    ))
}
