//! Versions of a notebook's files: kept when the proxy passes on a save or
//! a checkpoint ([`NotebookService::saved`]),
//! when the notebook stops (every notebook file of the workspace, read
//! through its server), and when one is restored. Each is the file's JSON
//! in the object store under `notebook-versions/<id>/<sha256>.ipynb`, its
//! nbconvert page cached beside it (`.html`), and a row in the database.
//! Only the notebook's owner reads them, as only they open the notebook.

use std::time::Duration;

use app::error::AppError;
use app::models::{
    check_versioned_path, diff_cells, Me, NotebookContent, NotebookDiff, NotebookHistory,
    NotebookStatus, NotebookVersion, VersionReason, MAX_VERSION_BYTES, VERSIONS_KEPT,
};
use object_store::path::Path;
use sha2::{Digest, Sha256};

use super::contents::Contents;
use super::{NotebookService, Route};
use crate::storage::notebook_versions::{NewVersion, Recorded};
use crate::storage::notebooks::StoredNotebook;

/// How long the snapshot at a stop may take, all files together.
const SNAPSHOT_LIMIT: Duration = Duration::from_secs(60);

/// A version's object: its file (`ipynb`) or its page (`html`).
fn object_key(notebook_id: i64, sha256: &str, ext: &str) -> Path {
    Path::from(format!("notebook-versions/{notebook_id}/{sha256}.{ext}"))
}

impl NotebookService {
    /// `stored`, if `by` may read its versions: its owner alone; anyone
    /// else gets the "not found" a stranger gets.
    pub(super) async fn readable(&self, by: &Me, name: &str) -> Result<StoredNotebook, AppError> {
        let stored = self.store.get(by.account.id, name).await?;
        if stored.user_id != by.user_id {
            return Err(AppError::not_found(format!("Notebook “{name}”")));
        }
        Ok(stored)
    }

    /// Keeps `content` as a version of `path` (unless it is the file's
    /// newest version already).
    async fn keep(
        &self,
        notebook_id: i64,
        path: &str,
        author: &str,
        reason: VersionReason,
        content: &NotebookContent,
        restored_from: Option<i64>,
    ) -> Result<Recorded, AppError> {
        let sha256 = hex::encode(Sha256::digest(&content.bytes));
        // The object first (equal contents, one object): a row never names
        // a file that is not there.
        self.objects
            .put_bytes(
                &object_key(notebook_id, &sha256, "ipynb"),
                content.bytes.clone(),
            )
            .await?;
        let new = NewVersion {
            path,
            author,
            reason,
            sha256: &sha256,
            bytes: content.bytes.len() as u64,
            cells: content.cells,
            restored_from,
        };
        let (recorded, orphans) = self
            .store
            .record_version(notebook_id, &new, VERSIONS_KEPT)
            .await?;
        let keys = orphans
            .iter()
            .flat_map(|sha| {
                [
                    object_key(notebook_id, sha, "ipynb"),
                    object_key(notebook_id, sha, "html"),
                ]
            })
            .collect();
        if let Err(err) = self.objects.delete(keys).await {
            tracing::warn!(error = %err, "removing old notebook versions' files");
        }
        Ok(recorded)
    }

    /// A save or checkpoint of `path` the proxy passed on (answered 2xx):
    /// the file, read back from the server as it wrote it, kept as a
    /// version. A failure is logged: the save itself went through.
    pub async fn saved(&self, route: &Route, by: &Me, path: &str, reason: VersionReason) {
        if check_versioned_path(path).is_err() {
            return;
        }
        let contents = Contents::new(route, &route.base_path);
        let kept = match contents.read_notebook(path).await {
            Ok(notebook) => match NotebookContent::from_json(&notebook) {
                Ok(content) if content.bytes.len() <= MAX_VERSION_BYTES => self
                    .keep(route.notebook_id, path, &by.email, reason, &content, None)
                    .await
                    .map(|_| ()),
                Ok(_) => Ok(()),
                Err(err) => Err(err),
            },
            Err(why) => Err(AppError::Unavailable { message: why }),
        };
        if let Err(err) = kept {
            tracing::warn!(notebook = %route.notebook_id, path, error = %err, "keeping a notebook file's version");
        }
    }

