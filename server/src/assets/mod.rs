//! [`app::ports::Assets`]: datasets and models with their files in an
//! object store ([`objects`]) and their index, versions and shares in the
//! database ([`crate::storage::assets`]).
//!
//! Objects are laid out as `datasets/<owner>/<name>/files/<path>` and
//! `models/<owner>/<name>/v<N>/<path>`.

mod aliases;
mod folder;
mod local_view;
pub mod objects;
mod versions;

use std::path::PathBuf;

use app::error::AppError;
use app::models::{
    parse_tags, validate_asset_name, validate_dir, validate_path, Access, Account, AliasChange,
    AliasForm, Asset, AssetForm, AssetKind, AssetRef, FileEntry, Me, ModelAlias, ModelVersion,
    NewLink, RegisteredVersion, Share, VersionForm,
};
use app::ports::{Assets, ByteRange, ByteStream, OpenFile, Slot, Viewer};
use async_trait::async_trait;
use object_store::path::Path;

use crate::storage::assets::{AssetRow, AssetStore};
use crate::storage::db::Pool;
use crate::storage::model_aliases::AliasStore;
use crate::storage::tokens::{random_token, token_hash};
use crate::time::now_ms;
pub use folder::folder;
use objects::Objects;

/// Every share link token starts with this.
pub const LINK_PREFIX: &str = "pcs_";
/// Model version tags a model has on one version at a time.
const STAGES: &[&str] = &["production", "candidate"];
/// The state of a version whose files are all in.
const READY: &str = "ready";

/// Datasets and models on the SQL database and an object store.
pub struct SqlAssets {
    store: AssetStore,
    aliases: AliasStore,
    objects: Objects,
    /// Where datasets from a remote store are copied for local jobs.
    cache_dir: PathBuf,
    /// One job's dataset folder is prepared at a time.
    syncing: tokio::sync::Mutex<()>,
}

impl SqlAssets {
    /// Wraps a migrated pool and a store; `cache_dir` holds copies of remote
    /// datasets for local jobs.
    pub fn new(pool: Pool, objects: Objects, cache_dir: PathBuf) -> Self {
        Self {
            store: AssetStore::new(pool.clone()),
            aliases: AliasStore::new(pool),
            objects,
            cache_dir,
            syncing: tokio::sync::Mutex::new(()),
        }
    }

    /// The asset if the viewer may read it, with how; "not found" otherwise.
    async fn readable(
        &self,
        viewer: &Viewer,
        r: &AssetRef,
    ) -> Result<(AssetRow, Access), AppError> {
        let missing =
            || AppError::not_found(format!("{} “{}/{}”", r.kind.label(), r.owner, r.name));
        let row = self.store.find(r).await?.ok_or_else(missing)?;
        let access = match viewer {
            Viewer::User(me) if me.account.id == row.account_id => Access::Owner,
            Viewer::User(me) if self.store.shared_with(row.id, me.account.id).await? => {
                Access::Shared
            }
            Viewer::User(_) if row.asset.public => Access::Public,
            Viewer::Link(token) => match self.store.link(&token_hash(token), now_ms()).await? {
                Some(id) if id == row.id => Access::Link,
                _ => return Err(missing()),
            },
            Viewer::User(_) => return Err(missing()),
        };
        Ok((row, access))
    }

    /// The asset if the user's account owns it; read-only viewers are told so.
    async fn owned(&self, me: &Me, r: &AssetRef) -> Result<AssetRow, AppError> {
        let (row, access) = self.readable(&Viewer::User(me.clone()), r).await?;
        if !access.can_write() {
            return Err(AppError::forbidden(format!(
                "{} “{}/{}” is shared with you read-only.",
                r.kind.label(),
                r.owner,
                r.name
            )));
        }
        Ok(row)
    }

    /// The version number of a slot, checked against the asset's kind. A
    /// version still uploading is its owner's only: to anyone else it is not
    /// there yet.
    async fn slot_version(
        &self,
        row: &AssetRow,
        access: Access,
        slot: Slot,
    ) -> Result<i64, AppError> {
        match (row.asset.kind, slot) {
            (AssetKind::Dataset, Slot::Dataset) => Ok(0),
            (kind, Slot::Version(v)) => {
                let versions = self.store.versions(row.id).await?;
                if versions
                    .iter()
                    .any(|x| x.version == v && (access == Access::Owner || x.state == READY))
                {
                    Ok(i64::from(v))
                } else {
                    Err(AppError::not_found(format!(
                        "Version {v} of {} “{}”",
                        kind.as_str(),
                        row.asset.name
                    )))
                }
            }
            (AssetKind::Model, Slot::Dataset) => Err(AppError::invalid(
                "version",
                "Say which version of the model.",
            )),
        }
    }

