//! The `paddlecloud` command line: `serve`, `admin …`, and the commands that
//! talk to a running console (`submit`, `jobs`, `logs`, `stop`, `delete`).

mod catalog;
mod files;
mod local_run;
pub(crate) mod pipelines;
mod remote;
mod serving;
mod spool;

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use app::models::{Credentials, SignUpForm};
use clap::{Args, Parser, Subcommand};

pub use self::remote::{ClusterArgs, JobNameArgs, JobsArgs, LogsArgs, RemoteArgs, SubmitArgs};
use crate::access_keys::SqlAccessKeys;
use crate::accounts::{AccountMail, SqlAccounts};
use crate::console::{ClusterChoice, Config, Console, Storage};
use crate::kubernetes::notebooks::NotebookPods;
use crate::kubernetes::KubeAccess;
use crate::local::capacity::{CapacitySettings, GpuSetting};
use crate::local::limits::LimitsChoice;
use crate::mail::MailChoice;
use crate::storage::db;

/// PaddleCloud Console: run, watch and serve PaddlePaddle work on a cluster.
#[derive(Debug, Parser)]
#[command(name = "paddlecloud", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the web console.
    Serve(Box<ServeArgs>),
    /// Administrative tasks for scripted set-up.
    Admin {
        /// The task.
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Submit a training job to a console, e.g.
    /// `paddlecloud submit mnist --ps 1 --trainers 2 -- python train.py`.
    Submit(SubmitArgs),
    /// List your account's jobs.
    Jobs(JobsArgs),
    /// Print a pod's log (`-f` to follow it).
    Logs(LogsArgs),
    /// Stop a job (its record and logs stay).
    Stop(JobNameArgs),
    /// Delete a job and its logs.
    Delete(JobNameArgs),
    /// Where jobs run: its CPUs, memory and GPUs, what is held, what waits.
    Cluster(ClusterArgs),
    /// Who your credentials act as, in which account and role, and your
    /// other accounts (`--account NAME` acts in one of them).
    Whoami(remote::WhoamiArgs),
    /// Upload files and folders into a dataset, or as a new model version, e.g.
    /// `paddlecloud upload dataset mnist ./mnist-data`.
    Upload(files::UploadArgs),
    /// Serving instances: `launch`, `list`, `scale`, `stop`, `delete`.
    Serving {
        /// The task.
        #[command(subcommand)]
        command: serving::ServingCommand,
    },
    /// Experiment templates: `list`, `show`, `save`, `run`.
    Template {
        /// The task.
        #[command(subcommand)]
        command: catalog::TemplateCommand,
    },
    /// Environment profiles: `list`, `show`, `save`.
    Env {
        /// The task.
        #[command(subcommand)]
        command: catalog::EnvCommand,
    },
    /// Run a program here as a local run, tracked like a cluster job (its
    /// output, parameters, where it ran and how it ended), e.g.
    /// `paddlecloud run --param lr=0.1 -- python train.py --lr 0.1`.
    Run(local_run::LocalRunArgs),
    /// Send the reports of local runs the console could not be reached for.
    Sync(RemoteArgs),
    /// Pipeline runs: `run -f FILE`, `list`, `show`, `stop`, `retry`.
    Pipeline {
        /// The task.
        #[command(subcommand)]
        command: pipelines::PipelineCommand,
    },
    /// Download a dataset or a model version (or one file or folder of it),
    /// resuming cut-off files, e.g. `paddlecloud download model vision/resnet --version 2`.
    Download(files::DownloadArgs),
}

/// Administrative subcommands.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create an account and its owner (same rules as the sign-up form).
    CreateAccount(CreateAccountArgs),
    /// Create an access key for a user and print it (or write a credentials file).
    CreateKey(CreateKeyArgs),
    /// Make a user a site admin, who may set any account's quota
    /// (`--revoke` takes it back).
    Grant(GrantArgs),
}

