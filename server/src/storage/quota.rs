//! The quota tables (`account_quotas`, members' caps in `memberships`) and
//! what counting use reads: the specs of what is active, started jobs, the
//! GPUs replicas were given, notebooks' runs. Admissions' PostgreSQL
//! advisory lock is here too: it is a database session.

use std::future::Future;

use app::error::AppError;
use app::models::{Account, JobRun, JobSpec, NotebookSpec, Quota, ResourceTotals, ServingSpec};
use sqlx::{AnyConnection, Connection};

use super::db::{Engine, Pool};
use super::{audit, internal};
use crate::storage::db::WriteTx;

/// The first key of the PostgreSQL advisory locks that admissions take (the
/// second is the account's id), so that they meet no other lock of the
/// database's.
const ADMISSION_LOCK_CLASS: i32 = 0x5043_5141; // "PCQA"

/// A connection holding an admission's advisory lock; the lock goes with
/// the connection.
pub struct AdvisoryLock(Option<AnyConnection>);

impl Drop for AdvisoryLock {
    fn drop(&mut self) {
        if let (Some(conn), Ok(runtime)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(async move {
                let _ = conn.close().await;
            });
        }
    }
}

/// A stored limit (NULL is none) as the models count it.
pub fn to_u64(v: Option<i64>) -> Option<u64> {
    v.map(|v| v.max(0) as u64)
}

