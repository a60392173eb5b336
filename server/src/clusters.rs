//! Several backends behind one [`Cluster`]: new jobs go to the default one
//! (`--cluster`), and a job already recorded is stopped, deleted and read
//! where it ran (its `cluster` column). So jobs that ran locally (before a
//! switch to Kubernetes, or MLflow runs) keep their logs and controls.

use std::sync::Arc;

use app::error::AppError;
use app::models::{
    Account, ClusterCapacity, Job, JobHistoryEntry, JobPage, JobQuery, JobSpec, LogRequest, Me,
    Pod, QueueView, StackDump,
};
use app::ports::{Cluster, JobEvent, LogStream};
use async_trait::async_trait;
use tokio::sync::broadcast;

use crate::storage::jobs::JobStore;

/// The default backend and the others jobs may have run on.
pub struct Clusters {
    default: Arc<dyn Cluster>,
    others: Vec<Arc<dyn Cluster>>,
    store: JobStore,
    events: broadcast::Sender<JobEvent>,
}

impl Clusters {
    /// Routes to `default` and, for jobs recorded under their names, `others`;
    /// forwards every backend's change events.
    pub fn new(default: Arc<dyn Cluster>, others: Vec<Arc<dyn Cluster>>, store: JobStore) -> Self {
        let (events, _) = broadcast::channel(1024);
        for backend in std::iter::once(&default).chain(&others) {
            let mut rx = backend.subscribe();
            let tx = events.clone();
            tokio::spawn(async move {
                loop {
                    match rx.recv().await {
                        Ok(event) => {
                            let _ = tx.send(event);
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return,
                    }
                }
            });
        }
        Self {
            default,
            others,
            store,
            events,
        }
    }

    /// The backend the account's job `name` ran on.
    async fn backend_of(
        &self,
        account: &Account,
        name: &str,
    ) -> Result<&Arc<dyn Cluster>, AppError> {
        let job = self.store.get(account.id, name).await?.job;
        Ok(self
            .others
            .iter()
            .find(|b| b.name() == job.cluster)
            .unwrap_or(&self.default))
    }
}

#[async_trait]
impl Cluster for Clusters {
    fn name(&self) -> String {
        self.default.name()
    }

    fn health(&self) -> Option<String> {
        self.default.health()
    }

    async fn submit(&self, by: &Me, spec: JobSpec) -> Result<Job, AppError> {
        self.default.submit(by, spec).await
    }

    async fn list_jobs(&self, account: &Account, query: &JobQuery) -> Result<JobPage, AppError> {
        // Every backend lists from the one job store: all runs side by side.
        self.default.list_jobs(account, query).await
    }

    async fn job(&self, account: &Account, name: &str) -> Result<Job, AppError> {
        self.default.job(account, name).await
    }

    async fn jobs_named(&self, account: &Account, names: &[String]) -> Result<Vec<Job>, AppError> {
        self.default.jobs_named(account, names).await
    }

    async fn stop(&self, account: &Account, name: &str) -> Result<Job, AppError> {
        self.backend_of(account, name)
            .await?
            .stop(account, name)
            .await
    }

    async fn delete(&self, account: &Account, name: &str) -> Result<(), AppError> {
        self.backend_of(account, name)
            .await?
            .delete(account, name)
            .await
    }

    async fn pods(&self, account: &Account, name: &str) -> Result<Vec<Pod>, AppError> {
        self.backend_of(account, name)
            .await?
            .pods(account, name)
            .await
    }

    async fn history(
        &self,
        account: &Account,
        name: &str,
    ) -> Result<Vec<JobHistoryEntry>, AppError> {
        self.backend_of(account, name)
            .await?
            .history(account, name)
            .await
    }

    async fn log(
        &self,
        account: &Account,
        job: &str,
        pod: &str,
        request: LogRequest,
    ) -> Result<LogStream, AppError> {
        self.backend_of(account, job)
            .await?
            .log(account, job, pod, request)
            .await
    }

    async fn last_log_at(&self, account: &Account, name: &str) -> Result<Option<i64>, AppError> {
        self.backend_of(account, name)
            .await?
            .last_log_at(account, name)
            .await
    }

    async fn stack_dump(&self, account: &Account, name: &str) -> Result<Vec<StackDump>, AppError> {
        self.backend_of(account, name)
            .await?
            .stack_dump(account, name)
            .await
    }

    fn subscribe(&self) -> broadcast::Receiver<JobEvent> {
        self.events.subscribe()
    }

    async fn capacity(&self) -> Result<ClusterCapacity, AppError> {
        self.default.capacity().await
    }

    async fn queue(&self, account: &Account) -> Result<QueueView, AppError> {
        self.default.queue(account).await
    }
}
