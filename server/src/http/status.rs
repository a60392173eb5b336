//! Gives server-function errors their real HTTP status.
//!
//! `server_fn` answers every error with 500 and the encoded error as the body
//! (plain form posts get a redirect instead, which is left alone). The body is
//! our [`AppError`], which knows its status, so the status is mended here, in
//! one place, rather than in each function.

use app::error::AppError;
use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::StatusCode;

/// Errors are small JSON objects; anything larger is not one of ours.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Middleware: 500 + `serverfnerror` header + an `AppError` body → that error's status.
pub async fn server_fn_status(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR
        || !response.headers().contains_key("serverfnerror")
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match to_bytes(body, MAX_ERROR_BODY).await {
        Ok(bytes) => bytes,
        Err(_) => return Response::from_parts(parts, Body::empty()),
    };
    if let Ok(err) = serde_json::from_slice::<AppError>(&bytes) {
        parts.status =
            StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    }
    Response::from_parts(parts, Body::from(bytes))
}
