//! The cluster's room on Kubernetes, as its scheduler counts it: what the
//! nodes pods may be placed on can hold (their allocatable CPU, memory and
//! `nvidia.com/gpu`), and what the pods placed there request. Read from the
//! API on demand and kept a few seconds, so that a page many people open
//! lists the cluster's pods once, not once each.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use app::error::AppError;
use app::models::quantity::{parse_cpu_millis, parse_memory_bytes};
use app::models::ResourceTotals;
use k8s_openapi::api::core::v1::{Node, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::ListParams;
use kube::{Api, Client};

use super::errors::from_kube;

/// The extended resource GPUs are counted as (NVIDIA's device plugin).
pub const GPU: &str = "nvidia.com/gpu";
/// How long a reading is shown before the API is asked again.
const FRESH_FOR: Duration = Duration::from_secs(5);

/// What the nodes can hold and what is requested of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    /// The allocatable of the nodes pods may go to, summed.
    pub total: ResourceTotals,
    /// What the live pods placed on those nodes request, summed.
    pub used: ResourceTotals,
    /// How many nodes were counted.
    pub nodes: usize,
}

/// The last reading, and when it was made.
#[derive(Default)]
pub(crate) struct RoomCache(Mutex<Option<(Instant, Room)>>);

impl RoomCache {
    /// The room of the cluster of `client`: the last reading if it is
    /// fresh, else a new one (nodes and pods listed).
    pub(crate) async fn read(&self, client: &Client) -> Result<Room, AppError> {
        if let Some((at, room)) = *self.0.lock().unwrap() {
            if at.elapsed() < FRESH_FOR {
                return Ok(room);
            }
        }
        self.read_now(client).await
    }

    /// A new reading, whatever the last: what a decision to stop work on
    /// the strength of it needs (a reading seconds old may not count a pod
    /// placed since).
    pub(crate) async fn read_now(&self, client: &Client) -> Result<Room, AppError> {
        let nodes = Api::<Node>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map_err(|e| from_kube("list the nodes", e))?
            .items;
        // Pods that hold what they request: placed, not ended.
        let live = ListParams::default()
            .fields("spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed");
        let pods = Api::<Pod>::all(client.clone())
            .list(&live)
            .await
            .map_err(|e| from_kube("list the pods", e))?
            .items;
        let room = room(&nodes, &pods);
        *self.0.lock().unwrap() = Some((Instant::now(), room));
        Ok(room)
    }
}

/// The room `nodes` make for pods, and what `pods` placed on them request.
pub fn room(nodes: &[Node], pods: &[Pod]) -> Room {
    let counted: Vec<&Node> = nodes.iter().filter(|n| takes_pods(n)).collect();
    let names: HashSet<&str> = counted
        .iter()
        .filter_map(|n| n.metadata.name.as_deref())
        .collect();
    let mut total = ResourceTotals::default();
    for node in &counted {
        let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
        if let Some(a) = allocatable {
            total = total.add_times(amounts(|name| a.get(name)), 1);
        }
    }
    let mut used = ResourceTotals::default();
    for pod in pods {
        let on = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        let ended = matches!(phase, Some("Succeeded" | "Failed"));
        if on.is_some_and(|n| names.contains(n)) && !ended {
            used = used.add_times(pod_request(pod), 1);
        }
    }
    Room {
        total,
        used,
        nodes: counted.len(),
    }
}

/// Whether the scheduler may place an ordinary pod on `node`: Ready, not
/// cordoned, and without a taint that keeps pods off (`NoSchedule`,
/// `NoExecute`; the console's pods tolerate none).
fn takes_pods(node: &Node) -> bool {
    let spec = node.spec.as_ref();
    let cordoned = spec.and_then(|s| s.unschedulable).unwrap_or(false);
    let tainted = spec
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.effect != "PreferNoSchedule"));
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    ready && !cordoned && !tainted
}

/// What `pod` asks of its node, as the scheduler counts it: for each
/// resource, the larger of its containers' requests summed and its largest
/// init container's (init containers run one at a time, before the rest).
pub fn pod_request(pod: &Pod) -> ResourceTotals {
    let Some(spec) = pod.spec.as_ref() else {
        return ResourceTotals::default();
    };
    let sum = spec
        .containers
        .iter()
        .fold(ResourceTotals::default(), |t, c| {
            t.add_times(requested(c.resources.as_ref()), 1)
        });
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| requested(c.resources.as_ref()))
        .fold(ResourceTotals::default(), larger);
    larger(sum, init)
}

/// Each amount the larger of `a`'s and `b`'s.
fn larger(a: ResourceTotals, b: ResourceTotals) -> ResourceTotals {
    ResourceTotals {
        cpu_millis: a.cpu_millis.max(b.cpu_millis),
        memory_bytes: a.memory_bytes.max(b.memory_bytes),
        gpu: a.gpu.max(b.gpu),
    }
}

/// A container's requests; a resource with only a limit requests its limit
/// (as Kubernetes defaults it).
fn requested(r: Option<&ResourceRequirements>) -> ResourceTotals {
    let Some(r) = r else {
        return ResourceTotals::default();
    };
    amounts(|name| {
        r.requests
            .as_ref()
            .and_then(|q| q.get(name))
            .or_else(|| r.limits.as_ref().and_then(|q| q.get(name)))
    })
}

