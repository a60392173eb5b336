//! Notebook files shared read-only: the owner's shares of a notebook
//! (`/api/v1/notebooks/{name}/shares`), what others shared with the caller
//! (`/api/v1/notebook-shares`), and what a link opens without a key
//! (`/api/v1/shared/notebooks/{token}`): the file's newest version, as a
//! file or a page, and a copy into a notebook of the caller's.

use app::models::{
    CopyTarget, NewNotebookShare, NotebookShare, NotebookShareSpec, NotebookVersion,
    SharedNotebookFile,
};
use app::ports::SharedVia;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::StatusCode;

use super::json::JsonBody;
use super::notebook_versions::{ipynb_attachment, page_response};
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// Shares one of the caller's notebook files with the account's members,
/// another account, or a link (its path is in the answer, this once).
#[utoipa::path(post, path = "/api/v1/notebooks/{name}/shares", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name")),
    request_body = NotebookShareSpec,
    responses(
        (status = 201, description = "Shared", body = NewNotebookShare),
        (status = 400, description = "A bad field (a file with no version, no such account), named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such notebook of the caller's", body = ErrorBody),
        (status = 409, description = "Shared with them already", body = ErrorBody),
    ))]
pub async fn share(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    spec: Result<JsonBody<NotebookShareSpec>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(spec) = spec?;
    let done = state
        .services
        .notebooks
        .share_file(&who.me, &name, &spec)
        .await?;
    Ok((StatusCode::CREATED, Json(done)).into_response())
}

/// The notebook's shares, newest first (a link by its first characters).
#[utoipa::path(get, path = "/api/v1/notebooks/{name}/shares", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name")),
    responses(
        (status = 200, description = "Its shares", body = Vec<NotebookShare>),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such notebook of the caller's", body = ErrorBody),
    ))]
pub async fn shares(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
) -> Result<Json<Vec<NotebookShare>>, ApiError> {
    Ok(Json(
        state.services.notebooks.file_shares(&who.me, &name).await?,
    ))
}

/// Ends a share: its recipients (or the link) no longer see the file.
#[utoipa::path(delete, path = "/api/v1/notebooks/{name}/shares/{id}", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name"),
           ("id" = i64, Path, description = "The share's id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 400, description = "Not a share id", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such notebook of the caller's, or no such share of it", body = ErrorBody),
    ))]
pub async fn revoke(
    State(state): State<AppState>,
    Writer(who): Writer,
    params: Result<Path<(String, i64)>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    let Path((name, id)) = params?;
    state
        .services
        .notebooks
        .revoke_share(&who.me, &name, id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Notebook files others shared with the caller's account or its members.
#[utoipa::path(get, path = "/api/v1/notebook-shares", tag = "notebooks",
    responses(
        (status = 200, description = "The files, newest share first", body = Vec<SharedNotebookFile>),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn shared_with_me(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<SharedNotebookFile>>, ApiError> {
    Ok(Json(
        state.services.notebooks.shared_with_me(&who.me).await?,
    ))
}

async fn file_answer(
    state: &AppState,
    by: Option<&app::models::Me>,
    via: SharedVia,
) -> Result<Response, ApiError> {
    let (file, bytes) = state.services.notebooks.shared(by, &via).await?;
    Ok(ipynb_attachment(&file.path, bytes))
}

async fn page_answer(
    state: &AppState,
    by: Option<&app::models::Me>,
    via: SharedVia,
) -> Result<Response, ApiError> {
    Ok(page_response(
        state.services.notebooks.shared_html(by, &via).await?,
    ))
}

/// A file shared with the caller: its newest version's .ipynb.
#[utoipa::path(get, path = "/api/v1/notebook-shares/{id}/file", tag = "notebooks",
    params(("id" = i64, Path, description = "The share's id")),
    responses(
        (status = 200, description = "The .ipynb file", content_type = "application/x-ipynb+json"),
        (status = 400, description = "Not a share id", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "Nothing shared with the caller by that id", body = ErrorBody),
    ))]
pub async fn share_file(
    State(state): State<AppState>,
    Caller(who): Caller,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(id) = id?;
    file_answer(&state, Some(&who.me), SharedVia::Share(id)).await
}

/// A file shared with the caller as a page (nothing in it runs).
#[utoipa::path(get, path = "/api/v1/notebook-shares/{id}/html", tag = "notebooks",
    params(("id" = i64, Path, description = "The share's id")),
    responses(
        (status = 200, description = "The page", content_type = "text/html"),
        (status = 400, description = "Not a share id", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "Nothing shared with the caller by that id", body = ErrorBody),
        (status = 503, description = "nbconvert is being prepared; try again", body = ErrorBody),
    ))]
