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
/// (`value_base64`), and what it is for. Its OpenAPI schema is written by
/// hand (below) because "exactly one of two fields" is a `oneOf`.
#[derive(Debug, Deserialize)]
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

/// The schema of [`SecretValue`]: either a non-empty `value` (and no
/// `value_base64`) or a padded base64 `value_base64` (and no `value`), and a
/// one-line `description`: exactly what [`SecretForm::validated`] takes
/// (its 64 KiB limit is in bytes, which JSON Schema cannot count, so it is
/// stated in words).
impl utoipa::PartialSchema for SecretValue {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use app::models::{BASE64_PATTERN, MAX_SECRET_BYTES};
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        let string = || ObjectBuilder::new().schema_type(Type::String);
        let null = || ObjectBuilder::new().schema_type(Type::Null);
        let description = || {
            string()
                .max_length(Some(200))
                .pattern(Some(r"^[^\x00-\x1f\x7f-\x9f]*$"))
                .description(Some("What it is for (one line, at most 200 characters)."))
        };
        let limit = format!("at most {} KiB", MAX_SECRET_BYTES / 1024);
        let text = ObjectBuilder::new()
            .property(
                "value",
                string()
                    .min_length(Some(1))
                    .description(Some(format!("The value as text ({limit} as UTF-8)."))),
            )
            .required("value")
            .property("value_base64", null())
            .property("description", description());
        let file = ObjectBuilder::new()
            .property(
                "value_base64",
                string()
                    .pattern(Some(BASE64_PATTERN))
                    .description(Some(format!(
                        "A file's bytes in standard, padded base64 ({limit} decoded)."
                    ))),
            )
            .required("value_base64")
            .property("value", null())
            .property("description", description());
        OneOfBuilder::new()
            .item(text)
            .item(file)
            .description(Some(
                "A secret's new value, as text or as a file's bytes in base64 (exactly one).",
            ))
            .into()
    }
}

impl utoipa::ToSchema for SecretValue {}

/// A secret's name in a path: exactly a name, no spaces around it (a form
/// may be forgiving; a URL says what it means).
fn path_name(raw: &str) -> Result<String, ApiError> {
    let name = app::models::validate_secret_name(raw)?;
    if name != raw {
        return Err(app::error::AppError::invalid(
            "name",
            format!("“{raw}” is not a secret name: no spaces around it."),
        )
        .into());
    }
    Ok(name)
}

/// Sets a secret: a new one, or a new value for one that exists (the old
/// value is gone). Owners only. The answer says what was set, never the value.
#[utoipa::path(put, path = "/api/v1/secrets/{name}", tag = "secrets",
    params(("name" = String, Path, pattern = r"^[a-z]([a-z0-9-]{0,62}[a-z0-9])?$",
        description = "The secret's name, e.g. `s3-key`: lower-case letters, digits and -, starting with a letter")),
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
        name: path_name(&name)?,
        value: body.value,
        value_base64: body.value_base64,
        description: body.description,
    };
    Ok(Json(state.services.secrets.set_secret(&who, form).await?))
}

/// Deletes a secret. Owners only. Running workloads keep what they were
/// given; a new one that names it is refused.
#[utoipa::path(delete, path = "/api/v1/secrets/{name}", tag = "secrets",
    params(("name" = String, Path, pattern = r"^[a-z]([a-z0-9-]{0,62}[a-z0-9])?$",
        description = "The secret's name")),
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
    state
        .services
        .secrets
        .delete_secret(&who, &path_name(&name)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
