//! Pipelines: runs kept in the database ([`SqlPipelines`], the port) and
//! the scheduler that moves them on ([`PipelineScheduler`]). The scheduler holds no
//! state of its own: each pass reads every running run with its nodes'
//! jobs, decides with [`app::models::next_steps`] and writes what changed,
//! so a restarted console (or a second replica) carries on where the last
//! left off. A node's start is claimed in the database first, so it is
//! submitted once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use app::error::AppError;
use app::models::pipelines::{node_job_name, Output, Placeholder};
use app::models::{
    Account, JobStatus, Me, NodeStatus, Notice, NotifyEvent, NotifySubject, PipelineRun,
    PipelineSpec, RunStatus, Step,
};
use app::ports::{Cluster, Credential, PipelineEvent, Pipelines, Principal, Services};
use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{broadcast, Notify};

use crate::controller::Controller;
use crate::storage::notifications::NotifyStore;
use crate::storage::pipelines::{JobNow, NodeUpdate, PipelineStore, StoredRun};
use crate::time::now_ms;

/// How long a node's claimed job may be missing before the node counts it
/// lost (the console stopped between claiming and submitting it, or the
/// job was deleted).
const LOST_AFTER_MS: i64 = 60_000;
/// How long a node waits before trying again when the quota is full.
const QUOTA_WAIT_MS: i64 = 15_000;
/// A pass runs at least this often (backoffs end, quota frees up).
const TICK: Duration = Duration::from_secs(1);

/// Pipeline runs in the console's database.
pub struct SqlPipelines {
    store: PipelineStore,
    notices: NotifyStore,
    cluster: Arc<dyn Cluster>,
    wake: Arc<Notify>,
    events: broadcast::Sender<PipelineEvent>,
}

/// Tells live views that `run` of `account_id` changed (nobody listening is
/// fine).
fn changed(events: &broadcast::Sender<PipelineEvent>, account_id: i64, run: &str) {
    let _ = events.send(PipelineEvent::new(account_id, run));
}

impl SqlPipelines {
    /// Runs in `pool`; stopping a run stops its jobs on `cluster`.
    pub fn new(pool: crate::storage::db::Pool, cluster: Arc<dyn Cluster>) -> Self {
        Self {
            store: PipelineStore::new(pool.clone()),
            notices: NotifyStore::new(pool),
            cluster,
            wake: Arc::new(Notify::new()),
            events: broadcast::channel(256).0,
        }
    }

    /// The scheduler of these runs (start it with [`PipelineScheduler::run`]).
    pub fn scheduler(&self) -> PipelineScheduler {
        PipelineScheduler {
            store: self.store.clone(),
            notices: self.notices.clone(),
            wake: self.wake.clone(),
            events: self.events.clone(),
        }
    }

    /// Asks the scheduler for a pass now: a run or a job changed in another
    /// replica (this process's own changes wake it already).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    async fn ended(&self, account: &Account, name: &str) -> Result<StoredRun, AppError> {
        self.store.get(account.id, name).await
    }
}

#[async_trait]
impl Pipelines for SqlPipelines {
    async fn create(
        &self,
        me: &Me,
        name: &str,
        spec: &PipelineSpec,
        values: &BTreeMap<String, Value>,
    ) -> Result<PipelineRun, AppError> {
        self.store.insert(me, name, spec, values).await?;
        tracing::info!(account = %me.account.name, run = name, nodes = spec.nodes.len(), user = %me.email, "pipeline run submitted");
        self.wake.notify_one();
        changed(&self.events, me.account.id, name);
        Ok(self.store.get(me.account.id, name).await?.run)
    }

    async fn list(&self, account: &Account) -> Result<Vec<PipelineRun>, AppError> {
        self.store.list(account.id).await
    }

    async fn get(&self, account: &Account, name: &str) -> Result<PipelineRun, AppError> {
        Ok(self.store.get(account.id, name).await?.run)
    }

