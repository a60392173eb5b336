//! The local executor: the embedded default [`Cluster`]. Every replica of a
//! job is a real process on this machine, in its own process group, with the
//! environment PaddlePaddle's distributed launcher expects, so a real
//! parameter-server program runs here as it would on the cluster. Serving
//! instances run here too ([`serving`], with its autoscaler).
//!
//! Like a cluster's scheduler, it runs only what the machine has room for
//! ([`machine`]: the capacity learnt at start, a first-come-first-served
//! queue, all of a job's replicas at once, GPUs of their own, and memory
//! limits held by a cgroup or by the sampler).

mod autoscale;
pub mod capacity;
pub mod limits;
pub mod machine;
pub mod notebooks;
pub(crate) mod process;
mod recovery;
pub mod sampler;
mod sampling;
pub mod scheduler;
pub mod secret_files;
pub mod server_process;
pub mod serving;
pub mod stack_dump;
mod supervisor;
pub mod venvs;
pub mod workload_host;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::error::AppError;
use app::models::{
    Account, ClusterCapacity, Job, JobHistoryEntry, JobPage, JobQuery, JobSpec, LogRequest, Me,
    Pod, PodPhase, QueueView, StackDump,
};
use app::ports::{Assets, Cluster, JobEvent, LogStream, Metrics};
use async_trait::async_trait;
use tokio::sync::{broadcast, watch};

use self::machine::Machine;
use self::scheduler::Ask;
use self::venvs::Venvs;
use crate::storage::jobs::{JobStore, StoredJob};
use crate::storage::logfile;
use crate::storage::samples::ResourceStore;

/// The name local runs show in the "where it ran" column.
pub const LOCAL: &str = "local";

/// How many of a log's last lines are read for its newest sign of life
/// (past a stack dump the console wrote there).
const LIFE_LINES: usize = 512;

/// Runs jobs as local processes under `<data-dir>/jobs/<account>/<job>/`.
#[derive(Clone)]
pub struct LocalCluster {
    inner: Arc<Inner>,
}

/// What the local executor is built from (see `console::build`).
pub struct LocalParts {
    /// Where jobs are recorded.
    pub store: JobStore,
    /// Jobs' folders go under `<data_dir>/jobs`.
    pub data_dir: PathBuf,
    /// Seconds a stopped replica gets between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// The console's address as jobs reach it (`PADDLECLOUD_SERVER`), if
    /// it listens on one.
    pub console_url: Option<String>,
    /// Where scalars from the TensorBoard/VisualDL files jobs write go.
    pub metrics: Arc<dyn Metrics>,
    /// Where the datasets jobs read are.
    pub assets: Arc<dyn Assets>,
    /// Where what replicas use goes...
    pub samples: Arc<ResourceStore>,
    /// ...sampled this often.
    pub sample_every: Duration,
    /// What replicas inherit of the console's environment (`PATH`,
    /// `HOME`, …); nothing else of it reaches them.
    pub inherited_env: Arc<[(String, String)]>,
    /// This machine's room, queue and limits, shared with local serving.
    pub machine: Arc<Machine>,
    /// The virtualenvs of environments jobs run in.
    pub venvs: Arc<Venvs>,
    /// The account's secrets jobs use.
    pub secrets: Arc<crate::secrets::SqlSecrets>,
}

