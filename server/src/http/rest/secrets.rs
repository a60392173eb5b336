//! `/api/v1/secrets`: the account's secrets. Owners set and delete them;
//! everyone in the account lists them. No route returns a value.

use app::models::{SecretForm, SecretInfo};
use axum::extract::{Path, State};
use axum::Json;
use http::StatusCode;
use serde::Deserialize;

use super::json::JsonBody;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// The account's secrets by name: what each is for, its size, when and by
/// whom it was set, when a workload last used it. Never a value.
#[utoipa::path(get, path = "/api/v1/secrets", tag = "secrets",
    responses(
        (status = 200, description = "The secrets", body = Vec<SecretInfo>),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<SecretInfo>>, ApiError> {
    Ok(Json(state.services.secrets.secrets(&who).await?))
}

/// A secret's new value: text (`value`) or a file's bytes
/// (`value_base64`), and what it is for.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct SecretValue {
    /// The value as text.
    #[serde(default)]
    pub value: Option<String>,
    /// The value as base64, for a file that is not text.
    #[serde(default)]
    pub value_base64: Option<String>,
    /// What it is for (one line, at most 200 characters).
    #[serde(default)]
    pub description: String,
}

/// Sets a secret: a new one, or a new value for one that exists (the old
/// value is gone). Owners only. The answer says what was set, never the value.
#[utoipa::path(put, path = "/api/v1/secrets/{name}", tag = "secrets",
    params(("name" = String, Path, description = "The secret's name, e.g. `s3-key`")),
    request_body = SecretValue,
    responses(
        (status = 200, description = "Set", body = SecretInfo),
        (status = 400, description = "A bad field (`name`, `value`, `value_base64`, `description`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "Not an owner of the account", body = ErrorBody),
    ))]
pub async fn set(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
    body: Result<JsonBody<SecretValue>, ApiError>,
) -> Result<Json<SecretInfo>, ApiError> {
    let JsonBody(body) = body?;
    let form = SecretForm {
        name,
        value: body.value,
        value_base64: body.value_base64,
        description: body.description,
    };
    Ok(Json(state.services.secrets.set_secret(&who, form).await?))
}

/// Deletes a secret. Owners only. Running workloads keep what they were
/// given; a new one that names it is refused.
#[utoipa::path(delete, path = "/api/v1/secrets/{name}", tag = "secrets",
    params(("name" = String, Path, description = "The secret's name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "Not an owner of the account", body = ErrorBody),
        (status = 404, description = "No such secret in the account", body = ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.services.secrets.delete_secret(&who, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
