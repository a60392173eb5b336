//! Jobs' time limits on Kubernetes, kept by the console as the local
//! executor keeps them: the clock starts once the job's replicas run (each
//! run afresh after a preemption), and past the limit the job's workloads
//! are removed and it fails saying so. A replica Job's own
//! `activeDeadlineSeconds` is not used: it counts from the Job's creation,
//! time spent waiting for room included, and the pods it ends are deleted
//! without a final phase the console could read (Kubernetes 1.20).

use std::sync::Arc;

use app::error::AppError;
use app::models::{JobStatus, PodPhase};

use super::Inner;
use crate::time::now_ms;

/// What a job that ran past its limit says (as the local executor says it).
pub fn past_limit(said: &str) -> String {
    format!("Ran past its time limit of {said}: stopped.")
}

impl Inner {
    /// When the job's current run started: its running replicas' earliest
    /// start (a preempted job's replicas start afresh).
    pub(super) async fn run_started(&self, job_id: i64) -> Result<Option<i64>, AppError> {
        let pods = self.store.pods(job_id).await?;
        Ok(pods
            .iter()
            .filter(|p| p.phase == PodPhase::Running)
            .filter_map(|p| p.started_at)
            .min())
    }

    /// Ends this console's running jobs that are past their time limit.
    pub(super) async fn end_past_limits(self: &Arc<Self>) -> Result<(), AppError> {
        let now = now_ms();
        for stale in self.store.active(&self.name).await? {
            let spec = &stale.job.spec;
            let Some(limit) = spec.max_runtime_seconds() else {
                continue;
            };
            if stale.job.status != JobStatus::Running {
                continue;
            }
            let Some(started) = self.run_started(stale.id).await? else {
                continue;
            };
            if now < started.saturating_add(limit.saturating_mul(1000) as i64) {
                continue;
            }
            let account = self.store.account_of(stale.account_id).await?;
            let said = spec.max_runtime.clone().unwrap_or_default();
            tracing::info!(job = %stale.job.name, account = %account.name, "past its time limit");
            self.finish(
                &account,
                stale.id,
                JobStatus::Failed,
                &past_limit(&said),
                "Stopped at the job's time limit.",
            )
            .await?;
        }
        Ok(())
    }
}
