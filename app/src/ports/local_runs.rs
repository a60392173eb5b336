//! Local runs: programs run on someone's machine that report themselves as
//! jobs (`source: local`). Every report may come twice (a client replays
//! what it spooled while offline): each is idempotent.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::AppError;
use crate::models::{
    Account, Job, JobStatus, LocalRun, LocalRunEnd, LocalRunStart, LogAck, LogChunk, Me,
};

/// Where local runs are recorded. Another account's run is "not found".
#[async_trait]
pub trait LocalRuns: Send + Sync {
    /// Records a run as a running job (or returns the one this
    /// `client_id` started already).
    async fn start(&self, me: &Me, start: LocalRunStart) -> Result<Job, AppError>;
    /// Adds output from `chunk.offset` on; what arrived already is skipped,
    /// a gap is a conflict naming the offset expected.
    async fn log(&self, account: &Account, name: &str, chunk: LogChunk)
        -> Result<LogAck, AppError>;
    /// The run is alive: a lost run comes back to running. Returns its
    /// status.
    async fn heartbeat(&self, account: &Account, name: &str) -> Result<JobStatus, AppError>;
    /// Records how it ended (again: nothing changes; after "lost": the
    /// real end replaces it).
    async fn end(&self, account: &Account, name: &str, end: LocalRunEnd) -> Result<Job, AppError>;
    /// Adds parameters (a name given again takes the new value).
    async fn log_params(
        &self,
        account: &Account,
        name: &str,
        params: BTreeMap<String, Value>,
    ) -> Result<LocalRun, AppError>;
    /// Its parameters and where it ran.
    async fn get(&self, account: &Account, name: &str) -> Result<LocalRun, AppError>;
}
