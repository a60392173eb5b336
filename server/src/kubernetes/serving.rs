//! Serving on Kubernetes: an instance is a Deployment (its replicas), a
//! Service in front of them (port `http`), a ConfigMap holding the default
//! predict server and the user's script, and, when it autoscales, a
//! HorizontalPodAutoscaler. The Deployment owns the rest, so deleting it
//! removes everything. A task per instance reads the Deployment's and
//! pods' status into the console's record; a model that keeps failing to
//! start fails the instance with its container's message.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::error::AppError;
use app::models::quantity::{parse_cpu_millis, parse_memory_bytes};
use app::models::{Account, ServingStatus};
use async_trait::async_trait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::Api;
use serde_json::json;
use tokio::sync::watch;

use super::errors::{from_kube, is_conflict, is_not_found};
use super::objects::{from_json, selector, CONSOLE, MANAGED_BY};
use super::{Inner, KubeCluster};
use crate::serving::{Backend, Reporter, Run, Upstream};

/// Label with the instance's database id (the selector of its pods).
pub const SERVING_ID: &str = "paddlecloud.org/serving-id";
/// Label with the instance's name.
pub const SERVING: &str = "paddlecloud.org/serving";
/// The replica container's name.
pub const SERVING_CONTAINER: &str = "serving";
/// The port the predict server listens on inside a pod.
pub const SERVING_PORT: u16 = 8080;
/// The image of the default predict server (PaddlePaddle with Python).
pub const DEFAULT_IMAGE: &str = "paddlepaddle/paddle:3.3.1";
/// Where the ConfigMap (predict server, user script) is mounted.
const CONFIG_DIR: &str = "/etc/paddlecloud";
/// Failed pods (with none ready) that fail the instance.
const MAX_FAILED_PODS: usize = 3;
/// How often an instance's status is read.
const POLL: Duration = Duration::from_secs(1);

/// The Kubernetes serving backend.
pub struct KubeServing {
    inner: Arc<Inner>,
    /// Per instance id: set to true to end its status task.
    watchers: Mutex<HashMap<i64, watch::Sender<bool>>>,
}

impl KubeServing {
    /// On the cluster jobs run on.
    pub fn new(kube: &KubeCluster) -> Self {
        Self {
            inner: kube.inner.clone(),
            watchers: Mutex::new(HashMap::new()),
        }
    }
}

/// The objects of an instance: Deployment, Service, ConfigMap, and the
/// HorizontalPodAutoscaler when it autoscales. The last three get their
/// owner reference once the Deployment exists (see [`owned_by`]).
pub fn serving_objects(
    run: &Run,
    console_url: Option<&str>,
) -> Result<
    (
        Deployment,
        Service,
        ConfigMap,
        Option<HorizontalPodAutoscaler>,
    ),
    AppError,
> {
    let spec = &run.spec;
    let id = run.id.to_string();
    let labels = json!({ MANAGED_BY: CONSOLE, SERVING: spec.name, SERVING_ID: id });
    let per = spec.per_replica()?;
    let mut amounts = json!({
        "cpu": format!("{}m", parse_cpu_millis("resources.cpu", &spec.resources.cpu)?),
        "memory": parse_memory_bytes("resources.memory", &spec.resources.memory)?.to_string(),
    });
    if per.gpu > 0 {
        amounts["nvidia.com/gpu"] = json!(per.gpu.to_string());
    }
    let mut env: Vec<serde_json::Value> = spec
        .env
        .iter()
        .map(|v| json!({ "name": v.name, "value": v.value }))
        .collect();
    let mut set = |name: &str, value: String| env.push(json!({ "name": name, "value": value }));
    set("PORT", SERVING_PORT.to_string());
    set("HOST", "0.0.0.0".to_owned());
    set("PADDLECLOUD_MODEL", run.model.model.clone());
    set("PADDLECLOUD_MODEL_VERSION", run.model.version.to_string());
    set(
        "PADDLECLOUD_MODEL_DIR",
        format!("/models/{}/{}", run.model.model, run.model.version),
    );
    set(
        "PADDLECLOUD_SERVING_THREADS",
        per.cpu_millis.div_ceil(1000).max(1).to_string(),
    );
    set("PYTHONUNBUFFERED", "1".to_owned());
    if !spec.file.is_empty() {
        set("PADDLECLOUD_MODEL_FILE", spec.file.clone());
    }
    if !spec.script.is_empty() {
        set(
            "PADDLECLOUD_SERVING_SCRIPT",
            format!("{CONFIG_DIR}/script.py"),
        );
    }
    if let Some(url) = console_url {
        set("PADDLECLOUD_SERVER", url.to_owned());
    }
    let default = spec.command.is_empty();
    let command = if default {
        vec!["python3".to_owned(), format!("{CONFIG_DIR}/serving.py")]
    } else {
        spec.command.clone()
    };
    let mut container = json!({
        "name": SERVING_CONTAINER,
        "image": if spec.image.is_empty() { DEFAULT_IMAGE } else { spec.image.as_str() },
        "command": command,
        "env": env,
        "ports": [{ "name": "http", "containerPort": SERVING_PORT }],
        "resources": { "requests": amounts, "limits": amounts },
        "volumeMounts": [{ "name": "paddlecloud", "mountPath": CONFIG_DIR, "readOnly": true }],
        // Kubernetes shows a failed container's last output as its message.
        "terminationMessagePolicy": "FallbackToLogsOnError",
    });
    if default {
        // The default server listens only once the model is loaded.
        container["readinessProbe"] = json!({
            "httpGet": { "path": "/healthz", "port": SERVING_PORT },
            "periodSeconds": 2,
        });
    }
    let deployment = from_json(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": spec.name, "labels": labels },
        "spec": {
            "replicas": spec.replicas,
            "selector": { "matchLabels": { SERVING_ID: id } },
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "enableServiceLinks": false,
                    "containers": [container],
                    "volumes": [{ "name": "paddlecloud", "configMap": { "name": format!("{}-serving", spec.name) } }],
                },
            },
        },
    }))?;
    let service = from_json(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": spec.name, "labels": labels },
        "spec": {
            "selector": { SERVING_ID: id },
            "ports": [{ "name": "http", "port": 80, "targetPort": SERVING_PORT }],
        },
    }))?;
    let mut files = json!({ "serving.py": crate::serving::local::PREDICT_SERVER });
    if !spec.script.is_empty() {
        files["script.py"] = json!(spec.script);
    }
    let config = from_json(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": format!("{}-serving", spec.name), "labels": labels },
        "data": files,
    }))?;
    let hpa = spec
        .autoscale
        .map(|a| hpa_object(&spec.name, &labels, a))
        .transpose()?;
    Ok((deployment, service, config, hpa))
}

