//! What a share link opens, without a key: the dataset or model, a file,
//! everything as a zip.

use app::models::Asset;
use app::ports::Viewer;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::Json;
use http::HeaderMap;

use super::transfer::answer_file;
use super::{slot, VersionParam};
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::rest::archive::zip_response;
use crate::http::AppState;

/// `GET /api/v1/shared/{token}`: what a share link opens (no key needed).
#[utoipa::path(get, path = "/api/v1/shared/{token}", tag = "files", security(()),
    params(("token" = String, Path, description = "The link's token")),
    responses((status = 200, body = Asset), (status = 404, body = ErrorBody)))]
pub async fn shared(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> Result<Json<Asset>, ApiError> {
    let assets = &state.services.assets;
    let r = assets.resolve_link(&token).await?;
    Ok(Json(assets.get(&Viewer::Link(token), &r).await?))
}

/// `GET /api/v1/shared/{token}/files/{path}?version=`: a file through a link.
#[utoipa::path(get, path = "/api/v1/shared/{token}/files/{path}", tag = "files", security(()),
    params(("token" = String, Path), ("path" = String, Path), VersionParam),
    responses((status = 200, description = "The file"), (status = 404, body = ErrorBody)))]
pub async fn shared_file(
    State(state): State<AppState>,
    Path((token, path)): Path<(String, String)>,
    query: Result<Query<VersionParam>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Query(q) = query?;
    let assets = &state.services.assets;
    let r = assets.resolve_link(&token).await?;
    let slot = slot(&r, q.version)?;
    answer_file(assets, &Viewer::Link(token), &r, slot, &path, &headers).await
}

/// `GET /api/v1/shared/{token}/archive.zip?version=`: everything, as a zip.
#[utoipa::path(get, path = "/api/v1/shared/{token}/archive.zip", tag = "files", security(()),
    params(("token" = String, Path), VersionParam),
    responses((status = 200, description = "A zip"), (status = 404, body = ErrorBody)))]
pub async fn shared_archive(
    State(state): State<AppState>,
    Path(token): Path<String>,
    query: Result<Query<VersionParam>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = query?;
    let assets = state.services.assets.clone();
    let r = assets.resolve_link(&token).await?;
    let slot = slot(&r, q.version)?;
    zip_response(assets, Viewer::Link(token), r, slot).await
}
