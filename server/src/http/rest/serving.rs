//! `/api/v1/serving`: launch, list, get, scale, stop, delete serving
//! instances, and their traffic. Predict calls themselves go to the
//! instance's endpoint, `/serve/<account>/<name>/…`.

use app::models::{
    Release, Scale, ServingInstance, ServingList, ServingSpec, ServingTraffic, ShadowCall,
};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{header, HeaderValue, StatusCode};
use serde::Deserialize;
use utoipa::IntoParams;

use super::json::JsonBody;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// The account's serving instances, newest first, with the last minute's
/// requests per second, latency and errors.
#[utoipa::path(get, path = "/api/v1/serving", tag = "serving",
    responses(
        (status = 200, description = "The instances", body = ServingList),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<ServingList>, ApiError> {
    Ok(Json(state.services.serving.list(&who.me.account).await?))
}

/// Launches a model version as a serving instance. It starts Pending and
/// turns Ready once its replicas answer (or Failed, with the reason, when
/// the model does not load).
#[utoipa::path(post, path = "/api/v1/serving", tag = "serving", request_body = ServingSpec,
    responses(
        (status = 201, description = "Launched; `Location` is its URL", body = ServingInstance),
        (status = 400, description = "A bad field (unknown model or version, bad size), named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "Over the account's quota: what is over and by how much", body = ErrorBody),
        (status = 409, description = "The name is taken in this account", body = ErrorBody),
    ))]
pub async fn launch(
    State(state): State<AppState>,
    Writer(who): Writer,
    spec: Result<JsonBody<ServingSpec>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(spec) = spec?;
    let done = app::use_cases::launch_within_quota(&state.services, &who.me, spec).await?;
    tracing::info!(account = %who.me.account.name, serving = %done.name, user = %who.me.email, "serving launched through the API");
    let mut response = (StatusCode::CREATED, Json(&done)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/api/v1/serving/{}", done.name)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// One instance.
#[utoipa::path(get, path = "/api/v1/serving/{name}", tag = "serving",
    params(("name" = String, Path, description = "The instance's name")),
    responses(
        (status = 200, description = "The instance", body = ServingInstance),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such instance in this account", body = ErrorBody),
    ))]
pub async fn get_one(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<ServingInstance>, ApiError> {
    Ok(Json(
        state.services.serving.get(&who.me.account, &name).await?,
    ))
}

/// Scales to a number of replicas, or sets the autoscaler's bounds.
#[utoipa::path(post, path = "/api/v1/serving/{name}/scale", tag = "serving", request_body = Scale,
    params(("name" = String, Path, description = "The instance's name")),
    responses(
        (status = 200, description = "The instance with its new size", body = ServingInstance),
        (status = 400, description = "A bad size", body = ErrorBody),
        (status = 403, description = "Growing would exceed the account's quota", body = ErrorBody),
        (status = 404, description = "No such instance in this account", body = ErrorBody),
        (status = 409, description = "It is stopped or failed", body = ErrorBody),
    ))]
pub async fn scale(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    scale: Result<JsonBody<Scale>, ApiError>,
) -> Result<Json<ServingInstance>, ApiError> {
    let JsonBody(scale) = scale?;
    Ok(Json(
        app::use_cases::scale_within_quota(&state.services, &who.me, &name, scale).await?,
    ))
}

/// Releases a version by degrees: starts or changes a canary (a share of
/// the calls) or a shadow (a copy of a share, its answers recorded, never
/// returned), promotes the canary (the main replicas roll to its version
/// one by one; an alias the instance follows moves there), rolls it back,
/// or ends the shadow.
#[utoipa::path(post, path = "/api/v1/serving/{name}/release", tag = "serving", request_body = Release,
    params(("name" = String, Path, description = "The instance's name")),
    responses(
        (status = 200, description = "The instance with its new tracks", body = ServingInstance),
        (status = 400, description = "A bad version, share or size, named in `field`", body = ErrorBody),
        (status = 403, description = "Over the account's quota, or a protected alias only owners move", body = ErrorBody),
        (status = 404, description = "No such instance in this account", body = ErrorBody),
        (status = 409, description = "It is stopped, or has no canary (shadow) to promote, roll back or end", body = ErrorBody),
    ))]
