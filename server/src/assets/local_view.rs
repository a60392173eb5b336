//! A job's view of a dataset or model version as a local folder: the store's
//! own folder when it is local and keeps the names as they are, else a
//! folder of links (local store) or copies (remote store) kept in step with
//! the index.

use std::path::PathBuf;

use app::error::AppError;
use app::models::FileEntry;
use futures_util::StreamExt;

use super::SqlAssets;
use crate::storage::assets::AssetRow;
use crate::storage::tokens::random_token;

impl SqlAssets {
    /// The local folder that holds `version` (0: a dataset's files) of `row`.
    pub(super) async fn local_view(
        &self,
        row: &AssetRow,
        version: i64,
    ) -> Result<PathBuf, AppError> {
        let files = self.store.files(row.id, version).await?;
        let prefix = Self::prefix(row, version);
        if let Some(dir) = self.objects.local_path(&prefix) {
            // The store keeps most names as they are; then the job reads its
            // own folder. Some characters (`[`, `~`, `#`, `%`, …) it encodes.
            let plain = files.iter().all(|f| {
                Self::key(row, version, &f.path).as_ref() == format!("{prefix}/{}", f.path)
            });
            if plain {
                tokio::fs::create_dir_all(&dir)
                    .await
                    .map_err(io_error("creating an asset folder"))?;
                return Ok(dir);
            }
        }
        // A folder of the files under their own names: links into a local
        // store, copies fetched from a remote one.
        let mut dir = self.cache_dir.join(&row.asset.owner).join(&row.asset.name);
        if version > 0 {
            dir = dir.join(format!("v{version}"));
        }
        let _one_at_a_time = self.syncing.lock().await;
        self.sync_view(row, version, &files, &dir).await?;
        Ok(dir)
    }

    /// Makes `dir` hold exactly `files` of the dataset: stale entries go,
    /// missing or changed files come (a copy is fresh when its size and
    /// modification time are the indexed ones).
    async fn sync_view(
        &self,
        row: &AssetRow,
        version: i64,
        files: &[FileEntry],
        dir: &std::path::Path,
    ) -> Result<(), AppError> {
        let io = io_error("preparing a dataset folder for a job");
        let wanted: std::collections::HashSet<&str> =
            files.iter().map(|f| f.path.as_str()).collect();
        let folders: std::collections::HashSet<&str> = files
            .iter()
            .flat_map(|f| f.path.match_indices('/').map(|(i, _)| &f.path[..i]))
            .collect();
        tokio::fs::create_dir_all(dir).await.map_err(&io)?;
        // First away with what is no longer in the dataset (and leftovers of
        // interrupted copies), so that a file can become a folder and back.
        let mut todo = vec![dir.to_path_buf()];
        while let Some(at) = todo.pop() {
            let mut entries = tokio::fs::read_dir(&at).await.map_err(&io)?;
            while let Some(entry) = entries.next_entry().await.map_err(&io)? {
                let path = entry.path();
                let kind = entry.file_type().await.map_err(&io)?;
                let rel = relative(dir, &path);
                let keep = rel.as_deref().is_some_and(|rel| {
                    if kind.is_dir() {
                        folders.contains(rel)
                    } else {
                        wanted.contains(rel)
                    }
                });
                match (keep, kind.is_dir()) {
                    (true, true) => todo.push(path),
                    (true, false) => {}
                    (false, true) => tokio::fs::remove_dir_all(&path).await.map_err(&io)?,
                    (false, false) => tokio::fs::remove_file(&path).await.map_err(&io)?,
                }
            }
        }
        for f in files {
            let target = dir.join(&f.path);
            let key = Self::key(row, version, &f.path);
            if let Some(parent) = target.parent() {
                tokio::fs::create_dir_all(parent).await.map_err(&io)?;
            }
            if let Some(source) = self.objects.local_path(&key) {
                if tokio::fs::read_link(&target)
                    .await
                    .is_ok_and(|l| l == source)
                {
                    continue;
                }
                let _ = tokio::fs::remove_file(&target).await;
                tokio::fs::symlink(&source, &target).await.map_err(&io)?;
                continue;
            }
            let modified = std::time::UNIX_EPOCH
                + std::time::Duration::from_millis(u64::try_from(f.modified).unwrap_or(0));
            let fresh = tokio::fs::symlink_metadata(&target).await.is_ok_and(|m| {
                m.is_file() && m.len() == f.size && m.modified().is_ok_and(|t| t == modified)
            });
            if fresh {
                continue;
            }
            // Written beside the target under a name no dataset file has
            // (names may not start with a space), then renamed into place.
            let part = target.with_file_name(format!(" {}.part", random_token()));
            let copied = async {
                let (mut body, _, _) = self.objects.get(&key, None).await?;
                let mut out = tokio::fs::File::create(&part).await.map_err(&io)?;
                while let Some(chunk) = body.next().await {
                    let chunk = chunk.map_err(&io)?;
                    tokio::io::AsyncWriteExt::write_all(&mut out, &chunk)
                        .await
                        .map_err(&io)?;
                }
                tokio::io::AsyncWriteExt::flush(&mut out)
                    .await
                    .map_err(&io)?;
                out.into_std().await.set_modified(modified).map_err(&io)?;
                tokio::fs::rename(&part, &target).await.map_err(&io)
            }
            .await;
            if copied.is_err() {
                let _ = tokio::fs::remove_file(&part).await;
            }
            copied?;
        }
        Ok(())
    }
}

fn io_error(context: &'static str) -> impl Fn(std::io::Error) -> AppError {
    move |e| {
        tracing::error!(error = %e, "{context}");
        AppError::Internal
    }
}

/// `path` relative to `root`, `/`-separated (`None` if not valid UTF-8).
fn relative(root: &std::path::Path, path: &std::path::Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}
