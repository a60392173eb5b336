//! For operators: the console's own metrics.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{header, HeaderMap, HeaderValue};

use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::Caller;
use crate::http::AppState;
use app::error::AppError;

/// What `/metrics` answers with: the OpenMetrics text format, which
/// Prometheus scrapes.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The console's own metrics in the OpenMetrics text format (Prometheus
/// scrapes it): requests by method, matched route and status with latency
/// histograms, jobs, notebooks and serving instances by status, the queue,
/// each background loop (running here, passes, last pass), the database
/// pool. For a scraper with `--metrics-token` (`Authorization: Bearer
/// TOKEN`), or a site admin (session or access key).
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses(
        (status = 200, description = "The metrics", content_type = "application/openmetrics-text"),
        (status = 401, description = "No scrape token, session or access key", body = ErrorBody),
        (status = 403, description = "Not a site admin", body = ErrorBody),
    ))]
pub async fn metrics(
    State(state): State<AppState>,
    caller: Option<Caller>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    let telemetry = &state.telemetry;
    let who = match bearer {
        Some(token) if telemetry.is_scrape_token(token) => None,
        // An access key: its user must be a site admin.
        Some(key) => Some(
            state
                .services
                .access_keys
                .resolve_key(key)
                .await?
                .ok_or(AppError::Unauthenticated)?,
        ),
        None => Some(caller.ok_or(AppError::Unauthenticated)?.0),
    };
    if let Some(who) = who {
        if !who.me.site_admin {
            return Err(AppError::forbidden(
                "Only a site admin, or a scraper with the console's --metrics-token, reads its metrics.",
            )
            .into());
        }
    }
    let text = telemetry.scrape(&*state.services.cluster).await;
    let mut response = text.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(OPENMETRICS));
    Ok(response)
}
