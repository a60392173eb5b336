//! A stand-in for metrics-server, registered with the real API server of
//! `scripts/kube-test-cluster.sh` as the aggregated API `metrics.k8s.io/
//! v1beta1` (an APIService and an ExternalName Service to `localhost`, over
//! TLS with a self-signed certificate). metrics-server itself cannot run
//! here (it scrapes kubelets' `/metrics/resource`, which the test kubelet
//! does not serve), so this serves what it would: the PodMetrics of running
//! pods, measured for real from the process trees the test kubelet runs
//! (`containerID` `testkubelet://PID`) with the console's own /proc sampler.
//! A pod shows up from its second look on, when there is a CPU rate to
//! give, as metrics-server shows a pod only after two scrapes. Requests are
//! not authenticated (a real one checks the front-proxy headers).
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{json, Value};
use server::local::sampler::{snapshot, TreeSampler};

use super::kubelet::rfc3339;

/// The APIService's name.
pub const APISERVICE: &str = "v1beta1.metrics.k8s.io";
/// The Service it points at.
const SERVICE: &str = "paddlecloud-test-metrics-server";

struct Stand {
    client: kube::Client,
    /// One sampler per container process.
    samplers: Mutex<HashMap<i32, TreeSampler>>,
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
        let tls = super::kubelet::tls_acceptor("localhost").expect("a TLS certificate");
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let stand = Arc::new(Stand {
            client: client.clone(),
            samplers: Mutex::new(HashMap::new()),
        });
        let app = Router::new()
            .route("/apis/metrics.k8s.io/v1beta1", get(discovery))
            .route(
                "/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods",
                get(pod_metrics),
            )
            .with_state(stand);
        let task = tokio::spawn(async move {
            let _ = super::kubelet::serve_tls(listener, tls, app).await;
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

/// The PodMetrics of the namespace's running pods that match the query's
/// `labelSelector`, measured now.
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
    let procs = snapshot();
    let now = SystemTime::now();
    let mut items = vec![];
    let mut samplers = stand.samplers.lock().unwrap();
    for pod in listed {
        let statuses = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default();
        let mut containers = vec![];
        for c in statuses {
            let running = c.state.as_ref().is_some_and(|s| s.running.is_some());
            let pid = c
                .container_id
                .as_deref()
                .and_then(|id| id.strip_prefix("testkubelet://"))
                .and_then(|pid| pid.parse::<i32>().ok());
            let (true, Some(pid)) = (running, pid) else {
                continue;
            };
            let first = !samplers.contains_key(&pid);
            let usage = samplers
                .entry(pid)
                .or_insert_with(|| TreeSampler::new(pid))
                .sample(&procs);
            if first {
                continue;
            }
            containers.push(json!({
                "name": c.name,
                "usage": {
                    "cpu": format!("{}n", (usage.cpu * 1e9).round() as u64),
                    "memory": format!("{}Ki", (usage.memory / 1024.0).round() as u64),
                },
            }));
        }
        if containers.is_empty() {
            continue;
        }
        items.push(json!({
            "metadata": {
                "name": pod.metadata.name,
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
