//! `paddlecloud serve`'s flags (each with its environment variable) and
//! the console's [`Config`] made from them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::StorageArgs;
use crate::console::{ClusterChoice, Config, Storage};
use crate::kubernetes::notebooks::NotebookPods;
use crate::kubernetes::KubeAccess;
use crate::local::capacity::{CapacitySettings, GpuSetting};
use crate::local::limits::LimitsChoice;
use crate::mail::MailChoice;

/// `paddlecloud serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on. Default: `site-addr` from Leptos.toml (127.0.0.1:3000).
    #[arg(long, env = "PADDLECLOUD_ADDR")]
    pub addr: Option<SocketAddr>,
    /// Site configuration: bundle name, site root with the built assets.
    #[arg(long, env = "PADDLECLOUD_LEPTOS_CONFIG", default_value = "Leptos.toml")]
    pub leptos_config: PathBuf,
    /// Mark the session cookie `Secure` even when no proxy says the request came over https.
    #[arg(long, env = "PADDLECLOUD_SECURE_COOKIES")]
    pub secure_cookies: bool,
    /// Where jobs run: `local` (processes on this machine) or `kube` (the
    /// Kubernetes cluster of `KUBECONFIG`, `~/.kube/config`, or the
    /// in-cluster service account).
    #[arg(long, env = "PADDLECLOUD_CLUSTER", default_value = "local", value_parser = ["local", "kube"])]
    pub cluster: String,
    /// Seconds a stopped job's processes get between SIGTERM and SIGKILL.
    #[arg(long, env = "PADDLECLOUD_STOP_GRACE", default_value_t = 10)]
    pub stop_grace: u64,
    /// Turns preemption on: a job that waits for room stops running jobs of
    /// its account of lower priority (locally; on Kubernetes the scheduler
    /// preempts lower-priority pods), which get this many seconds between
    /// SIGTERM and SIGKILL and queue again. Off unless set.
    #[arg(long, env = "PADDLECLOUD_PREEMPTION_GRACE")]
    pub preemption_grace: Option<u64>,
    /// The console's URL as jobs reach it (given to them as `PADDLECLOUD_SERVER`
    /// for the SDK). Default: the listen address.
    #[arg(long, env = "PADDLECLOUD_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// How many metric points PaddleBoard keeps in memory for charts (about
    /// 40 bytes each); the least recently charted series go first.
    #[arg(
        long,
        env = "PADDLECLOUD_METRICS_CACHE_POINTS",
        default_value_t = 20_000_000
    )]
    pub metrics_cache_points: usize,
    /// Where dataset and model files go: a folder, or `s3://bucket/prefix`
    /// (credentials, region and `AWS_ENDPOINT_URL` from the usual `AWS_*`
    /// variables). Default: `objects` in the data directory.
    #[arg(long = "storage", env = "PADDLECLOUD_STORAGE")]
    pub storage_url: Option<String>,
    /// Largest file an upload may bring, bytes.
    #[arg(long, env = "PADDLECLOUD_MAX_UPLOAD_BYTES", default_value_t = 50 * 1024 * 1024 * 1024)]
    pub max_upload_bytes: u64,
    /// Log format on stdout: `text` or `json`.
    #[arg(long, env = "PADDLECLOUD_LOG_FORMAT", default_value = "text")]
    pub log_format: String,
    /// Seconds between samples of what local job replicas use (CPU, memory,
    /// GPU, network, disk).
    #[arg(long, env = "PADDLECLOUD_SAMPLE_SECS", default_value_t = crate::resources::DEFAULT_SAMPLE_SECS,
          value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub sample_secs: u32,
    /// Days resource samples are kept (minute and hour means; raw samples a day).
    #[arg(long, env = "PADDLECLOUD_RESOURCE_KEEP_DAYS", default_value_t = crate::resources::DEFAULT_KEEP_DAYS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub resource_keep_days: u32,
    /// A Prometheus server with cAdvisor (and DCGM exporter) series, for
    /// the resource charts of jobs on Kubernetes, e.g. `http://prometheus:9090`.
    #[arg(long, env = "PADDLECLOUD_PROMETHEUS_URL")]
    pub prometheus_url: Option<String>,
    /// The Python that runs the default predict server of local serving
    /// instances; it needs `paddlepaddle`. Unset, the console builds one
    /// (PaddlePaddle from PyPI, as the paddle-cpu environment) the first
    /// time an instance needs it.
    #[arg(long, env = "PADDLECLOUD_SERVING_PYTHON")]
    pub serving_python: Option<String>,
    /// The Python whose `jupyterlab` runs notebooks (and their kernels when
    /// they name no environment). Unset, the console builds JupyterLab from
    /// PyPI the first time a notebook starts on this machine; with
    /// `--cluster kube`, the image's `python3`.
    #[arg(long, env = "PADDLECLOUD_NOTEBOOK_PYTHON")]
    pub notebook_python: Option<String>,
    /// The Python (3.8 or later, with `venv`) that environments'
    /// virtualenvs are made from on this machine.
    #[arg(
        long,
        env = "PADDLECLOUD_ENVIRONMENT_PYTHON",
        default_value = "python3"
    )]
    pub environment_python: String,
    /// Where environments' virtualenvs are built (default:
    /// `<data-dir>/environments`). Builds are named by a hash of their
    /// requirements, so consoles on one machine may share the folder.
    #[arg(long, env = "PADDLECLOUD_ENVIRONMENTS_DIR")]
    pub environments_dir: Option<PathBuf>,
    /// With `--cluster kube`: the image of notebooks that name none; it
    /// needs JupyterLab and `python3` (Jupyter's images; add PaddlePaddle
    /// for your users).
    #[arg(long, env = "PADDLECLOUD_NOTEBOOK_IMAGE",
          default_value = crate::kubernetes::notebooks::DEFAULT_IMAGE)]
    pub notebook_image: String,
    /// With `--cluster kube`: how the console reaches notebook servers:
    /// `pod-ip` (a console in the cluster, or with routes to pods),
    /// `api-server` (through the API server's port-forward, for a console
    /// outside the cluster; needs `create` on `pods/portforward`), or
    /// `auto`: `pod-ip` in a pod, `api-server` with a kubeconfig.
    #[arg(long, env = "PADDLECLOUD_NOTEBOOK_REACH", default_value = "auto",
          value_parser = ["auto", "pod-ip", "api-server"])]
    pub notebook_reach: String,
    /// With `--cluster kube`: the StorageClass of notebook workspaces
    /// (default: the cluster's default class).
    #[arg(long, env = "PADDLECLOUD_NOTEBOOK_STORAGE_CLASS")]
    pub notebook_storage_class: Option<String>,
    /// With `--cluster kube`: the size of each notebook's workspace, e.g. `20Gi`.
    #[arg(long, env = "PADDLECLOUD_NOTEBOOK_WORKSPACE_SIZE",
          default_value = crate::kubernetes::notebooks::DEFAULT_WORKSPACE_SIZE,
          value_parser = workspace_size)]
    pub notebook_workspace_size: String,
    /// With `--cluster kube`: where serving pods find their model version
    /// (an absolute path inside the pod; for images that expect it
    /// elsewhere). Default: `/models`.
    #[arg(long, env = "PADDLECLOUD_SERVING_MODEL_DIR", value_parser = absolute_path)]
    pub serving_model_dir: Option<String>,
    /// With `--cluster kube`: the image whose `python3` fetches the
    /// datasets and models a pod reads into its node's cache (an init
    /// step; the console's choice, never a job's image, as the cache is
    /// shared by the node's pods).
    #[arg(long, env = "PADDLECLOUD_KUBE_FETCH_IMAGE", default_value = crate::kubernetes::inputs::DEFAULT_FETCH_IMAGE)]
    pub kube_fetch_image: String,
    /// With `--cluster kube`: the folder on every node where fetched
    /// datasets and model versions are kept, once per revision.
    #[arg(long, env = "PADDLECLOUD_KUBE_INPUT_CACHE",
          default_value = crate::kubernetes::inputs::DEFAULT_NODE_DIR, value_parser = absolute_path)]
    pub kube_input_cache: String,
    /// With `--cluster kube`: the package index environments' init steps
    /// install requirements from (`PIP_INDEX_URL`; a mirror for a cluster
    /// without the Internet). Default: pip's own (PyPI).
    #[arg(long, env = "PADDLECLOUD_KUBE_PIP_INDEX_URL")]
    pub kube_pip_index_url: Option<String>,
    /// Stop a notebook that sets no idle timeout of its own after this many
    /// minutes without kernel or terminal activity (default: never).
    #[arg(long, env = "PADDLECLOUD_NOTEBOOK_IDLE_MINUTES",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(app::models::MAX_IDLE_MINUTES)))]
    pub notebook_idle_minutes: Option<u32>,
    /// Seconds between checks of running notebooks for activity.
    #[arg(long, env = "PADDLECLOUD_NOTEBOOK_PROBE_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub notebook_probe_secs: u32,
    /// CPUs the local executor gives replicas in all, e.g. `6` or `7500m`:
    /// to keep some for the console itself, or to say more than is detected.
    /// Default: every CPU this process may use.
    #[arg(long, env = "PADDLECLOUD_LOCAL_CPUS", value_parser = cpu_millis)]
    pub local_cpus: Option<u64>,
    /// Memory the local executor gives replicas in all, e.g. `24Gi`.
    /// Default: the machine's (or this process's cgroup limit).
    #[arg(long, env = "PADDLECLOUD_LOCAL_MEMORY", value_parser = memory_bytes)]
    pub local_memory: Option<u64>,
    /// GPUs the local executor hands out: `auto` (every GPU `nvidia-smi`
    /// shows), `none`, or a number N (the first N; past what `nvidia-smi`
    /// shows, simulated ones, whose indices replicas get as if they existed).
    #[arg(long, env = "PADDLECLOUD_LOCAL_GPUS", default_value = "auto")]
    pub local_gpus: GpuSetting,
    /// How local replicas are held to their memory and CPU: `auto` (a
    /// cgroup each where the console may create them: v2, else v1 with
    /// memory, CPU quota and pids; else `sampler`), `cgroup` (the same, and
    /// refuse to start without one), or `sampler` (memory read every
    /// second, CPU not limited).
    #[arg(long, env = "PADDLECLOUD_LOCAL_LIMITS", default_value = "auto")]
    pub local_limits: LimitsChoice,
    /// An SMTP server for account mail (confirmation, password reset):
    /// `smtp://host:587?tls=required` (STARTTLS), `smtps://user:pass@host`
    /// (TLS), `smtp://host:25` (plain, a local relay). Default: no server;
    /// each mail is written to `outbox/` in the data directory and its link
    /// logged.
    #[arg(long, env = "PADDLECLOUD_SMTP_URL")]
    pub smtp_url: Option<String>,
    /// Who account mail is from.
    #[arg(long, env = "PADDLECLOUD_MAIL_FROM", default_value = crate::mail::DEFAULT_FROM)]
    pub mail_from: String,
    /// Refuse sign-in until the user followed the link mailed at sign-up
    /// (otherwise the account works at once and asks to be confirmed).
    #[arg(long, env = "PADDLECLOUD_REQUIRE_EMAIL_CONFIRMATION")]
    pub require_email_confirmation: bool,
    /// Seconds without a heartbeat after which a local run (`paddlecloud
    /// run`, `paddlecloud.run()`) is marked lost. Clients beat every 10 s.
    #[arg(long, env = "PADDLECLOUD_LOCAL_RUN_LOST_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub local_run_lost_secs: u64,
    /// Seconds a console holds a background loop's lease (the pipeline
    /// scheduler, the local-run sweep, notebook culling, pruning) without
    /// renewing it: with replicas on one PostgreSQL, how soon another takes
    /// a loop over when its holder dies. Renewed every third of it.
    #[arg(long, env = "PADDLECLOUD_LEASE_SECS", default_value_t = 15,
          value_parser = clap::value_parser!(u64).range(3..=3_600))]
    pub lease_secs: u64,
    /// Seconds after a failed try that a notification (mail or webhook) is
    /// tried again; each later wait is four times longer, six tries in all.
    #[arg(long, env = "PADDLECLOUD_NOTIFY_RETRY_SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub notify_retry_secs: u64,
    /// Minutes a running job may write no log line, take no metric point
    /// and use no CPU before it is marked stalled (a badge, its page, a
    /// `stalled` notification); 0 never marks one.
    #[arg(long, env = "PADDLECLOUD_STALL_MINUTES", default_value_t = app::models::DEFAULT_STALL_MINUTES,
          value_parser = clap::value_parser!(u32).range(0..=10_080))]
    pub stall_minutes: u32,
    /// The token Prometheus sends to scrape the console's own `/metrics`
    /// (`Authorization: Bearer TOKEN`, e.g. a scrape config's
    /// `authorization.credentials`); without one, only site admins read it.
    #[arg(long, env = "PADDLECLOUD_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// The file with the key account secrets are sealed with (32 bytes in
    /// base64; made when missing). Default: `<data-dir>/secrets.key`.
    /// Replicas sharing a database need the same key; keep a copy, since
    /// without it no secret opens.
    #[arg(long, env = "PADDLECLOUD_SECRETS_KEY_FILE")]
    pub secrets_key_file: Option<std::path::PathBuf>,
    /// How people sign in.
    #[command(flatten)]
    pub sign_in: super::sign_in_args::SignInArgs,
    /// Storage settings.
    #[command(flatten)]
    pub storage: StorageArgs,
}

