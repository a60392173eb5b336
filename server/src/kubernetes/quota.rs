//! An account's quota as its namespace's ResourceQuota: read, written,
//! and what the cluster counts as used.

use app::error::AppError;
use app::models::quantity::memory_quantity;
use app::models::{Account, Quota, ResourceTotals};
use async_trait::async_trait;
use k8s_openapi::api::core::v1::ResourceQuota;
use kube::api::{DeleteParams, ListParams};
use kube::Api;

use super::errors::{from_kube, is_not_found};
use super::objects::{CONSOLE, MANAGED_BY};
use super::KubeCluster;
use crate::backend::quota::ClusterQuota;

/// The ResourceQuota the console writes in each account's namespace.
pub const QUOTA_NAME: &str = "paddlecloud";

impl KubeCluster {
    /// The account's ResourceQuota as `(resource, hard, used)`, if it has one.
    pub async fn quota(
        &self,
        account: &Account,
    ) -> Result<Vec<(String, String, String)>, AppError> {
        let api: Api<ResourceQuota> =
            Api::namespaced(self.inner.client.clone(), &account.namespace);
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| from_kube("read the namespace's quota", e))?;
        let mut out = Vec::new();
        for rq in list.items {
            let status = rq.status.unwrap_or_default();
            let used = status.used.unwrap_or_default();
            for (resource, hard) in status.hard.unwrap_or_default() {
                let used = used.get(&resource).map(|q| q.0.clone()).unwrap_or_default();
                out.push((resource, hard.0, used));
            }
        }
        out.sort();
        Ok(out)
    }
}

#[async_trait]
impl ClusterQuota for KubeCluster {
    /// Writes the account's quota as the namespace's ResourceQuota
    /// `paddlecloud` (requests of CPU, memory and `nvidia.com/gpu`; the job
    /// count is the console's to enforce, since one console job is several
    /// Kubernetes objects). No limit at all removes it.
    async fn set_quota(&self, account: &Account, quota: &Quota) -> Result<(), AppError> {
        self.inner.ensure_namespace(account).await?;
        let api: Api<ResourceQuota> = self.inner.api(&account.namespace);
        let mut hard = serde_json::Map::new();
        if let Some(cpu) = quota.cpu_millis {
            hard.insert("requests.cpu".into(), format!("{cpu}m").into());
        }
        if let Some(mem) = quota.memory_bytes {
            hard.insert("requests.memory".into(), memory_quantity(mem).into());
        }
        if let Some(gpu) = quota.gpu {
            hard.insert("requests.nvidia.com/gpu".into(), gpu.to_string().into());
        }
        if hard.is_empty() {
            return match api.delete(QUOTA_NAME, &DeleteParams::default()).await {
                Ok(_) => Ok(()),
                Err(e) if is_not_found(&e) => Ok(()),
                Err(e) => Err(from_kube("remove the namespace's quota", e)),
            };
        }
        let rq: ResourceQuota = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": { "name": QUOTA_NAME, "labels": { MANAGED_BY: CONSOLE } },
            "spec": { "hard": hard },
        }))
        .map_err(|_| AppError::Internal)?;
        let patch = kube::api::Patch::Apply(&rq);
        api.patch(
            QUOTA_NAME,
            &kube::api::PatchParams::apply(CONSOLE).force(),
            &patch,
        )
        .await
        .map_err(|e| from_kube("write the namespace's quota", e))?;
        Ok(())
    }

    /// What the namespace's ResourceQuota `paddlecloud` counts as used, once
    /// its quota controller has counted; `None` before that or without one.
    async fn quota_used(&self, account: &Account) -> Result<Option<ResourceTotals>, AppError> {
        let api: Api<ResourceQuota> = self.inner.api(&account.namespace);
        let rq = match api.get_opt(QUOTA_NAME).await {
            Ok(Some(rq)) => rq,
            Ok(None) => return Ok(None),
            Err(e) => return Err(from_kube("read the namespace's quota", e)),
        };
        let Some(used) = rq.status.and_then(|s| s.used) else {
            return Ok(None);
        };
        Ok(Some(super::capacity::amounts(|name| {
            used.get(&format!("requests.{name}"))
        })))
    }
}
