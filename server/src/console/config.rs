//! What the console is built from: [`Config`], with where jobs run
//! ([`ClusterChoice`]) and where files are kept ([`Storage`]).

use std::path::PathBuf;
use std::time::Duration;

use leptos::prelude::LeptosOptions;

use crate::assets::objects::Objects;
use crate::kubernetes::notebooks::NotebookPods;
use crate::kubernetes::KubeAccess;
use crate::local::capacity::CapacitySettings;
use crate::local::limits::LimitsChoice;
use crate::mail::MailChoice;

/// Where jobs (and serving instances) run.
#[derive(Clone)]
pub enum ClusterChoice {
    /// Processes on this machine: the embedded default.
    Local,
    /// A Kubernetes cluster; jobs that ran locally before stay readable and
    /// controllable.
    Kube {
        /// How to reach its API server.
        access: KubeAccess,
        /// Where inside serving pods their model version is put (`None`:
        /// `/models`; `--serving-model-dir`, for images that expect it
        /// elsewhere).
        serving_model_root: Option<String>,
        /// How notebook pods are made.
        notebook_pods: Box<NotebookPods>,
        /// Where nodes keep the datasets and models pods read.
        pod_support: Box<crate::kubernetes::inputs::PodSupport>,
    },
}

/// Where dataset and model files are kept.
#[derive(Clone)]
pub enum Storage {
    /// `--storage`: a folder, or `s3://bucket/prefix` with the `AWS_*`
    /// variables (credentials, region, `AWS_ENDPOINT_URL`) given here.
    Setting {
        /// The folder or `s3://…` URL.
        url: String,
        /// The `AWS_*` variables, for S3.
        aws_env: Vec<(String, String)>,
    },
    /// A store opened by the caller (tests: S3 that gives up fast).
    Opened(Objects),
}

/// Everything the console is built from: what `paddlecloud serve` parses,
/// or what a test or benchmark writes ([`Config::embedded`] and changes).
#[derive(Clone)]
pub struct Config {
    /// Site settings from `Leptos.toml` (site root, bundle name, address).
    pub site: LeptosOptions,
    /// Job folders, logs and (by default) the database and files live here.
    pub data_dir: PathBuf,
    /// `sqlite://PATH` or `postgres://…`.
    pub database_url: String,
    /// Where jobs run.
    pub cluster: ClusterChoice,
    /// What a stopped replica gets between SIGTERM and SIGKILL.
    pub stop_grace: Duration,
    /// Preemption (opt-in): a job waiting for room stops running jobs of
    /// lower priority, which get this between SIGTERM and SIGKILL and queue
    /// again. `None`: nothing is preempted.
    pub preemption_grace: Option<Duration>,
    /// The console's URL as jobs and pods reach it (`PADDLECLOUD_SERVER`);
    /// `None` when it listens on no socket (tests driving the router).
    pub public_url: Option<String>,
    /// Mark session cookies `Secure` even without `X-Forwarded-Proto: https`.
    pub secure_cookies: bool,
    /// The token a scraper sends for `/metrics` (`Authorization: Bearer`);
    /// without one, only site admins read it.
    pub metrics_token: Option<String>,
    /// Metric points PaddleBoard keeps in memory for charts.
    pub metrics_cache_points: usize,
    /// Dataset and model files.
    pub storage: Storage,
    /// Largest file an upload may bring (for [`Storage::Setting`]).
    pub max_upload_bytes: u64,
    /// Seconds between samples of what local replicas (and, without
    /// Prometheus, pods) use.
    pub sample_secs: u32,
    /// Days resource samples and serving traffic are kept.
    pub resource_keep_days: u32,
    /// A Prometheus server for the charts of jobs on Kubernetes.
    pub prometheus_url: Option<String>,
    /// The Python that runs the default predict server of local serving
    /// (`None`: the console builds one with PaddlePaddle on first use).
    pub serving_python: Option<String>,
    /// The Python whose `jupyterlab` runs notebooks, and their kernels when
    /// they name no environment (`None`: locally, the console builds
    /// JupyterLab on first use; on Kubernetes, the image's `python3`).
    pub notebook_python: Option<String>,
    /// The Python (with `venv`) that environments' virtualenvs are made from.
    pub environment_python: String,
    /// Where environments' virtualenvs are built (by default
    /// `<data_dir>/environments`); builds are shared by hash, so several
    /// consoles on one machine may share it.
    pub environments_dir: PathBuf,
    /// Minutes without kernel or terminal activity after which a notebook
    /// that sets no idle timeout of its own is stopped (`None`: never).
    pub notebook_idle_minutes: Option<u32>,
    /// Seconds between idle probes of running notebooks.
    pub notebook_probe_secs: u32,
    /// What local job and serving replicas inherit of the console's own
    /// environment ([`crate::cli::inherited_env`]); nothing else of it.
    pub inherited_env: Vec<(String, String)>,
    /// The room the local executor offers (detected unless set).
    pub local_capacity: CapacitySettings,
    /// How local replicas are held to their limits.
    pub local_limits: LimitsChoice,
    /// Where account mail goes (`--smtp-url`; by default `<data-dir>/outbox`).
    pub mail: MailChoice,
    /// The sender of account mail (`--mail-from`).
    pub mail_from: String,
    /// Refuse sign-in until the user confirmed their address.
    pub require_email_confirmation: bool,
    /// A local run without a heartbeat for this long is marked lost.
    pub local_run_lost_after: Duration,
    /// How long a console process holds a background loop's lease without
    /// renewing it; with replicas on one database, a loop whose holder died
    /// moves to another process within this.
    pub lease_ttl: Duration,
    /// How long after a failed try a notification is tried again (then
    /// four times longer each time).
    pub notify_retry_base: Duration,
    /// How long a running job may write no log line, take no metric point
    /// and use no CPU before it is marked stalled; `None`: never.
    pub stall_after: Option<Duration>,
    /// The file holding the key secrets are sealed with (32 bytes,
    /// base64); made when missing. By default `<data_dir>/secrets.key`;
    /// replicas sharing a database must share it.
    pub secrets_key_file: PathBuf,
    /// Whether people sign in (and sign up) with a password; with single
    /// sign-on set up, it may be switched off.
    pub password_sign_in: bool,
    /// Single sign-on through an OpenID Connect provider (`--oidc-*`).
    pub oidc: Option<crate::accounts::oidc::OidcSettings>,
    /// Sign-in against an LDAP directory (`--ldap-*`).
    pub ldap: Option<crate::accounts::ldap::LdapSettings>,
}