pub async fn share_page(
    State(state): State<AppState>,
    Caller(who): Caller,
    id: Result<Path<i64>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(id) = id?;
    page_answer(&state, Some(&who.me), SharedVia::Share(id)).await
}

/// Copies a file shared with the caller into one of their running
/// notebooks; the copy's version there.
#[utoipa::path(post, path = "/api/v1/notebook-shares/{id}/copy", tag = "notebooks",
    params(("id" = i64, Path, description = "The share's id")),
    request_body = CopyTarget,
    responses(
        (status = 200, description = "Copied: the new file's version", body = NotebookVersion),
        (status = 400, description = "Not a share id, or a bad body", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "Nothing shared with the caller by that id, or no such notebook of theirs", body = ErrorBody),
        (status = 409, description = "Their notebook is not running", body = ErrorBody),
    ))]
pub async fn share_copy(
    State(state): State<AppState>,
    Writer(who): Writer,
    id: Result<Path<i64>, PathRejection>,
    target: Result<JsonBody<CopyTarget>, ApiError>,
) -> Result<Json<NotebookVersion>, ApiError> {
    let Path(id) = id?;
    let JsonBody(target) = target?;
    Ok(Json(
        state
            .services
            .notebooks
            .copy_shared(&who.me, &SharedVia::Share(id), &target.notebook)
            .await?,
    ))
}

/// What a notebook share link opens (no key needed): the file and who
/// shared it.
#[utoipa::path(get, path = "/api/v1/shared/notebooks/{token}", tag = "notebooks", security(()),
    params(("token" = String, Path, description = "The link's token")),
    responses((status = 200, body = SharedNotebookFile), (status = 404, body = ErrorBody)))]
pub async fn link(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Result<Json<SharedNotebookFile>, ApiError> {
    let (file, _) = state
        .services
        .notebooks
        .shared(None, &SharedVia::Link(token))
        .await?;
    Ok(Json(file))
}

/// The .ipynb a notebook share link opens.
#[utoipa::path(get, path = "/api/v1/shared/notebooks/{token}/file", tag = "notebooks", security(()),
    params(("token" = String, Path, description = "The link's token")),
    responses((status = 200, description = "The .ipynb file", content_type = "application/x-ipynb+json"),
              (status = 404, body = ErrorBody)))]
pub async fn link_file(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Result<Response, ApiError> {
    file_answer(&state, None, SharedVia::Link(token)).await
}

/// The page a notebook share link opens (nothing in it runs).
#[utoipa::path(get, path = "/api/v1/shared/notebooks/{token}/html", tag = "notebooks", security(()),
    params(("token" = String, Path, description = "The link's token")),
    responses((status = 200, description = "The page", content_type = "text/html"),
              (status = 404, body = ErrorBody),
              (status = 503, description = "nbconvert is being prepared; try again", body = ErrorBody)))]
pub async fn link_page(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Result<Response, ApiError> {
    page_answer(&state, None, SharedVia::Link(token)).await
}

/// Copies the file a link opens into one of the caller's running notebooks.
#[utoipa::path(post, path = "/api/v1/shared/notebooks/{token}/copy", tag = "notebooks",
    params(("token" = String, Path, description = "The link's token")),
    request_body = CopyTarget,
    responses(
        (status = 200, description = "Copied: the new file's version", body = NotebookVersion),
        (status = 400, description = "A bad body", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such link, or no such notebook of the caller's", body = ErrorBody),
        (status = 409, description = "Their notebook is not running", body = ErrorBody),
    ))]
pub async fn link_copy(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(token): Path<String>,
    target: Result<JsonBody<CopyTarget>, ApiError>,
) -> Result<Json<NotebookVersion>, ApiError> {
    let JsonBody(target) = target?;
    Ok(Json(
        state
            .services
            .notebooks
            .copy_shared(&who.me, &SharedVia::Link(token), &target.notebook)
            .await?,
    ))
}
