//! The composition root: [`Console::build`] makes every port, background
//! loop and the router's state from one [`Config`]. `paddlecloud serve`,
//! every test helper and every benchmark call it, varying only the config;
//! nothing below reads the environment (the CLI turns flags and variables
//! into the config).
//!
//! `build` reads as its steps, in the order they run: the database, the
//! stores several ports share, this machine, account mail, the local
//! executor, the backends of the chosen cluster (`backends.rs`), the
//! services, the background loops, the change feed between replicas.

mod backends;
mod config;
mod shutdown;

use std::sync::Arc;
use std::time::Duration;

use crate::storage::db::Pool;
use anyhow::Context;
use app::ports::Services;
use tokio::sync::broadcast::error::RecvError;

use self::backends::Backends;
pub use self::config::{ClusterChoice, Config, Storage};
use crate::access_keys::SqlAccessKeys;
use crate::accounts::{AccountMail, SqlAccounts};
use crate::assets::objects::Objects;
use crate::assets::SqlAssets;
use crate::environments::SqlEnvironments;
use crate::experiments::SqlExperiments;
use crate::http::{router, AppState};
use crate::kubernetes::prometheus::Prometheus;
use crate::local::machine::Machine;
use crate::local::venvs::Venvs;
use crate::local::workload_host::ServerPython;
use crate::local::{LocalCluster, LocalParts};
use crate::local_runs::SqlLocalRuns;
use crate::mail::{MailChoice, Outbox, Smtp};
use crate::mlflow::tracking::MlflowService;
use crate::notebooks::{NotebookService, Renderer};
use crate::notifications::SqlNotifications;
use crate::paddleboard::SqlMetrics;
use crate::pipelines::SqlPipelines;
use crate::quota::SqlQuotas;
use crate::resources::SqlResourceCharts;
use crate::run_params::SqlRunParams;
use crate::secrets::seal::Sealer;
use crate::secrets::SqlSecrets;
use crate::serving::ServingService;
use crate::storage::changes::{ChangeFeed, Kind};
use crate::storage::db;
use crate::storage::jobs::JobStore;
use crate::storage::lease::{self, Lease};
use crate::storage::samples::ResourceStore;
use crate::telemetry::{Pulse, Telemetry};
use crate::templates::SqlTemplates;

/// The built console: its ports and what the router serves them with.
pub struct Console {
    /// The database every port uses.
    pub pool: Pool,
    /// The ports.
    pub services: Services,
    /// The router's state (the ports, the site settings, MLflow, serving).
    pub state: AppState,
    /// What [`Console::shut_down`] ends.
    shutdown: Arc<shutdown::Shutdown>,
}

