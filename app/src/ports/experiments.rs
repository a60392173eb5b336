//! Experiments: recorded, read and steered (pause, resume, stop, more
//! trials, failed trials again). Their trials are started by the console's
//! experiment controller, as ordinary jobs.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{Account, Experiment, ExperimentSpec, Me};

/// Something about an experiment changed: live views refresh.
pub type ExperimentEvent = super::WorkloadEvent;

/// Where experiments are kept.
#[async_trait]
pub trait Experiments: Send + Sync {
    /// Records a running experiment of `spec` (checked against its
    /// template already, its seed drawn); the controller starts its trials.
    async fn create(&self, me: &Me, spec: &ExperimentSpec) -> Result<Experiment, AppError>;
    /// The account's experiments, newest first, with their trials.
    async fn list(&self, account: &Account) -> Result<Vec<Experiment>, AppError>;
    /// One experiment with its trials.
    async fn get(&self, account: &Account, name: &str) -> Result<Experiment, AppError>;
    /// Starts no new trial; those running go on.
    async fn pause(&self, me: &Me, name: &str) -> Result<Experiment, AppError>;
    /// Starts trials again after a pause.
    async fn resume(&self, me: &Me, name: &str) -> Result<Experiment, AppError>;
    /// Ends the experiment: its running trials' jobs are stopped.
    async fn stop(&self, me: &Me, name: &str) -> Result<Experiment, AppError>;
    /// `more` trials in all (1 to the limit); an experiment that ended
    /// runs again, its search learning from every trial so far.
    async fn extend(&self, me: &Me, name: &str, more: u32) -> Result<Experiment, AppError>;
    /// Runs each failed trial's values again as a new trial; an ended
    /// experiment runs again.
    async fn retry_failed(&self, me: &Me, name: &str) -> Result<Experiment, AppError>;
    /// Changes to experiments, from this console's controller and requests.
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<ExperimentEvent>;
}
