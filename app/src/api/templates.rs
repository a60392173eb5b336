//! Templates: the list, one template's run form, and running it.

use std::collections::BTreeMap;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::{Job, Template, TemplateList};

#[cfg(feature = "ssr")]
use super::context::{member, principal, services};

/// The account's templates at their newest versions.
#[server(prefix = "/api", endpoint = "list_templates")]
pub async fn list_templates() -> Result<TemplateList, AppError> {
    let who = principal()?;
    services()?.templates.list(&who.me.account).await
}

/// What the run form shows: a template version and the values to start from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFormData {
    /// The version the form runs.
    pub template: Template,
    /// Values filled in instead of the defaults (a job run again), as text.
    pub values: BTreeMap<String, String>,
    /// The job these values come from, if any.
    pub from: Option<String>,
}

/// Template `name` (the account's own, or `owner`'s published one) for
/// its run form: its newest version with its defaults, or, `from` a job
/// made from it ("Run again with changes"), the version that job ran with
/// its values.
#[server(prefix = "/api", endpoint = "get_template")]
pub async fn get_template(
    name: String,
    #[server(default)] owner: Option<String>,
    #[server(default)] from: Option<String>,
) -> Result<RunFormData, AppError> {
    let who = principal()?;
    let services = services()?;
    let account = &who.me.account;
    let owner = owner.filter(|o| !o.is_empty());
    let Some(job_name) = from.filter(|f| !f.is_empty()) else {
        return Ok(RunFormData {
            template: services
                .templates
                .get(account, owner.as_deref(), &name, None)
                .await?,
            values: BTreeMap::new(),
            from: None,
        });
    };
    let job = services.cluster.job(account, &job_name).await?;
    let used = job
        .spec
        .template
        .filter(|t| t.name == name && owner.as_ref().is_none_or(|o| *o == t.owner))
        .ok_or_else(|| {
            AppError::invalid(
                "from",
                format!("Job {job_name} was not made from template {name}."),
            )
        })?;
    let template = services
        .templates
        .get(account, Some(&used.owner), &name, Some(used.version))
        .await?;
    Ok(RunFormData {
        template,
        values: used
            .values
            .iter()
            .map(|(k, v)| (k.clone(), v.to_text()))
            .collect(),
        from: Some(job_name),
    })
}

/// Runs version `version` of template `name` with the form's values (text,
/// read as each parameter's type); an empty job name lets the console name
/// it. A browser without JavaScript lands on the job table.
#[server(prefix = "/api", endpoint = "run_template")]
pub async fn run_template(
    name: String,
    #[server(default)] owner: String,
    version: u32,
    job_name: String,
    #[server(default)] values: BTreeMap<String, String>,
) -> Result<Job, AppError> {
    let who = member()?;
    let run = crate::models::TemplateRun {
        owner: Some(owner).filter(|o| !o.is_empty()),
        name: Some(job_name).filter(|n| !n.trim().is_empty()),
        version: Some(version),
        values: values
            .into_iter()
            // An empty field is a value left out: its default applies.
            .filter(|(_, v)| !v.trim().is_empty())
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect(),
    };
    let job = crate::use_cases::run_template(&services()?, &who, &name, run).await?;
    leptos_axum::redirect("/jobs");
    Ok(job)
}

/// Job `job` as the start of a template ("Save as template").
#[server(prefix = "/api", endpoint = "job_as_template")]
pub async fn job_as_template(job: String) -> Result<crate::models::TemplateForm, AppError> {
    let who = principal()?;
    let services = services()?;
    let job = services.cluster.job(&who.me.account, &job).await?;
    if job.source == crate::models::JobSource::Local {
        let run = services.local_runs.get(&who.me.account, &job.name).await?;
        return Ok(crate::models::TemplateForm::from_local_run(&job.spec, &run));
    }
    let mut form = crate::models::TemplateForm::from_job(&job.spec);
    if let Some(run) = &job.spec.notebook_run {
        // The notebook's parameters, each defaulting to this run's value.
        let bytes = services.notebook_runs.input(&run.run).await?;
        let json = serde_json::from_slice(&bytes).map_err(|_| AppError::Internal)?;
        let declared =
            crate::models::NotebookParameters::read(&run.notebook, &run.path, run.version, &json);
        let mut stub = form.to_spec()?;
        declared.fit_template(&mut stub, &run.values)?;
        form.parameters =
            serde_json::to_string_pretty(&stub.parameters).map_err(|_| AppError::Internal)?;
    }
    Ok(form)
}

/// Saves the "Save as template" form as the next version of its name and
/// opens the template's run form.
#[server(prefix = "/api", endpoint = "save_template")]
pub async fn save_template(form: crate::models::TemplateForm) -> Result<Template, AppError> {
    let who = member()?;
    let saved = crate::use_cases::save_template(&services()?, &who, form.to_spec()?).await?;
    leptos_axum::redirect(&format!(
        "/templates/{}?owner={}",
        saved.spec.name, saved.owner
    ));
    Ok(saved)
}
