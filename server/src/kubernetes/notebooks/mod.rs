//! Notebooks on Kubernetes: a notebook is a StatefulSet of at most one pod
//! running JupyterLab (scaled to 0 when stopped), a Service in front of it,
//! a PersistentVolumeClaim holding its workspace (mounted at
//! [`WORKSPACE_DIR`], kept across stops), a Secret with its Jupyter token
//! and key, and a ConfigMap with the SDK its kernels import, all in the
//! account's namespace and labelled like jobs. A task per running notebook
//! reads its pod into the record ([`status`]): why it waits (the
//! scheduler's "Insufficient cpu", an image pull), Running once JupyterLab
//! answers on the pod's IP (where the console's proxy then goes), Failed
//! with the container's last words. Pods outlive the console: after a
//! restart a running notebook is taken over, kernels and all.

mod objects;
mod status;
pub mod tunnel;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::error::AppError;
use app::models::Account;
use async_trait::async_trait;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret, Service};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::Api;
use serde_json::json;

pub use self::objects::{claim_name, notebook_objects, object_name, pod_name, NotebookObjects};
use super::errors::{from_kube, is_conflict, is_not_found};
use super::{wait_gone, Inner, KubeCluster};
use crate::backend::lab_client::{self, LabClient};
use crate::backend::notebooks::{NotebookBackend, NotebookReporter, NotebookRun};
use crate::backend::supervised::Supervised;

/// Label with the notebook's database id (the selector of its pod).
pub const NOTEBOOK_ID: &str = "paddlecloud.org/notebook-id";
/// Label with the notebook's name.
pub const NOTEBOOK: &str = "paddlecloud.org/notebook";
/// The server container's name.
pub const NOTEBOOK_CONTAINER: &str = "notebook";
/// Where the workspace claim is mounted: the home of Jupyter's images.
pub const WORKSPACE_DIR: &str = "/home/jovyan";
/// The image of notebooks that name none: the Jupyter project's base
/// image (JupyterLab, `python3`, user `jovyan`); a site running
/// PaddlePaddle sets its own with `--notebook-image`.
pub const DEFAULT_IMAGE: &str = "quay.io/jupyter/base-notebook:latest";
/// The port JupyterLab listens on in its pod.
pub const DEFAULT_PORT: u16 = 8888;
/// How long a stop or delete waits for what it removed to go.
const STOP_WAIT: Duration = Duration::from_secs(90);
/// How long a server read off another replica's notebook pod is trusted.
const SEEN_FOR: Duration = Duration::from_secs(5);
/// The size of a workspace claim by default.
pub const DEFAULT_WORKSPACE_SIZE: &str = "10Gi";

/// How the console reaches notebook servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reach {
    /// At the pod's IP: a console in the cluster (or one with routes to pods).
    #[default]
    PodIp,
    /// Through the API server's port-forward ([`tunnel`]): a console
    /// outside the cluster, which needs no route to pods.
    ApiServer,
}

/// How notebook pods are made.
#[derive(Debug, Clone)]
pub struct NotebookPods {
    /// The image of notebooks that name none.
    pub image: String,
    /// The port JupyterLab listens on in its pod ([`DEFAULT_PORT`]).
    pub port: u16,
    /// The StorageClass of workspace claims (`None`: the cluster's default).
    pub storage_class: Option<String>,
    /// The size of each workspace claim (`10Gi`).
    pub workspace_size: String,
    /// Seconds between SIGTERM and SIGKILL when a pod stops.
    pub grace_seconds: i64,
    /// How the console reaches their servers.
    pub reach: Reach,
}

impl Default for NotebookPods {
    fn default() -> Self {
        Self {
            image: DEFAULT_IMAGE.to_owned(),
            port: DEFAULT_PORT,
            storage_class: None,
            workspace_size: DEFAULT_WORKSPACE_SIZE.to_owned(),
            grace_seconds: 10,
            reach: Reach::PodIp,
        }
    }
}

/// The Kubernetes notebook backend.
pub struct KubeNotebooks {
    inner: Arc<Inner>,
    pods: NotebookPods,
    /// The Python of the image that runs JupyterLab.
    python: String,
    /// Per notebook id: its status task and, once it answers, its server
    /// (`http://<pod IP>:<port>`).
    followed: Supervised<Mutex<Option<String>>>,
    /// Servers of notebooks another replica follows, read off their pods,
    /// and when.
    seen: Mutex<HashMap<i64, (String, std::time::Instant)>>,
    /// Reaches the servers (and asks a starting one whether it answers).
    probe: LabClient,
}

