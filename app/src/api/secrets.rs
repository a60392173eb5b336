//! The account's secrets for the Secrets page: the list (never values),
//! setting one from the form, deleting one.

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::{SecretForm, SecretInfo};

#[cfg(feature = "ssr")]
use super::context::{principal, services};

/// The account's secrets, and whether the caller may set them (an owner).
#[server(prefix = "/api", endpoint = "read_secrets")]
pub async fn read_secrets() -> Result<(Vec<SecretInfo>, bool), AppError> {
    let who = principal()?;
    let owner = who.me.role == crate::models::Role::Owner;
    Ok((services()?.secrets.secrets(&who).await?, owner))
}

/// Sets a secret from the form (owners), back to the Secrets page.
#[server(prefix = "/api", endpoint = "set_secret")]
pub async fn set_secret(form: SecretForm) -> Result<SecretInfo, AppError> {
    let set = services()?.secrets.set_secret(&principal()?, form).await?;
    leptos_axum::redirect(&format!("/secrets?set={}", set.name));
    Ok(set)
}

/// Deletes secret `name` (owners), back to the Secrets page.
#[server(prefix = "/api", endpoint = "delete_secret")]
pub async fn delete_secret(name: String) -> Result<(), AppError> {
    services()?
        .secrets
        .delete_secret(&principal()?, &name)
        .await?;
    leptos_axum::redirect("/secrets");
    Ok(())
}
