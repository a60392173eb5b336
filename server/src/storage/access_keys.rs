//! The `access_keys` table, and the look-ups that turn a presented key or
//! token (an access key, a job's token, a serving instance's token, a
//! notebook's key) into the user it acts as. Keys are found by their
//! SHA-256 hash ([`super::tokens::token_hash`]); no key is stored.

use app::error::AppError;
use app::models::{AccessKeyInfo, KeyScope, Me};

use super::db::Pool;
use super::internal;
use super::users::{me_from, user_columns, UserRow};

/// What a key's hash finds: the key's row and the user it acts as.
#[derive(Debug, Clone)]
pub struct KeyHolder {
    /// The key's id.
    pub key_id: i64,
    /// What it is called.
    pub name: String,
    /// Its first characters.
    pub prefix: String,
    /// What it may do.
    pub scope: KeyScope,
    /// When it stops working, if ever.
    pub expires_at: Option<i64>,
    /// When it was last used, if ever.
    pub last_used_at: Option<i64>,
    /// Its user, in the key's account.
    pub me: Me,
}

/// A job, instance or notebook found by its token, and the user it acts as.
#[derive(Debug, Clone)]
pub struct TokenHolder {
    /// The job's, instance's or notebook's id.
    pub id: i64,
    /// The job's or notebook's name, or the instance's model.
    pub name: String,
    /// Who submitted, launched or owns it.
    pub me: Me,
}

/// A job, instance or notebook row (id, name) and its user.
#[derive(sqlx::FromRow)]
struct HolderRow {
    id: i64,
    name: String,
    #[sqlx(flatten)]
    user: UserRow,
}

/// The access key table.
#[derive(Clone)]
pub struct AccessKeyTable {
    pool: Pool,
}

impl AccessKeyTable {
    /// Wraps a migrated pool.
    pub fn new(pool: Pool) -> Self {
        Self { pool }
    }

