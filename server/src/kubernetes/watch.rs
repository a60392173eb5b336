//! Keeps the job store in step with the cluster: one watch on every pod the
//! console made (label `app.kubernetes.io/managed-by=paddlecloud`), each
//! change written to its replica's row, and the job's outcome decided as
//! the local executor decides it: a job succeeds when every trainer has
//! exited 0, fails when a trainer fails or a parameter server ends first.

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use app::error::AppError;
use app::models::quantity::{memory_quantity, parse_memory_bytes};
use app::models::{JobRole, JobStatus, Pod, PodPhase};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod as KubePod;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Api;

use super::objects::{label, CONSOLE, JOB_ID, MANAGED_BY, REPLICA};
use super::Inner;
use crate::kubernetes::pods::unschedulable;
use crate::storage::jobs::PodUpdate;

/// Container states that mean the pod will never run: shown as a failure
/// with Kubernetes' reason instead of Pending forever.
const STUCK: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// Watches until the backend is dropped.
pub async fn pods(inner: Weak<Inner>) {
    let Some(client) = inner.upgrade().map(|i| i.client.clone()) else {
        return;
    };
    let api: Api<KubePod> = Api::all(client);
    let config = watcher::Config::default().labels(&format!("{MANAGED_BY}={CONSOLE}"));
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    // Jobs seen during a (re)list: after it, active jobs without pods lost them.
    let mut seen: HashSet<i64> = HashSet::new();
    while let Some(event) = events.next().await {
        let Some(inner) = inner.upgrade() else { return };
        match event {
            Ok(Event::Init) => seen.clear(),
            Ok(Event::InitApply(pod)) => {
                if let Some((id, _)) = identity(&pod) {
                    seen.insert(id);
                }
                apply(&inner, &pod).await;
            }
            Ok(Event::InitDone) => lost(&inner, &seen).await,
            Ok(Event::Apply(pod)) => apply(&inner, &pod).await,
            // A deleted pod's last state came as an Apply; a replica's Job
            // makes a replacement if the pod was evicted.
            Ok(Event::Delete(_)) => {}
            Err(err) => tracing::debug!(error = %err, "pod watch interrupted; retrying"),
        }
    }
}

/// The console's job id and replica name of a pod.
fn identity(pod: &KubePod) -> Option<(i64, String)> {
    let labels = &pod.metadata.labels;
    let id = label(labels, JOB_ID)?.parse().ok()?;
    Some((id, label(labels, REPLICA)?.to_owned()))
}

