//! Sign up, sign in, sign out, and the account's members and sessions.

use leptos::prelude::*;

use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::models::{safe_next, PasswordChange, ResetRequest, SignInForm, SignUpForm};
use crate::models::{AuditLog, AuditQuery, Me, SessionInfo};

#[cfg(feature = "ssr")]
use super::context::{
    client_address, principal, redirect_back, request_parts, services, session_token,
    set_session_cookie,
};

/// The client's User-Agent, as its sessions list shows it.
#[cfg(feature = "ssr")]
pub(crate) fn user_agent() -> Result<String, AppError> {
    Ok(user_agent_of(&request_parts()?))
}

/// The User-Agent of the request `parts`, as a session records it (at most
/// 300 characters).
#[cfg(feature = "ssr")]
pub fn user_agent_of(parts: &http::request::Parts) -> String {
    parts
        .headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown client")
        .chars()
        .take(300)
        .collect()
}

/// How people may sign in here: passwords, single sign-on.
#[server(prefix = "/api", endpoint = "sign_in_options")]
pub async fn sign_in_options() -> Result<crate::models::sign_in::SignInOptions, AppError> {
    Ok(services()?.sign_in)
}

/// Creates an account owned by the caller and signs them in.
#[server(prefix = "/api", endpoint = "sign_up")]
pub async fn sign_up(account: String, email: String, password: String) -> Result<(), AppError> {
    services()?.sign_in.require_password()?;
    let accounts = services()?.accounts;
    let me = accounts
        .create_account(SignUpForm {
            account,
            email,
            password,
        })
        .await?;
    // Where confirmation is required, the link must be followed first: the
    // sign-in page says a mail is on its way.
    if accounts.confirmation_required() && !me.email_confirmed {
        leptos_axum::redirect("/login?confirm=sent");
        return Ok(());
    }
    let session = accounts.create_session(&me, &user_agent()?).await?;
    set_session_cookie(&session.token, session.max_age_secs)?;
    leptos_axum::redirect("/jobs");
    Ok(())
}

/// Signs in to an account and returns to `next` (a path on this site).
#[server(prefix = "/api", endpoint = "sign_in")]
pub async fn sign_in(
    account: String,
    email: String,
    password: String,
    next: Option<String>,
) -> Result<(), AppError> {
    services()?.sign_in.require_password()?;
    let accounts = services()?.accounts;
    let me = accounts
        .authenticate(SignInForm {
            account,
            email,
            password,
        })
        .await?;
    let session = accounts.create_session(&me, &user_agent()?).await?;
    set_session_cookie(&session.token, session.max_age_secs)?;
    leptos_axum::redirect(safe_next(next.as_deref()));
    Ok(())
}

/// Signs in with a username and password of the LDAP directory, as a
/// member of the accounts its groups map to, and returns to `next`.
#[server(prefix = "/api", endpoint = "sign_in_directory")]
pub async fn sign_in_directory(
    username: String,
    password: String,
    next: Option<String>,
) -> Result<(), AppError> {
    let services = services()?;
    let Some(directory) = services.directory.clone() else {
        return Err(AppError::not_found("The directory sign-in"));
    };
    let who = directory.authenticate(&username, &password).await?;
    let memberships = directory.mapping().memberships(&who)?;
    let me = services
        .accounts
        .sign_in_external(&who, &memberships)
        .await?;
    let session = services
        .accounts
        .create_session(&me, &user_agent()?)
        .await?;
    set_session_cookie(&session.token, session.max_age_secs)?;
    leptos_axum::redirect(safe_next(next.as_deref()));
    Ok(())
}

/// Ends this browser's session.
#[server(prefix = "/api", endpoint = "sign_out")]
pub async fn sign_out() -> Result<(), AppError> {
    if let Some(token) = session_token(&request_parts()?) {
        services()?.accounts.end_session(&token).await?;
    }
    set_session_cookie("", 0)?;
    leptos_axum::redirect("/login");
    Ok(())
}