    /// The pool, for the audit log written beside each change.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    async fn holder(
        &self,
        sql: &'static str,
        hash: &str,
        context: &'static str,
    ) -> Result<Option<TokenHolder>, AppError> {
        let row: Option<HolderRow> = sqlx::query_as(sql)
            .bind(hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal(context))?;
        Ok(row.map(|r| TokenHolder {
            id: r.id,
            name: r.name,
            me: me_from(r.user),
        }))
    }

    /// The job whose token hashes to `hash`, and its submitter (still a member).
    pub async fn job_token(&self, hash: &str) -> Result<Option<TokenHolder>, AppError> {
        const SQL: &str = concat!(
            "SELECT j.id AS id, j.name AS name, ",
            user_columns!(),
            " FROM jobs j JOIN users u ON u.id = j.user_id \
                 JOIN memberships m ON m.user_id = u.id AND m.account_id = j.account_id \
                 JOIN accounts a ON a.id = m.account_id WHERE j.token_hash = $1"
        );
        self.holder(SQL, hash, "look up job token").await
    }

    /// The serving instance (not stopped) whose token hashes to `hash`, its
    /// model as the name, and its launcher (still a member).
    pub async fn serving_token(&self, hash: &str) -> Result<Option<TokenHolder>, AppError> {
        const SQL: &str = concat!(
            "SELECT s.id AS id, s.model AS name, ",
            user_columns!(),
            " FROM serving s JOIN memberships m ON m.account_id = s.account_id \
                 JOIN users u ON u.id = m.user_id AND u.email = s.created_by \
                 JOIN accounts a ON a.id = m.account_id \
                 WHERE s.token_hash = $1 AND s.status <> 'stopped'"
        );
        self.holder(SQL, hash, "look up serving token").await
    }

    /// The running (or starting) notebook whose key hashes to `hash`, and its
    /// owner (still a member).
    pub async fn notebook_key(&self, hash: &str) -> Result<Option<TokenHolder>, AppError> {
        const SQL: &str = concat!(
            "SELECT n.id AS id, n.name AS name, ",
            user_columns!(),
            " FROM notebooks n JOIN users u ON u.id = n.user_id \
                 JOIN memberships m ON m.user_id = u.id AND m.account_id = n.account_id \
                 JOIN accounts a ON a.id = m.account_id \
                 WHERE n.key_hash = $1 AND n.status IN ('pending', 'running')"
        );
        self.holder(SQL, hash, "look up notebook key").await
    }

    /// Stores a new key's hash; its id.
    pub async fn insert(&self, hash: &str, me: &Me, key: &AccessKeyInfo) -> Result<i64, AppError> {
        sqlx::query_scalar(
            "INSERT INTO access_keys (token_hash, prefix, name, user_id, account_id, created_at, \
             scope, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        )
        .bind(hash)
        .bind(&key.prefix)
        .bind(&key.name)
        .bind(me.user_id)
        .bind(me.account.id)
        .bind(key.created_at)
        .bind(key.scope.as_str())
        .bind(key.expires_at)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("insert access key"))
    }

    /// `me`'s keys in their account, newest first.
    pub async fn of(&self, me: &Me) -> Result<Vec<AccessKeyInfo>, AppError> {
        type Row = (i64, String, String, i64, Option<i64>, String, Option<i64>);
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT id, name, prefix, created_at, last_used_at, scope, expires_at FROM access_keys \
             WHERE user_id = $1 AND account_id = $2 ORDER BY created_at DESC, id DESC",
        )
        .bind(me.user_id)
        .bind(me.account.id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list access keys"))?;
        Ok(rows
            .into_iter()
            .map(
                |(id, name, prefix, created_at, last_used_at, scope, expires_at)| AccessKeyInfo {
                    id,
                    name,
                    prefix,
                    created_at,
                    last_used_at,
                    // A word this console does not know reads as the narrowest.
                    scope: KeyScope::parse(&scope).unwrap_or(KeyScope::Read),
                    expires_at,
                    expired: false,
                },
            )
            .collect())
    }

    /// Deletes `me`'s key `id`; its name and prefix, or `None` if `me` has no
    /// such key.
    pub async fn delete(&self, me: &Me, id: i64) -> Result<Option<(String, String)>, AppError> {
        sqlx::query_as(
            "DELETE FROM access_keys WHERE id = $1 AND user_id = $2 AND account_id = $3 \
             RETURNING name, prefix",
        )
        .bind(id)
        .bind(me.user_id)
        .bind(me.account.id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("revoke access key"))
    }

    /// The key that hashes to `hash`, and its user (still a member).
    pub async fn key(&self, hash: &str) -> Result<Option<KeyHolder>, AppError> {
        /// The key, then its user.
        #[derive(sqlx::FromRow)]
        struct KeyRow {
            key_id: i64,
            key_name: String,
            key_prefix: String,
            key_scope: String,
            key_expires_at: Option<i64>,
            last_used_at: Option<i64>,
            #[sqlx(flatten)]
            user: UserRow,
        }
        let row: Option<KeyRow> = sqlx::query_as(concat!(
            "SELECT k.id AS key_id, k.name AS key_name, k.prefix AS key_prefix, \
             k.scope AS key_scope, k.expires_at AS key_expires_at, \
             k.last_used_at AS last_used_at, ",
            user_columns!(),
            " FROM access_keys k JOIN users u ON u.id = k.user_id \
                 JOIN memberships m ON m.user_id = u.id AND m.account_id = k.account_id \
                 JOIN accounts a ON a.id = m.account_id WHERE k.token_hash = $1"
        ))
        .bind(hash)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("look up access key"))?;
        Ok(row.map(|r| KeyHolder {
            key_id: r.key_id,
            name: r.key_name,
            prefix: r.key_prefix,
            scope: KeyScope::parse(&r.key_scope).unwrap_or(KeyScope::Read),
            expires_at: r.key_expires_at,
            last_used_at: r.last_used_at,
            me: me_from(r.user),
        }))
    }

    /// Records that key `key_id` was used at `now`.
    pub async fn touch(&self, key_id: i64, now: i64) -> Result<(), AppError> {
        sqlx::query("UPDATE access_keys SET last_used_at = $1 WHERE id = $2")
            .bind(now)
            .bind(key_id)
            .execute(&self.pool)
            .await
            .map_err(internal("touch access key"))?;
        Ok(())
    }
}
