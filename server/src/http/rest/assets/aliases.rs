//! A model's aliases: list, set or move one, delete one, their history.

use app::models::{AliasChange, AliasForm, AssetKind, AssetRef, ModelAlias};
use app::ports::Viewer;
use axum::extract::{Path, State};
use axum::Json;
use http::StatusCode;

use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::rest::json::JsonBody;
use crate::http::AppState;

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
    params(("owner" = String, Path), ("name" = String, Path),
        ("alias" = String, Path, description = "1 to 40 of a-z, 0-9, '-', '_', starting with a letter")),
    responses((status = 200, description = "The alias as it is now", body = ModelAlias),
        (status = 403, description = "A viewer, a model shared read-only, or a protected alias and not an owner", body = ErrorBody),
        (status = 404, description = "No such model you can read", body = ErrorBody),
        (status = 409, description = "The alias moved meanwhile", body = ErrorBody)))]
pub async fn set_alias(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((owner, name, alias)): Path<(String, String, String)>,
    body: Result<JsonBody<AliasForm>, ApiError>,
) -> Result<Json<ModelAlias>, ApiError> {
    let JsonBody(form) = body?;
    let model = model(owner, name);
    let set = state
        .services
        .assets
        .set_alias(&who.me, &model, &alias, form)
        .await?;
    tracing::info!(model = %format!("{}/{}", model.owner, model.name), alias = %set.alias, version = set.version, user = %who.me.email, "model alias set");
    Ok(Json(set))
}

/// `DELETE /api/v1/models/{owner}/{name}/aliases/{alias}`.
#[utoipa::path(delete, path = "/api/v1/models/{owner}/{name}/aliases/{alias}", tag = "files",
    params(("owner" = String, Path), ("name" = String, Path), ("alias" = String, Path)),
    responses((status = 204, description = "Deleted (its history kept)"),
        (status = 403, description = "A viewer, or a protected alias and not an owner", body = ErrorBody),
        (status = 404, description = "No such model or alias", body = ErrorBody)))]
pub async fn delete_alias(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path((owner, name, alias)): Path<(String, String, String)>,
) -> Result<StatusCode, ApiError> {
    let model = model(owner, name);
    state
        .services
        .assets
        .delete_alias(&who.me, &model, &alias)
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
