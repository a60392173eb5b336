//! A model's or dataset's versions: list, start one (a dataset: save its
//! files as one), finish it, tag it.

use app::models::{join_tags, ModelVersion, VersionBody};
use app::ports::Viewer;
use axum::extract::{Path, State};
use axum::Json;
use http::StatusCode;
use serde::Deserialize;

use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::rest::json::JsonBody;
use crate::http::AppState;

use super::asset;

/// The `{kind}` of these routes in the OpenAPI document.
const KIND: &str = "`datasets` or `models`";

/// `GET /api/v1/{kind}/{owner}/{name}/versions`: newest first.
#[utoipa::path(get, path = "/api/v1/{kind}/{owner}/{name}/versions", tag = "files",
    params(("kind" = String, Path, description = KIND), ("owner" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = Vec<ModelVersion>), (status = 404, body = ErrorBody)))]
pub async fn versions(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path((kind, owner, name)): Path<(String, String, String)>,
) -> Result<Json<Vec<ModelVersion>>, ApiError> {
    Ok(Json(
        state
            .services
            .assets
            .versions(&Viewer::User(who.me), &asset(&kind, owner, name)?)
            .await?,
    ))
}

/// `POST /api/v1/{kind}/{owner}/{name}/versions`: a model's starts a
/// version; upload its files with `PUT …/files/{path}?version=N`, then
/// `…/versions/N/finish`. A dataset's saves its files as they are now as a
/// new version, complete at once (or, with `"empty": true`, starts one to
/// upload into as a model's). A job's token may register versions; they
/// record the job.
#[utoipa::path(post, path = "/api/v1/{kind}/{owner}/{name}/versions", tag = "files", request_body = VersionBody,
    params(("kind" = String, Path, description = KIND), ("owner" = String, Path), ("name" = String, Path)),
    responses((status = 201, body = ModelVersion), (status = 400, description = "A dataset with no files to save", body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn create_version(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((kind, owner, name)): Path<(String, String, String)>,
    form: Result<JsonBody<VersionBody>, ApiError>,
) -> Result<(StatusCode, Json<ModelVersion>), ApiError> {
    let mut form = form?.0.into_form()?;
    if let Some(job) = who.job_scope() {
        form.job = Some(job.to_owned());
    }
    let v = state
        .services
        .assets
        .create_version(&who.me, &asset(&kind, owner, name)?, form)
        .await?;
    Ok((StatusCode::CREATED, Json(v)))
}

/// `POST /api/v1/{kind}/{owner}/{name}/versions/{version}/finish`: all its
/// files are in; the version is complete and no longer changes.
#[utoipa::path(post, path = "/api/v1/{kind}/{owner}/{name}/versions/{version}/finish", tag = "files",
    params(("kind" = String, Path, description = KIND), ("owner" = String, Path), ("name" = String, Path), ("version" = u32, Path)),
    responses((status = 200, body = ModelVersion), (status = 400, body = ErrorBody)))]
pub async fn finish_version(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((kind, owner, name, version)): Path<(String, String, String, u32)>,
) -> Result<Json<ModelVersion>, ApiError> {
    Ok(Json(
        state
            .services
            .assets
            .finish_version(&who.me, &asset(&kind, owner, name)?, version)
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

/// `PUT /api/v1/{kind}/{owner}/{name}/versions/{version}/tags`.
#[utoipa::path(put, path = "/api/v1/{kind}/{owner}/{name}/versions/{version}/tags", tag = "files",
    request_body = TagsRequest,
    params(("kind" = String, Path, description = KIND), ("owner" = String, Path), ("name" = String, Path), ("version" = u32, Path)),
    responses((status = 200, body = ModelVersion), (status = 400, body = ErrorBody)))]
pub async fn tag_version(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((kind, owner, name, version)): Path<(String, String, String, u32)>,
    body: Result<JsonBody<TagsRequest>, ApiError>,
) -> Result<Json<ModelVersion>, ApiError> {
    let JsonBody(body) = body?;
    Ok(Json(
        state
            .services
            .assets
            .tag_version(
                &who.me,
                &asset(&kind, owner, name)?,
                version,
                &join_tags(&body.tags)?,
            )
            .await?,
    ))
}