impl Console {
    /// Connects to the database and the cluster, makes every port, brings
    /// back what a previous process left running (local jobs are marked
    /// failed, serving instances restarted) and starts the background
    /// loops (resource sampling and pruning, traffic, cluster watches).
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let base = Base::open(&config).await?;
        let stores = Stores::open(&base, &config).await?;
        let host = Host::detect(&config)?;
        let account_mail = account_mail(&config)?;
        let local = start_local_executor(&base, &config, &stores, &host).await?;
        let prometheus = prometheus(&config)?;
        let local_runs = local_runs(&base, &local, config.local_run_lost_after);
        let backends = Backends::connect(
            &base,
            &config,
            &stores,
            &host,
            local.clone(),
            prometheus.is_none(),
        )
        .await?;
        let shutdown = shutdown::Shutdown {
            loops: base.loops.clone(),
            local,
            notebooks: backends.notebooks.clone(),
            serving: backends.serving.clone(),
        };
        let resource_charts = SqlResourceCharts::new(
            base.pool.clone(),
            stores.samples.clone(),
            config.sample_secs,
            prometheus,
            backends.metrics_api.clone(),
            host.machine.limits.enforcement(),
        );
        let serving = recover_serving(&base, &config, &stores, &backends).await?;
        let notebooks = recover_notebooks(&base, &config, &stores, &backends, &host).await?;
        let catalogs = Catalogs::install(&base, &config, &host).await?;
        let mailer = account_mail.mailer.clone();
        let accounts = SqlAccounts::new(base.pool.clone(), account_mail);
        let pipelines = Arc::new(SqlPipelines::new(
            base.pool.clone(),
            backends.cluster.clone(),
        ));
        let experiments = Arc::new(SqlExperiments::new(
            base.pool.clone(),
            backends.cluster.clone(),
        ));
        let schedules = Arc::new(crate::schedules::SqlSchedules::new(base.pool.clone()));
        let notifications = Arc::new(SqlNotifications::new(
            base.pool.clone(),
            stores.sealer.clone(),
        ));
        let sealed = notifications
            .seal_stored_secrets()
            .await
            .map_err(|e| anyhow::anyhow!("sealing stored webhook secrets: {e}"))?;
        if sealed > 0 {
            tracing::info!(
                count = sealed,
                "webhook secrets stored in the clear are sealed now"
            );
        }
        let alerts = Arc::new(crate::alerts::SqlAlerts::new(base.pool.clone()));
        let services = Services {
            accounts: accounts.clone(),
            members: accounts,
            access_keys: SqlAccessKeys::new(base.pool.clone()),
            cluster: backends.cluster,
            metrics: stores.metrics,
            assets: stores.assets,
            resource_charts: Arc::new(resource_charts),
            quotas: Arc::new(SqlQuotas::new(base.pool.clone(), backends.quota)),
            serving: Arc::new(serving.clone()),
            notebooks: Arc::new(notebooks.clone()),
            notebook_runs: Arc::new(notebooks.clone()),
            templates: Arc::new(catalogs.templates),
            environments: Arc::new(catalogs.environments),
            pipelines: pipelines.clone(),
            experiments: experiments.clone(),
            local_runs: Arc::new(local_runs),
            run_params: Arc::new(SqlRunParams::new(base.pool.clone())),
            schedules: schedules.clone(),
            notifications: notifications.clone(),
            alerts: alerts.clone(),
            watchdog: Arc::new(crate::stalls::SqlWatchdog::new(base.pool.clone())),
            secrets: stores.secrets.clone(),
            secure_cookies: config.secure_cookies,
            sign_in: app::models::sign_in::SignInOptions {
                password: config.password_sign_in,
                single_sign_on: config.oidc.as_ref().map(|o| o.label.clone()),
                directory: config.ldap.as_ref().map(|l| l.label.clone()),
            },
            directory: config.ldap.clone().map(|settings| {
                Arc::new(crate::accounts::ldap::Ldap::new(settings))
                    as Arc<dyn app::ports::Directory>
            }),
        };
        schedule_pipelines(&base, &pipelines, &services);
        control_experiments(&base, &experiments, &services);
        start_schedules(&base, &schedules, &services);
        start_notifier(&base, &config, &notifications, mailer, &services);
        start_alerts(&base, &alerts, &services);
        start_stall_watch(&base, &config, &services);
        let changes = relay_changes(&base, &config, &services, pipelines, experiments)?;
        let oidc = single_sign_on(&config, &stores.sealer)?;
        let state = AppState {
            leptos: config.site,
            services: services.clone(),
            mlflow: MlflowService::new(base.pool.clone()),
            serving,
            notebooks,
            changes,
            telemetry: base.telemetry.clone(),
            oidc,
        };
        Ok(Self {
            pool: base.pool,
            services,
            state,
            shutdown: Arc::new(shutdown),
        })
    }

    /// Stops what this console runs before its process ends (see
    /// `console/shutdown.rs`): its background loops, and on this machine
    /// the replicas of local jobs, notebook servers and serving replicas.
    pub async fn shut_down(&self) {
        self.shutdown.run().await;
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

/// The database, this process as a holder of leases, and what every later
/// step takes from the config.
struct Base {
    /// The database every port uses.
    pool: Pool,
    /// This process among the replicas sharing the database.
    holder: String,
    /// How long a lease holds without renewal.
    lease_ttl: Duration,
    /// What a stopped replica gets between SIGTERM and SIGKILL.
    grace: Duration,
    /// Between samples of what replicas use.
    sample_every: Duration,
    /// What local replicas inherit of the console's environment.
    inherited_env: Arc<[(String, String)]>,
    /// The loops guarded by a lease, ended when the console stops.
    loops: shutdown::Loops,
    /// The console's own metrics (`/metrics`).
    telemetry: Arc<Telemetry>,
}

impl Base {
    /// Connects to the database.
    async fn open(config: &Config) -> anyhow::Result<Self> {
        let pool = db::connect(&config.database_url).await?;
        tracing::info!(database = %db::redact(&config.database_url), "database ready");
        Ok(Self {
            holder: lease::holder_id(),
            lease_ttl: config.lease_ttl,
            grace: config.stop_grace,
            sample_every: Duration::from_secs(config.sample_secs.into()),
            inherited_env: config.inherited_env.as_slice().into(),
            loops: shutdown::Loops::default(),
            telemetry: Arc::new(Telemetry::new(
                pool.clone(),
                config.metrics_token.as_deref(),
            )),
            pool,
        })
    }

    /// A background loop's lease: loops that act for every replica run in
    /// the one holding their lease.
    fn lease(&self, name: &str) -> Lease {
        Lease::new(self.pool.clone(), name, &self.holder, self.lease_ttl)
    }

    /// Runs `start()`'s loop in the replica holding lease `name` (see
    /// [`Lease::guard`]), ended when the console stops.
    /// The loop gets its pulse (`/metrics` shows whether it runs here and
    /// when it last made a pass).
    fn guard<F, Fut>(&self, name: &str, start: F)
    where
        F: Fn(Pulse) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let lease = self.lease(name);
        let pulse = self.telemetry.pulse(name);
        let start = Arc::new(start);
        let task = lease.clone().guard(move || {
            let (start, pulse) = (start.clone(), pulse.clone());
            async move {
                let _running = pulse.running();
                start(pulse).await;
            }
        });
        self.loops.add(lease, task.abort_handle());
    }
}

