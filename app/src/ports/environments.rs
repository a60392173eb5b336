//! Environment profiles: named, versioned Python environments. Implemented
//! in `server/src/environments/` (the catalog in the database, the local
//! virtualenv builds on this machine).

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{
    Environment, EnvironmentDetail, EnvironmentList, EnvironmentRef, EnvironmentSpec, Me,
};

/// The environments an account can use: its own and published ones.
/// Another account's unpublished environment is "not found".
#[async_trait]
pub trait Environments: Send + Sync {
    /// Checks `spec` and saves it as the next version of its name in the
    /// caller's account (1 for a new name), then starts building its
    /// requirements on this console if they are not built yet.
    async fn save(&self, by: &Me, spec: EnvironmentSpec) -> Result<Environment, AppError>;
    /// The account's environments and published ones, newest versions.
    async fn list(&self, me: &Me) -> Result<EnvironmentList, AppError>;
    /// The version `reference` names (its owner: the caller's account when
    /// it names none; its version: the newest when it names none).
    async fn get(&self, me: &Me, reference: &EnvironmentRef) -> Result<Environment, AppError>;
    /// [`Environments::get`] with its versions and local build.
    async fn detail(
        &self,
        me: &Me,
        reference: &EnvironmentRef,
    ) -> Result<EnvironmentDetail, AppError>;
    /// Publishes every version of `owner/name` for every account, or
    /// takes it back; only a site admin may.
    async fn publish(
        &self,
        me: &Me,
        owner: &str,
        name: &str,
        public: bool,
    ) -> Result<Environment, AppError>;
}
