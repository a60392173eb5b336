//! What the stall watcher reads and writes: each running job's newest
//! metric point and newest resource sample with CPU in use, and its
//! `stalled_since` mark (with a line in its history each time the mark is
//! set or cleared).

use app::error::AppError;
use app::models::{Account, Activity, IdleGpuJob, JobSpec, IDLE_CPU_CORES};
use sqlx::{AnyPool, Row};

use super::db::WriteTx;
use super::internal;
use super::job_history::job_entry;

/// A running job as the watcher sees it.
#[derive(Debug, Clone)]
pub struct RunningJob {
    /// Its id.
    pub id: i64,
    /// Its account.
    pub account: Account,
    /// Its name.
    pub name: String,
    /// Its mark, if it is stalled.
    pub stalled_since: Option<i64>,
    /// What it last did (without its log: the backend reads that).
    pub activity: Activity,
    /// The GPUs its replicas ask for.
    pub gpus: u32,
    /// Its idle-GPU mark.
    pub gpus_idle_since: Option<i64>,
    /// Samples of its GPUs' utilisation in the window, and their peak.
    pub gpu_samples: i64,
    /// See `gpu_samples`, percent.
    pub gpu_peak: Option<f64>,
}

/// The GPUs the job in `row` (its `spec` column) asks for.
fn gpus_of(row: &sqlx::any::AnyRow) -> Result<u32, sqlx::Error> {
    let spec: JobSpec = serde_json::from_str(row.try_get::<&str, _>("spec")?)
        .map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
    Ok(spec.gpus())
}

/// Stall marks in the console's database.
#[derive(Clone)]
pub struct StallStore {
    pool: AnyPool,
}

