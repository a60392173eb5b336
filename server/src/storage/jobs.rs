//! Job records in the console's database, shared by every cluster backend:
//! the table, its filters and the replica counts are served from here.

use app::error::AppError;
use app::models::{
    Account, Job, JobPage, JobQuery, JobRole, JobSort, JobSource, JobSpec, JobStatus, Me, Pod,
    PodPhase, RoleCounts, Workload,
};
use sqlx::any::AnyRow;
use sqlx::{AnyPool, AssertSqlSafe, Row};

use super::internal;
use super::job_history::{self, job_entry, job_moves, pod_moves, PodMove};
use super::tokens::{random_token, token_hash};
use super::users::{me_from, user_columns, UserRow};
use crate::storage::db::WriteTx;
use crate::time::now_ms;

/// Every job token starts with this (access keys with `pck_`).
pub const JOB_TOKEN_PREFIX: &str = "pcj_";

/// A job row with the id the store uses to address it.
#[derive(Debug, Clone)]
pub struct StoredJob {
    /// Database id.
    pub id: i64,
    /// Owning account.
    pub account_id: i64,
    /// The job as the API shows it.
    pub job: Job,
}

/// A change to one pod; `None` leaves a column as it is.
#[derive(Debug, Clone, Default)]
pub struct PodUpdate {
    /// New phase.
    pub phase: Option<PodPhase>,
    /// Process group of the local replica.
    pub pid: Option<i64>,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Start time.
    pub started_at: Option<i64>,
    /// End time.
    pub finished_at: Option<i64>,
    /// Why.
    pub message: Option<String>,
    /// The GPUs the executor gave it.
    pub gpus: Option<Vec<u32>>,
}

/// Jobs and pods in the console's database.
#[derive(Clone)]
pub struct JobStore {
    pool: AnyPool,
}

const JOB_COLUMNS: &str = "id, account_id, name, spec, status, cluster, created_at, started_at, \
     finished_at, message, ps_total, ps_ready, ps_succeeded, ps_failed, tr_total, tr_ready, \
     tr_succeeded, tr_failed, source, stalled_since, gpus_idle_since, \
     (SELECT r.host FROM local_runs r WHERE r.job_id = jobs.id) AS ran_on";

fn count(row: &AnyRow, col: &str) -> Result<u32, sqlx::Error> {
    Ok(u32::try_from(row.try_get::<i64, _>(col)?).unwrap_or(0))
}

fn job_from(row: &AnyRow) -> Result<StoredJob, sqlx::Error> {
    // Text read in place (`&str`): a page lists many jobs.
    let spec: &str = row.try_get("spec")?;
    let status: &str = row.try_get("status")?;
    let spec: JobSpec = serde_json::from_str(spec).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
    Ok(StoredJob {
        id: row.try_get("id")?,
        account_id: row.try_get("account_id")?,
        job: Job {
            name: row.try_get("name")?,
            spec,
            status: JobStatus::parse(status).unwrap_or(JobStatus::Failed),
            cluster: row.try_get("cluster")?,
            created_at: row.try_get("created_at")?,
            started_at: row.try_get("started_at")?,
            finished_at: row.try_get("finished_at")?,
            message: row.try_get("message")?,
            ps: RoleCounts {
                total: count(row, "ps_total")?,
                ready: count(row, "ps_ready")?,
                succeeded: count(row, "ps_succeeded")?,
                failed: count(row, "ps_failed")?,
            },
            trainers: RoleCounts {
                total: count(row, "tr_total")?,
                ready: count(row, "tr_ready")?,
                succeeded: count(row, "tr_succeeded")?,
                failed: count(row, "tr_failed")?,
            },
            source: JobSource::parse(row.try_get::<&str, _>("source")?),
            ran_on: row.try_get("ran_on")?,
            stalled_since: row.try_get("stalled_since")?,
            gpus_idle_since: row.try_get("gpus_idle_since")?,
        },
    })
}

