//! The asset tables: assets, their file index, model versions and shares.

use app::error::AppError;
use app::models::{
    Access, Asset, AssetKind, AssetRef, FileEntry, ModelVersion, RegisteredVersion, Share,
};

use super::db::Pool;
use super::internal;
use super::users;
use crate::storage::db::WriteTx;

/// Records a file of a version (0: a dataset's working files), replacing
/// the entry of one written before under the same path.
const INDEX_FILE: &str = "INSERT INTO asset_files (asset_id, version, path, size, modified) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (asset_id, version, path) DO UPDATE SET size = excluded.size, modified = excluded.modified";

/// Marks a version's files all in.
const FINISH_VERSION: &str =
    "UPDATE model_versions SET state = 'ready' WHERE asset_id = $1 AND version = $2";

/// An asset row with the ids the store addresses it by.
#[derive(Debug, Clone)]
pub struct AssetRow {
    /// Database id.
    pub id: i64,
    /// Owning account's id.
    pub account_id: i64,
    /// The asset as the API shows it (its `access` filled in by the caller).
    pub asset: Asset,
}

type Row = (
    i64,
    i64,
    String,
    String,
    String,
    String,
    i64,
    i64,
    i64,
    String,
    i64,
    i64,
);

const SELECT: &str = "SELECT a.id, a.account_id, a.kind, a.name, a.description, a.tags, \
     a.public, a.created_at, a.updated_at, o.name, \
     (SELECT COUNT(*) FROM asset_files f WHERE f.asset_id = a.id), \
     (SELECT CAST(COALESCE(SUM(f.size), 0) AS BIGINT) FROM asset_files f WHERE f.asset_id = a.id) \
     FROM assets a JOIN accounts o ON o.id = a.account_id";

fn from_row(r: Row) -> AssetRow {
    let (
        id,
        account_id,
        kind,
        name,
        description,
        tags,
        public,
        created,
        updated,
        owner,
        files,
        bytes,
    ) = r;
    AssetRow {
        id,
        account_id,
        asset: Asset {
            kind: AssetKind::parse(&kind).unwrap_or(AssetKind::Dataset),
            owner,
            name,
            description,
            tags: serde_json::from_str(&tags).unwrap_or_default(),
            public: public != 0,
            created_at: created,
            updated_at: updated,
            files: u64::try_from(files).unwrap_or(0),
            bytes: u64::try_from(bytes).unwrap_or(0),
            access: Access::Owner,
        },
    }
}

/// The asset tables.
#[derive(Clone)]
pub struct AssetStore {
    pool: Pool,
}

impl AssetStore {
    /// Wraps a migrated pool.
    pub fn new(pool: Pool) -> Self {
        Self { pool }
    }

