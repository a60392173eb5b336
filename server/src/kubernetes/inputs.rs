//! Datasets and model versions in pods, at the same variables as locally.
//!
//! The console cannot hand a pod a folder, so an init container
//! (`fetch-inputs`, the SDK's `fetch_inputs.py`) fetches each input from the
//! console with the pod's own credential into a cache on the node (a
//! hostPath), once per revision: a second job on that node downloads
//! nothing. The init step runs in an image the console names, never the
//! job's: the cache is shared by every pod of the node, so no program a user
//! chose writes there. Each pod mounts only its inputs' folders of the cache,
//! read-only, and finds them through links in a folder of its own
//! ([`LINKS`]), which is where the variables point.

use app::error::AppError;
use app::models::{AssetKind, Input};
use serde_json::{json, Value};

use super::environment::push;
use super::sdk::sdk_mount;

/// Where a pod's links to its inputs are (and `fetch.log`, what the init
/// step did).
pub const LINKS: &str = "/opt/paddlecloud/inputs";
/// Where the cache's folders are mounted, in the init step and the pod.
const CACHE: &str = "/opt/paddlecloud/cache";
/// The init container's name.
pub const FETCHER: &str = "fetch-inputs";
const LINKS_VOLUME: &str = "inputs";
const CACHE_VOLUME: &str = "input-cache";

/// Runs the fetcher from the mounted SDK with the image's `python3`.
const BOOT: &str = concat!(
    "import sys; sys.path.insert(0, \"/opt/paddlecloud/python\"); ",
    "from paddlecloud.fetch_inputs import main; sys.exit(main())",
);

/// The fetcher's image unless `--kube-fetch-image` says otherwise.
pub const DEFAULT_FETCH_IMAGE: &str = "python:3.11-slim";
/// The nodes' cache unless `--kube-input-cache` says otherwise.
pub const DEFAULT_NODE_DIR: &str = "/var/cache/paddlecloud/inputs";

/// What the console's init steps need besides a pod's spec: where the node
/// keeps its cache of inputs and what fetches them, and the package index
/// environments' requirements are installed from.
#[derive(Debug, Clone)]
pub struct PodSupport {
    /// The image of the inputs' init step (`--kube-fetch-image`): any with
    /// `python3`; the console's choice, not a job's.
    pub image: String,
    /// The cache's folder on every node (`--kube-input-cache`).
    pub node_dir: String,
    /// The index environments' init steps install from (`PIP_INDEX_URL`,
    /// `--kube-pip-index-url`; `None`: pip's own, PyPI).
    pub pip_index_url: Option<String>,
}

impl Default for PodSupport {
    fn default() -> Self {
        Self {
            image: DEFAULT_FETCH_IMAGE.to_owned(),
            node_dir: DEFAULT_NODE_DIR.to_owned(),
            pip_index_url: None,
        }
    }
}

/// The input's folder in the cache: `<kind>s/<owner>/<name>` (its
/// revisions below it). Names are checked asset and account names: no `/`,
/// no `..`.
fn folder(input: &Input) -> String {
    let kind = match input.asset.kind {
        AssetKind::Dataset => "datasets",
        AssetKind::Model => "models",
    };
    format!("{kind}/{}/{}", input.asset.owner, input.asset.name)
}

/// The input's link below [`LINKS`].
fn link(input: &Input) -> String {
    match input.version {
        Some(v) => format!("{}/{v}", folder(input)),
        None => folder(input),
    }
}

/// Where a pod finds `input` (a link to its revision in the node's cache):
/// the value of its variables.
pub fn path_of(input: &Input) -> String {
    format!("{LINKS}/{}", link(input))
}

/// What the fetcher is told of an input.
fn described(input: &Input) -> Value {
    json!({
        "kind": match input.asset.kind { AssetKind::Dataset => "dataset", AssetKind::Model => "model" },
        "owner": input.asset.owner,
        "name": input.asset.name,
        "version": input.version,
        "link": link(input),
    })
}

