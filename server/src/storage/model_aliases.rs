//! Model aliases and their history (`model_aliases`,
//! `model_alias_changes`): each set, move or delete writes the alias's row
//! and its change in one transaction, so the history is the whole story.

use app::error::AppError;
use app::models::{AliasChange, ModelAlias};

use super::db::Pool;
use super::internal;
use crate::storage::db::WriteTx;

/// A `model_aliases` row: alias, version, protected, by, at.
type AliasRow = (String, i64, i64, String, i64);
/// A `model_alias_changes` row: alias, from, to, protected, by, at.
type ChangeRow = (String, Option<i64>, Option<i64>, i64, String, i64);

/// Model aliases in the console's database.
#[derive(Clone)]
pub struct AliasStore {
    pool: Pool,
}

fn alias_from((alias, version, protected, updated_by, updated_at): AliasRow) -> ModelAlias {
    ModelAlias {
        alias,
        version: u32::try_from(version).unwrap_or(0),
        protected: protected != 0,
        updated_by,
        updated_at,
    }
}

impl AliasStore {
    /// Wraps a migrated pool.
    pub fn new(pool: Pool) -> Self {
        Self { pool }
    }

    /// The aliases of model `asset_id`, by name.
    pub async fn list(&self, asset_id: i64) -> Result<Vec<ModelAlias>, AppError> {
        let rows: Vec<AliasRow> = sqlx::query_as(
            "SELECT alias, version, protected, updated_by, updated_at FROM model_aliases \
             WHERE asset_id = $1 ORDER BY alias",
        )
        .bind(asset_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list model aliases"))?;
        Ok(rows.into_iter().map(alias_from).collect())
    }

    /// One alias of model `asset_id`, if it has it.
    pub async fn get(&self, asset_id: i64, alias: &str) -> Result<Option<ModelAlias>, AppError> {
        let row: Option<AliasRow> = sqlx::query_as(
            "SELECT alias, version, protected, updated_by, updated_at FROM model_aliases \
             WHERE asset_id = $1 AND alias = $2",
        )
        .bind(asset_id)
        .bind(alias)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a model alias"))?;
        Ok(row.map(alias_from))
    }

    /// Points `alias` of model `asset_id` at `version` (creating it) and
    /// records the change from `from` (what the caller read; the write
    /// happens only if the alias still says that, so two moves at once
    /// cannot lose one's history): whether it did.
    pub async fn set(
        &self,
        asset_id: i64,
        alias: &ModelAlias,
        from: Option<u32>,
    ) -> Result<bool, AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin set alias"))?;
        let written = match from {
            None => sqlx::query(
                "INSERT INTO model_aliases (asset_id, alias, version, protected, updated_by, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (asset_id, alias) DO NOTHING",
            )
            .bind(asset_id)
            .bind(&alias.alias)
            .bind(i64::from(alias.version))
            .bind(i64::from(alias.protected))
            .bind(&alias.updated_by)
            .bind(alias.updated_at)
            .execute(&mut *tx)
            .await,
            Some(from) => sqlx::query(
                "UPDATE model_aliases SET version = $3, protected = $4, updated_by = $5, updated_at = $6 \
                 WHERE asset_id = $1 AND alias = $2 AND version = $7",
            )
            .bind(asset_id)
            .bind(&alias.alias)
            .bind(i64::from(alias.version))
            .bind(i64::from(alias.protected))
            .bind(&alias.updated_by)
            .bind(alias.updated_at)
            .bind(i64::from(from))
            .execute(&mut *tx)
            .await,
        }
        .map_err(internal("write a model alias"))?
        .rows_affected();
        if written == 0 {
            return Ok(false);
        }
        record(
            &mut tx,
            asset_id,
            &AliasChange {
                alias: alias.alias.clone(),
                from,
                to: Some(alias.version),
                protected: alias.protected,
                by: alias.updated_by.clone(),
                at: alias.updated_at,
            },
        )
        .await?;
        tx.commit().await.map_err(internal("commit set alias"))?;
        Ok(true)
    }

    /// Deletes `alias` of model `asset_id` if it still names `from`, with
    /// its change: whether it did.
    pub async fn delete(
        &self,
        asset_id: i64,
        alias: &str,
        from: u32,
        by: &str,
        at: i64,
    ) -> Result<bool, AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin delete alias"))?;
        let gone = sqlx::query(
            "DELETE FROM model_aliases WHERE asset_id = $1 AND alias = $2 AND version = $3",
        )
        .bind(asset_id)
        .bind(alias)
        .bind(i64::from(from))
        .execute(&mut *tx)
        .await
        .map_err(internal("delete a model alias"))?
        .rows_affected();
        if gone == 0 {
            return Ok(false);
        }
        let change = AliasChange {
            alias: alias.to_owned(),
            from: Some(from),
            to: None,
            protected: false,
            by: by.to_owned(),
            at,
        };
        record(&mut tx, asset_id, &change).await?;
        tx.commit().await.map_err(internal("commit delete alias"))?;
        Ok(true)
    }

    /// The changes of model `asset_id`'s aliases, newest first (at most
    /// `limit`).
    pub async fn history(&self, asset_id: i64, limit: i64) -> Result<Vec<AliasChange>, AppError> {
        let rows: Vec<ChangeRow> = sqlx::query_as(
            "SELECT alias, from_version, to_version, protected, by_email, at \
             FROM model_alias_changes WHERE asset_id = $1 ORDER BY id DESC LIMIT $2",
        )
        .bind(asset_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read model alias history"))?;
        let version = |v: Option<i64>| v.and_then(|v| u32::try_from(v).ok());
        Ok(rows
            .into_iter()
            .map(|(alias, from, to, protected, by, at)| AliasChange {
                alias,
                from: version(from),
                to: version(to),
                protected: protected != 0,
                by,
                at,
            })
            .collect())
    }
}

/// Writes one change of an alias in the caller's transaction.
async fn record(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    asset_id: i64,
    change: &AliasChange,
) -> Result<(), AppError> {
    sqlx::query(
        "INSERT INTO model_alias_changes \
         (asset_id, alias, from_version, to_version, protected, by_email, at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(asset_id)
    .bind(&change.alias)
    .bind(change.from.map(i64::from))
    .bind(change.to.map(i64::from))
    .bind(i64::from(change.protected))
    .bind(&change.by)
    .bind(change.at)
    .execute(&mut **tx)
    .await
    .map_err(internal("record a model alias change"))?;
    Ok(())
}
