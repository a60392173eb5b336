//! The `local_runs` table: what a local run's client reported (its facts,
//! parameters, heartbeat, log length, a stop asked of it), beside the job
//! row each run is, and the status moves that must not undo each other.

use std::collections::BTreeMap;

use app::error::AppError;
use app::models::{JobSource, JobStatus, RunFacts};
use serde_json::Value;

use super::db::Pool;
use super::internal;
use super::job_history::{job_entry, job_moves};
use crate::storage::db::WriteTx;
use crate::time::now_ms;

/// Which states a run's status may move from (see [`LocalRunTable::set_status`]).
#[derive(Debug, Clone, Copy)]
pub enum Transition {
    /// Its end: from running or lost.
    Ends,
    /// A late report of a lost run: from lost only.
    ComesBack,
    /// The sweep: from running, if its last beat is still before this time.
    IsLostBefore(i64),
}

/// A run's row as the client reported it.
#[derive(Debug, Clone)]
pub struct RunRow {
    /// Where and how it runs (empty if what was stored no longer parses).
    pub facts: RunFacts,
    /// Its parameters.
    pub params: BTreeMap<String, Value>,
    /// Its last heartbeat (ms).
    pub heartbeat_at: i64,
    /// Bytes of output received.
    pub log_len: u64,
}

/// A running run whose heartbeat stopped: job id, account id, last beat.
pub type Stale = (i64, i64, i64);

/// Local runs' rows.
#[derive(Clone)]
pub struct LocalRunTable {
    pool: Pool,
}

impl LocalRunTable {
    /// Wraps a migrated pool.
    pub fn new(pool: Pool) -> Self {
        Self { pool }
    }

    /// The job of the account's run started with `client_id`, if any.
    pub async fn by_client_id(
        &self,
        account_id: i64,
        client_id: &str,
    ) -> Result<Option<i64>, AppError> {
        sqlx::query_scalar("SELECT job_id FROM local_runs WHERE account_id = $1 AND client_id = $2")
            .bind(account_id)
            .bind(client_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("find a local run"))
    }

    /// Records job `job_id`'s run: `Ok(false)` if the job or `client_id`
    /// has one already (the same start raced in twice).
    #[allow(clippy::too_many_arguments)]
    pub async fn insert(
        &self,
        job_id: i64,
        account_id: i64,
        client_id: &str,
        host: &str,
        facts: &RunFacts,
        params: &BTreeMap<String, Value>,
        now: i64,
    ) -> Result<bool, AppError> {
        let facts = serde_json::to_string(facts).map_err(|_| AppError::Internal)?;
        let params = serde_json::to_string(params).map_err(|_| AppError::Internal)?;
        let recorded = sqlx::query(
            "INSERT INTO local_runs (job_id, account_id, client_id, host, facts, params, heartbeat_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(job_id)
        .bind(account_id)
        .bind(client_id)
        .bind(host)
        .bind(facts)
        .bind(params)
        .bind(now)
        .execute(&self.pool)
        .await;
        match recorded {
            Ok(_) => Ok(true),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Ok(false),
            Err(err) => Err(internal("record a local run")(err)),
        }
    }

    /// Marks the run's job a running local one since `started`.
    pub async fn mark_running(&self, job_id: i64, started: i64) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin a local run's start"))?;
        job_moves(&mut *tx, job_id, started, JobStatus::Running.as_str(), None).await?;
        sqlx::query(
            "UPDATE jobs SET source = $1, status = 'running', started_at = $2 WHERE id = $3",
        )
        .bind(JobSource::Local.as_str())
        .bind(started)
        .bind(job_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("mark a local run started"))?;
        tx.commit()
            .await
            .map_err(internal("commit a local run's start"))
    }