/// A limit as stored (NULL is none); past `i64::MAX` is `i64::MAX`.
pub fn to_i64(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

/// A quota's four limits as stored (NULL is none).
type Limits = (Option<i64>, Option<i64>, Option<i64>, Option<i64>);

/// A started job's id, spec, start, end and submitter.
type StartedRow = (i64, String, i64, Option<i64>, Option<String>);

/// A quota from its four stored columns.
fn quota_of(cpu: Option<i64>, memory: Option<i64>, gpu: Option<i64>, jobs: Option<i64>) -> Quota {
    Quota {
        cpu_millis: to_u64(cpu),
        memory_bytes: to_u64(memory),
        gpu: to_u64(gpu),
        max_jobs: to_u64(jobs),
    }
}

/// What is active in an account (or of one member): each spec that parses,
/// and how many jobs there are.
#[derive(Debug, Default)]
pub struct Active {
    /// Pending and running console jobs' specs.
    pub jobs: Vec<JobSpec>,
    /// How many such jobs (a spec that no longer parses counts too).
    pub job_count: u64,
    /// Serving instances not failed or stopped.
    pub serving: Vec<ServingSpec>,
    /// Notebooks pending or running.
    pub notebooks: Vec<NotebookSpec>,
}

/// A console job that started, for usage.
#[derive(Debug)]
pub struct StartedJob {
    /// Its id.
    pub id: i64,
    /// Its spec.
    pub spec: JobSpec,
    /// When it started (ms).
    pub started_at: i64,
    /// When it finished, if it has.
    pub finished_at: Option<i64>,
    /// Who submitted it ("" if the user is gone).
    pub user: String,
}

/// Each account's quota and what counts against it.
#[derive(Clone)]
pub struct QuotaTables {
    pool: Pool,
}

impl QuotaTables {
    /// Wraps a migrated pool.
    pub fn new(pool: Pool) -> Self {
        Self { pool }
    }

    /// The pool, for the user and account look-ups beside the quota.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// On PostgreSQL, other consoles may share the database: a session
    /// advisory lock, on a connection of its own outside the pool (so that
    /// accounts admitting at once cannot take every pooled connection from
    /// the queries their admissions wait on), closed when the admission
    /// ends, which releases the lock even if this process dies. SQLite is one
    /// console's file: `None`, the in-process lock is all it needs.
    pub async fn admission_lock(
        &self,
        account: &Account,
    ) -> Result<Option<AdvisoryLock>, AppError> {
        let options = self.pool.connect_options();
        if Engine::of_url(options.database_url.as_str()).ok() != Some(Engine::Postgres) {
            return Ok(None);
        }
        let mut conn = AnyConnection::connect_with(&options)
            .await
            .map_err(internal("admission"))?;
        // Accounts past 2^31 would share a lock: only more waiting.
        let account_key = i32::try_from(account.id).unwrap_or(i32::MAX);
        sqlx::query("SELECT pg_advisory_lock($1, $2)::text")
            .bind(ADMISSION_LOCK_CLASS)
            .bind(account_key)
            .execute(&mut conn)
            .await
            .map_err(internal("admission"))?;
        Ok(Some(AdvisoryLock(Some(conn))))
    }

    /// The account's quota, and who set it when (`None`: never set).
    pub async fn stored(
        &self,
        account_id: i64,
    ) -> Result<(Quota, Option<(String, i64)>), AppError> {
        type QuotaRow = (
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
            i64,
            String,
        );
        let row: Option<QuotaRow> = sqlx::query_as(
            "SELECT cpu_millis, memory_bytes, gpu, max_jobs, updated_at, updated_by \
             FROM account_quotas WHERE account_id = $1",
        )
        .bind(account_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read quota"))?;
        Ok(match row {
            Some((cpu, mem, gpu, jobs, at, by)) => (quota_of(cpu, mem, gpu, jobs), Some((by, at))),
            None => (Quota::default(), None),
        })
    }

    /// What is active in the account: only `member`'s (a user id and email),
    /// if given.
    pub async fn active(
        &self,
        account_id: i64,
        member: Option<(i64, &str)>,
    ) -> Result<Active, AppError> {
        // `-1` and "" match nobody's: then the whole account counts.
        let (user_id, email) = member.unwrap_or((-1, ""));
        let jobs: Vec<(String,)> = sqlx::query_as(
            "SELECT spec FROM jobs WHERE account_id = $1 AND source = 'console' \
             AND status IN ('pending', 'running') AND ($2 < 0 OR user_id = $2)",
        )
        .bind(account_id)
        .bind(user_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read active jobs"))?;
        let serving: Vec<(String,)> = sqlx::query_as(
            "SELECT spec FROM serving WHERE account_id = $1 AND status NOT IN ('failed', 'stopped') \
             AND ($2 = '' OR created_by = $2)",
        )
        .bind(account_id)
        .bind(email)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read active serving"))?;
        let notebooks: Vec<(String,)> = sqlx::query_as(
            "SELECT spec FROM notebooks WHERE account_id = $1 AND status IN ('pending', 'running') \
             AND ($2 < 0 OR user_id = $2)",
        )
        .bind(account_id)
        .bind(user_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read running notebooks"))?;
        fn parsed<T: serde::de::DeserializeOwned>(rows: &[(String,)]) -> Vec<T> {
            rows.iter()
                .filter_map(|(spec,)| serde_json::from_str(spec).ok())
                .collect()
        }
        Ok(Active {
            jobs: parsed(&jobs),
            job_count: jobs.len() as u64,
            serving: parsed(&serving),
            notebooks: parsed(&notebooks),
        })
    }

    /// Every account, by name, with how many members it has.
    pub async fn accounts(&self) -> Result<Vec<(Account, u64)>, AppError> {
        let rows: Vec<(i64, String, String, i64, i64)> = sqlx::query_as(
            "SELECT a.id, a.name, a.namespace, a.created_at, \
             (SELECT COUNT(*) FROM memberships m WHERE m.account_id = a.id) \
             FROM accounts a ORDER BY a.name",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list accounts"))?;
        Ok(rows
            .into_iter()
            .map(|(id, name, namespace, created_at, members)| {
                let account = Account {
                    id,
                    name,
                    namespace,
                    created_at,
                };
                (account, members.max(0) as u64)
            })
            .collect())
    }

    /// Every account's owners: (account id, email), by email.
    pub async fn owners(&self) -> Result<Vec<(i64, String)>, AppError> {
        sqlx::query_as(
            "SELECT m.account_id, u.email FROM memberships m JOIN users u ON u.id = m.user_id \
             WHERE m.role = 'owner' ORDER BY u.email",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list owners"))
    }

    /// The caps of user `user_id` in the account (none: the default).
    pub async fn member_caps(&self, account_id: i64, user_id: i64) -> Result<Quota, AppError> {
        let caps: Option<Limits> = sqlx::query_as(
            "SELECT max_cpu_millis, max_memory_bytes, max_gpus, max_jobs FROM memberships \
             WHERE account_id = $1 AND user_id = $2",
        )
        .bind(account_id)
        .bind(user_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a member's caps"))?;
        Ok(caps.map_or_else(Quota::default, |(cpu, mem, gpu, jobs)| {
            quota_of(cpu, mem, gpu, jobs)
        }))
    }

    /// Replaces the account's quota, set by `by`, with an audit entry that
    /// says `detail`; `before_commit` runs last inside the transaction, so
    /// that if it fails (a cluster refusing the quota) nothing changes.
    pub async fn replace(
        &self,
        account_id: i64,
        quota: &Quota,
        by: &str,
        now: i64,
        detail: &str,
        before_commit: impl Future<Output = Result<(), AppError>>,
    ) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("set quota"))?;
        sqlx::query("DELETE FROM account_quotas WHERE account_id = $1")
            .bind(account_id)
            .execute(&mut *tx)
            .await
            .map_err(internal("set quota"))?;
        sqlx::query(
            "INSERT INTO account_quotas (account_id, cpu_millis, memory_bytes, gpu, max_jobs, \
             updated_at, updated_by) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(account_id)
        .bind(to_i64(quota.cpu_millis))
        .bind(to_i64(quota.memory_bytes))
        .bind(to_i64(quota.gpu))
        .bind(to_i64(quota.max_jobs))
        .bind(now)
        .bind(by)
        .execute(&mut *tx)
        .await
        .map_err(internal("set quota"))?;
        audit::record(
            &mut *tx,
            audit::Entry {
                account_id,
                actor: by,
                action: "quota.set",
                detail,
            },
        )
        .await?;
        before_commit.await?;
        tx.commit().await.map_err(internal("set quota"))
    }

    /// The account's console jobs that started and were still running on or
    /// after `since` (ms); a spec that no longer parses is left out.
    pub async fn started_jobs(
        &self,
        account_id: i64,
        since: i64,
    ) -> Result<Vec<StartedJob>, AppError> {
        let rows: Vec<StartedRow> = sqlx::query_as(
            "SELECT j.id, j.spec, j.started_at, j.finished_at, u.email FROM jobs j \
             LEFT JOIN users u ON u.id = j.user_id \
             WHERE j.account_id = $1 AND j.source = 'console' AND j.started_at IS NOT NULL \
             AND (j.finished_at IS NULL OR j.finished_at >= $2)",
        )
        .bind(account_id)
        .bind(since)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read usage"))?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, spec, started_at, finished_at, email)| {
                Some(StartedJob {
                    id,
                    spec: serde_json::from_str(&spec).ok()?,
                    started_at,
                    finished_at,
                    user: email.unwrap_or_default(),
                })
            })
            .collect())
    }

    /// The GPU ids the local executor gave each of the account's jobs'
    /// replicas: (job id, comma-separated ids), a row per replica given any.
    pub async fn given_gpus(&self, account_id: i64) -> Result<Vec<(i64, String)>, AppError> {
        sqlx::query_as(
            "SELECT p.job_id, p.gpus FROM pods p JOIN jobs j ON j.id = p.job_id \
             WHERE j.account_id = $1 AND p.gpus <> ''",
        )
        .bind(account_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read given GPUs"))
    }

    /// The account's notebook servers' runs that were still going on or
    /// after `since` (ms), with what each held.
    pub async fn notebook_runs(
        &self,
        account_id: i64,
        since: i64,
    ) -> Result<Vec<JobRun>, AppError> {
        let rows: Vec<(i64, i64, i64, i64, Option<i64>, String)> = sqlx::query_as(
            "SELECT r.cpu_millis, r.memory_bytes, r.gpu, r.started_at, r.ended_at, u.email \
             FROM notebook_runs r JOIN users u ON u.id = r.user_id \
             WHERE r.account_id = $1 AND (r.ended_at IS NULL OR r.ended_at >= $2)",
        )
        .bind(account_id)
        .bind(since)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read notebook usage"))?;
        Ok(rows
            .into_iter()
            .map(|(cpu, memory, gpu, started_at, finished_at, user)| JobRun {
                user,
                started_at,
                finished_at,
                requested: ResourceTotals {
                    cpu_millis: cpu.max(0) as u64,
                    memory_bytes: memory.max(0) as u64,
                    gpu: gpu.max(0) as u64,
                },
            })
            .collect())
    }
}
