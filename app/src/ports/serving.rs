//! Serving instances: launched, listed, scaled, stopped, and their traffic.
//! Implemented in `server/src/serving/` over the local executor (processes
//! behind the console's balancing endpoint) and Kubernetes (a Deployment and
//! a Service, with an optional HorizontalPodAutoscaler).

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{
    Account, Me, Release, Scale, ServingInstance, ServingList, ServingSpec, ServingTraffic,
    ShadowCall,
};

/// Something about a serving instance changed: live views refresh.
pub type ServingEvent = super::WorkloadEvent;

/// An account's serving instances. Another account's are "not found".
#[async_trait]
pub trait Serving: Send + Sync {
    /// Resolves the model, checks the spec and starts the replicas; the
    /// instance is Pending until they answer. The quota check is the
    /// caller's (`app::use_cases::launch_within_quota`).
    async fn launch(&self, by: &Me, spec: ServingSpec) -> Result<ServingInstance, AppError>;
    /// The account's instances, newest first, with their last minute's traffic.
    async fn list(&self, account: &Account) -> Result<ServingList, AppError>;
    /// One instance.
    async fn get(&self, account: &Account, name: &str) -> Result<ServingInstance, AppError>;
    /// Changes the number of replicas or the autoscaler's bounds.
    async fn scale(
        &self,
        account: &Account,
        name: &str,
        scale: Scale,
    ) -> Result<ServingInstance, AppError>;
    /// Starts, changes, promotes or rolls back its canary or shadow (the
    /// quota check is the caller's: `app::use_cases::release_within_quota`).
    /// Promoting rolls the main replicas to the canary's version and, when
    /// the instance follows an alias, moves the alias there as `by`.
    async fn release(
        &self,
        by: &Me,
        name: &str,
        release: Release,
    ) -> Result<ServingInstance, AppError>;
    /// The newest calls mirrored to its shadow (at most `limit`), newest
    /// first.
    async fn shadow_calls(
        &self,
        account: &Account,
        name: &str,
        limit: usize,
    ) -> Result<Vec<ShadowCall>, AppError>;
    /// Ends every replica, keeping the record and its traffic.
    async fn stop(&self, account: &Account, name: &str) -> Result<ServingInstance, AppError>;
    /// Stops it if needed and removes the record.
    async fn delete(&self, account: &Account, name: &str) -> Result<(), AppError>;
    /// Requests, latency and errors over `[from, to]` (Unix s; by default the
    /// last hour).
    async fn traffic(
        &self,
        account: &Account,
        name: &str,
        from: Option<f64>,
        to: Option<f64>,
    ) -> Result<ServingTraffic, AppError>;
    /// Changes to any instance, for live views.
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<ServingEvent>;
}