struct Inner {
    store: JobStore,
    root: PathBuf,
    grace: Duration,
    events: broadcast::Sender<JobEvent>,
    /// Controls of the jobs whose supervisors run, by job id.
    controls: Mutex<HashMap<i64, Arc<Control>>>,
    /// Per running pod: becomes true once its log is complete.
    log_done: Mutex<HashMap<(i64, String), watch::Receiver<bool>>>,
    /// The console's address as jobs reach it (`PADDLECLOUD_SERVER`).
    console_url: Option<String>,
    /// Where scalars from the TensorBoard/VisualDL files jobs write go.
    metrics: Arc<dyn Metrics>,
    /// Where the datasets jobs read are.
    assets: Arc<dyn Assets>,
    /// Where what replicas use goes, and how often it is sampled.
    sampler: (Arc<ResourceStore>, Duration),
    /// What replicas inherit of the console's environment.
    inherited_env: Arc<[(String, String)]>,
    /// This machine's room, queue and limits.
    machine: Arc<Machine>,
    /// The virtualenvs of environments jobs run in.
    venvs: Arc<Venvs>,
    /// The account's secrets jobs use.
    secrets: Arc<crate::secrets::SqlSecrets>,
    /// Where replicas' secret files are (`<data_dir>/secret-files`).
    secret_files: PathBuf,
    /// Set once the console stops ([`LocalCluster::shut_down`]): no job
    /// starts any more, and a supervisor told to stop ends its job as the
    /// console's stop, not a user's.
    stopping: std::sync::atomic::AtomicBool,
}

impl LocalCluster {
    /// Stops for the console's stop: jobs submitted from now on wait
    /// (Pending) for the next start; running ones have their replicas
    /// stopped (SIGTERM, SIGKILL after the grace period) and fail saying
    /// so; queued ones stay queued for the next start. Returns once every
    /// supervisor has written its job's end.
    pub async fn shut_down(&self) {
        let controls: Vec<Arc<Control>> = {
            // Under the lock a launch inserts its control with: a job is
            // either among these or sees the flag.
            let controls = self.inner.controls.lock().expect("controls lock");
            self.inner
                .stopping
                .store(true, std::sync::atomic::Ordering::SeqCst);
            controls.values().cloned().collect()
        };
        for control in &controls {
            let _ = control.stop.send(true);
        }
        for control in controls {
            let mut done = control.done.clone();
            let _ = done.wait_for(|d| *d).await;
        }
    }

    /// The change events of this backend's jobs, for others that record
    /// jobs on it (local runs) to speak on.
    pub fn job_events(&self) -> broadcast::Sender<JobEvent> {
        self.inner.events.clone()
    }

    /// Where its jobs' folders are (`<root>/<account>/<job>`).
    pub fn jobs_root(&self) -> PathBuf {
        self.inner.root.clone()
    }

    /// Starts the executor; jobs left Running by a previous console process
    /// are marked failed and any of their processes still alive are killed.
    pub async fn start(parts: LocalParts) -> Result<Self, AppError> {
        let (events, _) = broadcast::channel(1024);
        let cluster = Self {
            inner: Arc::new(Inner {
                store: parts.store,
                root: parts.data_dir.join("jobs"),
                grace: parts.grace,
                events,
                controls: Mutex::new(HashMap::new()),
                log_done: Mutex::new(HashMap::new()),
                console_url: parts.console_url,
                metrics: parts.metrics,
                assets: parts.assets,
                secrets: parts.secrets,
                secret_files: parts.data_dir.join("secret-files"),
                sampler: (parts.samples, parts.sample_every),
                inherited_env: parts.inherited_env,
                machine: parts.machine,
                venvs: parts.venvs,
                stopping: Default::default(),
            }),
        };
        secret_files::SecretFiles::clear_all(&cluster.inner.secret_files);
        for queued in recovery::recover(&cluster.inner.store).await? {
            cluster.requeue(queued).await?;
        }
        Ok(cluster)
    }

