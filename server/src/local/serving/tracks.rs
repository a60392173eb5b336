//! An instance's task: its pools (main, canary, shadow), the main track's
//! roll from one version to the next, and one state reported for all.
//!
//! A roll keeps every wanted replica answering: the new version's pool
//! starts with one replica; each time all of its replicas answer, the old
//! pool gives up one (out of the ready set, then drained and stopped)
//! until the new one runs them all. A new version that does not load
//! stops the roll, and the old version serves on.

use std::collections::BTreeMap;
use std::sync::Arc;

use app::models::{ServingStatus, Track};
use tokio::sync::{mpsc, watch, Notify};

use super::pool::{Launch, Pool};
use super::Instance;
use crate::backend::serving::{ModelFiles, Reporter, ServingRun, ServingState};

/// The pools of one running instance.
pub(super) struct Tracks<'a> {
    instance: &'a Instance,
    run: &'a ServingRun,
    reporter: &'a Reporter,
    launch: Launch,
    probe: reqwest::Client,
    /// Told of every change in any pool.
    changed: Arc<Notify>,
    main: Option<Arc<Pool>>,
    /// The main track's next version while it rolls in.
    rolling: Option<Arc<Pool>>,
    side: BTreeMap<Track, Arc<Pool>>,
    /// What a release, a roll or a failed side track has to say.
    note: String,
}

impl<'a> Tracks<'a> {
    /// For `run`, its replicas started as `launch` says.
    pub fn new(
        instance: &'a Instance,
        run: &'a ServingRun,
        reporter: &'a Reporter,
        launch: Launch,
        probe: reqwest::Client,
    ) -> Self {
        Self {
            instance,
            run,
            reporter,
            launch,
            probe,
            changed: Arc::new(Notify::new()),
            main: None,
            rolling: None,
            side: BTreeMap::new(),
            note: String::new(),
        }
    }

    fn pool(&self, track: Track, model: &ModelFiles, replicas: u32) -> Result<Arc<Pool>, String> {
        let launch = self.launch.for_model(track, model)?;
        Ok(Pool::start(
            track,
            model.version,
            replicas,
            launch,
            self.probe.clone(),
            self.changed.clone(),
        ))
    }

    /// Tells the endpoint which pools run now.
    fn publish(&self) {
        let pools = self
            .main
            .iter()
            .chain(&self.rolling)
            .chain(self.side.values())
            .cloned()
            .collect();
        *self.instance.pools.lock().expect("pools lock") = pools;
    }

    async fn report(&self, status: ServingStatus, ready: u32, message: &str) {
        let run = self.run;
        self.reporter
            .report(
                run.account.id,
                run.id,
                &run.spec.name,
                ServingState::new(status, ready, message),
            )
            .await;
    }

    /// Runs until stopped, or until the main version cannot run.
    pub async fn run(
        &mut self,
        mut stop: watch::Receiver<bool>,
        mut releases: mpsc::UnboundedReceiver<ServingRun>,
    ) {
        let run = self.run;
        let mut desired = self.instance.desired.subscribe();
        let target = *desired.borrow_and_update();
        match self.pool(Track::Main, &run.model, target) {
            Ok(pool) => self.main = Some(pool),
            Err(why) => {
                self.report(ServingStatus::Failed, 0, &why).await;
                return;
            }
        }
        self.apply_side(run).await;
        self.publish();
        let mut recorded = target;
        let mut last = None;
        let failed = loop {
            let target = *desired.borrow_and_update();
            if target != recorded {
                // The autoscaler (or a scale) changed the size: the record says so.
                recorded = target;
                self.reporter.replicas(run.id, &run.spec.name, target).await;
            }
            self.step(target).await;
            let main = self.main.clone().expect("a main pool");
            let state = main.state();
            if let (Some(why), None) = (&state.failed, &self.rolling) {
                break Some(why.clone());
            }
            self.drop_failed_sides().await;
            let ready = state.ready + self.rolling.as_ref().map_or(0, |r| r.state().ready);
            let message = self.message(&state.message);
            let next = (ServingStatus::of_replicas(ready, target), ready, message);
            if last.as_ref() != Some(&next) {
                self.report(next.0, next.1, &next.2).await;
                last = Some(next);
            }
            tokio::select! {
                _ = desired.changed() => {}
                _ = stop.changed() => break None,
                _ = self.changed.notified() => {}
                release = releases.recv() => match release {
                    Some(release) => self.release(&release).await,
                    None => break None,
                },
            }
        };
        for pool in self.all() {
            pool.stop().await;
        }
        if let Some(why) = failed {
            tracing::warn!(serving = %run.spec.name, reason = %why, "serving failed");
            self.report(ServingStatus::Failed, 0, &why).await;
        }
    }