    async fn stop(&self, me: &Me, name: &str) -> Result<PipelineRun, AppError> {
        me.role.require_change()?;
        let stored = self.store.get(me.account.id, name).await?;
        let why = format!("Stopped by {}.", me.email);
        if !self.store.end(stored.id, RunStatus::Stopped, &why).await? {
            return Err(AppError::conflict(
                "name",
                format!("“{name}” has ended already."),
            ));
        }
        for (i, node) in stored.run.nodes.iter().enumerate() {
            if node.status.is_final() {
                continue;
            }
            let running = stored.nodes[i]
                .1
                .as_ref()
                .is_some_and(|j| j.status.is_active());
            if let (true, Some(job)) = (running, &node.job) {
                match self.cluster.stop(&me.account, job).await {
                    Ok(_) | Err(AppError::NotFound { .. }) | Err(AppError::Conflict { .. }) => {}
                    Err(err) => return Err(err),
                }
            }
            let update = NodeUpdate {
                status: Some(NodeStatus::Stopped),
                message: Some("The run was stopped.".to_owned()),
                finished_at: Some(now_ms()),
                ..Default::default()
            };
            self.store.update_node(stored.id, i, update).await?;
        }
        tracing::info!(account = %me.account.name, run = name, user = %me.email, "pipeline run stopped");
        changed(&self.events, me.account.id, name);
        Ok(self.ended(&me.account, name).await?.run)
    }

    async fn retry(&self, me: &Me, name: &str) -> Result<PipelineRun, AppError> {
        me.role.require_change()?;
        let stored = self.store.get(me.account.id, name).await?;
        if !self.store.reopen(stored.id, &stored.run.spec).await? {
            return Err(AppError::conflict(
                "name",
                format!(
                    "“{name}” is {}: only a run that failed or was stopped is retried.",
                    stored.run.status.as_str()
                ),
            ));
        }
        tracing::info!(account = %me.account.name, run = name, user = %me.email, "pipeline run retried from failed");
        self.wake.notify_one();
        changed(&self.events, me.account.id, name);
        Ok(self.store.get(me.account.id, name).await?.run)
    }

    fn subscribe(&self) -> broadcast::Receiver<PipelineEvent> {
        self.events.subscribe()
    }
}

/// Moves running pipelines on: a pass on every job event, on a new run,
/// and every second.
pub struct PipelineScheduler {
    store: PipelineStore,
    /// Where a wait for quota is raised, for the notifier.
    notices: NotifyStore,
    wake: Arc<Notify>,
    events: broadcast::Sender<PipelineEvent>,
}

impl PipelineScheduler {
    /// Runs until the process ends.
    pub async fn run(self, services: Services, pulse: crate::telemetry::Pulse) {
        let wake = self.wake.clone();
        crate::controller::drive(self, services, wake, TICK, pulse).await
    }
}

#[async_trait]
impl Controller for PipelineScheduler {
    async fn pass(&self, services: &Services) {
        let active = match self.store.active().await {
            Ok(active) => active,
            Err(err) => {
                tracing::warn!(error = %err, "listing running pipelines");
                return;
            }
        };
        for id in active {
            if let Err(err) = self.advance(services, id).await {
                tracing::warn!(run_id = id, error = %err, "moving a pipeline run on");
            }
        }
    }
}

impl PipelineScheduler {
    async fn advance(&self, services: &Services, id: i64) -> Result<(), AppError> {
        let mut stored = self.store.load(id).await?;
        if stored.run.status != RunStatus::Running {
            return Ok(());
        }
        let now = now_ms();
        let mut moved = false;
        for i in 0..stored.run.nodes.len() {
            if let Some(update) = follow_job(&stored, i, now) {
                apply(&mut stored, i, &update);
                self.store.update_node(id, i, update).await?;
                moved = true;
            }
        }
        let steps = app::models::next_steps(&stored.run.spec, &stored.run.nodes, now);
        let tell = moved || !steps.is_empty();
        for step in steps {
            match step {
                Step::Skip { node, why } => {
                    let update = NodeUpdate {
                        status: Some(NodeStatus::Skipped),
                        message: Some(why),
                        not_before: Some(None),
                        finished_at: Some(now),
                        ..Default::default()
                    };
                    self.store.update_node(id, node, update).await?;
                }
                Step::Start { node, attempt } => {
                    self.start(services, &stored, node, attempt).await?;
                }
                Step::End { status, message } => {
                    if self.store.end(id, status, &message).await? {
                        tracing::info!(run = %stored.run.name, status = status.as_str(), "pipeline run ended");
                    }
                }
            }
        }
        if tell {
            changed(&self.events, stored.account_id, &stored.run.name);
        }
        Ok(())
    }