    /// An asset by owner name, kind and name.
    pub async fn find(&self, r: &AssetRef) -> Result<Option<AssetRow>, AppError> {
        let row: Option<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{SELECT} WHERE o.name = $1 AND a.kind = $2 AND a.name = $3"
        )))
        .bind(&r.owner)
        .bind(r.kind.as_str())
        .bind(&r.name)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("find asset"))?;
        Ok(row.map(from_row))
    }

    /// Assets of `kind` an account can read: its own, shared with it, public.
    pub async fn readable(
        &self,
        account_id: i64,
        kind: AssetKind,
    ) -> Result<Vec<(AssetRow, Access)>, AppError> {
        let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{SELECT} WHERE a.kind = $2 AND (a.account_id = $1 OR a.public = 1 OR a.id IN \
             (SELECT asset_id FROM asset_shares WHERE account_id = $1)) \
             ORDER BY a.account_id <> $1, o.name, a.name"
        )))
        .bind(account_id)
        .bind(kind.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list assets"))?;
        let shared: Vec<i64> =
            sqlx::query_scalar("SELECT asset_id FROM asset_shares WHERE account_id = $1")
                .bind(account_id)
                .fetch_all(&self.pool)
                .await
                .map_err(internal("list shares with account"))?;
        Ok(rows
            .into_iter()
            .map(from_row)
            .map(|row| {
                let access = if row.account_id == account_id {
                    Access::Owner
                } else if shared.contains(&row.id) {
                    Access::Shared
                } else {
                    Access::Public
                };
                (row, access)
            })
            .collect())
    }

    /// Whether an account has a share of an asset.
    pub async fn shared_with(&self, asset_id: i64, account_id: i64) -> Result<bool, AppError> {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM asset_shares WHERE asset_id = $1 AND account_id = $2",
        )
        .bind(asset_id)
        .bind(account_id)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("check share"))?;
        Ok(n > 0)
    }

    /// The asset a live link token opens.
    pub async fn link(&self, token_hash: &str, now: i64) -> Result<Option<i64>, AppError> {
        sqlx::query_scalar(
            "SELECT asset_id FROM asset_shares WHERE token_hash = $1 \
             AND (expires_at IS NULL OR expires_at > $2)",
        )
        .bind(token_hash)
        .bind(now)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("resolve share link"))
    }

    /// An asset by id.
    pub async fn by_id(&self, id: i64) -> Result<Option<AssetRow>, AppError> {
        let row: Option<Row> =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("{SELECT} WHERE a.id = $1")))
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(internal("asset by id"))?;
        Ok(row.map(from_row))
    }

    /// Every indexed file of a slot, by path.
    pub async fn files(&self, asset_id: i64, version: i64) -> Result<Vec<FileEntry>, AppError> {
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT path, size, modified FROM asset_files WHERE asset_id = $1 AND version = $2 \
             ORDER BY path",
        )
        .bind(asset_id)
        .bind(version)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list asset files"))?;
        Ok(rows
            .into_iter()
            .map(|(path, size, modified)| FileEntry {
                path,
                dir: false,
                size: u64::try_from(size).unwrap_or(0),
                modified,
                files: 1,
            })
            .collect())
    }

    /// One indexed file.
    pub async fn file(
        &self,
        asset_id: i64,
        version: i64,
        path: &str,
    ) -> Result<Option<FileEntry>, AppError> {
        let row: Option<(i64, i64)> = sqlx::query_as(
            "SELECT size, modified FROM asset_files WHERE asset_id = $1 AND version = $2 AND path = $3",
        )
        .bind(asset_id)
        .bind(version)
        .bind(path)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("find asset file"))?;
        Ok(row.map(|(size, modified)| FileEntry {
            path: path.to_owned(),
            dir: false,
            size: u64::try_from(size).unwrap_or(0),
            modified,
            files: 1,
        }))
    }

    /// Records a file written (replacing an older one of the same path).
    pub async fn index_file(
        &self,
        asset_id: i64,
        version: i64,
        path: &str,
        size: u64,
        now: i64,
    ) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin index file"))?;
        sqlx::query(INDEX_FILE)
            .bind(asset_id)
            .bind(version)
            .bind(path)
            .bind(size as i64)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(internal("index file"))?;
        sqlx::query("UPDATE assets SET updated_at = $1 WHERE id = $2")
            .bind(now)
            .bind(asset_id)
            .execute(&mut *tx)
            .await
            .map_err(internal("touch asset"))?;
        tx.commit().await.map_err(internal("commit index file"))
    }

    /// Forgets files (the asset changed now).
    pub async fn unindex(
        &self,
        asset_id: i64,
        version: i64,
        paths: &[String],
    ) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin unindex"))?;
        sqlx::query("UPDATE assets SET updated_at = $1 WHERE id = $2")
            .bind(crate::time::now_ms())
            .bind(asset_id)
            .execute(&mut *tx)
            .await
            .map_err(internal("touch asset"))?;
        for p in paths {
            sqlx::query(
                "DELETE FROM asset_files WHERE asset_id = $1 AND version = $2 AND path = $3",
            )
            .bind(asset_id)
            .bind(version)
            .bind(p)
            .execute(&mut *tx)
            .await
            .map_err(internal("unindex file"))?;
        }
        tx.commit().await.map_err(internal("commit unindex"))
    }

    /// The versions of `account_id`'s models whose `job` is `job`, newest
    /// first.
    pub async fn registered_by(
        &self,
        account_id: i64,
        job: &str,
    ) -> Result<Vec<RegisteredVersion>, AppError> {
        let rows: Vec<(String, String, i64, String, i64)> = sqlx::query_as(
            "SELECT acc.name, a.name, v.version, v.state, v.created_at FROM model_versions v \
             JOIN assets a ON a.id = v.asset_id JOIN accounts acc ON acc.id = a.account_id \
             WHERE a.account_id = $1 AND a.kind = 'model' AND v.job = $2 \
             ORDER BY v.created_at DESC, v.version DESC",
        )
        .bind(account_id)
        .bind(job)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list the versions a job registered"))?;
        Ok(rows
            .into_iter()
            .map(
                |(owner, name, version, state, created_at)| RegisteredVersion {
                    owner,
                    name,
                    version: u32::try_from(version).unwrap_or(0),
                    state,
                    created_at,
                },
            )
            .collect())
    }

    /// A model's versions, newest first.
    pub async fn versions(&self, asset_id: i64) -> Result<Vec<ModelVersion>, AppError> {
        type V = (
            i64,
            String,
            String,
            Option<String>,
            String,
            i64,
            String,
            i64,
            i64,
        );
        let rows: Vec<V> = sqlx::query_as(
            "SELECT v.version, v.description, v.tags, v.job, v.created_by, v.created_at, v.state, \
             (SELECT COUNT(*) FROM asset_files f WHERE f.asset_id = v.asset_id AND f.version = v.version), \
             (SELECT CAST(COALESCE(SUM(f.size), 0) AS BIGINT) FROM asset_files f WHERE f.asset_id = v.asset_id AND f.version = v.version) \
             FROM model_versions v WHERE v.asset_id = $1 ORDER BY v.version DESC",
        )
        .bind(asset_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list model versions"))?;
        Ok(rows
            .into_iter()
            .map(
                |(version, description, tags, job, created_by, created_at, state, files, bytes)| {
                    ModelVersion {
                        version: u32::try_from(version).unwrap_or(0),
                        description,
                        tags: serde_json::from_str(&tags).unwrap_or_default(),
                        job,
                        created_by,
                        created_at,
                        files: u64::try_from(files).unwrap_or(0),
                        bytes: u64::try_from(bytes).unwrap_or(0),
                        state,
                    }
                },
            )
            .collect())
    }

    /// An asset's shares.
    pub async fn shares(&self, asset_id: i64) -> Result<Vec<Share>, AppError> {
        type S = (
            i64,
            Option<String>,
            Option<String>,
            Option<i64>,
            String,
            i64,
        );
        let rows: Vec<S> = sqlx::query_as(
            "SELECT s.id, o.name, s.prefix, s.expires_at, s.created_by, s.created_at \
             FROM asset_shares s LEFT JOIN accounts o ON o.id = s.account_id \
             WHERE s.asset_id = $1 ORDER BY s.created_at, s.id",
        )
        .bind(asset_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list shares"))?;
        Ok(rows
            .into_iter()
            .map(
                |(id, account, link_prefix, expires_at, created_by, created_at)| Share {
                    id,
                    account,
                    link_prefix,
                    expires_at,
                    created_by,
                    created_at,
                },
            )
            .collect())
    }

    /// Creates the account's asset; `Ok(false)` if it has one of that kind
    /// and name already.
    pub async fn create(
        &self,
        account_id: i64,
        kind: AssetKind,
        name: &str,
        description: &str,
        tags: &[String],
        now: i64,
    ) -> Result<bool, AppError> {
        let created = sqlx::query(
            "INSERT INTO assets (account_id, kind, name, description, tags, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $6)",
        )
        .bind(account_id)
        .bind(kind.as_str())
        .bind(name)
        .bind(description)
        .bind(serde_json::to_string(tags).unwrap_or_default())
        .bind(now)
        .execute(&self.pool)
        .await;
        match created {
            Ok(_) => Ok(true),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Ok(false),
            Err(err) => Err(internal("create asset")(err)),
        }
    }

    /// Sets an asset's description and tags.
    pub async fn update(
        &self,
        id: i64,
        description: &str,
        tags: &[String],
        now: i64,
    ) -> Result<(), AppError> {
        sqlx::query("UPDATE assets SET description = $1, tags = $2, updated_at = $3 WHERE id = $4")
            .bind(description)
            .bind(serde_json::to_string(tags).unwrap_or_default())
            .bind(now)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("update asset"))?;
        Ok(())
    }

    /// Deletes an asset's rows: its file index, versions, shares and itself,
    /// all or none.
    pub async fn delete(&self, id: i64) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin delete asset"))?;
        for table in [
            "asset_files",
            "model_versions",
            "asset_shares",
            "model_aliases",
            "model_alias_changes",
        ] {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE asset_id = $1"
            )))
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(internal("delete asset children"))?;
        }
        sqlx::query("DELETE FROM assets WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(internal("delete asset"))?;
        tx.commit().await.map_err(internal("commit delete asset"))
    }

    /// The id of the account named `name`, if there is one.
    pub async fn account_id(&self, name: &str) -> Result<Option<i64>, AppError> {
        Ok(users::account_named(&self.pool, name).await?.map(|a| a.id))
    }

    /// Shares the asset with account `account_id`; the share's id.
    pub async fn share(
        &self,
        asset_id: i64,
        account_id: i64,
        by: &str,
        now: i64,
    ) -> Result<i64, AppError> {
        sqlx::query_scalar(
            "INSERT INTO asset_shares (asset_id, account_id, created_by, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(asset_id)
        .bind(account_id)
        .bind(by)
        .bind(now)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("share asset"))
    }

    /// Stores a share link by its token's hash and shown prefix; its id.
    pub async fn add_link(
        &self,
        asset_id: i64,
        token_hash: &str,
        prefix: &str,
        expires_at: Option<i64>,
        by: &str,
        now: i64,
    ) -> Result<i64, AppError> {
        sqlx::query_scalar(
            "INSERT INTO asset_shares (asset_id, token_hash, prefix, expires_at, created_by, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(asset_id)
        .bind(token_hash)
        .bind(prefix)
        .bind(expires_at)
        .bind(by)
        .bind(now)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("create share link"))
    }

    /// Removes the asset's share (or link) `share`; whether there was one.
    pub async fn revoke(&self, asset_id: i64, share: i64) -> Result<bool, AppError> {
        let done = sqlx::query("DELETE FROM asset_shares WHERE id = $1 AND asset_id = $2")
            .bind(share)
            .bind(asset_id)
            .execute(&self.pool)
            .await
            .map_err(internal("revoke share"))?;
        Ok(done.rows_affected() > 0)
    }

    /// Makes the asset readable by every account, or no longer.
    pub async fn set_public(&self, id: i64, public: bool) -> Result<(), AppError> {
        sqlx::query("UPDATE assets SET public = $1 WHERE id = $2")
            .bind(i64::from(public))
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("publish asset"))?;
        Ok(())
    }

    /// Registers the model's next version (uploading, no files yet); its
    /// number. The number and the row are one statement; two registrations
    /// at once may still pick the same number, and the loser tries again.
    pub async fn new_version(
        &self,
        asset_id: i64,
        description: &str,
        tags: &[String],
        job: Option<&str>,
        by: &str,
        now: i64,
    ) -> Result<i64, AppError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let inserted = sqlx::query_scalar(
                "INSERT INTO model_versions (asset_id, version, description, tags, job, created_by, created_at, state) \
                 SELECT $1, COALESCE(MAX(version), 0) + 1, $2, $3, $4, $5, $6, 'uploading' \
                 FROM model_versions WHERE asset_id = $1 RETURNING version",
            )
            .bind(asset_id)
            .bind(description)
            .bind(serde_json::to_string(tags).unwrap_or_default())
            .bind(job)
            .bind(by)
            .bind(now)
            .fetch_one(&self.pool)
            .await;
            match inserted {
                Ok(n) => return Ok(n),
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() && attempt < 5 => {
                    continue
                }
                Err(err) => return Err(internal("create version")(err)),
            }
        }
    }

    /// Removes version `version` if it is still uploading and has no
    /// files (one started for a job that was then refused); whether it did.
    pub async fn discard_empty_version(
        &self,
        asset_id: i64,
        version: i64,
    ) -> Result<bool, AppError> {
        let done = sqlx::query(
            "DELETE FROM model_versions WHERE asset_id = $1 AND version = $2 AND state = 'uploading' \
             AND NOT EXISTS (SELECT 1 FROM asset_files f WHERE f.asset_id = $1 AND f.version = $2)",
        )
        .bind(asset_id)
        .bind(version)
        .execute(&self.pool)
        .await
        .map_err(internal("discard version"))?;
        Ok(done.rows_affected() > 0)
    }

    /// Marks a version's files all in.
    pub async fn finish_version(&self, asset_id: i64, version: i64) -> Result<(), AppError> {
        sqlx::query(FINISH_VERSION)
            .bind(asset_id)
            .bind(version)
            .execute(&self.pool)
            .await
            .map_err(internal("finish version"))?;
        Ok(())
    }

    /// Sets the tags of several of a model's versions, all or none (a stage
    /// tag moving from one version to another is two of them).
    pub async fn set_version_tags(
        &self,
        asset_id: i64,
        tags: &[(i64, Vec<String>)],
    ) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin tag version"))?;
        for (version, tags) in tags {
            sqlx::query("UPDATE model_versions SET tags = $1 WHERE asset_id = $2 AND version = $3")
                .bind(serde_json::to_string(tags).unwrap_or_default())
                .bind(asset_id)
                .bind(version)
                .execute(&mut *tx)
                .await
                .map_err(internal("tag version"))?;
        }
        tx.commit().await.map_err(internal("commit tag version"))
    }

    /// Indexes a saved version's files (copied into its place, with their
    /// sizes and times) and marks it complete, in one transaction: a version
    /// is whole or still uploading.
    pub async fn complete_version(
        &self,
        asset_id: i64,
        version: i64,
        files: &[FileEntry],
    ) -> Result<(), AppError> {
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin save version"))?;
        for f in files {
            sqlx::query(INDEX_FILE)
                .bind(asset_id)
                .bind(version)
                .bind(&f.path)
                .bind(i64::try_from(f.size).unwrap_or(i64::MAX))
                .bind(f.modified)
                .execute(&mut *tx)
                .await
                .map_err(internal("index a saved version's file"))?;
        }
        sqlx::query(FINISH_VERSION)
            .bind(asset_id)
            .bind(version)
            .execute(&mut *tx)
            .await
            .map_err(internal("finish a saved version"))?;
        tx.commit().await.map_err(internal("commit save version"))
    }
}
