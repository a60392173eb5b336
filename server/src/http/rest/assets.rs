//! `/api/v1/datasets…` and `/api/v1/models…` (one set of handlers, `{kind}`
//! being `datasets` or `models`), and `/api/v1/shared/{token}…` for share
//! links. Files stream in and out; a folder or a model version downloads as
//! a zip written as it streams.

use app::error::AppError;
use app::models::{
    join_tags, Asset, AssetBody, AssetKind, AssetRef, FileEntry, ModelVersion, NewLink, Share,
    VersionBody,
};
use app::ports::{ByteRange, ByteStream, Principal, Slot, Viewer};
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, Request, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::TryStreamExt;
use http::{header, HeaderMap, HeaderValue, StatusCode};
use serde::Deserialize;
use utoipa::IntoParams;

use super::json::JsonBody;
use crate::assets::objects::TOO_LARGE_FIELD;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// `datasets` or `models` in a path.
pub fn kind_of(segment: &str) -> Result<AssetKind, ApiError> {
    match segment {
        "datasets" => Ok(AssetKind::Dataset),
        "models" => Ok(AssetKind::Model),
        _ => Err(ApiError(AppError::not_found("API route"))),
    }
}

fn asset(kind: &str, owner: String, name: String) -> Result<AssetRef, ApiError> {
    Ok(AssetRef {
        kind: kind_of(kind)?,
        owner,
        name,
    })
}

/// The slot a request addresses: a dataset, or `?version=` of a model.
fn slot(r: &AssetRef, version: Option<u32>) -> Result<Slot, ApiError> {
    Ok(Slot::of(r.kind, version)?)
}

/// `?version=` of file routes.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VersionParam {
    /// The model version (models only).
    version: Option<u32>,
}

/// `?dir=&version=` of a listing.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DirParams {
    /// The folder (default: the root).
    #[serde(default)]
    dir: String,
    /// The model version (models only).
    version: Option<u32>,
}

/// What part of a file a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    /// All of it.
    All,
    /// `bytes=a-b` or `bytes=a-`.
    From(ByteRange),
    /// `bytes=-n`: the last `n` bytes.
    Last(u64),
}

/// The `Range` header: one range, as download managers resume. Anything
/// else (several ranges, another unit, nonsense) is ignored and the whole
/// file sent, as HTTP allows.
fn range_of(headers: &HeaderMap) -> Wanted {
    let Some(spec) = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("bytes="))
    else {
        return Wanted::All;
    };
    let Some((a, b)) = spec.split_once('-') else {
        return Wanted::All;
    };
    let (a, b) = (a.trim(), b.trim());
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    match (a.is_empty(), b.is_empty()) {
        (true, false) if digits(b) => b.parse().map_or(Wanted::All, Wanted::Last),
        (false, true) if digits(a) => a.parse().map_or(Wanted::All, |start| {
            Wanted::From(ByteRange { start, end: None })
        }),
        (false, false) if digits(a) && digits(b) => match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(start), Ok(end)) if start <= end => Wanted::From(ByteRange {
                start,
                end: Some(end),
            }),
            _ => Wanted::All,
        },
        _ => Wanted::All,
    }
}

/// 416: the range asked for is outside the file's `size` bytes.
fn unsatisfiable(size: u64) -> Response {
    let err = AppError::invalid(
        "range",
        format!("The file has {size} bytes; that range is outside it."),
    );
    let mut response = ApiError(err).into_response();
    *response.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
    if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
        response.headers_mut().insert(header::CONTENT_RANGE, v);
    }
    response
}

/// A file as the request's `Range` asks for it: whole (200), part (206), or
/// 416 when the range is outside it.
async fn answer_file(
    assets: &std::sync::Arc<dyn app::ports::Assets>,
    viewer: &Viewer,
    r: &AssetRef,
    slot: Slot,
    path: &str,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let size_of = || async {
        Ok::<_, ApiError>(
            assets
                .open_file(viewer, r, slot, path, None)
                .await?
                .entry
                .size,
        )
    };
    let range = match range_of(headers) {
        Wanted::All => None,
        Wanted::From(range) => Some(range),
        Wanted::Last(n) => {
            let size = size_of().await?;
            if n == 0 || size == 0 {
                return Ok(unsatisfiable(size));
            }
            Some(ByteRange {
                start: size.saturating_sub(n),
                end: None,
            })
        }
    };
    match assets.open_file(viewer, r, slot, path, range).await {
        Ok(file) => {
            let total = Some(file.entry.size);
            Ok(file_response(file, total, true))
        }
        Err(AppError::Invalid {
            field: Some(field), ..
        }) if field == "range" => Ok(unsatisfiable(size_of().await?)),
        Err(err) => Err(err.into()),
    }
}