/// What several ports share: resource samples, metric points, datasets and
/// models with their files.
struct Stores {
    /// Resource samples (pruned by a background loop).
    samples: Arc<ResourceStore>,
    /// PaddleBoard's points.
    metrics: Arc<SqlMetrics>,
    /// Datasets and models, their files in the object store.
    assets: Arc<SqlAssets>,
    /// The object store (notebook versions keep their files there too).
    objects: Objects,
    /// The account's secrets, sealed; workloads' launches read them.
    secrets: Arc<SqlSecrets>,
    /// The key secrets, webhook secrets and sign-ins are sealed with.
    sealer: Arc<Sealer>,
}

impl Stores {
    /// Opens them, moving metric points of old rows into blocks, and starts
    /// the pruning of old samples.
    async fn open(base: &Base, config: &Config) -> anyhow::Result<Self> {
        let samples = Arc::new(ResourceStore::new(base.pool.clone()));
        {
            let (samples, days) = (samples.clone(), config.resource_keep_days);
            base.guard("resource-pruning", move |_| {
                SqlResourceCharts::prune_forever(samples.clone(), days)
            });
        }
        let metrics = Arc::new(SqlMetrics::new(
            base.pool.clone(),
            config.metrics_cache_points,
        ));
        let moved = metrics
            .convert_row_points()
            .await
            .map_err(|e| anyhow::anyhow!("moving metric points into blocks: {e}"))?;
        if moved > 0 {
            tracing::info!(points = moved, "metric points moved into blocks");
        }
        let objects = object_store(config)?;
        let assets = Arc::new(SqlAssets::new(
            base.pool.clone(),
            objects.clone(),
            config.data_dir.join("dataset-cache"),
        ));
        let sealer = Arc::new(Sealer::from_file(&config.secrets_key_file)?);
        Ok(Self {
            samples,
            metrics,
            assets,
            objects,
            secrets: SqlSecrets::new(base.pool.clone(), sealer.clone()),
            sealer,
        })
    }
}

