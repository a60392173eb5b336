//! The objects of a serving instance, as the API server takes them.

use app::error::AppError;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use serde_json::json;

use app::models::Track;

use super::{DEFAULT_IMAGE, SERVING, SERVING_CONTAINER, SERVING_ID, SERVING_PORT, SERVING_TRACK};
use crate::backend::serving::{ModelFiles, ServingRun, SideTrack};
use crate::kubernetes::inputs::{self, PodSupport};
use crate::kubernetes::objects::{from_json, CONSOLE, MANAGED_BY};
use crate::kubernetes::sdk::{sdk_data, sdk_items, sdk_mount, SDK_DIR};
use crate::kubernetes::workload_pod;

/// Where the ConfigMap (predict server, user script) is mounted.
const CONFIG_DIR: &str = "/etc/paddlecloud";

/// Everything an instance is made of in its namespace.
pub struct ServingObjects {
    /// The replicas.
    pub deployment: Deployment,
    /// Port `http` in front of them.
    pub service: Service,
    /// The predict server and the user's script.
    pub config: ConfigMap,
    /// The instance's token, when its pods fetch the model.
    pub secret: Option<Secret>,
    /// When it autoscales.
    pub hpa: Option<HorizontalPodAutoscaler>,
}

/// What an instance's pods get besides its spec, for [`serving_objects`]:
/// where the console is, where the model is, how long a stop waits.
pub struct PodSettings<'a> {
    /// The console's URL as pods reach it; without one, pods cannot fetch
    /// the model and the image must hold it.
    pub console_url: Option<&'a str>,
    /// Where an image that holds its model has it (when pods cannot fetch).
    pub model_root: &'a str,
    /// The node's cache of inputs, which the model is fetched into as a
    /// job's model versions are, and the index environments install from.
    pub support: &'a PodSupport,
    /// Seconds between SIGTERM and SIGKILL when a replica is stopped (the
    /// console's `--stop-grace`, as for jobs; Kubernetes' own default is 30).
    pub grace_seconds: i64,
}

/// The objects of an instance's main track. All but the Deployment get
/// their owner reference once it exists (see [`owned_by`]).
pub fn serving_objects(
    run: &ServingRun,
    fetching: &PodSettings,
) -> Result<ServingObjects, AppError> {
    build(run, Track::Main, &run.model, run.spec.replicas, fetching)
}

/// The Deployment and Service of a canary or shadow: named after the
/// instance with the track (`api-canary`), its pods labelled apart from the
/// main track's (so neither Service picks the other's), sharing the main
/// track's ConfigMap and token. Both get the main Deployment as owner.
pub fn side_objects(
    run: &ServingRun,
    side: &SideTrack,
    fetching: &PodSettings,
) -> Result<(Deployment, Service), AppError> {
    let o = build(run, side.track, &side.model, side.replicas, fetching)?;
    Ok((o.deployment, o.service))
}

/// The Deployment (and Service) name of `track` of instance `name`.
pub fn track_name(name: &str, track: Track) -> String {
    match track {
        Track::Main => name.to_owned(),
        other => format!("{name}-{}", other.as_str()),
    }
}

/// The value of [`SERVING_ID`] on `track`'s pods of instance `id`.
pub fn track_id(id: i64, track: Track) -> String {
    match track {
        Track::Main => id.to_string(),
        other => format!("{id}-{}", other.as_str()),
    }
}

/// Seconds a stopping replica keeps answering before its server is told to
/// stop, so the Service has dropped it before it stops listening.
const DRAIN_SECONDS: u32 = 3;

