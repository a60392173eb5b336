//! Members and invitations of the caller's account, and the accounts the
//! caller belongs to (the header's switcher).

use leptos::prelude::*;

use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::models::{parse_role, InviteForm};
use crate::models::{InvitationView, MemberList, Membership, QuotaForm};

#[cfg(feature = "ssr")]
use super::accounts::user_agent;
#[cfg(feature = "ssr")]
use super::context::{principal, redirect_back, services, set_session_cookie};

/// The caller's account's members (and, for owners, open invitations).
#[server(prefix = "/api", endpoint = "members")]
pub async fn members() -> Result<MemberList, AppError> {
    services()?.members.members(&principal()?).await
}

/// An owner invites `email` with `role`; the invitation goes by mail.
#[server(prefix = "/api", endpoint = "invite_member")]
pub async fn invite_member(email: String, role: String) -> Result<(), AppError> {
    let invited = services()?
        .members
        .invite(&principal()?, InviteForm { email, role })
        .await?;
    redirect_back(&[("invited", Some(invited.email))], "/account")
}

/// An owner withdraws an open invitation.
#[server(prefix = "/api", endpoint = "cancel_invitation")]
pub async fn cancel_invitation(id: i64) -> Result<(), AppError> {
    services()?
        .members
        .cancel_invitation(&principal()?, id)
        .await?;
    redirect_back(&[("invited", None)], "/account")
}

/// An owner changes a member's role.
#[server(prefix = "/api", endpoint = "change_role")]
pub async fn change_role(user_id: i64, role: String) -> Result<(), AppError> {
    let role = parse_role(&role)?;
    services()?
        .members
        .change_role(&principal()?, user_id, role)
        .await?;
    redirect_back(&[], "/account")
}

/// An owner sets what a member may hold at once (empty fields: no cap).
#[server(prefix = "/api", endpoint = "set_member_caps")]
pub async fn set_member_caps(user_id: i64, caps: QuotaForm) -> Result<(), AppError> {
    let caps = caps.to_quota()?;
    services()?
        .members
        .set_caps(&principal()?, user_id, caps)
        .await?;
    redirect_back(&[], "/account")
}

/// An owner lets a member submit high-priority jobs (`high` = "on"), or
/// stops them (no `high`: an unticked box sends nothing).
#[server(prefix = "/api", endpoint = "set_member_priority")]
pub async fn set_member_priority(user_id: i64, high: Option<String>) -> Result<(), AppError> {
    let allowed = high.as_deref().is_some_and(|v| v == "on" || v == "true");
    services()?
        .members
        .allow_high_priority(&principal()?, user_id, allowed)
        .await?;
    redirect_back(&[], "/account")
}

/// An owner removes a member; a member removes themself to leave.
#[server(prefix = "/api", endpoint = "remove_member")]
pub async fn remove_member(user_id: i64) -> Result<(), AppError> {
    let who = principal()?;
    services()?.members.remove_member(&who, user_id).await?;
    if user_id == who.me.user_id {
        // Their session there ended with the membership.
        set_session_cookie("", 0)?;
        leptos_axum::redirect("/login");
        return Ok(());
    }
    redirect_back(&[], "/account")
}

/// The accounts the caller belongs to, with their role in each.
#[server(prefix = "/api", endpoint = "my_accounts")]
pub async fn my_accounts() -> Result<Vec<Membership>, AppError> {
    services()?.members.memberships(&principal()?).await
}

/// Moves this browser's session to another account of the caller's.
#[server(prefix = "/api", endpoint = "switch_account")]
pub async fn switch_account(account: String) -> Result<(), AppError> {
    services()?
        .members
        .switch_account(&principal()?, &account)
        .await?;
    leptos_axum::redirect("/jobs");
    Ok(())
}

/// What an invitation's link offers.
#[server(prefix = "/api", endpoint = "invitation")]
pub async fn invitation(token: String) -> Result<InvitationView, AppError> {
    let who = principal().ok();
    services()?.members.invitation(&token, who.as_ref()).await
}

/// Accepts an invitation and signs the invitee in to the account.
#[server(prefix = "/api", endpoint = "accept_invitation")]
pub async fn accept_invitation(token: String, password: Option<String>) -> Result<(), AppError> {
    let who = principal().ok();
    let services = services()?;
    let me = services
        .members
        .accept_invitation(&token, password, who.as_ref())
        .await?;
    // The new account becomes the one this browser works in.
    let session = services
        .accounts
        .create_session(&me, &user_agent()?)
        .await?;
    set_session_cookie(&session.token, session.max_age_secs)?;
    leptos_axum::redirect("/jobs");
    Ok(())
}
