//! Pipeline runs and their nodes in the console's database. A node's job
//! is an ordinary row of `jobs` (named `<run>-<node>[-rN]`); reading a run
//! joins each node to its job's status, so every console replica sees the
//! same run. Starting a node is claimed with a conditional update, so two
//! replicas never submit the same try.

use std::collections::BTreeMap;

use app::error::AppError;
use app::models::{
    JobStatus, Me, NodeState, NodeStatus, PipelineRun, PipelineSpec, RunStatus, Workload,
};
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};

use super::users::{me_from, user_columns, UserRow};
use super::{internal, to_json};
use crate::storage::db::WriteTx;
use crate::time::now_ms;

/// Rows inserted per statement when a run's nodes are recorded.
const NODE_BATCH: usize = 200;

/// Pipeline runs.
#[derive(Clone)]
pub struct PipelineStore {
    pool: AnyPool,
}

/// A node's job as the jobs table has it now.
#[derive(Debug, Clone)]
pub struct JobNow {
    /// Its status.
    pub status: JobStatus,
    /// Its message.
    pub message: String,
    /// Unix ms.
    pub started_at: Option<i64>,
    /// Unix ms.
    pub finished_at: Option<i64>,
}

/// A run with what the scheduler needs besides what users see.
#[derive(Debug, Clone)]
pub struct StoredRun {
    /// Database id.
    pub id: i64,
    /// The owning account.
    pub account_id: i64,
    /// The run as users see it.
    pub run: PipelineRun,
    /// Per node (spec order): retries left, and its job now (if it has one
    /// and the job still exists).
    pub nodes: Vec<(u32, Option<JobNow>)>,
}

/// A change to one node.
#[derive(Debug, Clone, Default)]
pub struct NodeUpdate {
    /// New status.
    pub status: Option<NodeStatus>,
    /// New message.
    pub message: Option<String>,
    /// Not before (Unix ms); `Some(None)` clears it.
    pub not_before: Option<Option<i64>>,
    /// Retries left.
    pub retries_left: Option<u32>,
    /// Unix ms.
    pub started_at: Option<i64>,
    /// Unix ms.
    pub finished_at: Option<i64>,
}

const RUN_COLUMNS: &str = "r.id, r.account_id, r.name, r.spec, r.vals, r.status, r.message, \
                           r.created_by, r.created_at, r.finished_at";

fn json_of<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T, AppError> {
    serde_json::from_str(text).map_err(|err| {
        tracing::error!(error = %err, what, "a stored pipeline does not read back");
        AppError::Internal
    })
}

fn run_from(row: &AnyRow) -> Result<(i64, i64, PipelineRun), AppError> {
    let read = |e: sqlx::Error| internal("read a pipeline run")(e);
    let spec: String = row.try_get("spec").map_err(read)?;
    let vals: String = row.try_get("vals").map_err(read)?;
    let status: String = row.try_get("status").map_err(read)?;
    Ok((
        row.try_get("id").map_err(read)?,
        row.try_get("account_id").map_err(read)?,
        PipelineRun {
            name: row.try_get("name").map_err(read)?,
            spec: json_of::<PipelineSpec>(&spec, "spec")?,
            values: json_of::<BTreeMap<String, Value>>(&vals, "values")?,
            status: RunStatus::parse(&status).unwrap_or(RunStatus::Failed),
            message: row.try_get("message").map_err(read)?,
            created_by: row.try_get("created_by").map_err(read)?,
            created_at: row.try_get("created_at").map_err(read)?,
            finished_at: row.try_get("finished_at").map_err(read)?,
            nodes: Vec::new(),
        },
    ))
}

