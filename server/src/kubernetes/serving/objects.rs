//! The objects of a serving instance, as the API server takes them.

use app::error::AppError;
use app::models::quantity::{parse_cpu_millis, parse_memory_bytes};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use serde_json::json;

use super::{DEFAULT_IMAGE, FETCH_CONTAINER, SERVING, SERVING_CONTAINER, SERVING_ID, SERVING_PORT};
use crate::backend::notebooks::SDK_FILES;
use crate::backend::serving::Run;
use crate::kubernetes::notebooks::SDK_DIR;
use crate::kubernetes::objects::{from_json, CONSOLE, MANAGED_BY};
use crate::kubernetes::objects::{sdk_items, sdk_key};

/// Where the ConfigMap (predict server, user script) is mounted.
const CONFIG_DIR: &str = "/etc/paddlecloud";
/// The fetcher, run with `python3 -c` so the image needs only a Python.
const FETCH_MODEL: &str = include_str!("../../../../sdk/python/paddlecloud/fetch_model.py");

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
/// where the console is, where the model goes, how long a stop waits.
pub struct PodSettings<'a> {
    /// The console's URL as pods reach it; without one, pods cannot fetch
    /// the model and the image must hold it.
    pub console_url: Option<&'a str>,
    /// Where the model volume is mounted.
    pub model_root: &'a str,
    /// The index the environment's init step installs from.
    pub pip_index_url: Option<&'a str>,
    /// Seconds between SIGTERM and SIGKILL when a replica is stopped (the
    /// console's `--stop-grace`, as for jobs; Kubernetes' own default is 30).
    pub grace_seconds: i64,
}

