//! Templates: the list, one template's run form, and running it.

use std::collections::BTreeMap;

use leptos::prelude::*;

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

/// One template (its newest version), for its run form: the account's
/// own, or `owner`'s published one.
#[server(prefix = "/api", endpoint = "get_template")]
pub async fn get_template(name: String, owner: Option<String>) -> Result<Template, AppError> {
    let who = principal()?;
    services()?
        .templates
        .get(&who.me.account, owner.as_deref(), &name, None)
        .await
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