    /// Claims and submits try `attempt` of node `i`.
    async fn start(
        &self,
        services: &Services,
        stored: &StoredRun,
        i: usize,
        attempt: u32,
    ) -> Result<(), AppError> {
        let run = &stored.run;
        let node = &run.spec.nodes[i];
        let job_name = node_job_name(&run.name, &node.name, attempt);
        if !self.store.claim(stored.id, i, attempt, &job_name).await? {
            return Ok(());
        }
        let now = now_ms();
        let fail = |why: String| NodeUpdate {
            status: Some(NodeStatus::Failed),
            message: Some(why),
            finished_at: Some(now),
            ..Default::default()
        };
        let Some(me) = self.store.submitter(stored.id).await? else {
            let why = "Its run's submitter is no longer a member of the account.".to_owned();
            return self.store.update_node(stored.id, i, fail(why)).await;
        };
        let outputs = match self.outputs(stored, i).await? {
            Ok(outputs) => outputs,
            Err(why) => return self.store.update_node(stored.id, i, fail(why)).await,
        };
        let who = Principal::new(
            me.clone(),
            Credential::Pipeline {
                run: run.name.clone(),
            },
        );
        let made = async {
            let job = app::use_cases::pipelines::node_job(
                services,
                &me,
                &run.spec,
                i,
                &run.values,
                &outputs,
                &run.name,
                attempt,
            )
            .await?;
            app::use_cases::pipelines::submit_node(services, &who, job).await
        };
        match made.await {
            Ok(job) => {
                let update = NodeUpdate {
                    message: Some(String::new()),
                    started_at: Some(job.created_at),
                    ..Default::default()
                };
                self.store.update_node(stored.id, i, update).await?;
                // Stopped while the job was being submitted: the stop found
                // no job to stop yet, so this one is stopped here. (A stop
                // after this read finds the job and stops it itself.)
                let now = self.store.get(me.account.id, &run.name).await?.run.status;
                if now != RunStatus::Running {
                    match services.cluster.stop(&me.account, &job.name).await {
                        Ok(_) | Err(AppError::NotFound { .. }) | Err(AppError::Conflict { .. }) => {
                        }
                        Err(err) => return Err(err),
                    }
                }
                Ok(())
            }
            // The quota is full: the same try is made again later.
            Err(err) if err.is_over_quota() => {
                let why = format!("Waiting for quota: {err}");
                let notice = Notice {
                    account: me.account.name.clone(),
                    subject: NotifySubject::Pipeline {
                        name: run.name.clone(),
                    },
                    event: NotifyEvent::OverQuota,
                    message: format!("node {}: {why}", node.name),
                    at: now,
                };
                let key = format!("pipeline:{}:quota:{i}:{attempt}", stored.id);
                if let Err(err) = self.notices.raise(me.account.id, &key, &notice).await {
                    tracing::warn!(error = %err, "a wait for quota was not raised");
                }
                self.store
                    .unclaim(stored.id, i, attempt, &why, now + QUOTA_WAIT_MS)
                    .await
            }
            Err(AppError::Internal) => {
                let why = "Its job could not be submitted; see the console's log.".to_owned();
                self.store.update_node(stored.id, i, fail(why)).await
            }
            Err(err) => {
                let why = format!("Its job could not be submitted: {err}");
                self.store.update_node(stored.id, i, fail(why)).await
            }
        }
    }

