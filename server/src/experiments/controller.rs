//! The experiment controller: a pass over every experiment still going
//! follows each trial's job (its status, its objective's points), stops
//! poor trials early, ends the experiment when its rules say so, and
//! starts new trials while the limits allow, as ordinary jobs of the
//! template, submitted as the experiment's creator within the quota.
//!
//! A trial is claimed in the database (number, job name, values) before
//! its job is submitted; a claimed trial whose job does not exist yet is
//! submitted by the next pass, and a job name taken already (an earlier
//! pass submitted it and the console died before it wrote so) is followed,
//! not submitted again. What it keeps in memory (the curves of trials that
//! ended, the points already judged, a quota backoff) only saves work: a
//! restarted controller reads it all again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use app::error::AppError;
use app::models::{
    counted, ending, trial_job_name, EarlyStopping, ExperimentStatus, ExperimentUse, Job,
    JobStatus, Me, Notice, NotifyEvent, NotifySubject, Objective, Template, Trial, TrialStatus,
    TrialValues,
};
use app::ports::{Credential, ExperimentEvent, Principal, Services};
use async_trait::async_trait;
use tokio::sync::{broadcast, Notify};

use super::search::{self, Curve, Finished, Outcome};
use super::{changed, stop_job};
use crate::controller::Controller;
use crate::storage::experiments::{ExperimentStore, StoredExperiment, TrialUpdate};
use crate::storage::notifications::NotifyStore;

/// A pass runs at least this often (quota backoffs end, room frees up).
const TICK: Duration = Duration::from_secs(2);
/// How long an experiment waits to submit again after the quota refused.
const QUOTA_WAIT: Duration = Duration::from_secs(10);

/// A trial's objective points, (step, value) by step.
type Points = Arc<Vec<(i64, f64)>>;

/// What the controller remembers between passes, to save work.
#[derive(Default)]
struct Memory {
    /// The points of trials that ended, by (experiment id, number): they
    /// do not change.
    ended: HashMap<(i64, u32), Points>,
    /// How many of a running trial's points early stopping has judged.
    judged: HashMap<(i64, u32), usize>,
    /// Experiments the quota refused, until when.
    quota_wait: HashMap<i64, Instant>,
}

/// Moves experiments on: a pass on every job event, on a change, and every
/// two seconds.
pub struct ExperimentController {
    store: ExperimentStore,
    /// Where a wait for quota is raised, for the notifier.
    notices: NotifyStore,
    wake: Arc<Notify>,
    events: broadcast::Sender<ExperimentEvent>,
    memory: Mutex<Memory>,
}

#[async_trait]
impl Controller for ExperimentController {
    async fn pass(&self, services: &Services) {
        let active = match self.store.active().await {
            Ok(active) => active,
            Err(err) => {
                tracing::warn!(error = %err, "listing running experiments");
                return;
            }
        };
        {
            let mut memory = self.memory.lock().unwrap_or_else(|e| e.into_inner());
            memory.ended.retain(|(id, _), _| active.contains(id));
            memory.judged.retain(|(id, _), _| active.contains(id));
        }
        for id in active {
            if let Err(err) = self.advance(services, id).await {
                tracing::warn!(experiment_id = id, error = %err, "moving an experiment on");
            }
        }
    }
}

/// One trial's job as this pass found it.
enum Found {
    /// No job of that name: not submitted yet, or gone.
    Missing,
    /// A job of that name that is not this trial's.
    Foreign,
    /// Its job, and its objective's points so far.
    Job(Box<Job>, Points),
}

impl ExperimentController {
    pub(super) fn new(
        store: ExperimentStore,
        notices: NotifyStore,
        wake: Arc<Notify>,
        events: broadcast::Sender<ExperimentEvent>,
    ) -> Self {
        Self {
            store,
            notices,
            wake,
            events,
            memory: Mutex::default(),
        }
    }

