//! `/api/v1/alert-rules` and `/api/v1/alerts`: an account's metric alert
//! rules on PaddleBoard tags, and the alerts they raised.

use app::models::{Alert, AlertRule, AlertRuleSpec};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{header, HeaderValue, StatusCode};
use serde::Deserialize;

use super::json::JsonBody;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::{Caller, Writer};
use crate::http::AppState;

/// The account's alert rules by name, each with its count of open alerts.
#[utoipa::path(get, path = "/api/v1/alert-rules", tag = "alerts",
    responses(
        (status = 200, description = "The rules", body = Vec<AlertRule>),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<AlertRule>>, ApiError> {
    Ok(Json(state.services.alerts.rules(&who.me.account).await?))
}

/// Saves a rule: a tag of every running job (or of `job`) that is NaN or
/// infinite, above or below a threshold, or silent for some minutes.
#[utoipa::path(post, path = "/api/v1/alert-rules", tag = "alerts",
    request_body = AlertRuleSpec,
    responses(
        (status = 201, description = "Saved; `Location` is its alerts", body = AlertRule),
        (status = 400, description = "A bad field (`name`, `tag`, `job`, `condition.threshold`, `condition.minutes`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    Writer(who): Writer,
    spec: Result<JsonBody<AlertRuleSpec>, ApiError>,
) -> Result<Response, ApiError> {
    let JsonBody(spec) = spec?;
    let made = state.services.alerts.create_rule(&who.me, spec).await?;
    let mut response = (StatusCode::CREATED, Json(&made)).into_response();
    if let Ok(location) = HeaderValue::from_str("/api/v1/alerts") {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// Deletes a rule and its alerts.
#[utoipa::path(delete, path = "/api/v1/alert-rules/{name}", tag = "alerts",
    params(("name" = String, Path, description = "The rule's name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "A viewer", body = ErrorBody),
        (status = 404, description = "No such rule in the account", body = ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    Writer(who): Writer,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.services.alerts.delete_rule(&who.me, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Which alerts to list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AlertQuery {
    /// Only this job's.
    pub job: Option<String>,
}

/// The account's newest alerts (100), open first: the rule, the job, the
/// step and value that fired it, when it was raised and resolved.
#[utoipa::path(get, path = "/api/v1/alerts", tag = "alerts",
    params(AlertQuery),
    responses(
        (status = 200, description = "The alerts", body = Vec<Alert>),
        (status = 400, description = "A bad query", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    ))]
pub async fn alerts(
    State(state): State<AppState>,
    Caller(who): Caller,
    query: Result<Query<AlertQuery>, QueryRejection>,
) -> Result<Json<Vec<Alert>>, ApiError> {
    let Query(query) = query?;
    let job = query.job.as_deref().filter(|j| !j.is_empty());
    Ok(Json(
        state.services.alerts.alerts(&who.me.account, job).await?,
    ))
}
