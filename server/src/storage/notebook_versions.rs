//! SQL for the versions of a notebook's files (the files themselves are in
//! the object store, `crate::notebooks::versions` puts them there).

use app::error::AppError;
use app::models::{NotebookVersion, VersionReason, VersionedFile};

use super::db::WriteTx;
use super::internal;
use super::notebooks::NotebookStore;
use crate::time::now_ms;

/// The columns [`VersionRow`] reads.
const COLUMNS: &str = "v.id, v.path, v.at, v.author, v.reason, v.sha256, v.bytes, v.cells, \
     v.restored_from";

#[derive(sqlx::FromRow)]
struct VersionRow {
    id: i64,
    path: String,
    at: i64,
    author: String,
    reason: String,
    sha256: String,
    bytes: i64,
    cells: i64,
    restored_from: Option<i64>,
}

impl From<VersionRow> for NotebookVersion {
    fn from(r: VersionRow) -> Self {
        Self {
            id: r.id,
            path: r.path,
            at: r.at,
            author: r.author,
            reason: VersionReason::parse(&r.reason).unwrap_or(VersionReason::Save),
            sha256: r.sha256,
            bytes: u64::try_from(r.bytes).unwrap_or(0),
            cells: u32::try_from(r.cells).unwrap_or(0),
            restored_from: r.restored_from,
        }
    }
}

/// A version to record.
#[derive(Debug, Clone)]
pub struct NewVersion<'a> {
    /// The file's path in the workspace.
    pub path: &'a str,
    /// Who (an address, or what the console did).
    pub author: &'a str,
    /// What made it.
    pub reason: VersionReason,
    /// The content's hash.
    pub sha256: &'a str,
    /// Its size.
    pub bytes: u64,
    /// Its cells.
    pub cells: u32,
    /// For a restore, what it put back.
    pub restored_from: Option<i64>,
}

/// What recording a version did.
#[derive(Debug, Clone)]
pub enum Recorded {
    /// A new version.
    New(NotebookVersion),
    /// The file was as its newest version already: that one (a checkpoint
    /// of it marked as one).
    Unchanged(NotebookVersion),
}

impl Recorded {
    /// The version the file is now.
    pub fn version(&self) -> &NotebookVersion {
        match self {
            Self::New(v) | Self::Unchanged(v) => v,
        }
    }
}