fn build(
    run: &ServingRun,
    track: Track,
    model: &ModelFiles,
    replicas: u32,
    fetching: &PodSettings,
) -> Result<ServingObjects, AppError> {
    let spec = &run.spec;
    let id = track_id(run.id, track);
    let object_name = track_name(&spec.name, track);
    let labels = json!({ MANAGED_BY: CONSOLE, SERVING: spec.name, SERVING_ID: id,
                         SERVING_TRACK: track.as_str() });
    let per = spec.per_replica()?;
    let amounts = workload_pod::amounts(&spec.resources, "resources")?;
    let mut env: Vec<serde_json::Value> = spec
        .env
        .iter()
        .map(|v| json!({ "name": v.name, "value": v.value }))
        .collect();
    // Pods fetch the model when they can reach the console with a token:
    // into the node's cache, as a job's model versions are, so a second
    // replica (or instance) of the version on that node downloads nothing.
    let fetch = fetching.console_url.is_some() && run.token.is_some();
    let pinned = format!("{}:{}", model.model, model.version);
    let model_input = app::models::job_inputs(&run.account.name, &[], &[pinned])?;
    let model_dir = if fetch {
        inputs::path_of(&model_input[0])
    } else {
        format!(
            "{}/{}/{}",
            fetching.model_root.trim_end_matches('/'),
            model.model,
            model.version
        )
    };
    // One file of the version (a `.tar.gz`) when the spec names one: the
    // predict server unpacks it.
    let model_path = if spec.file.is_empty() {
        model_dir
    } else {
        format!("{model_dir}/{}", spec.file.trim_start_matches('/'))
    };
    env.extend([
        json!({ "name": "PADDLECLOUD_MODEL", "value": model.model }),
        json!({ "name": "PADDLECLOUD_MODEL_VERSION", "value": model.version.to_string() }),
        json!({ "name": "PADDLECLOUD_MODEL_DIR", "value": model_path }),
        json!({ "name": "PYTHONUNBUFFERED", "value": "1" }),
    ]);
    let mut set = |name: &str, value: String| env.push(json!({ "name": name, "value": value }));
    set("PORT", SERVING_PORT.to_string());
    set("HOST", "0.0.0.0".to_owned());
    set(
        "PADDLECLOUD_SERVING_THREADS",
        per.cpu_millis.div_ceil(1000).max(1).to_string(),
    );
    if !spec.script.is_empty() {
        set(
            "PADDLECLOUD_SERVING_SCRIPT",
            format!("{CONFIG_DIR}/script.py"),
        );
    }
    let own = if spec.image.is_empty() {
        DEFAULT_IMAGE
    } else {
        spec.image.as_str()
    };
    let environment = spec.environment_use.as_ref();
    let image = super::super::environment::image(environment, own);
    let config_name = config_name(&spec.name);
    let default = spec.command.is_empty();
    let command = if default {
        vec!["python3".to_owned(), format!("{CONFIG_DIR}/serving.py")]
    } else {
        spec.command.clone()
    };
    // The config volume: the predict server and the script, not the SDK's keys.
    let mut config_items = vec![json!({ "key": "serving.py", "path": "serving.py" })];
    if !spec.script.is_empty() {
        config_items.push(json!({ "key": "script.py", "path": "script.py" }));
    }
    // The SDK, as in jobs' pods: a serving script or command may `import
    // paddlecloud` (after a PYTHONPATH of the spec's own).
    crate::kubernetes::environment::add_to_pythonpath(&mut env, SDK_DIR, false);
    let mounts = vec![
        json!({ "name": "paddlecloud", "mountPath": CONFIG_DIR, "readOnly": true }),
        sdk_mount(),
    ];
    let volumes = vec![
        json!({ "name": "paddlecloud", "configMap": { "name": config_name, "items": config_items } }),
        json!({ "name": "sdk", "configMap": { "name": config_name, "items": sdk_items() } }),
    ];
    let mut container = workload_pod::server_container(
        SERVING_CONTAINER,
        image,
        &command,
        env,
        SERVING_PORT,
        &amounts,
        mounts,
    );
    // Out of the Service's endpoints before the server stops listening:
    // calls in flight to a replica a roll stops are not lost.
    container["lifecycle"] = json!({
        "preStop": { "exec": { "command": ["sleep", DRAIN_SECONDS.to_string()] } }
    });
    if default {
        // The default server listens only once the model is loaded.
        container["readinessProbe"] = json!({
            "httpGet": { "path": "/healthz", "port": SERVING_PORT },
            "periodSeconds": 2,
        });
    }
    let mut pod = json!({
        "enableServiceLinks": false,
        "terminationGracePeriodSeconds": fetching.grace_seconds,
        "containers": [container],
        "volumes": volumes,
    });
    // The account's secrets, from the instance's Secret of them.
    let secrets = crate::kubernetes::secrets::secret_name(&spec.name);
    crate::kubernetes::secrets::apply(&secrets, &spec.secrets, &mut pod);
    if fetch {
        let token = json!({ "secretKeyRef": { "name": config_name, "key": "token" } });
        let resources = workload_pod::requests_and_limits(&amounts);
        let support = fetching.support;
        inputs::apply(
            &model_input,
            support,
            fetching.console_url,
            token,
            &resources,
            "model",
            &mut pod,
        )?;
    }
    let index = fetching.support.pip_index_url.as_deref();
    super::super::environment::apply(environment, &[], image, index, &mut pod);
    // A new version rolls in one replica at a time, each answering before
    // an old one goes.
    let strategy = json!({ "strategy": {
        "type": "RollingUpdate",
        "rollingUpdate": { "maxUnavailable": 0, "maxSurge": 1 },
    }});
    let deployment = from_json(workload_pod::controller(
        "Deployment",
        &object_name,
        &labels,
        json!({ SERVING_ID: id }),
        replicas,
        pod,
        strategy,
    ))?;
    let selector = json!({ SERVING_ID: id });
    let service = from_json(workload_pod::http_service(
        &object_name,
        &labels,
        selector,
        SERVING_PORT,
    ))?;
    let mut files = serde_json::Value::Object(sdk_data());
    files["serving.py"] = json!(crate::backend::serving::PREDICT_SERVER);
    if !spec.script.is_empty() {
        files["script.py"] = json!(spec.script);
    }
    let config = from_json(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": config_name, "labels": labels },
        "data": files,
    }))?;
    let hpa = spec
        .autoscale
        .map(|a| hpa_object(&spec.name, &labels, a))
        .transpose()?;
    let secret = match (&run.token, fetch) {
        (Some(token), true) => Some(from_json(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": { "name": config_name, "labels": labels },
            "type": "Opaque",
            "stringData": { "token": token },
        }))?),
        _ => None,
    };
    Ok(ServingObjects {
        deployment,
        service,
        config,
        secret,
        hpa,
    })
}

