//! Environments: the list, one environment's page (with its build log),
//! and saving a version from the page's form.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::{Environment, EnvironmentDetail, EnvironmentList, EnvironmentSpec};

#[cfg(feature = "ssr")]
use super::context::{member, principal, services};

/// The environments the account can use, newest versions.
#[server(prefix = "/api", endpoint = "list_environments")]
pub async fn list_environments() -> Result<EnvironmentList, AppError> {
    let who = principal()?;
    services()?.environments.list(&who.me).await
}

/// One environment (`owner`'s, the account's own when empty; `version`,
/// the newest when none) with its versions and local build.
#[server(prefix = "/api", endpoint = "get_environment")]
pub async fn get_environment(
    name: String,
    owner: Option<String>,
    version: Option<u32>,
) -> Result<EnvironmentDetail, AppError> {
    let who = principal()?;
    let reference = crate::models::EnvironmentRef {
        owner: owner.filter(|o| !o.is_empty()),
        name,
        version,
    };
    services()?.environments.detail(&who.me, &reference).await
}

/// The form that saves a version: requirements one per line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentForm {
    /// Its name.
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// The image on Kubernetes.
    #[serde(default)]
    pub image: String,
    /// pip requirements, one per line.
    #[serde(default)]
    pub requirements: String,
    /// Notes for its users.
    #[serde(default)]
    pub setup_notes: String,
}

impl EnvironmentForm {
    /// The spec it describes.
    pub fn to_spec(&self) -> EnvironmentSpec {
        EnvironmentSpec {
            name: self.name.trim().to_owned(),
            description: self.description.trim().to_owned(),
            image: self.image.trim().to_owned(),
            requirements: self.requirements.lines().map(str::to_owned).collect(),
            setup_notes: self.setup_notes.trim().to_owned(),
        }
        .normalized()
    }

    /// The form filled with `spec` (to save a changed version).
    pub fn from_spec(spec: &EnvironmentSpec) -> Self {
        Self {
            name: spec.name.clone(),
            description: spec.description.clone(),
            image: spec.image.clone(),
            requirements: spec.requirements.join("\n"),
            setup_notes: spec.setup_notes.clone(),
        }
    }
}

/// Saves the form as the next version and opens its page, where the build
/// runs.
#[server(prefix = "/api", endpoint = "save_environment")]
pub async fn save_environment(form: EnvironmentForm) -> Result<Environment, AppError> {
    let who = member()?;
    let saved = services()?
        .environments
        .save(&who.me, form.to_spec())
        .await?;
    leptos_axum::redirect(&format!("/environments/{}", saved.spec.name));
    Ok(saved)
}
