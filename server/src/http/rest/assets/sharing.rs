//! Who else reads a dataset or a model: shares with accounts, links, and
//! publishing to every account (the owner's; never a job's token).

use app::error::AppError;
use app::models::{Asset, NewLink, Share};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::StatusCode;
use serde::Deserialize;

use super::{asset, not_for_jobs};
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::rest::json::JsonBody;
use crate::http::AppState;

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
