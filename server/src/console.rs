//! The composition root: [`Console::build`] makes every port, background
//! loop and the router's state from one [`Config`]. `paddlecloud serve`,
//! every test helper and every benchmark call it, varying only the config;
//! nothing below reads the environment (the CLI turns flags and variables
//! into the config).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::storage::db::Pool;
use anyhow::Context;
use app::ports::{Cluster, Services};
use leptos::prelude::LeptosOptions;
use tokio::sync::broadcast::error::RecvError;

use crate::access_keys::SqlAccessKeys;
use crate::accounts::{AccountMail, SqlAccounts};
use crate::assets::objects::Objects;
use crate::assets::SqlAssets;
use crate::backend::notebooks::NotebookBackend;
use crate::backend::quota::ClusterQuota;
use crate::backend::serving::ServingBackend;
use crate::clusters::Clusters;
use crate::environments::SqlEnvironments;
use crate::http::{router, AppState};
use crate::kubernetes::metrics_api::MetricsApi;
use crate::kubernetes::notebooks::{KubeNotebooks, NotebookPods};
use crate::kubernetes::prometheus::Prometheus;
use crate::kubernetes::serving::KubeServing;
use crate::kubernetes::{KubeAccess, KubeCluster};
use crate::local::capacity::CapacitySettings;
use crate::local::limits::LimitsChoice;
use crate::local::machine::Machine;
use crate::local::notebooks::LocalNotebooks;
use crate::local::serving::LocalServing;
use crate::local::venvs::Venvs;
use crate::local::{LocalCluster, LocalParts};
use crate::local_runs::SqlLocalRuns;
use crate::mail::{MailChoice, Outbox, Smtp};
use crate::mlflow::tracking::MlflowService;
use crate::notebooks::NotebookService;
use crate::paddleboard::SqlMetrics;
use crate::pipelines::SqlPipelines;
use crate::quota::SqlQuotas;
use crate::resources::SqlResourceCharts;
use crate::serving::ServingService;
use crate::storage::changes::{ChangeFeed, Kind};
use crate::storage::db;
use crate::storage::jobs::JobStore;
use crate::storage::lease::{self, Lease};
use crate::storage::samples::ResourceStore;
use crate::templates::SqlTemplates;

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
    /// The console's URL as jobs and pods reach it (`PADDLECLOUD_SERVER`);
    /// `None` when it listens on no socket (tests driving the router).
    pub public_url: Option<String>,
    /// Mark session cookies `Secure` even without `X-Forwarded-Proto: https`.
    pub secure_cookies: bool,
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
    /// The Python that runs the default predict server of local serving.
    pub serving_python: String,
    /// The Python whose `jupyterlab` runs local notebooks (and their kernels).
    pub notebook_python: String,
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
}

impl Config {
    /// The embedded defaults (`paddlecloud serve` with no flags) on
    /// `data_dir` and `database_url`: local executor, files in
    /// `<data_dir>/objects`, no Prometheus, nothing inherited.
    pub fn embedded(site: LeptosOptions, data_dir: PathBuf, database_url: String) -> Self {
        let data_dir_outbox = data_dir.join("outbox");
        let environments_dir = data_dir.join("environments");
        Self {
            storage: Storage::Setting {
                url: data_dir.join("objects").display().to_string(),
                aws_env: Vec::new(),
            },
            site,
            data_dir,
            database_url,
            cluster: ClusterChoice::Local,
            stop_grace: Duration::from_secs(10),
            public_url: None,
            secure_cookies: false,
            metrics_cache_points: 20_000_000,
            max_upload_bytes: 50 * 1024 * 1024 * 1024,
            sample_secs: crate::resources::DEFAULT_SAMPLE_SECS,
            resource_keep_days: crate::resources::DEFAULT_KEEP_DAYS,
            prometheus_url: None,
            serving_python: "python3".to_owned(),
            notebook_python: "python3".to_owned(),
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
        }
    }