/// Where dataset and model files go: the store the config opened, or the
/// folder or S3 bucket it names.
fn object_store(config: &Config) -> anyhow::Result<Objects> {
    Ok(match &config.storage {
        Storage::Opened(objects) => objects.clone(),
        Storage::Setting { url, aws_env } => {
            Objects::from_setting_in(url, config.max_upload_bytes, aws_env.clone())
                .with_context(|| format!("opening the file storage {url}"))?
        }
    })
}

/// This machine, as local replicas and environments' builds use it.
struct Host {
    /// Its room, queue and limits.
    machine: Arc<Machine>,
    /// Environments' virtualenvs built on it.
    venvs: Arc<Venvs>,
}

impl Host {
    /// Detects the machine's room (unless the config sets it).
    fn detect(config: &Config) -> anyhow::Result<Self> {
        Ok(Self {
            machine: Machine::detect(
                &config.local_capacity,
                config.local_limits,
                config.preemption_grace,
            )?,
            venvs: Venvs::new(
                config.environments_dir.clone(),
                config.environment_python.clone(),
            ),
        })
    }
}

/// Account mail (confirmation, resets, invitations): to the outbox folder
/// or an SMTP server, with links to the console's public URL.
fn account_mail(config: &Config) -> anyhow::Result<AccountMail> {
    let from = crate::mail::sender(&config.mail_from)?;
    let mailer: Arc<dyn app::ports::Mailer> = match &config.mail {
        MailChoice::Outbox(folder) => Arc::new(
            Outbox::new(folder.clone(), from)
                .with_context(|| format!("making the mail outbox {}", folder.display()))?,
        ),
        MailChoice::Smtp(url) => Arc::new(Smtp::new(url, from)?),
    };
    Ok(AccountMail {
        mailer,
        public_url: config.link_base(),
        require_confirmation: config.require_email_confirmation,
    })
}

/// The local executor, whichever cluster runs new jobs: it keeps local
/// runs and the jobs that ran here before.
async fn start_local_executor(
    base: &Base,
    config: &Config,
    stores: &Stores,
    host: &Host,
) -> anyhow::Result<LocalCluster> {
    LocalCluster::start(LocalParts {
        store: JobStore::new(base.pool.clone()),
        data_dir: config.data_dir.clone(),
        grace: base.grace,
        console_url: config.public_url.clone(),
        metrics: stores.metrics.clone(),
        assets: stores.assets.clone(),
        secrets: stores.secrets.clone(),
        samples: stores.samples.clone(),
        sample_every: base.sample_every,
        inherited_env: base.inherited_env.clone(),
        machine: host.machine.clone(),
        venvs: host.venvs.clone(),
    })
    .await
    .map_err(|err| anyhow::anyhow!("starting the local executor: {err}"))
}

/// Single sign-on through the OpenID Connect provider `--oidc-issuer`
/// names, if one does; its sign-ins are sealed with the secrets' key.
fn single_sign_on(
    config: &Config,
    sealer: &Arc<Sealer>,
) -> anyhow::Result<Option<Arc<crate::accounts::oidc::Oidc>>> {
    let Some(settings) = config.oidc.clone() else {
        return Ok(None);
    };
    let sealer = sealer.clone();
    tracing::info!(issuer = %settings.issuer, "single sign-on through OpenID Connect");
    Ok(Some(Arc::new(crate::accounts::oidc::Oidc::new(
        settings, sealer,
    )?)))
}

