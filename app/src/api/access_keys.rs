//! Access keys for the REST API, the CLI and the SDK: list, create (the secret
//! is shown once), revoke.

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::{AccessKeyInfo, Credentials, KeyScope, KeyTerms};

#[cfg(feature = "ssr")]
use super::context::{principal, request_parts, services, site_url};

/// The caller's own keys, newest first.
#[server(prefix = "/api", endpoint = "access_keys")]
pub async fn access_keys() -> Result<Vec<AccessKeyInfo>, AppError> {
    services()?.access_keys.keys(&principal()?).await
}

/// Creates a key for the caller, of `scope` (`full`, `read`, `metrics`,
/// `submit`), expiring after `expires_in_days` (empty: never), and returns
/// it as the credentials file the CLI and the SDK read; the secret is never
/// shown again.
#[server(prefix = "/api", endpoint = "create_access_key")]
pub async fn create_access_key(
    name: String,
    #[server(default)] scope: String,
    #[server(default)] expires_in_days: String,
) -> Result<Credentials, AppError> {
    let who = principal()?;
    let terms = key_terms(&scope, &expires_in_days)?;
    let created = services()?
        .access_keys
        .create_key(&who.me, &name, terms)
        .await?;
    Ok(Credentials::new(
        site_url(&request_parts()?),
        &who.me,
        created.key,
    ))
}

/// A new key's terms as its form sends them: the scope's word (empty:
/// `full`) and a number of days (empty: never).
pub fn key_terms(scope: &str, expires_in_days: &str) -> Result<KeyTerms, AppError> {
    let scope = match scope.trim() {
        "" => KeyScope::Full,
        word => KeyScope::parse(word)?,
    };
    let expires_in_days = match expires_in_days.trim() {
        "" | "never" => None,
        days => Some(days.parse::<u32>().map_err(|_| {
            AppError::invalid(
                "expires_in_days",
                "Give the days until it expires as a number, or never.",
            )
        })?),
    };
    KeyTerms {
        scope,
        expires_in_days,
    }
    .validated()
}

/// Revokes one of the caller's keys: requests with it fail from now on.
#[server(prefix = "/api", endpoint = "revoke_access_key")]
pub async fn revoke_access_key(id: i64) -> Result<(), AppError> {
    services()?.access_keys.revoke_key(&principal()?, id).await
}
