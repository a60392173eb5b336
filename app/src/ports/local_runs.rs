//! Local runs: programs run on someone's machine that report themselves as
//! jobs (`source: local`). Every report may come twice (a client replays
//! what it spooled while offline): each is idempotent.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::AppError;
use crate::models::{
    Account, Beat, Job, LocalRun, LocalRunEnd, LocalRunStart, LogAck, LogChunk, Me,
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
    /// The run is alive: a lost run comes back to running. Says its status
    /// and whether someone asked it to stop.
    async fn heartbeat(&self, account: &Account, name: &str) -> Result<Beat, AppError>;
    /// Stop: the console cannot end a process on another machine, so the
    /// run's next heartbeat tells its client to interrupt the program.
    async fn request_stop(&self, me: &Me, name: &str) -> Result<Job, AppError>;
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