impl KubeNotebooks {
    /// On the cluster jobs run on; pods made as `pods` says, their server
    /// run by `python` (`python3` in Jupyter's images).
    pub fn new(kube: &KubeCluster, pods: NotebookPods, python: String) -> Self {
        Self {
            inner: kube.inner.clone(),
            python,
            followed: Supervised::default(),
            seen: Mutex::new(HashMap::new()),
            probe: match pods.reach {
                Reach::PodIp => lab_client::direct(),
                Reach::ApiServer => lab_client::through(Arc::new(tunnel::PodTunnel {
                    client: kube.inner.client.clone(),
                })),
            },
            pods,
        }
    }

    /// Follows `run`'s pod into its record until stopped.
    fn follow(&self, run: NotebookRun, reporter: NotebookReporter) {
        let (inner, port, reach, probe) = (
            self.inner.clone(),
            self.pods.port,
            self.pods.reach,
            self.probe.clone(),
        );
        self.followed
            .spawn(run.id, Mutex::new(None), move |published| {
                status::Follower {
                    inner,
                    run,
                    reporter,
                    port,
                    reach,
                    probe,
                    published,
                }
                .run()
            });
    }

    fn unfollow(&self, id: i64) {
        self.followed.end(id);
    }
}

/// Creates `object`, or (when `patch` gives one) merges that patch into
/// the one there; `false` when it existed.
async fn put<K>(
    api: &Api<K>,
    object: &K,
    patch: Option<Patch<serde_json::Value>>,
    what: &str,
) -> Result<bool, AppError>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(true),
        Err(e) if is_conflict(&e) => {
            if let Some(patch) = patch {
                let name = object.meta().name.clone().unwrap_or_default();
                api.patch(&name, &PatchParams::default(), &patch)
                    .await
                    .map_err(|e| from_kube(what, e))?;
            }
            Ok(false)
        }
        Err(e) => Err(from_kube(what, e)),
    }
}

/// Deletes `api`'s object `name`; gone already is fine.
async fn delete<K>(api: &Api<K>, name: &str, what: &str) -> Result<(), AppError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..DeleteParams::default()
    };
    match api.delete(name, &dp).await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(from_kube(what, e)),
    }
}

#[async_trait]
impl NotebookBackend for KubeNotebooks {
    fn name(&self) -> String {
        self.inner.name.clone()
    }

    fn client(&self) -> LabClient {
        self.probe.clone()
    }

    fn sees_local_files(&self) -> bool {
        false
    }

    async fn start(&self, run: NotebookRun, reporter: NotebookReporter) -> Result<(), AppError> {
        self.inner.ensure_namespace(&run.account).await?;
        let ns = &run.account.namespace;
        let NotebookObjects {
            stateful_set,
            service,
            claim,
            secret,
            sdk,
        } = notebook_objects(
            &run,
            &self.pods,
            &self.python,
            (&self.inner.support, self.inner.console_url.as_deref()),
        )?;
        // A start issues a new token and key, and reads the account's
        // secrets again: the Secret holds the new ones (and no more of the
        // old: its data is replaced) before the pod that reads them is made.
        let secret_patch = Patch::Json(
            serde_json::from_value(json!([
                { "op": "add", "path": "/data", "value": secret.data },
                { "op": "add", "path": "/stringData", "value": secret.string_data },
            ]))
            .map_err(|_| AppError::Internal)?,
        );
        put(
            &self.inner.api::<Secret>(ns),
            &secret,
            Some(secret_patch),
            "store a notebook's token",
        )
        .await?;
        let sdk_patch = Patch::Merge(json!({ "data": sdk.data }));
        put(
            &self.inner.api::<ConfigMap>(ns),
            &sdk,
            Some(sdk_patch),
            "store the notebook SDK",
        )
        .await?;
        put(
            &self.inner.api::<Service>(ns),
            &service,
            None,
            "create a notebook's Service",
        )
        .await?;
        // The workspace is made once and kept.
        put(
            &self.inner.api::<PersistentVolumeClaim>(ns),
            &claim,
            None,
            "claim a notebook's workspace",
        )
        .await?;
        let set = stateful_set.spec.as_ref().map(|s| &s.template);
        let set_patch = Patch::Merge(json!({ "spec": { "replicas": 1, "template": set } }));
        put(
            &self.inner.api::<StatefulSet>(ns),
            &stateful_set,
            Some(set_patch),
            "start a notebook's StatefulSet",
        )
        .await?;
        self.follow(run, reporter);
        Ok(())
    }

