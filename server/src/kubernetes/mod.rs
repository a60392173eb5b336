//! The Kubernetes backend: the [`Cluster`] port on any cluster, through its
//! API with kube-rs (no operator). An account's jobs live in its namespace;
//! a job is the objects of [`objects`]; its status comes from a watch on the
//! console's pods ([`watch`]), written into the same job store the local
//! executor uses, so the table, filters and pages work alike. Logs stream
//! from `pods/log` while a pod exists and are collected into files when it
//! ends, so they outlive the pod.

pub mod capacity;
pub mod environment;
pub mod errors;
pub mod inputs;
pub mod metrics_api;
pub mod notebooks;
pub mod objects;
pub mod pods;
mod preemption;
pub mod priority;
pub mod prometheus;
mod quota;
pub mod sdk;
pub mod secrets;
pub mod serving;
mod stack_dump;
mod time_limits;
mod watch;
pub mod workload_pod;

pub use quota::QUOTA_NAME;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::error::AppError;
use app::models::queue_view::{Holder, QueueFacts, Wanting};
use app::models::{
    Account, ClusterCapacity, Job, JobHistoryEntry, JobPage, JobQuery, JobSpec, JobStatus,
    LimitEnforcement, LogRequest, Me, Pod, PodPhase, QueueView, StackDump, WorkKind,
};
use app::ports::{Cluster, JobEvent, LogStream};
use async_trait::async_trait;
use futures_util::{AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job as KubeJob;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod as KubePod, Secret, Service};
use kube::api::{DeleteParams, ListParams, LogParams, PostParams, PropagationPolicy};
use kube::{Api, Client};
use tokio::sync::broadcast;

use crate::storage::jobs::{JobStore, PodUpdate};
use crate::storage::logfile;
use crate::time::now_ms;
use errors::{from_kube, is_conflict, is_not_found};
use objects::{selector, JobContext, CONSOLE, CONTAINER, JOB_ID, MANAGED_BY, REPLICA};

/// How often the API server is asked whether it is there.
const PROBE_EVERY: Duration = Duration::from_secs(3);
/// Every how many probes preemption is tried again for jobs the scheduler
/// could not place (every 15 s): running work may have changed since.
const PREEMPT_AGAIN_EVERY: u64 = 5;
/// How many of a running pod's last log lines are read for its newest
/// sign of life (past a stack dump written there).
const LIFE_LINES: i64 = 512;

/// How long the probe waits for an answer: a page shows "unreachable"
/// within this of the cluster going away.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// How the console reaches the cluster's API server.
#[derive(Clone)]
pub enum KubeAccess {
    /// A kubeconfig's current context (what `KUBECONFIG` or
    /// `~/.kube/config` hold); the cluster is named after the context's.
    Kubeconfig(Box<kube::config::Kubeconfig>),
    /// The service account of the pod the console runs in.
    InCluster,
    /// A client made elsewhere, and the name of its cluster.
    Client {
        /// The client.
        client: Client,
        /// The name jobs show in the "where it ran" column.
        name: String,
    },
}

impl KubeAccess {
    /// The client and the cluster's name.
    pub async fn client(self) -> anyhow::Result<(Client, String)> {
        match self {
            Self::Client { client, name } => Ok((client, name)),
            Self::InCluster => Ok((
                Client::try_from(kube::Config::incluster()?)?,
                "kubernetes".to_owned(),
            )),
            Self::Kubeconfig(kubeconfig) => {
                let name = kubeconfig
                    .current_context
                    .as_ref()
                    .and_then(|current| kubeconfig.contexts.iter().find(|c| &c.name == current))
                    .and_then(|c| c.context.as_ref())
                    .map(|c| c.cluster.clone())
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| "kubernetes".to_owned());
                let config = kube::Config::from_custom_kubeconfig(
                    *kubeconfig,
                    &kube::config::KubeConfigOptions::default(),
                )
                .await?;
                Ok((Client::try_from(config)?, name))
            }
        }
    }
}