fn pod_from(row: &AnyRow) -> Result<Pod, sqlx::Error> {
    let role: String = row.try_get("role")?;
    let phase: String = row.try_get("phase")?;
    Ok(Pod {
        name: row.try_get("name")?,
        role: JobRole::parse(&role).unwrap_or(JobRole::Trainer),
        index: u32::try_from(row.try_get::<i64, _>("idx")?).unwrap_or(0),
        phase: PodPhase::parse(&phase).unwrap_or(PodPhase::Failed),
        exit_code: row
            .try_get::<Option<i64>, _>("exit_code")?
            .map(|c| c as i32),
        started_at: row.try_get("started_at")?,
        finished_at: row.try_get("finished_at")?,
        message: row.try_get("message")?,
        gpus: row
            .try_get::<String, _>("gpus")?
            .split(',')
            .filter_map(|g| g.trim().parse().ok())
            .collect(),
    })
}

impl JobStore {
    /// Wraps a migrated pool.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    /// The pool, for backends that read the account a job belongs to.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Records a new job of `by`'s account and its pods, all Pending, with a
    /// fresh job token (returned; only its hash is kept) that lets the job's
    /// replicas write the job's metrics.
    pub async fn insert(
        &self,
        by: &Me,
        spec: &JobSpec,
        cluster: &str,
    ) -> Result<(StoredJob, String), AppError> {
        let now = now_ms();
        let account_id = by.account.id;
        let token = format!("{JOB_TOKEN_PREFIX}{}", random_token());
        let spec_json = serde_json::to_string(spec).map_err(|e| {
            tracing::error!(error = %e, "serialising a job spec");
            AppError::Internal
        })?;
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin submit"))?;
        let inserted = sqlx::query_scalar::<_, i64>(
            "INSERT INTO jobs (account_id, name, spec, status, cluster, created_at, ps_total, \
             tr_total, user_id, token_hash) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
        )
        .bind(account_id)
        .bind(&spec.name)
        .bind(&spec_json)
        .bind(JobStatus::Pending.as_str())
        .bind(cluster)
        .bind(now)
        .bind(i64::from(spec.num_ps))
        .bind(i64::from(spec.num_trainers))
        .bind(by.user_id)
        .bind(token_hash(&token))
        .fetch_one(&mut *tx)
        .await;
        let id = match inserted {
            Ok(id) => id,
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                return Err(Workload::Job.name_taken(&spec.name))
            }
            Err(err) => return Err(internal("insert job")(err)),
        };
        job_entry(&mut *tx, id, now, JobStatus::Pending.as_str(), "").await?;
        for (name, role, index) in spec.pod_names() {
            sqlx::query(
                "INSERT INTO pods (job_id, name, role, idx, phase) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(id)
            .bind(&name)
            .bind(role.as_str())
            .bind(i64::from(index))
            .bind(PodPhase::Pending.as_str())
            .execute(&mut *tx)
            .await
            .map_err(internal("insert pod"))?;
        }
        tx.commit().await.map_err(internal("commit submit"))?;
        Ok((self.by_id(id).await?, token))
    }