fn ms(t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> i64 {
    t.0.as_millisecond()
}

/// What a pod's status means for its replica's row.
pub(super) fn update_of(pod: &KubePod) -> PodUpdate {
    let status = pod.status.clone().unwrap_or_default();
    let container = status
        .container_statuses
        .as_ref()
        .and_then(|cs| cs.first())
        .cloned();
    let state = container
        .as_ref()
        .and_then(|c| c.state.clone())
        .unwrap_or_default();
    let started = state
        .running
        .as_ref()
        .and_then(|r| r.started_at.as_ref())
        .or(state
            .terminated
            .as_ref()
            .and_then(|t| t.started_at.as_ref()))
        .map(ms);
    match status.phase.as_deref() {
        Some("Running") => PodUpdate {
            phase: Some(PodPhase::Running),
            started_at: started.or(status.start_time.as_ref().map(ms)),
            ..Default::default()
        },
        Some(phase @ ("Succeeded" | "Failed")) => {
            let term = state.terminated.clone();
            let code = term.as_ref().map(|t| t.exit_code);
            let message = match (&term, code) {
                (_, Some(0)) => String::new(),
                (Some(t), Some(code)) => {
                    let detail = t.message.clone().or(t.reason.clone()).unwrap_or_default();
                    let detail = detail.trim().lines().last().unwrap_or("").to_owned();
                    if detail.starts_with("Could not start ") {
                        // The metric-file shipper's wrapper said so itself
                        // (`objects::SHIP`): it started, the program did not.
                        detail
                    } else if t.reason.as_deref() == Some("StartError")
                        || t.reason.as_deref() == Some("ContainerCannotRun")
                    {
                        let program = pod
                            .spec
                            .as_ref()
                            .and_then(|s| s.containers.first())
                            .and_then(|c| c.command.as_ref())
                            .and_then(|c| c.first().cloned())
                            .unwrap_or_default();
                        format!("Could not start {program}: {detail}")
                    } else if t.reason.as_deref() == Some("OOMKilled") {
                        // As the local executor says it: the limit, in the
                        // units the job was asked with.
                        let limit = pod
                            .spec
                            .as_ref()
                            .and_then(|s| s.containers.first())
                            .and_then(|c| c.resources.as_ref()?.limits.as_ref()?.get("memory"))
                            .and_then(|q| parse_memory_bytes("memory", &q.0).ok())
                            .map(|bytes| format!(" {}", memory_quantity(bytes)))
                            .unwrap_or_default();
                        format!("OOMKilled: exceeded its memory limit{limit}")
                    } else {
                        format!("exited with code {code}")
                    }
                }
                _ => status
                    .message
                    .clone()
                    .or(status.reason.clone())
                    .unwrap_or_else(|| "failed".into()),
            };
            PodUpdate {
                phase: Some(if phase == "Succeeded" {
                    PodPhase::Succeeded
                } else {
                    PodPhase::Failed
                }),
                exit_code: code,
                started_at: started.or(status.start_time.as_ref().map(ms)),
                finished_at: term
                    .as_ref()
                    .and_then(|t| t.finished_at.as_ref())
                    .map(ms)
                    .or(Some(crate::time::now_ms())),
                message: Some(message),
                ..Default::default()
            }
        }
        _ => {
            let waiting = state.waiting.clone().unwrap_or_default();
            match waiting.reason.as_deref() {
                Some(reason) if STUCK.contains(&reason) => PodUpdate {
                    phase: Some(PodPhase::Failed),
                    finished_at: Some(crate::time::now_ms()),
                    message: Some(format!("{reason}: {}", waiting.message.unwrap_or_default())),
                    ..Default::default()
                },
                _ => {
                    // Not placed yet: the scheduler says why ("0/3 nodes are
                    // available: 3 Insufficient nvidia.com/gpu.").
                    let unschedulable = unschedulable(&status);
                    PodUpdate {
                        phase: Some(PodPhase::Pending),
                        message: waiting.message.or(status.message).or(unschedulable),
                        ..Default::default()
                    }
                }
            }
        }
    }
}

async fn apply(inner: &Arc<Inner>, pod: &KubePod) {
    let Some((job_id, replica)) = identity(pod) else {
        return;
    };
    if let Err(err) = apply_to(inner, pod, job_id, &replica).await {
        if !matches!(err, AppError::NotFound { .. }) {
            tracing::warn!(error = %err, job_id, replica, "recording a pod's state");
        }
    }
}

async fn apply_to(
    inner: &Arc<Inner>,
    pod: &KubePod,
    job_id: i64,
    replica: &str,
) -> Result<(), AppError> {
    let stored = inner.store.by_id(job_id).await?;
    // Another console's job, or one already decided (or being finished):
    // its rows are final.
    if stored.job.cluster != inner.name
        || !stored.job.status.is_active()
        || inner
            .finishing
            .lock()
            .expect("finishing lock")
            .contains(&job_id)
    {
        return Ok(());
    }
    let account = inner.store.account_of(stored.account_id).await?;
    if pod.metadata.namespace.as_deref() != Some(account.namespace.as_str())
        || inner.is_preempted_pod(job_id, pod.metadata.uid.as_deref())
    {
        return Ok(());
    }
    let update = update_of(pod);
    let pods = inner.store.pods(job_id).await?;
    let Some(row) = pods.iter().find(|p| p.name == replica) else {
        return Ok(());
    };
    if !changes(row, &update) {
        return Ok(());
    }
    let ended = matches!(update.phase, Some(PodPhase::Succeeded | PodPhase::Failed));
    inner.store.update_pod(job_id, replica, update).await?;
    if ended {
        inner
            .collect_log(
                &account.name,
                &stored.job.name,
                job_id,
                &account.namespace,
                replica,
            )
            .await;
    }
    let pods = inner.store.pods(job_id).await?;
    match outcome(&pods) {
        Some((status, message)) => {
            let why = if status == JobStatus::Succeeded {
                "Stopped after the trainers finished."
            } else {
                "Stopped because the job failed."
            };
            let inner = inner.clone();
            // Finishing collects logs and deletes workloads: off the watch loop.
            tokio::spawn(async move {
                if let Err(err) = inner.finish(&account, job_id, status, &message, why).await {
                    tracing::warn!(error = %err, job_id, "finishing a job");
                }
            });
        }
        None => {
            // Running once every replica runs (or has already ended), as
            // locally: a replica still waiting keeps the job Pending.
            if stored.job.status == JobStatus::Pending
                && pods.iter().all(|p| p.phase != PodPhase::Pending)
            {
                inner
                    .store
                    .set_status(job_id, JobStatus::Running, "")
                    .await?;
            } else if stored.job.status == JobStatus::Pending {
                // Why it waits, where the job table shows it (as locally).
                let reason = pods
                    .iter()
                    .find(|p| p.phase == PodPhase::Pending && !p.message.is_empty())
                    .map(|p| format!("{}: {}", p.name, p.message))
                    .map(|r| match inner.preempted_why(job_id) {
                        Some(why) => format!("{why}; queued again, {r}"),
                        None => r,
                    });
                if let Some(reason) = reason.filter(|r| *r != stored.job.message) {
                    inner
                        .store
                        .set_status(job_id, JobStatus::Pending, &reason)
                        .await?;
                    // It cannot be placed: preemption may make room.
                    let unplaced = pod.status.as_ref().and_then(unschedulable).is_some();
                    if inner.preemption.is_some() && unplaced {
                        inner.note_unplaced(job_id);
                        let (inner, account) = (inner.clone(), account.clone());
                        tokio::spawn(async move {
                            if let Err(err) = inner.preempt_for(&account, job_id).await {
                                tracing::warn!(error = %err, job_id, "preempting for a job");
                            }
                        });
                    }
                }
            }
            inner.emit(account.id, &stored.job.name);
        }
    }
    Ok(())
}

/// Whether `update` says something new about `row`. A replica never goes
/// back: once ended or stopped, later events about it are history.
fn changes(row: &Pod, update: &PodUpdate) -> bool {
    let rank = |p: PodPhase| match p {
        PodPhase::Pending => 0,
        PodPhase::Running => 1,
        _ => 2,
    };
    match update.phase {
        Some(p) if rank(p) > rank(row.phase) => true,
        Some(p) if p == row.phase && p == PodPhase::Pending => {
            update.message.as_ref().is_some_and(|m| *m != row.message)
        }
        _ => false,
    }
}

/// The job's outcome once it is decided, from its replicas' states.
pub fn outcome(pods: &[Pod]) -> Option<(JobStatus, String)> {
    let trainers: Vec<&Pod> = pods.iter().filter(|p| p.role == JobRole::Trainer).collect();
    if let Some(failed) = trainers.iter().find(|p| p.phase == PodPhase::Failed) {
        return Some((
            JobStatus::Failed,
            format!("{} {}.", failed.name, failed.message),
        ));
    }
    if let Some(ps) = pods.iter().find(|p| {
        p.role == JobRole::Pserver && matches!(p.phase, PodPhase::Failed | PodPhase::Succeeded)
    }) {
        let why = if ps.phase == PodPhase::Succeeded {
            "exited before the trainers finished".to_owned()
        } else {
            ps.message.clone()
        };
        if !trainers.iter().all(|p| p.phase == PodPhase::Succeeded) {
            return Some((JobStatus::Failed, format!("{} {why}.", ps.name)));
        }
    }
    if !trainers.is_empty() && trainers.iter().all(|p| p.phase == PodPhase::Succeeded) {
        return Some((JobStatus::Succeeded, String::new()));
    }
    None
}

/// Active jobs of this cluster that have no pods after a full list: their
/// pods were deleted behind the console's back (or while it was away).
async fn lost(inner: &Arc<Inner>, seen: &HashSet<i64>) {
    let Ok(active) = inner.store.active(&inner.name).await else {
        return;
    };
    for job in active {
        if seen.contains(&job.id) {
            continue;
        }
        // Just submitted: its pods may not exist yet.
        if crate::time::now_ms() - job.job.created_at < 60_000 {
            continue;
        }
        let Ok(account) = inner.store.account_of(job.account_id).await else {
            continue;
        };
        let message = "Its pods disappeared from the cluster.";
        if let Err(err) = inner
            .finish(
                &account,
                job.id,
                JobStatus::Failed,
                message,
                "Gone from the cluster.",
            )
            .await
        {
            tracing::warn!(error = %err, job = job.job.name, "marking a lost job failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, role: JobRole, phase: PodPhase, message: &str) -> Pod {
        Pod {
            name: name.into(),
            role,
            index: 0,
            phase,
            exit_code: None,
            started_at: None,
            finished_at: None,
            message: message.into(),
            gpus: Vec::new(),
        }
    }

    #[test]
    fn a_pod_the_scheduler_cannot_place_waits_with_the_schedulers_reason() {
        let pod: KubePod = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "j-trainer-0" },
            "status": {
                "phase": "Pending",
                "conditions": [{
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
                }]
            }
        }))
        .unwrap();
        let update = update_of(&pod);
        assert_eq!(update.phase, Some(PodPhase::Pending));
        assert_eq!(
            update.message.as_deref(),
            Some("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
        );
    }

    #[test]
    fn a_container_killed_for_its_memory_says_so_with_its_limit() {
        let pod: KubePod = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "big-trainer-0-x" },
            "spec": { "containers": [{ "name": "paddle",
                "resources": { "limits": { "memory": "33554432" } } }] },
            "status": { "phase": "Failed", "containerStatuses": [{
                "name": "paddle", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                "state": { "terminated": { "exitCode": 137, "reason": "OOMKilled" } } }] }
        }))
        .unwrap();
        let update = update_of(&pod);
        assert_eq!(update.exit_code, Some(137));
        assert_eq!(
            update.message.as_deref(),
            Some("OOMKilled: exceeded its memory limit 32Mi")
        );
    }

    #[test]
    fn a_job_is_decided_by_its_trainers_and_an_early_parameter_server() {
        use JobRole::*;
        use PodPhase::*;
        let running = [
            pod("ps-0", Pserver, Running, ""),
            pod("trainer-0", Trainer, Running, ""),
        ];
        assert_eq!(outcome(&running), None);
        let done = [
            pod("ps-0", Pserver, Running, ""),
            pod("trainer-0", Trainer, Succeeded, ""),
        ];
        assert_eq!(outcome(&done), Some((JobStatus::Succeeded, String::new())));
        let bad = [
            pod("ps-0", Pserver, Running, ""),
            pod("trainer-0", Trainer, Failed, "exited with code 3"),
        ];
        assert_eq!(outcome(&bad).unwrap().1, "trainer-0 exited with code 3.");
        let early = [
            pod("ps-0", Pserver, Succeeded, ""),
            pod("trainer-0", Trainer, Running, ""),
        ];
        assert_eq!(
            outcome(&early).unwrap().1,
            "ps-0 exited before the trainers finished."
        );
    }
}
