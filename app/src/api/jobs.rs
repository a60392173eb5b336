//! Jobs: the table, submit, stop, delete, pods and log tails.

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::{Job, JobDetail, JobForm, JobPage, JobQuery, LocalRun, LogView};

#[cfg(feature = "ssr")]
use super::context::{member, principal, redirect_back, services};

/// `Some(why)` while the cluster jobs run on cannot be reached: every page
/// shows it as a banner (the job table itself comes from the database).
#[server(prefix = "/api", endpoint = "cluster_health")]
pub async fn cluster_health() -> Result<Option<String>, AppError> {
    principal()?;
    Ok(services()?.cluster.health())
}

/// One page of the caller's jobs.
#[server(prefix = "/api", endpoint = "list_jobs")]
pub async fn list_jobs(query: JobQuery) -> Result<JobPage, AppError> {
    let who = principal()?;
    services()?.cluster.list_jobs(&who.me.account, &query).await
}

/// One of the caller's jobs.
#[server(prefix = "/api", endpoint = "get_job")]
pub async fn get_job(name: String) -> Result<Job, AppError> {
    let who = principal()?;
    services()?.cluster.job(&who.me.account, &name).await
}

/// One of the caller's jobs with its replicas, what happened to it and the
/// model versions it registered: its page.
#[server(prefix = "/api", endpoint = "job_overview")]
pub async fn job_overview(name: String) -> Result<JobDetail, AppError> {
    let who = principal()?;
    crate::use_cases::job_detail::job_detail(&services()?, &who.me, &name).await
}

/// A local run's parameters and where it ran.
#[server(prefix = "/api", endpoint = "get_local_run")]
pub async fn get_local_run(name: String) -> Result<LocalRun, AppError> {
    let who = principal()?;
    services()?.local_runs.get(&who.me.account, &name).await
}

/// Submits a job from the dialog's form.
#[server(prefix = "/api", endpoint = "submit_job")]
pub async fn submit_job(form: JobForm) -> Result<Job, AppError> {
    let who = member()?;
    let spec = form.to_spec()?;
    let job = crate::use_cases::submit_within_quota(&services()?, &who, spec).await?;
    tracing::info!(account = %who.me.account.name, job = %job.name, user = %who.me.email, "job submitted");
    redirect_back(&[("submit", None), ("from", None)], "/jobs")?;
    Ok(job)
}

/// Stops a job (every replica), keeping its record and logs.
#[server(prefix = "/api", endpoint = "stop_job")]
pub async fn stop_job(name: String) -> Result<Job, AppError> {
    let who = member()?;
    crate::use_cases::jobs::stop_job(&services()?, &who.me, &name).await
}

/// Takes a stack dump of every running replica (py-spy), written into
/// their logs; back to the job's page with the first dumped replica's log
/// open, where the dump is.
#[server(prefix = "/api", endpoint = "stack_dump_job")]
pub async fn stack_dump_job(name: String) -> Result<Vec<crate::models::StackDump>, AppError> {
    let who = member()?;
    let dumps = crate::use_cases::jobs::stack_dump(&services()?, &who.me, &name).await?;
    let shown = dumps
        .iter()
        .find(|d| d.error.is_none())
        .or(dumps.first())
        .map(|d| d.pod.clone())
        .unwrap_or_default();
    leptos_axum::redirect(&format!(
        "/jobs/{}?pod={}#log",
        crate::models::url::encode(&name),
        crate::models::url::encode(&shown)
    ));
    Ok(dumps)
}

/// Deletes a job with its logs.
#[server(prefix = "/api", endpoint = "delete_job")]
pub async fn delete_job(name: String) -> Result<(), AppError> {
    let who = member()?;
    crate::use_cases::jobs::delete_job(&services()?, &who.me, &name).await?;
    // From the job's own page, gone now, back to the table.
    if super::context::came_from(&format!("/jobs/{}", crate::models::url::encode(&name))) {
        leptos_axum::redirect("/jobs");
    }
    Ok(())
}

/// The log console's first paint: the pods, the selected pod (`pod`, or the
/// first), and the last `lines` lines of its log with timestamps (the browser
/// then follows the live stream).
#[server(prefix = "/api", endpoint = "log_console")]
pub async fn log_console(
    job: String,
    pod: Option<String>,
    lines: usize,
) -> Result<LogView, AppError> {
    use futures_util::StreamExt;
    let who = principal()?;
    let cluster = services()?.cluster;
    let pods = cluster.pods(&who.me.account, &job).await?;
    let Some(selected) = pod
        .filter(|p| pods.iter().any(|x| &x.name == p))
        .or_else(|| pods.first().map(|p| p.name.clone()))
    else {
        return Ok(LogView {
            pods,
            pod: None,
            tail: String::new(),
        });
    };
    let request = crate::models::LogRequest {
        tail: Some(lines.min(10_000)),
        follow: false,
        timestamps: true,
    };
    let mut stream = cluster
        .log(&who.me.account, &job, &selected, request)
        .await?;
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.map_err(|err| {
            tracing::error!(error = %err, "reading a log tail");
            AppError::Internal
        })?);
    }
    Ok(LogView {
        pods,
        pod: Some(selected),
        tail: String::from_utf8_lossy(&out).into_owned(),
    })
}