/// The objects of an instance. All but the Deployment get their owner
/// reference once it exists (see [`owned_by`]).
pub fn serving_objects(run: &Run, fetching: &PodSettings) -> Result<ServingObjects, AppError> {
    let spec = &run.spec;
    let id = run.id.to_string();
    let labels = json!({ MANAGED_BY: CONSOLE, SERVING: spec.name, SERVING_ID: id });
    let per = spec.per_replica()?;
    let mut amounts = json!({
        "cpu": format!("{}m", parse_cpu_millis("resources.cpu", &spec.resources.cpu)?),
        "memory": parse_memory_bytes("resources.memory", &spec.resources.memory)?.to_string(),
    });
    if per.gpu > 0 {
        amounts[crate::kubernetes::capacity::GPU] = json!(per.gpu.to_string());
    }
    let mut env: Vec<serde_json::Value> = spec
        .env
        .iter()
        .map(|v| json!({ "name": v.name, "value": v.value }))
        .collect();
    // What both the fetcher and the predict server need to know.
    let mut model_env = vec![
        json!({ "name": "PADDLECLOUD_MODEL", "value": run.model.model }),
        json!({ "name": "PADDLECLOUD_MODEL_VERSION", "value": run.model.version.to_string() }),
        json!({ "name": "PADDLECLOUD_MODEL_DIR", "value": format!(
            "{}/{}/{}", fetching.model_root.trim_end_matches('/'), run.model.model, run.model.version) }),
        json!({ "name": "PYTHONUNBUFFERED", "value": "1" }),
    ];
    if !spec.file.is_empty() {
        model_env.push(json!({ "name": "PADDLECLOUD_MODEL_FILE", "value": spec.file }));
    }
    if let Some(url) = fetching.console_url {
        model_env.push(json!({ "name": "PADDLECLOUD_SERVER", "value": url }));
    }
    env.extend(model_env.iter().cloned());
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
    // Pods fetch the model when they can reach the console with a token.
    let fetch = fetching.console_url.is_some() && run.token.is_some();
    let model_mount = json!({ "name": "model", "mountPath": fetching.model_root });
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
    let mut mounts = vec![
        json!({ "name": "paddlecloud", "mountPath": CONFIG_DIR, "readOnly": true }),
        json!({ "name": "sdk", "mountPath": format!("{SDK_DIR}/paddlecloud"), "readOnly": true }),
    ];
    let mut volumes = vec![
        json!({ "name": "paddlecloud", "configMap": { "name": config_name, "items": config_items } }),
        json!({ "name": "sdk", "configMap": { "name": config_name, "items": sdk_items() } }),
    ];
    let mut init = vec![];
    if fetch {
        mounts.push(model_mount.clone());
        volumes.push(json!({ "name": "model", "emptyDir": {} }));
        let mut fetch_env = model_env;
        fetch_env.push(json!({
            "name": "PADDLECLOUD_SERVING_TOKEN",
            "valueFrom": { "secretKeyRef": { "name": config_name, "key": "token" } },
        }));
        init.push(json!({
            "name": FETCH_CONTAINER,
            "image": image,
            "command": ["python3", "-c", FETCH_MODEL],
            "env": fetch_env,
            "volumeMounts": [model_mount],
            // Small: it only streams bytes to disk.
            "resources": { "requests": { "cpu": "100m", "memory": "128Mi" },
                           "limits": { "cpu": "1", "memory": "512Mi" } },
            "terminationMessagePolicy": "FallbackToLogsOnError",
        }));
    }
    let mut container = json!({
        "name": SERVING_CONTAINER,
        "image": image,
        "command": command,
        "env": env,
        "ports": [{ "name": "http", "containerPort": SERVING_PORT }],
        "resources": { "requests": amounts, "limits": amounts },
        "volumeMounts": mounts,
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
    let mut pod = json!({
        "enableServiceLinks": false,
        "terminationGracePeriodSeconds": fetching.grace_seconds,
        "initContainers": init,
        "containers": [container],
        "volumes": volumes,
    });
    super::super::environment::apply(environment, &[], image, fetching.pip_index_url, &mut pod);
    let deployment = from_json(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": spec.name, "labels": labels },
        "spec": {
            "replicas": spec.replicas,
            "selector": { "matchLabels": { SERVING_ID: id } },
            "template": {
                "metadata": { "labels": labels },
                "spec": pod,
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
    let mut files = json!({ "serving.py": crate::backend::serving::PREDICT_SERVER });
    for (file, text) in SDK_FILES {
        files[sdk_key(file)] = json!(text);
    }
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

    fn run(token: Option<&str>, file: &str) -> Run {
        Run {
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
            },
            model: ModelFiles {
                model: "acme/tiny".into(),
                version: 3,
                local: None,
            },
            token: token.map(str::to_owned),
        }
    }

    fn pod_spec(objects: &ServingObjects) -> Value {
        serde_json::to_value(&objects.deployment).unwrap()["spec"]["template"]["spec"].clone()
    }

    #[test]
    fn a_replica_imports_the_sdk_from_the_instances_config_map() {
        let fetching = PodSettings {
            grace_seconds: 5,
            console_url: None,
            model_root: "/models",
            pip_index_url: None,
        };
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
    fn pods_fetch_the_model_with_the_instance_token_into_a_shared_volume() {
        let fetching = PodSettings {
            grace_seconds: 5,
            console_url: Some("http://console:3000"),
            model_root: "/models",
            pip_index_url: None,
        };
        let objects = serving_objects(&run(Some("pcv_secret"), "m.tar.gz"), &fetching).unwrap();
        let secret = serde_json::to_value(objects.secret.as_ref().unwrap()).unwrap();
        assert_eq!(secret["metadata"]["name"], "tiny-api-serving");
        assert_eq!(secret["stringData"]["token"], "pcv_secret");
        let pod = pod_spec(&objects);
        let init = &pod["initContainers"][0];
        assert_eq!(init["name"], FETCH_CONTAINER);
        assert_eq!(init["command"][0], "python3");
        assert_eq!(
            env_of(init, "PADDLECLOUD_SERVING_TOKEN")["valueFrom"]["secretKeyRef"]["name"],
            "tiny-api-serving"
        );
        assert_eq!(
            env_of(init, "PADDLECLOUD_SERVER")["value"],
            "http://console:3000"
        );
        assert_eq!(env_of(init, "PADDLECLOUD_MODEL_FILE")["value"], "m.tar.gz");
        let main = &pod["containers"][0];
        // Both read and write the same folder, on the same volume.
        for c in [init, main] {
            assert_eq!(
                env_of(c, "PADDLECLOUD_MODEL_DIR")["value"],
                "/models/acme/tiny/3"
            );
            assert!(c["volumeMounts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["name"] == "model" && m["mountPath"] == "/models"));
        }
        // The token is the fetcher's alone.
        assert_eq!(env_of(main, "PADDLECLOUD_SERVING_TOKEN"), Value::Null);
        // A stop gives replicas the console's grace, not Kubernetes' 30 s.
        assert_eq!(pod["terminationGracePeriodSeconds"], 5);
        assert!(pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"] == "model" && v["emptyDir"].is_object()));
    }

    #[test]
    fn without_a_console_url_pods_do_not_try_to_fetch() {
        let fetching = PodSettings {
            grace_seconds: 5,
            console_url: None,
            model_root: "/models",
            pip_index_url: None,
        };
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
    fn the_fetcher_survives_kubernetes_variable_expansion() {
        // `$(VAR)` in a command is expanded by the kubelet: none may be there.
        assert!(!FETCH_MODEL.contains('$'));
    }

    #[test]
    fn an_environment_runs_the_replicas_in_its_image_after_the_model_fetcher() {
        let fetching = PodSettings {
            grace_seconds: 5,
            console_url: Some("http://console:3000"),
            model_root: "/models",
            pip_index_url: None,
        };
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
        assert_eq!(init, [FETCH_CONTAINER, "environment"]);
        let main = &pod["containers"][0];
        assert_eq!(main["image"], "paddlepaddle/paddle:3.3.1");
        // The environment's packages first, the SDK after them.
        assert_eq!(
            env_of(main, "PYTHONPATH")["value"],
            format!("/opt/paddlecloud/env:{SDK_DIR}")
        );
        // The model's volume is still mounted beside the environment's.
        let mounts: Vec<&str> = main["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert!(
            mounts.contains(&"model") && mounts.contains(&"environment"),
            "{mounts:?}"
        );
    }
}
