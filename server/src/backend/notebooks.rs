//! What a notebook backend does: run one JupyterLab server per notebook
//! (a local `jupyter lab` process, or a Kubernetes StatefulSet), keep its
//! workspace across stops, say where its server answers, and report its
//! state. [`crate::notebooks::NotebookService`] keeps the records, the keys
//! and the idle clock over any [`NotebookBackend`].

use app::error::AppError;
use app::models::{Account, NotebookSpec, NotebookStatus};
use async_trait::async_trait;

use super::lab_client::LabClient;
use super::reporter::StateRecord;
use crate::storage::notebooks::NotebookStore;

/// How long JupyterLab may take to answer, once its process runs, before
/// the start counts as failed.
pub const START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(180);

/// A running notebook's message once it has been started again after its
/// server died (`what` says how and when): what survives and what not.
pub fn restarted_note(what: &str) -> String {
    format!(
        "Started again after {what}: the workspace and its files are as they were; \
         the kernels started afresh, so what they held in memory (variables, imports) is gone."
    )
}

/// What the console builds for local notebooks when no `--notebook-python`
/// is given: the JupyterLab the tests run (`scripts/python-requirements.txt`
/// pins the same; it brings `ipykernel`, so a notebook that names no
/// environment has a kernel).
pub const JUPYTERLAB: &str = "jupyterlab==4.6.6";

/// The arguments after the Python of every notebook server: JupyterLab
/// under `base_url` (the path the console proxies), serving `root_dir`,
/// on `ip` and `port`, with no calls to the Internet of its own.
pub fn jupyter_args(base_url: &str, root_dir: &str, ip: &str, port: u16) -> Vec<String> {
    vec![
        "-m".to_owned(),
        "jupyterlab".to_owned(),
        "--no-browser".to_owned(),
        // Jupyter refuses root unless told; the console decides who runs it.
        "--allow-root".to_owned(),
        format!("--ip={ip}"),
        format!("--port={port}"),
        "--ServerApp.port_retries=0".to_owned(),
        format!("--ServerApp.base_url={base_url}"),
        format!("--ServerApp.root_dir={root_dir}"),
        // Only the console's proxy gets in, and no page carries a token.
        "--ServerApp.identity_provider_class=paddlecloud.lab.ConsoleIdentityProvider".to_owned(),
        "--LabApp.news_url=None".to_owned(),
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate".to_owned(),
    ]
}

/// Whether a notebook server answers its status API with `token`: the
/// sign that it is ready for the proxy.
pub async fn answers(probe: &LabClient, url: &str, token: &str) -> bool {
    // A starting server answers at once or not yet: the next try is a second away.
    super::lab_client::get(probe, url, token, std::time::Duration::from_secs(2))
        .await
        .is_ok_and(|(status, _)| (200..300).contains(&status))
}

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
    /// server's identity provider (`paddlecloud/lab.py`) reads it from a
    /// pipe (local) or the pod's Secret, never from argv or a page.
    pub jupyter_token: String,
    /// The path the server runs under (`/notebooks/<account>/<name>/`).
    pub base_url: String,
    /// What its kernels get: the console's URL, the notebook's key,
    /// dataset folders.
    pub env: Vec<(String, String)>,
    /// The datasets its server fetches, where servers do not see this
    /// machine's folders ([`NotebookBackend::sees_local_files`]).
    pub inputs: Vec<app::models::Input>,
    /// The account's secrets it uses, with their values: variables for its
    /// kernels, files in a folder only they read.
    pub secrets: crate::secrets::Revealed,
}

/// What a notebook backend reports of a notebook's server.
#[derive(Debug, Clone)]
pub struct NotebookState {
    /// Its status.
    pub status: NotebookStatus,
    /// Why, in words (empty when all is well).
    pub message: String,
}

impl NotebookState {
    /// `status`, and why.
    pub fn new(status: NotebookStatus, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

#[async_trait]
impl StateRecord for NotebookStore {
    type State = NotebookState;
    const KIND: &'static str = "notebook";

    async fn set_state(&self, id: i64, state: &NotebookState) -> Result<(), AppError> {
        NotebookStore::set_state(self, id, state.status, &state.message).await
    }
}

/// Records what a notebook's server does and tells live views.
pub type NotebookReporter = super::reporter::Reporter<NotebookStore>;

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
    /// The base URL its server answers on (`http://host:port`), while it
    /// runs, as [`NotebookBackend::client`] reaches it.
    async fn upstream(&self, account: &Account, id: i64, name: &str) -> Option<String>;
    /// The client that reaches its servers (the proxy's, the idle clock's).
    fn client(&self) -> LabClient;
    /// After a console restart: takes over the server of a notebook that
    /// was running, if it still runs (a pod does; a local process went with
    /// the console). `false`: the service starts it again.
    async fn adopt(
        &self,
        _run: NotebookRun,
        _reporter: NotebookReporter,
    ) -> Result<bool, AppError> {
        Ok(false)
    }
    /// Whether servers read this machine's files (dataset folders are
    /// passed to them as `PADDLE_DATASET_DIR_<NAME>` only then).
    fn sees_local_files(&self) -> bool {
        true
    }
    /// The console stops: servers that cannot outlive it end (locally,
    /// SIGTERM and the grace period), their records kept as they are, so
    /// that the next start brings them back. Pods outlive the console.
    async fn shut_down(&self) {}
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
        "download.py",
        include_str!("../../../sdk/python/paddlecloud/download.py"),
    ),
    (
        "errors.py",
        include_str!("../../../sdk/python/paddlecloud/errors.py"),
    ),
    (
        "fetch_inputs.py",
        include_str!("../../../sdk/python/paddlecloud/fetch_inputs.py"),
    ),
    (
        "files.py",
        include_str!("../../../sdk/python/paddlecloud/files.py"),
    ),
    (
        "lab.py",
        include_str!("../../../sdk/python/paddlecloud/lab.py"),
    ),
    (
        "notebook_run.py",
        include_str!("../../../sdk/python/paddlecloud/notebook_run.py"),
    ),
    (
        "runs.py",
        include_str!("../../../sdk/python/paddlecloud/runs.py"),
    ),
    (
        "score.py",
        include_str!("../../../sdk/python/paddlecloud/score.py"),
    ),
    (
        "serving.py",
        include_str!("../../../sdk/python/paddlecloud/serving.py"),
    ),
    (
        "ship.py",
        include_str!("../../../sdk/python/paddlecloud/ship.py"),
    ),
];

#[cfg(test)]
mod sdk_tests {
    /// A module added to the SDK but not here would break `import
    /// paddlecloud` in every notebook and environment.
    #[test]
    fn every_module_of_the_sdk_is_shipped() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk/python/paddlecloud");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".py"))
            .collect();
        on_disk.sort();
        let shipped: Vec<&str> = super::SDK_FILES.iter().map(|(name, _)| *name).collect();
        assert_eq!(on_disk, shipped);
    }

    /// The JupyterLab a console builds is the one the tests pass with.
    #[test]
    fn the_built_jupyterlab_is_the_one_the_tests_install() {
        let pins = include_str!("../../../scripts/python-requirements.txt");
        assert!(
            pins.lines().any(|l| l.trim() == super::JUPYTERLAB),
            "scripts/python-requirements.txt does not pin {}",
            super::JUPYTERLAB
        );
    }
}