    /// The local folders of the datasets and model versions a job reads.
    async fn inputs(&self, by: &Me, spec: &JobSpec) -> Result<supervisor::Inputs, AppError> {
        let assets = &self.inner.assets;
        let mut folders = Vec::new();
        for input in app::models::job_inputs(&by.account.name, &spec.datasets, &spec.models)? {
            let (field, kind) = match input.asset.kind {
                app::models::AssetKind::Model => ("models", "model"),
                app::models::AssetKind::Dataset => ("datasets", "dataset"),
            };
            let slot = app::ports::Slot::of(input.asset.kind, input.version)?;
            let dir = assets
                .local_dir(by, &input.asset, slot)
                .await
                .map_err(|err| match err {
                    AppError::NotFound { .. } => AppError::invalid(
                        field,
                        format!(
                            "There is no {kind} “{}/{}”{} you can read.",
                            input.asset.owner,
                            input.asset.name,
                            input
                                .version
                                .map(|v| format!(" version {v}"))
                                .unwrap_or_default()
                        ),
                    ),
                    other => other,
                })?;
            folders.push((input, dir));
        }
        let what = format!("job {}", spec.name);
        let secrets = self
            .inner
            .secrets
            .reveal(&by.account, &spec.secrets, &by.email, &what)
            .await?;
        Ok(supervisor::Inputs { folders, secrets })
    }

    fn job_dir(&self, account: &Account, job: &str) -> PathBuf {
        self.inner.root.join(&account.name).join(job)
    }

    /// Hands a recorded job to its supervisor, which queues it for the
    /// machine's room and then runs it.
    async fn launch(
        &self,
        stored: StoredJob,
        token: String,
        inputs: supervisor::Inputs,
        ask: Ask,
    ) -> Result<(), AppError> {
        if self.inner.is_stopping() {
            return self.leave_queued(&stored).await;
        }
        let account = self.inner.store.account_of(stored.account_id).await?;
        let spec = stored.job.spec.clone();
        let dir = self.job_dir(&account, &spec.name);
        // A deleted job of the same name may have left files behind.
        let _ = tokio::fs::remove_dir_all(&dir).await;
        if let Err(err) = tokio::fs::create_dir_all(dir.join("logs")).await {
            tracing::error!(error = %err, dir = %dir.display(), "creating a job directory");
            self.inner
                .store
                .set_status(
                    stored.id,
                    app::models::JobStatus::Failed,
                    "Could not create the job's directory.",
                )
                .await?;
            return Err(AppError::Internal);
        }
        let (stop, stop_rx) = watch::channel(false);
        let (done_tx, done) = watch::channel(false);
        tokio::spawn(crate::metric_files::watch::watch_job(
            self.inner.metrics.clone(),
            account.clone(),
            spec.name.clone(),
            dir.clone(),
            done.clone(),
        ));
        {
            let mut controls = self.inner.controls.lock().expect("controls lock");
            if self.inner.is_stopping() {
                drop(controls);
                return self.leave_queued(&stored).await;
            }
            controls.insert(stored.id, Arc::new(Control { stop, done }));
        }
        let run = supervisor::SupervisedJob {
            job_id: stored.id,
            account_id: account.id,
            account: account.name.clone(),
            spec,
            dir,
            token,
            console_url: self.inner.console_url.clone(),
            inputs,
            ask,
        };
        tokio::spawn(supervisor::supervise(
            self.inner.clone(),
            run,
            stop_rx,
            done_tx,
        ));
        self.inner.emit(account.id, &stored.job.name);
        Ok(())
    }

    /// Leaves a job submitted while the console stops Pending, for the
    /// next start to queue (as one that waited for room).
    async fn leave_queued(&self, stored: &StoredJob) -> Result<(), AppError> {
        self.inner
            .store
            .set_status(
                stored.id,
                app::models::JobStatus::Pending,
                "Queued again when the console is back (it was stopping when this job came).",
            )
            .await?;
        self.inner.emit(stored.account_id, &stored.job.name);
        Ok(())
    }