/// `--prometheus-url`'s server, if one is given.
fn prometheus(config: &Config) -> anyhow::Result<Option<Prometheus>> {
    config
        .prometheus_url
        .as_deref()
        .map(Prometheus::new)
        .transpose()
        .context("--prometheus-url")
}

/// Runs reported from outside, and the sweep that marks silent ones lost.
/// Local runs are jobs of the local executor's that it does not run.
fn local_runs(base: &Base, local: &LocalCluster, lost_after: Duration) -> SqlLocalRuns {
    let local_runs = SqlLocalRuns::new(base.pool.clone(), local.jobs_root(), local.job_events());
    {
        let runs = local_runs.clone();
        base.guard("local-run-sweep", move |_| {
            runs.clone().sweep_forever(lost_after)
        });
    }
    local_runs
}

/// How often serving instances that follow an alias look where it points.
const ALIAS_LOOK_EVERY: Duration = Duration::from_secs(2);

/// Serving on the chosen backend, its instances brought back.
async fn recover_serving(
    base: &Base,
    config: &Config,
    stores: &Stores,
    backends: &Backends,
) -> anyhow::Result<ServingService> {
    let keep = Duration::from_secs(u64::from(config.resource_keep_days) * 86_400);
    let serving = ServingService::new(
        base.pool.clone(),
        backends.serving.clone(),
        stores.assets.clone(),
        stores.secrets.clone(),
        keep,
    );
    serving
        .recover()
        .await
        .map_err(|err| anyhow::anyhow!("bringing back serving instances: {err}"))?;
    // On every console: one whose backend does not run an instance leaves
    // it to the one that does.
    serving.follow_aliases(ALIAS_LOOK_EVERY);
    Ok(serving)
}

/// Notebooks on the chosen backend, brought back, and the culling of idle
/// ones.
async fn recover_notebooks(
    base: &Base,
    config: &Config,
    stores: &Stores,
    backends: &Backends,
    host: &Host,
) -> anyhow::Result<NotebookService> {
    // Versions are rendered here by JupyterLab's nbconvert: the one local
    // notebooks run with, or (notebooks in pods) the console's own build.
    let given = config
        .notebook_python
        .clone()
        .filter(|_| backends.notebooks.sees_local_files());
    let renderer = Renderer::new(
        ServerPython::given_or_built(
            given,
            "JupyterLab",
            vec![crate::backend::notebooks::JUPYTERLAB.to_owned()],
        ),
        host.venvs.clone(),
    );
    let notebooks = NotebookService::new(
        base.pool.clone(),
        backends.notebooks.clone(),
        stores.assets.clone(),
        stores.secrets.clone(),
        config.public_url.clone(),
        config.notebook_idle_minutes,
        stores.objects.clone(),
        renderer,
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
        base.guard("notebook-culling", move |_| {
            service.clone().cull_forever(every)
        });
    }
    Ok(notebooks)
}

/// Templates and environments, with what ships installed.
struct Catalogs {
    /// Experiment templates.
    templates: SqlTemplates,
    /// Environment profiles, built on this machine.
    environments: SqlEnvironments,
}

impl Catalogs {
    /// Opens both and installs the shipped library of each.
    async fn install(base: &Base, config: &Config, host: &Host) -> anyhow::Result<Self> {
        let templates = SqlTemplates::new(base.pool.clone());
        templates
            .install_library()
            .await
            .map_err(|err| anyhow::anyhow!("installing the template library: {err}"))?;
        let runs_locally = matches!(config.cluster, ClusterChoice::Local);
        let environments =
            SqlEnvironments::new(base.pool.clone(), host.venvs.clone(), runs_locally);
        environments
            .install_library()
            .await
            .map_err(|err| anyhow::anyhow!("installing the shipped environments: {err}"))?;
        Ok(Self {
            templates,
            environments,
        })
    }
}