/// CPU, memory and GPUs from a list of quantities (`get` by resource name:
/// `cpu`, `memory`, [`GPU`]). An amount this cannot read (an exponent form,
/// say) counts as none.
pub(crate) fn amounts<'a>(get: impl Fn(&str) -> Option<&'a Quantity>) -> ResourceTotals {
    ResourceTotals {
        cpu_millis: get("cpu")
            .and_then(|q| parse_cpu_millis("cpu", &q.0).ok())
            .unwrap_or(0),
        memory_bytes: get("memory")
            .and_then(|q| parse_memory_bytes("memory", &q.0).ok())
            .unwrap_or(0),
        gpu: get(GPU).and_then(|q| q.0.trim().parse().ok()).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, allocatable: serde_json::Value, extra: serde_json::Value) -> Node {
        let mut n = json!({
            "metadata": { "name": name },
            "spec": {},
            "status": {
                "allocatable": allocatable,
                "conditions": [{ "type": "Ready", "status": "True" }],
            },
        });
        if let Some(spec) = extra.get("spec") {
            n["spec"] = spec.clone();
        }
        if let Some(ready) = extra.get("ready") {
            n["status"]["conditions"][0]["status"] = ready.clone();
        }
        serde_json::from_value(n).unwrap()
    }

    fn pod(on: Option<&str>, phase: &str, containers: serde_json::Value) -> Pod {
        let mut spec = json!({ "containers": containers["containers"] });
        if let Some(init) = containers.get("init") {
            spec["initContainers"] = init.clone();
        }
        if let Some(on) = on {
            spec["nodeName"] = json!(on);
        }
        serde_json::from_value(json!({ "spec": spec, "status": { "phase": phase } })).unwrap()
    }

    fn c(requests: serde_json::Value, limits: serde_json::Value) -> serde_json::Value {
        json!({ "name": "c", "resources": { "requests": requests, "limits": limits } })
    }

    #[test]
    fn nodes_allocatable_is_summed_and_what_live_pods_on_them_request_is_used() {
        let nodes = [
            node(
                "a",
                json!({ "cpu": "3800m", "memory": "7Gi", GPU: "2" }),
                json!({}),
            ),
            node(
                "b",
                json!({ "cpu": "2", "memory": "16265748Ki" }),
                json!({}),
            ),
        ];
        let pods = [
            // Two containers: summed.
            pod(
                Some("a"),
                "Running",
                json!({ "containers": [c(json!({ "cpu": "500m", "memory": "1Gi" }), json!({})),
                                      c(json!({ "cpu": "250m" }), json!({ GPU: "1" }))] }),
            ),
            // Pending but placed: it holds its request.
            pod(
                Some("b"),
                "Pending",
                json!({ "containers": [c(json!({ "cpu": "1" }), json!({}))] }),
            ),
            // Not placed, or ended: nothing held.
            pod(
                None,
                "Pending",
                json!({ "containers": [c(json!({ "cpu": "8" }), json!({}))] }),
            ),
            pod(
                Some("a"),
                "Succeeded",
                json!({ "containers": [c(json!({ "cpu": "8" }), json!({}))] }),
            ),
        ];
        let r = room(&nodes, &pods);
        assert_eq!(r.nodes, 2);
        assert_eq!(
            r.total,
            ResourceTotals {
                cpu_millis: 5800,
                memory_bytes: (7 << 30) + 16_265_748 * 1024,
                gpu: 2,
            }
        );
        assert_eq!(
            r.used,
            ResourceTotals {
                cpu_millis: 1750,
                memory_bytes: 1 << 30,
                gpu: 1,
            }
        );
    }

    #[test]
    fn cordoned_tainted_and_not_ready_nodes_and_their_pods_are_not_counted() {
        let alloc = json!({ "cpu": "4", "memory": "8Gi" });
        let nodes = [
            node("ok", alloc.clone(), json!({})),
            node(
                "cordoned",
                alloc.clone(),
                json!({ "spec": { "unschedulable": true } }),
            ),
            node(
                "control-plane",
                alloc.clone(),
                json!({ "spec": { "taints": [{ "key": "node-role.kubernetes.io/master", "effect": "NoSchedule" }] } }),
            ),
            node(
                "preferred",
                alloc.clone(),
                json!({ "spec": { "taints": [{ "key": "x", "effect": "PreferNoSchedule" }] } }),
            ),
            node("down", alloc, json!({ "ready": "Unknown" })),
        ];
        let pods = [pod(
            Some("control-plane"),
            "Running",
            json!({ "containers": [c(json!({ "cpu": "1" }), json!({}))] }),
        )];
        let r = room(&nodes, &pods);
        assert_eq!(
            (r.nodes, r.total.cpu_millis, r.used.cpu_millis),
            (2, 8000, 0)
        );
    }

    #[test]
    fn a_pods_request_is_the_larger_of_its_containers_summed_and_its_largest_init_container() {
        let p = pod(
            Some("a"),
            "Running",
            json!({
                "containers": [c(json!({ "cpu": "100m", "memory": "64Mi" }), json!({})),
                               c(json!({ "cpu": "100m" }), json!({}))],
                "init": [c(json!({ "cpu": "1", "memory": "32Mi" }), json!({})),
                         c(json!({}), json!({ "memory": "512Mi" }))],
            }),
        );
        assert_eq!(
            pod_request(&p),
            ResourceTotals {
                cpu_millis: 1000,
                memory_bytes: 512 << 20,
                gpu: 0,
            },
            "limits stand for missing requests; init containers one at a time"
        );
    }
}