/// Refuses what a job's own token may not do: it registers model versions
/// and reads, but deletes, shares and publishes nothing.
fn not_for_jobs(who: &Principal, what: &str) -> Result<(), ApiError> {
    match who.job_scope() {
        Some(job) => Err(ApiError(AppError::forbidden(format!(
            "A job's token (job “{job}”) may register model versions and read datasets, not {what}; \
             use an access key."
        )))),
        None => Ok(()),
    }
}

/// A file's answer: streamed, with its length, type and (for a range) 206.
pub fn file_response(file: app::ports::OpenFile, total: Option<u64>, attachment: bool) -> Response {
    let name = file.entry.name().to_owned();
    let mime = mime_of(&name);
    let mut response = Body::from_stream(file.body).into_response();
    let size = file.entry.size;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    // Users' files: the type is from the name, never guessed from the bytes.
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    match file.range {
        Some((a, b)) => {
            *response.status_mut() = StatusCode::PARTIAL_CONTENT;
            let headers = response.headers_mut();
            if let Ok(v) =
                HeaderValue::from_str(&format!("bytes {a}-{b}/{}", total.unwrap_or(size)))
            {
                headers.insert(header::CONTENT_RANGE, v);
            }
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(b - a + 1));
        }
        None => {
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
        }
    }
    if attachment {
        let ascii: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_graphic() && c != '"' && c != '\\' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let encoded: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
        if let Ok(v) = HeaderValue::from_str(&format!(
            "attachment; filename=\"{ascii}\"; filename*=UTF-8''{}",
            encoded.replace('+', "%20")
        )) {
            response
                .headers_mut()
                .insert(header::CONTENT_DISPOSITION, v);
        }
    }
    response
}

/// The content type a browser needs to show a preview (images, text).
pub fn mime_of(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "txt" | "md" | "log" | "py" | "yaml" | "yml" | "toml" | "cfg" | "ini" => {
            "text/plain; charset=utf-8"
        }
        "csv" | "tsv" => "text/csv; charset=utf-8",
        "json" | "jsonl" => "application/json",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        _ => "application/octet-stream",
    }
}

/// The request body as a stream of chunks (never collected whole).
pub fn body_stream(request: Request) -> ByteStream {
    Box::pin(
        request
            .into_body()
            .into_data_stream()
            .map_err(std::io::Error::other),
    )
}

/// `GET /api/v1/{kind}`: the datasets (or models) the caller can read.
#[utoipa::path(get, path = "/api/v1/{kind}", tag = "files",
    params(("kind" = String, Path, description = "`datasets` or `models`")),
    responses((status = 200, description = "Own, shared with the account, and public", body = Vec<Asset>),
              (status = 401, body = ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(kind): Path<String>,
) -> Result<Json<Vec<Asset>>, ApiError> {
    Ok(Json(
        state.services.assets.list(&who.me, kind_of(&kind)?).await?,
    ))
}

/// `POST /api/v1/{kind}`: creates one in the caller's account.
#[utoipa::path(post, path = "/api/v1/{kind}", tag = "files", request_body = AssetBody,
    params(("kind" = String, Path, description = "`datasets` or `models`")),
    responses((status = 201, body = Asset), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(kind): Path<String>,
    form: Result<JsonBody<AssetBody>, ApiError>,
) -> Result<(StatusCode, Json<Asset>), ApiError> {
    let form = form?.0.into_form()?;
    let made = state
        .services
        .assets
        .create(&who.me, kind_of(&kind)?, form)
        .await?;
    Ok((StatusCode::CREATED, Json(made)))
}

/// `GET /api/v1/{kind}/{owner}/{name}`.
#[utoipa::path(get, path = "/api/v1/{kind}/{owner}/{name}", tag = "files",
    params(("kind" = String, Path), ("owner" = String, Path, description = "The owning account"), ("name" = String, Path)),
    responses((status = 200, body = Asset), (status = 404, body = ErrorBody)))]
pub async fn get_one(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path((kind, owner, name)): Path<(String, String, String)>,
) -> Result<Json<Asset>, ApiError> {
    let r = asset(&kind, owner, name)?;
    Ok(Json(
        state.services.assets.get(&Viewer::User(who.me), &r).await?,
    ))
}

