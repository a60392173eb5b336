//! What a job's page shows: the job, its replicas, what happened to it,
//! what it registered, its alerts, and for a notebook run or a batch
//! scoring how far it got. Apart from `jobs` (submitting, stopping), which
//! the scoring and notebook-run use cases build on.

use crate::error::AppError;
use crate::models::{Job, JobDetail, Me};
use crate::ports::Services;

/// The account's job `name` with its replicas, what happened to it and the
/// model versions it registered: what its page and
/// `GET /api/v1/jobs/{name}/detail` show. Another account's job is "not
/// found".
pub async fn job_detail(services: &Services, me: &Me, name: &str) -> Result<JobDetail, AppError> {
    let account = &me.account;
    let (job, pods, history, registered) = futures_util::future::try_join4(
        services.cluster.job(account, name),
        services.cluster.pods(account, name),
        services.cluster.history(account, name),
        services.assets.registered_by(account, name),
    )
    .await?;
    let alerts = services.alerts.alerts(account, Some(name)).await?;
    let notebook_run = run_report(services, &job).await;
    let scoring = super::scoring::progress_of(services, me, &job).await?;
    Ok(JobDetail {
        owner: account.name.clone(),
        job,
        pods,
        history,
        registered,
        notebook_run,
        scoring,
        alerts,
        now: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64),
    })
}

/// How far `job`'s run got, if it is a notebook run whose replica sent its
/// notebook; `None` otherwise (or if the file cannot be read: the page
/// shows the rest).
async fn run_report(services: &Services, job: &Job) -> Option<crate::models::NotebookRunReport> {
    let run = job.spec.notebook_run.as_ref()?;
    match services.notebook_runs.output(&run.run).await {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes)
            .ok()
            .map(|json| crate::models::NotebookRunReport::read(&json)),
        Ok(None) => None,
        Err(err) => {
            tracing::warn!(error = %err, job = %job.name, "reading a notebook run's output");
            None
        }
    }
}
