//! Access keys for the REST API.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{AccessKeyInfo, KeyTerms, Me, NewAccessKey};

use super::Principal;

/// Access keys: created and revoked by their user, stored only as hashes.
#[async_trait]
pub trait AccessKeys: Send + Sync {
    /// Creates a key for `me` on `terms` (its scope and life); the secret
    /// is in the result and nowhere else.
    async fn create_key(
        &self,
        me: &Me,
        name: &str,
        terms: KeyTerms,
    ) -> Result<NewAccessKey, AppError>;
    /// The caller's own keys, newest first.
    async fn keys(&self, who: &Principal) -> Result<Vec<AccessKeyInfo>, AppError>;
    /// Revokes one of the caller's keys; another user's is "not found".
    async fn revoke_key(&self, who: &Principal, id: i64) -> Result<(), AppError>;
    /// The principal behind a key, if it exists, narrowed to the key's
    /// scope; records that it was used. An expired key is a 403 that says
    /// when it expired.
    async fn resolve_key(&self, key: &str) -> Result<Option<Principal>, AppError>;
}
