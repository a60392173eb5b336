//! Notebooks: a private JupyterLab per user. Implemented in
//! `server/src/notebooks/` over the local executor (a `jupyter lab`
//! process) and Kubernetes; reached through the console's proxy.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{
    Account, Me, NewNotebookShare, Notebook, NotebookDiff, NotebookHistory, NotebookList,
    NotebookShare, NotebookShareSpec, NotebookSpec, NotebookVersion, SharedNotebookFile,
};

/// How a recipient names a shared notebook file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedVia {
    /// A share with their account (or its members), by id: they must be
    /// among those it is shared with.
    Share(i64),
    /// A link's token: whoever holds it.
    Link(String),
}

/// Something about a notebook changed: live views refresh.
pub type NotebookEvent = super::WorkloadEvent;

/// An account's notebooks. Another account's are "not found"; only a
/// notebook's owner starts or opens it, and its owner or an owner of the
/// account stops or deletes it.
#[async_trait]
pub trait Notebooks: Send + Sync {
    /// Records the notebook and starts its server; it is Pending until
    /// JupyterLab answers. The quota check is the caller's
    /// (`app::use_cases::start_notebook_within_quota`).
    async fn create(&self, by: &Me, spec: NotebookSpec) -> Result<Notebook, AppError>;
    /// The account's notebooks, newest first.
    async fn list(&self, account: &Account) -> Result<NotebookList, AppError>;
    /// One notebook.
    async fn get(&self, account: &Account, name: &str) -> Result<Notebook, AppError>;
    /// Starts a stopped or failed notebook again (its workspace kept, its
    /// idle clock cleared).
    async fn start(&self, by: &Me, name: &str) -> Result<Notebook, AppError>;
    /// Stops its server (the workspace stays); its key stops working.
    async fn stop(&self, by: &Me, name: &str) -> Result<Notebook, AppError>;
    /// Stops it if needed and removes it with its workspace.
    async fn delete(&self, by: &Me, name: &str) -> Result<(), AppError>;
    /// Resets the idle clock: culling counts from now.
    async fn keep_running(&self, by: &Me, name: &str) -> Result<Notebook, AppError>;
    /// The notebook's files that have versions, and the versions of `path`
    /// (of the file changed last when `None`), newest first. Versions are
    /// the notebook owner's alone: anyone else gets "not found".
    async fn history(
        &self,
        by: &Me,
        name: &str,
        path: Option<&str>,
    ) -> Result<NotebookHistory, AppError>;
    /// Version `id` and its file (the notebook's JSON).
    async fn version(
        &self,
        by: &Me,
        name: &str,
        id: i64,
    ) -> Result<(NotebookVersion, Vec<u8>), AppError>;
    /// Version `id` as a standalone HTML page (nbconvert's, without
    /// scripts; served so that nothing in it runs).
    async fn version_html(&self, by: &Me, name: &str, id: i64) -> Result<Vec<u8>, AppError>;
    /// Versions `from` and `to` compared cell by cell.
    async fn diff(&self, by: &Me, name: &str, from: i64, to: i64)
        -> Result<NotebookDiff, AppError>;
    /// Writes version `id` back into the running notebook's workspace (a
    /// stopped one is a conflict); the file as it was is kept as a version
    /// first. Returns the restore's own version.
    async fn restore(&self, by: &Me, name: &str, id: i64) -> Result<NotebookVersion, AppError>;
    /// Shares a file of `by`'s notebook `name` read-only (the file needs a
    /// version); a link's path is in the answer this once.
    async fn share_file(
        &self,
        by: &Me,
        name: &str,
        spec: &NotebookShareSpec,
    ) -> Result<NewNotebookShare, AppError>;
    /// The shares of `by`'s notebook `name`, newest first.
    async fn file_shares(&self, by: &Me, name: &str) -> Result<Vec<NotebookShare>, AppError>;
    /// Ends share `id` of `by`'s notebook `name` (a link stops working).
    async fn revoke_share(&self, by: &Me, name: &str, id: i64) -> Result<(), AppError>;
    /// The files others shared with `by`'s account or its members.
    async fn shared_with_me(&self, by: &Me) -> Result<Vec<SharedNotebookFile>, AppError>;
    /// A shared file (its newest version) and its bytes, to `by` (`None`:
    /// signed out, which only a link lets in).
    async fn shared(
        &self,
        by: Option<&Me>,
        via: &SharedVia,
    ) -> Result<(SharedNotebookFile, Vec<u8>), AppError>;
    /// A shared file's newest version as a page, as [`Self::version_html`].
    async fn shared_html(&self, by: Option<&Me>, via: &SharedVia) -> Result<Vec<u8>, AppError>;
    /// Copies a shared file into `by`'s running notebook `into`; the copy's
    /// version there.
    async fn copy_shared(
        &self,
        by: &Me,
        via: &SharedVia,
        into: &str,
    ) -> Result<NotebookVersion, AppError>;
    /// Changes to any notebook, for live views.
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<NotebookEvent>;
}
