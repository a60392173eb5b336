//! Schedules: kept in the database ([`SqlSchedules`], the port) and moved
//! on by [`ScheduleController`], one more controller on the backbone
//! pipelines and experiments use (`controller.rs`). A pass reads the
//! schedules whose next tick has come, works out which ticks are due (the
//! ones missed while the console was down, by the schedule's `catch_up`),
//! claims each tick in the database before it starts its run (a tick
//! another pass claimed is not this one's), applies `overlap` against the
//! previous run, starts the run as the schedule's creator, and moves the
//! schedule's next tick on. Nothing is held between passes, so a restarted
//! console, or the replica that takes the lease over, carries on where the
//! last one stopped, and never starts a tick twice.

pub mod clock;

use std::sync::Arc;
use std::time::Duration;

use app::error::AppError;
use app::models::{
    due_ticks, Account, Me, Overlap, Schedule, ScheduleSpec, TickOutcome, RUNS_SHOWN,
};
use app::ports::{Credential, Principal, ScheduleEvent, Schedules, Services};
use async_trait::async_trait;
use tokio::sync::{broadcast, Notify};

use self::clock::Clock;
use crate::controller::Controller;
use crate::storage::schedules::{ScheduleStore, StoredSchedule};
use crate::time::now_ms;

/// A tick this young when a pass sees it is the one due now, not missed
/// (passes run every [`TICK`], later under load).
const GRACE_MS: i64 = 60_000;
/// A pass runs at least this often.
pub const TICK: Duration = Duration::from_secs(1);

/// Schedules in the console's database.
pub struct SqlSchedules {
    store: ScheduleStore,
    wake: Arc<Notify>,
    events: broadcast::Sender<ScheduleEvent>,
}

impl SqlSchedules {
    /// Schedules in `pool`.
    pub fn new(pool: crate::storage::db::Pool) -> Self {
        Self {
            store: ScheduleStore::new(pool),
            wake: Arc::new(Notify::new()),
            events: broadcast::channel(256).0,
        }
    }

    /// The controller of these schedules (start it with
    /// [`crate::controller::drive`], or call its pass).
    pub fn controller(&self) -> ScheduleController {
        ScheduleController {
            store: self.store.clone(),
            events: self.events.clone(),
            wake: self.wake.clone(),
        }
    }

    fn changed(&self, account_id: i64, name: &str) {
        let _ = self.events.send(ScheduleEvent::new(account_id, name));
    }
}

fn clock_of(spec: &ScheduleSpec) -> Result<Clock, AppError> {
    Clock::new(&spec.cron, &spec.timezone)
}

#[async_trait]
impl Schedules for SqlSchedules {
    async fn create(&self, me: &Me, spec: ScheduleSpec) -> Result<Schedule, AppError> {
        me.role.require_change()?;
        spec.validate()?;
        let clock = clock_of(&spec)?;
        let now = now_ms();
        self.store
            .insert(me, &spec, clock.next_after(now), now)
            .await?;
        tracing::info!(account = %me.account.name, schedule = %spec.name, cron = %spec.cron, timezone = %spec.timezone, user = %me.email, "schedule saved");
        self.changed(me.account.id, &spec.name);
        self.wake.notify_one();
        Ok(self.store.get(me.account.id, &spec.name).await?.schedule)
    }

    async fn list(&self, account: &Account) -> Result<Vec<Schedule>, AppError> {
        Ok(self
            .store
            .list(account.id)
            .await?
            .into_iter()
            .map(|s| s.schedule)
            .collect())
    }

    async fn get(&self, account: &Account, name: &str) -> Result<Schedule, AppError> {
        let stored = self.store.get(account.id, name).await?;
        let mut schedule = stored.schedule;
        schedule.runs = self.store.runs(stored.id, RUNS_SHOWN).await?;
        Ok(schedule)
    }

    async fn set_paused(&self, me: &Me, name: &str, paused: bool) -> Result<Schedule, AppError> {
        me.role.require_change()?;
        let stored = self.store.get(me.account.id, name).await?;
        let now = now_ms();
        let next = clock_of(&stored.schedule.spec)?.next_after(now);
        self.store.set_paused(stored.id, paused, next, now).await?;
        tracing::info!(account = %me.account.name, schedule = name, paused, user = %me.email, "schedule paused or resumed");
        self.changed(me.account.id, name);
        self.wake.notify_one();
        self.get(&me.account, name).await
    }

    async fn delete(&self, me: &Me, name: &str) -> Result<(), AppError> {
        me.role.require_change()?;
        let stored = self.store.get(me.account.id, name).await?;
        self.store.delete(stored.id).await?;
        tracing::info!(account = %me.account.name, schedule = name, user = %me.email, "schedule deleted");
        self.changed(me.account.id, name);
        Ok(())
    }

    fn subscribe(&self) -> broadcast::Receiver<ScheduleEvent> {
        self.events.subscribe()
    }
}

