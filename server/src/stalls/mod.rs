//! The stall watcher: one more controller on the backbone (lease
//! `stall-watch`). Every [`TICK`] it reads each running job's signs of life
//! (the newest line of its log through its backend, its newest metric
//! point, its newest resource sample with CPU in use), judges them with
//! [`app::models::judge_stall`], and marks a job stalled (a line in its
//! history, a `stalled` notice for subscribers) or clears the mark when the
//! job moves again. In the same pass it judges the GPUs a job holds:
//! every utilisation sample of the window under 5% marks them idle (a
//! line in its history, an `idle_gpus` notice, the site admin's list), one
//! sample at 5% or more clears the mark.

use std::time::Duration;

use app::error::AppError;
use app::models::{
    idle_gpus_message, judge_idle_gpus, judge_stall, stall_message, GpuWindow, Notice, NotifyEvent,
    NotifySubject, StallVerdict,
};
use app::models::{IdleGpuJob, Me};
use app::ports::{Services, Watchdog};
use async_trait::async_trait;

use crate::controller::Controller;
use crate::storage::notifications::NotifyStore;
use crate::storage::stalls::{RunningJob, StallStore};
use crate::time::now_ms;

/// A pass runs at least this often: stalls are judged in minutes.
pub const TICK: Duration = Duration::from_secs(30);

/// The watcher's marks in the console's database.
pub struct SqlWatchdog {
    store: StallStore,
}

impl SqlWatchdog {
    /// Marks in `pool`.
    pub fn new(pool: crate::storage::db::Pool) -> Self {
        Self {
            store: StallStore::new(pool),
        }
    }
}

#[async_trait]
impl Watchdog for SqlWatchdog {
    async fn idle_gpu_jobs(&self, me: &Me) -> Result<Vec<IdleGpuJob>, AppError> {
        if !me.site_admin {
            return Err(AppError::forbidden(
                "Only site admins see the jobs of every account.",
            ));
        }
        self.store.idle_gpu_jobs().await
    }
}

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

    /// The window, ms.
    fn after_ms(&self) -> i64 {
        i64::try_from(self.after.as_millis()).unwrap_or(i64::MAX)
    }

    /// One pass as if it were `now` (ms): the watcher's own passes use the
    /// clock; a test judges a job half an hour ahead.
    pub async fn pass_at(&self, services: &Services, now: i64) {
        let jobs = match self
            .store
            .running(now.saturating_sub(self.after_ms()))
            .await
        {
            Ok(jobs) => jobs,
            Err(err) => {
                tracing::warn!(error = %err, "reading the running jobs for stalls");
                return;
            }
        };
        for job in jobs {
            if let Err(err) = self.check(services, &job, now).await {
                tracing::warn!(error = %err, account = %job.account.name, job = %job.name, "checking a job for a stall");
            }
            if let Err(err) = self.check_gpus(&job, now).await {
                tracing::warn!(error = %err, account = %job.account.name, job = %job.name, "checking a job's GPUs");
            }
        }
    }

    async fn check(&self, services: &Services, job: &RunningJob, now: i64) -> Result<(), AppError> {
        let mut activity = job.activity;
        let after_ms = self.after_ms();
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
                    self.tell(job, NotifyEvent::Stalled, since, message, now)
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

impl StallWatch {
    /// Raises a notice of `event` about `job`, once per mark (`since`).
    async fn tell(
        &self,
        job: &RunningJob,
        event: NotifyEvent,
        since: i64,
        message: String,
        now: i64,
    ) -> Result<(), AppError> {
        let notice = Notice {
            account: job.account.name.clone(),
            subject: NotifySubject::Job {
                name: job.name.clone(),
            },
            event,
            message,
            at: now,
        };
        let key = format!("{}:{}:{since}", event.as_str(), job.id);
        self.notices.raise(job.account.id, &key, &notice).await
    }

    async fn check_gpus(&self, job: &RunningJob, now: i64) -> Result<(), AppError> {
        let after_ms = self.after_ms();
        let window = GpuWindow {
            gpus: job.gpus,
            held_long_enough: (job.activity.started_at).is_some_and(|t| now - t >= after_ms),
            samples: job.gpu_samples,
            peak: job.gpu_peak,
        };
        match judge_idle_gpus(&window, job.gpus_idle_since, now, after_ms) {
            StallVerdict::Stall { since } => {
                let message = idle_gpus_message(job.gpus, since, now);
                if self
                    .store
                    .mark_idle_gpus(job.id, since, now, &message)
                    .await?
                {
                    tracing::info!(account = %job.account.name, job = %job.name, %message, "job holds idle GPUs");
                    self.tell(job, NotifyEvent::IdleGpus, since, message, now)
                        .await?;
                }
            }
            StallVerdict::Resume => {
                self.store
                    .clear_idle_gpus(job.id, now, "Its GPUs are in use again.")
                    .await?;
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
