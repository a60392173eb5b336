//! `/api/v1/environments`: save, list and read environment profiles (with
//! their local build and its log), and publish one for every account.

use app::models::{
    Environment, EnvironmentDetail, EnvironmentList, EnvironmentRef, EnvironmentSpec, Publication,
};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::Json;

use super::json::JsonBody;
use super::templates::{created, WhichParams};
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// The account's environments, then those published for everyone
/// ("paddle-cpu" and "minimal" among them), each at its newest version
/// with the state of its local build.
#[utoipa::path(get, path = "/api/v1/environments", tag = "environments",
    responses(
        (status = 200, description = "The environments", body = EnvironmentList),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<EnvironmentList>, ApiError> {
    Ok(Json(state.services.environments.list(&who.me).await?))
}

/// Saves an environment: the next version of its name (1 for a new name),
/// and starts building its requirements on the console's machine if no
/// environment with the same requirements was built there.
#[utoipa::path(post, path = "/api/v1/environments", tag = "environments", request_body = EnvironmentSpec,
    responses(
        (status = 201, description = "Saved; `Location` is this version's URL", body = Environment),
        (status = 400, description = "A bad field, named in `field` (e.g. `requirements[2]`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
    ))]
pub async fn save(
    State(state): State<AppState>,
    Writer(who): Writer,
    spec: Result<JsonBody<EnvironmentSpec>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(spec) = spec?;
    let saved = state.services.environments.save(&who.me, spec).await?;
    let location = format!(
        "/api/v1/environments/{}?version={}",
        saved.spec.name, saved.version
    );
    Ok(created(&location, &saved))
}

/// One environment: its newest version (or `?version=N`; another
/// account's published one with `?owner=`), its versions, and its local
/// build with the end of the build's log.
#[utoipa::path(get, path = "/api/v1/environments/{name}", tag = "environments",
    params(("name" = String, Path, description = "The environment's name"), WhichParams),
    responses(
        (status = 200, description = "The environment", body = EnvironmentDetail),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such environment (or version) that the account can use", body = ErrorBody),
    ))]
pub async fn get_one(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
    which: Result<Query<WhichParams>, QueryRejection>,
) -> Result<Json<EnvironmentDetail>, ApiError> {
    let Query(which) = which?;
    let reference = EnvironmentRef {
        owner: which.owner,
        name,
        version: which.version,
    };
    Ok(Json(
        state
            .services
            .environments
            .detail(&who.me, &reference)
            .await?,
    ))
}

/// Publishes an environment (every version) for every account, or takes
/// it back. Only a site admin may.
#[utoipa::path(post, path = "/api/v1/environments/{name}/publish", tag = "environments",
    params(("name" = String, Path, description = "The environment's name")),
    request_body = Publication,
    responses(
        (status = 200, description = "The environment's newest version, as published now", body = Environment),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "Not a site admin", body = ErrorBody),
        (status = 404, description = "No such environment", body = ErrorBody),
    ))]
pub async fn publish(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    body: Result<JsonBody<Publication>, ApiError>,
) -> Result<Json<Environment>, ApiError> {
    let JsonBody(body) = body?;
    let owner = body.owner.unwrap_or_else(|| who.me.account.name.clone());
    Ok(Json(
        state
            .services
            .environments
            .publish(&who.me, &owner, &name, body.public)
            .await?,
    ))
}