    /// `files` for a dataset's working files (version 0), `v<N>` for a
    /// version of either kind.
    fn prefix(row: &AssetRow, version: i64) -> Path {
        let slot = if version == 0 {
            "files".to_owned()
        } else {
            format!("v{version}")
        };
        Path::from_iter([
            row.asset.kind.plural(),
            row.asset.owner.as_str(),
            row.asset.name.as_str(),
            slot.as_str(),
        ])
    }

    fn key(row: &AssetRow, version: i64, path: &str) -> Path {
        let prefix = Self::prefix(row, version);
        Path::from_iter(prefix.parts().chain(path.split('/').map(Into::into)))
    }

    fn with_access(mut row: AssetRow, access: Access) -> Asset {
        row.asset.access = access;
        row.asset
    }
}

#[async_trait]
impl Assets for SqlAssets {
    async fn list(&self, me: &Me, kind: AssetKind) -> Result<Vec<Asset>, AppError> {
        Ok(self
            .store
            .readable(me.account.id, kind)
            .await?
            .into_iter()
            .map(|(row, access)| Self::with_access(row, access))
            .collect())
    }

    async fn create(&self, me: &Me, kind: AssetKind, form: AssetForm) -> Result<Asset, AppError> {
        let name = validate_asset_name(&form.name)?;
        let tags = parse_tags(&form.tags)?;
        let now = now_ms();
        let created = self
            .store
            .create(
                me.account.id,
                kind,
                &name,
                form.description.trim(),
                &tags,
                now,
            )
            .await?;
        if !created {
            return Err(AppError::conflict(
                "name",
                format!(
                    "Your account already has a {} called “{name}”.",
                    kind.as_str()
                ),
            ));
        }
        tracing::info!(account = %me.account.name, user = %me.email, kind = kind.as_str(), name, "asset created");
        let r = AssetRef {
            kind,
            owner: me.account.name.clone(),
            name,
        };
        self.get(&Viewer::User(me.clone()), &r).await
    }

    async fn update(&self, me: &Me, r: &AssetRef, form: AssetForm) -> Result<Asset, AppError> {
        let row = self.owned(me, r).await?;
        let tags = parse_tags(&form.tags)?;
        self.store
            .update(row.id, form.description.trim(), &tags, now_ms())
            .await?;
        self.get(&Viewer::User(me.clone()), r).await
    }

    async fn delete(&self, me: &Me, r: &AssetRef) -> Result<(), AppError> {
        let row = self.owned(me, r).await?;
        let mut versions: Vec<i64> = self
            .store
            .versions(row.id)
            .await?
            .iter()
            .map(|v| i64::from(v.version))
            .collect();
        if row.asset.kind == AssetKind::Dataset {
            versions.push(0);
        }
        for v in versions {
            let keys = self
                .store
                .files(row.id, v)
                .await?
                .iter()
                .map(|f| Self::key(&row, v, &f.path))
                .collect();
            self.objects.delete(keys).await?;
        }
        self.store.delete(row.id).await?;
        tracing::info!(account = %me.account.name, user = %me.email, asset = %r.href(), "asset deleted");
        Ok(())
    }

    async fn get(&self, viewer: &Viewer, r: &AssetRef) -> Result<Asset, AppError> {
        let (row, access) = self.readable(viewer, r).await?;
        Ok(Self::with_access(row, access))
    }

    async fn resolve_link(&self, token: &str) -> Result<AssetRef, AppError> {
        let gone = || AppError::not_found("Share link (it may have been revoked or have expired)");
        if !token.starts_with(LINK_PREFIX) {
            return Err(gone());
        }
        let id = self
            .store
            .link(&token_hash(token), now_ms())
            .await?
            .ok_or_else(gone)?;
        let row = self.store.by_id(id).await?.ok_or_else(gone)?;
        Ok(row.asset.reference())
    }

    async fn list_dir(
        &self,
        viewer: &Viewer,
        r: &AssetRef,
        slot: Slot,
        dir: &str,
    ) -> Result<Vec<FileEntry>, AppError> {
        let dir = validate_dir(dir)?;
        let (row, access) = self.readable(viewer, r).await?;
        let v = self.slot_version(&row, access, slot).await?;
        Ok(folder(&self.store.files(row.id, v).await?, &dir))
    }

    async fn all_files(
        &self,
        viewer: &Viewer,
        r: &AssetRef,
        slot: Slot,
    ) -> Result<Vec<FileEntry>, AppError> {
        let (row, access) = self.readable(viewer, r).await?;
        let v = self.slot_version(&row, access, slot).await?;
        self.store.files(row.id, v).await
    }

