//! [`app::ports::Quotas`] in the console's database: each account's quota,
//! what its unfinished jobs request (or, on Kubernetes, what the namespace's
//! ResourceQuota counts), and CPU/GPU hours from the jobs' records.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use app::error::AppError;
use app::models::{
    Account, AccountQuota, JobRun, JobSpec, Me, Quota, QuotaForm, QuotaUse, ResourceTotals,
    UsageReport, UsedFrom,
};
use app::ports::{Admission, Quotas};
use async_trait::async_trait;
use sqlx::{AnyConnection, AnyPool, Connection};

use crate::backend::quota::ClusterQuota;
use crate::storage::db::Engine;
use crate::storage::{audit, internal, users};
use crate::time::now_ms;

/// Quotas on the console's database, mirrored to Kubernetes when jobs run there.
pub struct SqlQuotas {
    pool: AnyPool,
    /// Where quotas are mirrored and use is counted by the cluster itself
    /// (the namespace's ResourceQuota on Kubernetes).
    cluster: Option<Arc<dyn ClusterQuota>>,
    /// One lock per account for admissions within this process.
    admitting: Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>,
}

/// The first key of the PostgreSQL advisory locks that admissions take (the
/// second is the account's id), so that they meet no other lock of the
/// database's.
const ADMISSION_LOCK_CLASS: i32 = 0x5043_5141; // "PCQA"

/// A connection holding an admission's advisory lock; the lock goes with
/// the connection.
struct AdvisoryLock(Option<AnyConnection>);

impl Drop for AdvisoryLock {
    fn drop(&mut self) {
        if let (Some(conn), Ok(runtime)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(async move {
                let _ = conn.close().await;
            });
        }
    }
}

type QuotaRow = (
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    i64,
    String,
);

/// A member's caps as `memberships` stores them.
type QuotaRow4 = (Option<i64>, Option<i64>, Option<i64>, Option<i64>);

pub(crate) fn to_u64(v: Option<i64>) -> Option<u64> {
    v.map(|v| v.max(0) as u64)
}

