//! Access keys for the REST API, the CLI and the SDK: list, create (the secret
//! is shown once), revoke.

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::{AccessKeyInfo, Credentials};

#[cfg(feature = "ssr")]
use super::context::{principal, request_parts, services, site_url};

/// The caller's own keys, newest first.
#[server(prefix = "/api", endpoint = "access_keys")]
pub async fn access_keys() -> Result<Vec<AccessKeyInfo>, AppError> {
    services()?.access_keys.keys(&principal()?).await
}

/// Creates a key for the caller and returns it as the credentials file the CLI
/// and the SDK read; the secret is never shown again.
#[server(prefix = "/api", endpoint = "create_access_key")]
pub async fn create_access_key(name: String) -> Result<Credentials, AppError> {
    let who = principal()?;
    let created = services()?.access_keys.create_key(&who.me, &name).await?;
    Ok(Credentials::new(
        site_url(&request_parts()?),
        &who.me,
        created.key,
    ))
}

/// Revokes one of the caller's keys: requests with it fail from now on.
#[server(prefix = "/api", endpoint = "revoke_access_key")]
pub async fn revoke_access_key(id: i64) -> Result<(), AppError> {
    services()?.access_keys.revoke_key(&principal()?, id).await
}