fn hpa_object(
    name: &str,
    labels: &serde_json::Value,
    a: app::models::Autoscale,
) -> Result<HorizontalPodAutoscaler, AppError> {
    from_json(json!({
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": { "name": name, "labels": labels },
        "spec": {
            "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": name },
            "minReplicas": a.min,
            "maxReplicas": a.max,
            "targetCPUUtilizationPercentage": a.cpu_percent,
        },
    }))
}

/// An owner reference to the Deployment, so its deletion cascades.
fn owned_by(deployment: &Deployment) -> serde_json::Value {
    json!([{
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment.metadata.name,
        "uid": deployment.metadata.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

async fn create<K>(api: &Api<K>, mut object: K, owner: &serde_json::Value) -> Result<(), AppError>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    object.meta_mut().owner_references = serde_json::from_value(owner.clone()).ok();
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(e) if is_conflict(&e) => Ok(()),
        Err(e) => Err(from_kube("create a serving object", e)),
    }
}

#[async_trait]
impl Backend for KubeServing {
    fn name(&self) -> String {
        self.inner.name.clone()
    }

    fn remote_models(&self) -> bool {
        true
    }

    async fn start(&self, run: Run, reporter: Reporter) -> Result<(), AppError> {
        self.inner.ensure_namespace(&run.account).await?;
        let ns = &run.account.namespace;
        let (deployment, service, config, hpa) =
            serving_objects(&run, self.inner.console_url.get().map(String::as_str))?;
        let deployments: Api<Deployment> = self.inner.api(ns);
        let created = match deployments
            .create(&PostParams::default(), &deployment)
            .await
        {
            Ok(d) => d,
            // Brought back after a console restart: it is there already.
            Err(e) if is_conflict(&e) => deployments
                .get(&run.spec.name)
                .await
                .map_err(|e| from_kube("read a serving Deployment", e))?,
            Err(e) => return Err(from_kube("create a serving Deployment", e)),
        };
        let owner = owned_by(&created);
        create(&self.inner.api::<Service>(ns), service, &owner).await?;
        create(&self.inner.api::<ConfigMap>(ns), config, &owner).await?;
        if let Some(hpa) = hpa {
            create(&self.inner.api::<HorizontalPodAutoscaler>(ns), hpa, &owner).await?;
        }
        let (stop, stop_rx) = watch::channel(false);
        if let Some(old) = self
            .watchers
            .lock()
            .expect("watchers lock")
            .insert(run.id, stop)
        {
            old.send_replace(true);
        }
        tokio::spawn(follow(self.inner.clone(), run, reporter, stop_rx));
        Ok(())
    }

    async fn resize(&self, run: Run) -> Result<(), AppError> {
        let ns = &run.account.namespace;
        let name = &run.spec.name;
        let params = PatchParams::default();
        let hpas: Api<HorizontalPodAutoscaler> = self.inner.api(ns);
        match run.spec.autoscale {
            Some(a) => {
                let deployments: Api<Deployment> = self.inner.api(ns);
                let d = deployments
                    .get(name)
                    .await
                    .map_err(|e| from_kube("read a serving Deployment", e))?;
                let labels =
                    json!({ MANAGED_BY: CONSOLE, SERVING: name, SERVING_ID: run.id.to_string() });
                let patch = json!({ "spec": { "minReplicas": a.min, "maxReplicas": a.max,
                                               "targetCPUUtilizationPercentage": a.cpu_percent } });
                match hpas.patch(name, &params, &Patch::Merge(&patch)).await {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {
                        create(&hpas, hpa_object(name, &labels, a)?, &owned_by(&d)).await?
                    }
                    Err(e) => return Err(from_kube("scale a serving instance", e)),
                }
            }
            None => {
                match hpas.delete(name, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => return Err(from_kube("remove an autoscaler", e)),
                }
                let deployments: Api<Deployment> = self.inner.api(ns);
                let patch = json!({ "spec": { "replicas": run.spec.replicas } });
                deployments
                    .patch(name, &params, &Patch::Merge(&patch))
                    .await
                    .map_err(|e| from_kube("scale a serving instance", e))?;
            }
        }
        Ok(())
    }

    async fn stop(&self, account: &Account, id: i64, name: &str) -> Result<(), AppError> {
        if let Some(w) = self.watchers.lock().expect("watchers lock").remove(&id) {
            w.send_replace(true);
        }
        let deployments: Api<Deployment> = self.inner.api(&account.namespace);
        let dp = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            ..DeleteParams::default()
        };
        match deployments.delete(name, &dp).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => return Ok(()),
            Err(e) => return Err(from_kube("delete a serving Deployment", e)),
        }
        // Foreground deletion: the Deployment goes once its pods and
        // owned objects have.
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            match deployments.get_opt(name).await {
                Ok(None) => return Ok(()),
                Ok(Some(_)) => tokio::time::sleep(Duration::from_millis(200)).await,
                Err(e) => return Err(from_kube("wait for a serving Deployment to go", e)),
            }
        }
        tracing::warn!(serving = %name, "its Deployment is still being deleted after a minute");
        Ok(())
    }

    async fn upstream(&self, account: &Account, _id: i64, name: &str) -> Option<Upstream> {
        Some(Upstream::Kube {
            client: self.inner.client.clone(),
            namespace: account.namespace.clone(),
            service: name.to_owned(),
        })
    }
}