pub(super) fn hpa_object(
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
pub(super) fn owned_by(deployment: &Deployment) -> serde_json::Value {
    json!([{
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment.metadata.name,
        "uid": deployment.metadata.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

/// The name of an instance's ConfigMap, which its Secret shares.
pub(super) fn config_name(serving: &str) -> String {
    format!("{serving}-serving")
}

#[cfg(test)]
mod tests {
    use app::models::{Account, ReplicaResources, ServingSpec};
    use serde_json::Value;

    use super::*;
    use crate::backend::serving::ModelFiles;
    use crate::kubernetes::pods::env_of;

    fn run(token: Option<&str>, file: &str) -> ServingRun {
        ServingRun {
            id: 7,
            account: Account {
                id: 1,
                name: "acme".into(),
                namespace: "pc-acme".into(),
                created_at: 0,
            },
            spec: ServingSpec {
                name: "tiny-api".into(),
                model: "tiny".into(),
                version: Some(3),
                file: file.into(),
                script: String::new(),
                command: vec![],
                image: String::new(),
                env: vec![],
                replicas: 2,
                resources: ReplicaResources {
                    cpu: "1".into(),
                    memory: "1Gi".into(),
                    gpu: 0,
                },
                autoscale: None,
                environment: None,
                environment_use: None,
                canary: None,
                shadow: None,
                secrets: vec![],
            },
            model: ModelFiles {
                model: "acme/tiny".into(),
                version: 3,
                local: None,
            },
            token: token.map(str::to_owned),
            side: vec![],
            secrets: Default::default(),
        }
    }

    /// The console's settings for pods, reaching it at `console_url`.
    fn settings(console_url: Option<&'static str>) -> PodSettings<'static> {
        static SUPPORT: std::sync::LazyLock<PodSupport> =
            std::sync::LazyLock::new(PodSupport::default);
        PodSettings {
            grace_seconds: 5,
            console_url,
            model_root: "/models",
            support: &SUPPORT,
        }
    }

    fn pod_spec(objects: &ServingObjects) -> Value {
        serde_json::to_value(&objects.deployment).unwrap()["spec"]["template"]["spec"].clone()
    }

    #[test]
    fn every_tracks_replicas_read_the_accounts_secrets_from_the_instances_secret() {
        let fetching = settings(None);
        let mut r = run(None, "");
        r.spec.secrets = app::models::parse_secret_uses("S_TOKEN=tok\nfile:c.txt=cred").unwrap();
        r.secrets = crate::secrets::Revealed {
            env: vec![("S_TOKEN".into(), "tok-value-1".into())],
            files: vec![("c.txt".into(), b"cred-value-2".to_vec())],
        };
        let main = serving_objects(&r, &fetching).unwrap();
        let side = SideTrack {
            track: Track::Canary,
            model: r.model.clone(),
            replicas: 1,
        };
        let (canary, _) = side_objects(&r, &side, &fetching).unwrap();
        for deployment in [&main.deployment, &canary] {
            let text = serde_json::to_string(deployment).unwrap();
            assert!(
                !text.contains("tok-value-1") && !text.contains("cred-value-2"),
                "{text}"
            );
            let pod = serde_json::to_value(deployment).unwrap()["spec"]["template"]["spec"].clone();
            assert_eq!(
                env_of(&pod["containers"][0], "S_TOKEN")["valueFrom"]["secretKeyRef"]["name"],
                "tiny-api-secrets"
            );
            assert_eq!(
                pod["volumes"].as_array().unwrap().last().unwrap()["secret"]["secretName"],
                "tiny-api-secrets"
            );
        }
    }

    #[test]
    fn a_replica_imports_the_sdk_from_the_instances_config_map() {
        let fetching = settings(None);
        let objects = serving_objects(&run(None, ""), &fetching).unwrap();
        let pod = pod_spec(&objects);
        let main = &pod["containers"][0];
        assert_eq!(env_of(main, "PYTHONPATH")["value"], SDK_DIR);
        let mounts = main["volumeMounts"].as_array().unwrap();
        assert!(mounts.iter().any(|m| m["name"] == "sdk"
            && m["mountPath"] == format!("{SDK_DIR}/paddlecloud")
            && m["readOnly"] == true));
        let config = serde_json::to_value(&objects.config).unwrap();
        assert!(config["data"]["sdk.__init__.py"]
            .as_str()
            .is_some_and(|t| !t.is_empty()));
    }

    #[test]
    fn pods_fetch_the_model_with_the_instance_token_into_the_nodes_cache() {
        let fetching = settings(Some("http://console:3000"));
        let objects = serving_objects(&run(Some("pcv_secret"), "m.tar.gz"), &fetching).unwrap();
        let secret = serde_json::to_value(objects.secret.as_ref().unwrap()).unwrap();
        assert_eq!(secret["metadata"]["name"], "tiny-api-serving");
        assert_eq!(secret["stringData"]["token"], "pcv_secret");
        let pod = pod_spec(&objects);
        let init = &pod["initContainers"][0];
        assert_eq!(init["name"], inputs::FETCHER);
        assert_eq!(init["image"], inputs::DEFAULT_FETCH_IMAGE);
        assert_eq!(
            env_of(init, "PADDLECLOUD_FETCH_TOKEN")["valueFrom"]["secretKeyRef"]["name"],
            "tiny-api-serving"
        );
        assert_eq!(
            env_of(init, "PADDLECLOUD_SERVER")["value"],
            "http://console:3000"
        );
        let told: Value = serde_json::from_str(
            env_of(init, "PADDLECLOUD_INPUTS")["value"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(told[0]["kind"], "model");
        assert_eq!(told[0]["version"], 3);
        // The predict server is pointed at the named file of the cached version.
        let main = &pod["containers"][0];
        assert_eq!(
            env_of(main, "PADDLECLOUD_MODEL_DIR")["value"],
            "/opt/paddlecloud/inputs/models/acme/tiny/3/m.tar.gz"
        );
        // The token is the fetcher's alone, and the model is read-only.
        assert_eq!(env_of(main, "PADDLECLOUD_FETCH_TOKEN"), Value::Null);
        assert!(main["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["name"] == "input-cache")
            .all(|m| m["readOnly"] == true));
        // A stop gives replicas the console's grace, not Kubernetes' 30 s.
        assert_eq!(pod["terminationGracePeriodSeconds"], 5);
        assert!(pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["hostPath"]["path"] == inputs::DEFAULT_NODE_DIR));
    }

    #[test]
    fn the_fetcher_asks_for_the_replicas_cpu_and_memory_but_no_gpu() {
        let fetching = settings(Some("http://console:3000"));
        let mut r = run(Some("pcv_secret"), "");
        r.spec.resources.gpu = 1;
        let pod = pod_spec(&serving_objects(&r, &fetching).unwrap());
        let gpu = crate::kubernetes::capacity::GPU;
        assert_eq!(pod["containers"][0]["resources"]["limits"][gpu], "1");
        let fetcher = &pod["initContainers"][0]["resources"];
        assert_eq!(fetcher["limits"]["cpu"], "1000m");
        assert_eq!(fetcher["limits"][gpu], Value::Null);
        assert_eq!(fetcher["requests"][gpu], Value::Null);
    }

    #[test]
    fn without_a_console_url_pods_do_not_try_to_fetch() {
        let fetching = settings(None);
        let objects = serving_objects(&run(Some("pcv_secret"), ""), &fetching).unwrap();
        assert!(objects.secret.is_none());
        let pod = pod_spec(&objects);
        assert_eq!(pod["initContainers"].as_array().map_or(0, Vec::len), 0);
        assert_eq!(
            env_of(&pod["containers"][0], "PADDLECLOUD_MODEL_DIR")["value"],
            "/models/acme/tiny/3"
        );
    }

    #[test]
    fn an_environment_runs_the_replicas_in_its_image_after_the_model_fetcher() {
        let fetching = settings(Some("http://console:3000"));
        let mut r = run(Some("pcv_secret"), "");
        r.spec.environment_use = Some(app::models::EnvironmentUse {
            reference: "acme/serve:1".into(),
            image: "paddlepaddle/paddle:3.3.1".into(),
            requirements: vec!["numpy<2".into()],
        });
        let pod = pod_spec(&serving_objects(&r, &fetching).unwrap());
        let init: Vec<&str> = pod["initContainers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(init, [inputs::FETCHER, "environment"]);
        let main = &pod["containers"][0];
        assert_eq!(main["image"], "paddlepaddle/paddle:3.3.1");
        // The environment's packages first, the SDK after them.
        assert_eq!(
            env_of(main, "PYTHONPATH")["value"],
            format!("/opt/paddlecloud/env:{SDK_DIR}")
        );
        // The model's cache is still mounted beside the environment's.
        let mounts: Vec<&str> = main["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert!(
            mounts.contains(&"input-cache") && mounts.contains(&"environment"),
            "{mounts:?}"
        );
    }
}