    /// What node `i`'s placeholders read of earlier nodes, or why one
    /// cannot be read.
    async fn outputs(
        &self,
        stored: &StoredRun,
        i: usize,
    ) -> Result<Result<BTreeMap<String, Value>, String>, AppError> {
        let spec = &stored.run.spec;
        let index = spec.index();
        let mut out = BTreeMap::new();
        for name in spec.nodes[i].placeholders() {
            let Some(Placeholder::Node(from, what)) = Placeholder::parse(&name) else {
                continue;
            };
            let Some(job) = stored.run.nodes[index[from.as_str()]].job.clone() else {
                return Ok(Err(format!(
                    "“{from}” ran no job to read {{{{{name}}}}} from."
                )));
            };
            let value = match &what {
                Output::Model => self
                    .store
                    .model_of(stored.account_id, &job)
                    .await?
                    .map(Value::from),
                Output::Metric(tag) => self
                    .store
                    .metric_of(stored.account_id, &job, tag)
                    .await?
                    .map(Value::from),
            };
            match value {
                Some(v) => {
                    out.insert(name, v);
                }
                None => {
                    let missing = match what {
                        Output::Model => "registered no model version".to_owned(),
                        Output::Metric(tag) => format!("wrote no metric “{tag}”"),
                    };
                    return Ok(Err(format!("“{from}” ({job}) {missing}.")));
                }
            }
        }
        Ok(Ok(out))
    }
}

/// What node `i`'s job says of it now, if that changes the node.
fn follow_job(stored: &StoredRun, i: usize, now: i64) -> Option<NodeUpdate> {
    let node = &stored.run.nodes[i];
    let (retries_left, job) = &stored.nodes[i];
    // Only a node with a job in flight follows it.
    if node.status.is_final() || node.job.is_none() || node.not_before.is_some() {
        return None;
    }
    let name = node.job.as_deref().unwrap_or_default();
    let ended = |failed_why: String| {
        if *retries_left > 0 {
            let node_spec = &stored.run.spec.nodes[i];
            let wait = i64::from(node_spec.backoff_secs)
                * 1000
                * (1_i64 << (node.attempt.saturating_sub(1)).min(20));
            Some(NodeUpdate {
                status: Some(NodeStatus::Pending),
                message: Some(format!(
                    "Try {} failed ({failed_why}); try {} in {} s.",
                    node.attempt,
                    node.attempt + 1,
                    wait / 1000
                )),
                not_before: Some(Some(now + wait)),
                retries_left: Some(retries_left - 1),
                ..Default::default()
            })
        } else {
            Some(NodeUpdate {
                status: Some(NodeStatus::Failed),
                message: Some(failed_why),
                finished_at: Some(now),
                ..Default::default()
            })
        }
    };
    match job {
        None => {
            let claimed = node.started_at.unwrap_or(now);
            (now - claimed > LOST_AFTER_MS)
                .then(|| ended(format!("its job {name} is gone")))
                .flatten()
        }
        Some(JobNow { status, .. }) if *status == JobStatus::Pending => None,
        Some(JobNow {
            status: JobStatus::Running,
            started_at,
            ..
        }) => (node.status != NodeStatus::Running).then(|| NodeUpdate {
            status: Some(NodeStatus::Running),
            started_at: *started_at,
            ..Default::default()
        }),
        Some(JobNow {
            status: JobStatus::Succeeded,
            finished_at,
            started_at,
            ..
        }) => Some(NodeUpdate {
            status: Some(NodeStatus::Succeeded),
            message: Some(String::new()),
            started_at: *started_at,
            finished_at: finished_at.or(Some(now)),
            ..Default::default()
        }),
        Some(JobNow {
            status, message, ..
        }) => {
            let why = if message.is_empty() {
                format!("its job {name} {}", status.as_str())
            } else {
                format!("its job {name} {}: {message}", status.as_str())
            };
            ended(why)
        }
    }
}

/// Applies `u` to the run as read, so this pass decides on it.
fn apply(stored: &mut StoredRun, i: usize, u: &NodeUpdate) {
    let node = &mut stored.run.nodes[i];
    if let Some(s) = u.status {
        node.status = s;
    }
    if let Some(m) = &u.message {
        node.message = m.clone();
    }
    if let Some(nb) = u.not_before {
        node.not_before = nb;
    }
    if let Some(r) = u.retries_left {
        stored.nodes[i].0 = r;
    }
}
