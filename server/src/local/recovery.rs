//! After a restart: jobs the previous console process was running have lost
//! their supervisor. They are marked failed, never left showing Running, and
//! any of their processes still alive are killed. Jobs that were still
//! waiting in the queue lose nothing: they are queued again.

use app::error::AppError;
use app::models::{JobStatus, PodPhase};
use nix::sys::signal::Signal;

use super::process::signal_group;
use super::LOCAL;
use crate::storage::jobs::{JobStore, PodUpdate, StoredJob};
use crate::time::now_ms;

/// The environment marker that proves a process is that pod's, so a reused
/// pid is never killed by mistake.
pub fn pod_marker(job_id: i64, pod: &str) -> String {
    format!("PADDLECLOUD_POD_UID={job_id}/{pod}")
}

fn is_our_pod(pid: i64, marker: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
        .unwrap_or(false)
}

/// Marks the jobs a previous run was running failed and kills what is left
/// of them; returns the jobs that were still waiting for room (none of
/// their replicas started), oldest first, to be queued again.
pub async fn recover(store: &JobStore) -> Result<Vec<StoredJob>, AppError> {
    let mut queued = Vec::new();
    for stale in store.active(LOCAL).await? {
        let pids = store.pod_pids(stale.id).await?;
        let waiting = stale.job.status == JobStatus::Pending
            && pids.is_empty()
            && store
                .pods(stale.id)
                .await?
                .iter()
                .all(|p| p.phase == PodPhase::Pending);
        if waiting {
            queued.push(stale);
            continue;
        }
        for (pod, pid) in pids {
            if is_our_pod(pid, &pod_marker(stale.id, &pod)) {
                signal_group(pid, Signal::SIGKILL);
            }
        }
        let now = now_ms();
        for pod in store.pods(stale.id).await? {
            if !pod.phase.is_finished() {
                store
                    .update_pod(
                        stale.id,
                        &pod.name,
                        PodUpdate {
                            phase: Some(PodPhase::Failed),
                            finished_at: Some(now),
                            message: Some("The console restarted while this replica ran.".into()),
                            ..Default::default()
                        },
                    )
                    .await?;
            }
        }
        store
            .set_status(
                stale.id,
                JobStatus::Failed,
                "The console restarted while this job ran; its processes were stopped.",
            )
            .await?;
        tracing::warn!(job = %stale.job.name, account_id = stale.account_id, "marked failed after a restart");
    }
    queued.sort_by_key(|j| (j.job.created_at, j.id));
    Ok(queued)
}
