//! How an [`AppError`] is answered outside server functions (REST and event
//! routes): its status, and `{"error": {"code", "message", "field"}}`.

use app::error::AppError;
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::StatusCode;

/// An error as a REST response.
#[derive(Debug)]
pub struct ApiError(pub AppError);

impl From<AppError> for ApiError {
    fn from(err: AppError) -> Self {
        Self(err)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let err = self.0;
        let status =
            StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let code = serde_json::to_value(&err)
            .ok()
            .and_then(|v| v.get("code").and_then(|c| c.as_str()).map(str::to_owned))
            .unwrap_or_else(|| "internal".to_owned());
        let body = serde_json::json!({
            "error": { "code": code, "message": err.to_string(), "field": err.field() }
        });
        (status, Json(body)).into_response()
    }
}
