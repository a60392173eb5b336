//! A dataset's or a model version's files: a folder's listing, a file in
//! (streamed), a file out (or the `Range` asked for), deleting, everything
//! as a zip.

use app::error::AppError;
use app::models::FileEntry;
use app::ports::Viewer;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, Request, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{HeaderMap, StatusCode};

use super::transfer::{answer_file, body_stream};
use super::{asset, not_for_jobs, slot, DirParams, VersionParam};
use crate::assets::objects::TOO_LARGE_FIELD;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::rest::archive::zip_response;
use crate::http::AppState;

/// `GET /api/v1/{kind}/{owner}/{name}/files?dir=&version=`: one folder.
#[utoipa::path(get, path = "/api/v1/{kind}/{owner}/{name}/files", tag = "files",
    params(("kind" = String, Path), ("owner" = String, Path), ("name" = String, Path), DirParams),
    responses((status = 200, body = Vec<FileEntry>), (status = 404, body = ErrorBody)))]
pub async fn list_dir(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path((kind, owner, name)): Path<(String, String, String)>,
    query: Result<Query<DirParams>, QueryRejection>,
) -> Result<Json<Vec<FileEntry>>, ApiError> {
    let Query(q) = query?;
    let r = asset(&kind, owner, name)?;
    let slot = slot(&r, q.version)?;
    Ok(Json(
        state
            .services
            .assets
            .list_dir(&Viewer::User(who.me), &r, slot, &q.dir)
            .await?,
    ))
}

/// `PUT /api/v1/{kind}/{owner}/{name}/files/{path}?version=`: writes a file
/// from the request body, streamed; it appears only once complete, and a
/// retry replaces it.
#[utoipa::path(put, path = "/api/v1/{kind}/{owner}/{name}/files/{path}", tag = "files",
    params(("kind" = String, Path), ("owner" = String, Path), ("name" = String, Path),
           ("path" = String, Path, description = "The file's path; may contain `/`"), VersionParam),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 201, body = FileEntry), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody),
              (status = 413, description = "Larger than the console accepts (--max-upload-bytes)", body = ErrorBody)))]
pub async fn put_file(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((kind, owner, name, path)): Path<(String, String, String, String)>,
    query: Result<Query<VersionParam>, QueryRejection>,
    request: Request,
) -> Result<Response, ApiError> {
    let Query(q) = query?;
    let r = asset(&kind, owner, name)?;
    let slot = slot(&r, q.version)?;
    match state
        .services
        .assets
        .put_file(&who.me, &r, slot, &path, body_stream(request))
        .await
    {
        Ok(entry) => Ok((StatusCode::CREATED, Json(entry)).into_response()),
        Err(err @ AppError::Invalid { field: Some(_), .. })
            if err.field() == Some(TOO_LARGE_FIELD) =>
        {
            let mut response = ApiError(err).into_response();
            *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
            Ok(response)
        }
        Err(err) => Err(err.into()),
    }
}

/// `GET /api/v1/{kind}/{owner}/{name}/files/{path}?version=`: a file, or
/// the `Range` asked for.
#[utoipa::path(get, path = "/api/v1/{kind}/{owner}/{name}/files/{path}", tag = "files",
    params(("kind" = String, Path), ("owner" = String, Path), ("name" = String, Path),
           ("path" = String, Path), VersionParam),
    responses((status = 200, description = "The file", content_type = "application/octet-stream"),
              (status = 206, description = "Part of it"), (status = 404, body = ErrorBody),
              (status = 416, description = "The range is outside the file", body = ErrorBody)))]
pub async fn get_file(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path((kind, owner, name, path)): Path<(String, String, String, String)>,
    query: Result<Query<VersionParam>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Query(q) = query?;
    let r = asset(&kind, owner, name)?;
    let slot = slot(&r, q.version)?;
    answer_file(
        &state.services.assets,
        &Viewer::User(who.me),
        &r,
        slot,
        &path,
        &headers,
    )
    .await
}

/// `DELETE /api/v1/{kind}/{owner}/{name}/files/{path}?version=`: a file or
/// a folder with everything in it.
#[utoipa::path(delete, path = "/api/v1/{kind}/{owner}/{name}/files/{path}", tag = "files",
    params(("kind" = String, Path), ("owner" = String, Path), ("name" = String, Path),
           ("path" = String, Path), VersionParam),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete_file(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((kind, owner, name, path)): Path<(String, String, String, String)>,
    query: Result<Query<VersionParam>, QueryRejection>,
) -> Result<StatusCode, ApiError> {
    not_for_jobs(&who, "deleting files")?;
    let Query(q) = query?;
    let r = asset(&kind, owner, name)?;
    let slot = slot(&r, q.version)?;
    state
        .services
        .assets
        .delete_path(&who.me, &r, slot, &path)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/v1/{kind}/{owner}/{name}/archive.zip?version=`: every file, as
/// one zip written as it streams.
#[utoipa::path(get, path = "/api/v1/{kind}/{owner}/{name}/archive.zip", tag = "files",
    params(("kind" = String, Path), ("owner" = String, Path), ("name" = String, Path), VersionParam),
    responses((status = 200, description = "A zip", content_type = "application/zip"), (status = 404, body = ErrorBody)))]
pub async fn archive(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path((kind, owner, name)): Path<(String, String, String)>,
    query: Result<Query<VersionParam>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = query?;
    let r = asset(&kind, owner, name)?;
    let slot = slot(&r, q.version)?;
    zip_response(state.services.assets.clone(), Viewer::User(who.me), r, slot).await
}