    /// Runs until the process ends.
    pub async fn run(self, services: Services, pulse: crate::telemetry::Pulse) {
        let wake = self.wake.clone();
        crate::controller::drive(self, services, wake, TICK, pulse).await
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn advance(&self, services: &Services, id: i64) -> Result<(), AppError> {
        let mut stored = self.store.load(id).await?;
        let name = stored.experiment.name.clone();
        let Some(me) = self.store.creator(id).await? else {
            let why = "Its creator is no longer a member of the account.";
            self.end(services, &stored, None, ExperimentStatus::Failed, why)
                .await?;
            changed(&self.events, stored.account_id, &name);
            return Ok(());
        };
        let mut moved = false;
        let mut found = Vec::with_capacity(stored.experiment.trials.len());
        for i in 0..stored.experiment.trials.len() {
            let trial = &stored.experiment.trials[i];
            if !trial.status.is_active() {
                found.push(None);
                continue;
            }
            let metric = &stored.experiment.spec.objective.metric;
            let now = self.find(services, &me, &name, metric, trial).await?;
            if let Some(update) = follow(&stored.experiment.spec.objective, trial, &now) {
                self.save(&mut stored, i, update).await?;
                moved = true;
            }
            found.push(Some(now));
        }
        moved |= self.prune(services, &me, &mut stored, &found).await?;
        let mut exhausted = false;
        if stored.experiment.status == ExperimentStatus::Running {
            let (started, none_left) = self.start(services, &me, &mut stored, &found).await?;
            moved |= started;
            exhausted = none_left;
        }
        let e = &stored.experiment;
        if let Some((status, why)) = ending(&e.spec, &e.trials, exhausted) {
            self.end(services, &stored, Some(&me), status, &why).await?;
            tracing::info!(experiment = %name, status = status.as_str(), why, "experiment ended");
            moved = true;
        }
        if moved {
            changed(&self.events, stored.account_id, &name);
        }
        Ok(())
    }

    /// Trial `trial`'s job now, with its objective's points.
    async fn find(
        &self,
        services: &Services,
        me: &Me,
        experiment: &str,
        metric: &str,
        trial: &Trial,
    ) -> Result<Found, AppError> {
        let job = match services.cluster.job(&me.account, &trial.job).await {
            Ok(job) => job,
            Err(AppError::NotFound { .. }) => return Ok(Found::Missing),
            Err(err) => return Err(err),
        };
        let ours = ExperimentUse {
            name: experiment.to_owned(),
            trial: trial.number,
        };
        if job.spec.experiment.as_ref() != Some(&ours) {
            return Ok(Found::Foreign);
        }
        let points = self.points(services, me, &job.name, metric).await?;
        Ok(Found::Job(Box::new(job), points))
    }

    /// The objective's points of `job`, (step, value) by step (none when
    /// it has written none).
    async fn points(
        &self,
        services: &Services,
        me: &Me,
        job: &str,
        metric: &str,
    ) -> Result<Points, AppError> {
        match services
            .metrics
            .points(&me.account, job, metric, None, None)
            .await
        {
            Ok(points) => Ok(Arc::new(
                points.into_iter().map(|p| (p.step, p.value)).collect(),
            )),
            Err(AppError::NotFound { .. }) => Ok(Arc::new(Vec::new())),
            Err(err) => Err(err),
        }
    }

    /// Saves `update` of trial `i` and applies it to the experiment as read,
    /// so the rest of the pass decides on it.
    async fn save(
        &self,
        stored: &mut StoredExperiment,
        i: usize,
        update: TrialUpdate,
    ) -> Result<(), AppError> {
        let trial = &mut stored.experiment.trials[i];
        self.store
            .update_trial(stored.id, trial.number, &update)
            .await?;
        if let Some(s) = update.status {
            trial.status = s;
        }
        if update.objective.is_some() {
            trial.objective = update.objective;
        }
        if update.step.is_some() {
            trial.step = update.step;
        }
        if let Some(m) = update.message {
            trial.message = m;
        }
        Ok(())
    }
}

/// How a trial's submission went.
enum Submitted {
    /// Its job was submitted.
    Yes,
    /// A job of its name exists: an earlier pass submitted it; the next
    /// pass follows it.
    Taken,
    /// The quota or the creator's caps are full: it waits (why).
    Quota(String),
    /// It could not be submitted (why): the trial fails.
    No(String),
}

impl ExperimentController {
    /// Stops the running trials whose newest points early stopping judges
    /// poor; whether any was.
    async fn prune(
        &self,
        services: &Services,
        me: &Me,
        stored: &mut StoredExperiment,
        found: &[Option<Found>],
    ) -> Result<bool, AppError> {
        let spec = stored.experiment.spec.clone();
        if spec.early_stopping == EarlyStopping::None {
            return Ok(false);
        }
        let id = stored.id;
        let fresh: Vec<usize> = (0..found.len())
            .filter(|&i| {
                let Some(Found::Job(job, points)) = &found[i] else {
                    return false;
                };
                let number = stored.experiment.trials[i].number;
                let judged = self.memory().judged.get(&(id, number)).copied();
                stored.experiment.trials[i].status == TrialStatus::Running
                    && job.status.is_active()
                    && judged.is_none_or(|n| points.len() > n)
                    && !points.is_empty()
            })
            .collect();
        if fresh.is_empty() {
            return Ok(false);
        }
        let curves = self.curves(services, me, stored, found).await?;
        let mut pruned = false;
        for i in fresh {
            let Some(Found::Job(_, points)) = &found[i] else {
                continue;
            };
            let trial = &stored.experiment.trials[i];
            let key = (id, trial.number);
            let from = self
                .memory()
                .judged
                .get(&key)
                .copied()
                .unwrap_or(points.len() - 1);
            let others: Vec<Curve<'_>> = curves
                .iter()
                .filter(|(n, _, _)| *n != trial.number)
                .map(|(_, p, completed)| Curve {
                    points: p,
                    completed: *completed,
                })
                .collect();
            let verdict = (from..points.len()).find_map(|k| {
                search::should_stop(
                    &spec.early_stopping,
                    &spec.objective,
                    &points[..=k],
                    &others,
                )
                .map(|why| (k, why))
            });
            self.memory().judged.insert(key, points.len());
            let Some((k, why)) = verdict else {
                continue;
            };
            stop_job(&*services.cluster, &me.account, &trial.job).await?;
            let update = TrialUpdate {
                status: Some(TrialStatus::Pruned),
                objective: spec.objective.value_of(&points[..=k]),
                step: Some(points[k].0),
                message: Some(format!("Stopped early: {why}")),
            };
            tracing::info!(experiment = %stored.experiment.name, trial = trial.number, why, "trial stopped early");
            self.save(stored, i, update).await?;
            pruned = true;
        }
        Ok(pruned)
    }

