//! `/api/v1`: the caller's accounts, and the members and invitations of
//! the account they act in. (Invitations are accepted in the browser: the
//! link signs the invitee in.)

use app::models::{
    InviteForm, MemberList, Membership, PendingInvitation, PriorityAllowance, QuotaForm, RoleChange,
};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::Json;
use http::StatusCode;

use super::json::JsonBody;
use crate::http::api_error::{ApiError, ErrorBody};
use crate::http::caller::Caller;
use crate::http::AppState;

/// The accounts the caller belongs to and their role in each. A key acts in
/// the account it was made in; `/api/v1/me` says which.
#[utoipa::path(
    get,
    path = "/api/v1/me/accounts",
    tag = "account",
    responses(
        (status = 200, description = "The caller's accounts, by name", body = [Membership]),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    )
)]
pub async fn my_accounts(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<Vec<Membership>>, ApiError> {
    Ok(Json(state.services.members.memberships(&who).await?))
}

/// The account's members; its owners also see open invitations.
#[utoipa::path(
    get,
    path = "/api/v1/members",
    tag = "account",
    responses(
        (status = 200, description = "Members, oldest first", body = MemberList),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Caller(who): Caller,
) -> Result<Json<MemberList>, ApiError> {
    Ok(Json(state.services.members.members(&who).await?))
}

/// Mails an invitation to join the account with a role (owners).
#[utoipa::path(
    post,
    path = "/api/v1/invitations",
    tag = "account",
    request_body = InviteForm,
    responses(
        (status = 201, description = "Mailed", body = PendingInvitation),
        (status = 400, description = "A bad address (`email`) or role (`role`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "The caller is not an owner", body = ErrorBody),
        (status = 409, description = "Already a member", body = ErrorBody),
        (status = 429, description = "Too many invitations this hour", body = ErrorBody),
        (status = 503, description = "The mail server is away", body = ErrorBody),
    )
)]
pub async fn invite(
    State(state): State<AppState>,
    Caller(who): Caller,
    form: Result<JsonBody<InviteForm>, ApiError>,
) -> Result<(StatusCode, Json<PendingInvitation>), ApiError> {
    let JsonBody(form) = form?;
    let invited = state.services.members.invite(&who, form).await?;
    Ok((StatusCode::CREATED, Json(invited)))
}

/// Withdraws an invitation not yet accepted (owners).
#[utoipa::path(
    delete,
    path = "/api/v1/invitations/{id}",
    tag = "account",
    params(("id" = i64, Path, description = "The invitation's id")),
    responses(
        (status = 204, description = "Withdrawn"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "The caller is not an owner", body = ErrorBody),
        (status = 404, description = "No such open invitation in the account", body = ErrorBody),
    )
)]
pub async fn withdraw(
    State(state): State<AppState>,
    Caller(who): Caller,
    id: Result<Path<i64>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    let Path(id) = id?;
    state.services.members.cancel_invitation(&who, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Changes a member's role (owners); the last owner stays an owner.
#[utoipa::path(
    put,
    path = "/api/v1/members/{user_id}/role",
    tag = "account",
    params(("user_id" = i64, Path, description = "The member's user id")),
    request_body = RoleChange,
    responses(
        (status = 204, description = "Changed"),
        (status = 400, description = "Not a role (`role`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "The caller is not an owner", body = ErrorBody),
        (status = 404, description = "No such member", body = ErrorBody),
        (status = 409, description = "The account's last owner", body = ErrorBody),
    )
)]
pub async fn change_role(
    State(state): State<AppState>,
    Caller(who): Caller,
    user_id: Result<Path<i64>, PathRejection>,
    change: Result<JsonBody<RoleChange>, ApiError>,
) -> Result<StatusCode, ApiError> {
    let Path(user_id) = user_id?;
    let JsonBody(change) = change?;
    let role = app::models::parse_role(&change.role)?;
    state
        .services
        .members
        .change_role(&who, user_id, role)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sets what a member may hold at once inside the account's quota
/// (owners); an empty field is no cap.
#[utoipa::path(
    put,
    path = "/api/v1/members/{user_id}/caps",
    tag = "account",
    params(("user_id" = i64, Path, description = "The member's user id")),
    request_body = QuotaForm,
    responses(
        (status = 204, description = "Set"),
        (status = 400, description = "A bad quantity (`cpu`, `memory`, `gpu`, `max_jobs`)", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "The caller is not an owner", body = ErrorBody),
        (status = 404, description = "No such member", body = ErrorBody),
    )
)]
pub async fn set_caps(
    State(state): State<AppState>,
    Caller(who): Caller,
    user_id: Result<Path<i64>, PathRejection>,
    form: Result<JsonBody<QuotaForm>, ApiError>,
) -> Result<StatusCode, ApiError> {
    let Path(user_id) = user_id?;
    let JsonBody(form) = form?;
    let caps = form.to_quota()?;
    state.services.members.set_caps(&who, user_id, caps).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Lets a member submit high-priority jobs, or stops them (owners; owners
/// themselves always may).
#[utoipa::path(
    put,
    path = "/api/v1/members/{user_id}/priority",
    tag = "account",
    params(("user_id" = i64, Path, description = "The member's user id")),
    request_body = PriorityAllowance,
    responses(
        (status = 204, description = "Set"),
        (status = 400, description = "A body without `high`", body = ErrorBody),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "The caller is not an owner", body = ErrorBody),
        (status = 404, description = "No such member", body = ErrorBody),
    )
)]
pub async fn set_priority(
    State(state): State<AppState>,
    Caller(who): Caller,
    user_id: Result<Path<i64>, PathRejection>,
    body: Result<JsonBody<PriorityAllowance>, ApiError>,
) -> Result<StatusCode, ApiError> {
    let Path(user_id) = user_id?;
    let JsonBody(body) = body?;
    state
        .services
        .members
        .allow_high_priority(&who, user_id, body.high)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a member (owners), or the caller leaves (their own id); the
/// last owner stays. Their sessions and keys in the account end.
#[utoipa::path(
    delete,
    path = "/api/v1/members/{user_id}",
    tag = "account",
    params(("user_id" = i64, Path, description = "The member's user id")),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "No or a wrong access key", body = ErrorBody),
        (status = 403, description = "The caller is not an owner", body = ErrorBody),
        (status = 404, description = "No such member", body = ErrorBody),
        (status = 409, description = "The account's last owner", body = ErrorBody),
    )
)]
pub async fn remove(
    State(state): State<AppState>,
    Caller(who): Caller,
    user_id: Result<Path<i64>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    let Path(user_id) = user_id?;
    state.services.members.remove_member(&who, user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