    async fn put_file(
        &self,
        me: &Me,
        r: &AssetRef,
        slot: Slot,
        path: &str,
        body: ByteStream,
    ) -> Result<FileEntry, AppError> {
        if path.ends_with('/') {
            return Err(AppError::invalid(
                "path",
                format!("“{path}” names a folder; give the file's name after the last /."),
            ));
        }
        let path = validate_path(path)?;
        let row = self.owned(me, r).await?;
        let v = self.slot_version(&row, Access::Owner, slot).await?;
        self.unfinished(&row, slot).await?;
        // A file and a folder cannot share a path.
        let files = self.store.files(row.id, v).await?;
        if files
            .iter()
            .any(|f| f.path.starts_with(&format!("{path}/")))
        {
            return Err(AppError::conflict("path", format!("“{path}” is a folder.")));
        }
        if let Some(parent) = path.rsplit_once('/').map(|(p, _)| p) {
            let mut at = String::new();
            for seg in parent.split('/') {
                at = if at.is_empty() {
                    seg.to_owned()
                } else {
                    format!("{at}/{seg}")
                };
                if files.iter().any(|f| f.path == at) {
                    return Err(AppError::conflict(
                        "path",
                        format!("“{at}” is a file, not a folder."),
                    ));
                }
            }
        }
        let size = self.objects.put(&Self::key(&row, v, &path), body).await?;
        let now = now_ms();
        self.store.index_file(row.id, v, &path, size, now).await?;
        Ok(FileEntry {
            path,
            dir: false,
            size,
            modified: now,
            files: 1,
        })
    }

    async fn open_file(
        &self,
        viewer: &Viewer,
        r: &AssetRef,
        slot: Slot,
        path: &str,
        range: Option<ByteRange>,
    ) -> Result<OpenFile, AppError> {
        let path = validate_path(path)?;
        let (row, access) = self.readable(viewer, r).await?;
        let v = self.slot_version(&row, access, slot).await?;
        let mut entry = self
            .store
            .file(row.id, v, &path)
            .await?
            .ok_or_else(|| AppError::not_found(format!("File “{path}”")))?;
        let (body, range, size) = self.objects.get(&Self::key(&row, v, &path), range).await?;
        // The bytes about to be sent: the index may lag a replacement being written.
        entry.size = size;
        Ok(OpenFile { entry, range, body })
    }

    async fn delete_path(
        &self,
        me: &Me,
        r: &AssetRef,
        slot: Slot,
        path: &str,
    ) -> Result<(), AppError> {
        let path = validate_path(path)?;
        let row = self.owned(me, r).await?;
        let v = self.slot_version(&row, Access::Owner, slot).await?;
        self.unfinished(&row, slot).await?;
        let below = format!("{path}/");
        let gone: Vec<String> = self
            .store
            .files(row.id, v)
            .await?
            .into_iter()
            .map(|f| f.path)
            .filter(|p| *p == path || p.starts_with(&below))
            .collect();
        if gone.is_empty() {
            return Err(AppError::not_found(format!("“{path}”")));
        }
        self.objects
            .delete(gone.iter().map(|p| Self::key(&row, v, p)).collect())
            .await?;
        self.store.unindex(row.id, v, &gone).await
    }

    async fn shares(&self, me: &Me, r: &AssetRef) -> Result<Vec<Share>, AppError> {
        let row = self.owned(me, r).await?;
        self.store.shares(row.id).await
    }

    async fn share_with(&self, me: &Me, r: &AssetRef, account: &str) -> Result<Share, AppError> {
        let row = self.owned(me, r).await?;
        let account = account.trim().to_ascii_lowercase();
        let target = self.store.account_id(&account).await?;
        let target = target.ok_or_else(|| {
            AppError::invalid("account", format!("There is no account “{account}”."))
        })?;
        if target == row.account_id {
            return Err(AppError::invalid("account", "That is your own account."));
        }
        if self.store.shared_with(row.id, target).await? {
            return Err(AppError::conflict(
                "account",
                format!("Already shared with “{account}”."),
            ));
        }
        let id = self
            .store
            .share(row.id, target, &me.email, now_ms())
            .await?;
        tracing::info!(asset = %r.href(), with = %account, user = %me.email, "asset shared");
        self.store
            .shares(row.id)
            .await?
            .into_iter()
            .find(|s| s.id == id)
            .ok_or(AppError::Internal)
    }