    /// Before a running notebook stops: every notebook file of its
    /// workspace kept as it is (files unchanged since their newest version
    /// add none), within [`SNAPSHOT_LIMIT`]; `author` says who stopped it.
    pub(super) async fn snapshot(&self, stored: &StoredNotebook, author: &str) {
        if stored.notebook.status != NotebookStatus::Running {
            return;
        }
        let Some(route) = self.route_of(stored).await else {
            return;
        };
        let work = async {
            let contents = Contents::new(&route, &route.base_path);
            let mut kept = 0usize;
            for path in contents.notebook_paths().await? {
                let notebook = contents.read_notebook(&path).await?;
                let Ok(content) = NotebookContent::from_json(&notebook) else {
                    continue;
                };
                if content.bytes.len() > MAX_VERSION_BYTES {
                    continue;
                }
                match self
                    .keep(
                        stored.id,
                        &path,
                        author,
                        VersionReason::Stop,
                        &content,
                        None,
                    )
                    .await
                {
                    Ok(Recorded::New(_)) => kept += 1,
                    Ok(Recorded::Unchanged(_)) => {}
                    Err(err) => return Err(err.to_string()),
                }
            }
            Ok::<_, String>(kept)
        };
        match tokio::time::timeout(SNAPSHOT_LIMIT, work).await {
            Ok(Ok(kept)) => {
                tracing::info!(notebook = %stored.notebook.name, kept, "notebook files kept at stop")
            }
            Ok(Err(why)) => {
                tracing::warn!(notebook = %stored.notebook.name, error = %why, "keeping a stopping notebook's files")
            }
            Err(_) => {
                tracing::warn!(notebook = %stored.notebook.name, "keeping a stopping notebook's files took too long")
            }
        }
    }

    /// Removes the files of every version of `stored` (their rows go with
    /// the notebook's).
    pub(super) async fn forget_versions(&self, stored: &StoredNotebook) -> Result<(), AppError> {
        let keys = self
            .store
            .version_hashes(stored.id)
            .await?
            .iter()
            .flat_map(|sha| {
                [
                    object_key(stored.id, sha, "ipynb"),
                    object_key(stored.id, sha, "html"),
                ]
            })
            .collect();
        self.objects.delete(keys).await
    }

    /// The notebook's files with versions, and `path`'s versions (the file
    /// changed last when no path is given).
    pub(super) async fn history_of(
        &self,
        by: &Me,
        name: &str,
        path: Option<&str>,
    ) -> Result<NotebookHistory, AppError> {
        let stored = self.readable(by, name).await?;
        if let Some(path) = path {
            check_versioned_path(path)?;
        }
        let files = self.store.versioned_files(stored.id).await?;
        let path = path
            .map(str::to_owned)
            .or_else(|| files.first().map(|f| f.path.clone()));
        let versions = match &path {
            Some(path) => self.store.versions(stored.id, path).await?,
            None => Vec::new(),
        };
        Ok(NotebookHistory {
            notebook: name.to_owned(),
            files,
            path,
            versions,
        })
    }

    /// Version `id` and its file's bytes.
    pub(super) async fn version_file(
        &self,
        by: &Me,
        name: &str,
        id: i64,
    ) -> Result<(NotebookVersion, Vec<u8>), AppError> {
        let stored = self.readable(by, name).await?;
        let version = self.store.version(stored.id, id).await?;
        let bytes = self.file_of(stored.id, &version).await?;
        Ok((version, bytes))
    }

    /// Version `id` as nbconvert's page.
    pub(super) async fn version_page(
        &self,
        by: &Me,
        name: &str,
        id: i64,
    ) -> Result<Vec<u8>, AppError> {
        let stored = self.readable(by, name).await?;
        let version = self.store.version(stored.id, id).await?;
        self.page_of(stored.id, &version).await
    }

    /// The file of notebook `notebook_id`'s `version`.
    pub(super) async fn file_of(
        &self,
        notebook_id: i64,
        version: &NotebookVersion,
    ) -> Result<Vec<u8>, AppError> {
        self.objects
            .get_bytes(&object_key(notebook_id, &version.sha256, "ipynb"))
            .await
    }

