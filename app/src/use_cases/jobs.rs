//! Submitting a job, within the account's quota; stopping and deleting
//! one. What its page shows is `job_detail`.

use crate::error::AppError;
use crate::models::{Job, JobSpec, Me, Priority, Workload};
use crate::ports::{Principal, Services};

use super::admission::{prepare, start_admitted};

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
    // only the pipeline scheduler that it is a pipeline's node, and only
    // the experiment controller that it is a trial.
    spec.template = None;
    spec.pipeline = None;
    spec.experiment = None;
    spec.notebook_run = None;
    spec.scoring = None;
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
    if spec.priority == Priority::High && !services.members.may_use_high_priority(me).await? {
        return Err(AppError::forbidden(
            "High priority is for the account's owners and the members they allow \
             (Account page, Members); submit it as normal or low, or ask an owner.",
        ));
    }
    let asked = prepare(services, me, &mut spec).await?;
    spec.models =
        super::model_versions::pin_job_models(&*services.assets, me, &spec.models).await?;
    readable_datasets(&*services.assets, me, &spec.datasets).await?;
    let copied = own_notebook_copy(services, &mut spec).await?;
    let submit = services.cluster.submit(me, spec);
    let result = start_admitted(services, me, Workload::Job, asked, submit).await;
    if let (Err(_), Some(key)) = (&result, copied) {
        if let Err(forgot) = services.notebook_runs.forget(&key).await {
            tracing::warn!(error = %forgot, "removing a refused notebook run's input");
        }
    }
    result
}

/// Gives a notebook template's run its own copy of the template's
/// notebook (so that deleting the job removes only its copy); returns the
/// new key. Other jobs keep what they have: a notebook run's key is its
/// own already, and only the console sets one.
async fn own_notebook_copy(
    services: &Services,
    spec: &mut JobSpec,
) -> Result<Option<String>, AppError> {
    let (Some(_), Some(run)) = (&spec.template, spec.notebook_run.as_mut()) else {
        return Ok(None);
    };
    let bytes = services.notebook_runs.input(&run.run).await?;
    run.run = services.notebook_runs.keep_input(bytes).await?;
    Ok(Some(run.run.clone()))
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
        let found = match input.version {
            None => assets.get(&viewer, &input.asset).await.map(|_| ()),
            // A saved version must exist and be complete (to its owner, one
            // still uploading is there but has not all its files yet).
            Some(v) => assets
                .versions(&viewer, &input.asset)
                .await
                .and_then(|all| {
                    if all.iter().any(|x| x.version == v && x.state == "ready") {
                        Ok(())
                    } else {
                        Err(AppError::not_found("version"))
                    }
                }),
        };
        if let Err(err) = found {
            let version = input
                .version
                .map(|v| format!(" version {v}"))
                .unwrap_or_default();
            return Err(match err {
                AppError::NotFound { .. } | AppError::Invalid { .. } => AppError::invalid(
                    "datasets",
                    format!(
                        "There is no dataset “{}/{}”{version} you can read.",
                        input.asset.owner, input.asset.name
                    ),
                ),
                other => other,
            });
        }
    }
    Ok(())
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

/// A stack dump of every running replica of `me`'s account's job `name`
/// (py-spy), each also written into that replica's log. A run that is only
/// recorded here (MLflow, a local run) has no replica the console can read.
pub async fn stack_dump(
    services: &Services,
    me: &Me,
    name: &str,
) -> Result<Vec<crate::models::StackDump>, AppError> {
    me.role.require_change()?;
    let job = services.cluster.job(&me.account, name).await?;
    if job.source != crate::models::JobSource::Console {
        return Err(AppError::conflict(
            "job",
            format!("Job {name} ran outside the console's executors: it has no replica to dump."),
        ));
    }
    let pods = services.cluster.pods(&me.account, name).await?;
    if !pods
        .iter()
        .any(|p| p.phase == crate::models::PodPhase::Running)
    {
        return Err(AppError::conflict(
            "job",
            format!("Job {name} has no running replica to take a stack dump of."),
        ));
    }
    services.cluster.stack_dump(&me.account, name).await
}

/// Deletes the account's job `name` with its logs (and a notebook run's
/// files).
pub async fn delete_job(services: &Services, me: &Me, name: &str) -> Result<(), AppError> {
    let job = services.cluster.job(&me.account, name).await?;
    services.cluster.delete(&me.account, name).await?;
    forget_run(services, &job).await;
    Ok(())
}

/// Removes the files of `job`'s run, if it is one (the job is gone).
async fn forget_run(services: &Services, job: &Job) {
    if let Some(run) = &job.spec.notebook_run {
        if let Err(err) = services.notebook_runs.forget(&run.run).await {
            tracing::warn!(error = %err, job = %job.name, "removing a notebook run's files");
        }
    }
}
