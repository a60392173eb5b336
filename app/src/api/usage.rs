//! Resource charts of a job, the account's quota and its CPU/GPU hours.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::{
    AccountQuota, ClusterCapacity, JobResources, QuotaForm, QuotaUse, UsageReport,
};

#[cfg(feature = "ssr")]
use super::context::{principal, redirect_back, services};

/// A job's resource charts over `[from, to]` (Unix seconds; default: its
/// whole run).
#[server(prefix = "/api", endpoint = "resource_charts")]
pub async fn resource_charts(
    job: String,
    from: Option<f64>,
    to: Option<f64>,
) -> Result<JobResources, AppError> {
    let who = principal()?;
    services()?
        .resource_charts
        .job_resources(&who.me.account, &job, from, to)
        .await
}

/// What the quota page shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaPage {
    /// The account shown.
    pub account: String,
    /// Whether the viewer may change its quota (owner, site admin).
    pub can_edit: bool,
    /// The quota and its use.
    pub quota: QuotaUse,
    /// CPU and GPU hours.
    pub usage: UsageReport,
    /// Where the account's jobs run: its room, what waits.
    pub cluster: ClusterCapacity,
}

/// The quota page of the caller's account, or (for a site admin) of
/// `account`.
#[server(prefix = "/api", endpoint = "quota_view")]
pub async fn quota_view(account: Option<String>) -> Result<QuotaPage, AppError> {
    let who = principal()?;
    let services = services()?;
    let quotas = services.quotas;
    let (account, can_edit) = quotas.scope(&who.me, account.as_deref()).await?;
    Ok(QuotaPage {
        can_edit,
        quota: quotas.quota_use(&account).await?,
        usage: quotas.usage(&account).await?,
        cluster: services.cluster.capacity().await?,
        account: account.name,
    })
}

/// The queue where the caller's jobs run: what waits, in order, for what,
/// and behind whose work.
#[server(prefix = "/api", endpoint = "job_queue")]
pub async fn job_queue() -> Result<crate::models::QueueView, AppError> {
    let who = principal()?;
    services()?.cluster.queue(&who.me.account).await
}

/// Every account with its use against its quota (site admins).
#[server(prefix = "/api", endpoint = "site_accounts")]
pub async fn site_accounts() -> Result<Vec<AccountQuota>, AppError> {
    services()?.quotas.accounts(&principal()?.me).await
}

/// Running jobs of every account holding idle GPUs (site admins).
#[server(prefix = "/api", endpoint = "idle_gpu_jobs")]
pub async fn idle_gpu_jobs() -> Result<Vec<crate::models::IdleGpuJob>, AppError> {
    services()?.watchdog.idle_gpu_jobs(&principal()?.me).await
}

/// The caller's account's quota and use, for the submit dialog.
#[server(prefix = "/api", endpoint = "quota_left")]
pub async fn quota_left() -> Result<QuotaUse, AppError> {
    let who = principal()?;
    services()?.quotas.quota_use(&who.me.account).await
}

/// The room where the caller's jobs run (free and in all), for the submit
/// dialog's room line. Every member may read it, as the Quota page shows it.
#[server(prefix = "/api", endpoint = "cluster_room")]
pub async fn cluster_room() -> Result<ClusterCapacity, AppError> {
    principal()?;
    services()?.cluster.capacity().await
}

/// Sets the quota of `account` from the form (owner or site admin).
#[server(prefix = "/api", endpoint = "set_quota")]
pub async fn set_quota(account: String, form: QuotaForm) -> Result<QuotaUse, AppError> {
    let who = principal()?;
    let quota = form.to_quota()?;
    let done = services()?
        .quotas
        .set_quota(&who.me, &account, quota)
        .await?;
    redirect_back(&[], "/quota")?;
    Ok(done)
}
