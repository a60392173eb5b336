//! A quota the cluster enforces itself: Kubernetes' ResourceQuota in each
//! account's namespace. The console's own admission check comes first; this
//! keeps what the cluster allows in step with it.

use app::error::AppError;
use app::models::{Account, Quota, ResourceTotals};
use async_trait::async_trait;

/// Where an account's quota is mirrored, and what that place counts as used.
#[async_trait]
pub trait ClusterQuota: Send + Sync {
    /// Writes the account's quota (no limit at all removes it).
    async fn set_quota(&self, account: &Account, quota: &Quota) -> Result<(), AppError>;
    /// What the cluster counts as used, once it has counted; `None` before
    /// that or without a quota.
    async fn quota_used(&self, account: &Account) -> Result<Option<ResourceTotals>, AppError>;
}
