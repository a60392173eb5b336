//! Datasets and models: metadata, files in an object store, sharing.
//!
//! Every call says who asks (`Viewer`): a user of an account, or the holder
//! of a share link. An asset the viewer may not read is "not found", never
//! "forbidden", so its existence does not leak.

use std::path::PathBuf;
use std::pin::Pin;

use async_trait::async_trait;
use bytes::Bytes;
use futures_core::Stream;

use crate::error::AppError;
use crate::models::{
    Account, AliasChange, AliasForm, Asset, AssetForm, AssetKind, AssetRef, FileEntry, Me,
    ModelAlias, ModelVersion, NewLink, RegisteredVersion, Share, VersionForm,
};

/// Bytes in or out, chunk by chunk: files are never held whole in memory.
pub type ByteStream = Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send>>;

/// Who reads.
#[derive(Debug, Clone)]
pub enum Viewer {
    /// A signed-in user (or a key or job token acting as one).
    User(Me),
    /// Whoever holds a share link's token (signed in or not).
    Link(String),
}

/// Where in an asset: a dataset's working files, or one version (of a
/// model, or a dataset's saved one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// A dataset's working files: what its owner uploads and changes.
    Dataset,
    /// A version's files: a model's, or a dataset's saved version.
    Version(u32),
}

impl Slot {
    /// The one rule for what a request's `version` addresses, on every way
    /// in (pages, REST, the upload form): without one, a dataset's working
    /// files; a model's files are always those of one version.
    pub fn of(kind: AssetKind, version: Option<u32>) -> Result<Self, AppError> {
        match (kind, version) {
            (AssetKind::Dataset, None) => Ok(Self::Dataset),
            (_, Some(v)) => Ok(Self::Version(v)),
            (AssetKind::Model, None) => Err(AppError::invalid(
                "version",
                "Say which version of the model: ?version=N.",
            )),
        }
    }
}

/// Part of a file to read: `bytes=start-end` (inclusive end), or from `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// First byte.
    pub start: u64,
    /// Last byte (inclusive), or to the end.
    pub end: Option<u64>,
}

/// A file being read.
pub struct OpenFile {
    /// What it is.
    pub entry: FileEntry,
    /// The part being read (`None`: all of it).
    pub range: Option<(u64, u64)>,
    /// Its bytes.
    pub body: ByteStream,
}

/// Datasets and models.
#[async_trait]
pub trait Assets: Send + Sync {
    /// Those the user can read: their account's, shared with it, and public.
    async fn list(&self, me: &Me, kind: AssetKind) -> Result<Vec<Asset>, AppError>;
    /// Creates one in the user's account.
    async fn create(&self, me: &Me, kind: AssetKind, form: AssetForm) -> Result<Asset, AppError>;
    /// Changes its description and tags (owner).
    async fn update(&self, me: &Me, asset: &AssetRef, form: AssetForm) -> Result<Asset, AppError>;
    /// Deletes it with its files and shares (owner).
    async fn delete(&self, me: &Me, asset: &AssetRef) -> Result<(), AppError>;
    /// One asset, with how the viewer reaches it.
    async fn get(&self, viewer: &Viewer, asset: &AssetRef) -> Result<Asset, AppError>;
    /// The asset a share link opens.
    async fn resolve_link(&self, token: &str) -> Result<AssetRef, AppError>;

    /// One folder: its files and subfolders (with sizes), sorted folders first.
    async fn list_dir(
        &self,
        viewer: &Viewer,
        asset: &AssetRef,
        slot: Slot,
        dir: &str,
    ) -> Result<Vec<FileEntry>, AppError>;
    /// Every file, by path.
    async fn all_files(
        &self,
        viewer: &Viewer,
        asset: &AssetRef,
        slot: Slot,
    ) -> Result<Vec<FileEntry>, AppError>;
    /// Writes a file from a stream (owner). It appears whole or not at all:
    /// an interrupted upload leaves nothing, and a retry replaces the file.
    async fn put_file(
        &self,
        me: &Me,
        asset: &AssetRef,
        slot: Slot,
        path: &str,
        body: ByteStream,
    ) -> Result<FileEntry, AppError>;
    /// Reads a file, or part of it.
    async fn open_file(
        &self,
        viewer: &Viewer,
        asset: &AssetRef,
        slot: Slot,
        path: &str,
        range: Option<ByteRange>,
    ) -> Result<OpenFile, AppError>;
    /// Deletes a file, or a folder with everything in it (owner).
    async fn delete_path(
        &self,
        me: &Me,
        asset: &AssetRef,
        slot: Slot,
        path: &str,
    ) -> Result<(), AppError>;