/// `paddlecloud admin grant`.
#[derive(Debug, Clone, Args)]
pub struct GrantArgs {
    /// The user's email (in every account they belong to).
    pub email: String,
    /// Take the role away instead.
    #[arg(long)]
    pub revoke: bool,
    /// Storage settings.
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// Where the console keeps its state.
#[derive(Debug, Clone, Args)]
pub struct StorageArgs {
    /// Directory for the embedded database, job files and logs.
    #[arg(long, env = "PADDLECLOUD_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// Database URL: `sqlite://PATH` or `postgres://USER:PASS@HOST/DB`.
    /// Default: a SQLite file `paddlecloud.db` in the data directory.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<String>,
}

impl StorageArgs {
    /// The database URL to use.
    pub fn database_url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| db::default_url(&self.data_dir))
    }
}

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
    /// instances; it needs `paddlepaddle` (`pip install paddlepaddle`).
    #[arg(long, env = "PADDLECLOUD_SERVING_PYTHON", default_value = "python3")]
    pub serving_python: String,
    /// The Python whose `jupyterlab` runs notebooks on this machine (their
    /// kernels run in it too); it needs `pip install jupyterlab`.
    #[arg(long, env = "PADDLECLOUD_NOTEBOOK_PYTHON", default_value = "python3")]
    pub notebook_python: String,
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
    /// cgroup v2 each where the console may create them, else `sampler`),
    /// `cgroup`, or `sampler` (memory read every second, CPU not limited).
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

/// `paddlecloud admin create-account`.
#[derive(Debug, Clone, Args)]
pub struct CreateAccountArgs {
    /// Account name (becomes the namespace `pc-NAME`).
    #[arg(long)]
    pub name: String,
    /// The owner's email.
    #[arg(long)]
    pub email: String,
    /// Read the password from the first line of standard input. Without
    /// it, a password is generated and printed once, and the owner must
    /// choose a new one when they first sign in.
    #[arg(long)]
    pub password_stdin: bool,
    /// Make the owner a site admin (who sets every account's quota). The
    /// first user of an empty database is one anyway.
    #[arg(long)]
    pub site_admin: bool,
    /// Storage settings.
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// `paddlecloud admin create-key`.
#[derive(Debug, Clone, Args)]
pub struct CreateKeyArgs {
    /// The account.
    #[arg(long)]
    pub account: String,
    /// The user's email.
    #[arg(long)]
    pub user: String,
    /// What to call the key (shown on the Account page).
    #[arg(long, default_value = "created by paddlecloud admin")]
    pub name: String,
    /// Write a credentials file (mode 0600) here instead of printing the key;
    /// needs `--server`.
    #[arg(long, requires = "server")]
    pub credentials_out: Option<PathBuf>,
    /// The console's URL to put in the credentials file.
    #[arg(long)]
    pub server: Option<String>,
    /// Storage settings.
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve(*args).await,
        Command::Admin { command } => match command {
            AdminCommand::CreateAccount(args) => create_account(args).await,
            AdminCommand::CreateKey(args) => create_key(args).await,
            AdminCommand::Grant(args) => grant(args).await,
        },
        // Blocking HTTP (ureq): off the async workers.
        Command::Submit(args) => blocking(move || remote::submit(args)).await,
        Command::Jobs(args) => blocking(move || remote::jobs(args)).await,
        Command::Logs(args) => blocking(move || remote::logs(args)).await,
        Command::Stop(args) => blocking(move || remote::stop(args)).await,
        Command::Delete(args) => blocking(move || remote::delete(args)).await,
        Command::Cluster(args) => blocking(move || remote::cluster(args)).await,
        Command::Whoami(args) => blocking(move || remote::whoami(args)).await,
        Command::Upload(args) => blocking(move || files::upload(args)).await,
        Command::Download(args) => blocking(move || files::download(args)).await,
        Command::Serving { command } => blocking(move || serving::run(command)).await,
        Command::Template { command } => blocking(move || catalog::run_template(command)).await,
        Command::Env { command } => blocking(move || catalog::run_env(command)).await,
        Command::Pipeline { command } => blocking(move || pipelines::run_pipeline(command)).await,
        Command::Run(args) => {
            // The program's exit status is this process's.
            blocking(move || std::process::exit(local_run::run_local(args)?)).await
        }
        Command::Sync(args) => blocking(move || local_run::run_sync(args)).await,
    }
}

async fn blocking(
    work: impl FnOnce() -> anyhow::Result<()> + Send + 'static,
) -> anyhow::Result<()> {
    tokio::task::spawn_blocking(work).await?
}

