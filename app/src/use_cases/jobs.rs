//! Submitting a job, within the account's quota.

use crate::error::AppError;
use crate::models::{Environment, EnvironmentRef, EnvironmentUse, Job, JobSpec, Me, Workload};
use crate::ports::{Principal, Services};

/// Submits `spec` if the account's quota and the submitter's own caps have
/// room for it, with a message
/// saying what is over and by how much if not. Every way of submitting
/// (dialog, REST, CLI, SDK, a notebook's kernel) comes through here. A job
/// submitted with a notebook's key records that notebook; what a client
/// says of it is ignored.
pub async fn submit_within_quota(
    services: &Services,
    who: &Principal,
    mut spec: JobSpec,
) -> Result<Job, AppError> {
    // Only a template run (`run_template`) says a job came from a template,
    // and only the pipeline scheduler that it is a pipeline's node.
    spec.template = None;
    spec.pipeline = None;
    admit_and_submit(services, who, spec).await
}

/// Submits `spec` (its template record as the console made it) within the
/// account's quota and the caller's caps.
pub(crate) async fn admit_and_submit(
    services: &Services,
    who: &Principal,
    mut spec: JobSpec,
) -> Result<Job, AppError> {
    let me = &who.me;
    spec.notebook = who.notebook_scope().map(str::to_owned);
    pin_environment(
        services,
        me,
        &mut spec.environment,
        &mut spec.environment_use,
    )
    .await?;
    spec.models =
        super::model_versions::pin_job_models(&*services.assets, me, &spec.models).await?;
    readable_datasets(&*services.assets, me, &spec.datasets).await?;
    let totals = spec.totals()?;
    let _admission = services.quotas.admission(&me.account).await?;
    super::admission::admit(services, me, Workload::Job, totals).await?;
    services.cluster.submit(me, spec).await
}

/// Refuses a job that names a dataset its submitter cannot read, before
/// anything runs: every backend fetches them with the job's own rights.
pub async fn readable_datasets(
    assets: &dyn crate::ports::Assets,
    me: &Me,
    datasets: &[String],
) -> Result<(), AppError> {
    for input in crate::models::job_inputs(&me.account.name, datasets, &[])? {
        let viewer = crate::ports::Viewer::User(me.clone());
        if let Err(err) = assets.get(&viewer, &input.asset).await {
            return Err(match err {
                AppError::NotFound { .. } | AppError::Invalid { .. } => AppError::invalid(
                    "datasets",
                    format!(
                        "There is no dataset “{}/{}” you can read.",
                        input.asset.owner, input.asset.name
                    ),
                ),
                other => other,
            });
        }
    }
    Ok(())
}

/// Pins what a spec names in `environment` to the exact version
/// (`owner/name:version`) and records what it holds in `used`; what a
/// client put in `used` is never kept.
pub async fn pin_environment(
    services: &Services,
    me: &Me,
    named: &mut Option<String>,
    used: &mut Option<EnvironmentUse>,
) -> Result<(), AppError> {
    *used = None;
    if let Some(text) = named.take().filter(|e| !e.trim().is_empty()) {
        let environment = resolve_environment(services, me, &text).await?;
        *named = Some(environment.pinned());
        *used = Some(environment.to_use());
    }
    Ok(())
}

/// The exact version of the environment a job, notebook or serving
/// instance names, if `me` may use it; otherwise a 400 on `environment`.
pub async fn resolve_environment(
    services: &Services,
    me: &Me,
    named: &str,
) -> Result<Environment, AppError> {
    let reference = EnvironmentRef::parse(named, "environment")?;
    services
        .environments
        .get(me, &reference)
        .await
        .map_err(|err| match err {
            AppError::NotFound { .. } => AppError::invalid(
                "environment",
                format!("There is no environment “{}” you can use.", named.trim()),
            ),
            other => other,
        })
}

/// Stops a job: the cluster ends its replicas; a local run is asked to stop
/// (its client interrupts the program at its next heartbeat).
pub async fn stop_job(services: &Services, me: &Me, name: &str) -> Result<Job, AppError> {
    let job = services.cluster.job(&me.account, name).await?;
    if job.source == crate::models::JobSource::Local {
        return services.local_runs.request_stop(me, name).await;
    }
    services.cluster.stop(&me.account, name).await
}