fn cpu_millis(raw: &str) -> Result<u64, String> {
    app::models::quantity::parse_cpu_millis("local-cpus", raw).map_err(|e| e.to_string())
}

/// A size Kubernetes takes for a claim (`20Gi`), checked as memory sizes are.
fn workspace_size(raw: &str) -> Result<String, String> {
    app::models::quantity::parse_memory_bytes("notebook-workspace-size", raw)
        .map(|_| raw.trim().to_owned())
        .map_err(|e| e.to_string())
}

fn absolute_path(raw: &str) -> Result<String, String> {
    let path = raw.trim().trim_end_matches('/');
    if path.starts_with('/') && !path.contains("/../") && !path.ends_with("/..") {
        Ok(path.to_owned())
    } else {
        Err(format!("{raw:?} is not an absolute path (e.g. /models)"))
    }
}

fn memory_bytes(raw: &str) -> Result<u64, String> {
    app::models::quantity::parse_memory_bytes("local-memory", raw).map_err(|e| e.to_string())
}

/// Variables passed through from the console's environment to the replicas
/// it runs; nothing else of it (database URLs, keys) reaches a job.
const PASSED_THROUGH: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER"];

/// What replicas inherit of this process's environment: [`PASSED_THROUGH`].
pub fn inherited_env() -> Vec<(String, String)> {
    PASSED_THROUGH
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_owned(), v)))
        .collect()
}