impl Config {
    /// The embedded defaults (`paddlecloud serve` with no flags) on
    /// `data_dir` and `database_url`: local executor, files in
    /// `<data_dir>/objects`, no Prometheus, nothing inherited.
    pub fn embedded(site: LeptosOptions, data_dir: PathBuf, database_url: String) -> Self {
        let data_dir_outbox = data_dir.join("outbox");
        let environments_dir = data_dir.join("environments");
        let secrets_key_file = data_dir.join("secrets.key");
        Self {
            secrets_key_file,
            password_sign_in: true,
            oidc: None,
            ldap: None,
            storage: Storage::Setting {
                url: data_dir.join("objects").display().to_string(),
                aws_env: Vec::new(),
            },
            site,
            data_dir,
            database_url,
            cluster: ClusterChoice::Local,
            stop_grace: Duration::from_secs(10),
            preemption_grace: None,
            public_url: None,
            secure_cookies: false,
            metrics_token: None,
            metrics_cache_points: 20_000_000,
            max_upload_bytes: 50 * 1024 * 1024 * 1024,
            sample_secs: crate::resources::DEFAULT_SAMPLE_SECS,
            resource_keep_days: crate::resources::DEFAULT_KEEP_DAYS,
            prometheus_url: None,
            serving_python: None,
            notebook_python: None,
            environment_python: "python3".to_owned(),
            environments_dir,
            notebook_idle_minutes: None,
            notebook_probe_secs: 60,
            inherited_env: Vec::new(),
            local_capacity: CapacitySettings::default(),
            local_limits: LimitsChoice::Auto,
            mail: MailChoice::Outbox(data_dir_outbox),
            mail_from: crate::mail::DEFAULT_FROM.to_owned(),
            require_email_confirmation: false,
            local_run_lost_after: Duration::from_secs(60),
            lease_ttl: Duration::from_secs(15),
            notify_retry_base: Duration::from_secs(30),
            stall_after: Some(Duration::from_secs(
                60 * u64::from(app::models::DEFAULT_STALL_MINUTES),
            )),
        }
    }

    /// The console's URL as a browser reaches it, for links in mail:
    /// `--public-url`, else the address it listens on.
    pub(super) fn link_base(&self) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{}", self.site.site_addr),
        }
    }
}
