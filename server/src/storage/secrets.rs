//! The `secrets` table: sealed values (see `secrets/seal.rs`) and what the
//! console shows of them.

use app::error::AppError;
use app::models::SecretInfo;

use super::db::{Pool, WriteTx};
use super::{audit, internal};

/// A secret's row as the vault opens it.
#[derive(sqlx::FromRow)]
pub struct SealedRow {
    /// Its name.
    pub name: String,
    /// The id of the key that sealed it.
    pub key_id: String,
    /// Its sealed value.
    pub sealed: String,
}

#[derive(sqlx::FromRow)]
struct InfoRow {
    name: String,
    description: String,
    size: i64,
    created_at: i64,
    updated_at: i64,
    updated_by: String,
    last_used_at: Option<i64>,
}

impl From<InfoRow> for SecretInfo {
    fn from(r: InfoRow) -> Self {
        SecretInfo {
            name: r.name,
            description: r.description,
            size: r.size.max(0) as u64,
            created_at: r.created_at,
            updated_at: r.updated_at,
            updated_by: r.updated_by,
            last_used_at: r.last_used_at,
        }
    }
}

const INFO: &str =
    "SELECT name, description, size, created_at, updated_at, updated_by, last_used_at FROM secrets";

/// What [`SecretTable::put`] writes.
pub struct NewValue<'a> {
    /// The account it belongs to.
    pub account_id: i64,
    /// Its name.
    pub name: &'a str,
    /// What it is for.
    pub description: &'a str,
    /// The sealing key's id.
    pub key_id: &'a str,
    /// The sealed value.
    pub sealed: &'a str,
    /// The value's length in bytes.
    pub size: usize,
    /// Who sets it.
    pub by: &'a str,
    /// When.
    pub at: i64,
}

/// The secrets table.
#[derive(Clone)]
pub struct SecretTable {
    pool: Pool,
}

impl SecretTable {
    /// Wraps a migrated pool.
    pub fn new(pool: Pool) -> Self {
        Self { pool }
    }

    /// The pool, for the audit log written beside each change.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The account's secrets, by name.
    pub async fn list(&self, account_id: i64) -> Result<Vec<SecretInfo>, AppError> {
        let rows: Vec<InfoRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{INFO} WHERE account_id = $1 ORDER BY name"
        )))
        .bind(account_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list secrets"))?;
        Ok(rows.into_iter().map(Into::into).collect())
    }

    /// One secret's info.
    pub async fn info(&self, account_id: i64, name: &str) -> Result<Option<SecretInfo>, AppError> {
        let row: Option<InfoRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{INFO} WHERE account_id = $1 AND name = $2"
        )))
        .bind(account_id)
        .bind(name)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a secret"))?;
        Ok(row.map(Into::into))
    }

    /// Sets a value, new or replacing, with its line in the audit log
    /// (`secret.created` or `secret.changed`) in the same transaction.
    pub async fn put(&self, v: NewValue<'_>) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin setting a secret"))?;
        let existed: Option<i64> =
            sqlx::query_scalar("SELECT id FROM secrets WHERE account_id = $1 AND name = $2")
                .bind(v.account_id)
                .bind(v.name)
                .fetch_optional(&mut *tx)
                .await
                .map_err(internal("read a secret"))?;
        sqlx::query(
            "INSERT INTO secrets (account_id, name, description, key_id, sealed, size, \
             created_at, updated_at, updated_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8) \
             ON CONFLICT (account_id, name) DO UPDATE SET description = excluded.description, \
             key_id = excluded.key_id, sealed = excluded.sealed, size = excluded.size, \
             updated_at = excluded.updated_at, updated_by = excluded.updated_by",
        )
        .bind(v.account_id)
        .bind(v.name)
        .bind(v.description)
        .bind(v.key_id)
        .bind(v.sealed)
        .bind(v.size as i64)
        .bind(v.at)
        .bind(v.by)
        .execute(&mut *tx)
        .await
        .map_err(internal("write a secret"))?;
        audit::record(
            &mut *tx,
            audit::Entry {
                account_id: v.account_id,
                actor: v.by,
                action: if existed.is_some() {
                    "secret.changed"
                } else {
                    "secret.created"
                },
                detail: &format!("secret “{}” ({} bytes)", v.name, v.size),
            },
        )
        .await?;
        tx.commit().await.map_err(internal("commit a secret"))
    }

    /// Deletes a secret, with its line in the audit log in the same
    /// transaction; whether there was one.
    pub async fn delete(&self, account_id: i64, name: &str, by: &str) -> Result<bool, AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin deleting a secret"))?;
        let done = sqlx::query("DELETE FROM secrets WHERE account_id = $1 AND name = $2")
            .bind(account_id)
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(internal("delete a secret"))?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        audit::record(
            &mut *tx,
            audit::Entry {
                account_id,
                actor: by,
                action: "secret.deleted",
                detail: &format!("secret “{name}”"),
            },
        )
        .await?;
        tx.commit()
            .await
            .map_err(internal("commit deleting a secret"))?;
        Ok(true)
    }

    /// The sealed values of `names` that exist.
    pub async fn sealed(
        &self,
        account_id: i64,
        names: &[String],
    ) -> Result<Vec<SealedRow>, AppError> {
        let mut rows = Vec::new();
        for name in names {
            let row: Option<SealedRow> = sqlx::query_as(
                "SELECT name, key_id, sealed FROM secrets WHERE account_id = $1 AND name = $2",
            )
            .bind(account_id)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("read a sealed secret"))?;
            rows.extend(row);
        }
        Ok(rows)
    }

    /// Records that `names` were used at `at`.
    pub async fn touch(&self, account_id: i64, names: &[String], at: i64) -> Result<(), AppError> {
        for name in names {
            sqlx::query("UPDATE secrets SET last_used_at = $1 WHERE account_id = $2 AND name = $3")
                .bind(at)
                .bind(account_id)
                .bind(name)
                .execute(&self.pool)
                .await
                .map_err(internal("record a secret's use"))?;
        }
        Ok(())
    }
}