    /// Moves a run's job from `from` to `status` (an end keeps its time;
    /// running again clears it); whether it was still in `from`. The
    /// condition is in the same statement: a heartbeat, an end and the
    /// lost sweep each read the status first, and one that read it before
    /// another's write must not undo it (a late beat turning an ended run
    /// running again, the sweep marking lost a run that just ended).
    pub async fn set_status(
        &self,
        job_id: i64,
        from: Transition,
        status: JobStatus,
        message: &str,
        at: Option<i64>,
    ) -> Result<bool, AppError> {
        // Whole statements, one per transition: sqlx takes literal SQL only.
        let query = match from {
            Transition::Ends => sqlx::query(
                "UPDATE jobs SET status = $1, message = $2, finished_at = $3 \
                 WHERE id = $4 AND status IN ('running', 'lost')",
            ),
            Transition::ComesBack => sqlx::query(
                "UPDATE jobs SET status = $1, message = $2, finished_at = $3 \
                 WHERE id = $4 AND status = 'lost'",
            ),
            Transition::IsLostBefore(_) => sqlx::query(
                "UPDATE jobs SET status = $1, message = $2, finished_at = $3 \
                 WHERE id = $4 AND status = 'running' AND id IN \
                 (SELECT job_id FROM local_runs WHERE heartbeat_at < $5)",
            ),
        };
        let mut query = query
            .bind(status.as_str())
            .bind(message)
            .bind(at)
            .bind(job_id);
        if let Transition::IsLostBefore(before) = from {
            query = query.bind(before);
        }
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin a local run's move"))?;
        let changed = query
            .execute(&mut *tx)
            .await
            .map_err(internal("set a local run's status"))?
            .rows_affected();
        if changed > 0 {
            let when = at.unwrap_or_else(now_ms);
            job_entry(&mut *tx, job_id, when, status.as_str(), message).await?;
        }
        tx.commit()
            .await
            .map_err(internal("commit a local run's move"))?;
        Ok(changed > 0)
    }

    /// Running runs whose last heartbeat is before `before` (ms).
    pub async fn stale(&self, before: i64) -> Result<Vec<Stale>, AppError> {
        sqlx::query_as(
            "SELECT j.id, j.account_id, r.heartbeat_at FROM jobs j JOIN local_runs r ON r.job_id = j.id \
             WHERE j.source = 'local' AND j.status = 'running' AND r.heartbeat_at < $1",
        )
        .bind(before)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("find lost local runs"))
    }

    /// Bytes of the run's output received so far.
    pub async fn log_len(&self, job_id: i64) -> Result<u64, AppError> {
        let length: i64 = sqlx::query_scalar("SELECT log_len FROM local_runs WHERE job_id = $1")
            .bind(job_id)
            .fetch_one(&self.pool)
            .await
            .map_err(internal("read a local run's log length"))?;
        Ok(length.max(0) as u64)
    }

    /// Records `length` bytes of output received, which is a beat at `now` too.
    pub async fn set_log_len(&self, job_id: i64, length: u64, now: i64) -> Result<(), AppError> {
        sqlx::query("UPDATE local_runs SET log_len = $1, heartbeat_at = $2 WHERE job_id = $3")
            .bind(length as i64)
            .bind(now)
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("record a local run's log length"))?;
        Ok(())
    }

    /// Records a heartbeat at `now`; whether a stop was asked.
    pub async fn beat(&self, job_id: i64, now: i64) -> Result<bool, AppError> {
        sqlx::query("UPDATE local_runs SET heartbeat_at = $1 WHERE job_id = $2")
            .bind(now)
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("record a heartbeat"))?;
        let asked: i64 = sqlx::query_scalar("SELECT stop_asked FROM local_runs WHERE job_id = $1")
            .bind(job_id)
            .fetch_one(&self.pool)
            .await
            .map_err(internal("read a stop request"))?;
        Ok(asked != 0)
    }

    /// Asks the run to stop at its next heartbeat, saying `why` on its job.
    pub async fn ask_stop(&self, job_id: i64, why: &str) -> Result<(), AppError> {
        sqlx::query("UPDATE local_runs SET stop_asked = 1 WHERE job_id = $1")
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("record a stop request"))?;
        sqlx::query("UPDATE jobs SET message = $1 WHERE id = $2")
            .bind(why)
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("record a stop request"))?;
        Ok(())
    }

    /// Replaces the run's parameters.
    pub async fn set_params(
        &self,
        job_id: i64,
        params: &BTreeMap<String, Value>,
    ) -> Result<(), AppError> {
        let json = serde_json::to_string(params).map_err(|_| AppError::Internal)?;
        sqlx::query("UPDATE local_runs SET params = $1 WHERE job_id = $2")
            .bind(json)
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("record a local run's parameters"))?;
        Ok(())
    }

    /// The run's row.
    pub async fn get(&self, job_id: i64) -> Result<RunRow, AppError> {
        let (facts, params, heartbeat_at, log_len): (String, String, i64, i64) = sqlx::query_as(
            "SELECT facts, params, heartbeat_at, log_len FROM local_runs WHERE job_id = $1",
        )
        .bind(job_id)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("read a local run"))?;
        Ok(RunRow {
            facts: serde_json::from_str(&facts).unwrap_or_default(),
            params: serde_json::from_str(&params).unwrap_or_default(),
            heartbeat_at,
            log_len: log_len as u64,
        })
    }
}
