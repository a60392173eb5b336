//! The objects of a notebook, as the API server takes them.

use app::error::AppError;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Secret, Service};
use serde_json::json;

use super::{NotebookPods, NOTEBOOK, NOTEBOOK_CONTAINER, NOTEBOOK_ID, WORKSPACE_DIR};
use crate::backend::notebooks::{jupyter_args, NotebookRun, SDK_FILES};
use crate::kubernetes::inputs::{self, PodSupport};
use crate::kubernetes::objects::{from_json, CONSOLE, MANAGED_BY};
use crate::kubernetes::sdk::{sdk_mount, SDK_DIR};
use crate::kubernetes::workload_pod;

/// The Secret keys its container reads its credentials from: the token
/// for the server's identity provider (`paddlecloud/lab.py`, which takes it
/// out of the environment before kernels inherit it) and the SDK's key.
const TOKEN_KEY: &str = "PADDLECLOUD_LAB_TOKEN";
const KEY_KEY: &str = "PADDLECLOUD_KEY";
/// The group the workspace is writable by (`users`, Jupyter images' `jovyan`'s).
const WORKSPACE_GROUP: i64 = 100;

/// Everything a notebook is made of in its account's namespace.
pub struct NotebookObjects {
    /// Its server: one pod when running, none when stopped.
    pub stateful_set: StatefulSet,
    /// Port `http` in front of it (for an Ingress; the console's proxy
    /// goes to the pod).
    pub service: Service,
    /// The workspace, kept across stops.
    pub claim: PersistentVolumeClaim,
    /// The Jupyter token and the notebook's key: what its container reads
    /// from here, never from its spec.
    pub secret: Secret,
    /// The SDK its kernels import.
    pub sdk: ConfigMap,
}

/// The name of its StatefulSet: the notebook's own, so that the pod
/// (`<name>-0`) and the revision label stay within 63 characters.
pub fn stateful_set_name(notebook: &str) -> String {
    notebook.to_owned()
}

/// The name of its pod.
pub fn pod_name(notebook: &str) -> String {
    format!("{}-0", stateful_set_name(notebook))
}

/// The name of its Service, Secret and ConfigMap (apart from a serving
/// instance's of the same name).
pub fn object_name(notebook: &str) -> String {
    format!("{notebook}-notebook")
}

/// The name of its workspace claim.
pub fn claim_name(notebook: &str) -> String {
    format!("{notebook}-workspace")
}

