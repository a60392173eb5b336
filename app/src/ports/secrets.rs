//! An account's secrets, as people manage them. Workloads read values
//! through the server's vault at launch; no port returns a value.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{SecretForm, SecretInfo};

use super::Principal;

/// Secrets: set and deleted by an account's owners, listed (names only)
/// by everyone in it.
#[async_trait]
pub trait Secrets: Send + Sync {
    /// The account's secrets, by name.
    async fn secrets(&self, who: &Principal) -> Result<Vec<SecretInfo>, AppError>;
    /// Sets a secret (a new one, or a new value for one that exists);
    /// owners only. The value is sealed before it is stored.
    async fn set_secret(&self, who: &Principal, form: SecretForm) -> Result<SecretInfo, AppError>;
    /// Deletes a secret; owners only. Workloads already running keep the
    /// value they were given; new ones that name it are refused.
    async fn delete_secret(&self, who: &Principal, name: &str) -> Result<(), AppError>;
}