    /// Its shares (owner).
    async fn shares(&self, me: &Me, asset: &AssetRef) -> Result<Vec<Share>, AppError>;
    /// Shares it read-only with another account (owner).
    async fn share_with(&self, me: &Me, asset: &AssetRef, account: &str)
        -> Result<Share, AppError>;
    /// Makes a share link, optionally expiring (owner).
    async fn create_link(
        &self,
        me: &Me,
        asset: &AssetRef,
        expires_in_days: Option<u32>,
    ) -> Result<NewLink, AppError>;
    /// Revokes a share (owner).
    async fn revoke(&self, me: &Me, asset: &AssetRef, share: i64) -> Result<(), AppError>;
    /// Publishes it to every account, or stops (owner).
    async fn set_public(&self, me: &Me, asset: &AssetRef, public: bool) -> Result<Asset, AppError>;

    /// A model's or dataset's versions, newest first.
    async fn versions(
        &self,
        viewer: &Viewer,
        model: &AssetRef,
    ) -> Result<Vec<ModelVersion>, AppError>;
    /// A model's aliases, by name (whoever may read the model).
    async fn aliases(&self, viewer: &Viewer, model: &AssetRef)
        -> Result<Vec<ModelAlias>, AppError>;
    /// Points `alias` of the model at `form.version` (one of its ready
    /// versions), creating it; keeps the change in its history. The
    /// model's account writes; a protected alias (or protecting one) is
    /// its owners'. A move that raced another is a conflict.
    async fn set_alias(
        &self,
        me: &Me,
        model: &AssetRef,
        alias: &str,
        form: AliasForm,
    ) -> Result<ModelAlias, AppError>;
    /// Deletes `alias` of the model (kept in its history); a protected one
    /// only by the account's owners.
    async fn delete_alias(&self, me: &Me, model: &AssetRef, alias: &str) -> Result<(), AppError>;
    /// Every set, move and delete of the model's aliases, newest first.
    async fn alias_history(
        &self,
        viewer: &Viewer,
        model: &AssetRef,
    ) -> Result<Vec<AliasChange>, AppError>;
    /// The versions of `account`'s models that its job `job` registered,
    /// newest first (a job that registered none: empty).
    async fn registered_by(
        &self,
        account: &Account,
        job: &str,
    ) -> Result<Vec<RegisteredVersion>, AppError>;
    /// Starts a new version (state `uploading`; its files go in with
    /// `put_file`), or, for a dataset unless `form.empty`, saves its working
    /// files as they are as a new version, complete at once.
    async fn create_version(
        &self,
        me: &Me,
        model: &AssetRef,
        form: VersionForm,
    ) -> Result<ModelVersion, AppError>;
    /// Marks a version's upload complete (state `ready`).
    async fn finish_version(
        &self,
        me: &Me,
        model: &AssetRef,
        version: u32,
    ) -> Result<ModelVersion, AppError>;
    /// Removes a version that is still uploading and has no files (one
    /// started for a batch scoring that was then refused); any other is a
    /// conflict. The asset's account writes.
    async fn discard_version(
        &self,
        me: &Me,
        model: &AssetRef,
        version: u32,
    ) -> Result<(), AppError>;
    /// Replaces a version's tags (`production`, `candidate`, …).
    async fn tag_version(
        &self,
        me: &Me,
        model: &AssetRef,
        version: u32,
        tags: &str,
    ) -> Result<ModelVersion, AppError>;

    /// A folder on this machine holding a dataset's files (or a model
    /// version's), for a local job to read (`PADDLE_DATASET_DIR`) or a model
    /// to serve: the store's own folder when files are local, else a copy
    /// fetched into a cache.
    async fn local_dir(&self, me: &Me, asset: &AssetRef, slot: Slot) -> Result<PathBuf, AppError>;
}