/// Jobs on a Kubernetes cluster.
#[derive(Clone)]
pub struct KubeCluster {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    client: Client,
    store: JobStore,
    /// The cluster's name in the "where it ran" column.
    name: String,
    /// Collected logs: `<root>/<account>/<job>/logs/<pod>.log`.
    logs_root: PathBuf,
    /// Seconds between SIGTERM and SIGKILL when a replica is stopped.
    grace: Duration,
    events: broadcast::Sender<JobEvent>,
    /// The console's address as pods reach it (`PADDLECLOUD_SERVER`).
    console_url: Option<String>,
    /// `Some(why)` while the API server does not answer.
    health: Mutex<Option<String>>,
    /// Namespaces known to exist.
    namespaces: Mutex<HashSet<String>>,
    /// Jobs being finished (their outcome written, their workloads
    /// removed): one finisher per job.
    finishing: Mutex<HashSet<i64>>,
    /// The nodes' room, as last read.
    room: capacity::RoomCache,
    /// What the console's init steps need (the inputs' cache, the index).
    pub(crate) support: inputs::PodSupport,
    /// Where py-spy is built for stack dumps (the console's venvs), once
    /// the console hands them over ([`KubeCluster::build_tools_with`]).
    tools: std::sync::OnceLock<Arc<crate::local::venvs::Venvs>>,
    /// Whether the priority classes exist (made at the first submit).
    priority_classes: tokio::sync::OnceCell<bool>,
    /// What a preempted job's pods get between SIGTERM and SIGKILL
    /// (`None`: preemption is off); see [`preemption`].
    preemption: Option<Duration>,
    /// Jobs preemption stopped: their old pods, and why.
    preempted: Mutex<HashMap<i64, preemption::PreemptedJob>>,
    /// Held while preemption decides.
    preempting: tokio::sync::Mutex<()>,
    /// Waiting jobs whose pods the scheduler could not place, to try
    /// preemption for again as running work changes.
    unplaced: Mutex<HashSet<i64>>,
    /// The account's secrets jobs use.
    pub(crate) secrets: Arc<crate::secrets::SqlSecrets>,
    /// The secret values each job's logs must not show, by job id.
    masks: Mutex<HashMap<i64, logfile::Masks>>,
}

impl KubeCluster {
    /// The backend on `client`, named `name`, recording in `store`,
    /// collecting logs under `data_dir`; pods learn the console's address
    /// from `console_url`; a waiting job preempts its account's running
    /// jobs of lower priority with `preemption` as their grace (`None`:
    /// never). Starts the pod watch and the health probe.
    #[allow(clippy::too_many_arguments)] // each is one of the config's settings
    pub fn start(
        client: Client,
        name: String,
        store: JobStore,
        data_dir: &Path,
        grace: Duration,
        preemption: Option<Duration>,
        console_url: Option<String>,
        support: inputs::PodSupport,
        secrets: Arc<crate::secrets::SqlSecrets>,
    ) -> Self {
        let (events, _) = broadcast::channel(1024);
        let inner = Arc::new(Inner {
            client,
            store,
            name,
            logs_root: data_dir.join("kube-logs"),
            grace,
            events,
            console_url,
            health: Mutex::new(None),
            namespaces: Mutex::new(HashSet::new()),
            finishing: Mutex::new(HashSet::new()),
            room: Default::default(),
            support,
            tools: std::sync::OnceLock::new(),
            priority_classes: tokio::sync::OnceCell::new(),
            preemption,
            preempted: Mutex::new(HashMap::new()),
            preempting: tokio::sync::Mutex::new(()),
            unplaced: Mutex::new(HashSet::new()),
            secrets,
            masks: Mutex::new(HashMap::new()),
        });
        tokio::spawn(watch::pods(Arc::downgrade(&inner)));
        tokio::spawn(probe(Arc::downgrade(&inner)));
        Self { inner }
    }

    /// The account's secrets its workloads read (the vault it was started with).
    pub fn secrets(&self) -> Arc<crate::secrets::SqlSecrets> {
        self.inner.secrets.clone()
    }

    /// Builds the tools it copies into pods (py-spy, for stack dumps) with
    /// `venvs`, the console's builds from PyPI.
    pub fn build_tools_with(&self, venvs: Arc<crate::local::venvs::Venvs>) {
        let _ = self.inner.tools.set(venvs);
    }

    /// Samples the pods of running jobs from the cluster's metrics API
    /// (`metrics.k8s.io`) every `every` into `store` (for a console without
    /// Prometheus) while this process holds `lease`; what it finds of the
    /// API is in the returned handle.
    pub fn sample_metrics_api(
        &self,
        store: Arc<crate::storage::samples::ResourceStore>,
        every: Duration,
        lease: crate::storage::lease::Lease,
    ) -> (Arc<metrics_api::MetricsApi>, tokio::task::AbortHandle) {
        let api = Arc::new(metrics_api::MetricsApi::default());
        let (inner, seen) = (Arc::downgrade(&self.inner), api.clone());
        // Replicas sample in turn: one holds the lease, the others' charts
        // read what it stored.
        let task = lease
            .guard(move || metrics_api::sample(inner.clone(), store.clone(), every, seen.clone()));
        (api, task.abort_handle())
    }
}