    /// Notebook `notebook_id`'s `version` as nbconvert's page, made once
    /// and kept beside its file.
    pub(super) async fn page_of(
        &self,
        notebook_id: i64,
        version: &NotebookVersion,
    ) -> Result<Vec<u8>, AppError> {
        let page_key = object_key(notebook_id, &version.sha256, "html");
        match self.objects.get_bytes(&page_key).await {
            Ok(page) => return Ok(page),
            Err(AppError::NotFound { .. }) => {}
            Err(err) => return Err(err),
        }
        let file = self.file_of(notebook_id, version).await?;
        let page = self.renderer.html(&file).await?;
        if let Err(err) = self.objects.put_bytes(&page_key, page.clone()).await {
            tracing::warn!(error = %err, "keeping a rendered notebook version");
        }
        Ok(page)
    }

    /// Where `stored`'s server answers; a notebook that is not running is a
    /// conflict: files are written into a workspace by its server, to
    /// `do_what`.
    pub(super) async fn running_route(
        &self,
        stored: &StoredNotebook,
        do_what: &str,
    ) -> Result<Route, AppError> {
        let name = &stored.notebook.name;
        match stored.notebook.status {
            NotebookStatus::Running => self.route_of(stored).await,
            _ => None,
        }
        .ok_or_else(|| {
            AppError::conflict(
                "status",
                format!("Start “{name}” to {do_what}: files are written into its workspace by its server."),
            )
        })
    }

    /// Writes `notebook` into `into`'s running workspace at `path` through
    /// its server, and keeps what the server wrote as a version by `by`
    /// (`reason`, `restored_from`).
    pub(super) async fn write_into(
        &self,
        route: &Route,
        by: &Me,
        path: &str,
        notebook: serde_json::Value,
        reason: VersionReason,
        restored_from: Option<i64>,
    ) -> Result<NotebookVersion, AppError> {
        let contents = Contents::new(route, &route.base_path);
        contents
            .write_notebook(path, &notebook)
            .await
            .map_err(|why| AppError::Unavailable {
                message: format!("The notebook's server did not take the file: {why}"),
            })?;
        // Kept as the server wrote it, so that its next save of the same
        // content hashes the same and adds no version.
        let written = contents.read_notebook(path).await.unwrap_or(notebook);
        let content = NotebookContent::from_json(&written)?;
        let recorded = self
            .keep(
                route.notebook_id,
                path,
                &by.email,
                reason,
                &content,
                restored_from,
            )
            .await?;
        Ok(recorded.version().clone())
    }

    /// Versions `from` and `to` compared cell by cell.
    pub(super) async fn diff_of(
        &self,
        by: &Me,
        name: &str,
        from: i64,
        to: i64,
    ) -> Result<NotebookDiff, AppError> {
        let stored = self.readable(by, name).await?;
        let old = self.store.version(stored.id, from).await?;
        let new = self.store.version(stored.id, to).await?;
        let old_bytes = self.file_of(stored.id, &old).await?;
        let new_bytes = self.file_of(stored.id, &new).await?;
        let parse = |bytes: &[u8]| {
            serde_json::from_slice::<serde_json::Value>(bytes).map_err(|err| {
                tracing::error!(error = %err, "a kept notebook version is not JSON");
                AppError::Internal
            })
        };
        Ok(NotebookDiff {
            notebook: name.to_owned(),
            cells: diff_cells(&parse(&old_bytes)?, &parse(&new_bytes)?),
            from: old,
            to: new,
        })
    }

    /// Writes version `id` back into the running notebook's workspace: the
    /// file as it is first gets a version of its own (so a restore can be
    /// undone), then the restore is a version too.
    pub(super) async fn restore_version(
        &self,
        by: &Me,
        name: &str,
        id: i64,
    ) -> Result<NotebookVersion, AppError> {
        let stored = self.readable(by, name).await?;
        by.role.require_change()?;
        let version = self.store.version(stored.id, id).await?;
        let bytes = self.file_of(stored.id, &version).await?;
        let route = self.running_route(&stored, "restore a version").await?;
        let contents = Contents::new(&route, &route.base_path);
        if let Ok(now) = contents.read_notebook(&version.path).await {
            if let Ok(content) = NotebookContent::from_json(&now) {
                self.keep(
                    stored.id,
                    &version.path,
                    &by.email,
                    VersionReason::Save,
                    &content,
                    None,
                )
                .await?;
            }
        }
        let notebook: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|_| AppError::Internal)?;
        let restored = self
            .write_into(
                &route,
                by,
                &version.path,
                notebook,
                VersionReason::Restore,
                Some(id),
            )
            .await?;
        tracing::info!(notebook = %name, path = %version.path, version = id, user = %by.email, "notebook version restored");
        Ok(restored)
    }
}
