//! `/api/v1`: a job's resource use, the account's quota and its CPU/GPU hours.

use app::models::{Account, JobResources, QuotaForm, QuotaUse, UsageReport};
use app::ports::Principal;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{header, HeaderValue};
use serde::Deserialize;
use utoipa::IntoParams;

use super::json::JsonBody;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::Caller;
use crate::http::AppState;

/// The time range of resource charts.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RangeParams {
    /// Start, Unix seconds (default: the job's start).
    from: Option<f64>,
    /// End, Unix seconds (default: its end, or now).
    to: Option<f64>,
}

/// Which account: your own by default; any, for a site admin.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AccountParam {
    /// An account's name (site admins only, unless it is yours).
    pub account: Option<String>,
}

/// The account `which` names, as the caller may see it (or 404).
async fn scoped(
    state: &AppState,
    who: &Principal,
    which: Result<Query<AccountParam>, QueryRejection>,
) -> Result<Account, ApiError> {
    let Query(which) = which?;
    let (account, _) = state
        .services
        .quotas
        .scope(&who.me, which.account.as_deref())
        .await?;
    Ok(account)
}

/// What each pod of the job used over time: CPU, memory, GPU, network, disk.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{name}/resources",
    tag = "usage",
    params(("name" = String, Path, description = "The job's name"), RangeParams),
    responses(
        (status = 200, description = "One chart per metric and role", body = JobResources),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such job in this account", body = ErrorBody),
    )
)]
pub async fn resources(
    State(state): State<AppState>,
    Caller(who): Caller,
    Path(name): Path<String>,
    range: Result<Query<RangeParams>, QueryRejection>,
) -> Result<Json<JobResources>, ApiError> {
    let Query(range) = range?;
    Ok(Json(
        state
            .services
            .resource_charts
            .job_resources(&who.me.account, &name, range.from, range.to)
            .await?,
    ))
}

/// The account's quota and what its pending and running jobs request.
#[utoipa::path(
    get,
    path = "/api/v1/quota",
    tag = "usage",
    params(AccountParam),
    responses(
        (status = 200, description = "Quota and use", body = QuotaUse),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such account (or not yours)", body = ErrorBody),
    )
)]
pub async fn quota(
    State(state): State<AppState>,
    Caller(who): Caller,
    which: Result<Query<AccountParam>, QueryRejection>,
) -> Result<Json<QuotaUse>, ApiError> {
    let account = scoped(&state, &who, which).await?;
    let quotas = &state.services.quotas;
    Ok(Json(quotas.quota_use(&account).await?))
}

/// Sets the account's quota (its owner, or a site admin): quantities as in
/// a job spec, an empty field for no limit.
#[utoipa::path(
    put,
    path = "/api/v1/quota",
    tag = "usage",
    params(AccountParam),
    request_body = QuotaForm,
    responses(
        (status = 200, description = "The new quota and use", body = QuotaUse),
        (status = 400, description = "A bad field, named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "Not the account's owner or a site admin", body = ErrorBody),
        (status = 404, description = "No such account (or not yours)", body = ErrorBody),
    )
)]
pub async fn set_quota(
    State(state): State<AppState>,
    Caller(who): Caller,
    which: Result<Query<AccountParam>, QueryRejection>,
    form: Result<JsonBody<QuotaForm>, ApiError>,
) -> Result<Json<QuotaUse>, ApiError> {
    let Query(which) = which?;
    let JsonBody(form) = form?;
    let quota = form.to_quota()?;
    let name = which.account.unwrap_or_else(|| who.me.account.name.clone());
    Ok(Json(
        state
            .services
            .quotas
            .set_quota(&who.me, &name, quota)
            .await?,
    ))
}

/// CPU- and GPU-hours (requested × how long the jobs ran) in the last day,
/// week and month, per member and per day.
#[utoipa::path(
    get,
    path = "/api/v1/usage",
    tag = "usage",
    params(AccountParam),
    responses(
        (status = 200, description = "The report", body = UsageReport),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such account (or not yours)", body = ErrorBody),
    )
)]
pub async fn usage(
    State(state): State<AppState>,
    Caller(who): Caller,
    which: Result<Query<AccountParam>, QueryRejection>,
) -> Result<Json<UsageReport>, ApiError> {
    let account = scoped(&state, &who, which).await?;
    let quotas = &state.services.quotas;
    Ok(Json(quotas.usage(&account).await?))
}

/// The usage report as CSV (what the quota page's "Export CSV" downloads).
#[utoipa::path(
    get,
    path = "/api/v1/usage.csv",
    tag = "usage",
    params(AccountParam),
    responses(
        (status = 200, description = "scope,who,window,cpu_hours,gpu_hours", content_type = "text/csv"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 404, description = "No such account (or not yours)", body = ErrorBody),
    )
)]
pub async fn usage_csv(
    State(state): State<AppState>,
    Caller(who): Caller,
    which: Result<Query<AccountParam>, QueryRejection>,
) -> Result<Response, ApiError> {
    let account = scoped(&state, &who, which).await?;
    let quotas = &state.services.quotas;
    let csv = quotas.usage(&account).await?.to_csv();
    let mut response = csv.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"{}-usage.csv\"",
        account.name
    )) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(response)
}