/// Adds `inputs` to a pod spec whose first container reads them: the init
/// step (before any the pod has), the cache's folders and the links, and
/// the variables. `credential` is the `valueFrom` of the pod's token;
/// without `console_url` pods cannot fetch, which is said on `field`.
pub fn apply(
    inputs: &[Input],
    cache: &PodSupport,
    console_url: Option<&str>,
    credential: Value,
    resources: &Value,
    field: &str,
    pod: &mut Value,
) -> Result<(), AppError> {
    if inputs.is_empty() {
        return Ok(());
    }
    let Some(url) = console_url else {
        return Err(AppError::invalid(
            field,
            "Pods fetch datasets and models from the console: start it with --public-url \
             reachable from the cluster's pods.",
        ));
    };
    let mut folders: Vec<String> = inputs.iter().map(folder).collect();
    folders.sort();
    folders.dedup();
    let cache_mounts = |read_only: bool| {
        folders.iter().map(move |f| {
            json!({ "name": CACHE_VOLUME, "mountPath": format!("{CACHE}/{f}"),
                    "subPath": f, "readOnly": read_only })
        })
    };
    let described: Vec<Value> = inputs.iter().map(described).collect();
    // As much CPU and memory as the pod's container (the pod then asks for
    // no more), but no GPU: it only streams bytes to disk.
    let mut resources = resources.clone();
    for amounts in ["requests", "limits"] {
        if let Some(map) = resources.get_mut(amounts).and_then(Value::as_object_mut) {
            map.remove(super::capacity::GPU);
        }
    }
    let mut fetcher_mounts = vec![
        json!({ "name": LINKS_VOLUME, "mountPath": LINKS }),
        sdk_mount(),
    ];
    fetcher_mounts.extend(cache_mounts(false));
    let fetcher = json!({
        "name": FETCHER,
        "image": cache.image,
        "command": ["python3", "-c", BOOT],
        "env": [
            { "name": "PADDLECLOUD_SERVER", "value": url },
            { "name": "PADDLECLOUD_FETCH_TOKEN", "valueFrom": credential },
            { "name": "PADDLECLOUD_INPUTS", "value": Value::Array(described).to_string() },
            { "name": "PADDLECLOUD_INPUT_CACHE", "value": CACHE },
            { "name": "PADDLECLOUD_INPUT_DIR", "value": LINKS },
            { "name": "PYTHONUNBUFFERED", "value": "1" },
        ],
        "volumeMounts": fetcher_mounts,
        "resources": resources,
        "terminationMessagePolicy": "FallbackToLogsOnError",
    });
    // Before the environment's step, which may read them.
    match pod["initContainers"].as_array_mut() {
        Some(list) => list.insert(0, fetcher),
        None => pod["initContainers"] = json!([fetcher]),
    }
    push(
        pod,
        "volumes",
        json!({ "name": LINKS_VOLUME, "emptyDir": {} }),
    );
    push(
        pod,
        "volumes",
        json!({ "name": CACHE_VOLUME,
                "hostPath": { "path": cache.node_dir, "type": "DirectoryOrCreate" } }),
    );
    let container = &mut pod["containers"][0];
    push(
        container,
        "volumeMounts",
        json!({ "name": LINKS_VOLUME, "mountPath": LINKS, "readOnly": true }),
    );
    for mount in cache_mounts(true) {
        push(container, "volumeMounts", mount);
    }
    for input in inputs {
        for variable in input.variables() {
            push(
                container,
                "env",
                json!({ "name": variable, "value": path_of(input) }),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Value {
        json!({
            "containers": [{ "name": "paddle", "env": [], "volumeMounts": [] }],
            "initContainers": [{ "name": "environment" }],
            "volumes": [{ "name": "sdk", "configMap": { "name": "j" } }],
        })
    }

    fn inputs() -> Vec<Input> {
        app::models::job_inputs(
            "acme",
            &["mnist".into(), "shared/faces".into()],
            &["acme/base:3".into()],
        )
        .unwrap()
    }

    #[test]
    fn a_pod_reads_its_inputs_through_links_and_only_their_folders_of_the_cache_read_only() {
        let mut p = pod();
        let token = json!({ "secretKeyRef": { "name": "j-token", "key": "token" } });
        let amounts = json!({ "requests": { "cpu": "1" } });
        apply(
            &inputs(),
            &PodSupport::default(),
            Some("http://console:8080"),
            token.clone(),
            &amounts,
            "datasets",
            &mut p,
        )
        .unwrap();
        let fetcher = &p["initContainers"][0];
        assert_eq!(fetcher["name"], FETCHER);
        assert_eq!(p["initContainers"][1]["name"], "environment");
        assert_eq!(fetcher["image"], "python:3.11-slim");
        assert_eq!(fetcher["resources"], amounts);
        let env = crate::kubernetes::pods::env_of;
        assert_eq!(env(fetcher, "PADDLECLOUD_FETCH_TOKEN")["valueFrom"], token);
        let told: Value = serde_json::from_str(
            env(fetcher, "PADDLECLOUD_INPUTS")["value"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(told[2]["link"], "models/acme/base/3");
        assert_eq!(told[1]["owner"], "shared");
        let main = &p["containers"][0];
        assert_eq!(
            env(main, "PADDLE_DATASET_DIR")["value"],
            "/opt/paddlecloud/inputs/datasets/acme/mnist"
        );
        assert_eq!(
            env(main, "PADDLE_DATASET_DIR_FACES")["value"],
            "/opt/paddlecloud/inputs/datasets/shared/faces"
        );
        assert_eq!(
            env(main, "PADDLE_MODEL_DIR_BASE")["value"],
            "/opt/paddlecloud/inputs/models/acme/base/3"
        );
        // The job's container writes nowhere in the cache, and sees only
        // its inputs' folders of it.
        let mounts = main["volumeMounts"].as_array().unwrap();
        let cached: Vec<&Value> = mounts
            .iter()
            .filter(|m| m["name"] == CACHE_VOLUME)
            .collect();
        assert_eq!(cached.len(), 3);
        assert!(cached.iter().all(|m| m["readOnly"] == true));
        assert!(cached
            .iter()
            .any(|m| m["subPath"] == "datasets/shared/faces"));
        assert!(mounts
            .iter()
            .any(|m| m["name"] == LINKS_VOLUME && m["readOnly"] == true));
        let fetcher_cache = fetcher["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["name"] == CACHE_VOLUME)
            .count();
        assert_eq!(fetcher_cache, 3);
        let volumes = p["volumes"].as_array().unwrap();
        assert!(volumes
            .iter()
            .any(|v| v["hostPath"]["path"] == "/var/cache/paddlecloud/inputs"));
    }

    #[test]
    fn a_pod_without_inputs_is_left_alone() {
        let mut p = pod();
        let before = p.clone();
        apply(
            &[],
            &PodSupport::default(),
            None,
            json!({}),
            &json!({}),
            "datasets",
            &mut p,
        )
        .unwrap();
        assert_eq!(p, before);
    }

    #[test]
    fn without_a_console_url_pods_cannot_fetch_and_the_spec_is_refused() {
        let err = apply(
            &inputs(),
            &PodSupport::default(),
            None,
            json!({}),
            &json!({}),
            "datasets",
            &mut pod(),
        )
        .unwrap_err();
        assert_eq!(err.field(), Some("datasets"));
    }
}
