//! A stand-in for metrics-server, registered with the real API server of
//! `scripts/kube-test-cluster.sh` as the aggregated API `metrics.k8s.io/v1beta1` (an
//! APIService and an ExternalName Service to `localhost`, over TLS with a
//! self-signed certificate). metrics-server itself is not packaged for
//! Debian and nothing else can be fetched, so this does what metrics-server
//! 0.3 did: it reads each node's kubelet Summary API (`/stats/summary`,
//! through the API server's node proxy: containerd's figures for each
//! container) and serves the running pods' PodMetrics, CPU as the rate
//! between two reads, memory as the working set. A pod shows up from its
//! second look on, when there is a CPU rate to give, as metrics-server shows
//! a pod only after two scrapes. Requests are not authenticated (a real one
//! checks the front-proxy headers).
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{json, Value};

/// The APIService's name.
pub const APISERVICE: &str = "v1beta1.metrics.k8s.io";
/// The Service it points at.
const SERVICE: &str = "paddlecloud-test-metrics-server";

struct Stand {
    client: kube::Client,
    /// Each container's last CPU read (`namespace/pod/container`): when, and
    /// its CPU time in nanoseconds.
    last_cpu: Mutex<HashMap<String, (f64, f64)>>,
}

/// The stand-in, serving until dropped.
pub struct MetricsServer {
    client: kube::Client,
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl MetricsServer {
    /// Serves on a free port of 127.0.0.1 (not yet registered).
    pub async fn start(client: kube::Client) -> MetricsServer {
        let tls = super::tls::tls_acceptor("localhost").expect("a TLS certificate");
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let stand = Arc::new(Stand {
            client: client.clone(),
            last_cpu: Mutex::new(HashMap::new()),
        });
        let app = Router::new()
            .route("/apis/metrics.k8s.io/v1beta1", get(discovery))
            .route(
                "/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods",
                get(pod_metrics),
            )
            .with_state(stand);
        let task = tokio::spawn(async move {
            let _ = super::tls::serve_tls(listener, tls, app).await;
        });
        MetricsServer { client, port, task }
    }

    /// Registers it as `metrics.k8s.io/v1beta1` and waits until the API
    /// server says the APIService is Available.
    pub async fn register(&self) {
        let services: Api<Service> = Api::namespaced(self.client.clone(), "kube-system");
        let service = serde_json::from_value(json!({
            "metadata": { "name": SERVICE },
            "spec": { "type": "ExternalName", "externalName": "localhost" },
        }))
        .unwrap();
        let _ = services.delete(SERVICE, &DeleteParams::default()).await;
        services
            .create(&PostParams::default(), &service)
            .await
            .unwrap();
        let apiservices: Api<APIService> = Api::all(self.client.clone());
        let _ = apiservices
            .delete(APISERVICE, &DeleteParams::default())
            .await;
        let apiservice = serde_json::from_value(json!({
            "metadata": { "name": APISERVICE },
            "spec": {
                "group": "metrics.k8s.io",
                "version": "v1beta1",
                "service": { "namespace": "kube-system", "name": SERVICE, "port": self.port },
                "insecureSkipTLSVerify": true,
                "groupPriorityMinimum": 100,
                "versionPriority": 100,
            },
        }))
        .unwrap();
        apiservices
            .create(&PostParams::default(), &apiservice)
            .await
            .unwrap();
        let start = Instant::now();
        loop {
            let a = apiservices.get(APISERVICE).await.unwrap();
            let available = a
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.type_ == "Available");
            if available.as_ref().is_some_and(|c| c.status == "True") {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the APIService never became Available: {available:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Removes the APIService and its Service (the API server would
    /// otherwise keep asking for a server that is gone).
    pub async fn unregister(&self) {
        let apiservices: Api<APIService> = Api::all(self.client.clone());
        let _ = apiservices
            .delete(APISERVICE, &DeleteParams::default())
            .await;
        let services: Api<Service> = Api::namespaced(self.client.clone(), "kube-system");
        let _ = services.delete(SERVICE, &DeleteParams::default()).await;
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn discovery() -> Json<Value> {
    Json(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "metrics.k8s.io/v1beta1",
        "resources": [
            { "name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics",
              "verbs": ["get", "list"] },
            { "name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics",
              "verbs": ["get", "list"] },
        ],
    }))
}

/// One container's figures in a kubelet's Summary API.
struct Read {
    /// Seconds since the epoch of the CPU read.
    at: f64,
    cpu_nanos: f64,
    working_set: f64,
}

/// The Summary API of kubelet `node`, by `namespace/pod/container`.
async fn summary(client: &kube::Client, node: &str) -> HashMap<String, Read> {
    let request = http::Request::get(format!("/api/v1/nodes/{node}/proxy/stats/summary"))
        .body(vec![])
        .unwrap();
    let Ok(text) = client.request_text(request).await else {
        return HashMap::new();
    };
    let summary: Value = serde_json::from_str(&text).unwrap_or_default();
    let mut reads = HashMap::new();
    for pod in summary["pods"].as_array().into_iter().flatten() {
        let (ns, name) = (&pod["podRef"]["namespace"], &pod["podRef"]["name"]);
        for c in pod["containers"].as_array().into_iter().flatten() {
            let cpu = &c["cpu"];
            let (Some(nanos), Some(time)) = (
                cpu["usageCoreNanoSeconds"].as_f64(),
                serde_json::from_value::<Time>(cpu["time"].clone()).ok(),
            ) else {
                continue;
            };
            let key = format!(
                "{}/{}/{}",
                ns.as_str().unwrap_or(""),
                name.as_str().unwrap_or(""),
                c["name"].as_str().unwrap_or("")
            );
            let read = Read {
                at: time.0.as_microsecond() as f64 / 1e6,
                cpu_nanos: nanos,
                working_set: c["memory"]["workingSetBytes"].as_f64().unwrap_or(0.0),
            };
            reads.insert(key, read);
        }
    }
    reads
}

/// The PodMetrics of the namespace's running pods that match the query's
/// `labelSelector`, as their kubelets measure them now.
async fn pod_metrics(
    State(stand): State<Arc<Stand>>,
    Path(ns): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Json<Value> {
    let pods: Api<Pod> = Api::namespaced(stand.client.clone(), &ns);
    let mut params = ListParams::default();
    if let Some(selector) = query.get("labelSelector") {
        params = params.labels(selector);
    }
    let listed = pods
        .list(&params)
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    let mut reads = HashMap::new();
    let nodes: std::collections::BTreeSet<String> = listed
        .iter()
        .filter_map(|p| p.spec.as_ref()?.node_name.clone())
        .collect();
    for node in nodes {
        reads.extend(summary(&stand.client, &node).await);
    }
    let now = SystemTime::now();
    let mut items = vec![];
    let mut last_cpu = stand.last_cpu.lock().unwrap();
    for pod in listed {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let statuses = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default();
        let mut containers = vec![];
        for c in statuses {
            let running = c.state.as_ref().is_some_and(|s| s.running.is_some());
            let key = format!("{ns}/{name}/{}", c.name);
            let (true, Some(read)) = (running, reads.get(&key)) else {
                continue;
            };
            let before = last_cpu.insert(key, (read.at, read.cpu_nanos));
            // A rate needs two reads, over some time.
            let Some((at, nanos)) = before.filter(|(at, _)| read.at > *at) else {
                continue;
            };
            let cores = (read.cpu_nanos - nanos).max(0.0) / 1e9 / (read.at - at);
            containers.push(json!({
                "name": c.name,
                "usage": {
                    "cpu": format!("{}n", (cores * 1e9).round() as u64),
                    "memory": format!("{}Ki", (read.working_set / 1024.0).round() as u64),
                },
            }));
        }
        if containers.is_empty() {
            continue;
        }
        items.push(json!({
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": pod.metadata.labels,
                "creationTimestamp": rfc3339(now),
            },
            "timestamp": rfc3339(now),
            "window": "1s",
            "containers": containers,
        }));
    }
    Json(json!({
        "kind": "PodMetricsList",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {},
        "items": items,
    }))
}

/// `t` as Kubernetes writes a time (seconds, UTC).
fn rfc3339(t: SystemTime) -> String {
    let t = time::OffsetDateTime::from(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}