    /// The id of the account's job `name`; another account's is "not found".
    pub async fn id_of(&self, account_id: i64, name: &str) -> Result<i64, AppError> {
        sqlx::query_scalar("SELECT id FROM jobs WHERE account_id = $1 AND name = $2")
            .bind(account_id)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("look up job id"))?
            .ok_or_else(|| AppError::not_found(format!("Job “{name}”")))
    }

    /// A job by id.
    pub async fn by_id(&self, id: i64) -> Result<StoredJob, AppError> {
        let row = sqlx::query(AssertSqlSafe(format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("get job by id"))?
        .ok_or_else(|| AppError::not_found("Job"))?;
        job_from(&row).map_err(internal("decode job"))
    }

    /// A job of the account by name; another account's is "not found".
    pub async fn get(&self, account_id: i64, name: &str) -> Result<StoredJob, AppError> {
        let row = sqlx::query(AssertSqlSafe(format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE account_id = $1 AND name = $2"
        )))
        .bind(account_id)
        .bind(name)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("get job"))?
        .ok_or_else(|| AppError::not_found(format!("Job “{name}”")))?;
        job_from(&row).map_err(internal("decode job"))
    }

    /// The account's jobs `names`, in the order asked, in one query (a
    /// comparison of a hundred runs asks for a hundred); the first name that
    /// is not the account's job is "not found".
    pub async fn named(&self, account_id: i64, names: &[String]) -> Result<Vec<Job>, AppError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        // Only placeholders are written into the text; the names are bound.
        let rows = names
            .iter()
            .fold(
                sqlx::query(AssertSqlSafe(format!(
                    "SELECT {JOB_COLUMNS} FROM jobs WHERE account_id = $1 AND name IN ({})",
                    super::numbered_list(2, names.len())
                )))
                .bind(account_id),
                |query, name| query.bind(name),
            )
            .fetch_all(&self.pool)
            .await
            .map_err(internal("get jobs by name"))?;
        let mut found = std::collections::HashMap::with_capacity(rows.len());
        for row in &rows {
            let stored = job_from(row).map_err(internal("decode job"))?;
            found.insert(stored.job.name.clone(), stored.job);
        }
        names
            .iter()
            .map(|name| {
                found
                    .get(name)
                    .cloned()
                    .ok_or_else(|| AppError::not_found(format!("Job “{name}”")))
            })
            .collect()
    }

    /// One page of the account's jobs.
    pub async fn list(&self, account_id: i64, query: &JobQuery) -> Result<JobPage, AppError> {
        // Only the shape of the SQL varies; every value is bound.
        let mut filters = String::from("account_id = $1");
        let mut n = 1;
        let mut next = || {
            n += 1;
            format!("${n}")
        };
        if query.status.is_some() {
            filters += &format!(" AND status = {}", next());
        }
        if query.source.is_some() {
            filters += &format!(" AND source = {}", next());
        }
        let name_pattern = query.name_filter().map(|name| {
            let escaped = name
                .to_lowercase()
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            format!("%{escaped}%")
        });
        if name_pattern.is_some() {
            filters += &format!(" AND name LIKE {} ESCAPE '\\'", next());
        }
        if query.from.is_some() {
            filters += &format!(" AND created_at >= {}", next());
        }
        if query.to.is_some() {
            filters += &format!(" AND created_at < {}", next());
        }
        let order = match query.sort {
            JobSort::Newest => "created_at DESC, id DESC",
            JobSort::Oldest => "created_at ASC, id ASC",
            JobSort::Name => "name ASC",
            JobSort::Status => "status ASC, created_at DESC, id DESC",
        };
        let per_page = query.per_page();
        let page = query.page();
        let offset = u64::from(page - 1) * u64::from(per_page);

        macro_rules! bind_filters {
            ($q:expr) => {{
                let mut q = $q.bind(account_id);
                if let Some(status) = query.status {
                    q = q.bind(status.as_str());
                }
                if let Some(source) = query.source {
                    q = q.bind(source.as_str());
                }
                if let Some(pattern) = &name_pattern {
                    q = q.bind(pattern.clone());
                }
                if let Some(from) = query.from {
                    q = q.bind(from);
                }
                if let Some(to) = query.to {
                    q = q.bind(to);
                }
                q
            }};
        }

        // Filters on status and source alone are answered from the counts
        // the triggers of `job_counts` keep; names and dates are counted.
        let counted = name_pattern.is_none() && query.from.is_none() && query.to.is_none();
        let count_sql = if counted {
            format!("SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM job_counts WHERE {filters}")
        } else {
            format!("SELECT COUNT(*) FROM jobs WHERE {filters}")
        };
        // The total rides along with the rows (computed once, it does not
        // depend on them): one query a page, not two.
        let rows = bind_filters!(sqlx::query(AssertSqlSafe(format!(
            "SELECT {JOB_COLUMNS}, ({count_sql}) AS total FROM jobs WHERE {filters} \
             ORDER BY {order} LIMIT {per_page} OFFSET {offset}"
        ))))
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list jobs"))?;
        let total: i64 = match rows.first() {
            Some(row) => row.try_get("total").map_err(internal("decode job total"))?,
            // No row to carry it: past the last page, or nothing matches.
            None => bind_filters!(sqlx::query_scalar(AssertSqlSafe(count_sql)))
                .fetch_one(&self.pool)
                .await
                .map_err(internal("count jobs"))?,
        };
        let jobs = rows
            .iter()
            .map(|r| job_from(r).map(|s| s.job))
            .collect::<Result<Vec<_>, _>>()
            .map_err(internal("decode jobs"))?;
        Ok(JobPage {
            jobs,
            total: total as u64,
            page,
            per_page,
            now: now_ms(),
        })
    }

    /// A job's pods: parameter servers first, then trainers, by index.
    pub async fn pods(&self, job_id: i64) -> Result<Vec<Pod>, AppError> {
        let rows = sqlx::query(
            "SELECT name, role, idx, phase, exit_code, started_at, finished_at, message, gpus \
             FROM pods \
             WHERE job_id = $1 ORDER BY role ASC, idx ASC",
        )
        .bind(job_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list pods"))?;
        rows.iter()
            .map(pod_from)
            .collect::<Result<Vec<_>, _>>()
            .map_err(internal("decode pods"))
    }

    /// What happened to the account's job `name`, oldest first (the
    /// `Cluster` port's `history`).
    pub async fn history_of(
        &self,
        account_id: i64,
        name: &str,
    ) -> Result<Vec<app::models::JobHistoryEntry>, AppError> {
        let job_id = self.id_of(account_id, name).await?;
        job_history::read(&self.pool, job_id).await
    }

    /// The pods of the account's job `name` (the `Cluster` port's `pods`).
    pub async fn pods_of(&self, account_id: i64, name: &str) -> Result<Vec<Pod>, AppError> {
        let stored = self.get(account_id, name).await?;
        self.pods(stored.id).await
    }

    /// The account's job `job` and its pod `pod`; either missing is "not found".
    pub async fn pod_of(
        &self,
        account_id: i64,
        job: &str,
        pod: &str,
    ) -> Result<(StoredJob, Pod), AppError> {
        let stored = self.get(account_id, job).await?;
        let found = self
            .pods(stored.id)
            .await?
            .into_iter()
            .find(|p| p.name == pod);
        match found {
            Some(p) => Ok((stored, p)),
            None => Err(AppError::not_found(format!("Pod “{pod}”"))),
        }
    }

    /// The account `account_id` (a job's owner).
    pub async fn account_of(&self, account_id: i64) -> Result<Account, AppError> {
        let row: (String, String, i64) =
            sqlx::query_as("SELECT name, namespace, created_at FROM accounts WHERE id = $1")
                .bind(account_id)
                .fetch_one(&self.pool)
                .await
                .map_err(internal("read a job's account"))?;
        Ok(Account {
            id: account_id,
            name: row.0,
            namespace: row.1,
            created_at: row.2,
        })
    }

    /// Who submitted the job, as they are now (`None` once they are gone):
    /// a job queued before a restart starts as them.
    pub async fn submitter(&self, job_id: i64) -> Result<Option<Me>, AppError> {
        let row: Option<UserRow> = sqlx::query_as(concat!(
            "SELECT ",
            user_columns!(),
            " FROM jobs j JOIN users u ON u.id = j.user_id \
             JOIN memberships m ON m.user_id = u.id AND m.account_id = j.account_id \
             JOIN accounts a ON a.id = j.account_id WHERE j.id = $1"
        ))
        .bind(job_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a job's submitter"))?;
        Ok(row.map(me_from))
    }

    /// A fresh job token for a job whose replicas have not started (its
    /// first was handed to nobody, or lost with a restart); the old one no
    /// longer works.
    pub async fn reissue_token(&self, job_id: i64) -> Result<String, AppError> {
        let token = format!("{JOB_TOKEN_PREFIX}{}", random_token());
        sqlx::query("UPDATE jobs SET token_hash = $1 WHERE id = $2")
            .bind(token_hash(&token))
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("reissue a job token"))?;
        Ok(token)
    }

    /// Process groups of a job's pods that were started, for recovery.
    pub async fn pod_pids(&self, job_id: i64) -> Result<Vec<(String, i64)>, AppError> {
        sqlx::query_as("SELECT name, pid FROM pods WHERE job_id = $1 AND pid IS NOT NULL")
            .bind(job_id)
            .fetch_all(&self.pool)
            .await
            .map_err(internal("list pod pids"))
    }

    /// Applies `update` to one pod and refreshes the job's role counts.
    pub async fn update_pod(
        &self,
        job_id: i64,
        pod: &str,
        update: PodUpdate,
    ) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin pod update"))?;
        let change = PodMove {
            pod,
            phase: update.phase.map(PodPhase::as_str),
            message: update.message.as_deref(),
            exit_code: update.exit_code.map(i64::from),
        };
        pod_moves(&mut *tx, job_id, now_ms(), change).await?;
        sqlx::query(
            "UPDATE pods SET phase = COALESCE($1, phase), pid = COALESCE($2, pid), \
             exit_code = COALESCE($3, exit_code), started_at = COALESCE($4, started_at), \
             finished_at = COALESCE($5, finished_at), message = COALESCE($6, message), \
             gpus = COALESCE($7, gpus) WHERE job_id = $8 AND name = $9",
        )
        .bind(update.phase.map(PodPhase::as_str))
        .bind(update.pid)
        .bind(update.exit_code.map(i64::from))
        .bind(update.started_at)
        .bind(update.finished_at)
        .bind(update.message)
        .bind(
            update
                .gpus
                .map(|g| g.iter().map(u32::to_string).collect::<Vec<_>>().join(",")),
        )
        .bind(job_id)
        .bind(pod)
        .execute(&mut *tx)
        .await
        .map_err(internal("update pod"))?;
        refresh_role_counts(&mut *tx, job_id).await?;
        tx.commit().await.map_err(internal("commit pod update"))
    }

    /// Takes a job's replicas back to waiting, as they were before they
    /// ran, each saying `message`: preempted (their room given to
    /// higher-priority work), the job runs again when there is room. Their
    /// last run stays in the job's history.
    pub async fn requeue_pods(&self, job_id: i64, message: &str) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin pods requeue"))?;
        let names: Vec<String> = sqlx::query_scalar("SELECT name FROM pods WHERE job_id = $1")
            .bind(job_id)
            .fetch_all(&mut *tx)
            .await
            .map_err(internal("list pods to requeue"))?;
        let at = now_ms();
        for pod in &names {
            let change = PodMove {
                pod,
                phase: Some(PodPhase::Pending.as_str()),
                message: Some(message),
                exit_code: None,
            };
            pod_moves(&mut *tx, job_id, at, change).await?;
        }
        sqlx::query(
            "UPDATE pods SET phase = $1, pid = NULL, exit_code = NULL, started_at = NULL, \
             finished_at = NULL, gpus = '', message = $2 WHERE job_id = $3",
        )
        .bind(PodPhase::Pending.as_str())
        .bind(message)
        .bind(job_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("requeue pods"))?;
        refresh_role_counts(&mut *tx, job_id).await?;
        tx.commit().await.map_err(internal("commit pods requeue"))
    }

    /// Moves a job to `status`; the first move to Running records the start,
    /// the first move to an end state records the end. A job whose replicas
    /// all ended before anyone saw it run (a watch that missed the Running
    /// event) takes its start from its earliest replica's.
    pub async fn set_status(
        &self,
        job_id: i64,
        status: JobStatus,
        message: &str,
    ) -> Result<(), AppError> {
        let now = now_ms();
        let started = (status == JobStatus::Running).then_some(now);
        let finished = (!status.is_active()).then_some(now);
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin a status change"))?;
        job_moves(&mut *tx, job_id, now, status.as_str(), Some(message)).await?;
        sqlx::query(
            "UPDATE jobs SET status = $1, message = $2, \
             started_at = COALESCE(started_at, $3, \
               (SELECT MIN(p.started_at) FROM pods p WHERE p.job_id = $5)), \
             finished_at = COALESCE(finished_at, $4) WHERE id = $5",
        )
        .bind(status.as_str())
        .bind(message)
        .bind(started)
        .bind(finished)
        .bind(job_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("set job status"))?;
        tx.commit()
            .await
            .map_err(internal("commit a status change"))
    }

    /// Removes a job and its pods.
    pub async fn delete(&self, job_id: i64) -> Result<(), AppError> {
        // Children first, explicitly: SQLite enforces ON DELETE CASCADE only
        // where foreign keys are switched on.
        for table in ["metric_blocks", "metric_points"] {
            sqlx::query(AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE series_id IN \
                 (SELECT id FROM metric_series WHERE job_id = $1)"
            )))
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete metric points"))?;
        }
        for table in ["mlflow_params", "mlflow_run_tags"] {
            sqlx::query(AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM mlflow_runs WHERE job_id = $1)"
            )))
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete mlflow run children"))?;
        }
        sqlx::query("DELETE FROM mlflow_runs WHERE job_id = $1")
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete mlflow runs"))?;
        sqlx::query("DELETE FROM local_runs WHERE job_id = $1")
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete local run"))?;
        sqlx::query("DELETE FROM alerts WHERE job_id = $1")
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete a job's alerts"))?;
        sqlx::query("DELETE FROM metric_series WHERE job_id = $1")
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete metric series"))?;
        sqlx::query("DELETE FROM job_history WHERE job_id = $1")
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete job history"))?;
        sqlx::query("DELETE FROM pods WHERE job_id = $1")
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete pods"))?;
        sqlx::query("DELETE FROM jobs WHERE id = $1")
            .bind(job_id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete job"))?;
        Ok(())
    }

    /// The ids of `cluster`'s jobs still marked Pending or Running, by the
    /// namespace of their account (what a cluster-side sampler reads).
    pub async fn active_by_namespace(
        &self,
        cluster: &str,
    ) -> Result<std::collections::HashMap<String, Vec<i64>>, AppError> {
        let rows: Vec<(i64, String)> = sqlx::query_as(
            "SELECT j.id, a.namespace FROM jobs j JOIN accounts a ON a.id = j.account_id \
             WHERE j.cluster = $1 AND j.source = 'console' AND j.status IN ('pending', 'running')",
        )
        .bind(cluster)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list active jobs by namespace"))?;
        let mut by_ns = std::collections::HashMap::<String, Vec<i64>>::new();
        for (id, ns) in rows {
            by_ns.entry(ns).or_default().push(id);
        }
        Ok(by_ns)
    }

    /// How many of the console's jobs on `cluster` wait for their replicas.
    pub async fn count_pending(&self, cluster: &str) -> Result<u32, AppError> {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM jobs WHERE cluster = $1 AND source = 'console' \
             AND status = 'pending'",
        )
        .bind(cluster)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("count pending jobs"))?;
        Ok(u32::try_from(n).unwrap_or(0))
    }

    /// Jobs of `cluster` still marked Pending or Running, for recovery at start.
    pub async fn active(&self, cluster: &str) -> Result<Vec<StoredJob>, AppError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE cluster = $1 AND source = 'console' \
             AND status IN ('pending', 'running')"
        )))
        .bind(cluster)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list active jobs"))?;
        rows.iter()
            .map(job_from)
            .collect::<Result<Vec<_>, _>>()
            .map_err(internal("decode jobs"))
    }
}