/// The objects of notebook `run` with pods made as `pods` says and the
/// server run by `python`.
pub fn notebook_objects(
    run: &NotebookRun,
    pods: &NotebookPods,
    python: &str,
    fetching: (&PodSupport, Option<&str>),
) -> Result<NotebookObjects, AppError> {
    let spec = &run.spec;
    let name = &spec.name;
    let id = run.id.to_string();
    let labels = json!({ MANAGED_BY: CONSOLE, NOTEBOOK: name, NOTEBOOK_ID: id });
    let amounts = workload_pod::amounts(&spec.resources, "resources")?;
    let secret_name = object_name(name);
    let from_secret = |key: &str| json!({ "secretKeyRef": { "name": secret_name, "key": key } });
    let mut env: Vec<serde_json::Value> = run
        .env
        .iter()
        .filter(|(k, _)| k != KEY_KEY)
        .map(|(k, v)| json!({ "name": k, "value": v }))
        .collect();
    env.extend([
        json!({ "name": TOKEN_KEY, "valueFrom": from_secret(TOKEN_KEY) }),
        json!({ "name": KEY_KEY, "valueFrom": from_secret(KEY_KEY) }),
        json!({ "name": "HOME", "value": WORKSPACE_DIR }),
        json!({ "name": "PYTHONPATH", "value": SDK_DIR }),
        json!({ "name": "PYTHONUNBUFFERED", "value": "1" }),
        json!({ "name": "SHELL", "value": "/bin/bash" }),
    ]);
    let key = run
        .env
        .iter()
        .find(|(k, _)| k == KEY_KEY)
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let mut command = vec![python.to_owned()];
    command.extend(jupyter_args(
        &run.base_url,
        WORKSPACE_DIR,
        "0.0.0.0",
        pods.port,
    ));
    let own = if spec.image.is_empty() {
        pods.image.as_str()
    } else {
        spec.image.as_str()
    };
    let environment = spec.environment_use.as_ref();
    let image = super::super::environment::image(environment, own);
    let mounts = vec![
        json!({ "name": "workspace", "mountPath": WORKSPACE_DIR }),
        sdk_mount(),
    ];
    let mut container = workload_pod::server_container(
        NOTEBOOK_CONTAINER,
        image,
        &command,
        env,
        pods.port,
        &amounts,
        mounts,
    );
    container["workingDir"] = json!(WORKSPACE_DIR);
    container["readinessProbe"] = json!({ "tcpSocket": { "port": pods.port }, "periodSeconds": 2 });
    let mut pod = json!({
        "enableServiceLinks": false,
        "terminationGracePeriodSeconds": pods.grace_seconds,
        "securityContext": { "fsGroup": WORKSPACE_GROUP },
        "containers": [container],
        "volumes": [
            { "name": "workspace",
              "persistentVolumeClaim": { "claimName": claim_name(name) } },
            { "name": "sdk", "configMap": { "name": object_name(name) } },
        ],
    });
    // The account's secrets, from the notebook's own Secret.
    crate::kubernetes::secrets::apply(&secret_name, &spec.secrets, &mut pod);
    let (cache, console_url) = fetching;
    let credential = from_secret(KEY_KEY);
    let resources = workload_pod::requests_and_limits(&amounts);
    inputs::apply(
        &run.inputs,
        cache,
        console_url,
        credential,
        &resources,
        "datasets",
        &mut pod,
    )?;
    // The server itself runs in the environment too: it needs JupyterLab.
    let index = cache.pip_index_url.as_deref();
    super::super::environment::apply(environment, &["jupyterlab"], image, index, &mut pod);
    let stateful_set = from_json(workload_pod::controller(
        "StatefulSet",
        &stateful_set_name(name),
        &labels,
        json!({ NOTEBOOK_ID: id }),
        1,
        pod,
        json!({ "serviceName": object_name(name) }),
    ))?;
    let selector = json!({ NOTEBOOK_ID: id });
    let service = from_json(workload_pod::http_service(
        &object_name(name),
        &labels,
        selector,
        pods.port,
    ))?;
    let mut claim_spec = json!({
        "accessModes": ["ReadWriteOnce"],
        "resources": { "requests": { "storage": pods.workspace_size } },
    });
    if let Some(class) = &pods.storage_class {
        claim_spec["storageClassName"] = json!(class);
    }
    let claim = from_json(json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": { "name": claim_name(name), "labels": labels },
        "spec": claim_spec,
    }))?;
    let secret = from_json(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": { "name": secret_name, "labels": labels },
        "type": "Opaque",
        "stringData": { TOKEN_KEY: run.jupyter_token, KEY_KEY: key },
        "data": crate::kubernetes::secrets::data(&run.secrets),
    }))?;
    let files: serde_json::Map<String, serde_json::Value> = SDK_FILES
        .iter()
        .map(|(file, text)| ((*file).to_owned(), json!(text)))
        .collect();
    let sdk = from_json(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": object_name(name), "labels": labels },
        "data": files,
    }))?;
    Ok(NotebookObjects {
        stateful_set,
        service,
        claim,
        secret,
        sdk,
    })
}

#[cfg(test)]
mod tests {
    use app::models::{Account, NotebookSpec, ReplicaResources};
    use serde_json::Value;

    use super::*;
    use crate::kubernetes::pods::env_of;

