//! What the pods of every long-running workload on Kubernetes share: a
//! container's amounts (requests and limits alike, GPUs as
//! `nvidia.com/gpu`), a server container on a port named `http` whose
//! failure message is its last output, and a Service on port 80 in front
//! of the pods a label selects. Jobs' replicas, serving instances'
//! Deployments and notebooks' StatefulSets are built from these, so a rule
//! about pods (a new resource, a probe, a label) is written once.

use app::error::AppError;
use app::models::quantity::{parse_cpu_millis, parse_memory_bytes};
use app::models::ReplicaResources;
use serde_json::{json, Value};

use super::capacity::GPU;

/// A container's amounts of `resources`, for both its requests and its
/// limits (a replica's share is what it asked for). `field` names the
/// form field an error points at (`resources` gives `resources.cpu`;
/// empty gives `cpu`).
pub fn amounts(resources: &ReplicaResources, field: &str) -> Result<Value, AppError> {
    let name = |what: &str| {
        if field.is_empty() {
            what.to_owned()
        } else {
            format!("{field}.{what}")
        }
    };
    let cpu = parse_cpu_millis(&name("cpu"), &resources.cpu)?;
    let memory = parse_memory_bytes(&name("memory"), &resources.memory)?;
    let mut amounts = json!({ "cpu": format!("{cpu}m"), "memory": memory.to_string() });
    if resources.gpu > 0 {
        amounts[GPU] = json!(resources.gpu.to_string());
    }
    Ok(amounts)
}

/// `{ requests, limits }` of `amounts` alike.
pub fn requests_and_limits(amounts: &Value) -> Value {
    json!({ "requests": amounts, "limits": amounts })
}

/// A server's container: `command` in `image` with `env`, listening on
/// `port` (named `http`), holding `amounts`, its volumes at `mounts`.
/// Kubernetes shows a failed container's last output as its message.
pub fn server_container(
    name: &str,
    image: &str,
    command: &[String],
    env: Vec<Value>,
    port: u16,
    amounts: &Value,
    mounts: Vec<Value>,
) -> Value {
    json!({
        "name": name,
        "image": image,
        "command": command,
        "env": env,
        "ports": [{ "name": "http", "containerPort": port }],
        "resources": requests_and_limits(amounts),
        "volumeMounts": mounts,
        "terminationMessagePolicy": "FallbackToLogsOnError",
    })
}

/// A Service `name` on port 80 in front of the pods `selector` picks, to
/// their `target_port`.
pub fn http_service(name: &str, labels: &Value, selector: Value, target_port: u16) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": name, "labels": labels },
        "spec": {
            "selector": selector,
            "ports": [{ "name": "http", "port": 80, "targetPort": target_port }],
        },
    })
}

/// A controller (`Deployment`, `StatefulSet`) `name` of `replicas` pods
/// made as `pod`, selected by `selector`, with `extra` merged into its
/// spec (a StatefulSet's `serviceName`).
pub fn controller(
    kind: &str,
    name: &str,
    labels: &Value,
    selector: Value,
    replicas: u32,
    pod: Value,
    extra: Value,
) -> Value {
    let mut spec = json!({
        "replicas": replicas,
        "selector": { "matchLabels": selector },
        "template": { "metadata": { "labels": labels }, "spec": pod },
    });
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": { "name": name, "labels": labels },
        "spec": spec,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_millicores_bytes_and_gpus_only_when_asked() {
        let mut r = ReplicaResources {
            cpu: "1.5".into(),
            memory: "1Gi".into(),
            gpu: 0,
        };
        let a = amounts(&r, "resources").unwrap();
        assert_eq!(a, json!({ "cpu": "1500m", "memory": "1073741824" }));
        r.gpu = 2;
        assert_eq!(amounts(&r, "").unwrap()[GPU], "2");
        r.cpu = "lots".into();
        let err = amounts(&r, "resources").unwrap_err();
        assert_eq!(err.field(), Some("resources.cpu"));
        assert_eq!(amounts(&r, "").unwrap_err().field(), Some("cpu"));
    }

    #[test]
    fn a_controller_selects_its_pods_and_takes_extra_spec_fields() {
        let labels = json!({ "a": "b" });
        let c = controller(
            "StatefulSet",
            "nb",
            &labels,
            json!({ "id": "7" }),
            1,
            json!({ "containers": [] }),
            json!({ "serviceName": "nb-notebook" }),
        );
        assert_eq!(c["spec"]["selector"]["matchLabels"]["id"], "7");
        assert_eq!(c["spec"]["serviceName"], "nb-notebook");
        assert_eq!(c["spec"]["template"]["metadata"]["labels"], labels);
    }
}