    /// The console's URL as a browser reaches it, for links in mail:
    /// `--public-url`, else the address it listens on.
    fn link_base(&self) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{}", self.site.site_addr),
        }
    }
}

/// What the chosen cluster runs jobs and serving on.
struct Backends {
    /// Where jobs run.
    cluster: Arc<dyn Cluster>,
    /// Where serving replicas run.
    serving: Arc<dyn ServingBackend>,
    /// Where notebook servers run.
    notebooks: Arc<dyn NotebookBackend>,
    /// A quota the cluster enforces itself, if it does.
    quota: Option<Arc<dyn ClusterQuota>>,
    /// The cluster's metrics API, sampled for charts without Prometheus.
    metrics_api: Option<Arc<MetricsApi>>,
}

/// The built console: its ports and what the router serves them with.
pub struct Console {
    /// The database every port uses.
    pub pool: Pool,
    /// The ports.
    pub services: Services,
    /// The router's state (the ports, the site settings, MLflow, serving).
    pub state: AppState,
}

impl Console {
    /// Connects to the database and the cluster, makes every port, brings
    /// back what a previous process left running (local jobs are marked
    /// failed, serving instances restarted) and starts the background
    /// loops (resource sampling and pruning, traffic, cluster watches).
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let link_base = config.link_base();
        let pool = db::connect(&config.database_url).await?;
        tracing::info!(database = %db::redact(&config.database_url), "database ready");
        let grace = config.stop_grace;
        let sample_every = Duration::from_secs(config.sample_secs.into());
        let keep = Duration::from_secs(u64::from(config.resource_keep_days) * 86_400);
        let inherited_env: Arc<[(String, String)]> = config.inherited_env.into();

        // Loops that act for every replica run in the one holding their lease.
        let holder = lease::holder_id();
        let lease = |name: &str| Lease::new(pool.clone(), name, &holder, config.lease_ttl);
        let samples = Arc::new(ResourceStore::new(pool.clone()));
        {
            let (samples, days) = (samples.clone(), config.resource_keep_days);
            lease("resource-pruning")
                .guard(move || SqlResourceCharts::prune_forever(samples.clone(), days));
        }
        let metrics = Arc::new(SqlMetrics::new(pool.clone(), config.metrics_cache_points));
        let moved = metrics
            .convert_row_points()
            .await
            .map_err(|e| anyhow::anyhow!("moving metric points into blocks: {e}"))?;
        if moved > 0 {
            tracing::info!(points = moved, "metric points moved into blocks");
        }
        let objects = match config.storage {
            Storage::Opened(objects) => objects,
            Storage::Setting { url, aws_env } => {
                Objects::from_setting_in(&url, config.max_upload_bytes, aws_env)
                    .with_context(|| format!("opening the file storage {url}"))?
            }
        };
        let assets = Arc::new(SqlAssets::new(
            pool.clone(),
            objects,
            config.data_dir.join("dataset-cache"),
        ));
        let machine = Machine::detect(&config.local_capacity, config.local_limits)?;
        let venvs = Venvs::new(
            config.environments_dir.clone(),
            config.environment_python.clone(),
        );
        let from = crate::mail::sender(&config.mail_from)?;
        let mailer: Arc<dyn app::ports::Mailer> = match &config.mail {
            MailChoice::Outbox(folder) => Arc::new(
                Outbox::new(folder.clone(), from)
                    .with_context(|| format!("making the mail outbox {}", folder.display()))?,
            ),
            MailChoice::Smtp(url) => Arc::new(Smtp::new(url, from)?),
        };
        let account_mail = AccountMail {
            mailer,
            public_url: link_base,
            require_confirmation: config.require_email_confirmation,
        };
        let local = LocalCluster::start(LocalParts {
            store: JobStore::new(pool.clone()),
            data_dir: config.data_dir.clone(),
            grace,
            console_url: config.public_url.clone(),
            metrics: metrics.clone(),
            assets: assets.clone(),
            samples: samples.clone(),
            sample_every,
            inherited_env: inherited_env.clone(),
            machine: machine.clone(),
            venvs: venvs.clone(),
        })
        .await
        .map_err(|err| anyhow::anyhow!("starting the local executor: {err}"))?;