fn init_logging(format: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,sqlx=warn".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        "json" => builder.json().init(),
        "text" => builder.init(),
        other => bail!("unknown log format {other:?}: use text or json"),
    }
    Ok(())
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    init_logging(&args.log_format)?;
    // One TLS crypto provider for every client (S3, Kubernetes): ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let site = site_options(&args.leptos_config, args.addr)?;
    let addr = site.site_addr;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    let local = listener.local_addr()?;
    let public_url = args
        .public_url
        .clone()
        .unwrap_or_else(|| reachable_url(local));
    let console = Console::build(args.config(site, public_url)?).await?;
    let app = console.router();
    tracing::info!(url = %format!("http://{local}"), "PaddleCloud Console is up");
    println!("PaddleCloud Console: http://{local}  (sign up at http://{local}/signup)");
    // Small writes go out at once: a kernel's WebSocket messages through the
    // notebook proxy would otherwise wait on delayed ACKs (40 ms each).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(error = %err, "TCP_NODELAY on a connection");
        }
    });
    // The peer's address reaches handlers (rate limits of password resets).
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown_signal())
    .await?;
    Ok(())
}

/// The site settings of `Leptos.toml` at `path`, listening on `addr` if given.
pub fn site_options(
    path: &std::path::Path,
    addr: Option<SocketAddr>,
) -> anyhow::Result<leptos::prelude::LeptosOptions> {
    if !path.exists() {
        bail!(
            "site configuration {} not found: run from the repository root or pass --leptos-config",
            path.display()
        );
    }
    let config =
        leptos_config::get_configuration(Some(path.to_str().context("config path is not UTF-8")?))
            .context("reading the site configuration")?;
    let mut site = config.leptos_options;
    if let Some(addr) = addr {
        site.site_addr = addr;
    }
    Ok(site)
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
            public_url: Some(public_url),
            secure_cookies: self.secure_cookies,
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
            site,
            data_dir,
        })
    }
}

/// The address jobs on this machine reach the console at: a wildcard
/// listen address is reached through loopback.
fn reachable_url(local: SocketAddr) -> String {
    let ip = match local.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_owned(),
        ip if ip.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    format!("http://{ip}:{}", local.port())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}

async fn create_key(args: CreateKeyArgs) -> anyhow::Result<()> {
    let pool = db::connect(&args.storage.database_url()).await?;
    let created = SqlAccessKeys::new(pool)
        .create_for(&args.account, &args.user, &args.name)
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    let (Some(path), Some(server)) = (args.credentials_out, args.server) else {
        println!("{}", created.key);
        return Ok(());
    };
    let credentials = Credentials {
        server,
        account: args.account.trim().to_ascii_lowercase(),
        user: args.user.trim().to_lowercase(),
        key: created.key,
    };
    write_private(&path, &credentials.to_json())
        .with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {} (key {}…)", path.display(), created.info.prefix);
    Ok(())
}

async fn grant(args: GrantArgs) -> anyhow::Result<()> {
    let pool = db::connect(&args.storage.database_url()).await?;
    let users = crate::quota::SqlQuotas::new(pool, None)
        .grant_site_admin(&args.email, !args.revoke)
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    if users == 0 {
        bail!("no user has the email {}", args.email);
    }
    let what = if args.revoke {
        "is no longer"
    } else {
        "is now"
    };
    println!("{} {what} a site admin", args.email.trim().to_lowercase());
    Ok(())
}

/// Writes a file only its owner can read: it holds a secret.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())
}

async fn create_account(args: CreateAccountArgs) -> anyhow::Result<()> {
    let (password, generated) = if args.password_stdin {
        let mut password = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut password)
            .context("reading the password from standard input")?;
        (password.trim_end_matches(['\r', '\n']).to_owned(), false)
    } else {
        // 24 hex digits: 96 random bits, to be replaced at first sign-in.
        (
            crate::storage::tokens::random_token()[..24].to_owned(),
            true,
        )
    };
    let pool = db::connect(&args.storage.database_url()).await?;
    // Nothing is mailed: whoever runs this vouches for the address.
    let accounts = SqlAccounts::new(pool, AccountMail::outbox_of(&args.storage.data_dir)?);
    let me = accounts
        .create_confirmed(
            SignUpForm {
                account: args.name,
                email: args.email,
                password: password.clone(),
            },
            args.site_admin,
            generated,
        )
        .await
        .map_err(|err| match err.field() {
            Some(field) => anyhow::anyhow!("{field}: {err}"),
            None => anyhow::anyhow!("{err}"),
        })?;
    println!(
        "created account {} (namespace {}) with owner {}{}",
        me.account.name,
        me.account.namespace,
        me.email,
        if args.site_admin {
            ", a site admin"
        } else {
            ""
        }
    );
    if me.must_change_password {
        println!(
            "generated password (shown once; a new one is asked for at first sign-in): {password}"
        );
    } else if generated {
        println!(
            "{} already had a user: they sign in with their own password",
            me.email
        );
    }
    Ok(())
}