/// `PATCH /api/v1/{kind}/{owner}/{name}`: description and tags (owner).
#[utoipa::path(patch, path = "/api/v1/{kind}/{owner}/{name}", tag = "files", request_body = AssetBody,
    params(("kind" = String, Path), ("owner" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = Asset), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((kind, owner, name)): Path<(String, String, String)>,
    form: Result<JsonBody<AssetBody>, ApiError>,
) -> Result<Json<Asset>, ApiError> {
    not_for_jobs(&who, "changing datasets or models")?;
    let form = form?.0.into_form()?;
    let r = asset(&kind, owner, name)?;
    Ok(Json(state.services.assets.update(&who.me, &r, form).await?))
}

/// `DELETE /api/v1/{kind}/{owner}/{name}`: with its files and shares (owner).
#[utoipa::path(delete, path = "/api/v1/{kind}/{owner}/{name}", tag = "files",
    params(("kind" = String, Path), ("owner" = String, Path), ("name" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((kind, owner, name)): Path<(String, String, String)>,
) -> Result<StatusCode, ApiError> {
    not_for_jobs(&who, "deleting")?;
    let r = asset(&kind, owner, name)?;
    state.services.assets.delete(&who.me, &r).await?;
    Ok(StatusCode::NO_CONTENT)
}

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
    super::archive::zip_response(state.services.assets.clone(), Viewer::User(who.me), r, slot).await
}

/// What sharing takes: an account, or a link (optionally expiring).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ShareRequest {
    /// Share read-only with this account.
    pub account: Option<String>,
    /// Or make a link; it expires after this many days (none: until revoked).
    pub link_expires_in_days: Option<u32>,
    /// Make a link (with or without expiry).
    #[serde(default)]
    pub link: bool,
}

