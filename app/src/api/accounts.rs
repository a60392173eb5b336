//! Sign up, sign in, sign out, and the account's members and sessions.

use leptos::prelude::*;

use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::models::{safe_next, SignInForm, SignUpForm};
use crate::models::{Me, Member, SessionInfo};

#[cfg(feature = "ssr")]
use super::context::{principal, request_parts, services, session_token, set_session_cookie};

#[cfg(feature = "ssr")]
fn user_agent() -> Result<String, AppError> {
    Ok(request_parts()?
        .headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown client")
        .chars()
        .take(300)
        .collect())
}

/// Creates an account owned by the caller and signs them in.
#[server(prefix = "/api", endpoint = "sign_up")]
pub async fn sign_up(account: String, email: String, password: String) -> Result<(), AppError> {
    let accounts = services()?.accounts;
    let me = accounts
        .create_account(SignUpForm {
            account,
            email,
            password,
        })
        .await?;
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

/// The members of the caller's account.
#[server(prefix = "/api", endpoint = "members")]
pub async fn members() -> Result<Vec<Member>, AppError> {
    services()?.accounts.members(&principal()?).await
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