impl NotebookStore {
    /// Records a version of one file of notebook `notebook_id`, unless its
    /// newest version has the same content (then a checkpoint marks that
    /// one as a checkpoint). Versions past `keep` of the file go, oldest
    /// first; the hashes no version of the notebook has any more come back
    /// with the outcome, for their objects to be removed.
    pub async fn record_version(
        &self,
        notebook_id: i64,
        new: &NewVersion<'_>,
        keep: usize,
    ) -> Result<(Recorded, Vec<String>), AppError> {
        let err = |e: sqlx::Error| internal("record a notebook version")(e);
        let mut tx = self.pool.begin_write().await.map_err(&err)?;
        let latest = sqlx::query_as::<_, VersionRow>(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM notebook_versions v WHERE v.notebook_id = $1 AND v.path = $2 \
             ORDER BY v.id DESC LIMIT 1"
        )))
        .bind(notebook_id)
        .bind(new.path)
        .fetch_optional(&mut *tx)
        .await
        .map_err(&err)?
        .map(NotebookVersion::from);
        if let Some(mut latest) = latest {
            if latest.sha256 == new.sha256 && new.reason != VersionReason::Restore {
                if new.reason == VersionReason::Checkpoint && latest.reason == VersionReason::Save {
                    sqlx::query("UPDATE notebook_versions SET reason = $1 WHERE id = $2")
                        .bind(VersionReason::Checkpoint.as_str())
                        .bind(latest.id)
                        .execute(&mut *tx)
                        .await
                        .map_err(&err)?;
                    latest.reason = VersionReason::Checkpoint;
                }
                tx.commit().await.map_err(&err)?;
                return Ok((Recorded::Unchanged(latest), Vec::new()));
            }
        }
        let id = sqlx::query_scalar::<_, i64>(
            "INSERT INTO notebook_versions \
             (notebook_id, path, at, author, reason, sha256, bytes, cells, restored_from) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .bind(notebook_id)
        .bind(new.path)
        .bind(now_ms())
        .bind(new.author)
        .bind(new.reason.as_str())
        .bind(new.sha256)
        .bind(i64::try_from(new.bytes).unwrap_or(i64::MAX))
        .bind(i64::from(new.cells))
        .bind(new.restored_from)
        .fetch_one(&mut *tx)
        .await
        .map_err(&err)?;
        // The oldest past `keep` go; their objects too, unless another
        // version (of any file of the notebook) has the same content.
        let old: Vec<(i64, String)> = sqlx::query_as(
            "SELECT id, sha256 FROM notebook_versions WHERE notebook_id = $1 AND path = $2 \
             ORDER BY id DESC LIMIT 1000000 OFFSET $3",
        )
        .bind(notebook_id)
        .bind(new.path)
        .bind(i64::try_from(keep).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await
        .map_err(&err)?;
        let mut orphans = Vec::new();
        for (old_id, sha) in old {
            sqlx::query("DELETE FROM notebook_versions WHERE id = $1")
                .bind(old_id)
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
            let left: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM notebook_versions WHERE notebook_id = $1 AND sha256 = $2",
            )
            .bind(notebook_id)
            .bind(&sha)
            .fetch_one(&mut *tx)
            .await
            .map_err(&err)?;
            if left == 0 && !orphans.contains(&sha) {
                orphans.push(sha);
            }
        }
        tx.commit().await.map_err(&err)?;
        let version = self.version(notebook_id, id).await?;
        Ok((Recorded::New(version), orphans))
    }

    /// One version of the notebook's files.
    pub async fn version(&self, notebook_id: i64, id: i64) -> Result<NotebookVersion, AppError> {
        sqlx::query_as::<_, VersionRow>(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM notebook_versions v WHERE v.notebook_id = $1 AND v.id = $2"
        )))
        .bind(notebook_id)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a notebook version"))?
        .map(NotebookVersion::from)
        .ok_or_else(|| AppError::not_found(format!("Version {id}")))
    }

    /// The versions of one file, newest first.
    pub async fn versions(
        &self,
        notebook_id: i64,
        path: &str,
    ) -> Result<Vec<NotebookVersion>, AppError> {
        let rows = sqlx::query_as::<_, VersionRow>(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM notebook_versions v WHERE v.notebook_id = $1 AND v.path = $2 \
             ORDER BY v.id DESC"
        )))
        .bind(notebook_id)
        .bind(path)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read notebook versions"))?;
        Ok(rows.into_iter().map(NotebookVersion::from).collect())
    }

    /// The newest version of one file, if it has any.
    pub async fn latest_version(
        &self,
        notebook_id: i64,
        path: &str,
    ) -> Result<Option<NotebookVersion>, AppError> {
        Ok(sqlx::query_as::<_, VersionRow>(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM notebook_versions v WHERE v.notebook_id = $1 AND v.path = $2 \
             ORDER BY v.id DESC LIMIT 1"
        )))
        .bind(notebook_id)
        .bind(path)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a notebook version"))?
        .map(NotebookVersion::from))
    }

    /// The notebook's files that have versions, the latest changed first.
    pub async fn versioned_files(&self, notebook_id: i64) -> Result<Vec<VersionedFile>, AppError> {
        #[derive(sqlx::FromRow)]
        struct FileRow {
            #[sqlx(flatten)]
            latest: VersionRow,
            n: i64,
        }
        let rows = sqlx::query_as::<_, FileRow>(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS}, c.n FROM notebook_versions v JOIN \
             (SELECT path, MAX(id) AS latest, COUNT(*) AS n FROM notebook_versions \
              WHERE notebook_id = $1 GROUP BY path) c ON v.id = c.latest \
             ORDER BY v.id DESC"
        )))
        .bind(notebook_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read versioned notebook files"))?;
        Ok(rows
            .into_iter()
            .map(|r| VersionedFile {
                path: r.latest.path.clone(),
                versions: u32::try_from(r.n).unwrap_or(u32::MAX),
                latest: r.latest.into(),
            })
            .collect())
    }

    /// Every content hash the notebook's versions have (what its objects
    /// are named by).
    pub async fn version_hashes(&self, notebook_id: i64) -> Result<Vec<String>, AppError> {
        sqlx::query_scalar("SELECT DISTINCT sha256 FROM notebook_versions WHERE notebook_id = $1")
            .bind(notebook_id)
            .fetch_all(&self.pool)
            .await
            .map_err(internal("read notebook version hashes"))
    }
}