    /// Every trial's points with its number and whether it completed: the
    /// running ones' as found, the ended ones' from memory or the metrics.
    async fn curves(
        &self,
        services: &Services,
        me: &Me,
        stored: &StoredExperiment,
        found: &[Option<Found>],
    ) -> Result<Vec<(u32, Points, bool)>, AppError> {
        let metric = &stored.experiment.spec.objective.metric;
        let mut out = Vec::with_capacity(found.len());
        for (i, trial) in stored.experiment.trials.iter().enumerate() {
            let key = (stored.id, trial.number);
            let points = match &found[i] {
                Some(Found::Job(_, points)) => points.clone(),
                Some(_) => continue,
                None => {
                    let known = self.memory().ended.get(&key).cloned();
                    match known {
                        Some(points) => points,
                        None => self.points(services, me, &trial.job, metric).await?,
                    }
                }
            };
            if !trial.status.is_active() {
                self.memory().ended.insert(key, points.clone());
            }
            out.push((trial.number, points, trial.status == TrialStatus::Succeeded));
        }
        Ok(out)
    }

    /// Starts trials while fewer than the experiment's parallel trials run:
    /// first those claimed and not yet submitted, then new ones the search
    /// suggests. Whether any was started, and whether the search has
    /// nothing left to try.
    async fn start(
        &self,
        services: &Services,
        me: &Me,
        stored: &mut StoredExperiment,
        found: &[Option<Found>],
    ) -> Result<(bool, bool), AppError> {
        let id = stored.id;
        let waiting = self.memory().quota_wait.get(&id).copied();
        if waiting.is_some_and(|until| Instant::now() < until) {
            return Ok((false, false));
        }
        self.memory().quota_wait.remove(&id);
        let spec = stored.experiment.spec.clone();
        let trials = &stored.experiment.trials;
        let mut running = trials
            .iter()
            .filter(|t| t.status == TrialStatus::Running)
            .count() as u32;
        let mut queue = (0..trials.len())
            .filter(|&i| {
                trials[i].status == TrialStatus::Waiting && matches!(found[i], Some(Found::Missing))
            })
            .collect::<Vec<_>>()
            .into_iter();
        let mut template: Option<Result<Template, String>> = None;
        let (mut started, mut exhausted) = (false, false);
        while running < spec.parallel_trials {
            if let Some((ExperimentStatus::Failed, _)) =
                ending(&spec, &stored.experiment.trials, false)
            {
                break;
            }
            let i = match queue.next() {
                Some(i) => i,
                None => match self.claim_next(stored).await? {
                    Claim::Claimed(i) => i,
                    Claim::Exhausted => {
                        exhausted = true;
                        break;
                    }
                    Claim::Done => break,
                },
            };
            started = true;
            if template.is_none() {
                template = Some(self.template(services, me, stored).await?);
            }
            let Some(made) = &template else { break };
            match self.submit(services, me, stored, i, made).await {
                Submitted::Yes => {
                    running += 1;
                    let update = TrialUpdate {
                        status: Some(TrialStatus::Running),
                        message: Some(String::new()),
                        ..Default::default()
                    };
                    self.save(stored, i, update).await?;
                    // Stopped while the job was being submitted: the stop
                    // found no job yet, so this one is stopped here.
                    if self.store.status(id).await? != Some(ExperimentStatus::Running) {
                        let job = stored.experiment.trials[i].job.clone();
                        stop_job(&*services.cluster, &me.account, &job).await?;
                        let update = TrialUpdate {
                            status: Some(TrialStatus::Stopped),
                            message: Some("Its experiment was stopped.".to_owned()),
                            ..Default::default()
                        };
                        self.save(stored, i, update).await?;
                        break;
                    }
                }
                Submitted::Taken => running += 1,
                Submitted::Quota(why) => {
                    let notice = Notice {
                        account: me.account.name.clone(),
                        subject: NotifySubject::Experiment {
                            name: stored.experiment.name.clone(),
                        },
                        event: NotifyEvent::OverQuota,
                        message: why.clone(),
                        at: crate::time::now_ms(),
                    };
                    let number = stored.experiment.trials[i].number;
                    let key = format!("experiment:{id}:quota:{number}");
                    if let Err(err) = self.notices.raise(me.account.id, &key, &notice).await {
                        tracing::warn!(error = %err, "a wait for quota was not raised");
                    }
                    let update = TrialUpdate {
                        message: Some(why),
                        ..Default::default()
                    };
                    self.save(stored, i, update).await?;
                    self.memory()
                        .quota_wait
                        .insert(id, Instant::now() + QUOTA_WAIT);
                    break;
                }
                Submitted::No(why) => {
                    let update = TrialUpdate {
                        status: Some(TrialStatus::Failed),
                        message: Some(why),
                        ..Default::default()
                    };
                    self.save(stored, i, update).await?;
                }
            }
        }
        Ok((started, exhausted))
    }

