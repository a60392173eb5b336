//! `/api/v1/notifications`: the caller's subscriptions (a job, pipeline
//! run, experiment or serving instance, or the whole account; by email or
//! webhook) and the log of what was sent through them. Each user sees and
//! changes only their own; viewers may subscribe too.

use app::models::{Delivery, DeliveryQuery, Subscription, SubscriptionSpec};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{header, HeaderValue, StatusCode};

use super::json::JsonBody;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::Caller;
use crate::http::AppState;

/// The caller's subscriptions in the account, newest first (a webhook's
/// with its signing secret).
#[utoipa::path(get, path = "/api/v1/notifications/subscriptions", tag = "notifications",
    responses(
        (status = 200, description = "The subscriptions", body = Vec<Subscription>),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<Subscription>>, ApiError> {
    Ok(Json(
        state.services.notifications.subscriptions(&who.me).await?,
    ))
}

/// Subscribes the caller to a job, pipeline run, experiment or serving
/// instance of the account (it must exist), or to everything of the
/// account, for chosen events, by email or webhook. A webhook's answer
/// carries its signing secret (`whsec_…`): each POST is signed as the
/// Standard Webhooks specification says.
#[utoipa::path(post, path = "/api/v1/notifications/subscriptions", tag = "notifications",
    request_body = SubscriptionSpec,
    responses(
        (status = 201, description = "Subscribed; `Location` is the subscription's deliveries", body = Subscription),
        (status = 400, description = "A bad field (`subject.name`, `events`, `channel.url`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    Caller(who): Caller,
    spec: Result<JsonBody<SubscriptionSpec>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(spec) = spec?;
    let made = app::use_cases::notifications::subscribe(&state.services, &who, spec).await?;
    let mut response = (StatusCode::CREATED, Json(&made)).into_response();
    let location = format!("/api/v1/notifications/deliveries?subscription={}", made.id);
    if let Ok(location) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// Ends one of the caller's subscriptions; its deliveries go with it.
#[utoipa::path(delete, path = "/api/v1/notifications/subscriptions/{id}", tag = "notifications",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses(
        (status = 204, description = "Ended"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such subscription of the caller's", body = ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    state
        .services
        .notifications
        .unsubscribe(&who.me, id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sends a test notice through one of the caller's subscriptions now
/// (event `test`); the answer is its delivery, pending: read the log for
/// how it went.
#[utoipa::path(post, path = "/api/v1/notifications/subscriptions/{id}/test", tag = "notifications",
    params(("id" = i64, Path, description = "The subscription's id")),
    responses(
        (status = 202, description = "Queued", body = Delivery),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such subscription of the caller's", body = ErrorBody),
    ))]
pub async fn test(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(id): Path<i64>,
) -> Result<(StatusCode, Json<Delivery>), ApiError> {
    let queued = state.services.notifications.send_test(&who.me, id).await?;
    Ok((StatusCode::ACCEPTED, Json(queued)))
}

/// The log of what was sent through the caller's subscriptions, newest
/// first, 50 a page: each delivery's notice, status, tries, the last
/// error and the receiver's HTTP status. `before` (a delivery's id) pages
/// back.
#[utoipa::path(get, path = "/api/v1/notifications/deliveries", tag = "notifications",
    params(DeliveryQuery),
    responses(
        (status = 200, description = "The deliveries", body = Vec<Delivery>),
        (status = 400, description = "A bad filter, named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn deliveries(
    State(state): State<AppState>,
    Caller(who): Caller,
    query: Result<Query<DeliveryQuery>, QueryRejection>,
) -> Result<Json<Vec<Delivery>>, ApiError> {
    let Query(query) = query?;
    Ok(Json(
        state
            .services
            .notifications
            .deliveries(&who.me, &query)
            .await?,
    ))
}
