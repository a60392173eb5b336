//! What every server function starts with: the services and the caller.

use http::request::Parts;
use leptos::prelude::*;

use crate::error::AppError;
use crate::models::url::encode;
use crate::ports::{Principal, Services};

/// Name of the cookie that carries the session token.
pub const SESSION_COOKIE: &str = "pc_session";

/// The backends of this server.
pub fn services() -> Result<Services, AppError> {
    use_context::<Services>().ok_or_else(|| {
        tracing::error!("Services missing from the server function context");
        AppError::Internal
    })
}

/// `read` of the request being answered, in place: a copy of the parts is
/// a copy of all their headers and extensions.
fn with_request_parts<R>(read: impl FnOnce(&Parts) -> R) -> Result<R, AppError> {
    with_context::<Parts, _>(read).ok_or_else(|| {
        tracing::error!("request parts missing from the server function context");
        AppError::Internal
    })
}

/// The request being answered.
pub fn request_parts() -> Result<Parts, AppError> {
    with_request_parts(Parts::clone)
}

/// The signed-in caller, resolved by the session layer before the handler ran.
/// Read in place: a page asks several times (the header, its account
/// switcher, the page's own data).
pub fn principal() -> Result<Principal, AppError> {
    with_request_parts(|parts| parts.extensions.get::<Principal>().cloned())?
        .ok_or(AppError::Unauthenticated)
}

/// The signed-in caller, if their role lets them change things in the
/// account: a viewer is refused with a 403 that says so.
pub fn member() -> Result<Principal, AppError> {
    let who = principal()?;
    who.require_change()?;
    Ok(who)
}

/// The address the request came from, as rate limits count it (`unknown`
/// with no socket behind the request).
pub fn client_address(parts: &Parts) -> String {
    parts
        .extensions
        .get::<crate::ports::ClientAddress>()
        .map_or_else(|| "unknown".to_owned(), |a| a.0.clone())
}

/// The session token from the request's cookies, if any.
pub fn session_token(parts: &Parts) -> Option<String> {
    cookie(parts, SESSION_COOKIE)
}

/// The value of cookie `name` in the request, if it has one.
pub fn cookie(parts: &Parts, name: &str) -> Option<String> {
    parts
        .headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.to_owned())
}

/// Whether cookies set in answer to `parts` should be `Secure`.
pub fn secure(parts: &Parts, services: &Services) -> bool {
    services.secure_cookies
        || parts
            .headers
            .get("x-forwarded-proto")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"https"))
}

/// The console's own URL as the caller reached it (`https://` behind a TLS
/// proxy), e.g. for the credentials file a key is handed out in.
pub fn site_url(parts: &Parts) -> String {
    let https = parts
        .headers
        .get("x-forwarded-proto")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"https"));
    let host = parts
        .headers
        .get("x-forwarded-host")
        .or_else(|| parts.headers.get(http::header::HOST))
        .and_then(|v| v.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .unwrap_or("127.0.0.1:3000");
    format!("{}://{host}", if https { "https" } else { "http" })
}

/// Adds `Set-Cookie` for the session (an empty value and `max_age_secs == 0` clears it).
pub fn set_session_cookie(token: &str, max_age_secs: i64) -> Result<(), AppError> {
    let parts = request_parts()?;
    let services = services()?;
    let secure = if secure(&parts, &services) {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_secs}{secure}"
    );
    let value = http::HeaderValue::from_str(&cookie).map_err(|_| AppError::Internal)?;
    expect_context::<leptos_axum::ResponseOptions>().append_header(http::header::SET_COOKIE, value);
    Ok(())
}

/// Whether the request came from the page at `path` (its Referer's path):
/// an action that removes what that page shows sends the browser elsewhere.
pub fn came_from(path: &str) -> bool {
    request_parts().is_ok_and(|parts| {
        parts
            .headers
            .get(http::header::REFERER)
            .and_then(|v| v.to_str().ok())
            .and_then(|r| r.parse::<http::Uri>().ok())
            .is_some_and(|uri| uri.path() == path)
    })
}

/// After a form post, sends the browser back to the page it came from minus
/// `param` (e.g. the dialog that was open), keeping every other filter.
pub fn redirect_back_without(param: &str, fallback: &str) -> Result<(), AppError> {
    redirect_back(&[(param, None)], fallback)
}

/// After a form post, sends the browser back to the page it came from with
/// `changes` to its query (`None` removes a parameter), keeping the rest.
/// (A script's action follows the same redirect, so both end up alike.)
pub fn redirect_back(changes: &[(&str, Option<String>)], fallback: &str) -> Result<(), AppError> {
    let parts = request_parts()?;
    let referer = parts
        .headers
        .get(http::header::REFERER)
        .and_then(|v| v.to_str().ok())
        .and_then(|r| r.parse::<http::Uri>().ok());
    let (path, query) = match &referer {
        Some(uri) => (uri.path(), uri.query().unwrap_or("")),
        None => (fallback, ""),
    };
    // The referer's own pairs stay as they were sent (already encoded).
    let mut pairs: Vec<String> = query
        .split('&')
        .filter(|kv| {
            let key = kv.split('=').next().unwrap_or("");
            !kv.is_empty() && !changes.iter().any(|(c, _)| *c == key)
        })
        .map(str::to_owned)
        .collect();
    for (key, value) in changes {
        if let Some(value) = value {
            pairs.push(format!("{}={}", encode(key), encode(value)));
        }
    }
    let back = if pairs.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", pairs.join("&"))
    };
    leptos_axum::redirect(&back);
    Ok(())
}