    fn run(image: &str, gpu: u32) -> NotebookRun {
        NotebookRun {
            id: 9,
            account: Account {
                id: 1,
                name: "acme".into(),
                namespace: "pc-acme".into(),
                created_at: 0,
            },
            spec: NotebookSpec {
                name: "scratch".into(),
                resources: ReplicaResources {
                    cpu: "500m".into(),
                    memory: "2Gi".into(),
                    gpu,
                },
                idle_minutes: None,
                image: image.into(),
                environment: None,
                environment_use: None,
                secrets: vec![],
            },
            jupyter_token: "jt-secret".into(),
            base_url: "/notebooks/acme/scratch/".into(),
            inputs: vec![],
            secrets: Default::default(),
            env: vec![
                ("PADDLECLOUD_KEY".into(), "pcn_secret".into()),
                ("PADDLECLOUD_SERVER".into(), "http://console:3000".into()),
            ],
        }
    }

    fn pods() -> NotebookPods {
        NotebookPods {
            image: "quay.io/jupyter/base-notebook".into(),
            port: 8888,
            storage_class: None,
            workspace_size: "5Gi".into(),
            grace_seconds: 10,
            reach: Default::default(),
        }
    }

    fn container(objects: &NotebookObjects) -> Value {
        serde_json::to_value(&objects.stateful_set).unwrap()["spec"]["template"]["spec"]
            ["containers"][0]
            .clone()
    }

    #[test]
    fn credentials_reach_the_server_from_its_secret_never_from_its_spec() {
        let objects =
            notebook_objects(&run("", 0), &pods(), "python3", (&Default::default(), None)).unwrap();
        let spec_text = serde_json::to_string(&objects.stateful_set).unwrap();
        assert!(!spec_text.contains("jt-secret"), "{spec_text}");
        assert!(!spec_text.contains("pcn_secret"), "{spec_text}");
        let secret = serde_json::to_value(&objects.secret).unwrap();
        assert_eq!(secret["stringData"]["PADDLECLOUD_LAB_TOKEN"], "jt-secret");
        assert_eq!(secret["stringData"]["PADDLECLOUD_KEY"], "pcn_secret");
        let c = container(&objects);
        for key in ["PADDLECLOUD_LAB_TOKEN", "PADDLECLOUD_KEY"] {
            assert_eq!(
                env_of(&c, key)["valueFrom"]["secretKeyRef"]["name"],
                "scratch-notebook"
            );
        }
        assert_eq!(
            env_of(&c, "PADDLECLOUD_SERVER")["value"],
            "http://console:3000"
        );
    }

    #[test]
    fn the_accounts_secrets_reach_the_server_from_its_secret_never_from_its_spec() {
        let mut run = run("", 0);
        run.spec.secrets =
            app::models::parse_secret_uses("NB_TOKEN=tok\nfile:c.json=cred").unwrap();
        run.secrets = crate::secrets::Revealed {
            env: vec![("NB_TOKEN".into(), "tok-value-1".into())],
            files: vec![("c.json".into(), b"cred-value-2".to_vec())],
        };
        let objects =
            notebook_objects(&run, &pods(), "python3", (&Default::default(), None)).unwrap();
        let spec_text = serde_json::to_string(&objects.stateful_set).unwrap();
        assert!(!spec_text.contains("tok-value-1"), "{spec_text}");
        assert!(!spec_text.contains("cred-value-2"), "{spec_text}");
        let secret = objects.secret.data.clone().unwrap();
        assert_eq!(secret["env.NB_TOKEN"].0, b"tok-value-1");
        assert_eq!(secret["file.c.json"].0, b"cred-value-2");
        let c = container(&objects);
        assert_eq!(
            env_of(&c, "NB_TOKEN")["valueFrom"]["secretKeyRef"],
            serde_json::json!({"name": "scratch-notebook", "key": "env.NB_TOKEN"})
        );
        assert_eq!(
            env_of(&c, "PADDLECLOUD_SECRETS_DIR")["value"],
            app::models::POD_SECRETS_DIR
        );
    }

