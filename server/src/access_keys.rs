//! [`app::ports::AccessKeys`] on the SQL database. A key is 32 random bytes
//! (hex, behind [`ACCESS_KEY_PREFIX`]); only its SHA-256 hash is stored, which
//! is enough for a secret with that much entropy and keeps look-ups one index probe.

use std::sync::Arc;

use app::error::AppError;
use app::models::{
    validate_key_name, AccessKeyInfo, KeyTerms, Me, NewAccessKey, ACCESS_KEY_PREFIX,
    SHOWN_PREFIX_LEN,
};
use app::ports::{AccessKeys, Credential, Principal};
use async_trait::async_trait;

use crate::storage::access_keys::{AccessKeyTable, KeyHolder};
use crate::storage::audit;
use crate::storage::db::Pool;
use crate::storage::jobs::JOB_TOKEN_PREFIX;
use crate::storage::notebooks::NOTEBOOK_KEY_PREFIX;
use crate::storage::serving::SERVING_TOKEN_PREFIX;
use crate::storage::tokens::{random_token, token_hash};
use crate::storage::users;
use crate::time::now_ms;

/// `last_used_at` is written at most this often per key, so that a script
/// polling the API does not turn every read into a write.
const TOUCH_EVERY_MS: i64 = 60 * 1000;

/// Access keys in the console's database.
pub struct SqlAccessKeys {
    table: AccessKeyTable,
}

impl SqlAccessKeys {
    /// Wraps a migrated pool.
    pub fn new(pool: Pool) -> Arc<Self> {
        Arc::new(Self {
            table: AccessKeyTable::new(pool),
        })
    }

    /// For `paddlecloud admin create-key`: a key for the user `email` of `account`.
    pub async fn create_for(
        &self,
        account: &str,
        email: &str,
        name: &str,
        terms: KeyTerms,
    ) -> Result<NewAccessKey, AppError> {
        let me = users::find(self.table.pool(), account, email)
            .await?
            .ok_or_else(|| AppError::not_found(format!("User {email} in account {account}")))?;
        self.create_key(&me, name, terms).await
    }
}

