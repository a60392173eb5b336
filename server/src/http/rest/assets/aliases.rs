//! A model's aliases: list, set or move one, delete one, their history.

use app::models::{AliasChange, AliasForm, AssetKind, AssetRef, ModelAlias};
use app::ports::Viewer;
use axum::extract::{Path, State};
use axum::Json;
use http::StatusCode;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::rest::json::JsonBody;
use crate::http::AppState;

/// An alias's path: the model and the alias.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct AliasPath {
    /// The model's owner.
    owner: String,
    /// The model.
    name: String,
    /// 1 to 40 of a-z, 0-9, '-' and '_', starting with a letter.
    #[param(pattern = r"^[a-z][a-z0-9_-]{0,39}$")]
    alias: String,
}

fn model(owner: String, name: String) -> AssetRef {
    AssetRef {
        kind: AssetKind::Model,
        owner,
        name,
    }
}

/// `GET /api/v1/models/{owner}/{name}/aliases`: by name.
#[utoipa::path(get, path = "/api/v1/models/{owner}/{name}/aliases", tag = "files",
    params(("owner" = String, Path), ("name" = String, Path)),
    responses((status = 200, description = "The model's aliases, by name", body = Vec<ModelAlias>),
        (status = 404, description = "No such model you can read", body = ErrorBody)))]
pub async fn aliases(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path((owner, name)): Path<(String, String)>,
) -> Result<Json<Vec<ModelAlias>>, ApiError> {
    let viewer = Viewer::User(who.me);
    let model = model(owner, name);
    Ok(Json(state.services.assets.aliases(&viewer, &model).await?))
}

/// `PUT /api/v1/models/{owner}/{name}/aliases/{alias}`: points the alias at
/// a ready version, creating it; `protected` (owners only) keeps others
/// from moving it.
#[utoipa::path(put, path = "/api/v1/models/{owner}/{name}/aliases/{alias}", tag = "files",
    request_body = AliasForm,
    params(AliasPath),
    responses((status = 200, description = "The alias as it is now", body = ModelAlias),
        (status = 403, description = "A viewer, a model shared read-only, or a protected alias and not an owner", body = ErrorBody),
        (status = 404, description = "No such model you can read", body = ErrorBody),
        (status = 409, description = "The alias moved meanwhile", body = ErrorBody)))]
pub async fn set_alias(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(path): Path<AliasPath>,
    body: Result<JsonBody<AliasForm>, ApiError>,
) -> Result<Json<ModelAlias>, ApiError> {
    let JsonBody(form) = body?;
    let model = model(path.owner, path.name);
    let set = state
        .services
        .assets
        .set_alias(&who.me, &model, &path.alias, form)
        .await?;
    tracing::info!(model = %format!("{}/{}", model.owner, model.name), alias = %set.alias, version = set.version, user = %who.me.email, "model alias set");
    Ok(Json(set))
}

/// `DELETE /api/v1/models/{owner}/{name}/aliases/{alias}`.
#[utoipa::path(delete, path = "/api/v1/models/{owner}/{name}/aliases/{alias}", tag = "files",
    params(AliasPath),
    responses((status = 204, description = "Deleted (its history kept)"),
        (status = 403, description = "A viewer, or a protected alias and not an owner", body = ErrorBody),
        (status = 404, description = "No such model or alias", body = ErrorBody)))]
pub async fn delete_alias(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(path): Path<AliasPath>,
) -> Result<StatusCode, ApiError> {
    let model = model(path.owner, path.name);
    state
        .services
        .assets
        .delete_alias(&who.me, &model, &path.alias)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/v1/models/{owner}/{name}/alias-history`: every set, move and
/// delete, newest first (the newest 200).
#[utoipa::path(get, path = "/api/v1/models/{owner}/{name}/alias-history", tag = "files",
    params(("owner" = String, Path), ("name" = String, Path)),
    responses((status = 200, description = "Changes, newest first", body = Vec<AliasChange>),
        (status = 404, description = "No such model you can read", body = ErrorBody)))]
pub async fn alias_history(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path((owner, name)): Path<(String, String)>,
) -> Result<Json<Vec<AliasChange>>, ApiError> {
    let viewer = Viewer::User(who.me);
    let model = model(owner, name);
    Ok(Json(
        state.services.assets.alias_history(&viewer, &model).await?,
    ))
}
