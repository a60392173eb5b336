//! The Python SDK in pods: every pod the console makes (a job's replicas, a
//! notebook, a serving replica, the inputs' init step) finds `import
//! paddlecloud` at the same place, from its owner's ConfigMap, whose keys
//! hold the SDK's files.

use serde_json::{json, Map, Value};

use crate::backend::notebooks::SDK_FILES;

/// Where the SDK's ConfigMap is mounted (as `<SDK_DIR>/paddlecloud`): on
/// `PYTHONPATH`.
pub const SDK_DIR: &str = "/opt/paddlecloud/python";

/// The key of an SDK file in a ConfigMap (keys hold no `/`).
fn sdk_key(file: &str) -> String {
    format!("sdk.{file}")
}

/// The SDK's files as a ConfigMap's `data`, each under its [`sdk_key`],
/// beside which the owner keeps its own keys.
pub(crate) fn sdk_data() -> Map<String, Value> {
    SDK_FILES
        .iter()
        .map(|(file, text)| (sdk_key(file), json!(text)))
        .collect()
}

/// The SDK's files of a ConfigMap, by their names in the package: the
/// `items` of the volume named `sdk`.
pub(crate) fn sdk_items() -> Vec<Value> {
    SDK_FILES
        .iter()
        .map(|(file, _)| json!({ "key": sdk_key(file), "path": file }))
        .collect()
}

/// The container's mount of the volume named `sdk`, read-only.
pub(crate) fn sdk_mount() -> Value {
    json!({ "name": "sdk", "mountPath": format!("{SDK_DIR}/paddlecloud"), "readOnly": true })
}
