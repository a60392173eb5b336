//! Serving on Kubernetes: an instance is a Deployment (its replicas), a
//! Service in front of them (port `http`), a ConfigMap holding the default
//! predict server and the user's script, a Secret with the instance's own
//! token and, when it autoscales, a HorizontalPodAutoscaler. The Deployment
//! owns the rest, so deleting it removes everything. Each pod first fetches
//! the model version from the console with the token, into the node's cache
//! of inputs as a job's model versions are (init container `fetch-inputs`,
//! see [`crate::kubernetes::inputs`]): a second replica of the version on
//! that node downloads nothing. A task per
//! instance reads the Deployment's and pods' status into the console's
//! record; a model that keeps failing to start fails the instance with its
//! container's message.

mod objects;
mod status;

use std::sync::Arc;
use std::time::Duration;

use app::error::AppError;
use app::models::{Account, Track};
use async_trait::async_trait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::Api;
use serde_json::json;

use self::objects::{hpa_object, owned_by, side_objects, track_name};
pub use self::objects::{serving_objects, PodSettings, ServingObjects};
use super::errors::{from_kube, is_conflict, is_not_found};
use super::objects::{CONSOLE, MANAGED_BY};
use super::{wait_gone, Inner, KubeCluster};
use crate::backend::serving::{Reporter, ServingBackend, ServingRun, Upstream};
use crate::backend::supervised::Supervised;

/// Label with the instance's database id (the selector of its pods).
pub const SERVING_ID: &str = "paddlecloud.org/serving-id";
/// Label with the instance's name.
pub const SERVING: &str = "paddlecloud.org/serving";
/// Label with the track a pod serves (`main`, `canary`, `shadow`).
pub const SERVING_TRACK: &str = "paddlecloud.org/serving-track";
/// The replica container's name.
pub const SERVING_CONTAINER: &str = "serving";
/// The port the predict server listens on inside a pod.
pub const SERVING_PORT: u16 = 8080;
/// The image of the default predict server (PaddlePaddle with Python).
pub const DEFAULT_IMAGE: &str = "paddlepaddle/paddle:3.3.1";
/// Where an image that holds its model has it by default (pods that can
/// fetch it find it in the node's cache instead).
pub const MODEL_ROOT: &str = "/models";

/// The Kubernetes serving backend.
pub struct KubeServing {
    inner: Arc<Inner>,
    /// Per instance id: its status task, and the canary's and shadow's
    /// ready replicas it reads (a call for a side track with none ready
    /// goes to the main one).
    watchers: Supervised<status::SideReady>,
    /// Where an image that holds its model has it.
    model_root: String,
}

impl KubeServing {
    /// On the cluster jobs run on; an image that holds its model (when pods
    /// cannot reach the console) has it below `model_root` ([`MODEL_ROOT`]
    /// unless given: an absolute path).
    pub fn new(kube: &KubeCluster, model_root: Option<String>) -> Self {
        Self {
            inner: kube.inner.clone(),
            watchers: Supervised::default(),
            model_root: model_root.unwrap_or_else(|| MODEL_ROOT.to_owned()),
        }
    }
}

/// Creates `object` owned by `owner`; `false` when it exists already (an
/// instance brought back after a console restart).
async fn create<K>(api: &Api<K>, mut object: K, owner: &serde_json::Value) -> Result<bool, AppError>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    object.meta_mut().owner_references = serde_json::from_value(owner.clone()).ok();
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(true),
        Err(e) if is_conflict(&e) => Ok(false),
        Err(e) => Err(from_kube("create a serving object", e)),
    }
}

/// Creates the token's Secret, or replaces its token: a restart issues a
/// new one and the old no longer reads anything.
async fn put_secret(
    api: &Api<Secret>,
    secret: Secret,
    owner: &serde_json::Value,
) -> Result<(), AppError> {
    let name = secret.metadata.name.clone().unwrap_or_default();
    let patch = json!({ "stringData": secret.string_data });
    if !create(api, secret, owner).await? {
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| from_kube("replace a serving token", e))?;
    }
    Ok(())
}

/// Writes the instance's Secret of the account's secrets its replicas use
/// (made, or its data replaced: values are read again at each start and
/// release), owned by `owner`, the main Deployment.
async fn put_secrets(
    api: &Api<Secret>,
    run: &ServingRun,
    owner: &serde_json::Value,
) -> Result<(), AppError> {
    if run.spec.secrets.is_empty() {
        return Ok(());
    }
    let labels =
        json!({ MANAGED_BY: CONSOLE, SERVING: run.spec.name, SERVING_ID: run.id.to_string() });
    let secret =
        crate::kubernetes::secrets::secret(&run.spec.name, &labels, &json!([]), &run.secrets)?;
    let name = secret.metadata.name.clone().unwrap_or_default();
    let replace = json!([{ "op": "add", "path": "/data", "value": secret.data }]);
    if !create(api, secret, owner).await? {
        let patch: Patch<serde_json::Value> =
            Patch::Json(serde_json::from_value(replace).map_err(|_| AppError::Internal)?);
        api.patch(&name, &PatchParams::default(), &patch)
            .await
            .map_err(|e| from_kube("replace a serving instance's secrets", e))?;
    }
    Ok(())
}