pub async fn release(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    release: Result<JsonBody<Release>, ApiError>,
) -> Result<Json<ServingInstance>, ApiError> {
    let JsonBody(release) = release?;
    let done =
        app::use_cases::release_within_quota(&state.services, &who.me, &name, release).await?;
    tracing::info!(account = %who.me.account.name, serving = %name, user = %who.me.email, release = %release.describe(), "serving release through the API");
    Ok(Json(done))
}

/// How many of `GET /api/v1/serving/{name}/shadow-calls`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ShadowLimit {
    /// At most this many, newest first (default 50, at most 200).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

/// The newest calls mirrored to the instance's shadow: both answers' starts
/// side by side, whether they agree, and how long each took.
#[utoipa::path(get, path = "/api/v1/serving/{name}/shadow-calls", tag = "serving",
    params(("name" = String, Path, description = "The instance's name"), ShadowLimit),
    responses(
        (status = 200, description = "The calls, newest first", body = Vec<ShadowCall>),
        (status = 400, description = "A bad limit", body = ErrorBody),
        (status = 404, description = "No such instance in this account", body = ErrorBody),
    ))]
pub async fn shadow_calls(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
    limit: Result<Query<ShadowLimit>, QueryRejection>,
) -> Result<Json<Vec<ShadowCall>>, ApiError> {
    let Query(limit) = limit?;
    let limit = match limit.limit {
        None => 50,
        Some(n @ 1..=200) => n as usize,
        Some(_) => {
            return Err(ApiError(app::error::AppError::invalid(
                "limit",
                "From 1 to 200 calls.",
            )))
        }
    };
    Ok(Json(
        state
            .services
            .serving
            .shadow_calls(&who.me.account, &name, limit)
            .await?,
    ))
}

/// Stops every replica, keeping the record and its traffic.
#[utoipa::path(post, path = "/api/v1/serving/{name}/stop", tag = "serving",
    params(("name" = String, Path, description = "The instance's name")),
    responses(
        (status = 200, description = "The instance, stopped", body = ServingInstance),
        (status = 404, description = "No such instance in this account", body = ErrorBody),
    ))]
pub async fn stop(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<ServingInstance>, ApiError> {
    Ok(Json(
        state.services.serving.stop(&who.me.account, &name).await?,
    ))
}

/// Deletes an instance's record (stopping it first).
#[utoipa::path(delete, path = "/api/v1/serving/{name}", tag = "serving",
    params(("name" = String, Path, description = "The instance's name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such instance in this account", body = ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .services
        .serving
        .delete(&who.me.account, &name)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The range of `GET /api/v1/serving/{name}/traffic`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Range {
    /// Start, Unix seconds (default: an hour before `to`).
    from: Option<f64>,
    /// End, Unix seconds (default: now).
    to: Option<f64>,
}

/// Requests per bucket, latency percentiles and errors over a range.
#[utoipa::path(get, path = "/api/v1/serving/{name}/traffic", tag = "serving",
    params(("name" = String, Path, description = "The instance's name"), Range),
    responses(
        (status = 200, description = "The traffic", body = ServingTraffic),
        (status = 400, description = "A bad range", body = ErrorBody),
        (status = 404, description = "No such instance in this account", body = ErrorBody),
    ))]
pub async fn traffic(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
    range: Result<Query<Range>, QueryRejection>,
) -> Result<Json<ServingTraffic>, ApiError> {
    let Query(range) = range?;
    Ok(Json(
        state
            .services
            .serving
            .traffic(&who.me.account, &name, range.from, range.to)
            .await?,
    ))
}
