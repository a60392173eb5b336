//! The stall watcher: one more controller on the backbone (lease
//! `stall-watch`). Every [`TICK`] it reads each running job's signs of life
//! (the newest line of its log through its backend, its newest metric
//! point, its newest resource sample with CPU in use), judges them with
//! [`app::models::judge_stall`], and marks a job stalled (a line in its
//! history, a `stalled` notice for subscribers) or clears the mark when the
//! job moves again.

use std::time::Duration;

use app::error::AppError;
use app::models::{judge_stall, stall_message, Notice, NotifyEvent, NotifySubject, StallVerdict};
use app::ports::Services;
use async_trait::async_trait;

use crate::controller::Controller;
use crate::storage::notifications::NotifyStore;
use crate::storage::stalls::{RunningJob, StallStore};
use crate::time::now_ms;

/// A pass runs at least this often: stalls are judged in minutes.
pub const TICK: Duration = Duration::from_secs(30);

/// Marks jobs stalled after `after` without a sign of life.
pub struct StallWatch {
    store: StallStore,
    notices: NotifyStore,
    after: Duration,
}

impl StallWatch {
    /// Watching the jobs in `pool`.
    pub fn new(pool: crate::storage::db::Pool, after: Duration) -> Self {
        Self {
            store: StallStore::new(pool.clone()),
            notices: NotifyStore::new(pool),
            after,
        }
    }

    /// Runs until the process ends: a pass every [`TICK`] and on job events.
    pub async fn run(self, services: Services, pulse: crate::telemetry::Pulse) {
        let wake = std::sync::Arc::new(tokio::sync::Notify::new());
        crate::controller::drive(self, services, wake, TICK, pulse).await;
    }

    /// One pass as if it were `now` (ms): the watcher's own passes use the
    /// clock; a test judges a job half an hour ahead.
    pub async fn pass_at(&self, services: &Services, now: i64) {
        let jobs = match self.store.running().await {
            Ok(jobs) => jobs,
            Err(err) => {
                tracing::warn!(error = %err, "reading the running jobs for stalls");
                return;
            }
        };
        for job in jobs {
            if let Err(err) = self.check(services, job.clone(), now).await {
                tracing::warn!(error = %err, account = %job.account.name, job = %job.name, "checking a job for a stall");
            }
        }
    }

    async fn check(&self, services: &Services, job: RunningJob, now: i64) -> Result<(), AppError> {
        let mut activity = job.activity;
        let after_ms = i64::try_from(self.after.as_millis()).unwrap_or(i64::MAX);
        // The log is read only where the rest says the job may be quiet:
        // most running jobs write metrics or use CPU, and reading a pod's
        // log on Kubernetes is a request to the API server.
        let quiet = activity.last().is_some_and(|last| now - last >= after_ms);
        if quiet || job.stalled_since.is_some() {
            activity.log_at = services
                .cluster
                .last_log_at(&job.account, &job.name)
                .await?;
        }
        match judge_stall(&activity, job.stalled_since, now, after_ms) {
            StallVerdict::Stall { since } => {
                let message = stall_message(since, now);
                if self.store.mark(job.id, since, now, &message).await? {
                    tracing::info!(account = %job.account.name, job = %job.name, %message, "job stalled");
                    let notice = Notice {
                        account: job.account.name.clone(),
                        subject: NotifySubject::Job {
                            name: job.name.clone(),
                        },
                        event: NotifyEvent::Stalled,
                        message,
                        at: now,
                    };
                    self.notices
                        .raise(
                            job.account.id,
                            &format!("stalled:{}:{since}", job.id),
                            &notice,
                        )
                        .await?;
                }
            }
            StallVerdict::Resume => {
                let message = "Moving again: a log line, a metric point or CPU use.";
                if self.store.clear(job.id, now, message).await? {
                    tracing::info!(account = %job.account.name, job = %job.name, "stalled job moves again");
                }
            }
            StallVerdict::Same => {}
        }
        Ok(())
    }
}

#[async_trait]
impl Controller for StallWatch {
    async fn pass(&self, services: &Services) {
        self.pass_at(services, now_ms()).await;
    }
}
