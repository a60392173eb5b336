//! `/api/v1`: the caller's password and address, password resets, and the
//! audit log.

use app::models::{
    AccountQuota, AuditLog, AuditQuery, LinkToken, PasswordChange, ResetRequest, AUDIT_MAX_PAGE,
};
use app::ports::ClientAddress;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use http::{header, HeaderValue, StatusCode};

use super::json::JsonBody;
use super::usage::AccountParam;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::Caller;
use crate::http::AppState;

/// Changes the caller's password: the current one is required; every other
/// session of theirs ends, and their access keys too with `revoke_keys`.
#[utoipa::path(
    post,
    path = "/api/v1/me/password",
    tag = "account",
    request_body = PasswordChange,
    responses(
        (status = 204, description = "Changed"),
        (status = 400, description = "The current password is wrong (`current`) or the new one too short or long (`password`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    )
)]
pub async fn change_password(
    State(state): State<AppState>,
    Caller(who): Caller,
    change: Result<JsonBody<PasswordChange>, ApiError>,
) -> Result<StatusCode, ApiError> {
    let JsonBody(change) = change?;
    state
        .services
        .accounts
        .change_password(&who, change)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Mails a password-reset link if the account has a user with this email.
/// The answer is the same whether or not it does; no credentials needed.
#[utoipa::path(
    post,
    path = "/api/v1/password-resets",
    tag = "account",
    request_body = ResetRequest,
    security(()),
    responses(
        (status = 202, description = "If the user exists, a link is on its way"),
        (status = 400, description = "The body is not a reset request, or `email` is not an address", body = ErrorBody),
        (status = 429, description = "Too many resets asked for from this address", body = ErrorBody),
    )
)]
pub async fn request_reset(
    State(state): State<AppState>,
    client: Option<Extension<ClientAddress>>,
    request: Result<JsonBody<ResetRequest>, ApiError>,
) -> Result<StatusCode, ApiError> {
    let JsonBody(request) = request?;
    // The document says the address is one mail takes; so does this check.
    app::models::validate_mail_address(&request.email)?;
    let client = client.map_or_else(|| "unknown".to_owned(), |Extension(a)| a.0);
    state
        .services
        .accounts
        .request_password_reset(request, &client)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

/// Sets a new password with a reset link's token (once, within 30 minutes,
/// not after a password change); every session of the user ends.
#[utoipa::path(
    post,
    path = "/api/v1/password-resets/complete",
    tag = "account",
    request_body = LinkToken,
    security(()),
    responses(
        (status = 204, description = "The password is set"),
        (status = 400, description = "The token is not valid (`token`) or the password is too short or long (`password`)", body = ErrorBody),
    )
)]
pub async fn complete_reset(
    State(state): State<AppState>,
    link: Result<JsonBody<LinkToken>, ApiError>,
) -> Result<StatusCode, ApiError> {
    let JsonBody(link) = link?;
    let password = link.password.unwrap_or_default();
    state
        .services
        .accounts
        .reset_password(&link.token, &password)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Confirms the address a confirmation link was mailed to.
#[utoipa::path(
    post,
    path = "/api/v1/email-confirmations",
    tag = "account",
    request_body = LinkToken,
    security(()),
    responses(
        (status = 204, description = "Confirmed"),
        (status = 400, description = "The token is not valid", body = ErrorBody),
    )
)]
pub async fn confirm_email(
    State(state): State<AppState>,
    link: Result<JsonBody<LinkToken>, ApiError>,
) -> Result<StatusCode, ApiError> {
    let JsonBody(link) = link?;
    state.services.accounts.confirm_email(&link.token).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Mails the caller a new confirmation link (once a minute, five a day).
#[utoipa::path(
    post,
    path = "/api/v1/me/email-confirmation",
    tag = "account",
    responses(
        (status = 202, description = "A link is on its way"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 409, description = "The address is already confirmed", body = ErrorBody),
        (status = 429, description = "A link went out less than a minute ago", body = ErrorBody),
    )
)]
pub async fn resend_confirmation(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<StatusCode, ApiError> {
    state.services.accounts.resend_confirmation(&who).await?;
    Ok(StatusCode::ACCEPTED)
}

/// A site admin mails a user of any account a password-reset link.
#[utoipa::path(
    post,
    path = "/api/v1/admin/reset-links",
    tag = "account",
    request_body = ResetRequest,
    responses(
        (status = 202, description = "The link is on its way"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "The caller is not a site admin", body = ErrorBody),
        (status = 404, description = "No such user in that account", body = ErrorBody),
    )
)]
pub async fn admin_reset_link(
    State(state): State<AppState>,
    Caller(who): Caller,
    request: Result<JsonBody<ResetRequest>, ApiError>,
) -> Result<StatusCode, ApiError> {
    let JsonBody(request) = request?;
    app::models::validate_mail_address(&request.email)?;
    state
        .services
        .accounts
        .send_reset_link(&who, &request.account, &request.email)
        .await?;
    Ok(StatusCode::ACCEPTED)
}

