//! Pipeline runs: recorded, read, stopped and retried. Their nodes are
//! started by the console's scheduler, as ordinary jobs.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::AppError;
use crate::models::{Account, Me, PipelineRun, PipelineSpec};

/// Something about a pipeline run changed: live views refresh.
pub type PipelineEvent = super::WorkloadEvent;

/// Where pipeline runs are kept.
#[async_trait]
pub trait Pipelines: Send + Sync {
    /// Records a run named `name` of `spec` (checked already) with its
    /// parameters' `values`, every node pending; the scheduler starts them.
    async fn create(
        &self,
        me: &Me,
        name: &str,
        spec: &PipelineSpec,
        values: &BTreeMap<String, Value>,
    ) -> Result<PipelineRun, AppError>;
    /// The account's runs, newest first (without their nodes).
    async fn list(&self, account: &Account) -> Result<Vec<PipelineRun>, AppError>;
    /// One run with its nodes.
    async fn get(&self, account: &Account, name: &str) -> Result<PipelineRun, AppError>;
    /// Stops a running run: its running jobs are stopped and the nodes
    /// that had not ended are stopped too.
    async fn stop(&self, me: &Me, name: &str) -> Result<PipelineRun, AppError>;
    /// "Retry from failed": an ended run that did not succeed runs again;
    /// the nodes that succeeded are kept, the others run anew.
    async fn retry(&self, me: &Me, name: &str) -> Result<PipelineRun, AppError>;
    /// Changes to runs, from this console's scheduler and requests.
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<PipelineEvent>;
}
