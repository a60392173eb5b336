//! What jobs use (resource charts) and what an account may use (quota).

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{Account, AccountQuota, JobResources, Me, Quota, QuotaUse, UsageReport};

/// A job's resource use over time, always within one account.
#[async_trait]
pub trait ResourceCharts: Send + Sync {
    /// Every metric of the job's pods over `[from, to]` (Unix seconds; by
    /// default the job's whole run up to now), about
    /// [`crate::models::RESOURCE_CHART_POINTS`] points per pod.
    async fn job_resources(
        &self,
        account: &Account,
        job: &str,
        from: Option<f64>,
        to: Option<f64>,
    ) -> Result<JobResources, AppError>;
}

/// Accounts' quotas: set by an owner or a site admin, enforced on submit.
#[async_trait]
pub trait Quotas: Send + Sync {
    /// The account `name` as `who` may see its quota: their own account, or
    /// any account for a site admin; others are "not found". The flag says
    /// whether `who` may change the quota.
    async fn scope(&self, who: &Me, name: Option<&str>) -> Result<(Account, bool), AppError>;
    /// The quota and what the account's unfinished jobs use of it.
    async fn quota_use(&self, account: &Account) -> Result<QuotaUse, AppError>;
    /// Sets the quota of the account `name` (its owner or a site admin).
    async fn set_quota(&self, who: &Me, name: &str, quota: Quota) -> Result<QuotaUse, AppError>;
    /// Every account with its members, owners and quota use, by name (site
    /// admins only).
    async fn accounts(&self, who: &Me) -> Result<Vec<AccountQuota>, AppError>;
    /// The member's own caps in their account and what their unfinished
    /// jobs and serving instances there use of them.
    async fn member_use(&self, me: &Me) -> Result<QuotaUse, AppError>;
    /// CPU- and GPU-hours by window, member and day, up to now.
    async fn usage(&self, account: &Account) -> Result<UsageReport, AppError>;
    /// Waits until no other submission, launch or scale-up of `account` is
    /// being admitted (in this console or another on the same database),
    /// and keeps it so until the [`Admission`] is dropped. Checking the quota
    /// and then starting the work must not interleave: two jobs submitted at
    /// once would each find room for itself.
    async fn admission(&self, account: &Account) -> Result<Admission, AppError>;
}

/// Held while one piece of work is checked against the quota and started
/// (see [`Quotas::admission`]); the next waits until it is dropped.
pub struct Admission {
    _held: Box<dyn Send>,
}

impl Admission {
    /// An admission that lasts as long as `guard`.
    pub fn holding(guard: impl Send + 'static) -> Self {
        Self {
            _held: Box::new(guard),
        }
    }
}
