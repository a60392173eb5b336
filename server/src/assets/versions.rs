//! Versions on [`SqlAssets`]: a model's, uploaded into and finished, and a
//! dataset's, its working files saved as they are; tags, a stage tag
//! (`production`, `candidate`) on one version at a time; a complete
//! version's files never change.

use app::error::AppError;
use app::models::{parse_tags, Access, AssetKind, AssetRef, Me, ModelVersion, VersionForm};
use app::ports::{Slot, Viewer};

use super::{SqlAssets, READY, STAGES};
use crate::storage::assets::AssetRow;
use crate::time::now_ms;

impl SqlAssets {
    /// The versions the viewer may see, newest first: all to the owner,
    /// complete ones to others.
    pub(super) async fn list_versions(
        &self,
        viewer: &Viewer,
        r: &AssetRef,
    ) -> Result<Vec<ModelVersion>, AppError> {
        let (row, access) = self.readable(viewer, r).await?;
        let mut versions = self.store.versions(row.id).await?;
        if access != Access::Owner {
            versions.retain(|v| v.state == READY);
        }
        Ok(versions)
    }

    /// A model's next version, empty; a dataset's, its working files saved
    /// (unless `form.empty`).
    pub(super) async fn new_version(
        &self,
        me: &Me,
        r: &AssetRef,
        form: VersionForm,
    ) -> Result<ModelVersion, AppError> {
        let row = self.owned(me, r).await?;
        let tags = parse_tags(&form.tags)?;
        // A dataset's version saves its working files as they are now.
        let saved = if row.asset.kind == AssetKind::Dataset && !form.empty {
            let files = self.store.files(row.id, 0).await?;
            if files.is_empty() {
                return Err(AppError::invalid(
                    "version",
                    format!(
                        "Dataset “{}” has no files to save as a version: upload some first.",
                        row.asset.name
                    ),
                ));
            }
            Some(files)
        } else {
            None
        };
        let job = form
            .job
            .map(|j| j.trim().to_owned())
            .filter(|j| !j.is_empty());
        let next = self
            .store
            .new_version(
                row.id,
                form.description.trim(),
                &tags,
                job.as_deref(),
                &me.email,
                now_ms(),
            )
            .await?;
        let n = u32::try_from(next).unwrap_or(0);
        if let Some(files) = saved {
            // Each file copied whole (a link on a local store), then the
            // index and the version's completion in one step. A file deleted
            // since the listing is left out; a store that fails leaves the
            // version "uploading", seen by its owner only, and the next save
            // takes the next number.
            let mut copied = Vec::with_capacity(files.len());
            for f in files {
                let (from, to) = (Self::key(&row, 0, &f.path), Self::key(&row, next, &f.path));
                match self.objects.copy(&from, &to).await {
                    Ok(()) => copied.push(f),
                    Err(AppError::NotFound { .. }) => {}
                    Err(other) => return Err(other),
                }
            }
            self.store.complete_version(row.id, next, &copied).await?;
            tracing::info!(dataset = %r.href(), version = n, files = copied.len(), user = %me.email, "dataset version saved");
        }
        if !tags.is_empty() {
            return self.retag_version(me, r, n, &tags.join(",")).await;
        }
        self.find_version(row.id, n).await
    }

    /// Marks an uploaded version complete; one without files is refused.
    pub(super) async fn complete_version(
        &self,
        me: &Me,
        r: &AssetRef,
        version: u32,
    ) -> Result<ModelVersion, AppError> {
        let row = self.owned(me, r).await?;
        let v = self
            .slot_version(&row, Access::Owner, Slot::Version(version))
            .await?;
        if self.store.files(row.id, v).await?.is_empty() {
            return Err(AppError::invalid(
                "version",
                "Upload the version's files first: it has none.",
            ));
        }
        self.store.finish_version(row.id, v).await?;
        self.find_version(row.id, version).await
    }

    /// Sets a version's tags, moving a stage tag off the other versions.
    pub(super) async fn retag_version(
        &self,
        me: &Me,
        r: &AssetRef,
        version: u32,
        tags: &str,
    ) -> Result<ModelVersion, AppError> {
        let row = self.owned(me, r).await?;
        let v = self
            .slot_version(&row, Access::Owner, Slot::Version(version))
            .await?;
        let tags = parse_tags(tags)?;
        // A stage (production, candidate) is on one version at a time: it moves.
        let mut changes = Vec::new();
        for other in self.store.versions(row.id).await? {
            if other.version == version {
                continue;
            }
            let kept: Vec<String> = other
                .tags
                .iter()
                .filter(|t| !(STAGES.contains(&t.as_str()) && tags.contains(t)))
                .cloned()
                .collect();
            if kept.len() != other.tags.len() {
                changes.push((i64::from(other.version), kept));
            }
        }
        changes.push((v, tags));
        self.store.set_version_tags(row.id, &changes).await?;
        self.find_version(row.id, version).await
    }

    /// Refuses to change the files of a finished version.
    pub(super) async fn unfinished(&self, row: &AssetRow, slot: Slot) -> Result<(), AppError> {
        if let Slot::Version(n) = slot {
            let ready = self
                .store
                .versions(row.id)
                .await?
                .iter()
                .any(|x| x.version == n && x.state == READY);
            if ready {
                return Err(AppError::Conflict {
                    field: None,
                    message: format!(
                        "Version {n} is complete and cannot change; register a new version."
                    ),
                });
            }
        }
        Ok(())
    }

    /// One version of the asset, as just written.
    async fn find_version(&self, asset_id: i64, version: u32) -> Result<ModelVersion, AppError> {
        self.store
            .versions(asset_id)
            .await?
            .into_iter()
            .find(|v| v.version == version)
            .ok_or(AppError::Internal)
    }
}