    /// Claims the next trial with the values the search suggests, and adds
    /// it to the experiment as read.
    async fn claim_next(&self, stored: &mut StoredExperiment) -> Result<Claim, AppError> {
        let e = &stored.experiment;
        let spec = &e.spec;
        if counted(&e.trials) >= spec.max_trials {
            return Ok(Claim::Done);
        }
        let (history, pending) = history(&e.trials);
        let number = e.trials.iter().map(|t| t.number).max().unwrap_or(0) + 1;
        let Some(values) = search::suggest(
            &spec.space,
            &spec.algorithm,
            spec.objective.direction,
            spec.seed.unwrap_or(0),
            number,
            &history,
            &pending,
        ) else {
            return Ok(Claim::Exhausted);
        };
        let job = trial_job_name(&e.name, number);
        if !self
            .store
            .claim_trial(stored.id, number, &job, &values)
            .await?
        {
            // Another pass (a replica that held the lease a moment ago)
            // claimed it: the next pass reads it.
            return Ok(Claim::Done);
        }
        stored.experiment.trials.push(Trial {
            number,
            job,
            values,
            status: TrialStatus::Waiting,
            objective: None,
            step: None,
            message: String::new(),
            created_at: crate::time::now_ms(),
            ended_at: None,
        });
        Ok(Claim::Claimed(stored.experiment.trials.len() - 1))
    }

