//! Experiments for the pages: the list, one experiment's page, the "New
//! experiment" form and what a member does to an experiment (pause,
//! resume, stop, more trials, failed trials again).

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::{Experiment, ExperimentForm, ExperimentSummary, Template};

#[cfg(feature = "ssr")]
use super::context::{member, principal, services};

/// The library's example experiment (`library/experiments/`), which "New
/// experiment" offers prefilled.
#[cfg(feature = "ssr")]
const LIBRARY_EXAMPLE: &str = include_str!("../../../library/experiments/fit-a-line-search.yaml");

/// The best trial's final metrics the page shows at most.
#[cfg(feature = "ssr")]
const BEST_METRICS: usize = 12;

/// One experiment's page: the experiment with every trial, and the best
/// trial's other final metrics (its last value of each tag). The page
/// draws its charts from these on the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentPageData {
    /// The experiment and its trials.
    pub experiment: Experiment,
    /// The best trial's tags and their last values (finite ones), by tag.
    pub best_metrics: Vec<(String, f64)>,
    /// The trials' other tags and each trial's final value of them: the
    /// trials table's columns beside the objective.
    pub trial_tags: crate::models::TrialTags,
}

/// What the "New experiment" page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewExperimentData {
    /// The templates that may be searched (`owner/name`).
    pub templates: Vec<String>,
    /// The template picked, with its parameters.
    pub template: Option<Template>,
    /// The form as it starts.
    pub form: Option<ExperimentForm>,
}

/// The account's experiments, newest first, with their trials' counts
/// and the best trial.
#[server(prefix = "/api", endpoint = "list_experiments")]
pub async fn list_experiments() -> Result<Vec<ExperimentSummary>, AppError> {
    let who = principal()?;
    let all = services()?.experiments.list(&who.me.account).await?;
    Ok(all.iter().map(Experiment::summary).collect())
}

/// Experiment `name` for its page.
#[server(prefix = "/api", endpoint = "experiment_page")]
pub async fn experiment_page(name: String) -> Result<ExperimentPageData, AppError> {
    let who = principal()?;
    let services = services()?;
    let account = &who.me.account;
    let experiment = services.experiments.get(account, &name).await?;
    // Every trial's tags and final values: one query for all the jobs; the
    // best trial's metrics are its row of it.
    let jobs: Vec<String> = experiment.trials.iter().map(|t| t.job.clone()).collect();
    let finals: Vec<Vec<(String, Option<f64>)>> = services
        .metrics
        .tags_of(account, &jobs)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|tags| tags.into_iter().map(|t| (t.tag, t.last_value)).collect())
        .collect();
    let best_metrics = experiment
        .best()
        .and_then(|best| {
            experiment
                .trials
                .iter()
                .position(|t| t.number == best.number)
        })
        .and_then(|i| finals.get(i))
        .map(|tags| {
            tags.iter()
                .take(BEST_METRICS)
                .filter_map(|(tag, v)| v.filter(|v| v.is_finite()).map(|v| (tag.clone(), v)))
                .collect()
        })
        .unwrap_or_default();
    let trial_tags = crate::models::TrialTags::pick(
        &experiment.trials,
        &finals,
        &experiment.spec.objective.metric,
    );
    Ok(ExperimentPageData {
        experiment,
        best_metrics,
        trial_tags,
    })
}

/// What "New experiment" starts from: the templates to pick from and,
/// with `template` (`owner/name`), its form; `library`, the library's
/// example experiment over its template.
#[server(prefix = "/api", endpoint = "new_experiment_form")]
pub async fn new_experiment_form(
    #[server(default)] template: Option<String>,
    #[server(default)] library: bool,
) -> Result<NewExperimentData, AppError> {
    let who = principal()?;
    let services = services()?;
    let account = &who.me.account;
    let templates = services
        .templates
        .list(account)
        .await?
        .templates
        .iter()
        .map(|t| format!("{}/{}", t.owner, t.spec.name))
        .collect();
    let example: Option<crate::models::ExperimentSpec> = if library {
        Some(serde_norway::from_str(LIBRARY_EXAMPLE).map_err(|err| {
            tracing::error!(error = %err, "the library's example experiment");
            AppError::Internal
        })?)
    } else {
        None
    };
    let wanted = example
        .as_ref()
        .map(|e| e.template.clone())
        .or(template)
        .filter(|t| !t.trim().is_empty());
    let Some(wanted) = wanted else {
        return Ok(NewExperimentData {
            templates,
            template: None,
            form: None,
        });
    };
    let (owner, name) = match wanted.split_once('/') {
        Some((owner, name)) => (Some(owner).filter(|o| !o.is_empty()), name),
        None => (None, wanted.as_str()),
    };
    let template = services.templates.get(account, owner, name, None).await?;
    let form = match &example {
        Some(spec) => ExperimentForm::from_spec(spec, &template),
        None => ExperimentForm::for_template(&template),
    };
    Ok(NewExperimentData {
        templates,
        template: Some(template),
        form: Some(form),
    })
}

/// Starts the experiment the "New experiment" form describes and opens its
/// page; a bad field is named as the form names it.
#[server(prefix = "/api", endpoint = "create_experiment_form")]
pub async fn create_experiment_form(form: ExperimentForm) -> Result<Experiment, AppError> {
    let who = member()?;
    let spec = form.to_spec()?;
    let e = crate::use_cases::experiments::create_experiment(&services()?, &who, spec)
        .await
        .map_err(|err| form.error_for_form(err))?;
    leptos_axum::redirect(&format!("/experiments/{}", e.name));
    Ok(e)
}

/// Starts no new trial; those running go on.
#[server(prefix = "/api", endpoint = "pause_experiment")]
pub async fn pause_experiment(name: String) -> Result<Experiment, AppError> {
    let who = member()?;
    services()?.experiments.pause(&who.me, &name).await
}

/// Starts trials again after a pause.
#[server(prefix = "/api", endpoint = "resume_experiment")]
pub async fn resume_experiment(name: String) -> Result<Experiment, AppError> {
    let who = member()?;
    services()?.experiments.resume(&who.me, &name).await
}

/// Ends the experiment, stopping its running trials.
#[server(prefix = "/api", endpoint = "stop_experiment")]
pub async fn stop_experiment(name: String) -> Result<Experiment, AppError> {
    let who = member()?;
    services()?.experiments.stop(&who.me, &name).await
}

/// `more` trials: an ended experiment runs again, its search learning
/// from every trial so far.
#[server(prefix = "/api", endpoint = "extend_experiment")]
pub async fn extend_experiment(name: String, more: u32) -> Result<Experiment, AppError> {
    let who = member()?;
    services()?.experiments.extend(&who.me, &name, more).await
}

/// Runs each failed trial's values again as a new trial.
#[server(prefix = "/api", endpoint = "retry_experiment")]
pub async fn retry_experiment(name: String) -> Result<Experiment, AppError> {
    let who = member()?;
    services()?.experiments.retry_failed(&who.me, &name).await
}