    fn all(&self) -> Vec<Arc<Pool>> {
        self.main
            .iter()
            .chain(&self.rolling)
            .chain(self.side.values())
            .cloned()
            .collect()
    }

    /// The message of the whole instance: the note, else the first pool's.
    fn message(&self, main: &str) -> String {
        if !self.note.is_empty() {
            return self.note.clone();
        }
        if !main.is_empty() {
            return main.to_owned();
        }
        for pool in self.rolling.iter().chain(self.side.values()) {
            let m = pool.state().message;
            if !m.is_empty() {
                return format!("{} v{}: {m}", pool.track.label(), pool.version);
            }
        }
        String::new()
    }

    /// One step of a roll, or the main pool sized to `target`.
    async fn step(&mut self, target: u32) {
        let main = self.main.clone().expect("a main pool");
        let Some(new) = self.rolling.clone() else {
            main.set_desired(target);
            return;
        };
        let state = new.state();
        if let Some(why) = state.failed {
            new.stop().await;
            self.rolling = None;
            self.publish();
            main.set_desired(target);
            self.note = format!(
                "Rolling to v{} stopped: {why} v{} serves on.",
                new.version, main.version
            );
            return;
        }
        let (old_want, new_want) = (main.desired(), new.desired());
        if state.ready >= new_want {
            if old_want > 0 && old_want + new_want > target {
                main.set_desired(old_want - 1);
            } else if new_want < target {
                new.set_desired(new_want + 1);
            } else if old_want == 0 {
                main.stop().await;
                self.main = Some(new.clone());
                self.rolling = None;
                self.publish();
                self.note.clear();
                let run = self.run;
                self.reporter
                    .rolled(run.account.id, run.id, &run.spec.name, new.version)
                    .await;
                return;
            } else {
                main.set_desired(old_want - 1);
            }
        }
        self.note = format!(
            "Rolling from v{} to v{}: {} of {target} replicas on v{}.",
            main.version,
            new.version,
            new.state().ready,
            new.version
        );
    }

    /// Carries out a release: the main track rolls to its version, the
    /// side tracks as it says.
    async fn release(&mut self, release: &ServingRun) {
        self.note.clear();
        let main = self.main.clone().expect("a main pool");
        let heading_to = self.rolling.as_ref().map_or(main.version, |r| r.version);
        if release.model.version != heading_to {
            if let Some(rolling) = self.rolling.take() {
                // Asked for another version mid-roll: the old one takes
                // back what the new one had.
                main.set_desired(*self.instance.desired.borrow());
                rolling.stop().await;
                self.note.clear();
            }
            if release.model.version != main.version {
                match self.pool(Track::Main, &release.model, 1) {
                    Ok(pool) => self.rolling = Some(pool),
                    Err(why) => self.note = format!("Cannot roll: {why}"),
                }
            }
        }
        self.apply_side(release).await;
        self.publish();
    }

    /// Starts, changes or stops the canary and the shadow as `run` says.
    async fn apply_side(&mut self, run: &ServingRun) {
        for track in [Track::Canary, Track::Shadow] {
            let want = run.side(track);
            match (self.side.get(&track).cloned(), want) {
                (Some(pool), Some(side)) if pool.version == side.model.version => {
                    pool.set_desired(side.replicas);
                }
                (current, want) => {
                    if let Some(pool) = current {
                        self.side.remove(&track);
                        pool.stop().await;
                    }
                    if let Some(side) = want {
                        match self.pool(track, &side.model, side.replicas) {
                            Ok(pool) => {
                                self.side.insert(track, pool);
                            }
                            Err(why) => {
                                self.note = format!("The {} cannot start: {why}", track.as_str())
                            }
                        }
                    }
                }
            }
        }
    }

    /// Stops a canary or shadow that cannot run, saying why (its calls go
    /// to the main version meanwhile).
    async fn drop_failed_sides(&mut self) {
        let failed: Vec<(Track, Arc<Pool>, String)> = self
            .side
            .iter()
            .filter_map(|(t, p)| p.state().failed.map(|why| (*t, p.clone(), why)))
            .collect();
        for (track, pool, why) in failed {
            self.side.remove(&track);
            pool.stop().await;
            self.publish();
            self.note = format!("The {} v{} failed: {why}", track.as_str(), pool.version);
        }
    }
}