impl Inner {
    fn emit(&self, account_id: i64, job: &str) {
        let _ = self.events.send(JobEvent {
            account_id,
            job: job.to_owned(),
        });
    }

    pub(crate) fn api<K>(&self, namespace: &str) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), namespace)
    }

    fn job_dir(&self, account: &str, job: &str) -> PathBuf {
        self.logs_root.join(account).join(job)
    }

    fn log_path(&self, account: &str, job: &str, pod: &str) -> PathBuf {
        logfile::log_path(&self.job_dir(account, job), pod)
    }

    /// Whether job pods may name their priority class: the classes are made
    /// once; a console not allowed to make them (an older manifest without
    /// `priorityclasses` in its role) runs pods without one and says so in
    /// its log.
    async fn priority_classes(&self) -> bool {
        *self
            .priority_classes
            .get_or_init(|| async {
                match priority::ensure(&self.client).await {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot make the priority classes: job pods run without one, and priority does not order them");
                        false
                    }
                }
            })
            .await
    }

    /// Creates the account's namespace, labelled as the console's, once.
    pub(crate) async fn ensure_namespace(&self, account: &Account) -> Result<(), AppError> {
        if self
            .namespaces
            .lock()
            .expect("namespaces lock")
            .contains(&account.namespace)
        {
            return Ok(());
        }
        let api: Api<Namespace> = Api::all(self.client.clone());
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": account.namespace,
                "labels": { MANAGED_BY: CONSOLE, "paddlecloud.org/account": account.name },
            },
        }))
        .map_err(|_| AppError::Internal)?;
        match api.create(&PostParams::default(), &ns).await {
            Ok(_) => {}
            Err(e) if is_conflict(&e) => {}
            Err(e) => return Err(from_kube("create the account's namespace", e)),
        }
        self.namespaces
            .lock()
            .expect("namespaces lock")
            .insert(account.namespace.clone());
        Ok(())
    }

    /// Creates the job's objects; the parent first, so the rest hang off it.
    async fn create_objects(
        &self,
        account: &Account,
        spec: &JobSpec,
        job_id: i64,
        token: &str,
        revealed: &crate::secrets::Revealed,
    ) -> Result<(), AppError> {
        let ns = &account.namespace;
        let parent = objects::parent(spec, job_id)?;
        let parent = match self
            .api::<ConfigMap>(ns)
            .create(&PostParams::default(), &parent)
            .await
        {
            Ok(p) => p,
            Err(e) if is_conflict(&e) => {
                return Err(AppError::conflict(
                    "name",
                    format!(
                        "Kubernetes still has objects of a job named “{}” in namespace {ns} \
                         (being deleted?). Try again in a moment or choose another name.",
                        spec.name
                    ),
                ))
            }
            Err(e) => return Err(from_kube("create the job", e)),
        };
        let pp = PostParams::default();
        self.api::<Secret>(ns)
            .create(&pp, &objects::token_secret(spec, job_id, &parent, token)?)
            .await
            .map_err(|e| from_kube("create the job's token", e))?;
        if let Some(secret) = objects::job_secrets(spec, job_id, &parent, revealed)? {
            self.api::<Secret>(ns)
                .create(&pp, &secret)
                .await
                .map_err(|e| from_kube("create the job's secrets", e))?;
        }
        self.api::<Service>(ns)
            .create(&pp, &objects::service(spec, job_id, &parent)?)
            .await
            .map_err(|e| from_kube("create the job's service", e))?;
        let ctx = self.job_context(account, spec, job_id).await;
        let jobs = self.api::<KubeJob>(ns);
        for replica in objects::replica_jobs(spec, &ctx, &parent)? {
            jobs.create(&pp, &replica)
                .await
                .map_err(|e| from_kube("create a replica", e))?;
        }
        Ok(())
    }

    /// What the job's replica Jobs are made with.
    async fn job_context<'a>(
        &'a self,
        account: &'a Account,
        spec: &JobSpec,
        job_id: i64,
    ) -> JobContext<'a> {
        JobContext {
            job_id,
            account: &account.name,
            console_url: self.console_url.as_deref(),
            grace_seconds: self.grace.as_secs().max(1) as i64,
            support: &self.support,
            priority_class: self
                .priority_classes()
                .await
                .then(|| priority::class_name(spec.priority)),
        }
    }

    /// Removes the replicas' workloads (their pods end with SIGTERM, then
    /// SIGKILL after `grace`, or their own grace period if `None`); the
    /// parent and the record stay.
    async fn remove_workloads(
        &self,
        namespace: &str,
        job_id: i64,
        grace: Option<Duration>,
    ) -> Result<(), AppError> {
        let id = job_id.to_string();
        let lp = ListParams::default().labels(&selector(&[(MANAGED_BY, CONSOLE), (JOB_ID, &id)]));
        let dp = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        self.api::<KubeJob>(namespace)
            .delete_collection(&dp, &lp)
            .await
            .map_err(|e| from_kube("stop the job's replicas", e))?;
        // The pods too, at once: the garbage collector would get to them,
        // but a stop should not wait for it.
        let api = self.api::<KubePod>(namespace);
        let within = DeleteParams {
            grace_period_seconds: grace.map(|g| u32::try_from(g.as_secs()).unwrap_or(u32::MAX)),
            ..DeleteParams::default()
        };
        api.delete_collection(&within, &lp)
            .await
            .map_err(|e| from_kube("stop the job's pods", e))?;
        // A pod that never started a container has no process to give a
        // grace period to, yet a kubelet stuck retrying its image pull took
        // over a minute to let it go, its CPU request held all the while
        // (measured on the real node): such pods go now.
        let waiting = api
            .list(&lp)
            .await
            .map_err(|e| from_kube("stop the job's pods", e))?;
        for pod in waiting.items.iter().filter(|p| pods::never_started(p)) {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let now = DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            };
            if let Err(err) = api.delete(&name, &now).await {
                if !is_not_found(&err) {
                    return Err(from_kube("stop the job's pods", err));
                }
            }
        }
        Ok(())
    }

    /// The replicas of job `name` in `account`, each with its live
    /// pod's name while it runs: what reading their logs or running a
    /// command in them needs.
    async fn running_pods(
        &self,
        account: &Account,
        name: &str,
    ) -> Result<Vec<(Pod, Option<String>)>, AppError> {
        let stored = self.store.get(account.id, name).await?;
        let mut out = Vec::new();
        for pod in self.store.pods(stored.id).await? {
            let live = match pod.phase {
                PodPhase::Running => self
                    .live_pod(&account.namespace, stored.id, &pod.name)
                    .await?
                    .and_then(|p| p.metadata.name),
                _ => None,
            };
            out.push((pod, live));
        }
        Ok(out)
    }

    /// The live pod of a replica, if there is one.
    async fn live_pod(
        &self,
        namespace: &str,
        job_id: i64,
        replica: &str,
    ) -> Result<Option<KubePod>, AppError> {
        let id = job_id.to_string();
        let lp = ListParams::default().labels(&selector(&[(JOB_ID, &id), (REPLICA, replica)]));
        let mut pods = self
            .api::<KubePod>(namespace)
            .list(&lp)
            .await
            .map_err(|e| from_kube("find the pod", e))?
            .items;
        // A replacement (after an eviction) is the one that counts.
        pods.sort_by_key(|p| p.metadata.creation_timestamp.clone());
        Ok(pods.pop())
    }

    /// What the logs of job `job_id` must not show: the values of the
    /// secrets it uses, as given at its submit or, after a restart of the
    /// console, as they are now.
    async fn masks_for(&self, job_id: i64) -> logfile::Masks {
        if let Some(masks) = self.masks.lock().expect("masks lock").get(&job_id) {
            return masks.clone();
        }
        let Ok(stored) = self.store.by_id(job_id).await else {
            return logfile::Masks::default();
        };
        if stored.job.spec.secrets.is_empty() {
            // Nothing to hide, and nothing kept: the map holds only the
            // jobs that use secrets.
            return logfile::Masks::default();
        }
        let masks = match self.store.account_of(stored.account_id).await {
            Ok(account) => {
                logfile::Masks::of(&self.secrets.masks(&account, &stored.job.spec.secrets).await)
            }
            Err(_) => return logfile::Masks::default(),
        };
        self.masks
            .lock()
            .expect("masks lock")
            .insert(job_id, masks.clone());
        masks
    }

    /// Copies a pod's whole log (with timestamps) into its file, so it is
    /// served after the pod is gone. A pod that never started has none.
    /// Secret values in it are written as `***`.
    async fn collect_log(
        &self,
        account: &str,
        job: &str,
        job_id: i64,
        namespace: &str,
        replica: &str,
    ) {
        let Ok(Some(pod)) = self.live_pod(namespace, job_id, replica).await else {
            return;
        };
        let Some(name) = pod.metadata.name.clone() else {
            return;
        };
        let lp = LogParams {
            container: Some(CONTAINER.to_owned()),
            timestamps: true,
            ..LogParams::default()
        };
        let path = self.log_path(account, job, replica);
        let text = match self.api::<KubePod>(namespace).logs(&name, &lp).await {
            // A program that could not start printed nothing: the reason is its log.
            Ok(text) if text.is_empty() => match watch::update_of(&pod).message {
                Some(why) if why.starts_with("Could not start") => {
                    format!(
                        "{} {why}\n",
                        logfile::format_timestamp(time::OffsetDateTime::now_utc())
                    )
                }
                _ => text,
            },
            Ok(text) => {
                let masks = self.masks_for(job_id).await;
                String::from_utf8_lossy(&masks.apply(text.into_bytes())).into_owned()
            }
            // A pod that never ran has no log to read.
            Err(kube::Error::Api(s)) if s.code == 400 || s.code == 404 => return,
            Err(err) => {
                tracing::warn!(error = %err, job, replica, "collecting a pod's log");
                return;
            }
        };
        let written = match path.parent() {
            Some(dir) => match tokio::fs::create_dir_all(dir).await {
                Ok(()) => tokio::fs::write(&path, text).await,
                Err(err) => Err(err),
            },
            None => Ok(()),
        };
        if let Err(err) = written {
            tracing::error!(error = %err, path = %path.display(), "saving a collected log");
        }
    }

    /// Waits (at most the grace period and a margin) until none of the job's
    /// pods runs a container: a stop returns once its processes have ended.
    async fn wait_pods_ended(&self, namespace: &str, job_id: i64) {
        let id = job_id.to_string();
        let lp = ListParams::default().labels(&selector(&[(MANAGED_BY, CONSOLE), (JOB_ID, &id)]));
        let deadline = tokio::time::Instant::now() + self.grace + Duration::from_secs(15);
        while tokio::time::Instant::now() < deadline {
            match self.api::<KubePod>(namespace).list(&lp).await {
                // A pod whose containers all ended holds no process: the
                // object itself may linger (a kubelet reclaims its volumes
                // and sandbox on a 10 s status sync) without anyone waiting.
                Ok(list) if list.items.iter().all(|p| !pods::any_container_running(p)) => return,
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!(error = %err, job_id, "waiting for a job's pods to end");
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tracing::warn!(job_id, "a stopped job's pods are still terminating");
    }

    /// Ends an active job with `status`: collects every log, removes the
    /// workloads, marks pods still going as stopped, writes the outcome.
    async fn finish(
        &self,
        account: &Account,
        job_id: i64,
        status: JobStatus,
        message: &str,
        why_stopped: &str,
    ) -> Result<(), AppError> {
        if !self
            .finishing
            .lock()
            .expect("finishing lock")
            .insert(job_id)
        {
            return Ok(());
        }
        let result = async {
            let stored = self.store.by_id(job_id).await?;
            if !stored.job.status.is_active() {
                return Ok(());
            }
            let pods = self.store.pods(job_id).await?;
            for pod in &pods {
                if pod.phase != PodPhase::Pending {
                    self.collect_log(
                        &account.name,
                        &stored.job.name,
                        job_id,
                        &account.namespace,
                        &pod.name,
                    )
                    .await;
                }
            }
            let removed = self
                .remove_workloads(&account.namespace, job_id, None)
                .await;
            for pod in pods
                .iter()
                .filter(|p| matches!(p.phase, PodPhase::Pending | PodPhase::Running))
            {
                let never_ran = pod.phase == PodPhase::Pending;
                self.store
                    .update_pod(
                        job_id,
                        &pod.name,
                        PodUpdate {
                            phase: Some(PodPhase::Stopped),
                            finished_at: (!never_ran).then(now_ms),
                            message: Some(if never_ran && status == JobStatus::Failed {
                                "Not started because the job failed.".to_owned()
                            } else {
                                why_stopped.to_owned()
                            }),
                            ..Default::default()
                        },
                    )
                    .await?;
            }
            self.store.set_status(job_id, status, message).await?;
            self.forget_preempted(job_id);
            self.emit(account.id, &stored.job.name);
            if removed.is_ok() {
                self.wait_pods_ended(&account.namespace, job_id).await;
            }
            removed
        }
        .await;
        self.finishing
            .lock()
            .expect("finishing lock")
            .remove(&job_id);
        result
    }

    /// Reads the API server's version, to tell whether it is there.
    async fn check(&self) {
        let answer = tokio::time::timeout(PROBE_TIMEOUT, self.client.apiserver_version()).await;
        let why = match answer {
            Ok(Ok(_)) => None,
            Ok(Err(err)) => Some(format!("The Kubernetes API server does not answer: {err}")),
            Err(_) => Some(format!(
                "The Kubernetes API server did not answer within {} s.",
                PROBE_TIMEOUT.as_secs_f32()
            )),
        };
        let mut health = self.health.lock().expect("health lock");
        if health.is_none() != why.is_none() {
            match &why {
                Some(why) => tracing::warn!(%why, "cluster unreachable"),
                None => tracing::info!("cluster reachable again"),
            }
        }
        *health = why;
    }
}

/// Keeps [`Inner::health`] current while the backend lives.
async fn probe(inner: std::sync::Weak<Inner>) {
    let mut probes: u64 = 0;
    loop {
        let Some(inner) = inner.upgrade() else { return };
        inner.check().await;
        probes += 1;
        if inner.preemption.is_some() && probes.is_multiple_of(PREEMPT_AGAIN_EVERY) {
            let again = inner.clone();
            tokio::spawn(async move { again.preempt_again().await });
        }
        // Off the probe: ending a job waits for its pods.
        let limits = inner.clone();
        tokio::spawn(async move {
            if let Err(err) = limits.end_past_limits().await {
                tracing::warn!(error = %err, "ending jobs past their time limit");
            }
        });
        drop(inner);
        tokio::time::sleep(PROBE_EVERY).await;
    }
}

#[async_trait]
impl Cluster for KubeCluster {
    fn name(&self) -> String {
        self.inner.name.clone()
    }

    fn health(&self) -> Option<String> {
        self.inner.health.lock().expect("health lock").clone()
    }

    async fn submit(&self, by: &Me, spec: JobSpec) -> Result<Job, AppError> {
        spec.validate()?;
        objects::validate_for_kubernetes(&spec)?;
        let inner = &self.inner;
        inner.ensure_namespace(&by.account).await?;
        let what = format!("job {}", spec.name);
        let revealed = (inner.secrets)
            .reveal(&by.account, &spec.secrets, &by.email, &what)
            .await?;
        let (stored, token) = inner.store.insert(by, &spec, &inner.name).await?;
        inner
            .masks
            .lock()
            .expect("masks lock")
            .insert(stored.id, logfile::Masks::of(&revealed.masks()));
        if let Err(err) = inner
            .create_objects(&by.account, &spec, stored.id, &token, &revealed)
            .await
        {
            // Nothing half-made stays: the parent owns whatever was created.
            let _ = inner
                .api::<ConfigMap>(&by.account.namespace)
                .delete(&spec.name, &DeleteParams::background())
                .await;
            inner.store.delete(stored.id).await?;
            return Err(err);
        }
        let _ = tokio::fs::remove_dir_all(inner.job_dir(&by.account.name, &spec.name)).await;
        inner.emit(by.account.id, &spec.name);
        Ok(stored.job)
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
        if stored.job.status.is_active() {
            self.inner
                .finish(
                    account,
                    stored.id,
                    JobStatus::Stopped,
                    "Stopped by a user.",
                    "Stopped by a user.",
                )
                .await?;
        }
        Ok(self.inner.store.by_id(stored.id).await?.job)
    }

    async fn delete(&self, account: &Account, name: &str) -> Result<(), AppError> {
        let job = self.stop(account, name).await?;
        let stored = self.inner.store.get(account.id, &job.name).await?;
        // Foreground: the parent goes last, after everything it owns, so
        // the name is free for a new job once this returns.
        let parents = self.inner.api::<ConfigMap>(&account.namespace);
        match parents.delete(name, &DeleteParams::foreground()).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(from_kube("delete the job", e)),
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while tokio::time::Instant::now() < deadline {
            match parents.get_opt(name).await {
                Ok(None) => break,
                Ok(Some(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(e) => return Err(from_kube("delete the job", e)),
            }
        }
        self.inner.store.delete(stored.id).await?;
        self.inner
            .masks
            .lock()
            .expect("masks lock")
            .remove(&stored.id);
        let _ = tokio::fs::remove_dir_all(self.inner.job_dir(&account.name, name)).await;
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
        let inner = &self.inner;
        let (stored, replica) = inner.store.pod_of(account.id, job, pod).await?;
        let path = inner.log_path(&account.name, job, pod);
        if tokio::fs::try_exists(&path).await.unwrap_or(false) {
            // Collected when it ended: complete.
            return logfile::serve(path, request, tokio::sync::watch::channel(true).1).await;
        }
        let mut phase = replica.phase;
        if request.follow && phase == PodPhase::Pending {
            // Following a pod that has not started: wait for it (a while).
            let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
            while phase == PodPhase::Pending && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(250)).await;
                phase = inner
                    .store
                    .pods(stored.id)
                    .await?
                    .into_iter()
                    .find(|p| p.name == pod)
                    .map_or(PodPhase::Stopped, |p| p.phase);
            }
            if tokio::fs::try_exists(&path).await.unwrap_or(false) {
                return logfile::serve(path, request, tokio::sync::watch::channel(true).1).await;
            }
        }
        let live = match phase {
            PodPhase::Running | PodPhase::Succeeded | PodPhase::Failed => {
                inner.live_pod(&account.namespace, stored.id, pod).await?
            }
            _ => None,
        };
        let Some(name) = live.and_then(|p| p.metadata.name) else {
            // Not started (or gone without a log): nothing to show yet.
            return Ok(Box::pin(futures_util::stream::empty()));
        };
        let lp = LogParams {
            container: Some(CONTAINER.to_owned()),
            follow: request.follow,
            tail_lines: request.tail.map(|t| t as i64),
            timestamps: request.timestamps,
            ..LogParams::default()
        };
        let reader = inner
            .api::<KubePod>(&account.namespace)
            .log_stream(&name, &lp)
            .await
            .map_err(|e| from_kube("read the pod's log", e))?;
        // Whole lines, as the port promises, with secret values as `***`.
        let masks = inner.masks_for(stored.id).await;
        let lines = reader.lines().map_ok(move |mut line| {
            line.push('\n');
            bytes::Bytes::from(masks.apply(line.into_bytes()))
        });
        Ok(Box::pin(lines))
    }

    async fn last_log_at(&self, account: &Account, name: &str) -> Result<Option<i64>, AppError> {
        let inner = &self.inner;
        let mut newest = None;
        for (_, live) in inner.running_pods(account, name).await? {
            let Some(live) = live else {
                continue;
            };
            // The end of its log, stamped by the kubelet as the pump stamps.
            let lp = LogParams {
                container: Some(CONTAINER.to_owned()),
                tail_lines: Some(LIFE_LINES),
                timestamps: true,
                ..LogParams::default()
            };
            let text = inner
                .api::<KubePod>(&account.namespace)
                .logs(&live, &lp)
                .await
                .map_err(|e| from_kube("read the pod's log", e))?;
            newest = newest.max(crate::storage::log_dumps::last_life_at(text.as_bytes()));
        }
        Ok(newest)
    }

    async fn stack_dump(&self, account: &Account, name: &str) -> Result<Vec<StackDump>, AppError> {
        let inner = &self.inner;
        let pods = inner.running_pods(account, name).await?;
        let venvs = inner.tools.get().ok_or_else(|| AppError::Unavailable {
            message: "This console does not build py-spy for stack dumps.".to_owned(),
        })?;
        let built = venvs
            .ready(&[crate::local::stack_dump::PY_SPY.to_owned()])
            .await
            .map_err(|why| AppError::Unavailable {
                message: format!("py-spy could not be installed: {why}"),
            })?;
        let binary = tokio::fs::read(built.join("bin/py-spy"))
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "reading the py-spy build");
                AppError::Internal
            })?;
        let api = inner.api::<KubePod>(&account.namespace);
        let mut dumps = Vec::with_capacity(pods.len());
        for (pod, live) in pods {
            let dump = match live {
                Some(live) => {
                    stack_dump::dump_pod(&api, &live, &pod.name, CONTAINER, &binary).await
                }
                None => StackDump {
                    pod: pod.name.clone(),
                    text: String::new(),
                    error: Some(format!("not running ({})", pod.phase.as_str())),
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

    /// The nodes' room as the scheduler counts it (allocatable, and what
    /// every pod placed there requests, GPUs included), and how many of this
    /// console's jobs wait (each says why: the scheduler's reason). Without
    /// the right to list nodes (an older manifest), no totals, saying why.
    async fn capacity(&self) -> Result<ClusterCapacity, AppError> {
        let queued = self.inner.store.count_pending(&self.inner.name).await?;
        let placed = "The Kubernetes scheduler places each pod on a node with room for it";
        let (total, used, source) = match self.inner.room.read(&self.inner.client).await {
            Ok(room) => (
                Some(room.total),
                Some(room.used),
                format!(
                    "{placed}: {} node{} it may use, their allocatable, and what the pods placed \
                     there request (everyone's, not only this console's).",
                    room.nodes,
                    if room.nodes == 1 { "" } else { "s" }
                ),
            ),
            Err(e) => (
                None,
                None,
                format!("{placed} (its nodes could not be read: {e})."),
            ),
        };
        Ok(ClusterCapacity {
            cluster: self.inner.name.clone(),
            total,
            used,
            gpus: Vec::new(),
            queued,
            limits: LimitEnforcement::Cluster,
            source,
        })
    }

    /// The console's jobs on the cluster as a member of `account` sees
    /// them: the waiting ones in the order the scheduler takes pending pods
    /// by default (priority class, then age), each with the scheduler's
    /// reason and a start estimated from the running jobs' time limits; the
    /// running ones with what they hold. Other workloads on the nodes count
    /// only as room taken, for good.
    async fn queue(&self, account: &Account) -> Result<QueueView, AppError> {
        let inner = &self.inner;
        let active = inner.store.active(&inner.name).await?;
        let mut names: HashMap<i64, String> = HashMap::new();
        for job in &active {
            if let std::collections::hash_map::Entry::Vacant(e) = names.entry(job.account_id) {
                e.insert(inner.store.account_of(job.account_id).await?.name);
            }
        }
        let limit = |spec: &JobSpec| spec.max_runtime_seconds().map(|s| s as i64 * 1000);
        let mut running = Vec::new();
        for job in active.iter().filter(|j| j.job.status == JobStatus::Running) {
            let since = match inner.run_started(job.id).await? {
                Some(at) => at,
                None => job.job.started_at.unwrap_or(job.job.created_at),
            };
            running.push(Holder {
                kind: WorkKind::Job,
                account: names[&job.account_id].clone(),
                name: job.job.name.clone(),
                priority: job.job.spec.priority,
                holds: job.job.spec.totals().unwrap_or_default(),
                since,
                max_runtime_ms: limit(&job.job.spec),
                preempted: false,
            });
        }
        let mut pending: Vec<_> = active
            .iter()
            .filter(|j| j.job.status == JobStatus::Pending)
            .collect();
        pending.sort_by_key(|j| {
            (
                std::cmp::Reverse(j.job.spec.priority),
                j.job.created_at,
                j.id,
            )
        });
        let waiting = pending
            .into_iter()
            .map(|job| Wanting {
                kind: WorkKind::Job,
                account: names[&job.account_id].clone(),
                name: job.job.name.clone(),
                priority: job.job.spec.priority,
                asks: job.job.spec.totals().unwrap_or_default(),
                since: job.job.created_at,
                reason: job.job.message.clone(),
                max_runtime_ms: limit(&job.job.spec),
            })
            .collect();
        let room = inner.room.read(&inner.client).await.ok();
        let facts = QueueFacts {
            cluster: inner.name.clone(),
            ordered_here: false,
            now: now_ms(),
            capacity: room.map(|r| r.total).unwrap_or_default(),
            free: room.map(|r| r.total.minus(r.used)).unwrap_or_default(),
            running,
            waiting,
        };
        let mut view = facts.view_for(&account.name);
        if room.is_none() {
            // The nodes could not be read: no room to tell, nor estimates.
            view.capacity = None;
            for w in &mut view.waiting {
                w.starts_by = None;
            }
        }
        Ok(view)
    }
}

/// Waits until `api`'s object `name` is gone (`limit` at most, then says
/// so in the log and goes on): `what` names the wait in errors.
pub(crate) async fn wait_gone<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    limit: Duration,
) -> Result<(), AppError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        match api.get_opt(name).await {
            Ok(None) => return Ok(()),
            Ok(Some(_)) => tokio::time::sleep(Duration::from_millis(200)).await,
            Err(e) => return Err(from_kube(what, e)),
        }
    }
    tracing::warn!(object = %name, "still there after {} s: {what}", limit.as_secs());
    Ok(())
}
