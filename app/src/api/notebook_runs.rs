//! Running a notebook file as a job: the run form's data (a version's
//! parameters, the values of a job run again) and the run itself. The
//! executed notebook's page is the REST route
//! `/api/v1/jobs/{name}/notebook/output/html` (an iframe's source).

use std::collections::BTreeMap;

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::{Job, NotebookRunForm};

#[cfg(feature = "ssr")]
use super::context::{member, principal, services};

/// The run form of file `path` (version `version`, 0: the newest) of
/// notebook `name`, filled from job `from` when not empty.
#[server(prefix = "/api", endpoint = "read_notebook_run_form")]
pub async fn read_notebook_run_form(
    name: String,
    path: String,
    #[server(default)] version: i64,
    #[server(default)] from: String,
) -> Result<NotebookRunForm, AppError> {
    let who = principal()?;
    let services = services()?;
    let version = Some(version).filter(|v| *v > 0);
    let parameters = crate::use_cases::notebook_runs::notebook_parameters(
        &services, &who.me, &name, &path, version,
    )
    .await?;
    let from_job = match from.trim() {
        "" => None,
        job => Some(services.cluster.job(&who.me.account, job).await?),
    };
    let run = from_job
        .as_ref()
        .and_then(|j| j.spec.notebook_run.as_ref().map(|r| (j, r)));
    Ok(match run {
        Some((job, used)) => NotebookRunForm {
            parameters,
            values: used
                .values
                .iter()
                .map(|(k, v)| (k.clone(), v.to_text()))
                .collect(),
            environment: job.spec.environment.clone().unwrap_or_default(),
            resources: job.spec.trainer.clone(),
            datasets: job.spec.datasets.join(", "),
            from: Some(job.name.clone()),
        },
        None => {
            let notebook = services.notebooks.get(&who.me.account, &name).await?;
            let environment = notebook.run_environment();
            NotebookRunForm {
                parameters,
                values: BTreeMap::new(),
                environment,
                resources: Default::default(),
                datasets: String::new(),
                from: None,
            }
        }
    })
}

/// Runs version `version` of file `path` of notebook `name` as a job with
/// the form's values (a field left at its default, or emptied, keeps the
/// notebook's line), then opens the job's page.
#[server(prefix = "/api", endpoint = "run_notebook")]
pub async fn run_notebook(
    name: String,
    path: String,
    version: i64,
    #[server(default)] job: crate::models::NotebookJobForm,
    #[server(default)] values: BTreeMap<String, String>,
) -> Result<Job, AppError> {
    let who = member()?;
    let services = services()?;
    let declared = crate::use_cases::notebook_runs::notebook_parameters(
        &services,
        &who.me,
        &name,
        &path,
        Some(version),
    )
    .await?;
    let unchanged = |k: &str, v: &str| {
        declared.parameters.iter().any(|p| {
            p.param.name == k
                && p.param.default.as_ref().is_some_and(|d| match d {
                    serde_json::Value::String(s) => s == v,
                    other => {
                        // Numbers and booleans as the form shows them.
                        let shown = other.to_string();
                        shown == v.trim()
                    }
                })
        })
    };
    let values = values
        .into_iter()
        .filter(|(k, v)| !v.trim().is_empty() && !unchanged(k, v))
        .map(|(k, v)| (k, serde_json::Value::String(v)))
        .collect();
    let spec = job.to_spec(path, version, values)?;
    let job = crate::use_cases::notebook_runs::run_notebook(&services, &who, &name, spec).await?;
    leptos_axum::redirect(&format!("/jobs/{}", crate::models::url::encode(&job.name)));
    Ok(job)
}