    async fn create_link(
        &self,
        me: &Me,
        r: &AssetRef,
        expires_in_days: Option<u32>,
    ) -> Result<NewLink, AppError> {
        let row = self.owned(me, r).await?;
        if expires_in_days.is_some_and(|d| d == 0 || d > 3650) {
            return Err(AppError::invalid(
                "expires_in_days",
                "A link lasts 1 to 3,650 days, or until revoked.",
            ));
        }
        let token = format!("{LINK_PREFIX}{}", random_token());
        let now = now_ms();
        let expires = expires_in_days.map(|d| now + i64::from(d) * 24 * 3600 * 1000);
        let id = self
            .store
            .add_link(
                row.id,
                &token_hash(&token),
                &token[..12],
                expires,
                &me.email,
                now,
            )
            .await?;
        tracing::info!(asset = %r.href(), user = %me.email, "share link created");
        let share = self
            .store
            .shares(row.id)
            .await?
            .into_iter()
            .find(|s| s.id == id)
            .ok_or(AppError::Internal)?;
        Ok(NewLink {
            share,
            path: format!("/shared/{token}"),
        })
    }

    async fn revoke(&self, me: &Me, r: &AssetRef, share: i64) -> Result<(), AppError> {
        let row = self.owned(me, r).await?;
        if !self.store.revoke(row.id, share).await? {
            return Err(AppError::not_found("Share"));
        }
        tracing::info!(asset = %r.href(), share, user = %me.email, "share revoked");
        Ok(())
    }

    async fn set_public(&self, me: &Me, r: &AssetRef, public: bool) -> Result<Asset, AppError> {
        let row = self.owned(me, r).await?;
        self.store.set_public(row.id, public).await?;
        tracing::info!(asset = %r.href(), public, user = %me.email, "asset visibility changed");
        self.get(&Viewer::User(me.clone()), r).await
    }

    async fn versions(&self, viewer: &Viewer, r: &AssetRef) -> Result<Vec<ModelVersion>, AppError> {
        self.list_versions(viewer, r).await
    }

    async fn aliases(
        &self,
        viewer: &Viewer,
        model: &AssetRef,
    ) -> Result<Vec<ModelAlias>, AppError> {
        self.list_aliases(viewer, model).await
    }

    async fn set_alias(
        &self,
        me: &Me,
        model: &AssetRef,
        alias: &str,
        form: AliasForm,
    ) -> Result<ModelAlias, AppError> {
        self.put_alias(me, model, alias, form).await
    }

    async fn delete_alias(&self, me: &Me, model: &AssetRef, alias: &str) -> Result<(), AppError> {
        self.remove_alias(me, model, alias).await
    }

    async fn alias_history(
        &self,
        viewer: &Viewer,
        model: &AssetRef,
    ) -> Result<Vec<AliasChange>, AppError> {
        self.alias_changes(viewer, model).await
    }

    async fn registered_by(
        &self,
        account: &Account,
        job: &str,
    ) -> Result<Vec<RegisteredVersion>, AppError> {
        self.store.registered_by(account.id, job).await
    }

    async fn create_version(
        &self,
        me: &Me,
        r: &AssetRef,
        form: VersionForm,
    ) -> Result<ModelVersion, AppError> {
        self.new_version(me, r, form).await
    }

    async fn finish_version(
        &self,
        me: &Me,
        r: &AssetRef,
        version: u32,
    ) -> Result<ModelVersion, AppError> {
        self.complete_version(me, r, version).await
    }

    async fn discard_version(&self, me: &Me, r: &AssetRef, version: u32) -> Result<(), AppError> {
        let row = self.owned(me, r).await?;
        if !self
            .store
            .discard_empty_version(row.id, i64::from(version))
            .await?
        {
            return Err(AppError::Conflict {
                field: None,
                message: format!("Version {version} has files or is complete: it stays."),
            });
        }
        Ok(())
    }

    async fn tag_version(
        &self,
        me: &Me,
        r: &AssetRef,
        version: u32,
        tags: &str,
    ) -> Result<ModelVersion, AppError> {
        self.retag_version(me, r, version, tags).await
    }

    async fn local_dir(&self, me: &Me, r: &AssetRef, slot: Slot) -> Result<PathBuf, AppError> {
        let (row, access) = self.readable(&Viewer::User(me.clone()), r).await?;
        if (row.asset.kind, slot) == (AssetKind::Model, Slot::Dataset) {
            return Err(AppError::invalid(
                "model",
                format!("Say which version of “{}”.", r.name),
            ));
        }
        // A version must exist (and be complete, but to its owner).
        let version = self.slot_version(&row, access, slot).await?;
        self.local_view(&row, version).await
    }
}