/// The signed-in user and their account.
#[server(prefix = "/api", endpoint = "current_user")]
pub async fn current_user() -> Result<Me, AppError> {
    Ok(principal()?.me)
}

/// A site admin mails a password-reset link to a user of any account.
#[server(prefix = "/api", endpoint = "admin_reset_link")]
pub async fn admin_reset_link(account: String, email: String) -> Result<(), AppError> {
    services()?
        .accounts
        .send_reset_link(&principal()?, &account, &email)
        .await?;
    redirect_back(&[("reset_sent", Some(email))], "/admin")
}

/// The caller's sessions (browsers and clients signed in as them).
#[server(prefix = "/api", endpoint = "sessions")]
pub async fn sessions() -> Result<Vec<SessionInfo>, AppError> {
    services()?.accounts.sessions(&principal()?).await
}

/// Revokes one of the caller's sessions; revoking the current one signs out.
#[server(prefix = "/api", endpoint = "revoke_session")]
pub async fn revoke_session(id: i64) -> Result<(), AppError> {
    let who = principal()?;
    services()?.accounts.revoke_session(&who, id).await?;
    if who.is_session(id) {
        set_session_cookie("", 0)?;
        leptos_axum::redirect("/login");
    }
    Ok(())
}

/// Changes the caller's password; every other session ends, and their
/// access keys too when `revoke_keys` is ticked.
#[server(prefix = "/api", endpoint = "change_password")]
pub async fn change_password(
    current: String,
    password: String,
    revoke_keys: Option<String>,
) -> Result<(), AppError> {
    services()?
        .accounts
        .change_password(
            &principal()?,
            PasswordChange {
                current,
                password,
                revoke_keys: revoke_keys.is_some(),
            },
        )
        .await?;
    leptos_axum::redirect("/account?password=changed");
    Ok(())
}

/// "Forgot password?": mails a reset link if the account has that user;
/// the answer is the same either way.
#[server(prefix = "/api", endpoint = "request_password_reset")]
pub async fn request_password_reset(account: String, email: String) -> Result<(), AppError> {
    let client = client_address(&request_parts()?);
    services()?
        .accounts
        .request_password_reset(ResetRequest { account, email }, &client)
        .await?;
    leptos_axum::redirect("/forgot?sent=1");
    Ok(())
}

/// Sets a new password with a reset link's token, then sends the user to
/// sign in with it (every session of theirs has ended).
#[server(prefix = "/api", endpoint = "reset_password")]
pub async fn reset_password(token: String, password: String) -> Result<(), AppError> {
    services()?
        .accounts
        .reset_password(&token, &password)
        .await?;
    set_session_cookie("", 0)?;
    leptos_axum::redirect("/login?reset=done");
    Ok(())
}

/// Confirms the address a confirmation link was mailed to.
#[server(prefix = "/api", endpoint = "confirm_email")]
pub async fn confirm_email(token: String) -> Result<(), AppError> {
    services()?.accounts.confirm_email(&token).await?;
    leptos_axum::redirect("/account?email=confirmed");
    Ok(())
}

/// Mails the caller a new confirmation link.
#[server(prefix = "/api", endpoint = "resend_confirmation")]
pub async fn resend_confirmation() -> Result<(), AppError> {
    services()?
        .accounts
        .resend_confirmation(&principal()?)
        .await?;
    leptos_axum::redirect("/account?confirmation=sent");
    Ok(())
}

/// One page of the audit log of the caller's account (owners and site
/// admins), or of `account` (site admins): the events `query` asks for.
#[server(prefix = "/api", endpoint = "account_audit")]
pub async fn account_audit(
    #[server(default)] query: AuditQuery,
    #[server(default)] account: Option<String>,
) -> Result<AuditLog, AppError> {
    let filter = query.parse()?;
    services()?
        .accounts
        .audit_log(&principal()?, account.as_deref(), &filter)
        .await
}