/// Every account with its members, owners and use against its quota
/// (site admins).
#[utoipa::path(
    get,
    path = "/api/v1/admin/accounts",
    tag = "account",
    responses(
        (status = 200, description = "Accounts by name", body = [AccountQuota]),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "The caller is not a site admin", body = ErrorBody),
    )
)]
pub async fn admin_accounts(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<AccountQuota>>, ApiError> {
    Ok(Json(state.services.quotas.accounts(&who.me).await?))
}

/// The running jobs of every account whose GPUs have stayed under 5%
/// utilisation for the console's `--stall-minutes`, the longest idle
/// first (site admins).
#[utoipa::path(
    get,
    path = "/api/v1/admin/idle-gpus",
    tag = "account",
    responses(
        (status = 200, description = "Jobs holding idle GPUs", body = [app::models::IdleGpuJob]),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "The caller is not a site admin", body = ErrorBody),
    )
)]
pub async fn admin_idle_gpus(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<app::models::IdleGpuJob>>, ApiError> {
    Ok(Json(state.services.watchdog.idle_gpu_jobs(&who.me).await?))
}

/// One page of the audit log of the caller's account (owners), or of
/// `account` (site admins): membership, role, quota, key and password
/// events, newest first, 50 a page unless `limit` says; filtered by actor,
/// action or kind, and time. An answer's `older` and `newer` are the
/// `before` and `after` of the pages beside it.
#[utoipa::path(
    get,
    path = "/api/v1/audit",
    tag = "account",
    params(AccountParam, AuditQuery),
    responses(
        (status = 200, description = "The events", body = AuditLog),
        (status = 400, description = "A bad filter or page, named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the account", body = ErrorBody),
        (status = 404, description = "No such account (or not yours)", body = ErrorBody),
    )
)]
pub async fn audit(
    State(state): State<AppState>,
    Caller(who): Caller,
    which: Result<Query<AccountParam>, QueryRejection>,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Json<AuditLog>, ApiError> {
    let (Query(which), Query(query)) = (which?, query?);
    let filter = query.parse()?;
    let log = state
        .services
        .accounts
        .audit_log(&who, which.account.as_deref(), &filter)
        .await?;
    Ok(Json(log))
}

/// The audit log as CSV (what the log's page's "Download CSV" gets): the
/// events the same filters pick, newest first, up to 1,000 from where
/// `before` or `after` says.
#[utoipa::path(
    get,
    path = "/api/v1/audit.csv",
    tag = "account",
    params(AccountParam, AuditQuery),
    responses(
        (status = 200, description = "time_utc,actor,action,detail", content_type = "text/csv"),
        (status = 400, description = "A bad filter or page, named in `field`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "The caller is not an owner of the account", body = ErrorBody),
        (status = 404, description = "No such account (or not yours)", body = ErrorBody),
    )
)]
pub async fn audit_csv(
    State(state): State<AppState>,
    Caller(who): Caller,
    which: Result<Query<AccountParam>, QueryRejection>,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (Query(which), Query(mut query)) = (which?, query?);
    query.limit = Some(query.limit.unwrap_or(AUDIT_MAX_PAGE));
    let filter = query.parse()?;
    let log = state
        .services
        .accounts
        .audit_log(&who, which.account.as_deref(), &filter)
        .await?;
    let mut response = log.to_csv().into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"{}-audit.csv\"",
        log.account
    )) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(response)
}