impl StallStore {
    /// On a migrated pool.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    /// Every running job (of console-run sources: MLflow and local runs
    /// are only recorded here), with its newest metric point, its newest
    /// sample with CPU in use, and its GPUs' samples since `window_from`
    /// (Unix ms).
    pub async fn running(&self, window_from: i64) -> Result<Vec<RunningJob>, AppError> {
        let rows = sqlx::query(
            "SELECT j.id, j.account_id, a.name AS account, a.namespace, a.created_at AS account_created, \
             j.name, j.started_at, j.stalled_since, j.gpus_idle_since, j.spec, \
             (SELECT MAX(s.updated_at) FROM metric_series s WHERE s.job_id = j.id) AS metric_at, \
             (SELECT MAX(r.t) FROM resource_samples r \
              WHERE r.job_id = j.id AND r.res = 0 AND r.cpu >= $1) AS cpu_t, \
             (SELECT COUNT(r.gpu_util) FROM resource_samples r \
              WHERE r.job_id = j.id AND r.res = 0 AND r.t >= $2) AS gpu_samples, \
             (SELECT MAX(r.gpu_util) FROM resource_samples r \
              WHERE r.job_id = j.id AND r.res = 0 AND r.t >= $2) AS gpu_peak \
             FROM jobs j JOIN accounts a ON a.id = j.account_id WHERE j.status = 'running' AND j.source = 'console' ORDER BY j.id",
        )
        .bind(IDLE_CPU_CORES)
        .bind(window_from as f64 / 1000.0)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read the running jobs' activity"))?;
        rows.iter()
            .map(|row| {
                let cpu_t: Option<f64> = row.try_get("cpu_t")?;
                let gpus = gpus_of(row)?;
                let started_at: Option<i64> = row.try_get("started_at")?;
                Ok(RunningJob {
                    id: row.try_get("id")?,
                    account: Account {
                        id: row.try_get("account_id")?,
                        name: row.try_get("account")?,
                        namespace: row.try_get("namespace")?,
                        created_at: row.try_get("account_created")?,
                    },
                    name: row.try_get("name")?,
                    stalled_since: row.try_get("stalled_since")?,
                    gpus,
                    gpus_idle_since: row.try_get("gpus_idle_since")?,
                    gpu_samples: row.try_get("gpu_samples")?,
                    gpu_peak: row.try_get("gpu_peak")?,
                    activity: Activity {
                        started_at,
                        log_at: None,
                        metric_at: row.try_get("metric_at")?,
                        cpu_at: cpu_t.map(|t| (t * 1000.0) as i64),
                    },
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(internal("read the running jobs' activity"))
    }

    /// Marks job `id` stalled since `since` (if it still runs and is not
    /// marked), with `message` in its history at `now`. Whether it did.
    pub async fn mark(
        &self,
        id: i64,
        since: i64,
        now: i64,
        message: &str,
    ) -> Result<bool, AppError> {
        self.set(id, Some(since), now, "stalled", message).await
    }

    /// Clears job `id`'s mark, with `message` in its history at `now`.
    /// Whether it did.
    pub async fn clear(&self, id: i64, now: i64, message: &str) -> Result<bool, AppError> {
        self.set(id, None, now, "running", message).await
    }

    /// Marks job `id`'s GPUs idle since `since` (if it still runs and
    /// is not marked), with `message` in its history. Whether it did.
    pub async fn mark_idle_gpus(
        &self,
        id: i64,
        since: i64,
        now: i64,
        message: &str,
    ) -> Result<bool, AppError> {
        self.set_column(
            "gpus_idle_since",
            id,
            Some(since),
            now,
            "idle GPUs",
            message,
        )
        .await
    }

    /// Clears job `id`'s idle-GPU mark. Whether it did.
    pub async fn clear_idle_gpus(
        &self,
        id: i64,
        now: i64,
        message: &str,
    ) -> Result<bool, AppError> {
        self.set_column("gpus_idle_since", id, None, now, "running", message)
            .await
    }

    /// The running jobs of every account whose GPUs are marked idle, the
    /// longest idle first (the site admin's list).
    pub async fn idle_gpu_jobs(&self) -> Result<Vec<IdleGpuJob>, AppError> {
        let rows = sqlx::query(
            "SELECT a.name AS account, j.name, j.spec, j.gpus_idle_since, \
             COALESCE(u.email, '') AS submitted_by FROM jobs j \
             JOIN accounts a ON a.id = j.account_id LEFT JOIN users u ON u.id = j.user_id \
             WHERE j.status = 'running' AND j.gpus_idle_since IS NOT NULL \
             ORDER BY j.gpus_idle_since, a.name, j.name",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list jobs with idle GPUs"))?;
        rows.iter()
            .map(|row| {
                Ok(IdleGpuJob {
                    account: row.try_get("account")?,
                    job: row.try_get("name")?,
                    submitted_by: row.try_get("submitted_by")?,
                    gpus: gpus_of(row)?,
                    since: row.try_get("gpus_idle_since")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(internal("list jobs with idle GPUs"))
    }

    async fn set(
        &self,
        id: i64,
        since: Option<i64>,
        now: i64,
        state: &str,
        message: &str,
    ) -> Result<bool, AppError> {
        self.set_column("stalled_since", id, since, now, state, message)
            .await
    }

    /// Sets or clears the mark in `column` (a constant of this module).
    async fn set_column(
        &self,
        column: &str,
        id: i64,
        since: Option<i64>,
        now: i64,
        state: &str,
        message: &str,
    ) -> Result<bool, AppError> {
        let mut tx = self.pool.begin_write().await.map_err(internal("begin"))?;
        // Only a running job, and only a change: a mark set twice (two
        // passes racing a restart) is one line in the history.
        let changed = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE jobs SET {column} = $2 WHERE id = $1 AND status = 'running' \
             AND (($2 IS NULL AND {column} IS NOT NULL) \
              OR ($2 IS NOT NULL AND {column} IS NULL))"
        )))
        .bind(id)
        .bind(since)
        .execute(&mut *tx)
        .await
        .map_err(internal("mark a stalled job"))?
        .rows_affected()
            > 0;
        if changed {
            job_entry(&mut *tx, id, now, state, message).await?;
        }
        tx.commit().await.map_err(internal("commit"))?;
        Ok(changed)
    }
}