    #[test]
    fn the_server_runs_under_the_proxied_path_in_its_workspace_with_the_sdk() {
        let objects =
            notebook_objects(&run("", 0), &pods(), "python3", (&Default::default(), None)).unwrap();
        let c = container(&objects);
        let command: Vec<&str> = c["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(&command[..3], ["python3", "-m", "jupyterlab"]);
        assert!(command.contains(&"--ServerApp.base_url=/notebooks/acme/scratch/"));
        assert!(command.contains(&"--ServerApp.root_dir=/home/jovyan"));
        assert!(command.contains(&"--port=8888"));
        assert_eq!(c["image"], "quay.io/jupyter/base-notebook");
        let mounts = c["volumeMounts"].as_array().unwrap();
        assert!(mounts
            .iter()
            .any(|m| m["name"] == "workspace" && m["mountPath"] == "/home/jovyan"));
        assert!(mounts.iter().any(|m| m["name"] == "sdk"
            && m["mountPath"] == "/opt/paddlecloud/python/paddlecloud"
            && m["readOnly"] == true));
        assert_eq!(env_of(&c, "PYTHONPATH")["value"], "/opt/paddlecloud/python");
        let set = serde_json::to_value(&objects.stateful_set).unwrap();
        assert_eq!(
            set["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "scratch-workspace"
        );
        let sdk = serde_json::to_value(&objects.sdk).unwrap();
        assert!(sdk["data"]["client.py"].as_str().unwrap().contains("class"));
        let claim = serde_json::to_value(&objects.claim).unwrap();
        assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "5Gi");
        // No class named: the cluster's default provisions it.
        assert!(claim["spec"]["storageClassName"].is_null());
    }

    #[test]
    fn a_notebooks_own_image_and_gpus_are_asked_for() {
        let objects = notebook_objects(
            &run("me/lab:1", 2),
            &pods(),
            "python3",
            (&Default::default(), None),
        )
        .unwrap();
        let c = container(&objects);
        assert_eq!(c["image"], "me/lab:1");
        assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], "2");
        assert_eq!(c["resources"]["requests"]["cpu"], "500m");
    }

    #[test]
    fn an_environment_runs_the_server_in_its_image_with_jupyterlab_added_by_the_init_step() {
        let mut r = run("", 0);
        r.spec.environment = Some("acme/vision:2".into());
        r.spec.environment_use = Some(app::models::EnvironmentUse {
            reference: "acme/vision:2".into(),
            image: "paddlepaddle/paddle:3.3.1".into(),
            requirements: vec!["visualdl==2.5.3".into()],
        });
        let objects =
            notebook_objects(&r, &pods(), "python3", (&Default::default(), None)).unwrap();
        let pod = serde_json::to_value(&objects.stateful_set).unwrap()["spec"]["template"]["spec"]
            .clone();
        let c = &pod["containers"][0];
        assert_eq!(c["image"], "paddlepaddle/paddle:3.3.1");
        let init = &pod["initContainers"][0];
        assert_eq!(init["image"], "paddlepaddle/paddle:3.3.1");
        let args = init["args"].as_array().unwrap();
        assert_eq!(
            args[2..],
            [
                json!("/opt/paddlecloud/env"),
                json!("visualdl==2.5.3"),
                json!("jupyterlab")
            ]
        );
        // Its packages come first; the SDK and the workspace stay.
        assert_eq!(
            env_of(c, "PYTHONPATH")["value"],
            "/opt/paddlecloud/env:/opt/paddlecloud/python"
        );
        let volumes: Vec<&str> = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        assert_eq!(volumes, ["workspace", "sdk", "environment"]);
        assert_eq!(c["volumeMounts"].as_array().unwrap().len(), 3);
    }
}