impl KubeServing {
    fn settings(&self) -> PodSettings<'_> {
        PodSettings {
            console_url: self.inner.console_url.as_deref(),
            model_root: &self.model_root,
            support: &self.inner.support,
            grace_seconds: self.inner.grace.as_secs().max(1) as i64,
        }
    }

    /// Creates, rolls, resizes or deletes the canary's and shadow's
    /// Deployments and Services as `run` says, owned by `main`.
    async fn apply_sides(&self, run: &ServingRun, main: &Deployment) -> Result<(), AppError> {
        let ns = &run.account.namespace;
        let deployments: Api<Deployment> = self.inner.api(ns);
        let services: Api<Service> = self.inner.api(ns);
        let owner = owned_by(main);
        for track in [Track::Canary, Track::Shadow] {
            let name = track_name(&run.spec.name, track);
            match run.side(track) {
                Some(side) => {
                    let (deployment, service) = side_objects(run, side, &self.settings())?;
                    if !create(&deployments, deployment.clone(), &owner).await? {
                        let spec = deployment.spec.unwrap_or_default();
                        let patch = json!({ "spec": { "replicas": spec.replicas,
                                                      "template": spec.template } });
                        deployments
                            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                            .await
                            .map_err(|e| from_kube("change a serving track", e))?;
                    }
                    create(&services, service, &owner).await?;
                }
                None => {
                    for done in [
                        deployments
                            .delete(&name, &DeleteParams::default())
                            .await
                            .map(|_| ()),
                        services
                            .delete(&name, &DeleteParams::default())
                            .await
                            .map(|_| ()),
                    ] {
                        match done {
                            Ok(()) => {}
                            Err(e) if is_not_found(&e) => {}
                            Err(e) => return Err(from_kube("end a serving track", e)),
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ServingBackend for KubeServing {
    fn name(&self) -> String {
        self.inner.name.clone()
    }

    fn remote_models(&self) -> bool {
        true
    }

    async fn current_token(&self, account: &Account, name: &str) -> Option<String> {
        let secrets: Api<Secret> = Api::namespaced(self.inner.client.clone(), &account.namespace);
        let secret = secrets.get_opt(&objects::config_name(name)).await.ok()??;
        let token = secret.data?.remove("token")?;
        String::from_utf8(token.0).ok()
    }

    async fn start(&self, run: ServingRun, reporter: Reporter) -> Result<(), AppError> {
        self.inner.ensure_namespace(&run.account).await?;
        let ns = &run.account.namespace;
        let fetching = self.settings();
        if fetching.console_url.is_none() {
            tracing::warn!(serving = %run.spec.name,
                "no console URL is set: the pods cannot fetch the model and the image must hold it");
        }
        let ServingObjects {
            deployment,
            service,
            config,
            secret,
            hpa,
        } = serving_objects(&run, &fetching)?;
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
        if let Some(secret) = secret {
            put_secret(&self.inner.api::<Secret>(ns), secret, &owner).await?;
        }
        put_secrets(&self.inner.api::<Secret>(ns), &run, &owner).await?;
        if let Some(hpa) = hpa {
            create(&self.inner.api::<HorizontalPodAutoscaler>(ns), hpa, &owner).await?;
        }
        self.apply_sides(&run, &created).await?;
        let inner = self.inner.clone();
        self.watchers
            .spawn(run.id, status::SideReady::default(), move |task| {
                let ready = task.clone();
                status::follow(inner, run, reporter, task.stop_signal(), move |r| {
                    ready.state.set(r)
                })
            });
        Ok(())
    }

    async fn release(&self, run: ServingRun, _reporter: Reporter) -> Result<(), AppError> {
        let ns = &run.account.namespace;
        let deployments: Api<Deployment> = self.inner.api(ns);
        let current = deployments
            .get(&run.spec.name)
            .await
            .map_err(|e| from_kube("read a serving Deployment", e))?;
        put_secrets(&self.inner.api::<Secret>(ns), &run, &owned_by(&current)).await?;
        // The new version's pod template: the Deployment rolls it in one
        // replica at a time (see the strategy in its objects).
        let objects = serving_objects(&run, &self.settings())?;
        let spec = objects.deployment.spec.unwrap_or_default();
        let patch = json!({ "spec": { "template": spec.template, "strategy": spec.strategy } });
        deployments
            .patch(
                &run.spec.name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|e| from_kube("roll a serving Deployment", e))?;
        self.apply_sides(&run, &current).await
    }

    async fn resize(&self, run: ServingRun) -> Result<(), AppError> {
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
                        create(&hpas, hpa_object(name, &labels, a)?, &owned_by(&d)).await?;
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
        self.watchers.end(id);
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
        wait_gone(
            &deployments,
            name,
            "wait for a serving Deployment to go",
            Duration::from_secs(60),
        )
        .await
    }

    async fn upstream(
        &self,
        account: &Account,
        id: i64,
        name: &str,
        track: Track,
    ) -> Option<Upstream> {
        if track != Track::Main && self.watchers.get(id)?.state.get(track) == 0 {
            return None;
        }
        Some(Upstream::Kube {
            client: self.inner.client.clone(),
            namespace: account.namespace.clone(),
            service: track_name(name, track),
        })
    }
}
