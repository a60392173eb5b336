//! Local runs recorded in the console's database ([`SqlLocalRuns`]): a run
//! is a job of the local executor's (`cluster = local`, `source = local`,
//! one trainer pod `trainer-0`) that no process of the console runs; its
//! client reports the output, which is written where the executor writes a
//! pod's log, so the log console, downloads and follows read it as any
//! other. A sweep marks runs whose heartbeats stopped lost.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use app::error::AppError;
use app::models::{
    name_from_command, Account, Beat, Job, JobSource, JobSpec, JobStatus, LocalRun, LocalRunEnd,
    LocalRunStart, LogAck, LogChunk, Me, PodPhase, RunOutcome, MAX_LOG_CHUNK, MAX_RUN_PARAMS,
};
use app::ports::{JobEvent, LocalRuns};
use async_trait::async_trait;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::{broadcast, Mutex};

use crate::storage::db::Pool;
use crate::storage::jobs::{JobStore, PodUpdate, StoredJob};
use crate::storage::local_runs::{LocalRunTable, Transition};
use crate::storage::logfile::{format_timestamp, log_path};
use crate::time::now_ms;

/// The one pod of a local run.
pub const POD: &str = "trainer-0";
/// Generated names tried before giving up (`train`, `train-2`, …).
const NAME_TRIES: u32 = 200;

/// Local runs on the console's database and the executor's job folders.
#[derive(Clone)]
pub struct SqlLocalRuns {
    runs: LocalRunTable,
    jobs: JobStore,
    /// `<root>/<account>/<job>/logs/trainer-0.log`, as the executor lays out.
    root: PathBuf,
    events: broadcast::Sender<JobEvent>,
    /// One append at a time, so the offsets of two chunks never race.
    appending: Arc<Mutex<()>>,
}

impl SqlLocalRuns {
    /// Runs in `pool`, their logs under `root`, their changes told on
    /// `events` (the job table's stream).
    pub fn new(pool: Pool, root: PathBuf, events: broadcast::Sender<JobEvent>) -> Self {
        Self {
            jobs: JobStore::new(pool.clone()),
            runs: LocalRunTable::new(pool),
            root,
            events,
            appending: Arc::new(Mutex::new(())),
        }
    }

    fn emit(&self, account_id: i64, job: &str) {
        let _ = self.events.send(JobEvent {
            account_id,
            job: job.to_owned(),
        });
    }

    /// The account's local run `name` (its job), or "not found".
    async fn run_of(&self, account: &Account, name: &str) -> Result<StoredJob, AppError> {
        let stored = self.jobs.get(account.id, name).await?;
        if stored.job.source != JobSource::Local {
            return Err(AppError::not_found(format!("Local run “{name}”")));
        }
        Ok(stored)
    }

    async fn by_client_id(
        &self,
        account_id: i64,
        client_id: &str,
    ) -> Result<Option<i64>, AppError> {
        self.runs.by_client_id(account_id, client_id).await
    }

    /// Records the job (named `name`, or the first free of the generated
    /// names) and its run row.
    async fn record(
        &self,
        me: &Me,
        start: &LocalRunStart,
        started: i64,
    ) -> Result<StoredJob, AppError> {
        let base = match &start.name {
            Some(name) => name.trim().to_owned(),
            None => name_from_command(&start.facts.command),
        };
        let tries = if start.name.is_some() { 1 } else { NAME_TRIES };
        for n in 1..=tries {
            let name = if n == 1 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            let spec = JobSpec::recorded(
                &name,
                start.facts.command.clone(),
                start.facts.working_dir.clone(),
                1,
            );
            app::models::validate_job_name(&name)?;
            match self.jobs.insert(me, &spec, crate::local::LOCAL).await {
                Ok((stored, _token)) => return self.mark_started(me, stored, start, started).await,
                Err(AppError::Conflict { .. }) if n < tries => continue,
                Err(err @ AppError::Conflict { .. }) => {
                    // The same start sent twice at once: the other made it.
                    return match self
                        .by_client_id(me.account.id, start.client_id.trim())
                        .await?
                    {
                        Some(id) => self.jobs.by_id(id).await,
                        None => Err(err),
                    };
                }
                Err(err) => return Err(err),
            }
        }
        Err(AppError::conflict(
            "name",
            format!("Too many jobs are named like “{base}”: give the run a name."),
        ))
    }

    async fn mark_started(
        &self,
        me: &Me,
        stored: StoredJob,
        start: &LocalRunStart,
        started: i64,
    ) -> Result<StoredJob, AppError> {
        let host: String = start.facts.host.chars().take(253).collect();
        let client_id = start.client_id.trim();
        let recorded = self
            .runs
            .insert(
                stored.id,
                me.account.id,
                client_id,
                &host,
                &start.facts,
                &start.params,
                now_ms(),
            )
            .await;
        if !matches!(recorded, Ok(true)) {
            // The same start raced in twice: keep the first.
            self.jobs.delete(stored.id).await?;
            return match self.by_client_id(me.account.id, client_id).await? {
                Some(id) => self.jobs.by_id(id).await,
                None => Err(recorded.err().unwrap_or(AppError::Internal)),
            };
        }
        self.runs.mark_running(stored.id, started).await?;
        let running = PodUpdate {
            phase: Some(PodPhase::Running),
            started_at: Some(started),
            ..Default::default()
        };
        self.jobs.update_pod(stored.id, POD, running).await?;
        self.jobs.by_id(stored.id).await
    }

