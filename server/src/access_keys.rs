//! [`app::ports::AccessKeys`] on the SQL database. A key is 32 random bytes
//! (hex, behind [`ACCESS_KEY_PREFIX`]); only its SHA-256 hash is stored, which
//! is enough for a secret with that much entropy and keeps look-ups one index probe.

use std::sync::Arc;

use app::error::AppError;
use app::models::{
    validate_key_name, AccessKeyInfo, Me, NewAccessKey, ACCESS_KEY_PREFIX, SHOWN_PREFIX_LEN,
};
use app::ports::{AccessKeys, Credential, Principal};
use async_trait::async_trait;
use sqlx::AnyPool;

use crate::storage::audit;
use crate::storage::internal;
use crate::storage::jobs::JOB_TOKEN_PREFIX;
use crate::storage::notebooks::NOTEBOOK_KEY_PREFIX;
use crate::storage::serving::SERVING_TOKEN_PREFIX;
use crate::storage::tokens::{random_token, token_hash};
use crate::storage::users::{self, me_from, user_columns, UserRow};
use crate::time::now_ms;

/// `last_used_at` is written at most this often per key, so that a script
/// polling the API does not turn every read into a write.
const TOUCH_EVERY_MS: i64 = 60 * 1000;

/// Access keys in the console's database.
pub struct SqlAccessKeys {
    pool: AnyPool,
}

impl SqlAccessKeys {
    /// Wraps a migrated pool.
    pub fn new(pool: AnyPool) -> Arc<Self> {
        Arc::new(Self { pool })
    }

    /// For `paddlecloud admin create-key`: a key for the user `email` of `account`.
    pub async fn create_for(
        &self,
        account: &str,
        email: &str,
        name: &str,
    ) -> Result<NewAccessKey, AppError> {
        let me = users::find(&self.pool, account, email)
            .await?
            .ok_or_else(|| AppError::not_found(format!("User {email} in account {account}")))?;
        self.create_key(&me, name).await
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
        /// The job's id and name, then its submitter.
        #[derive(sqlx::FromRow)]
        struct JobTokenRow {
            job_id: i64,
            job: String,
            #[sqlx(flatten)]
            user: UserRow,
        }
        let row: Option<JobTokenRow> = sqlx::query_as(concat!(
            "SELECT j.id AS job_id, j.name AS job, ",
            user_columns!(),
            " FROM jobs j JOIN users u ON u.id = j.user_id \
                 JOIN memberships m ON m.user_id = u.id AND m.account_id = j.account_id \
                 JOIN accounts a ON a.id = m.account_id WHERE j.token_hash = $1"
        ))
        .bind(token_hash(token))
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("look up job token"))?;
        Ok(row.map(|r| {
            Principal::new(
                me_from(r.user),
                Credential::JobToken {
                    job_id: r.job_id,
                    job: r.job,
                },
            )
        }))
    }
}

impl SqlAccessKeys {
    /// A serving instance's token acts as the user who launched it, scoped
    /// to reading its model; it ends with the instance (stopped or deleted).
    async fn resolve_serving_token(&self, token: &str) -> Result<Option<Principal>, AppError> {
        if !is_well_formed_with(SERVING_TOKEN_PREFIX, token) {
            return Ok(None);
        }
        /// The instance's id and model, then its launcher.
        #[derive(sqlx::FromRow)]
        struct ServingTokenRow {
            serving_id: i64,
            model: String,
            #[sqlx(flatten)]
            user: UserRow,
        }
        let row: Option<ServingTokenRow> = sqlx::query_as(concat!(
            "SELECT s.id AS serving_id, s.model AS model, ",
            user_columns!(),
            " FROM serving s JOIN memberships m ON m.account_id = s.account_id \
                 JOIN users u ON u.id = m.user_id AND u.email = s.created_by \
                 JOIN accounts a ON a.id = m.account_id \
                 WHERE s.token_hash = $1 AND s.status <> 'stopped'"
        ))
        .bind(token_hash(token))
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("look up serving token"))?;
        Ok(row.map(|r| {
            Principal::new(
                me_from(r.user),
                Credential::ServingToken {
                    serving_id: r.serving_id,
                    model: r.model,
                },
            )
        }))
    }
}

