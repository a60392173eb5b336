//! Experiments: searches over a template's parameters. They are kept in the
//! database ([`SqlExperiments`], the port) and moved on by the controller
//! ([`ExperimentController`]), which holds nothing the database does not:
//! a trial's row is claimed before its job is submitted, so a restarted
//! console, or the replica that takes the lease over, carries on where the
//! last pass left off and submits no trial twice. The search itself is
//! [`search`], pure.

mod controller;
pub mod search;

use std::sync::Arc;

use app::error::AppError;
use app::models::{
    trial_job_name, was_retried, Account, Experiment, ExperimentSpec, ExperimentStatus, Me,
    TrialStatus, MAX_TRIALS,
};
use app::ports::{Cluster, ExperimentEvent, Experiments};
use async_trait::async_trait;
use tokio::sync::{broadcast, Notify};

pub use controller::ExperimentController;

use crate::storage::experiments::{ExperimentStore, TrialUpdate};

/// Tells live views that experiment `name` of `account_id` changed
/// (nobody listening is fine).
fn changed(events: &broadcast::Sender<ExperimentEvent>, account_id: i64, name: &str) {
    let _ = events.send(ExperimentEvent::new(account_id, name));
}

/// Stops `job` of `account`, if it still runs.
async fn stop_job(cluster: &dyn Cluster, account: &Account, job: &str) -> Result<(), AppError> {
    match cluster.stop(account, job).await {
        Ok(_) | Err(AppError::NotFound { .. }) | Err(AppError::Conflict { .. }) => Ok(()),
        Err(err) => Err(err),
    }
}

/// Experiments in the console's database.
pub struct SqlExperiments {
    store: ExperimentStore,
    notices: crate::storage::notifications::NotifyStore,
    cluster: Arc<dyn Cluster>,
    wake: Arc<Notify>,
    events: broadcast::Sender<ExperimentEvent>,
}

impl SqlExperiments {
    /// Experiments in `pool`; stopping one stops its trials on `cluster`.
    pub fn new(pool: crate::storage::db::Pool, cluster: Arc<dyn Cluster>) -> Self {
        Self {
            store: ExperimentStore::new(pool.clone()),
            notices: crate::storage::notifications::NotifyStore::new(pool),
            cluster,
            wake: Arc::new(Notify::new()),
            events: broadcast::channel(256).0,
        }
    }

    /// The controller of these experiments (start it with
    /// [`ExperimentController::run`]).
    pub fn controller(&self) -> ExperimentController {
        ExperimentController::new(
            self.store.clone(),
            self.notices.clone(),
            self.wake.clone(),
            self.events.clone(),
        )
    }

    /// Asks the controller for a pass now: an experiment or a job changed
    /// in another replica (this process's own changes wake it already).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Tells the controller and live views that `name` changed.
    fn moved(&self, account_id: i64, name: &str) {
        self.wake.notify_one();
        changed(&self.events, account_id, name);
    }

    async fn read(&self, account: &Account, name: &str) -> Result<Experiment, AppError> {
        Ok(self.store.get(account.id, name).await?.experiment)
    }

    /// Moves a going experiment from `from` to `to`, or says why not.
    async fn switch(
        &self,
        me: &Me,
        name: &str,
        from: ExperimentStatus,
        to: ExperimentStatus,
        message: &str,
    ) -> Result<Experiment, AppError> {
        me.role.require_change()?;
        let stored = self.store.get(me.account.id, name).await?;
        let now = stored.experiment.status;
        if now != from || !self.store.set_status(stored.id, to, message).await? {
            return Err(AppError::conflict(
                "name",
                format!("“{name}” is {}, not {}.", now.as_str(), from.as_str()),
            ));
        }
        tracing::info!(account = %me.account.name, experiment = name, status = to.as_str(), user = %me.email, "experiment switched");
        self.moved(me.account.id, name);
        self.read(&me.account, name).await
    }
}

#[async_trait]
impl Experiments for SqlExperiments {
    async fn create(&self, me: &Me, spec: &ExperimentSpec) -> Result<Experiment, AppError> {
        let mut spec = spec.clone();
        if spec.seed.is_none() {
            let mut bytes = [0u8; 8];
            getrandom::fill(&mut bytes).map_err(|err| {
                tracing::error!(error = %err, "drawing an experiment's seed");
                AppError::Internal
            })?;
            // Below 2^53, so that it survives a trip through JSON numbers
            // in any client.
            spec.seed = Some(u64::from_le_bytes(bytes) >> 11);
        }
        self.store.insert(me, &spec).await?;
        tracing::info!(account = %me.account.name, experiment = %spec.name, template = %spec.template, user = %me.email, "experiment created");
        self.moved(me.account.id, &spec.name);
        self.read(&me.account, &spec.name).await
    }