/// Reads the instance's Deployment and pods into its record until stopped.
async fn follow(inner: Arc<Inner>, run: Run, reporter: Reporter, mut stop: watch::Receiver<bool>) {
    let ns = &run.account.namespace;
    let deployments: Api<Deployment> = inner.api(ns);
    let pods: Api<Pod> = inner.api(ns);
    let selector = selector(&[(SERVING_ID, &run.id.to_string())]);
    let mut last = None;
    loop {
        let state = async {
            let d = deployments.get_opt(&run.spec.name).await.ok()??;
            let status = d.status.unwrap_or_default();
            let wanted = d.spec.and_then(|s| s.replicas).unwrap_or(0).max(0) as u32;
            let ready = status.ready_replicas.unwrap_or(0).max(0) as u32;
            let listed = pods
                .list(&ListParams::default().labels(&selector))
                .await
                .ok()?;
            let failed: Vec<String> = listed.items.iter().filter_map(failure).collect();
            Some((wanted, ready, failed))
        }
        .await;
        if let Some((wanted, ready, failed)) = state {
            let why = failed.last().cloned().unwrap_or_default();
            let next = if ready == 0 && failed.len() >= MAX_FAILED_PODS {
                (
                    ServingStatus::Failed,
                    0,
                    format!("Replicas failed to start: {why}"),
                )
            } else {
                let message = if ready < wanted && !failed.is_empty() {
                    format!("A replica failed: {why}")
                } else {
                    String::new()
                };
                (
                    ServingStatus::of_replicas(ready, wanted.max(1)),
                    ready,
                    message,
                )
            };
            if last.as_ref() != Some(&next) {
                reporter
                    .report(
                        run.account.id,
                        run.id,
                        &run.spec.name,
                        next.0,
                        next.1,
                        &next.2,
                    )
                    .await;
                last = Some(next.clone());
            }
            if next.0 == ServingStatus::Failed {
                // Stop the churn of new pods failing the same way.
                let patch = json!({ "spec": { "replicas": 0 } });
                let _ = deployments
                    .patch(
                        &run.spec.name,
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await;
                return;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = stop.changed() => return,
        }
    }
}

/// Why a pod failed, if it did: a Failed pod, or a container that keeps
/// restarting; the container's own message (its last output) when it has one.
fn failure(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    let containers = status.container_statuses.as_deref().unwrap_or_default();
    let message = containers.iter().find_map(|c| {
        let state = c.state.as_ref()?;
        let terminated = state
            .terminated
            .as_ref()
            .or(c.last_state.as_ref().and_then(|s| s.terminated.as_ref()))?;
        Some(
            terminated
                .message
                .clone()
                .filter(|m| !m.trim().is_empty())
                .unwrap_or_else(|| format!("exited with code {}", terminated.exit_code)),
        )
    });
    let crashing = containers.iter().any(|c| c.restart_count >= 3);
    let failed = status.phase.as_deref() == Some("Failed");
    (failed || crashing).then(|| {
        let text = message.unwrap_or_else(|| "the container failed".to_owned());
        // The most telling line: the predict server's own, else the last.
        text.lines()
            .rev()
            .find(|l| l.contains("cannot load the model"))
            .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or("")
            .trim()
            .to_owned()
    })
}