/// `GET /api/v1/{kind}/{owner}/{name}/shares`: who it is shared with (owner).
#[utoipa::path(get, path = "/api/v1/{kind}/{owner}/{name}/shares", tag = "files",
    params(("kind" = String, Path), ("owner" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = Vec<Share>), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn shares(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path((kind, owner, name)): Path<(String, String, String)>,
) -> Result<Json<Vec<Share>>, ApiError> {
    not_for_jobs(&who, "listing shares")?;
    let r = asset(&kind, owner, name)?;
    Ok(Json(state.services.assets.shares(&who.me, &r).await?))
}

/// `POST /api/v1/{kind}/{owner}/{name}/shares`: shares it with an account,
/// or makes a link (its token is in the answer, once).
#[utoipa::path(post, path = "/api/v1/{kind}/{owner}/{name}/shares", tag = "files", request_body = ShareRequest,
    params(("kind" = String, Path), ("owner" = String, Path), ("name" = String, Path)),
    responses((status = 201, body = NewLink), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn share(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((kind, owner, name)): Path<(String, String, String)>,
    body: Result<JsonBody<ShareRequest>, ApiError>,
) -> Result<Response, ApiError> {
    not_for_jobs(&who, "sharing")?;
    let JsonBody(body) = body?;
    let r = asset(&kind, owner, name)?;
    let assets = &state.services.assets;
    if let Some(account) = body.account.filter(|a| !a.trim().is_empty()) {
        let share = assets.share_with(&who.me, &r, &account).await?;
        return Ok((StatusCode::CREATED, Json(share)).into_response());
    }
    if body.link || body.link_expires_in_days.is_some() {
        let link = assets
            .create_link(&who.me, &r, body.link_expires_in_days)
            .await?;
        return Ok((StatusCode::CREATED, Json(link)).into_response());
    }
    Err(ApiError(AppError::invalid(
        "account",
        "Give an account to share with, or ask for a link: {\"link\": true}.",
    )))
}

/// `DELETE /api/v1/{kind}/{owner}/{name}/shares/{id}`: revokes a share.
#[utoipa::path(delete, path = "/api/v1/{kind}/{owner}/{name}/shares/{id}", tag = "files",
    params(("kind" = String, Path), ("owner" = String, Path), ("name" = String, Path), ("id" = i64, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
pub async fn revoke(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((kind, owner, name, id)): Path<(String, String, String, i64)>,
) -> Result<StatusCode, ApiError> {
    not_for_jobs(&who, "revoking shares")?;
    let r = asset(&kind, owner, name)?;
    state.services.assets.revoke(&who.me, &r, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `{"public": true}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct PublicRequest {
    /// Readable by every account.
    pub public: bool,
}

/// `PUT /api/v1/{kind}/{owner}/{name}/public`: publishes it, or stops.
#[utoipa::path(put, path = "/api/v1/{kind}/{owner}/{name}/public", tag = "files", request_body = PublicRequest,
    params(("kind" = String, Path), ("owner" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = Asset), (status = 403, body = ErrorBody)))]
pub async fn set_public(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((kind, owner, name)): Path<(String, String, String)>,
    body: Result<JsonBody<PublicRequest>, ApiError>,
) -> Result<Json<Asset>, ApiError> {
    not_for_jobs(&who, "publishing")?;
    let JsonBody(body) = body?;
    let r = asset(&kind, owner, name)?;
    Ok(Json(
        state
            .services
            .assets
            .set_public(&who.me, &r, body.public)
            .await?,
    ))
}

fn model(owner: String, name: String) -> AssetRef {
    AssetRef {
        kind: AssetKind::Model,
        owner,
        name,
    }
}

/// `GET /api/v1/models/{owner}/{name}/versions`: newest first.
#[utoipa::path(get, path = "/api/v1/models/{owner}/{name}/versions", tag = "files",
    params(("owner" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = Vec<ModelVersion>), (status = 404, body = ErrorBody)))]
pub async fn versions(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path((owner, name)): Path<(String, String)>,
) -> Result<Json<Vec<ModelVersion>>, ApiError> {
    Ok(Json(
        state
            .services
            .assets
            .versions(&Viewer::User(who.me), &model(owner, name))
            .await?,
    ))
}

/// `POST /api/v1/models/{owner}/{name}/versions`: starts a version; upload
/// its files with `PUT …/files/{path}?version=N`, then `…/versions/N/finish`.
/// A job's token may register versions; they record the job.
#[utoipa::path(post, path = "/api/v1/models/{owner}/{name}/versions", tag = "files", request_body = VersionBody,
    params(("owner" = String, Path), ("name" = String, Path)),
    responses((status = 201, body = ModelVersion), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn create_version(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((owner, name)): Path<(String, String)>,
    form: Result<JsonBody<VersionBody>, ApiError>,
) -> Result<(StatusCode, Json<ModelVersion>), ApiError> {
    let mut form = form?.0.into_form()?;
    if let Some(job) = who.job_scope() {
        form.job = Some(job.to_owned());
    }
    let v = state
        .services
        .assets
        .create_version(&who.me, &model(owner, name), form)
        .await?;
    Ok((StatusCode::CREATED, Json(v)))
}

/// `POST /api/v1/models/{owner}/{name}/versions/{version}/finish`: all its
/// files are in; the version is complete and no longer changes.
#[utoipa::path(post, path = "/api/v1/models/{owner}/{name}/versions/{version}/finish", tag = "files",
    params(("owner" = String, Path), ("name" = String, Path), ("version" = u32, Path)),
    responses((status = 200, body = ModelVersion), (status = 400, body = ErrorBody)))]
pub async fn finish_version(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((owner, name, version)): Path<(String, String, u32)>,
) -> Result<Json<ModelVersion>, ApiError> {
    Ok(Json(
        state
            .services
            .assets
            .finish_version(&who.me, &model(owner, name), version)
            .await?,
    ))
}

/// `{"tags": ["production", "best"]}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct TagsRequest {
    /// The version's tags; `production` and `candidate` move from other versions.
    #[schema(schema_with = app::models::tags_schema)]
    pub tags: Vec<String>,
}

/// `PUT /api/v1/models/{owner}/{name}/versions/{version}/tags`.
#[utoipa::path(put, path = "/api/v1/models/{owner}/{name}/versions/{version}/tags", tag = "files",
    request_body = TagsRequest,
    params(("owner" = String, Path), ("name" = String, Path), ("version" = u32, Path)),
    responses((status = 200, body = ModelVersion), (status = 400, body = ErrorBody)))]
pub async fn tag_version(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((owner, name, version)): Path<(String, String, u32)>,
    body: Result<JsonBody<TagsRequest>, ApiError>,
) -> Result<Json<ModelVersion>, ApiError> {
    let JsonBody(body) = body?;
    Ok(Json(
        state
            .services
            .assets
            .tag_version(
                &who.me,
                &model(owner, name),
                version,
                &join_tags(&body.tags)?,
            )
            .await?,
    ))
}

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
    super::archive::zip_response(assets, Viewer::Link(token), r, slot).await
}
