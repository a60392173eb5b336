//! What a serving backend does: run the replicas of an instance (the local
//! executor's processes, or a Kubernetes Deployment), say where a request
//! goes, and report their state. [`crate::serving::ServingService`] keeps
//! the records and the traffic over any [`ServingBackend`].

use std::path::PathBuf;

use app::error::AppError;
use app::models::{Account, ServingSpec, ServingStatus, Track};
use async_trait::async_trait;

use super::reporter::{self, StateRecord};
use crate::storage::serving::ServingStore;

/// The default predict server, written next to local instances and mounted
/// into Kubernetes pods; run with a Python that has `paddlepaddle`.
pub const PREDICT_SERVER: &str = include_str!("../../../sdk/python/paddlecloud/serving.py");

/// The model an instance serves, resolved at launch.
#[derive(Debug, Clone)]
pub struct ModelFiles {
    /// `owner/name`.
    pub model: String,
    /// The version.
    pub version: u32,
    /// On this machine: the version's folder, or the `.tar.gz` in it to
    /// serve (`None` where the backend fetches the model itself).
    pub local: Option<PathBuf>,
}

/// What a backend needs to run an instance.
#[derive(Debug, Clone)]
pub struct ServingRun {
    /// Database id.
    pub id: i64,
    /// The owning account.
    pub account: Account,
    /// The spec, with its current size.
    pub spec: ServingSpec,
    /// What it serves.
    pub model: ModelFiles,
    /// The instance's own token, to fetch its model with, for a backend that
    /// fetches models itself (issued at each start; `None` otherwise).
    pub token: Option<String>,
    /// Its canary and shadow, when it has them (the spec says their share).
    pub side: Vec<SideTrack>,
    /// The account's secrets its replicas use, with their values (empty
    /// for a change of size, which starts no replica of a new kind).
    pub secrets: crate::secrets::Revealed,
}

/// A canary's or a shadow's replicas, as a backend runs them.
#[derive(Debug, Clone)]
pub struct SideTrack {
    /// [`Track::Canary`] or [`Track::Shadow`].
    pub track: Track,
    /// What it serves.
    pub model: ModelFiles,
    /// How many.
    pub replicas: u32,
}

impl ServingRun {
    /// Its side track `track`, if it has one.
    pub fn side(&self, track: Track) -> Option<&SideTrack> {
        self.side.iter().find(|s| s.track == track)
    }
}

/// Where a request for an instance goes now.
pub enum Upstream {
    /// A replica's base URL (`http://127.0.0.1:PORT`).
    Http(String),
    /// A Service in the cluster, reached through the API server's proxy.
    Kube {
        /// A client of the cluster.
        client: kube::Client,
        /// The account's namespace.
        namespace: String,
        /// The Service's name.
        service: String,
    },
}

/// What a serving backend reports of an instance.
#[derive(Debug, Clone)]
pub struct ServingState {
    /// Its status.
    pub status: ServingStatus,
    /// Replicas that answer.
    pub ready: u32,
    /// Why, in words (empty when all is well).
    pub message: String,
}

impl ServingState {
    /// `status` with `ready` replicas answering, and why.
    pub fn new(status: ServingStatus, ready: u32, message: impl Into<String>) -> Self {
        Self {
            status,
            ready,
            message: message.into(),
        }
    }
}

#[async_trait]
impl StateRecord for ServingStore {
    type State = ServingState;
    const KIND: &'static str = "serving";

    async fn set_state(&self, id: i64, state: &ServingState) -> Result<(), AppError> {
        ServingStore::set_state(self, id, state.status, state.ready, &state.message).await
    }
}

/// Records what an instance's replicas do and tells live views.
pub type Reporter = reporter::Reporter<ServingStore>;

impl Reporter {
    /// Records the number of replicas an instance runs now (an autoscaler
    /// changed it), keeping the rest of its spec.
    pub async fn replicas(&self, id: i64, name: &str, replicas: u32) {
        if let Err(err) = self.store().set_replicas(id, replicas).await {
            tracing::warn!(serving = %name, error = %err, "recording a serving size");
        }
    }

    /// Records that every main replica of instance `id` now serves
    /// `version` (a roll is done).
    pub async fn rolled(&self, account_id: i64, id: i64, name: &str, version: u32) {
        match self.store().set_version(id, version).await {
            Ok(()) => tracing::info!(serving = %name, version, "serving rolled"),
            Err(err) => tracing::warn!(serving = %name, error = %err, "recording a rolled version"),
        }
        self.announce(account_id, name);
    }
}

/// Runs replicas: the local executor or Kubernetes.
#[async_trait]
pub trait ServingBackend: Send + Sync {
    /// Where instances launched here run, as the table shows it.
    fn name(&self) -> String;
    /// Starts the replicas of a recorded instance; states go to `reporter`.
    async fn start(&self, run: ServingRun, reporter: Reporter) -> Result<(), AppError>;
    /// Applies a changed size to a running instance.
    async fn resize(&self, run: ServingRun) -> Result<(), AppError>;
    /// Brings a running instance to `run`: its main replicas roll to
    /// `run.model`'s version one by one (a new one answering before an old
    /// one stops; [`Reporter::rolled`] once all serve it), and its canary
    /// and shadow start, change version or size, or stop as `run.side` says.
    async fn release(&self, run: ServingRun, reporter: Reporter) -> Result<(), AppError>;
    /// Ends every replica; returns once they are gone.
    async fn stop(&self, account: &Account, id: i64, name: &str) -> Result<(), AppError>;
    /// Where to send the next request for `track`, if a replica of it is
    /// ready.
    async fn upstream(
        &self,
        account: &Account,
        id: i64,
        name: &str,
        track: Track,
    ) -> Option<Upstream>;
    /// Whether an instance of `spec` can ever run here: a replica larger
    /// than the machine is refused before anything is recorded.
    fn admits(&self, _spec: &ServingSpec) -> Result<(), AppError> {
        Ok(())
    }
    /// Whether the backend fetches models itself (no local copy needed).
    fn remote_models(&self) -> bool {
        false
    }
    /// The token a running instance's replicas already hold, where the
    /// backend keeps one (see [`crate::serving::ServingService::recover`]).
    async fn current_token(&self, _account: &Account, _name: &str) -> Option<String> {
        None
    }
    /// The console stops: replicas that cannot outlive it end (locally,
    /// SIGTERM and the grace period), their records kept as they are, so
    /// that the next start brings them back. Pods outlive the console.
    async fn shut_down(&self) {}
}

/// An HTTP client for replicas (plain HTTP on loopback, or through the
/// proxy). reqwest wants a TLS crypto provider even then: the process-wide
/// one (ring, as `serve` installs) is installed if none is yet.
pub fn http_client(timeout: std::time::Duration) -> Result<reqwest::Client, AppError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|err| {
            tracing::error!(error = %err, "building an HTTP client");
            AppError::Internal
        })
}
