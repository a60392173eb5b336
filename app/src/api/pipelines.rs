//! Pipeline runs for the pages: the list, one run with its nodes, and the
//! two things a member does to a run (stop it, retry it from what failed).

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::pipeline_form::PipelineForm;
use crate::models::PipelineRun;

#[cfg(feature = "ssr")]
use super::context::{member, principal, services};

/// The account's runs, newest first (without their nodes).
#[server(prefix = "/api", endpoint = "list_pipelines")]
pub async fn list_pipelines() -> Result<Vec<PipelineRun>, AppError> {
    let who = principal()?;
    services()?.pipelines.list(&who.me.account).await
}

/// One run with its nodes.
#[server(prefix = "/api", endpoint = "get_pipeline")]
pub async fn get_pipeline(name: String) -> Result<PipelineRun, AppError> {
    let who = principal()?;
    services()?.pipelines.get(&who.me.account, &name).await
}

/// Runs a pipeline made from templates in the "New pipeline" dialog, and
/// opens the run's page.
#[server(prefix = "/api", endpoint = "create_pipeline")]
pub async fn create_pipeline(form: PipelineForm) -> Result<PipelineRun, AppError> {
    let who = member()?;
    let submit = form.to_submit()?;
    let run = crate::use_cases::pipelines::submit_pipeline(&services()?, &who, submit).await?;
    leptos_axum::redirect(&format!("/pipelines/{}", run.name));
    Ok(run)
}

/// Stops a running run.
#[server(prefix = "/api", endpoint = "stop_pipeline")]
pub async fn stop_pipeline(name: String) -> Result<PipelineRun, AppError> {
    let who = member()?;
    services()?.pipelines.stop(&who.me, &name).await
}

/// Runs a failed or stopped run again from what did not succeed.
#[server(prefix = "/api", endpoint = "retry_pipeline")]
pub async fn retry_pipeline(name: String) -> Result<PipelineRun, AppError> {
    let who = member()?;
    services()?.pipelines.retry(&who.me, &name).await
}