    /// Moves a run's job from `from` to `status` and its pod's phase with
    /// it; whether it was still in `from` ([`LocalRunTable::set_status`]).
    async fn set_status(
        &self,
        stored: &StoredJob,
        from: Transition,
        status: JobStatus,
        message: &str,
        at: Option<i64>,
    ) -> Result<bool, AppError> {
        if !self
            .runs
            .set_status(stored.id, from, status, message, at)
            .await?
        {
            return Ok(false);
        }
        let phase = match status {
            JobStatus::Succeeded => PodPhase::Succeeded,
            JobStatus::Stopped => PodPhase::Stopped,
            JobStatus::Running | JobStatus::Pending => PodPhase::Running,
            JobStatus::Failed | JobStatus::Lost => PodPhase::Failed,
        };
        let update = PodUpdate {
            phase: Some(phase),
            message: Some(message.to_owned()),
            ..Default::default()
        };
        self.jobs.update_pod(stored.id, POD, update).await?;
        Ok(true)
    }

    /// Marks running local runs whose last heartbeat is older than
    /// `window` lost; returns how many.
    pub async fn sweep(&self, window: Duration) -> Result<usize, AppError> {
        let before = now_ms() - window.as_millis() as i64;
        let stale = self.runs.stale(before).await?;
        let mut swept = 0;
        for (id, account_id, last) in &stale {
            let stored = self.jobs.by_id(*id).await?;
            let when = app::models::time::format_utc(*last);
            let why = format!(
                "No heartbeat since {when}: its machine may have crashed, slept or lost the network. A late report brings it back."
            );
            let lost = Transition::IsLostBefore(before);
            if !self
                .set_status(&stored, lost, JobStatus::Lost, &why, Some(now_ms()))
                .await?
            {
                continue; // it ended or beat since the list was read
            }
            tracing::info!(job = %stored.job.name, account_id, "local run lost");
            self.emit(*account_id, &stored.job.name);
            swept += 1;
        }
        Ok(swept)
    }

    /// Sweeps every `window / 4` until the process ends.
    pub async fn sweep_forever(self, window: Duration) {
        let every = (window / 4).max(Duration::from_millis(250));
        loop {
            tokio::time::sleep(every).await;
            if let Err(err) = self.sweep(window).await {
                tracing::warn!(error = %err, "sweeping lost local runs");
            }
        }
    }
}

#[async_trait]
impl LocalRuns for SqlLocalRuns {
    async fn start(&self, me: &Me, start: LocalRunStart) -> Result<Job, AppError> {
        me.role.require_change()?;
        start.validate()?;
        if let Some(id) = self
            .by_client_id(me.account.id, start.client_id.trim())
            .await?
        {
            return Ok(self.jobs.by_id(id).await?.job);
        }
        let started = start.started_at.unwrap_or_else(now_ms);
        let stored = self.record(me, &start, started).await?;
        tracing::info!(account = %me.account.name, job = %stored.job.name, host = %start.facts.host, "local run started");
        self.emit(me.account.id, &stored.job.name);
        Ok(stored.job)
    }

