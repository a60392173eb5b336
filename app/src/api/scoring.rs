//! Batch scoring from the pages: start one (then its job's page shows its
//! progress) and try one again.

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::{Job, ScoringFields};

#[cfg(feature = "ssr")]
use super::context::{member, services};

/// Starts a batch scoring from the "Score a dataset" page, then opens its
/// job's page.
#[server(prefix = "/api", endpoint = "score_dataset")]
pub async fn score_dataset(#[server(default)] form: ScoringFields) -> Result<Job, AppError> {
    let who = member()?;
    let form = form.to_form()?;
    let job = crate::use_cases::scoring::score_dataset(&services()?, &who, form).await?;
    leptos_axum::redirect(&format!("/jobs/{}", crate::models::url::encode(&job.name)));
    Ok(job)
}

/// Tries scoring job `name` again (its job's page, "Retry what is left"),
/// then opens the new try's page.
#[server(prefix = "/api", endpoint = "retry_scoring")]
pub async fn retry_scoring(name: String) -> Result<Job, AppError> {
    let who = member()?;
    let job = crate::use_cases::scoring::retry_scoring(&services()?, &who, &name).await?;
    leptos_axum::redirect(&format!("/jobs/{}", crate::models::url::encode(&job.name)));
    Ok(job)
}
