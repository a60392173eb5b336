//! `/auth/oidc/login` and `/auth/oidc/callback`: signing in through the
//! OpenID Connect provider the console is configured with. The login
//! route sends the browser to the provider with a sealed cookie of what
//! the callback must check; the callback checks it, learns who signed in,
//! makes them a member where the provider's mapping says, and starts a
//! session as a password sign-in does. A refusal is a page that says why,
//! with a 4xx status.

use app::api::accounts::user_agent_of;
use app::api::context::{cookie, site_url, SESSION_COOKIE};
use app::error::AppError;
use app::models::safe_next;
use axum::extract::{Query, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::{header, HeaderValue, StatusCode};
use serde::Deserialize;

use super::AppState;

/// The cookie that carries a sign-in from the redirect to the callback.
const LOGIN_COOKIE: &str = "pc_oidc";
const LOGIN_PATH: &str = "/auth/oidc";

/// `?next=`: where to go once signed in (a path on this site).
#[derive(Debug, Default, Deserialize)]
pub struct Begin {
    #[serde(default)]
    next: Option<String>,
}

/// What the provider sends back.
#[derive(Debug, Default, Deserialize)]
pub struct Callback {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

fn secure(state: &AppState, parts: &http::request::Parts) -> &'static str {
    if app::api::context::secure(parts, &state.services) {
        "; Secure"
    } else {
        ""
    }
}

fn redirect_uri(parts: &http::request::Parts) -> String {
    format!("{}{LOGIN_PATH}/callback", site_url(parts))
}

/// A page that says why signing in did not work, with a way back.
fn refused(err: &AppError) -> Response {
    let status = match err {
        AppError::Forbidden { .. } => StatusCode::FORBIDDEN,
        AppError::Internal => StatusCode::BAD_GATEWAY,
        _ => StatusCode::BAD_REQUEST,
    };
    let message = html_escape::encode_text(&err.to_string()).into_owned();
    let page = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Sign-in failed</title><link rel=\"stylesheet\" href=\"/pkg/paddlecloud.css\"></head>\
         <body><main class=\"auth\"><h1>Sign-in failed</h1>\
         <p class=\"banner error\" role=\"alert\" data-testid=\"sso-error\">{message}</p>\
         <p><a href=\"/login\">Back to sign in</a></p></main></body></html>"
    );
    (status, Html(page)).into_response()
}

/// Sends the browser to the provider.
pub async fn login(
    State(state): State<AppState>,
    Query(begin): Query<Begin>,
    parts: http::request::Parts,
) -> Response {
    let Some(oidc) = state.oidc.clone() else {
        return refused(&AppError::not_found("Single sign-on"));
    };
    let next = safe_next(begin.next.as_deref()).to_owned();
    match oidc.begin(&redirect_uri(&parts), &next).await {
        Ok((url, cookie)) => {
            let cookie = format!(
                "{LOGIN_COOKIE}={cookie}; Path={LOGIN_PATH}; HttpOnly; SameSite=Lax; Max-Age={}{}",
                crate::accounts::oidc::LOGIN_SECONDS,
                secure(&state, &parts)
            );
            let mut res = Redirect::to(&url).into_response();
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                res.headers_mut().append(header::SET_COOKIE, v);
            }
            res
        }
        Err(err) => refused(&err),
    }
}

/// Finishes a sign-in the provider sends back.
pub async fn callback(
    State(state): State<AppState>,
    query: Result<Query<Callback>, axum::extract::rejection::QueryRejection>,
    parts: http::request::Parts,
) -> Response {
    let Some(oidc) = state.oidc.clone() else {
        return refused(&AppError::not_found("Single sign-on"));
    };
    let Ok(Query(back)) = query else {
        return refused(&AppError::invalid(
            "oidc",
            "The identity provider's answer was not understood.",
        ));
    };
    if let Some(error) = back.error {
        let why = back.error_description.unwrap_or(error);
        return refused(&AppError::forbidden(format!(
            "The identity provider said: {why}"
        )));
    }
    let (Some(code), Some(returned)) = (back.code, back.state) else {
        return refused(&AppError::invalid(
            "oidc",
            "The identity provider sent no code.",
        ));
    };
    let cookie = cookie(&parts, LOGIN_COOKIE);
    let signed_in = async {
        let (who, next) = oidc
            .finish(&redirect_uri(&parts), cookie.as_deref(), &code, &returned)
            .await?;
        let memberships = oidc.mapping().memberships(&who)?;
        let accounts = &state.services.accounts;
        let me = accounts.sign_in_external(&who, &memberships).await?;
        let session = accounts.create_session(&me, &user_agent_of(&parts)).await?;
        tracing::info!(account = %me.account.name, user = %me.email, "signed in through the identity provider");
        Ok::<_, AppError>((session, next))
    };
    match signed_in.await {
        Ok((session, next)) => {
            let secure = secure(&state, &parts);
            let mut res = Redirect::to(&next).into_response();
            let cookies = [
                format!(
                    "{SESSION_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
                    session.token, session.max_age_secs
                ),
                format!(
                    "{LOGIN_COOKIE}=; Path={LOGIN_PATH}; HttpOnly; SameSite=Lax; Max-Age=0{secure}"
                ),
            ];
            for c in cookies {
                if let Ok(v) = HeaderValue::from_str(&c) {
                    res.headers_mut().append(header::SET_COOKIE, v);
                }
            }
            res
        }
        Err(err) => refused(&err),
    }
}