    async fn list(&self, account: &Account) -> Result<Vec<Experiment>, AppError> {
        Ok(self
            .store
            .list(account.id)
            .await?
            .into_iter()
            .map(|s| s.experiment)
            .collect())
    }

    async fn get(&self, account: &Account, name: &str) -> Result<Experiment, AppError> {
        self.read(account, name).await
    }

    async fn pause(&self, me: &Me, name: &str) -> Result<Experiment, AppError> {
        let why = format!("Paused by {}.", me.email);
        self.switch(
            me,
            name,
            ExperimentStatus::Running,
            ExperimentStatus::Paused,
            &why,
        )
        .await
    }

    async fn resume(&self, me: &Me, name: &str) -> Result<Experiment, AppError> {
        self.switch(
            me,
            name,
            ExperimentStatus::Paused,
            ExperimentStatus::Running,
            "",
        )
        .await
    }

    async fn stop(&self, me: &Me, name: &str) -> Result<Experiment, AppError> {
        me.role.require_change()?;
        let stored = self.store.get(me.account.id, name).await?;
        let why = format!("Stopped by {}.", me.email);
        if !self
            .store
            .set_status(stored.id, ExperimentStatus::Stopped, &why)
            .await?
        {
            return Err(AppError::conflict(
                "name",
                format!("“{name}” has ended already."),
            ));
        }
        // Read again after the switch: a trial the controller claimed in
        // between is stopped too (one it submits from now on, it stops
        // itself when it sees the experiment has ended).
        let now = self.store.get(me.account.id, name).await?;
        for trial in now
            .experiment
            .trials
            .iter()
            .filter(|t| t.status.is_active())
        {
            stop_job(&*self.cluster, &me.account, &trial.job).await?;
            let update = TrialUpdate {
                status: Some(TrialStatus::Stopped),
                message: Some("Its experiment was stopped.".to_owned()),
                ..Default::default()
            };
            self.store
                .update_trial(stored.id, trial.number, &update)
                .await?;
        }
        tracing::info!(account = %me.account.name, experiment = name, user = %me.email, "experiment stopped");
        self.moved(me.account.id, name);
        self.read(&me.account, name).await
    }

    async fn extend(&self, me: &Me, name: &str, more: u32) -> Result<Experiment, AppError> {
        me.role.require_change()?;
        let stored = self.store.get(me.account.id, name).await?;
        let e = &stored.experiment;
        let total = e.spec.max_trials.saturating_add(more);
        if more == 0 || total > MAX_TRIALS {
            return Err(AppError::invalid(
                "more",
                format!(
                    "Add 1 to {} trials: it has {} and runs at most {MAX_TRIALS}.",
                    MAX_TRIALS.saturating_sub(e.spec.max_trials),
                    e.spec.max_trials
                ),
            ));
        }
        if e.status == ExperimentStatus::Failed {
            return Err(AppError::conflict(
                "name",
                format!("“{name}” failed: run its failed trials again instead."),
            ));
        }
        let mut spec = e.spec.clone();
        spec.max_trials = total;
        if e.status.is_active() {
            self.store.set_spec(stored.id, &spec).await?;
        } else if !self.store.reopen(stored.id, &spec).await? {
            // It was reopened in between: the new total still applies.
            self.store.set_spec(stored.id, &spec).await?;
        }
        tracing::info!(account = %me.account.name, experiment = name, trials = total, user = %me.email, "experiment extended");
        self.moved(me.account.id, name);
        self.read(&me.account, name).await
    }

    async fn retry_failed(&self, me: &Me, name: &str) -> Result<Experiment, AppError> {
        me.role.require_change()?;
        let stored = self.store.get(me.account.id, name).await?;
        let e = &stored.experiment;
        let again: Vec<usize> = (0..e.trials.len())
            .filter(|&i| e.trials[i].status == TrialStatus::Failed && !was_retried(&e.trials, i))
            .collect();
        if again.is_empty() {
            return Err(AppError::conflict(
                "name",
                format!("“{name}” has no failed trial to run again."),
            ));
        }
        let mut number = e.trials.iter().map(|t| t.number).max().unwrap_or(0);
        for i in again {
            number += 1;
            let trial = &e.trials[i];
            let job = trial_job_name(name, number);
            if !self
                .store
                .claim_trial(stored.id, number, &job, &trial.values)
                .await?
            {
                return Err(AppError::conflict(
                    "name",
                    format!("“{name}” changed meanwhile: try again."),
                ));
            }
        }
        if !e.status.is_active() {
            self.store.reopen(stored.id, &e.spec).await?;
        }
        tracing::info!(account = %me.account.name, experiment = name, user = %me.email, "experiment's failed trials run again");
        self.moved(me.account.id, name);
        self.read(&me.account, name).await
    }

    fn subscribe(&self) -> broadcast::Receiver<ExperimentEvent> {
        self.events.subscribe()
    }
}