/// This process's `AWS_*` variables, for S3 storage (`vars()` would panic
/// on a variable that is not UTF-8: those are skipped).
fn aws_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| k.starts_with("AWS_"))
        .collect()
}

impl ServeArgs {
    /// The cluster `--cluster` names: for `kube`, the kubeconfig of
    /// `KUBECONFIG` or `~/.kube/config`, else the in-cluster service account.
    fn cluster_choice(&self) -> ClusterChoice {
        if self.cluster != "kube" {
            return ClusterChoice::Local;
        }
        let access = match kube::config::Kubeconfig::read() {
            Ok(kubeconfig) => KubeAccess::Kubeconfig(Box::new(kubeconfig)),
            Err(_) => KubeAccess::InCluster,
        };
        use crate::kubernetes::notebooks::Reach;
        let reach = match (self.notebook_reach.as_str(), &access) {
            ("pod-ip", _) | ("auto", KubeAccess::InCluster) => Reach::PodIp,
            _ => Reach::ApiServer,
        };
        ClusterChoice::Kube {
            access,
            serving_model_root: self.serving_model_dir.clone(),
            pod_support: Box::new(crate::kubernetes::inputs::PodSupport {
                image: self.kube_fetch_image.clone(),
                node_dir: self.kube_input_cache.clone(),
                pip_index_url: self.kube_pip_index_url.clone(),
            }),
            notebook_pods: Box::new(NotebookPods {
                image: self.notebook_image.clone(),
                storage_class: self.notebook_storage_class.clone(),
                workspace_size: self.notebook_workspace_size.clone(),
                grace_seconds: i64::try_from(self.stop_grace).unwrap_or(i64::MAX),
                reach,
                ..NotebookPods::default()
            }),
        }
    }
}

