//! How an [`AppError`] is answered outside server functions (REST and event
//! routes): its status, and `{"error": {"code", "message", "field"}}`.

use app::error::AppError;
use axum::extract::rejection::QueryRejection;
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{header, StatusCode};
use serde::Serialize;
use utoipa::ToSchema;

/// An error as a REST response.
#[derive(Debug)]
pub struct ApiError(pub AppError);

impl From<AppError> for ApiError {
    fn from(err: AppError) -> Self {
        Self(err)
    }
}

/// The body of every REST error (the OpenAPI document's `ErrorBody`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// One error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `invalid`, `unauthenticated`, `bad_credentials`, `forbidden`,
    /// `not_found`, `conflict`, `internal` or `unavailable`.
    pub code: String,
    /// A sentence a user can act on.
    pub message: String,
    /// The JSON key or query parameter at fault, when there is one.
    pub field: Option<String>,
}

impl From<&AppError> for ErrorBody {
    fn from(err: &AppError) -> Self {
        let code = serde_json::to_value(err)
            .ok()
            .and_then(|v| v.get("code").and_then(|c| c.as_str()).map(str::to_owned))
            .unwrap_or_else(|| "internal".to_owned());
        Self {
            error: ErrorDetail {
                code,
                message: err.to_string(),
                field: err.field().map(str::to_owned),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let err = self.0;
        let status =
            StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, Json(ErrorBody::from(&err))).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer realm=\"paddlecloud\""),
            );
        }
        response
    }
}

/// A path segment that should be a number and is not (`/members/abc`).
impl From<axum::extract::rejection::PathRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::PathRejection) -> Self {
        Self(AppError::invalid(
            "id",
            format!("The path could not be read: {}", rejection.body_text()),
        ))
    }
}

/// A query string that could not be read: 400.
impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        let text = rejection.body_text();
        let detail = text
            .split_once("query string: ")
            .map_or(text.as_str(), |(_, rest)| rest);
        Self(AppError::Invalid {
            field: field_of(detail),
            message: format!("The query string could not be read: {detail}"),
        })
    }
}

/// serde_path_to_error's `path: message`, or serde's "missing field `x`".
fn field_of(detail: &str) -> Option<String> {
    if let Some((_, rest)) = detail.split_once("missing field `") {
        return rest.split_once('`').map(|(f, _)| f.to_owned());
    }
    let (path, _) = detail.split_once(": ")?;
    let is_path = !path.is_empty()
        && path != "."
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']'));
    is_path.then(|| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_at_fault_is_read_from_serde_messages() {
        assert_eq!(
            field_of("missing field `num_trainers` at line 1 column 9").as_deref(),
            Some("num_trainers")
        );
        assert_eq!(
            field_of("trainer.gpu: invalid type: string \"x\", expected u32").as_deref(),
            Some("trainer.gpu")
        );
        assert_eq!(
            field_of("EOF while parsing a value at line 1 column 0"),
            None
        );
    }
}