        let prometheus = config
            .prometheus_url
            .as_deref()
            .map(Prometheus::new)
            .transpose()
            .context("--prometheus-url")?;
        let runs_locally = matches!(config.cluster, ClusterChoice::Local);
        // Local runs are jobs of the local executor's that it does not run.
        let local_runs = SqlLocalRuns::new(pool.clone(), local.jobs_root(), local.job_events());
        {
            let (runs, window) = (local_runs.clone(), config.local_run_lost_after);
            lease("local-run-sweep").guard(move || runs.clone().sweep_forever(window));
        }
        let backends = match config.cluster {
            ClusterChoice::Local => Backends {
                cluster: Arc::new(local),
                serving: Arc::new(LocalServing::new(
                    &config.data_dir,
                    config.serving_python,
                    grace,
                    inherited_env.clone(),
                    machine.clone(),
                    venvs.clone(),
                )),
                notebooks: Arc::new(LocalNotebooks::new(
                    &config.data_dir,
                    config.notebook_python.clone(),
                    grace,
                    inherited_env.clone(),
                    machine.clone(),
                    venvs.clone(),
                )),
                quota: None,
                metrics_api: None,
            },
            ClusterChoice::Kube {
                access,
                serving_model_root,
                notebook_pods,
                pod_support,
            } => {
                let (client, name) = access.client().await.context(
                    "connecting to Kubernetes (KUBECONFIG, ~/.kube/config or the in-cluster \
                     service account)",
                )?;
                let kube = KubeCluster::start(
                    client,
                    name,
                    JobStore::new(pool.clone()),
                    &config.data_dir,
                    grace,
                    config.public_url.clone(),
                    (*pod_support).clone(),
                );
                tracing::info!(cluster = %kube.name(), "jobs run on Kubernetes");
                // Without Prometheus, jobs on Kubernetes are charted from the
                // cluster's metrics API (metrics-server), sampled here.
                let metrics_api = prometheus.is_none().then(|| {
                    kube.sample_metrics_api(
                        samples.clone(),
                        sample_every,
                        lease("metrics-api-sampling"),
                    )
                });
                let serving = KubeServing::new(&kube, serving_model_root);
                let notebooks =
                    KubeNotebooks::new(&kube, *notebook_pods, config.notebook_python.clone());
                let kube = Arc::new(kube);
                // Jobs that ran locally (before, or MLflow runs) stay controllable.
                let clusters = Clusters::new(
                    kube.clone(),
                    vec![Arc::new(local)],
                    JobStore::new(pool.clone()),
                );
                Backends {
                    cluster: Arc::new(clusters),
                    serving: Arc::new(serving),
                    notebooks: Arc::new(notebooks),
                    quota: Some(kube),
                    metrics_api,
                }
            }
        };
        let resource_charts = SqlResourceCharts::new(
            pool.clone(),
            samples,
            config.sample_secs,
            prometheus,
            backends.metrics_api,
            machine.limits.enforcement(),
        );
        let serving = ServingService::new(pool.clone(), backends.serving, assets.clone(), keep);
        serving
            .recover()
            .await
            .map_err(|err| anyhow::anyhow!("bringing back serving instances: {err}"))?;
        let notebooks = NotebookService::new(
            pool.clone(),
            backends.notebooks,
            assets.clone(),
            config.public_url.clone(),
            config.notebook_idle_minutes,
        );
        notebooks
            .recover()
            .await
            .map_err(|err| anyhow::anyhow!("bringing back notebooks: {err}"))?;
        {
            let (service, every) = (
                notebooks.clone(),
                Duration::from_secs(config.notebook_probe_secs.max(1).into()),
            );
            lease("notebook-culling").guard(move || service.clone().cull_forever(every));
        }
        let templates = SqlTemplates::new(pool.clone());
        templates
            .install_library()
            .await
            .map_err(|err| anyhow::anyhow!("installing the template library: {err}"))?;
        let environments = SqlEnvironments::new(pool.clone(), venvs, runs_locally);
        environments
            .install_library()
            .await
            .map_err(|err| anyhow::anyhow!("installing the shipped environments: {err}"))?;
        let accounts = SqlAccounts::new(pool.clone(), account_mail);
        let pipelines = Arc::new(SqlPipelines::new(pool.clone(), backends.cluster.clone()));
        let services = Services {
            accounts: accounts.clone(),
            members: accounts,
            access_keys: SqlAccessKeys::new(pool.clone()),
            cluster: backends.cluster,
            metrics,
            assets,
            resource_charts: Arc::new(resource_charts),
            quotas: Arc::new(SqlQuotas::new(pool.clone(), backends.quota)),
            serving: Arc::new(serving.clone()),
            notebooks: Arc::new(notebooks.clone()),
            templates: Arc::new(templates),
            environments: Arc::new(environments),
            pipelines: pipelines.clone(),
            local_runs: Arc::new(local_runs),
            secure_cookies: config.secure_cookies,
        };
        // Runs left running by a previous console carry on from here.
        {
            let (pipelines, services) = (pipelines.clone(), services.clone());
            lease("pipeline-scheduler").guard(move || pipelines.scheduler().run(services.clone()));
        }
        // Replicas share one PostgreSQL: each tells the others what it
        // changed, for their live pages. SQLite is one console's own.
        let changes = match db::Engine::of_url(&config.database_url)? {
            db::Engine::Postgres => ChangeFeed::start(pool.clone(), &holder),
            db::Engine::Sqlite => ChangeFeed::off(),
        };
        changes.relay(Kind::Jobs, services.cluster.subscribe(), |e| {
            (e.account_id, e.job)
        });
        changes.relay(Kind::Metrics, services.metrics.subscribe(), |e| {
            (e.account_id, e.job)
        });
        changes.relay(Kind::Serving, services.serving.subscribe(), |e| {
            (e.account_id, e.name)
        });
        changes.relay(Kind::Notebooks, services.notebooks.subscribe(), |e| {
            (e.account_id, e.name)
        });
        changes.relay(Kind::Pipelines, services.pipelines.subscribe(), |e| {
            (e.account_id, e.name)
        });
        {
            // A run submitted on another replica is scheduled at once when
            // this one holds the scheduler's lease.
            let (mut remote, pipelines) = (changes.subscribe(), pipelines.clone());
            tokio::spawn(async move {
                loop {
                    match remote.recv().await {
                        Ok(change) if matches!(change.kind, Kind::Pipelines | Kind::Jobs) => {
                            pipelines.wake()
                        }
                        Ok(_) | Err(RecvError::Lagged(_)) => {}
                        Err(RecvError::Closed) => return,
                    }
                }
            });
        }
        let state = AppState {
            leptos: config.site,
            services: services.clone(),
            mlflow: MlflowService::new(pool.clone()),
            serving,
            notebooks,
            changes,
        };
        Ok(Self {
            pool,
            services,
            state,
        })
    }

    /// The whole HTTP surface on this console's ports.
    pub fn router(&self) -> axum::Router {
        router(self.state.clone())
    }

    /// Serving, as the `/serve/…` endpoint reaches it (its traffic counts).
    pub fn serving(&self) -> &ServingService {
        &self.state.serving
    }

    /// Notebooks, as the proxy reaches them (and the idle check runs them).
    pub fn notebooks(&self) -> &NotebookService {
        &self.state.notebooks
    }
}
