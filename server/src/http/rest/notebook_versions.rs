//! `/api/v1/notebooks/{name}/history|versions|diff`: the versions of a
//! notebook's files (each save, checkpoint, stop and restore), one version's
//! file or page, two compared cell by cell, and a restore. The notebook's
//! owner alone: anyone else gets 404, as for its JupyterLab.

use app::models::{NotebookDiff, NotebookHistory, NotebookVersion};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::Json;
use http::{header, HeaderValue};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::board::attachment;
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// What a version's page may do in the browser: nothing but show itself
/// (no script, no request out, no form, a unique origin).
pub const PAGE_POLICY: &str =
    "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:";

/// Which file's versions.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryParams {
    /// The file's path in the workspace (`work/mnist.ipynb`); left out, the
    /// file changed last.
    #[param(max_length = 1024, pattern = r"^([^/.][^/]*/)*[^/.][^/]*\.ipynb$")]
    path: Option<String>,
}

/// Which two versions.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DiffParams {
    /// The older version's id.
    from: i64,
    /// The newer version's id.
    to: i64,
}

/// The notebook's files with versions, and one file's versions, newest
/// first: when, who, why (save, checkpoint, stop, restore), size, cells.
#[utoipa::path(get, path = "/api/v1/notebooks/{name}/history", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name"), HistoryParams),
    responses(
        (status = 200, description = "Its versioned files and the versions of one", body = NotebookHistory),
        (status = 400, description = "Not a notebook file's path (`path`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such notebook of the caller's", body = ErrorBody),
    ))]
pub async fn history(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
    params: Result<Query<HistoryParams>, QueryRejection>,
) -> Result<Json<NotebookHistory>, ApiError> {
    let Query(params) = params?;
    Ok(Json(
        state
            .services
            .notebooks
            .history(&who.me, &name, params.path.as_deref())
            .await?,
    ))
}

/// One version's file: the notebook's JSON, as it was.
#[utoipa::path(get, path = "/api/v1/notebooks/{name}/versions/{id}", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name"),
           ("id" = i64, Path, description = "The version's id")),
    responses(
        (status = 200, description = "The .ipynb file", content_type = "application/x-ipynb+json"),
        (status = 400, description = "Not a version id", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such notebook of the caller's, or no such version", body = ErrorBody),
    ))]
pub async fn file(
    State(state): State<AppState>,
    Caller(who): Caller,
    params: Result<Path<(String, i64)>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path((name, id)) = params?;
    let (version, bytes) = state.services.notebooks.version(&who.me, &name, id).await?;
    Ok(ipynb_attachment(&version.path, bytes))
}

/// A notebook file as a download, named as the file at `path` is (what a
/// header would mind made `_`).
pub fn ipynb_attachment(path: &str, bytes: Vec<u8>) -> Response {
    let file: String = path
        .rsplit('/')
        .next()
        .unwrap_or("notebook.ipynb")
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' {
                c
            } else {
                '_'
            }
        })
        .collect();
    attachment(bytes, "application/x-ipynb+json", &file)
}

/// One version as a page (nbconvert's HTML without scripts, served so
/// that nothing in it runs or loads). 503 while the console first builds nbconvert.
#[utoipa::path(get, path = "/api/v1/notebooks/{name}/versions/{id}/html", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name"),
           ("id" = i64, Path, description = "The version's id")),
    responses(
        (status = 200, description = "The page", content_type = "text/html"),
        (status = 400, description = "Not a version id", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such notebook of the caller's, or no such version", body = ErrorBody),
        (status = 503, description = "nbconvert is being prepared; try again", body = ErrorBody),
    ))]
pub async fn page(
    State(state): State<AppState>,
    Caller(who): Caller,
    params: Result<Path<(String, i64)>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path((name, id)) = params?;
    Ok(page_response(
        state
            .services
            .notebooks
            .version_html(&who.me, &name, id)
            .await?,
    ))
}

/// A version's page as served: HTML, in a sandbox where nothing runs or
/// loads ([`PAGE_POLICY`]).
pub fn page_response(page: Vec<u8>) -> Response {
    let mut response = Response::new(axum::body::Body::from(page));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PAGE_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Two versions compared cell by cell: each cell same, added, removed or
/// changed, a changed one's source line by line and its outputs' text when
/// they changed.
#[utoipa::path(get, path = "/api/v1/notebooks/{name}/diff", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name"), DiffParams),
    responses(
        (status = 200, description = "The comparison", body = NotebookDiff),
        (status = 400, description = "`from` or `to` missing or not an id", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such notebook of the caller's, or no such version", body = ErrorBody),
    ))]
pub async fn diff(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
    params: Result<Query<DiffParams>, QueryRejection>,
) -> Result<Json<NotebookDiff>, ApiError> {
    let Query(params) = params?;
    Ok(Json(
        state
            .services
            .notebooks
            .diff(&who.me, &name, params.from, params.to)
            .await?,
    ))
}

/// Writes a version back into the running notebook's workspace (the file
/// as it was is kept as a version first); the restore's own version.
#[utoipa::path(post, path = "/api/v1/notebooks/{name}/versions/{id}/restore", tag = "notebooks",
    params(("name" = String, Path, description = "The notebook's name"),
           ("id" = i64, Path, description = "The version's id")),
    responses(
        (status = 200, description = "Restored: the version the file is now", body = NotebookVersion),
        (status = 400, description = "Not a version id", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such notebook of the caller's, or no such version", body = ErrorBody),
        (status = 409, description = "The notebook is not running", body = ErrorBody),
        (status = 503, description = "Its server did not take the file", body = ErrorBody),
    ))]
pub async fn restore(
    State(state): State<AppState>,
    Writer(who): Writer,
    params: Result<Path<(String, i64)>, PathRejection>,
) -> Result<Json<NotebookVersion>, ApiError> {
    let Path((name, id)) = params?;
    Ok(Json(
        state.services.notebooks.restore(&who.me, &name, id).await?,
    ))
}