    /// The template the experiment searches, at its pinned version, or why
    /// it cannot be read.
    async fn template(
        &self,
        services: &Services,
        me: &Me,
        stored: &StoredExperiment,
    ) -> Result<Result<Template, String>, AppError> {
        let spec = &stored.experiment.spec;
        match app::use_cases::experiments::experiment_template(services, &me.account, spec).await {
            Ok(template) => Ok(Ok(template)),
            Err(AppError::Internal) => Err(AppError::Internal),
            Err(err) => Ok(Err(format!("Its template could not be read: {err}"))),
        }
    }

    /// Submits trial `i`'s job as the experiment's creator.
    async fn submit(
        &self,
        services: &Services,
        me: &Me,
        stored: &StoredExperiment,
        i: usize,
        template: &Result<Template, String>,
    ) -> Submitted {
        let template = match template {
            Ok(template) => template,
            Err(why) => return Submitted::No(why.clone()),
        };
        let e = &stored.experiment;
        let trial = &e.trials[i];
        let job = match app::use_cases::experiments::trial_job(
            template,
            &e.spec,
            trial.number,
            &trial.values,
        ) {
            Ok(job) => job,
            Err(err) => return Submitted::No(format!("Its job could not be made: {err}")),
        };
        let who = Principal::new(
            me.clone(),
            Credential::Experiment {
                name: e.name.clone(),
            },
        );
        match app::use_cases::experiments::submit_trial(services, &who, job).await {
            Ok(_) => Submitted::Yes,
            Err(AppError::Conflict { .. }) => Submitted::Taken,
            Err(err) if err.is_over_quota() => {
                Submitted::Quota(format!("Waiting for quota: {err}"))
            }
            Err(AppError::Internal) => {
                Submitted::No("Its job could not be submitted; see the console's log.".to_owned())
            }
            Err(err) => Submitted::No(format!("Its job could not be submitted: {err}")),
        }
    }