/// Recounts a job's replicas by role and phase (the job table's counts).
async fn refresh_role_counts<'e, E>(db: E, job_id: i64) -> Result<(), AppError>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    sqlx::query(
            "UPDATE jobs SET \
             ps_ready = (SELECT COUNT(*) FROM pods p WHERE p.job_id = jobs.id AND p.role = 'pserver' AND p.phase = 'running'), \
             ps_succeeded = (SELECT COUNT(*) FROM pods p WHERE p.job_id = jobs.id AND p.role = 'pserver' AND p.phase = 'succeeded'), \
             ps_failed = (SELECT COUNT(*) FROM pods p WHERE p.job_id = jobs.id AND p.role = 'pserver' AND p.phase = 'failed'), \
             tr_ready = (SELECT COUNT(*) FROM pods p WHERE p.job_id = jobs.id AND p.role = 'trainer' AND p.phase = 'running'), \
             tr_succeeded = (SELECT COUNT(*) FROM pods p WHERE p.job_id = jobs.id AND p.role = 'trainer' AND p.phase = 'succeeded'), \
             tr_failed = (SELECT COUNT(*) FROM pods p WHERE p.job_id = jobs.id AND p.role = 'trainer' AND p.phase = 'failed') \
             WHERE id = $1",
        )
        .bind(job_id)
        .execute(db)
        .await
        .map_err(internal("refresh role counts"))?;
    Ok(())
}