    async fn log(
        &self,
        account: &Account,
        name: &str,
        chunk: LogChunk,
    ) -> Result<LogAck, AppError> {
        if chunk.text.len() > MAX_LOG_CHUNK {
            return Err(AppError::invalid(
                "text",
                format!(
                    "Send at most {} MiB of output at a time.",
                    MAX_LOG_CHUNK >> 20
                ),
            ));
        }
        let stored = self.run_of(account, name).await?;
        let _one = self.appending.lock().await;
        let length = self.runs.log_len(stored.id).await?;
        if chunk.offset > length {
            return Err(AppError::conflict(
                "offset",
                format!("The output so far is {length} bytes: send from offset {length}."),
            ));
        }
        let skip = (length - chunk.offset) as usize;
        if skip >= chunk.text.len() {
            return Ok(LogAck { length });
        }
        let Some(new) = chunk.text.get(skip..) else {
            return Err(AppError::invalid(
                "offset",
                "The offset falls inside a character.",
            ));
        };
        let at = chunk.at.unwrap_or_else(now_ms);
        let stamp = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000_000)
            .ok()
            // A stamp is RFC 3339, whose years have four digits: one before
            // year 0 would be written but never read as a stamp again.
            .filter(|t| t.year() >= 0)
            .map(format_timestamp)
            .ok_or_else(|| AppError::invalid("at", "Not a time."))?;
        let path = log_path(&self.root.join(&account.name).join(name), POD);
        let written = async {
            tokio::fs::create_dir_all(path.parent().expect("a log has a folder")).await?;
            // Read and appended through one handle: the last byte says
            // whether the log ends inside a line.
            let mut file = tokio::fs::OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(&path)
                .await?;
            // A chunk may end inside a line (a print cut by the end of a
            // run, or by the SDK's sending): the line is left open, and the
            // next chunk goes on with it, so the log is exactly what the
            // program printed.
            let continues = ends_inside_a_line(&mut file).await?;
            let mut stamped = String::with_capacity(new.len() + 64);
            for (i, line) in new.split_inclusive('\n').enumerate() {
                if !(i == 0 && continues) {
                    stamped.push_str(&stamp);
                    stamped.push(' ');
                }
                stamped.push_str(line);
            }
            file.write_all(stamped.as_bytes()).await?;
            file.sync_data().await
        };
        written.await.map_err(|err| {
            tracing::error!(error = %err, path = %path.display(), "writing a local run's log");
            AppError::Internal
        })?;
        let length = length + new.len() as u64;
        self.runs.set_log_len(stored.id, length, now_ms()).await?;
        Ok(LogAck { length })
    }

    async fn heartbeat(&self, account: &Account, name: &str) -> Result<Beat, AppError> {
        let stored = self.run_of(account, name).await?;
        let asked = self.runs.beat(stored.id, now_ms()).await?;
        let mut status = stored.job.status;
        if status == JobStatus::Lost
            && self
                .set_status(&stored, Transition::ComesBack, JobStatus::Running, "", None)
                .await?
        {
            tracing::info!(job = %name, "local run back from lost");
            self.emit(account.id, name);
            status = JobStatus::Running;
        }
        Ok(Beat {
            status,
            stop: asked && status.is_active(),
        })
    }

    async fn request_stop(&self, me: &Me, name: &str) -> Result<Job, AppError> {
        me.role.require_change()?;
        let stored = self.run_of(&me.account, name).await?;
        if !matches!(stored.job.status, JobStatus::Running | JobStatus::Lost) {
            return Ok(stored.job);
        }
        let why = format!(
            "{} asked it to stop: its machine is told at its next heartbeat.",
            me.email
        );
        self.runs.ask_stop(stored.id, &why).await?;
        tracing::info!(job = %name, user = %me.email, "local run asked to stop");
        self.emit(me.account.id, name);
        Ok(self.jobs.by_id(stored.id).await?.job)
    }

    async fn end(&self, account: &Account, name: &str, end: LocalRunEnd) -> Result<Job, AppError> {
        let stored = self.run_of(account, name).await?;
        // Reported already: a replay changes nothing.
        if !matches!(stored.job.status, JobStatus::Running | JobStatus::Lost) {
            return Ok(stored.job);
        }
        let status = match end.outcome {
            RunOutcome::Succeeded => JobStatus::Succeeded,
            RunOutcome::Failed => JobStatus::Failed,
            RunOutcome::Stopped => JobStatus::Stopped,
        };
        let message = match (end.message.trim(), end.exit_code) {
            ("", Some(code)) if code != 0 => format!("It exited with code {code}."),
            (m, _) => m.chars().take(2000).collect(),
        };
        let at = end.finished_at.unwrap_or_else(now_ms);
        if !self
            .set_status(&stored, Transition::Ends, status, &message, Some(at))
            .await?
        {
            // Another delivery of the same end got there first.
            return Ok(self.jobs.by_id(stored.id).await?.job);
        }
        if let Some(code) = end.exit_code {
            let update = PodUpdate {
                exit_code: Some(code),
                finished_at: Some(at),
                ..Default::default()
            };
            self.jobs.update_pod(stored.id, POD, update).await?;
        }
        tracing::info!(account = %account.name, job = %name, status = status.as_str(), "local run ended");
        self.emit(account.id, name);
        Ok(self.jobs.by_id(stored.id).await?.job)
    }

    async fn log_params(
        &self,
        account: &Account,
        name: &str,
        params: BTreeMap<String, Value>,
    ) -> Result<LocalRun, AppError> {
        let stored = self.run_of(account, name).await?;
        // Read, merged and written whole: two at once would lose one's.
        let _one = self.appending.lock().await;
        let mut all = self.get(account, name).await?.params;
        all.extend(params);
        if all.len() > MAX_RUN_PARAMS {
            return Err(AppError::invalid(
                "params",
                format!("A run records at most {MAX_RUN_PARAMS} parameters."),
            ));
        }
        self.runs.set_params(stored.id, &all).await?;
        self.get(account, name).await
    }

    async fn get(&self, account: &Account, name: &str) -> Result<LocalRun, AppError> {
        let stored = self.run_of(account, name).await?;
        let row = self.runs.get(stored.id).await?;
        Ok(LocalRun {
            name: stored.job.name,
            facts: row.facts,
            params: row.params,
            heartbeat_at: row.heartbeat_at,
            log_length: row.log_len,
        })
    }
}

/// Whether `file` (open for reading) ends without its last line's
/// newline; an empty one does not.
async fn ends_inside_a_line(file: &mut tokio::fs::File) -> std::io::Result<bool> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    if file.metadata().await?.len() == 0 {
        return Ok(false);
    }
    file.seek(std::io::SeekFrom::End(-1)).await?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last).await?;
    Ok(last[0] != b'\n')
}