    /// Ends experiment `stored` as `status` (if it had not ended) and stops
    /// its trials still going (their jobs too, when its creator is known).
    async fn end(
        &self,
        services: &Services,
        stored: &StoredExperiment,
        me: Option<&Me>,
        status: ExperimentStatus,
        why: &str,
    ) -> Result<(), AppError> {
        if !self.store.set_status(stored.id, status, why).await? {
            return Ok(());
        }
        let message = match status {
            ExperimentStatus::Succeeded => "Its experiment ended (it reached its goal).",
            _ => "Its experiment ended.",
        };
        for trial in stored
            .experiment
            .trials
            .iter()
            .filter(|t| t.status.is_active())
        {
            match me {
                Some(me) => stop_job(&*services.cluster, &me.account, &trial.job).await?,
                None => {
                    tracing::warn!(job = %trial.job, "a trial's job is left running: its experiment's creator left the account")
                }
            }
            let update = TrialUpdate {
                status: Some(TrialStatus::Stopped),
                message: Some(message.to_owned()),
                ..Default::default()
            };
            self.store
                .update_trial(stored.id, trial.number, &update)
                .await?;
        }
        Ok(())
    }
}

/// What claiming the next trial gave.
enum Claim {
    /// Trial `i` of the experiment as read, claimed.
    Claimed(usize),
    /// The search has nothing left to try (a grid was run through).
    Exhausted,
    /// No trial to claim now: the budget is spent, or another pass claimed
    /// the number.
    Done,
}

/// The trials that ended, as the search learns from them, and the values
/// of those still going, in number order.
fn history(trials: &[Trial]) -> (Vec<Finished>, Vec<TrialValues>) {
    let mut finished = Vec::new();
    let mut pending = Vec::new();
    for t in trials {
        let outcome = match t.status {
            TrialStatus::Waiting | TrialStatus::Running => {
                pending.push(t.values.clone());
                continue;
            }
            TrialStatus::Succeeded => Outcome::Completed(t.objective.unwrap_or(f64::NAN)),
            TrialStatus::Pruned => Outcome::Stopped {
                step: t.step.unwrap_or(0),
                value: t.objective.unwrap_or(f64::NAN),
            },
            TrialStatus::Failed | TrialStatus::Stopped => Outcome::Failed,
        };
        finished.push(Finished {
            number: t.number,
            values: t.values.clone(),
            outcome,
        });
    }
    (finished, pending)
}

/// What trial `trial`'s job, as `found`, changes of it.
fn follow(objective: &Objective, trial: &Trial, found: &Found) -> Option<TrialUpdate> {
    let failed = |why: String| TrialUpdate {
        status: Some(TrialStatus::Failed),
        message: Some(why),
        ..Default::default()
    };
    let (job, points) = match found {
        Found::Missing => {
            return (trial.status == TrialStatus::Running)
                .then(|| failed(format!("Its job {} is gone.", trial.job)))
        }
        Found::Foreign => {
            return Some(failed(format!(
                "A job named {} that is not this trial's was there first.",
                trial.job
            )))
        }
        Found::Job(job, points) => (job, points),
    };
    let value = objective.value_of(points);
    let step = points.last().map(|p| p.0);
    let ended = |status: TrialStatus, message: String| TrialUpdate {
        status: Some(status),
        objective: value,
        step,
        message: Some(message),
    };
    match job.status {
        JobStatus::Pending | JobStatus::Running => {
            let news = trial.status != TrialStatus::Running
                || value.map(f64::to_bits) != trial.objective.map(f64::to_bits)
                || step != trial.step;
            news.then(|| TrialUpdate {
                status: Some(TrialStatus::Running),
                objective: value,
                step,
                message: (trial.status == TrialStatus::Waiting).then(String::new),
            })
        }
        JobStatus::Succeeded => Some(match value {
            Some(_) => ended(TrialStatus::Succeeded, String::new()),
            None => failed(format!(
                "Its job ended without a value of {}.",
                objective.metric
            )),
        }),
        JobStatus::Stopped => Some(ended(
            TrialStatus::Stopped,
            "Its job was stopped.".to_owned(),
        )),
        JobStatus::Failed | JobStatus::Lost => Some(ended(
            TrialStatus::Failed,
            if job.message.is_empty() {
                "Its job failed.".to_owned()
            } else {
                format!("Its job failed: {}", job.message)
            },
        )),
    }
}
