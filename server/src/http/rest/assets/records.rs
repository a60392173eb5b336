//! A dataset or a model itself: list, create, read, describe, delete.

use app::models::{Asset, AssetBody};
use app::ports::Viewer;
use axum::extract::{Path, State};
use axum::Json;
use http::StatusCode;

use super::{asset, kind_of, not_for_jobs};
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::rest::json::JsonBody;
use crate::http::AppState;

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