pub(crate) fn to_i64(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

impl SqlQuotas {
    /// On a migrated pool; `cluster` also gets every quota (as a
    /// ResourceQuota on Kubernetes) and counts what is used.
    pub fn new(pool: AnyPool, cluster: Option<Arc<dyn ClusterQuota>>) -> Self {
        Self {
            pool,
            cluster,
            admitting: Mutex::default(),
        }
    }

    /// On PostgreSQL, other consoles may share the database: a session
    /// advisory lock, on a connection of its own outside the pool (so that
    /// accounts admitting at once cannot take every pooled connection from
    /// the queries their admissions wait on), closed when the admission
    /// ends, which releases the lock even if this process dies. SQLite is one
    /// console's file; the in-process lock is all it needs.
    async fn database_lock(&self, account: &Account) -> Result<Option<AdvisoryLock>, AppError> {
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

    /// Makes every user with `email` a site admin (or no longer one); how
    /// many users that was.
    pub async fn grant_site_admin(&self, email: &str, admin: bool) -> Result<u64, AppError> {
        let done = sqlx::query("UPDATE users SET site_admin = $1 WHERE email = $2")
            .bind(i64::from(admin))
            .bind(email.trim().to_lowercase())
            .execute(&self.pool)
            .await
            .map_err(internal("grant site admin"))?;
        Ok(done.rows_affected())
    }

    async fn stored(&self, account_id: i64) -> Result<(Quota, Option<(String, i64)>), AppError> {
        let row: Option<QuotaRow> = sqlx::query_as(
            "SELECT cpu_millis, memory_bytes, gpu, max_jobs, updated_at, updated_by \
             FROM account_quotas WHERE account_id = $1",
        )
        .bind(account_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read quota"))?;
        Ok(match row {
            Some((cpu, mem, gpu, jobs, at, by)) => (
                Quota {
                    cpu_millis: to_u64(cpu),
                    memory_bytes: to_u64(mem),
                    gpu: to_u64(gpu),
                    max_jobs: to_u64(jobs),
                },
                Some((by, at)),
            ),
            None => (Quota::default(), None),
        })
    }

    /// What the account's pending and running jobs and its serving
    /// instances request (only `member`'s, a user id and email, if given),
    /// and how many jobs.
    async fn requested(
        &self,
        account_id: i64,
        member: Option<(i64, &str)>,
    ) -> Result<(ResourceTotals, u64), AppError> {
        // `-1` and "" match nobody's: then the whole account counts.
        let (user_id, email) = member.unwrap_or((-1, ""));
        let specs: Vec<(String,)> = sqlx::query_as(
            "SELECT spec FROM jobs WHERE account_id = $1 AND source = 'console' \
             AND status IN ('pending', 'running') AND ($2 < 0 OR user_id = $2)",
        )
        .bind(account_id)
        .bind(user_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read active jobs"))?;
        let mut used = ResourceTotals::default();
        for (spec,) in &specs {
            let Ok(spec) = serde_json::from_str::<JobSpec>(spec) else {
                continue;
            };
            if let Ok(t) = spec.totals() {
                used = used.add_times(t, 1);
            }
        }
        // Serving instances count with every replica they may run.
        let serving: Vec<(String,)> = sqlx::query_as(
            "SELECT spec FROM serving WHERE account_id = $1 AND status NOT IN ('failed', 'stopped') \
             AND ($2 = '' OR created_by = $2)",
        )
        .bind(account_id)
        .bind(email)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read active serving"))?;
        for (spec,) in &serving {
            if let Ok(t) = serde_json::from_str::<app::models::ServingSpec>(spec)
                .map_err(|_| AppError::Internal)
                .and_then(|s| s.totals())
            {
                used = used.add_times(t, 1);
            }
        }
        // A notebook counts what its server asks for while it runs.
        let notebooks: Vec<(String,)> = sqlx::query_as(
            "SELECT spec FROM notebooks WHERE account_id = $1 AND status IN ('pending', 'running') \
             AND ($2 < 0 OR user_id = $2)",
        )
        .bind(account_id)
        .bind(user_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read running notebooks"))?;
        for (spec,) in &notebooks {
            if let Ok(t) = serde_json::from_str::<app::models::NotebookSpec>(spec)
                .map_err(|_| AppError::Internal)
                .and_then(|s| s.totals())
            {
                used = used.add_times(t, 1);
            }
        }
        Ok((used, specs.len() as u64))
    }
}

#[async_trait]
impl Quotas for SqlQuotas {
    async fn scope(&self, who: &Me, name: Option<&str>) -> Result<(Account, bool), AppError> {
        // Only a site admin sets quotas: an owner who could raise their own
        // would make the quota protect nothing on a shared cluster.
        let admin = users::is_site_admin(&self.pool, who.user_id).await?;
        match name {
            None => Ok((who.account.clone(), admin)),
            Some(n) if n == who.account.name => Ok((who.account.clone(), admin)),
            Some(n) if admin => users::account_named(&self.pool, n)
                .await?
                .map(|a| (a, true))
                .ok_or_else(|| AppError::not_found(format!("Account “{n}”"))),
            Some(n) => Err(AppError::not_found(format!("Account “{n}”"))),
        }
    }

    async fn accounts(&self, who: &Me) -> Result<Vec<AccountQuota>, AppError> {
        if !users::is_site_admin(&self.pool, who.user_id).await? {
            return Err(AppError::forbidden("Only site admins see every account."));
        }
        let rows: Vec<(i64, String, String, i64, i64)> = sqlx::query_as(
            "SELECT a.id, a.name, a.namespace, a.created_at, \
             (SELECT COUNT(*) FROM memberships m WHERE m.account_id = a.id) \
             FROM accounts a ORDER BY a.name",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list accounts"))?;
        let owners: Vec<(i64, String)> = sqlx::query_as(
            "SELECT m.account_id, u.email FROM memberships m JOIN users u ON u.id = m.user_id \
             WHERE m.role = 'owner' ORDER BY u.email",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list owners"))?;
        let mut out = Vec::with_capacity(rows.len());
        for (id, name, namespace, created_at, members) in rows {
            let account = Account {
                id,
                name,
                namespace,
                created_at,
            };
            out.push(AccountQuota {
                quota: self.quota_use(&account).await?,
                owners: owners
                    .iter()
                    .filter(|(a, _)| *a == id)
                    .map(|(_, e)| e.clone())
                    .collect(),
                members: members.max(0) as u64,
                account,
            });
        }
        Ok(out)
    }

    async fn member_use(&self, me: &Me) -> Result<QuotaUse, AppError> {
        let caps: Option<QuotaRow4> = sqlx::query_as(
            "SELECT max_cpu_millis, max_memory_bytes, max_gpus, max_jobs FROM memberships \
             WHERE account_id = $1 AND user_id = $2",
        )
        .bind(me.account.id)
        .bind(me.user_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a member's caps"))?;
        let quota = caps.map_or_else(Quota::default, |(cpu, mem, gpu, jobs)| Quota {
            cpu_millis: to_u64(cpu),
            memory_bytes: to_u64(mem),
            gpu: to_u64(gpu),
            max_jobs: to_u64(jobs),
        });
        if quota == Quota::default() {
            // No caps: nothing to count.
            return Ok(QuotaUse::default());
        }
        let (used, jobs) = self
            .requested(me.account.id, Some((me.user_id, &me.email)))
            .await?;
        Ok(QuotaUse {
            quota,
            used,
            jobs,
            ..QuotaUse::default()
        })
    }

    async fn quota_use(&self, account: &Account) -> Result<QuotaUse, AppError> {
        let (quota, updated) = self.stored(account.id).await?;
        let (mut used, jobs) = self.requested(account.id, None).await?;
        let mut from = UsedFrom::Console;
        if let Some(cluster) = &self.cluster {
            // The namespace's own count, when its quota controller has one.
            if let Ok(Some(k)) = cluster.quota_used(account).await {
                used = k;
                from = UsedFrom::Kubernetes;
            }
        }
        Ok(QuotaUse {
            quota,
            used,
            jobs,
            from,
            updated,
        })
    }

    async fn admission(&self, account: &Account) -> Result<Admission, AppError> {
        let local = self
            .admitting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(account.id)
            .or_default()
            .clone();
        // In-process first, so that one console's waiters queue here and
        // hold at most one database connection between them.
        let local = local.lock_owned().await;
        let database = self.database_lock(account).await?;
        Ok(Admission::holding((local, database)))
    }

    async fn set_quota(&self, who: &Me, name: &str, quota: Quota) -> Result<QuotaUse, AppError> {
        let (account, may) = self.scope(who, Some(name)).await?;
        if !may {
            return Err(AppError::forbidden(
                "Only a site admin sets an account's quota; ask yours to raise it.",
            ));
        }
        let mut tx = self.pool.begin().await.map_err(internal("set quota"))?;
        sqlx::query("DELETE FROM account_quotas WHERE account_id = $1")
            .bind(account.id)
            .execute(&mut *tx)
            .await
            .map_err(internal("set quota"))?;
        sqlx::query(
            "INSERT INTO account_quotas (account_id, cpu_millis, memory_bytes, gpu, max_jobs, \
             updated_at, updated_by) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(account.id)
        .bind(to_i64(quota.cpu_millis))
        .bind(to_i64(quota.memory_bytes))
        .bind(to_i64(quota.gpu))
        .bind(to_i64(quota.max_jobs))
        .bind(now_ms())
        .bind(&who.email)
        .execute(&mut *tx)
        .await
        .map_err(internal("set quota"))?;
        audit::record(
            &mut *tx,
            audit::Entry {
                account_id: account.id,
                actor: &who.email,
                action: "quota.set",
                detail: &QuotaForm::of(&quota).words(),
            },
        )
        .await?;
        if let Some(cluster) = &self.cluster {
            // Written before the commit: if the cluster refuses, nothing changes.
            cluster.set_quota(&account, &quota).await?;
        }
        tx.commit().await.map_err(internal("set quota"))?;
        tracing::info!(account = %account.name, by = %who.email, ?quota, "quota set");
        self.quota_use(&account).await
    }

    async fn usage(&self, account: &Account) -> Result<UsageReport, AppError> {
        let now = now_ms();
        let month_ago = now - 31 * 86_400_000;
        let rows: Vec<(i64, String, i64, Option<i64>, Option<String>)> = sqlx::query_as(
            "SELECT j.id, j.spec, j.started_at, j.finished_at, u.email FROM jobs j \
             LEFT JOIN users u ON u.id = j.user_id \
             WHERE j.account_id = $1 AND j.source = 'console' AND j.started_at IS NOT NULL \
             AND (j.finished_at IS NULL OR j.finished_at >= $2)",
        )
        .bind(account.id)
        .bind(month_ago)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read usage"))?;
        // GPUs the local executor gave a job's replicas (what they held,
        // whatever they asked); elsewhere the request is what is counted.
        let given: Vec<(i64, String)> = sqlx::query_as(
            "SELECT p.job_id, p.gpus FROM pods p JOIN jobs j ON j.id = p.job_id \
             WHERE j.account_id = $1 AND p.gpus <> ''",
        )
        .bind(account.id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read given GPUs"))?;
        let mut gpus_of: HashMap<i64, u64> = HashMap::new();
        for (job, gpus) in given {
            *gpus_of.entry(job).or_default() += gpus.split(',').count() as u64;
        }
        let mut runs: Vec<JobRun> = rows
            .into_iter()
            .filter_map(|(id, spec, started_at, finished_at, email)| {
                let spec: JobSpec = serde_json::from_str(&spec).ok()?;
                let mut requested = spec.totals().ok()?;
                if let Some(&given) = gpus_of.get(&id) {
                    requested.gpu = given;
                }
                Some(JobRun {
                    user: email.unwrap_or_default(),
                    started_at,
                    finished_at,
                    requested,
                })
            })
            .collect();
        // Notebooks' servers count like jobs, with what they held while they ran.
        let notebooks: Vec<(i64, i64, i64, i64, Option<i64>, String)> = sqlx::query_as(
            "SELECT r.cpu_millis, r.memory_bytes, r.gpu, r.started_at, r.ended_at, u.email \
             FROM notebook_runs r JOIN users u ON u.id = r.user_id \
             WHERE r.account_id = $1 AND (r.ended_at IS NULL OR r.ended_at >= $2)",
        )
        .bind(account.id)
        .bind(month_ago)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read notebook usage"))?;
        runs.extend(notebooks.into_iter().map(
            |(cpu, memory, gpu, started_at, finished_at, user)| JobRun {
                user,
                started_at,
                finished_at,
                requested: ResourceTotals {
                    cpu_millis: cpu.max(0) as u64,
                    memory_bytes: memory.max(0) as u64,
                    gpu: gpu.max(0) as u64,
                },
            },
        ));
        Ok(UsageReport::compute(&runs, now))
    }
}