    async fn stop(&self, account: &Account, id: i64, name: &str) -> Result<(), AppError> {
        self.unfollow(id);
        let ns = &account.namespace;
        let sets: Api<StatefulSet> = self.inner.api(ns);
        let patch = json!({ "spec": { "replicas": 0 } });
        match sets
            .patch(
                &objects::stateful_set_name(name),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => return Ok(()),
            Err(e) => return Err(from_kube("scale a notebook to 0", e)),
        }
        wait_gone(
            &self.inner.api::<Pod>(ns),
            &pod_name(name),
            "wait for a notebook's pod to go",
            STOP_WAIT,
        )
        .await
    }

    async fn remove(&self, account: &Account, id: i64, name: &str) -> Result<(), AppError> {
        self.stop(account, id, name).await?;
        let ns = &account.namespace;
        let sets: Api<StatefulSet> = self.inner.api(ns);
        delete(
            &sets,
            &objects::stateful_set_name(name),
            "delete a notebook's StatefulSet",
        )
        .await?;
        let services: Api<Service> = self.inner.api(ns);
        delete(&services, &object_name(name), "delete a notebook's Service").await?;
        let secrets: Api<Secret> = self.inner.api(ns);
        delete(&secrets, &object_name(name), "delete a notebook's token").await?;
        let configs: Api<ConfigMap> = self.inner.api(ns);
        delete(&configs, &object_name(name), "delete a notebook's SDK").await?;
        let claims: Api<PersistentVolumeClaim> = self.inner.api(ns);
        delete(&claims, &claim_name(name), "delete a notebook's workspace").await?;
        // A notebook made again under this name gets a new, empty claim,
        // not this one while it is still being deleted.
        wait_gone(
            &claims,
            &claim_name(name),
            "wait for a workspace to go",
            STOP_WAIT,
        )
        .await?;
        wait_gone(
            &sets,
            &objects::stateful_set_name(name),
            "wait for a StatefulSet to go",
            STOP_WAIT,
        )
        .await
    }

    async fn upstream(&self, account: &Account, id: i64, name: &str) -> Option<String> {
        let followed = self
            .followed
            .get(id)
            .and_then(|f| f.state.lock().expect("upstream lock").clone());
        if followed.is_some() {
            return followed;
        }
        // Another replica of the console started it and follows it (the
        // record says Running, or the proxy would not ask): its pod says
        // where it is. Kept a few seconds, as a page loads many files.
        if let Some((upstream, at)) = self.seen.lock().expect("seen lock").get(&id) {
            if at.elapsed() < SEEN_FOR {
                return Some(upstream.clone());
            }
        }
        let pods: Api<Pod> = self.inner.api(&account.namespace);
        let pod = pods.get_opt(&pod_name(name)).await.ok()??;
        if pod.status.as_ref()?.phase.as_deref() != Some("Running") {
            return None;
        }
        let upstream = status::address(&pod, self.pods.port, self.pods.reach)?;
        self.seen
            .lock()
            .expect("seen lock")
            .insert(id, (upstream.clone(), std::time::Instant::now()));
        Some(upstream)
    }

    async fn adopt(&self, run: NotebookRun, reporter: NotebookReporter) -> Result<bool, AppError> {
        let sets: Api<StatefulSet> = self.inner.api(&run.account.namespace);
        let set = sets
            .get_opt(&objects::stateful_set_name(&run.spec.name))
            .await
            .map_err(|e| from_kube("read a notebook's StatefulSet", e))?;
        let running = set
            .and_then(|s| s.spec)
            .and_then(|s| s.replicas)
            .is_some_and(|r| r > 0);
        if running {
            self.follow(run, reporter);
        }
        Ok(running)
    }
}
