//! [`app::ports::Quotas`] in the console's database: each account's quota,
//! what its unfinished jobs request (or, on Kubernetes, what the namespace's
//! ResourceQuota counts), and CPU/GPU hours from the jobs' records.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use app::error::AppError;
use app::models::{
    Account, AccountQuota, JobRun, Me, Quota, QuotaForm, QuotaUse, ResourceTotals, UsageReport,
    UsedFrom,
};
use app::ports::{Admission, Quotas};
use async_trait::async_trait;

use crate::backend::quota::ClusterQuota;
use crate::storage::db::Pool;
use crate::storage::quota::QuotaTables;
use crate::storage::users;
use crate::time::now_ms;

/// Quotas on the console's database, mirrored to Kubernetes when jobs run there.
pub struct SqlQuotas {
    tables: QuotaTables,
    /// Where quotas are mirrored and use is counted by the cluster itself
    /// (the namespace's ResourceQuota on Kubernetes).
    cluster: Option<Arc<dyn ClusterQuota>>,
    /// One lock per account for admissions within this process.
    admitting: Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>,
}

impl SqlQuotas {
    /// On a migrated pool; `cluster` also gets every quota (as a
    /// ResourceQuota on Kubernetes) and counts what is used.
    pub fn new(pool: Pool, cluster: Option<Arc<dyn ClusterQuota>>) -> Self {
        Self {
            tables: QuotaTables::new(pool),
            cluster,
            admitting: Mutex::default(),
        }
    }

    /// Makes every user with `email` a site admin (or no longer one); how
    /// many users that was.
    pub async fn grant_site_admin(&self, email: &str, admin: bool) -> Result<u64, AppError> {
        users::grant_site_admin(self.tables.pool(), email, admin).await
    }

    /// What the account's pending and running jobs, its serving instances
    /// (with every replica they may run) and its running notebooks request
    /// (only `member`'s, a user id and email, if given), and how many jobs.
    async fn requested(
        &self,
        account_id: i64,
        member: Option<(i64, &str)>,
    ) -> Result<(ResourceTotals, u64), AppError> {
        let active = self.tables.active(account_id, member).await?;
        let totals = (active.jobs.iter().map(|s| s.totals()))
            .chain(active.serving.iter().map(|s| s.totals()))
            .chain(active.notebooks.iter().map(|s| s.totals()));
        let used = totals
            .flatten()
            .fold(ResourceTotals::default(), |used, t| used.add_times(t, 1));
        Ok((used, active.job_count))
    }
}

#[async_trait]
impl Quotas for SqlQuotas {
    async fn scope(&self, who: &Me, name: Option<&str>) -> Result<(Account, bool), AppError> {
        // Only a site admin sets quotas: an owner who could raise their own
        // would make the quota protect nothing on a shared cluster.
        let admin = users::is_site_admin(self.tables.pool(), who.user_id).await?;
        match name {
            None => Ok((who.account.clone(), admin)),
            Some(n) if n == who.account.name => Ok((who.account.clone(), admin)),
            Some(n) if admin => users::account_named(self.tables.pool(), n)
                .await?
                .map(|a| (a, true))
                .ok_or_else(|| AppError::not_found(format!("Account “{n}”"))),
            Some(n) => Err(AppError::not_found(format!("Account “{n}”"))),
        }
    }

    async fn accounts(&self, who: &Me) -> Result<Vec<AccountQuota>, AppError> {
        if !users::is_site_admin(self.tables.pool(), who.user_id).await? {
            return Err(AppError::forbidden("Only site admins see every account."));
        }
        let accounts = self.tables.accounts().await?;
        let owners = self.tables.owners().await?;
        let mut out = Vec::with_capacity(accounts.len());
        for (account, members) in accounts {
            out.push(AccountQuota {
                quota: self.quota_use(&account).await?,
                owners: owners
                    .iter()
                    .filter(|(a, _)| *a == account.id)
                    .map(|(_, e)| e.clone())
                    .collect(),
                members,
                account,
            });
        }
        Ok(out)
    }

    async fn member_use(&self, me: &Me) -> Result<QuotaUse, AppError> {
        let quota = self.tables.member_caps(me.account.id, me.user_id).await?;
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
        let (quota, updated) = self.tables.stored(account.id).await?;
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
        let database = self.tables.admission_lock(account).await?;
        Ok(Admission::holding((local, database)))
    }

    async fn set_quota(&self, who: &Me, name: &str, quota: Quota) -> Result<QuotaUse, AppError> {
        let (account, may) = self.scope(who, Some(name)).await?;
        if !may {
            return Err(AppError::forbidden(
                "Only a site admin sets an account's quota; ask yours to raise it.",
            ));
        }
        let cluster = async {
            match &self.cluster {
                Some(cluster) => cluster.set_quota(&account, &quota).await,
                None => Ok(()),
            }
        };
        self.tables
            .replace(
                account.id,
                &quota,
                &who.email,
                now_ms(),
                &QuotaForm::of(&quota).words(),
                cluster,
            )
            .await?;
        tracing::info!(account = %account.name, by = %who.email, ?quota, "quota set");
        self.quota_use(&account).await
    }

    async fn usage(&self, account: &Account) -> Result<UsageReport, AppError> {
        let now = now_ms();
        let month_ago = now - 31 * 86_400_000;
        let jobs = self.tables.started_jobs(account.id, month_ago).await?;
        // GPUs the local executor gave a job's replicas (what they held,
        // whatever they asked); elsewhere the request is what is counted.
        let mut gpus_of: HashMap<i64, u64> = HashMap::new();
        for (job, gpus) in self.tables.given_gpus(account.id).await? {
            *gpus_of.entry(job).or_default() += gpus.split(',').count() as u64;
        }
        let mut runs: Vec<JobRun> = jobs
            .into_iter()
            .filter_map(|job| {
                let mut requested = job.spec.totals().ok()?;
                if let Some(&given) = gpus_of.get(&job.id) {
                    requested.gpu = given;
                }
                Some(JobRun {
                    user: job.user,
                    started_at: job.started_at,
                    finished_at: job.finished_at,
                    requested,
                })
            })
            .collect();
        // Notebooks' servers count like jobs, with what they held while they ran.
        runs.extend(self.tables.notebook_runs(account.id, month_ago).await?);
        Ok(UsageReport::compute(&runs, now))
    }
}

/// Re-exported for the members' caps, which are stored the same way.
pub(crate) use crate::storage::quota::{to_i64, to_u64};