/// The pipeline scheduler, in the replica holding its lease: runs left
/// running by a previous console carry on from here.
fn schedule_pipelines(base: &Base, pipelines: &Arc<SqlPipelines>, services: &Services) {
    let (pipelines, services) = (pipelines.clone(), services.clone());
    base.guard("pipeline-scheduler", move |pulse| {
        pipelines.scheduler().run(services.clone(), pulse)
    });
}

/// The experiment controller, in the replica holding its lease:
/// experiments left running by a previous console carry on from here.
fn control_experiments(base: &Base, experiments: &Arc<SqlExperiments>, services: &Services) {
    let (experiments, services) = (experiments.clone(), services.clone());
    base.guard("experiment-controller", move |pulse| {
        experiments.controller().run(services.clone(), pulse)
    });
}

/// The schedule controller, in the replica holding its lease: ticks
/// missed while no console ran are dealt with by their `catch_up`.
fn start_schedules(
    base: &Base,
    schedules: &Arc<crate::schedules::SqlSchedules>,
    services: &Services,
) {
    let (schedules, services) = (schedules.clone(), services.clone());
    base.guard("schedule-controller", move |pulse| {
        schedules.controller().run(services.clone(), pulse)
    });
}

/// The notifier, in the replica holding its lease: what happened while no
/// console ran is read from the cursor on, and deliveries left pending are
/// tried.
fn start_notifier(
    base: &Base,
    config: &Config,
    notifications: &Arc<SqlNotifications>,
    mailer: Arc<dyn app::ports::Mailer>,
    services: &Services,
) {
    let (notifications, services) = (notifications.clone(), services.clone());
    let (console_url, retry) = (config.link_base(), config.notify_retry_base);
    base.guard("notifier", move |pulse| {
        notifications
            .notifier(mailer.clone(), console_url.clone(), retry)
            .run(services.clone(), pulse)
    });
}

/// The alert controller, in the replica holding its lease.
fn start_alerts(base: &Base, alerts: &Arc<crate::alerts::SqlAlerts>, services: &Services) {
    let (alerts, services) = (alerts.clone(), services.clone());
    base.guard("alert-controller", move |pulse| {
        alerts.controller().run(services.clone(), pulse)
    });
}

/// The stall watcher, in the replica holding its lease (none when
/// `--stall-minutes 0`).
fn start_stall_watch(base: &Base, config: &Config, services: &Services) {
    let Some(after) = config.stall_after else {
        return;
    };
    let (pool, services) = (base.pool.clone(), services.clone());
    base.guard("stall-watch", move |pulse| {
        crate::stalls::StallWatch::new(pool.clone(), after).run(services.clone(), pulse)
    });
}

/// What this replica changed, told to the others for their live pages, and
/// what they changed, told to this one's: replicas share one PostgreSQL;
/// SQLite is one console's own.
fn relay_changes(
    base: &Base,
    config: &Config,
    services: &Services,
    pipelines: Arc<SqlPipelines>,
    experiments: Arc<SqlExperiments>,
) -> anyhow::Result<ChangeFeed> {
    let changes = match db::Engine::of_url(&config.database_url)? {
        db::Engine::Postgres => ChangeFeed::start(base.pool.clone(), &base.holder),
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
    changes.relay(Kind::Experiments, services.experiments.subscribe(), |e| {
        (e.account_id, e.name)
    });
    // A run or an experiment changed on another replica is moved on at
    // once when this one holds the controller's lease.
    let mut remote = changes.subscribe();
    tokio::spawn(async move {
        loop {
            match remote.recv().await {
                Ok(change) if change.kind == Kind::Jobs => {
                    pipelines.wake();
                    experiments.wake();
                }
                Ok(change) if change.kind == Kind::Pipelines => pipelines.wake(),
                Ok(change) if change.kind == Kind::Experiments => experiments.wake(),
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    });
    Ok(changes)
}
