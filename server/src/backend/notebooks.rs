//! What a notebook backend does: run one JupyterLab server per notebook
//! (a local `jupyter lab` process, or a Kubernetes StatefulSet), keep its
//! workspace across stops, say where its server answers, and report its
//! state. [`crate::notebooks::NotebookService`] keeps the records, the keys
//! and the idle clock over any [`NotebookBackend`].

use app::error::AppError;
use app::models::{Account, NotebookSpec, NotebookStatus};
use app::ports::NotebookEvent;
use async_trait::async_trait;
use tokio::sync::broadcast;

use crate::storage::notebooks::NotebookStore;

/// What a backend needs to start a notebook's server.
#[derive(Debug, Clone)]
pub struct NotebookRun {
    /// Database id.
    pub id: i64,
    /// The owning account.
    pub account: Account,
    /// The spec.
    pub spec: NotebookSpec,
    /// What the console's proxy will send (`Authorization: token …`); the
    /// server takes it from its environment (`JUPYTER_TOKEN`), not argv.
    pub jupyter_token: String,
    /// The path the server runs under (`/notebooks/<account>/<name>/`).
    pub base_url: String,
    /// What its kernels get: the console's URL, the notebook's key,
    /// dataset folders.
    pub env: Vec<(String, String)>,
}

/// Records what a notebook's server does and tells live views.
#[derive(Clone)]
pub struct NotebookReporter {
    store: NotebookStore,
    events: broadcast::Sender<NotebookEvent>,
}

impl NotebookReporter {
    /// Writes to `store` and announces on `events`.
    pub fn new(store: NotebookStore, events: broadcast::Sender<NotebookEvent>) -> Self {
        Self { store, events }
    }

    /// Saves the state of notebook `id` of account `account_id` and
    /// announces it.
    pub async fn report(
        &self,
        account_id: i64,
        id: i64,
        name: &str,
        status: NotebookStatus,
        message: &str,
    ) {
        if let Err(err) = self.store.set_state(id, status, message).await {
            tracing::warn!(notebook = %name, error = %err, "recording a notebook's state");
        }
        self.announce(account_id, name);
    }

    /// Tells live views that notebook `name` changed.
    pub fn announce(&self, account_id: i64, name: &str) {
        let _ = self.events.send(NotebookEvent {
            account_id,
            name: name.to_owned(),
        });
    }
}

/// Runs notebook servers: the local executor or Kubernetes.
#[async_trait]
pub trait NotebookBackend: Send + Sync {
    /// Where notebooks created here run, as the table shows it.
    fn name(&self) -> String;
    /// Whether a notebook of `spec` can ever run here: a server larger
    /// than the machine is refused before anything is recorded.
    fn admits(&self, _spec: &NotebookSpec) -> Result<(), AppError> {
        Ok(())
    }
    /// Starts the server of a recorded notebook; states go to `reporter`
    /// (Running once JupyterLab answers, Failed with its log's last lines
    /// if it cannot start).
    async fn start(&self, run: NotebookRun, reporter: NotebookReporter) -> Result<(), AppError>;
    /// Ends its server, keeping the workspace; returns once it is gone.
    async fn stop(&self, account: &Account, id: i64, name: &str) -> Result<(), AppError>;
    /// Removes its workspace (after [`NotebookBackend::stop`]).
    async fn remove(&self, account: &Account, id: i64, name: &str) -> Result<(), AppError>;
    /// The base URL its server answers on (`http://host:port`), while it runs.
    async fn upstream(&self, account: &Account, id: i64, name: &str) -> Option<String>;
}

/// The Python SDK, as its kernels import it (`import paddlecloud`): each
/// backend puts these files on the notebook's `PYTHONPATH`.
pub const SDK_FILES: &[(&str, &str)] = &[
    (
        "__init__.py",
        include_str!("../../../sdk/python/paddlecloud/__init__.py"),
    ),
    (
        "board.py",
        include_str!("../../../sdk/python/paddlecloud/board.py"),
    ),
    (
        "client.py",
        include_str!("../../../sdk/python/paddlecloud/client.py"),
    ),
    (
        "errors.py",
        include_str!("../../../sdk/python/paddlecloud/errors.py"),
    ),
    (
        "fetch_model.py",
        include_str!("../../../sdk/python/paddlecloud/fetch_model.py"),
    ),
    (
        "files.py",
        include_str!("../../../sdk/python/paddlecloud/files.py"),
    ),
    (
        "serving.py",
        include_str!("../../../sdk/python/paddlecloud/serving.py"),
    ),
];