impl SqlAccessKeys {
    /// A notebook's key acts as the notebook's owner, while the notebook
    /// runs (it is cleared when it stops) and its owner is still a member.
    async fn resolve_notebook_key(&self, key: &str) -> Result<Option<Principal>, AppError> {
        if !is_well_formed_with(NOTEBOOK_KEY_PREFIX, key) {
            return Ok(None);
        }
        /// The notebook's id and name, then its owner.
        #[derive(sqlx::FromRow)]
        struct NotebookKeyRow {
            notebook_id: i64,
            notebook: String,
            #[sqlx(flatten)]
            user: UserRow,
        }
        let row: Option<NotebookKeyRow> = sqlx::query_as(concat!(
            "SELECT n.id AS notebook_id, n.name AS notebook, ",
            user_columns!(),
            " FROM notebooks n JOIN users u ON u.id = n.user_id \
                 JOIN memberships m ON m.user_id = u.id AND m.account_id = n.account_id \
                 JOIN accounts a ON a.id = m.account_id \
                 WHERE n.key_hash = $1 AND n.status IN ('pending', 'running')"
        ))
        .bind(token_hash(key))
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("look up notebook key"))?;
        Ok(row.map(|r| {
            Principal::new(
                me_from(r.user),
                Credential::NotebookKey {
                    notebook_id: r.notebook_id,
                    notebook: r.notebook,
                },
            )
        }))
    }
}

#[async_trait]
impl AccessKeys for SqlAccessKeys {
    async fn create_key(&self, me: &Me, name: &str) -> Result<NewAccessKey, AppError> {
        let name = validate_key_name(name)?;
        let key = format!("{ACCESS_KEY_PREFIX}{}", random_token());
        let prefix = key[..SHOWN_PREFIX_LEN].to_owned();
        let created_at = now_ms();
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO access_keys (token_hash, prefix, name, user_id, account_id, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(token_hash(&key))
        .bind(&prefix)
        .bind(&name)
        .bind(me.user_id)
        .bind(me.account.id)
        .bind(created_at)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("insert access key"))?;
        tracing::info!(account = %me.account.name, user = %me.email, key_id = id, "access key created");
        audit::record(
            &self.pool,
            audit::Entry {
                account_id: me.account.id,
                actor: &me.email,
                action: "key.created",
                detail: &format!("access key “{name}” ({prefix}…)"),
            },
        )
        .await?;
        Ok(NewAccessKey {
            key,
            info: AccessKeyInfo {
                id,
                name,
                prefix,
                created_at,
                last_used_at: None,
            },
        })
    }

    async fn keys(&self, who: &Principal) -> Result<Vec<AccessKeyInfo>, AppError> {
        let rows: Vec<(i64, String, String, i64, Option<i64>)> = sqlx::query_as(
            "SELECT id, name, prefix, created_at, last_used_at FROM access_keys \
             WHERE user_id = $1 AND account_id = $2 ORDER BY created_at DESC, id DESC",
        )
        .bind(who.me.user_id)
        .bind(who.me.account.id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list access keys"))?;
        Ok(rows
            .into_iter()
            .map(
                |(id, name, prefix, created_at, last_used_at)| AccessKeyInfo {
                    id,
                    name,
                    prefix,
                    created_at,
                    last_used_at,
                },
            )
            .collect())
    }

    async fn revoke_key(&self, who: &Principal, id: i64) -> Result<(), AppError> {
        let gone: Option<(String, String)> = sqlx::query_as(
            "DELETE FROM access_keys WHERE id = $1 AND user_id = $2 AND account_id = $3 \
             RETURNING name, prefix",
        )
        .bind(id)
        .bind(who.me.user_id)
        .bind(who.me.account.id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("revoke access key"))?;
        let Some((name, prefix)) = gone else {
            return Err(AppError::not_found("Access key"));
        };
        audit::record(
            &self.pool,
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
        /// The key, then its user.
        #[derive(sqlx::FromRow)]
        struct KeyRow {
            key_id: i64,
            last_used_at: Option<i64>,
            #[sqlx(flatten)]
            user: UserRow,
        }
        let row: Option<KeyRow> = sqlx::query_as(concat!(
            "SELECT k.id AS key_id, k.last_used_at AS last_used_at, ",
            user_columns!(),
            " FROM access_keys k JOIN users u ON u.id = k.user_id \
                 JOIN memberships m ON m.user_id = u.id AND m.account_id = k.account_id \
                 JOIN accounts a ON a.id = m.account_id WHERE k.token_hash = $1"
        ))
        .bind(token_hash(key))
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("look up access key"))?;
        let Some(KeyRow {
            key_id,
            last_used_at: last_used,
            user,
        }) = row
        else {
            return Ok(None);
        };
        let now = now_ms();
        if last_used.is_none_or(|t| now - t > TOUCH_EVERY_MS) {
            sqlx::query("UPDATE access_keys SET last_used_at = $1 WHERE id = $2")
                .bind(now)
                .bind(key_id)
                .execute(&self.pool)
                .await
                .map_err(internal("touch access key"))?;
        }
        Ok(Some(Principal::new(
            me_from(user),
            Credential::AccessKey(key_id),
        )))
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