impl PipelineStore {
    /// Runs in `pool`.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    /// Records a run of `spec` named `name` by `me`, every node pending.
    pub async fn insert(
        &self,
        me: &Me,
        name: &str,
        spec: &PipelineSpec,
        values: &BTreeMap<String, Value>,
    ) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin a pipeline run"))?;
        let inserted = sqlx::query_scalar::<_, i64>(
            "INSERT INTO pipeline_runs (account_id, user_id, name, spec, vals, status, message, \
             created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, '', $7, $8) RETURNING id",
        )
        .bind(me.account.id)
        .bind(me.user_id)
        .bind(name)
        .bind(to_json(spec)?)
        .bind(to_json(values)?)
        .bind(RunStatus::Running.as_str())
        .bind(&me.email)
        .bind(now_ms())
        .fetch_one(&mut *tx)
        .await;
        let run_id = match inserted {
            Ok(id) => id,
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                return Err(Workload::PipelineRun.name_taken(name))
            }
            Err(err) => return Err(internal("insert a pipeline run")(err)),
        };
        for (chunk_no, chunk) in spec.nodes.chunks(NODE_BATCH).enumerate() {
            let sql = format!(
                "INSERT INTO pipeline_nodes (run_id, idx, name, status, message, attempt, \
                 retries_left) VALUES {}",
                super::numbered_rows(chunk.len(), "(?, ?, ?, ?, '', 0, ?)")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (i, node) in chunk.iter().enumerate() {
                query = query
                    .bind(run_id)
                    .bind((chunk_no * NODE_BATCH + i) as i64)
                    .bind(node.name.clone())
                    .bind(NodeStatus::Pending.as_str())
                    .bind(i64::from(node.retries));
            }
            query
                .execute(&mut *tx)
                .await
                .map_err(internal("insert pipeline nodes"))?;
        }
        tx.commit().await.map_err(internal("commit a pipeline run"))
    }

    /// Ids of the runs still running (with their account), oldest first.
    pub async fn active(&self) -> Result<Vec<i64>, AppError> {
        sqlx::query_scalar("SELECT id FROM pipeline_runs WHERE status = $1 ORDER BY id")
            .bind(RunStatus::Running.as_str())
            .fetch_all(&self.pool)
            .await
            .map_err(internal("list running pipelines"))
    }

    /// Run `id` with its nodes and their jobs.
    pub async fn load(&self, id: i64) -> Result<StoredRun, AppError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {RUN_COLUMNS} FROM pipeline_runs r WHERE r.id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a pipeline run"))?
        .ok_or_else(|| AppError::not_found("Pipeline run"))?;
        let (id, account_id, run) = run_from(&row)?;
        self.with_nodes(id, account_id, run).await
    }

    /// `account_id`'s run `name`.
    pub async fn get(&self, account_id: i64, name: &str) -> Result<StoredRun, AppError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {RUN_COLUMNS} FROM pipeline_runs r WHERE r.account_id = $1 AND r.name = $2"
        )))
        .bind(account_id)
        .bind(name)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a pipeline run"))?
        .ok_or_else(|| AppError::not_found(format!("Pipeline run “{name}”")))?;
        let (id, account_id, run) = run_from(&row)?;
        self.with_nodes(id, account_id, run).await
    }

    /// `account_id`'s runs, newest first, without their nodes.
    pub async fn list(&self, account_id: i64) -> Result<Vec<PipelineRun>, AppError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {RUN_COLUMNS} FROM pipeline_runs r WHERE r.account_id = $1 ORDER BY r.id DESC"
        )))
        .bind(account_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list pipeline runs"))?;
        rows.iter()
            .map(|r| run_from(r).map(|(_, _, run)| run))
            .collect()
    }

    async fn with_nodes(
        &self,
        id: i64,
        account_id: i64,
        mut run: PipelineRun,
    ) -> Result<StoredRun, AppError> {
        let rows = sqlx::query(
            "SELECT n.name, n.status, n.message, n.attempt, n.retries_left, n.job, n.not_before, \
             n.started_at, n.finished_at, j.status AS job_status, j.message AS job_message, \
             j.started_at AS job_started, j.finished_at AS job_finished \
             FROM pipeline_nodes n \
             LEFT JOIN jobs j ON j.account_id = $2 AND j.name = n.job \
             WHERE n.run_id = $1 ORDER BY n.idx",
        )
        .bind(id)
        .bind(account_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read pipeline nodes"))?;
        let read = |e: sqlx::Error| internal("read a pipeline node")(e);
        let mut extra = Vec::with_capacity(rows.len());
        for row in &rows {
            let status: String = row.try_get("status").map_err(read)?;
            let job_status: Option<String> = row.try_get("job_status").map_err(read)?;
            let attempt: i64 = row.try_get("attempt").map_err(read)?;
            let retries_left: i64 = row.try_get("retries_left").map_err(read)?;
            run.nodes.push(NodeState {
                name: row.try_get("name").map_err(read)?,
                status: NodeStatus::parse(&status).unwrap_or(NodeStatus::Failed),
                message: row.try_get("message").map_err(read)?,
                attempt: u32::try_from(attempt).unwrap_or(0),
                job: row.try_get("job").map_err(read)?,
                not_before: row.try_get("not_before").map_err(read)?,
                started_at: row.try_get("started_at").map_err(read)?,
                finished_at: row.try_get("finished_at").map_err(read)?,
            });
            let job = match job_status.as_deref().and_then(JobStatus::parse) {
                Some(status) => Some(JobNow {
                    status,
                    message: row.try_get("job_message").map_err(read)?,
                    started_at: row.try_get("job_started").map_err(read)?,
                    finished_at: row.try_get("job_finished").map_err(read)?,
                }),
                None => None,
            };
            extra.push((u32::try_from(retries_left).unwrap_or(0), job));
        }
        Ok(StoredRun {
            id,
            account_id,
            run,
            nodes: extra,
        })
    }

    /// Claims try `attempt` of node `idx` (its job `job`): true for the one
    /// caller whose claim holds.
    pub async fn claim(
        &self,
        run_id: i64,
        idx: usize,
        attempt: u32,
        job: &str,
    ) -> Result<bool, AppError> {
        let done = sqlx::query(
            "UPDATE pipeline_nodes SET attempt = $1, job = $2, not_before = NULL, message = $3, \
             started_at = $8 WHERE run_id = $4 AND idx = $5 AND attempt = $6 AND status = $7 \
             AND EXISTS (SELECT 1 FROM pipeline_runs r WHERE r.id = $4 AND r.status = $9)",
        )
        .bind(i64::from(attempt))
        .bind(job)
        .bind("Submitting its job…")
        .bind(run_id)
        .bind(idx as i64)
        .bind(i64::from(attempt.saturating_sub(1)))
        .bind(NodeStatus::Pending.as_str())
        .bind(now_ms())
        .bind(RunStatus::Running.as_str())
        .execute(&self.pool)
        .await
        .map_err(internal("claim a pipeline node"))?;
        Ok(done.rows_affected() == 1)
    }

    /// Gives back a claim whose job could not be submitted yet (the quota
    /// is full): the same try is made again after `not_before`.
    pub async fn unclaim(
        &self,
        run_id: i64,
        idx: usize,
        attempt: u32,
        why: &str,
        not_before: i64,
    ) -> Result<(), AppError> {
        sqlx::query(
            "UPDATE pipeline_nodes SET attempt = $1, job = NULL, not_before = $2, message = $3 \
             WHERE run_id = $4 AND idx = $5",
        )
        .bind(i64::from(attempt.saturating_sub(1)))
        .bind(not_before)
        .bind(why)
        .bind(run_id)
        .bind(idx as i64)
        .execute(&self.pool)
        .await
        .map_err(internal("give back a pipeline node"))?;
        Ok(())
    }

    /// Changes node `idx` of run `run_id`.
    pub async fn update_node(
        &self,
        run_id: i64,
        idx: usize,
        u: NodeUpdate,
    ) -> Result<(), AppError> {
        let (set_not_before, not_before) = match u.not_before {
            Some(v) => (1_i64, v),
            None => (0, None),
        };
        sqlx::query(
            "UPDATE pipeline_nodes SET status = COALESCE($1, status), \
             message = COALESCE($2, message), \
             not_before = CASE WHEN $3 = 1 THEN $4 ELSE not_before END, \
             retries_left = COALESCE($5, retries_left), \
             started_at = COALESCE($6, started_at), finished_at = COALESCE($7, finished_at) \
             WHERE run_id = $8 AND idx = $9",
        )
        .bind(u.status.map(NodeStatus::as_str))
        .bind(u.message)
        .bind(set_not_before)
        .bind(not_before)
        .bind(u.retries_left.map(i64::from))
        .bind(u.started_at)
        .bind(u.finished_at)
        .bind(run_id)
        .bind(idx as i64)
        .execute(&self.pool)
        .await
        .map_err(internal("update a pipeline node"))?;
        Ok(())
    }

    /// Ends run `run_id` as `status` (once: a run already ended stays so).
    pub async fn end(
        &self,
        run_id: i64,
        status: RunStatus,
        message: &str,
    ) -> Result<bool, AppError> {
        let done = sqlx::query(
            "UPDATE pipeline_runs SET status = $1, message = $2, finished_at = $3 \
             WHERE id = $4 AND status = $5",
        )
        .bind(status.as_str())
        .bind(message)
        .bind(now_ms())
        .bind(run_id)
        .bind(RunStatus::Running.as_str())
        .execute(&self.pool)
        .await
        .map_err(internal("end a pipeline run"))?;
        Ok(done.rows_affected() == 1)
    }

    /// "Retry from failed": every node that did not succeed is pending
    /// again with its retries back, and the run runs again. Only an ended
    /// run is retried.
    pub async fn reopen(&self, run_id: i64, spec: &PipelineSpec) -> Result<bool, AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin a retry"))?;
        let done = sqlx::query(
            "UPDATE pipeline_runs SET status = $1, message = '', finished_at = NULL \
             WHERE id = $2 AND status IN ('failed', 'stopped')",
        )
        .bind(RunStatus::Running.as_str())
        .bind(run_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("reopen a pipeline run"))?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        for (idx, node) in spec.nodes.iter().enumerate() {
            // The job name of the next try follows the last one's: `job`
            // is cleared so the node is due, `attempt` kept.
            sqlx::query(
                "UPDATE pipeline_nodes SET status = $1, message = 'Retried from failed.', \
                 job = NULL, not_before = NULL, retries_left = $2, finished_at = NULL \
                 WHERE run_id = $3 AND idx = $4 AND status <> 'succeeded'",
            )
            .bind(NodeStatus::Pending.as_str())
            .bind(i64::from(node.retries))
            .bind(run_id)
            .bind(idx as i64)
            .execute(&mut *tx)
            .await
            .map_err(internal("reopen a pipeline node"))?;
        }
        tx.commit().await.map_err(internal("commit a retry"))?;
        Ok(true)
    }

    /// The newest finished model version job `job` of `account_id`
    /// registered, as `owner/name:version`.
    pub async fn model_of(&self, account_id: i64, job: &str) -> Result<Option<String>, AppError> {
        let row: Option<(String, String, i64)> = sqlx::query_as(
            "SELECT acc.name, a.name, v.version FROM model_versions v \
             JOIN assets a ON a.id = v.asset_id JOIN accounts acc ON acc.id = a.account_id \
             WHERE a.account_id = $1 AND a.kind = 'model' AND v.job = $2 AND v.state = 'ready' \
             ORDER BY v.created_at DESC, v.version DESC LIMIT 1",
        )
        .bind(account_id)
        .bind(job)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("find the model a job registered"))?;
        Ok(row.map(|(owner, name, v)| format!("{owner}/{name}:{v}")))
    }

    /// The last value (by step) of metric `tag` of job `job` of
    /// `account_id`.
    pub async fn metric_of(
        &self,
        account_id: i64,
        job: &str,
        tag: &str,
    ) -> Result<Option<f64>, AppError> {
        let value: Option<Option<f64>> = sqlx::query_scalar(
            "SELECT s.last_value FROM metric_series s JOIN jobs j ON j.id = s.job_id \
             WHERE j.account_id = $1 AND j.name = $2 AND s.tag = $3",
        )
        .bind(account_id)
        .bind(job)
        .bind(tag)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a job's last metric"))?;
        Ok(value.flatten())
    }

    /// Who submitted run `run_id`, as they are now in its account (`None`
    /// once they have left it).
    pub async fn submitter(&self, run_id: i64) -> Result<Option<Me>, AppError> {
        let row: Option<UserRow> = sqlx::query_as(concat!(
            "SELECT ",
            user_columns!(),
            " FROM pipeline_runs r JOIN users u ON u.id = r.user_id \
             JOIN memberships m ON m.user_id = u.id AND m.account_id = r.account_id \
             JOIN accounts a ON a.id = r.account_id WHERE r.id = $1"
        ))
        .bind(run_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a pipeline run's submitter"))?;
        Ok(row.map(me_from))
    }
}
