//! The server-side ports: what server functions need from the outside world,
//! as traits. `server/` implements them (SQL store, cluster backends) and puts
//! one [`Services`] into every request's context.

mod access_keys;
mod accounts;
mod alerts;
mod assets;
mod cluster;
mod directory;
mod environments;
mod experiments;
mod local_runs;
mod mail;
mod members;
mod metrics;
mod notebook_runs;
mod notebooks;
mod notifications;
mod pipelines;
mod resources;
mod run_params;
mod schedules;
mod secrets;
mod serving;
mod templates;
mod watchdog;
mod workload;

use std::sync::Arc;

pub use access_keys::*;
pub use accounts::*;
pub use alerts::*;
pub use assets::*;
pub use cluster::*;
pub use directory::*;
pub use environments::*;
pub use experiments::*;
pub use local_runs::*;
pub use mail::*;
pub use members::*;
pub use metrics::*;
pub use notebook_runs::*;
pub use notebooks::*;
pub use notifications::*;
pub use pipelines::*;
pub use resources::*;
pub use run_params::*;
pub use schedules::*;
pub use secrets::*;
pub use serving::*;
pub use templates::*;
pub use watchdog::*;
pub use workload::*;

/// Everything a server function can reach, provided as context on every request.
#[derive(Clone)]
pub struct Services {
    /// Accounts, users and sessions.
    pub accounts: Arc<dyn Accounts>,
    /// Members, roles and invitations.
    pub members: Arc<dyn Members>,
    /// Access keys for the REST API.
    pub access_keys: Arc<dyn AccessKeys>,
    /// Where jobs run: the local executor or Kubernetes.
    pub cluster: Arc<dyn Cluster>,
    /// PaddleBoard's training metrics.
    pub metrics: Arc<dyn Metrics>,
    /// Datasets and models.
    pub assets: Arc<dyn Assets>,
    /// What jobs use over time, as charts.
    pub resource_charts: Arc<dyn ResourceCharts>,
    /// Accounts' quotas and usage hours.
    pub quotas: Arc<dyn Quotas>,
    /// Models served over HTTP.
    pub serving: Arc<dyn Serving>,
    /// Private JupyterLab servers.
    pub notebooks: Arc<dyn Notebooks>,
    /// The input and output notebooks of notebook runs.
    pub notebook_runs: Arc<dyn NotebookRuns>,
    /// Experiment templates.
    pub templates: Arc<dyn Templates>,
    /// Environment profiles.
    pub environments: Arc<dyn Environments>,
    /// Pipeline runs.
    pub pipelines: Arc<dyn Pipelines>,
    /// Experiments: searches over a template's parameters.
    pub experiments: Arc<dyn Experiments>,
    /// Local runs: programs run outside the console, recorded as jobs.
    pub local_runs: Arc<dyn LocalRuns>,
    /// Parameters jobs' programs recorded (local runs, MLflow runs).
    pub run_params: Arc<dyn RunParams>,
    /// Templates, pipelines and notebook files run on a cron schedule.
    pub schedules: Arc<dyn Schedules>,
    /// Who is told of what, and the log of what was sent.
    pub notifications: Arc<dyn Notifications>,
    /// Metric alert rules and the alerts they raised.
    pub alerts: Arc<dyn Alerts>,
    /// What the stall watcher found (jobs holding idle GPUs).
    pub watchdog: Arc<dyn Watchdog>,
    /// The account's secrets (names and dates; values only reach workloads).
    pub secrets: Arc<dyn Secrets>,
    /// Mark cookies `Secure` even without `X-Forwarded-Proto: https`.
    pub secure_cookies: bool,
    /// How people may sign in (passwords, single sign-on).
    pub sign_in: crate::models::sign_in::SignInOptions,
    /// The LDAP directory people sign in against, when one is set up.
    pub directory: Option<Arc<dyn Directory>>,
}