impl ServeArgs {
    /// The console's configuration from these flags (and the environment
    /// variables the CLI reads), serving `site` at `public_url`.
    pub fn config(
        &self,
        site: leptos::prelude::LeptosOptions,
        public_url: String,
    ) -> anyhow::Result<Config> {
        let data_dir = self.storage.data_dir.clone();
        Ok(Config {
            storage: Storage::Setting {
                url: self
                    .storage_url
                    .clone()
                    .unwrap_or_else(|| data_dir.join("objects").display().to_string()),
                aws_env: aws_env(),
            },
            database_url: self.storage.database_url(),
            cluster: self.cluster_choice(),
            stop_grace: Duration::from_secs(self.stop_grace),
            preemption_grace: self.preemption_grace.map(Duration::from_secs),
            public_url: Some(public_url),
            secure_cookies: self.secure_cookies,
            metrics_token: self.metrics_token.clone(),
            secrets_key_file: self
                .secrets_key_file
                .clone()
                .unwrap_or_else(|| data_dir.join("secrets.key")),
            password_sign_in: self.sign_in.password_sign_in == super::sign_in_args::Switch::On,
            oidc: self.sign_in.oidc()?,
            ldap: self.sign_in.ldap()?,
            metrics_cache_points: self.metrics_cache_points,
            max_upload_bytes: self.max_upload_bytes,
            sample_secs: self.sample_secs,
            resource_keep_days: self.resource_keep_days,
            prometheus_url: self.prometheus_url.clone(),
            serving_python: self.serving_python.clone(),
            notebook_python: self.notebook_python.clone(),
            environment_python: self.environment_python.clone(),
            environments_dir: self
                .environments_dir
                .clone()
                .unwrap_or_else(|| data_dir.join("environments")),
            notebook_idle_minutes: self.notebook_idle_minutes,
            notebook_probe_secs: self.notebook_probe_secs,
            inherited_env: inherited_env(),
            local_capacity: CapacitySettings {
                cpu_millis: self.local_cpus,
                memory_bytes: self.local_memory,
                gpus: self.local_gpus,
            },
            local_limits: self.local_limits,
            mail: match &self.smtp_url {
                Some(url) => MailChoice::Smtp(url.clone()),
                None => MailChoice::Outbox(data_dir.join("outbox")),
            },
            mail_from: self.mail_from.clone(),
            require_email_confirmation: self.require_email_confirmation,
            local_run_lost_after: std::time::Duration::from_secs(self.local_run_lost_secs),
            lease_ttl: std::time::Duration::from_secs(self.lease_secs),
            notify_retry_base: std::time::Duration::from_secs(self.notify_retry_secs),
            stall_after: (self.stall_minutes > 0)
                .then(|| std::time::Duration::from_secs(60 * u64::from(self.stall_minutes))),
            site,
            data_dir,
        })
    }
}
