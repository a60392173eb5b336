//! `/api/v1/notebooks`: create, list, get, start, stop, keep running and
//! delete notebooks. Their JupyterLab itself is at
//! `/notebooks/<account>/<name>/lab`, through the console's proxy.

use app::models::{Notebook, NotebookList, NotebookSpec};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{header, HeaderValue, StatusCode};

use super::json::JsonBody;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// The account's notebooks, newest first: status (and why), owner,
/// resources, last activity and when idle culling stops each.
#[utoipa::path(get, path = "/api/v1/notebooks", tag = "notebooks",
    responses(
        (status = 200, description = "The notebooks", body = NotebookList),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<NotebookList>, ApiError> {
    Ok(Json(state.services.notebooks.list(&who.me.account).await?))
}

/// Creates a notebook for the caller and starts its JupyterLab. It is
/// Pending until the server answers (or Failed, with its log's last lines).
#[utoipa::path(post, path = "/api/v1/notebooks", tag = "notebooks", request_body = NotebookSpec,
    responses(
        (status = 201, description = "Created; `Location` is its URL", body = Notebook),
        (status = 400, description = "A bad field, named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer, or over the account's quota: what is over and by how much", body = ErrorBody),
        (status = 409, description = "The name is taken in this account", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    Writer(who): Writer,
    spec: Result<JsonBody<NotebookSpec>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(spec) = spec?;
    let done = app::use_cases::create_notebook_within_quota(&state.services, &who.me, spec).await?;
    let mut response = (StatusCode::CREATED, Json(&done)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/api/v1/notebooks/{}", done.name)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// One notebook.
#[utoipa::path(get, path = "/api/v1/notebooks/{name}", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name")),
    responses(
        (status = 200, description = "The notebook", body = Notebook),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such notebook in this account", body = ErrorBody),
    ))]
pub async fn get_one(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<Notebook>, ApiError> {
    Ok(Json(
        state.services.notebooks.get(&who.me.account, &name).await?,
    ))
}

/// Starts a stopped notebook again: same workspace, a cleared idle clock.
#[utoipa::path(post, path = "/api/v1/notebooks/{name}/start", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name")),
    responses(
        (status = 200, description = "The notebook, starting", body = Notebook),
        (status = 403, description = "Not its owner, a viewer, or over the quota", body = ErrorBody),
        (status = 404, description = "No such notebook in this account", body = ErrorBody),
    ))]
pub async fn start(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Notebook>, ApiError> {
    Ok(Json(
        app::use_cases::start_notebook_within_quota(&state.services, &who.me, &name).await?,
    ))
}

/// Stops its server; the workspace stays, its key stops working.
#[utoipa::path(post, path = "/api/v1/notebooks/{name}/stop", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name")),
    responses(
        (status = 200, description = "The notebook, stopped", body = Notebook),
        (status = 403, description = "Neither its owner nor an owner of the account, or a viewer", body = ErrorBody),
        (status = 404, description = "No such notebook in this account", body = ErrorBody),
    ))]
pub async fn stop(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Notebook>, ApiError> {
    Ok(Json(state.services.notebooks.stop(&who.me, &name).await?))
}

/// Resets the idle clock: culling counts from now.
#[utoipa::path(post, path = "/api/v1/notebooks/{name}/keep", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name")),
    responses(
        (status = 200, description = "The notebook, with its new stop time", body = Notebook),
        (status = 403, description = "Not its owner, or a viewer", body = ErrorBody),
        (status = 404, description = "No such notebook in this account", body = ErrorBody),
    ))]
pub async fn keep(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<Json<Notebook>, ApiError> {
    Ok(Json(
        state
            .services
            .notebooks
            .keep_running(&who.me, &name)
            .await?,
    ))
}

/// Stops it if needed and deletes it with its workspace.
#[utoipa::path(delete, path = "/api/v1/notebooks/{name}", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "Neither its owner nor an owner of the account, or a viewer", body = ErrorBody),
        (status = 404, description = "No such notebook in this account", body = ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.services.notebooks.delete(&who.me, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