    /// Queues again a job that was waiting for room when the console
    /// stopped, as the user who submitted it; one that cannot run any more
    /// (its submitter, a dataset or a model gone, the machine now too small) fails
    /// with the reason.
    async fn requeue(&self, stored: StoredJob) -> Result<(), AppError> {
        let store = &self.inner.store;
        let spec = stored.job.spec.clone();
        let why_not = async {
            let Some(me) = store.submitter(stored.id).await? else {
                return Ok(Err("its submitter no longer exists".to_owned()));
            };
            let ask = match self.inner.machine.job_ask(&spec) {
                Ok(ask) => ask.owned_by(&me.account.name, &spec.name),
                Err(err) => return Ok(Err(err.to_string())),
            };
            match self.inputs(&me, &spec).await {
                Ok(inputs) => Ok(Ok((ask, inputs))),
                Err(AppError::Internal) => Err(AppError::Internal),
                Err(err) => Ok(Err(err.to_string())),
            }
        };
        match why_not.await? {
            Ok((ask, inputs)) => {
                let token = store.reissue_token(stored.id).await?;
                tracing::info!(job = %spec.name, account_id = stored.account_id, "queued again after a restart");
                self.launch(stored, token, inputs, ask).await
            }
            Err(why) => {
                let message = format!(
                    "It waited for room when the console restarted, and cannot run now: {why}"
                );
                store
                    .set_status(stored.id, app::models::JobStatus::Failed, &message)
                    .await
            }
        }
    }
}

/// How a request reaches a running job's supervisor.
struct Control {
    /// Set to true to stop the job.
    stop: watch::Sender<bool>,
    /// Becomes true once every replica has ended and the record is final.
    done: watch::Receiver<bool>,
}

impl Inner {
    /// Whether the console is stopping (see [`LocalCluster::shut_down`]).
    fn is_stopping(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// When the log of a pod with no supervisor here (yet) is complete:
    /// once its job is no longer active. A local run's ends when its client
    /// reports the end (or it is lost); a job still waiting for room or its
    /// environment has no supervisor for its pods yet, and a follower waits
    /// for what they will write, as it would on a running job's.
    fn log_end_of_other(&self, stored: &StoredJob) -> watch::Receiver<bool> {
        let reported = stored.job.status.is_active();
        let (tx, rx) = watch::channel(!reported);
        if reported {
            let (store, id) = (self.store.clone(), stored.id);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let active = store.by_id(id).await.map(|j| j.job.status.is_active());
                    // Ended, deleted, or nobody follows any more.
                    if !matches!(active, Ok(true)) || tx.is_closed() {
                        let _ = tx.send(true);
                        return;
                    }
                }
            });
        }
        rx
    }

    fn emit(&self, account_id: i64, job: &str) {
        // Nobody listening is fine: live views subscribe when they open.
        let _ = self.events.send(JobEvent {
            account_id,
            job: job.to_owned(),
        });
    }
}

#[async_trait]
impl Cluster for LocalCluster {
    fn name(&self) -> String {
        LOCAL.to_owned()
    }

    async fn submit(&self, by: &Me, spec: JobSpec) -> Result<Job, AppError> {
        spec.validate()?;
        let ask = self.inner.machine.job_ask(&spec)?;
        let ask = ask.owned_by(&by.account.name, &spec.name);
        let inputs = self.inputs(by, &spec).await?;
        let (stored, token) = self.inner.store.insert(by, &spec, LOCAL).await?;
        let job = stored.job.clone();
        self.launch(stored, token, inputs, ask).await?;
        Ok(job)
    }

    async fn list_jobs(&self, account: &Account, query: &JobQuery) -> Result<JobPage, AppError> {
        self.inner.store.list(account.id, query).await
    }

    async fn job(&self, account: &Account, name: &str) -> Result<Job, AppError> {
        Ok(self.inner.store.get(account.id, name).await?.job)
    }

    async fn jobs_named(&self, account: &Account, names: &[String]) -> Result<Vec<Job>, AppError> {
        self.inner.store.named(account.id, names).await
    }

    async fn stop(&self, account: &Account, name: &str) -> Result<Job, AppError> {
        let stored = self.inner.store.get(account.id, name).await?;
        let control = self
            .inner
            .controls
            .lock()
            .expect("controls lock")
            .get(&stored.id)
            .cloned();
        if let Some(control) = control {
            let _ = control.stop.send(true);
            let mut done = control.done.clone();
            // An error means the supervisor is gone, which is as good as done.
            let _ = done.wait_for(|done| *done).await;
        }
        Ok(self.inner.store.by_id(stored.id).await?.job)
    }