fn is_well_formed_with(prefix: &str, key: &str) -> bool {
    key.strip_prefix(prefix)
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_well_formed(key: &str) -> bool {
    is_well_formed_with(ACCESS_KEY_PREFIX, key)
}

impl SqlAccessKeys {
    /// A job's token acts as the user who submitted the job, scoped to it.
    async fn resolve_job_token(&self, token: &str) -> Result<Option<Principal>, AppError> {
        if !is_well_formed_with(JOB_TOKEN_PREFIX, token) {
            return Ok(None);
        }
        let holder = self.table.job_token(&token_hash(token)).await?;
        Ok(holder.map(|h| {
            Principal::new(
                h.me,
                Credential::JobToken {
                    job_id: h.id,
                    job: h.name,
                },
            )
        }))
    }

    /// A serving instance's token acts as the user who launched it, scoped
    /// to reading its model; it ends with the instance (stopped or deleted).
    async fn resolve_serving_token(&self, token: &str) -> Result<Option<Principal>, AppError> {
        if !is_well_formed_with(SERVING_TOKEN_PREFIX, token) {
            return Ok(None);
        }
        let holder = self.table.serving_token(&token_hash(token)).await?;
        Ok(holder.map(|h| {
            Principal::new(
                h.me,
                Credential::ServingToken {
                    serving_id: h.id,
                    model: h.name,
                },
            )
        }))
    }

    /// A notebook's key acts as the notebook's owner, while the notebook
    /// runs (it is cleared when it stops) and its owner is still a member.
    async fn resolve_notebook_key(&self, key: &str) -> Result<Option<Principal>, AppError> {
        if !is_well_formed_with(NOTEBOOK_KEY_PREFIX, key) {
            return Ok(None);
        }
        let holder = self.table.notebook_key(&token_hash(key)).await?;
        Ok(holder.map(|h| {
            Principal::new(
                h.me,
                Credential::NotebookKey {
                    notebook_id: h.id,
                    notebook: h.name,
                },
            )
        }))
    }
}

#[async_trait]
impl AccessKeys for SqlAccessKeys {
    async fn create_key(
        &self,
        me: &Me,
        name: &str,
        terms: KeyTerms,
    ) -> Result<NewAccessKey, AppError> {
        let name = validate_key_name(name)?;
        let terms = terms.validated()?;
        let key = format!("{ACCESS_KEY_PREFIX}{}", random_token());
        let created_at = now_ms();
        let mut info = AccessKeyInfo {
            id: 0,
            name,
            prefix: key[..SHOWN_PREFIX_LEN].to_owned(),
            created_at,
            last_used_at: None,
            scope: terms.scope,
            expires_at: terms.expires_at(created_at),
            expired: false,
        };
        info.id = self.table.insert(&token_hash(&key), me, &info).await?;
        let (id, name, prefix) = (info.id, &info.name, &info.prefix);
        let expires = match info.expires_at {
            Some(at) => format!(", expires {}", app::models::time::format_utc(at)),
            None => String::new(),
        };
        tracing::info!(account = %me.account.name, user = %me.email, key_id = id, "access key created");
        audit::record(
            self.table.pool(),
            audit::Entry {
                account_id: me.account.id,
                actor: &me.email,
                action: "key.created",
                detail: &format!(
                    "access key “{name}” ({prefix}…), scope {}{expires}",
                    info.scope.as_str()
                ),
            },
        )
        .await?;
        Ok(NewAccessKey { key, info })
    }

    async fn keys(&self, who: &Principal) -> Result<Vec<AccessKeyInfo>, AppError> {
        let now = now_ms();
        let mut keys = self.table.of(&who.me).await?;
        for key in &mut keys {
            key.expired = key.is_expired_at(now);
        }
        Ok(keys)
    }

    async fn revoke_key(&self, who: &Principal, id: i64) -> Result<(), AppError> {
        let gone = self.table.delete(&who.me, id).await?;
        let Some((name, prefix)) = gone else {
            return Err(AppError::not_found("Access key"));
        };
        audit::record(
            self.table.pool(),
            audit::Entry {
                account_id: who.me.account.id,
                actor: &who.me.email,
                action: "key.revoked",
                detail: &format!("access key “{name}” ({prefix}…)"),
            },
        )
        .await?;
        tracing::info!(account = %who.me.account.name, user = %who.me.email, key_id = id, "access key revoked");
        Ok(())
    }

    async fn resolve_key(&self, key: &str) -> Result<Option<Principal>, AppError> {
        if key.starts_with(JOB_TOKEN_PREFIX) {
            return self.resolve_job_token(key).await;
        }
        if key.starts_with(SERVING_TOKEN_PREFIX) {
            return self.resolve_serving_token(key).await;
        }
        if key.starts_with(NOTEBOOK_KEY_PREFIX) {
            return self.resolve_notebook_key(key).await;
        }
        if !is_well_formed(key) {
            return Ok(None);
        }
        let Some(KeyHolder {
            key_id,
            name,
            prefix,
            scope,
            expires_at,
            last_used_at: last_used,
            me,
        }) = self.table.key(&token_hash(key)).await?
        else {
            return Ok(None);
        };
        let now = now_ms();
        if let Some(at) = expires_at.filter(|at| now >= *at) {
            return Err(AppError::forbidden(format!(
                "This access key (“{name}”, {prefix}…) expired on {}. Create a new one on \
                 the Account page.",
                app::models::time::format_utc(at)
            )));
        }
        if last_used.is_none_or(|t| now - t > TOUCH_EVERY_MS) {
            self.table.touch(key_id, now).await?;
        }
        Ok(Some(
            Principal::new(me, Credential::AccessKey(key_id)).scoped(scope),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_prefixed_64_hex_digit_keys_are_looked_up() {
        assert!(is_well_formed(&format!("pck_{}", "a1".repeat(32))));
        assert!(!is_well_formed(&"a1".repeat(32)));
        assert!(!is_well_formed("pck_short"));
        assert!(!is_well_formed(&format!("pck_{}", "zz".repeat(32))));
    }
}