/// Starts schedules' ticks (see the module's comment).
pub struct ScheduleController {
    store: ScheduleStore,
    events: broadcast::Sender<ScheduleEvent>,
    wake: Arc<Notify>,
}

#[async_trait]
impl Controller for ScheduleController {
    async fn pass(&self, services: &Services) {
        let now = now_ms();
        let due = match self.store.due(now).await {
            Ok(due) => due,
            Err(err) => {
                tracing::warn!(error = %err, "reading the schedules due");
                return;
            }
        };
        for stored in due {
            if let Err(err) = self.move_on(services, &stored, now).await {
                tracing::warn!(schedule = %stored.schedule.spec.name, error = %err, "moving a schedule on");
            }
        }
    }
}

impl ScheduleController {
    /// Passes until the process ends: at once, on a schedule saved or
    /// resumed here, on job events, and every [`TICK`].
    pub async fn run(self, services: Services, pulse: crate::telemetry::Pulse) {
        let wake = self.wake.clone();
        crate::controller::drive(self, services, wake, TICK, pulse).await
    }

    /// Deals with `stored`'s ticks up to `now` and moves it to its next.
    async fn move_on(
        &self,
        services: &Services,
        stored: &StoredSchedule,
        now: i64,
    ) -> Result<(), AppError> {
        let s = &stored.schedule;
        let clock = match clock_of(&s.spec) {
            Ok(clock) => clock,
            Err(err) => {
                // Saved by an older console with other rules: it never runs.
                self.store.advance(stored.id, now, None).await?;
                return Err(err);
            }
        };
        let since = s.last_tick.unwrap_or(s.created_at);
        let ticks = clock.ticks_between(since, now);
        let (run, missed) = due_ticks(&ticks, now, GRACE_MS, s.spec.catch_up);
        for tick in missed {
            let why = "Missed: the console was not running then (catch_up does not run it).";
            self.store
                .claim(stored.id, tick, now, TickOutcome::Missed, why)
                .await?;
        }
        for tick in run {
            if self
                .store
                .claim(stored.id, tick, now, TickOutcome::Started, "")
                .await?
            {
                if let Err(err) = self.start(services, stored, tick).await {
                    // Claimed as started: say why nothing was, rather than
                    // leave a started tick that names no run.
                    let why = format!("Not started: {err}");
                    self.finish(stored, tick, TickOutcome::Failed, None, &why)
                        .await?;
                    return Err(err);
                }
            }
        }
        let newest = ticks.last().copied().unwrap_or(since);
        self.store
            .advance(stored.id, newest, clock.next_after(now))
            .await?;
        let _ = self
            .events
            .send(ScheduleEvent::new(stored.account_id, &s.spec.name));
        Ok(())
    }

    /// Starts claimed tick `tick`'s run and records what became of it.
    async fn start(
        &self,
        services: &Services,
        stored: &StoredSchedule,
        tick: i64,
    ) -> Result<(), AppError> {
        use app::use_cases::schedules::{start_tick, still_going, stop_started};
        let spec = &stored.schedule.spec;
        let Some(me) = self.store.creator(stored.id).await? else {
            let why = "Its creator is no longer a member of the account.".to_owned();
            return self
                .finish(stored, tick, TickOutcome::Failed, None, &why)
                .await;
        };
        let who = Principal::new(
            me,
            Credential::Schedule {
                name: spec.name.clone(),
            },
        );
        let mut note = String::new();
        if spec.overlap != Overlap::Allow {
            if let Some((previous, kind)) = self.store.previous_started(stored.id, tick).await? {
                if still_going(services, &who.me.account, &previous, &kind).await? {
                    if spec.overlap == Overlap::Forbid {
                        let why =
                            format!("Skipped: {previous} was still running (overlap: forbid).");
                        return self
                            .finish(stored, tick, TickOutcome::Skipped, None, &why)
                            .await;
                    }
                    stop_started(services, &who, &previous, &kind).await?;
                    note = format!("Stopped {previous}, still running (overlap: replace).");
                }
            }
        }
        match start_tick(services, &who, spec, tick).await {
            Ok((started, kind)) => {
                tracing::info!(schedule = %spec.name, tick, started = %started, "schedule started a run");
                let started = Some((started.as_str(), kind));
                self.finish(stored, tick, TickOutcome::Started, started, &note)
                    .await
            }
            Err(err) => {
                tracing::info!(schedule = %spec.name, tick, error = %err, "a schedule's run did not start");
                let why = err.to_string();
                self.finish(stored, tick, TickOutcome::Failed, None, &why)
                    .await
            }
        }
    }

    async fn finish(
        &self,
        stored: &StoredSchedule,
        tick: i64,
        outcome: TickOutcome,
        started: Option<(&str, &str)>,
        message: &str,
    ) -> Result<(), AppError> {
        self.store
            .finish(stored.id, tick, outcome, started, message)
            .await
    }
}
