//! Where jobs run. Implemented by the local executor (real processes on this
//! machine) and by the Kubernetes backend, with one contract test suite
//! (`server/tests/it/cluster_contract.rs`) that both must pass.

use std::pin::Pin;

use async_trait::async_trait;
use bytes::Bytes;
use futures_core::Stream;

use crate::error::AppError;
use crate::models::{
    Account, ClusterCapacity, Job, JobHistoryEntry, JobPage, JobQuery, JobSpec, LogRequest, Me,
    Pod, QueueView, StackDump,
};

/// A pod's log as it is read: chunks of whole lines.
pub type LogStream = Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send>>;

/// Something about a job changed (status, replica counts): the job table
/// refreshes when it sees one for its account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEvent {
    /// The account that owns the job.
    pub account_id: i64,
    /// The job's name.
    pub job: String,
}

/// Runs jobs and reports on them, always within one account's namespace.
/// A job of another account is "not found", never "forbidden".
#[async_trait]
pub trait Cluster: Send + Sync {
    /// Where jobs submitted here run, as the table's "where" column shows it.
    fn name(&self) -> String;
    /// `Some(why)` while the cluster cannot be reached (pages show it as a
    /// banner); a local executor is always there.
    fn health(&self) -> Option<String> {
        None
    }
    /// Validates and starts a job in `by`'s account, recording `by` as its
    /// submitter; a taken name is a conflict on `name`.
    async fn submit(&self, by: &Me, spec: JobSpec) -> Result<Job, AppError>;
    /// The account's jobs matching `query`, one page of them.
    async fn list_jobs(&self, account: &Account, query: &JobQuery) -> Result<JobPage, AppError>;
    /// One job.
    async fn job(&self, account: &Account, name: &str) -> Result<Job, AppError>;
    /// The jobs `names`, in the order asked (a comparison of runs); the
    /// first that is not the account's is "not found". One look-up per name
    /// unless a backend reads them together.
    async fn jobs_named(&self, account: &Account, names: &[String]) -> Result<Vec<Job>, AppError> {
        let mut jobs = Vec::with_capacity(names.len());
        for name in names {
            jobs.push(self.job(account, name).await?);
        }
        Ok(jobs)
    }
    /// Ends every replica (SIGTERM, then SIGKILL after a grace period); keeps
    /// the record and logs. Stopping a finished job changes nothing.
    async fn stop(&self, account: &Account, name: &str) -> Result<Job, AppError>;
    /// Stops the job if needed and removes it with its logs.
    async fn delete(&self, account: &Account, name: &str) -> Result<(), AppError>;
    /// The job's replicas: parameter servers first, then trainers, by index.
    async fn pods(&self, account: &Account, name: &str) -> Result<Vec<Pod>, AppError>;
    /// What happened to the job and its replicas, oldest first (the
    /// newest [`HISTORY_SHOWN`](crate::models::HISTORY_SHOWN)): every
    /// change of status, phase or reason, whichever backend made it.
    async fn history(
        &self,
        account: &Account,
        name: &str,
    ) -> Result<Vec<JobHistoryEntry>, AppError>;
    /// A pod's log: the tail, the whole of it, or a live follow.
    async fn log(
        &self,
        account: &Account,
        job: &str,
        pod: &str,
        request: LogRequest,
    ) -> Result<LogStream, AppError>;
    /// When any replica of the job last wrote a line to its log (Unix ms),
    /// `None` if none has: one of the signs of life the stall watcher reads.
    async fn last_log_at(&self, account: &Account, name: &str) -> Result<Option<i64>, AppError>;
    /// A stack dump of every running replica's Python threads (py-spy),
    /// each also written into that replica's log so the log console shows
    /// it where it happened. A replica that is not running, or runs no
    /// Python, has its reason instead. (The use case refuses a job with no
    /// running replica before it asks.)
    async fn stack_dump(&self, account: &Account, name: &str) -> Result<Vec<StackDump>, AppError>;
    /// Changes to any job, for live views.
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<JobEvent>;
    /// What the cluster has room for, what its replicas hold and what waits.
    async fn capacity(&self) -> Result<ClusterCapacity, AppError>;
    /// The queue as a member of `account` sees it: what waits, in order,
    /// what it waits for and whose work holds that (names only of
    /// `account`'s own).
    async fn queue(&self, account: &Account) -> Result<QueueView, AppError>;
}
