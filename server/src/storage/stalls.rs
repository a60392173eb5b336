//! What the stall watcher reads and writes: each running job's newest
//! metric point and newest resource sample with CPU in use, and its
//! `stalled_since` mark (with a line in its history each time the mark is
//! set or cleared).

use app::error::AppError;
use app::models::{Account, Activity, IDLE_CPU_CORES};
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
    /// Where it runs (`local` or a cluster's name).
    pub cluster: String,
    /// Its mark, if it is stalled.
    pub stalled_since: Option<i64>,
    /// What it last did (without its log: the backend reads that).
    pub activity: Activity,
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
    /// are only recorded here), with its newest metric point and newest
    /// sample with CPU in use.
    pub async fn running(&self) -> Result<Vec<RunningJob>, AppError> {
        let rows = sqlx::query(
            "SELECT j.id, j.account_id, a.name AS account, a.namespace, a.created_at AS account_created, \
             j.name, j.cluster, j.started_at, j.stalled_since, \
             (SELECT MAX(s.updated_at) FROM metric_series s WHERE s.job_id = j.id) AS metric_at, \
             (SELECT MAX(r.t) FROM resource_samples r \
              WHERE r.job_id = j.id AND r.res = 0 AND r.cpu >= $1) AS cpu_t \
             FROM jobs j JOIN accounts a ON a.id = j.account_id WHERE j.status = 'running' AND j.source = 'console' ORDER BY j.id",
        )
        .bind(IDLE_CPU_CORES)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read the running jobs' activity"))?;
        rows.iter()
            .map(|row| {
                let cpu_t: Option<f64> = row.try_get("cpu_t")?;
                Ok(RunningJob {
                    id: row.try_get("id")?,
                    account: Account {
                        id: row.try_get("account_id")?,
                        name: row.try_get("account")?,
                        namespace: row.try_get("namespace")?,
                        created_at: row.try_get("account_created")?,
                    },
                    name: row.try_get("name")?,
                    cluster: row.try_get("cluster")?,
                    stalled_since: row.try_get("stalled_since")?,
                    activity: Activity {
                        started_at: row.try_get("started_at")?,
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

    async fn set(
        &self,
        id: i64,
        since: Option<i64>,
        now: i64,
        state: &str,
        message: &str,
    ) -> Result<bool, AppError> {
        let mut tx = self.pool.begin_write().await.map_err(internal("begin"))?;
        // Only a running job, and only a change: a mark set twice (two
        // passes racing a restart) is one line in the history.
        let changed = sqlx::query(
            "UPDATE jobs SET stalled_since = $2 WHERE id = $1 AND status = 'running' \
             AND (($2 IS NULL AND stalled_since IS NOT NULL) \
              OR ($2 IS NOT NULL AND stalled_since IS NULL))",
        )
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
