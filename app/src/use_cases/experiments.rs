//! Starting an experiment, checked whole before anything is recorded, and
//! making one of its trials' jobs.

use crate::error::AppError;
use crate::models::{
    trial_job_name, Account, Experiment, ExperimentSpec, ExperimentUse, Job, JobSpec, Template,
    TemplateRun, TrialValues,
};
use crate::ports::{Principal, Services};

/// Checks `spec` whole (its own fields, its space against the template's
/// parameters, and the job a trial would run, with the datasets and models
/// it names) and records the experiment, its template version pinned; the
/// console's controller starts its trials. The error names the field.
pub async fn create_experiment(
    services: &Services,
    who: &Principal,
    mut spec: ExperimentSpec,
) -> Result<Experiment, AppError> {
    who.require_change()?;
    spec.validate()?;
    let template = experiment_template(services, &who.me.account, &spec).await?;
    spec.template_version = Some(template.version);
    spec.space.check_against(&template.spec.parameters)?;
    let example = trial_job(&template, &spec, 1, &spec.space.example())?;
    super::templates::readable_inputs(services, who, &template.spec.parameters, &example).await?;
    services.experiments.create(&who.me, &spec).await
}

/// The template `spec` searches, at its version; one that is not there is
/// a 400 naming `template`.
pub async fn experiment_template(
    services: &Services,
    account: &Account,
    spec: &ExperimentSpec,
) -> Result<Template, AppError> {
    let (owner, name) = match spec.template.split_once('/') {
        Some((owner, name)) => (Some(owner), name),
        None => (None, spec.template.as_str()),
    };
    services
        .templates
        .get(account, owner, name, spec.template_version)
        .await
        .map_err(|err| match err {
            AppError::NotFound { what } => AppError::invalid(
                "template",
                format!("{what} not found: name a template of yours or a published one."),
            ),
            other => other,
        })
}

/// The job trial `number` of `spec` runs: `template` with the fixed
/// values and the trial's, named `<experiment>-t<number>`, recording the
/// template run and the trial. A value the template refuses names
/// `values.<parameter>`.
pub fn trial_job(
    template: &Template,
    spec: &ExperimentSpec,
    number: u32,
    values: &TrialValues,
) -> Result<JobSpec, AppError> {
    let mut all = spec.values.clone();
    all.extend(values.iter().map(|(k, v)| (k.clone(), v.clone())));
    let run = TemplateRun {
        owner: Some(template.owner.clone()),
        name: Some(trial_job_name(&spec.name, number)),
        version: Some(template.version),
        values: all,
    };
    let mut job = template.spec.render(template.version, &run, "")?;
    if let Some(used) = job.template.as_mut() {
        used.owner = template.owner.clone();
    }
    job.experiment = Some(ExperimentUse {
        name: spec.name.clone(),
        trial: number,
    });
    Ok(job)
}

/// Submits a trial's job within the quota, as the experiment's creator.
/// Only the console's experiment controller calls this.
pub async fn submit_trial(
    services: &Services,
    who: &Principal,
    job: JobSpec,
) -> Result<Job, AppError> {
    who.require_change()?;
    super::jobs::admit_and_submit(services, who, job).await
}