    async fn delete(&self, account: &Account, name: &str) -> Result<(), AppError> {
        let job = self.stop(account, name).await?;
        let stored = self.inner.store.get(account.id, &job.name).await?;
        self.inner.store.delete(stored.id).await?;
        let dir = self.job_dir(account, name);
        if let Err(err) = tokio::fs::remove_dir_all(&dir).await {
            if err.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(error = %err, dir = %dir.display(), "removing a deleted job's files");
            }
        }
        self.inner.emit(account.id, name);
        Ok(())
    }

    async fn pods(&self, account: &Account, name: &str) -> Result<Vec<Pod>, AppError> {
        self.inner.store.pods_of(account.id, name).await
    }

    async fn history(
        &self,
        account: &Account,
        name: &str,
    ) -> Result<Vec<JobHistoryEntry>, AppError> {
        self.inner.store.history_of(account.id, name).await
    }

    async fn log(
        &self,
        account: &Account,
        job: &str,
        pod: &str,
        request: LogRequest,
    ) -> Result<LogStream, AppError> {
        let (stored, _) = self.inner.store.pod_of(account.id, job, pod).await?;
        let path = logfile::log_path(&self.job_dir(account, job), pod);
        let done = self
            .inner
            .log_done
            .lock()
            .expect("log_done lock")
            .get(&(stored.id, pod.to_owned()))
            .cloned()
            .unwrap_or_else(|| self.inner.log_end_of_other(&stored));
        logfile::serve(path, request, done).await
    }

    async fn last_log_at(&self, account: &Account, name: &str) -> Result<Option<i64>, AppError> {
        let pods = self.inner.store.pods_of(account.id, name).await?;
        let dir = self.job_dir(account, name);
        let mut newest = None;
        for pod in pods {
            let path = logfile::log_path(&dir, &pod.name);
            let tail = logfile::tail(&path, LIFE_LINES).await.unwrap_or_default();
            newest = newest.max(crate::storage::log_dumps::last_life_at(&tail));
        }
        Ok(newest)
    }

    async fn stack_dump(&self, account: &Account, name: &str) -> Result<Vec<StackDump>, AppError> {
        let stored = self.inner.store.get(account.id, name).await?;
        let pods = self.inner.store.pods(stored.id).await?;
        let pids: HashMap<String, i64> = self
            .inner
            .store
            .pod_pids(stored.id)
            .await?
            .into_iter()
            .collect();
        let py_spy = self
            .inner
            .venvs
            .ready(&[stack_dump::PY_SPY.to_owned()])
            .await
            .map_err(|why| AppError::Unavailable {
                message: format!("py-spy could not be installed: {why}"),
            })?
            .join("bin/py-spy");
        let dir = self.job_dir(account, name);
        let mut dumps = Vec::with_capacity(pods.len());
        for pod in pods {
            let pid = pids.get(&pod.name).and_then(|p| i32::try_from(*p).ok());
            let dump = match (pod.phase, pid) {
                (PodPhase::Running, Some(pid)) => {
                    let log = logfile::log_path(&dir, &pod.name);
                    stack_dump::dump_replica(&py_spy, &pod.name, pid, log).await
                }
                (phase, _) => StackDump {
                    pod: pod.name.clone(),
                    text: String::new(),
                    error: Some(format!("not running ({})", phase.as_str())),
                },
            };
            dumps.push(dump);
        }
        tracing::info!(account = %account.name, job = name, "stack dump taken");
        Ok(dumps)
    }

    fn subscribe(&self) -> broadcast::Receiver<JobEvent> {
        self.inner.events.subscribe()
    }

    async fn capacity(&self) -> Result<ClusterCapacity, AppError> {
        Ok(self.inner.machine.report(LOCAL))
    }

    async fn queue(&self, account: &Account) -> Result<QueueView, AppError> {
        Ok(self.inner.machine.scheduler.view(LOCAL, &account.name))
    }
}
