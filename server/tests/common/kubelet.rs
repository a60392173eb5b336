//! A test kubelet: plays a Kubernetes node against the real control plane of
//! `scripts/kube-test-cluster.sh` (which runs no kubelet), so that pods the
//! console creates really run, as local processes, and their logs come back
//! through the apiserver's `pods/log` as on a real cluster.
//!
//! What it does, as a kubelet would:
//! * registers a Node (large allocatable, Ready, InternalIP 127.0.0.1, the
//!   port of its own HTTPS server as `daemonEndpoints.kubeletEndpoint.Port`)
//!   and heartbeats it every 10 s;
//! * watches the pods bound to that Node; runs each one's init containers in
//!   order, then all its containers at once, as `command` + `args` (no image,
//!   no shell; `$(VAR)` references expanded as Kubernetes does), each in its
//!   own process group, and patches the pod's status as they start and end;
//! * serves `GET /containerLogs/{namespace}/{pod}/{container}` (`follow`,
//!   `timestamps`, `tailLines`, `limitBytes`, `sinceSeconds`, `sinceTime`) over
//!   TLS with a self-signed certificate: the apiserver proxies `pods/log` there;
//! * on a pod's `deletionTimestamp`: SIGTERM to each process group, SIGKILL
//!   after the grace period (at most 30 s), the final status, then deletes the
//!   pod for good (grace 0, uid precondition).
//!
//! One kubelet runs per Node name and process, on its own thread with its own
//! tokio runtime and its own client (from the same kubeconfig): tests running
//! at once that start a `TestKubelet` with the same node name share it, and it
//! outlives each test's runtime until the last handle goes. Use one node name
//! for all tests of a binary: with several Nodes the scheduler spreads pods
//! over all of them, whoever's test they belong to.
//!
//! For test authors:
//! * A container's `containerID` is `testkubelet://PID`: the pid of its
//!   process, which leads its process group. Its output is also written to
//!   `work/logs/NS_POD_UID8_CONTAINER.log`; its working dir is its own
//!   `workingDir` if that is an existing absolute dir, else `work/pods/NS_POD_UID8`.
//! * The environment is the pod's (`value`, `$(VAR)`, `fieldRef`,
//!   `configMapKeyRef`, `secretKeyRef`, `envFrom`; a missing ConfigMap or Secret
//!   holds the pod in `CreateContainerConfigError`, retried every second) plus
//!   `PATH` from the test process, `HOSTNAME` (spec.hostname, else the pod's
//!   name) and `HOME` (the pod's dir). `resourceFieldRef`s are left out.
//! * Timings on 2 busy cores: create -> Running 50-100 ms; exit -> final status
//!   20-150 ms; delete -> gone ~50 ms when SIGTERM ends the leader.
//!
//! Unlike a real kubelet: no images (a container without `command` fails
//! with `StartError`), volumes, probes (running means ready), resource
//! limits, restarts (pods end `Succeeded` or `Failed` whatever their
//! `restartPolicy`), exec/attach/port-forward, or previous logs; every pod
//! shares the host's network as 127.0.0.1 (ports can collide; pod hostnames
//! and Services do not resolve; [`routable_pod_ips`] makes them report the
//! host's own IPv4 instead, for Endpoints and the API server's service
//! proxy); no `KUBERNETES_SERVICE_*` variables nor ServiceAccount token. A failed container's `message` is always the end of
//! its output (a real one only with `terminationMessagePolicy:
//! FallbackToLogsOnError`), and a failed init container sets the pod's
//! `status.reason` to `Init:Error` (a real kubelet leaves it empty; kubectl
//! derives that text). Logs are kept in memory for as long as the pod exists.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime};

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Node, Pod, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt as _;
use kube::Client;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt as _;
use tokio::sync::{mpsc, oneshot, watch};

/// The longest grace period the kubelet waits between SIGTERM and SIGKILL.
const MAX_GRACE_SECONDS: i64 = 30;
/// A failed container's termination message: at most this many last lines...
const MESSAGE_LINES: usize = 80;
/// ...and bytes of its output (as `FallbackToLogsOnError`).
const MESSAGE_BYTES: usize = 2048;
/// Every pod's IP, and the Node's.
const LOCALHOST: &str = "127.0.0.1";

/// The IP pods report (`status.podIP`): 127.0.0.1 unless the process asked
/// for [`routable_pod_ips`].
static POD_IP: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn pod_ip() -> &'static str {
    POD_IP.get().map_or(LOCALHOST, String::as_str)
}

/// Makes every pod of this process's kubelets report the machine's first
/// non-loopback IPv4 as its IP (they still share the host's network), so
/// that Endpoints accept them (127.0.0.0/8 is refused) and the API server's
/// service proxy reaches their ports. Call before starting a kubelet.
/// Returns the address, or `None` when the machine has none (pods keep
/// 127.0.0.1).
pub fn routable_pod_ips() -> Option<String> {
    let ip = host_ipv4()?;
    Some(POD_IP.get_or_init(|| ip).clone())
}

/// The first local IPv4 address outside 127.0.0.0/8, from the kernel's
/// routing table (`/proc/net/fib_trie`: an address line, then `/32 host LOCAL`).
fn host_ipv4() -> Option<String> {
    let trie = std::fs::read_to_string("/proc/net/fib_trie").ok()?;
    let lines: Vec<&str> = trie.lines().map(str::trim).collect();
    lines.windows(2).find_map(|w| {
        let ip = w[0].strip_prefix("|-- ")?;
        (w[1] == "/32 host LOCAL" && !ip.starts_with("127.")).then(|| ip.to_owned())
    })
}

/// The console's Kubernetes backend ("test-kube", 1 s grace) on `client`,
/// recording in the test database.
pub fn kube_cluster(client: &Client, db: &super::TestDb) -> server::kubernetes::KubeCluster {
    server::kubernetes::KubeCluster::start(
        client.clone(),
        server::jobs::JobStore::new(db.pool.clone()),
        db.dir(),
        Duration::from_secs(1),
        "test-kube".into(),
    )
}

/// A kube client for the test cluster, or None (printing why) when
/// `PADDLECLOUD_TEST_KUBECONFIG` is unset; panics instead when
/// `PADDLECLOUD_REQUIRE_KUBE=1`, so that CI cannot pass by skipping.
pub async fn test_client() -> Option<kube::Client> {
    let Some(path) = std::env::var_os("PADDLECLOUD_TEST_KUBECONFIG") else {
        assert!(
            std::env::var("PADDLECLOUD_REQUIRE_KUBE").as_deref() != Ok("1"),
            "PADDLECLOUD_TEST_KUBECONFIG is not set but Kubernetes tests are required \
             (PADDLECLOUD_REQUIRE_KUBE=1)"
        );
        eprintln!(
            "skipping: no PADDLECLOUD_TEST_KUBECONFIG (run through scripts/kube-test-cluster.sh run ...)"
        );
        return None;
    };
    match client_from(Some(PathBuf::from(path))).await {
        Ok(client) => Some(client),
        Err(err) => panic!("PADDLECLOUD_TEST_KUBECONFIG: {err}"),
    }
}

/// A client from a kubeconfig file, or from the usual places (`KUBECONFIG`,
/// `~/.kube/config`, in-cluster) without one.
async fn client_from(path: Option<PathBuf>) -> Result<Client, String> {
    // kube's rustls needs a crypto provider; ring is the one compiled in.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = match path {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(&path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => kube::Config::infer().await.map_err(|e| e.to_string())?,
    };
    Client::try_from(config).map_err(|e| e.to_string())
}

/// Plays the kubelet of one Node until dropped or stopped (see the module's
/// notes). Handles for the same node name in one process share one kubelet.
pub struct TestKubelet {
    shared: Arc<Shared>,
}

impl TestKubelet {
    /// Registers Node `node` (allocatable cpu 64, memory 256Gi, pods 110,
    /// nvidia.com/gpu 8, Ready, InternalIP 127.0.0.1,
    /// `daemonEndpoints.kubeletEndpoint.Port` = its own TLS port) and plays its
    /// kubelet until dropped/stopped. `work` is where pods' working dirs and
    /// logs go (`pods/NS_POD_UID8/`, `logs/NS_POD_UID8_CONTAINER.log`).
    ///
    /// The kubelet talks to the cluster through its own client, made from
    /// `PADDLECLOUD_TEST_KUBECONFIG` (else `KUBECONFIG` and the usual places),
    /// on its own thread; `client` must reach the same cluster: it checks that
    /// the Node is there. If a kubelet for `node` already runs in this process,
    /// this shares it (and its `work`, while that exists).
    pub async fn start(client: kube::Client, node: &str, work: &std::path::Path) -> TestKubelet {
        let shared = loop {
            let found = {
                let mut nodes = lock(&NODES);
                match nodes.get(node).map(Weak::upgrade) {
                    Some(Some(shared)) => Some(shared),
                    // Its last handle is going: wait until it has stopped.
                    Some(None) => None,
                    None => {
                        let shared = Shared::launch(node, work);
                        nodes.insert(node.to_owned(), Arc::downgrade(&shared));
                        Some(shared)
                    }
                }
            };
            match found {
                Some(shared) => break shared,
                None => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        let mut ready = shared.ready.clone();
        let outcome = ready.wait_for(Option::is_some).await.map(|r| r.clone());
        match outcome {
            Ok(Some(Ok(()))) => {}
            Ok(Some(Err(err))) => panic!("the test kubelet for node {node} could not start: {err}"),
            _ => panic!("the test kubelet for node {node} stopped while starting"),
        }
        if let Err(err) = Api::<Node>::all(client).get(node).await {
            panic!("the test kubelet registered node {node}, but the given client cannot read it (another cluster?): {err}");
        }
        TestKubelet { shared }
    }

    /// Stops playing (kills running pod processes, deletes the Node) unless
    /// another handle shares this kubelet; also on Drop (which blocks for as
    /// long as that takes, usually milliseconds, at most ~15 s).
    pub async fn stop(self) {
        let shared = self.shared;
        let _ = tokio::task::spawn_blocking(move || drop(shared)).await;
    }

    /// The Node's name.
    pub fn node(&self) -> &str {
        &self.shared.node
    }

    /// The port of its kubelet API (HTTPS on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// Where pods' working dirs (`pods/`) and logs (`logs/`) go.
    pub fn work(&self) -> &Path {
        &self.shared.work
    }
}

/// The kubelets running in this process, by node name.
static NODES: LazyLock<Mutex<HashMap<String, Weak<Shared>>>> = LazyLock::new(Default::default);

/// What a process needs of a kubelet running on its own thread.
struct Shared {
    node: String,
    port: u16,
    work: PathBuf,
    /// `Some(Ok)` once the Node is registered and the server listens.
    ready: watch::Receiver<Option<Result<(), String>>>,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    stopped: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl Shared {
    fn launch(node: &str, work: &Path) -> Arc<Shared> {
        let listener = std::net::TcpListener::bind((LOCALHOST, 0))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .unwrap_or_else(|e| panic!("test kubelet: binding a port: {e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        let (ready_tx, ready) = watch::channel(None);
        let (stop_tx, stop_rx) = oneshot::channel();
        let (stopped_tx, stopped) = std::sync::mpsc::channel();
        let (name, dir) = (node.to_owned(), work.to_owned());
        std::thread::Builder::new()
            .name(format!("kubelet-{node}"))
            .spawn(move || {
                match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("test-kubelet")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => {
                        rt.block_on(run_kubelet(name, dir, listener, ready_tx, stop_rx));
                        rt.shutdown_timeout(Duration::from_secs(2));
                    }
                    Err(err) => {
                        let _ = ready_tx.send(Some(Err(format!("a tokio runtime: {err}"))));
                    }
                }
                let _ = stopped_tx.send(());
            })
            .unwrap_or_else(|e| panic!("test kubelet: a thread: {e}"));
        Arc::new(Shared {
            node: node.to_owned(),
            port,
            work: work.to_owned(),
            ready,
            stop: Mutex::new(Some(stop_tx)),
            stopped: Mutex::new(Some(stopped)),
        })
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(stop) = lock(&self.stop).take() {
            let _ = stop.send(());
        }
        if let Some(stopped) = lock(&self.stopped).take() {
            if stopped.recv_timeout(Duration::from_secs(15)).is_err() {
                eprintln!("[test-kubelet {}] did not stop within 15 s", self.node);
            }
        }
        let mut nodes = lock(&NODES);
        if nodes
            .get(&self.node)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), self as *const Shared))
        {
            nodes.remove(&self.node);
        }
    }
}

/// A mutex's guard, poisoned or not (a panicking test must not stop the kubelet).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The kubelet's thread: client, server, Node, pod watch; until told to stop.
async fn run_kubelet(
    node: String,
    work: PathBuf,
    listener: std::net::TcpListener,
    ready: watch::Sender<Option<Result<(), String>>>,
    stop: oneshot::Receiver<()>,
) {
    let fail = |err: String| {
        let _ = ready.send(Some(Err(err)));
    };
    let path = std::env::var_os("PADDLECLOUD_TEST_KUBECONFIG").map(PathBuf::from);
    let client = match client_from(path).await {
        Ok(client) => client,
        Err(err) => return fail(err),
    };
    let tls = match tls_acceptor(&node) {
        Ok(tls) => tls,
        Err(err) => return fail(format!("a serving certificate: {err}")),
    };
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(err) => return fail(format!("its port: {err}")),
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let fallback = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(err) => return fail(format!("a temp dir: {err}")),
    };
    let kubelet = Arc::new(Kubelet {
        client,
        node,
        port,
        work,
        fallback,
        registered: SystemTime::now(),
        pods: Mutex::default(),
        logs: Mutex::default(),
        groups: Mutex::default(),
    });
    let server = tokio::spawn(serve(kubelet.clone(), listener, tls));
    if let Err(err) = kubelet.register().await {
        server.abort();
        return fail(format!("registering Node {}: {err}", kubelet.node));
    }
    let pods = tokio::spawn(kubelet.clone().watch_pods());
    let heartbeat = tokio::spawn(kubelet.clone().heartbeat());
    let _ = ready.send(Some(Ok(())));
    let _ = stop.await;
    server.abort();
    pods.abort();
    heartbeat.abort();
    kubelet.shutdown().await;
}

/// The kubelet's state, shared by its tasks.
struct Kubelet {
    client: Client,
    node: String,
    port: u16,
    work: PathBuf,
    /// Pods' dirs when `work` is gone (its test ended while another shares this kubelet).
    fallback: tempfile::TempDir,
    registered: SystemTime,
    /// The pods seen, by uid.
    pods: Mutex<HashMap<String, Slot>>,
    /// Containers' output, by namespace, pod and container name.
    logs: Mutex<HashMap<(String, String, String), Arc<LogBuf>>>,
    /// The process groups of running containers.
    groups: Mutex<HashSet<i32>>,
}

/// A pod the kubelet looks after.
struct Slot {
    namespace: String,
    name: String,
    /// `Some(grace seconds)` once the pod has a deletionTimestamp; dropped
    /// when the pod is gone from the API.
    deleting: watch::Sender<Option<i64>>,
    task: tokio::task::AbortHandle,
}

impl Kubelet {
    fn say(&self, what: impl std::fmt::Display) {
        eprintln!("[test-kubelet {}] {what}", self.node);
    }

    fn base(&self) -> &Path {
        if self.work.is_dir() {
            &self.work
        } else {
            self.fallback.path()
        }
    }

    // ----- the Node -----------------------------------------------------

    fn node_status(&self) -> Value {
        let now = rfc3339(SystemTime::now());
        let since = rfc3339(self.registered);
        let amounts = json!({
            "cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8",
            "ephemeral-storage": "1Ti",
        });
        let condition = |kind: &str, status: &str, reason: &str, message: &str| {
            json!({
                "type": kind, "status": status, "reason": reason, "message": message,
                "lastHeartbeatTime": now, "lastTransitionTime": since,
            })
        };
        json!({ "status": {
            "capacity": amounts,
            "allocatable": amounts,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "the test kubelet is posting ready status"),
            ],
            "addresses": [
                { "type": "InternalIP", "address": LOCALHOST },
                { "type": "Hostname", "address": self.node },
            ],
            "daemonEndpoints": { "kubeletEndpoint": { "Port": self.port } },
            "nodeInfo": {
                "machineID": "test-kubelet", "systemUUID": "test-kubelet", "bootID": "test-kubelet",
                "kernelVersion": "", "osImage": "local processes", "containerRuntimeVersion": "testkubelet://0.1",
                "kubeletVersion": "v1.20.2", "kubeProxyVersion": "v1.20.2",
                "operatingSystem": "linux", "architecture": std::env::consts::ARCH,
            },
        }})
    }

    /// Creates the Node (or takes over one of that name) and posts its status.
    async fn register(&self) -> Result<(), kube::Error> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node: Node = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node,
                "labels": {
                    "kubernetes.io/hostname": self.node,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "beta.kubernetes.io/os": "linux",
                    "beta.kubernetes.io/arch": "amd64",
                    "paddlecloud.org/test-kubelet": "true",
                },
            },
        }))
        .map_err(kube::Error::SerdeError)?;
        match nodes.create(&PostParams::default(), &node).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_already_exists() => {
                let open = json!({ "spec": { "unschedulable": null, "taints": null } });
                nodes
                    .patch(&self.node, &PatchParams::default(), &Patch::Merge(open))
                    .await?;
            }
            Err(err) => return Err(err),
        }
        nodes
            .patch_status(
                &self.node,
                &PatchParams::default(),
                &Patch::Merge(self.node_status()),
            )
            .await?;
        Ok(())
    }

    /// Posts the Node's status every 10 s (a real cluster's node lifecycle
    /// controller wants it), registering it again if someone deleted it.
    async fn heartbeat(self: Arc<Self>) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        loop {
            tokio::time::sleep(Duration::from_secs(10)).await;
            let status = Patch::Merge(self.node_status());
            match nodes
                .patch_status(&self.node, &PatchParams::default(), &status)
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.is_not_found() => {
                    if let Err(err) = self.register().await {
                        self.say(format_args!("registering the Node again: {err}"));
                    }
                }
                Err(err) => self.say(format_args!("heartbeat: {err}")),
            }
        }
    }

    /// Kills every container, forgets every pod and deletes the Node (so the
    /// scheduler sends no more pods to it).
    async fn shutdown(&self) {
        let slots: Vec<Slot> = lock(&self.pods).drain().map(|(_, s)| s).collect();
        for pgid in lock(&self.groups).drain() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
        for slot in &slots {
            slot.task.abort();
        }
        drop(slots);
        let nodes: Api<Node> = Api::all(self.client.clone());
        let params = DeleteParams::default();
        let delete = nodes.delete(&self.node, &params);
        match tokio::time::timeout(Duration::from_secs(3), delete).await {
            Ok(Ok(_)) => {}
            Ok(Err(kube::Error::Api(s))) if s.is_not_found() => {}
            Ok(Err(err)) => self.say(format_args!("deleting the Node: {err}")),
            Err(_) => self.say("deleting the Node: timed out"),
        }
    }

    // ----- pods -----------------------------------------------------------

    /// Follows the pods bound to the Node, for as long as the kubelet runs.
    async fn watch_pods(self: Arc<Self>) {
        let api: Api<Pod> = Api::all(self.client.clone());
        let config = watcher::Config::default().fields(&format!("spec.nodeName={}", self.node));
        let mut events = watcher::watcher(api, config).default_backoff().boxed();
        // The uids listed since the watch (re)started, to forget pods deleted meanwhile.
        let mut listed: Option<HashSet<String>> = None;
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::Init) => listed = Some(HashSet::new()),
                Ok(Event::InitApply(pod)) => {
                    if let (Some(set), Some(uid)) = (&mut listed, &pod.metadata.uid) {
                        set.insert(uid.clone());
                    }
                    self.seen(pod);
                }
                Ok(Event::InitDone) => {
                    if let Some(set) = listed.take() {
                        let gone: Vec<String> = lock(&self.pods)
                            .keys()
                            .filter(|uid| !set.contains(*uid))
                            .cloned()
                            .collect();
                        for uid in gone {
                            self.forget(&uid);
                        }
                    }
                }
                Ok(Event::Apply(pod)) => self.seen(pod),
                Ok(Event::Delete(pod)) => {
                    if let Some(uid) = &pod.metadata.uid {
                        self.forget(uid);
                    }
                }
                Err(err) => self.say(format_args!("watching pods: {err}")),
            }
        }
    }

    /// A pod bound to the Node was added or changed.
    fn seen(self: &Arc<Self>, pod: Pod) {
        let (Some(uid), Some(namespace), Some(name)) = (
            pod.metadata.uid.clone(),
            pod.metadata.namespace.clone(),
            pod.metadata.name.clone(),
        ) else {
            self.say("a pod without uid, namespace or name: ignored");
            return;
        };
        let deleting = pod
            .metadata
            .deletion_timestamp
            .as_ref()
            .map(|_| grace_seconds(&pod));
        let mut pods = lock(&self.pods);
        if let Some(slot) = pods.get(&uid) {
            if let Some(grace) = deleting {
                slot.deleting.send_if_modified(|d| {
                    let new = d.is_none();
                    if new {
                        *d = Some(grace);
                    }
                    new
                });
            }
            return;
        }
        let (tx, rx) = watch::channel(deleting);
        let task = tokio::spawn(self.clone().run_pod(pod, rx)).abort_handle();
        pods.insert(
            uid,
            Slot {
                namespace,
                name,
                deleting: tx,
                task,
            },
        );
    }

    /// A pod is gone from the API: kill what is left of it at once.
    fn forget(&self, uid: &str) {
        drop(lock(&self.pods).remove(uid));
        lock(&self.logs).retain(|_, log| log.uid != uid);
    }

    fn pods_api(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Plays one pod from its binding to its deletion.
    async fn run_pod(self: Arc<Self>, pod: Pod, mut del: watch::Receiver<Option<i64>>) {
        let ctx = match PodCtx::new(&self, &pod) {
            Ok(ctx) => ctx,
            Err(err) => {
                self.say(format_args!(
                    "pod {}: {err}",
                    pod.metadata.name.as_deref().unwrap_or("?")
                ));
                return self.finish_later(None, &mut del).await;
            }
        };
        let spec = pod.spec.clone().unwrap_or_default();
        let mut state = PodState::new(&spec);
        let status = pod.status.clone().unwrap_or_default();
        let phase = status.phase.as_deref().unwrap_or("Pending");
        if phase == "Succeeded" || phase == "Failed" {
            return self.finish_later(Some(&ctx), &mut del).await;
        }
        if del.borrow().is_some() {
            return self.finish_later(Some(&ctx), &mut del).await;
        }
        if phase != "Pending" || status.start_time.is_some() {
            // Started by an earlier kubelet of this name, whose processes are gone.
            let now = SystemTime::now();
            for c in state.init.iter_mut().chain(state.main.iter_mut()) {
                c.state = CState::Terminated {
                    code: 137,
                    reason: "Error".into(),
                    message: Some("the test kubelet that ran this container stopped".into()),
                    started: now,
                    finished: now,
                    id: None,
                };
            }
            self.patch(&ctx, &mut state).await;
            return self.finish_later(Some(&ctx), &mut del).await;
        }
        self.patch(&ctx, &mut state).await;
        let init = spec.init_containers.clone().unwrap_or_default();
        for (i, container) in init.iter().enumerate() {
            let group = [(Which::Init(i), container.clone())];
            if let Some(stop) = self.run_group(&ctx, &mut state, &group, &mut del).await {
                return self.stopped(&ctx, &mut state, stop, &mut del).await;
            }
            if !matches!(state.init[i].state, CState::Terminated { code: 0, .. }) {
                state.reason = Some("Init:Error".into());
                state.message = Some(format!("init container {:?} failed", container.name));
                self.patch(&ctx, &mut state).await;
                return self.finish_later(Some(&ctx), &mut del).await;
            }
        }
        let group: Vec<(Which, Container)> = spec
            .containers
            .iter()
            .enumerate()
            .map(|(i, c)| (Which::Main(i), c.clone()))
            .collect();
        if let Some(stop) = self.run_group(&ctx, &mut state, &group, &mut del).await {
            return self.stopped(&ctx, &mut state, stop, &mut del).await;
        }
        self.finish_later(Some(&ctx), &mut del).await
    }

    /// After a deletion stopped the pod's containers: the final status, then
    /// the pod deleted for good.
    async fn stopped(
        &self,
        ctx: &PodCtx,
        state: &mut PodState,
        stop: Stop,
        del: &mut watch::Receiver<Option<i64>>,
    ) {
        if stop == Stop::Gone {
            return;
        }
        self.patch(ctx, state).await;
        self.finish_later(Some(ctx), del).await
    }

    /// Waits for the pod's deletion, then deletes it for good.
    async fn finish_later(&self, ctx: Option<&PodCtx>, del: &mut watch::Receiver<Option<i64>>) {
        if deleted(del).await == Stop::Gone {
            return;
        }
        let Some(ctx) = ctx else { return };
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(ctx.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        for attempt in 0..5 {
            match self
                .pods_api(&ctx.namespace)
                .delete(&ctx.name, &params)
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(s)) if s.is_not_found() || s.is_conflict() => return,
                Err(err) => {
                    self.say(format_args!(
                        "deleting pod {}/{} (attempt {attempt}): {err}",
                        ctx.namespace, ctx.name
                    ));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    /// Posts the pod's status (merge patch of `status`; the uid in the patch
    /// makes it fail on a new pod of the same name).
    async fn patch(&self, ctx: &PodCtx, state: &mut PodState) {
        let body = json!({ "metadata": { "uid": ctx.uid }, "status": state.json() });
        for attempt in 0..3 {
            let patch = Patch::Merge(&body);
            match self
                .pods_api(&ctx.namespace)
                .patch_status(&ctx.name, &PatchParams::default(), &patch)
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(s)) if s.is_not_found() || s.is_invalid() => return,
                Err(err) => {
                    self.say(format_args!(
                        "status of {}/{} (attempt {attempt}): {err}",
                        ctx.namespace, ctx.name
                    ));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    /// Runs `group` (containers at once) until all have exited, or the pod is
    /// deleted (then kills them and returns how).
    async fn run_group(
        self: &Arc<Self>,
        ctx: &PodCtx,
        state: &mut PodState,
        group: &[(Which, Container)],
        del: &mut watch::Receiver<Option<i64>>,
    ) -> Option<Stop> {
        // Environments first (they may wait for a ConfigMap or Secret), as
        // CreateContainerConfigError.
        let mut envs = Vec::new();
        for (which, container) in group {
            let env = loop {
                match self.env_for(ctx, container).await {
                    Ok(env) => break env,
                    Err(message) => {
                        let waiting = CState::Waiting {
                            reason: "CreateContainerConfigError".into(),
                            message: Some(message),
                        };
                        if state.get(*which).state != waiting {
                            state.get(*which).state = waiting;
                            self.patch(ctx, state).await;
                        }
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_secs(1)) => {}
                            stop = deleted(del) => return Some(stop),
                        }
                    }
                }
            };
            envs.push(env);
        }
        let mut waits = FuturesUnordered::new();
        let mut running: HashMap<usize, i32> = HashMap::new();
        for (n, ((which, container), env)) in group.iter().zip(envs).enumerate() {
            match self.spawn(ctx, container, env) {
                Ok(proc) => {
                    state.get(*which).state = CState::Running {
                        started: proc.started,
                        id: proc.id.clone(),
                    };
                    running.insert(n, proc.pgid);
                    waits.push(wait_proc(self.clone(), n, proc));
                }
                Err(terminated) => state.get(*which).state = terminated,
            }
        }
        self.patch(ctx, state).await;
        let mut stop = None;
        let mut kill_at: Option<tokio::time::Instant> = None;
        while !waits.is_empty() {
            let deadline =
                kill_at.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                Some((n, exit)) = waits.next() => {
                    running.remove(&n);
                    let (which, _) = &group[n];
                    let c = state.get(*which);
                    let started = match &c.state {
                        CState::Running { started, .. } => *started,
                        _ => exit.finished,
                    };
                    c.state = CState::Terminated {
                        code: exit.code,
                        reason: if exit.code == 0 { "Completed" } else { "Error" }.into(),
                        message: (exit.code != 0).then_some(exit.message).filter(|m| !m.is_empty()),
                        started,
                        finished: exit.finished,
                        id: Some(exit.id),
                    };
                    if stop.is_none() {
                        self.patch(ctx, state).await;
                    }
                }
                s = deleted(del), if stop.is_none() => {
                    let grace = match s {
                        Stop::Graceful(seconds) => seconds,
                        Stop::Gone => 0,
                    };
                    let signal = if grace > 0 { Signal::SIGTERM } else { Signal::SIGKILL };
                    for pgid in running.values() {
                        let _ = killpg(Pid::from_raw(*pgid), signal);
                    }
                    kill_at = Some(tokio::time::Instant::now() + Duration::from_secs(grace as u64));
                    stop = Some(s);
                }
                () = tokio::time::sleep_until(deadline), if kill_at.is_some() => {
                    for pgid in running.values() {
                        let _ = killpg(Pid::from_raw(*pgid), Signal::SIGKILL);
                    }
                    kill_at = None;
                }
            }
        }
        stop
    }

    /// The environment of a container, as the kubelet makes it.
    async fn env_for(&self, ctx: &PodCtx, c: &Container) -> Result<Vec<(String, String)>, String> {
        let mut env = Env::default();
        if let Some(path) = std::env::var_os("PATH") {
            env.set("PATH".into(), path.to_string_lossy().into_owned());
        }
        env.set("HOSTNAME".into(), ctx.hostname.clone());
        env.set("HOME".into(), ctx.dir.to_string_lossy().into_owned());
        for from in c.env_from.iter().flatten() {
            let prefix = from.prefix.clone().unwrap_or_default();
            if let Some(r) = &from.config_map_ref {
                let optional = r.optional.unwrap_or(false);
                match self.config_map(ctx, &r.name, optional).await? {
                    Some(cm) => {
                        for (k, v) in cm.data.unwrap_or_default() {
                            env.set(format!("{prefix}{k}"), v);
                        }
                    }
                    None => continue,
                }
            }
            if let Some(r) = &from.secret_ref {
                let optional = r.optional.unwrap_or(false);
                if let Some(secret) = self.secret(ctx, &r.name, optional).await? {
                    for (k, v) in secret.data.unwrap_or_default() {
                        env.set(
                            format!("{prefix}{k}"),
                            String::from_utf8_lossy(&v.0).into_owned(),
                        );
                    }
                }
            }
        }
        for var in c.env.iter().flatten() {
            let value = match (&var.value, &var.value_from) {
                (Some(value), _) => expand(value, &env.vars),
                (None, Some(from)) => {
                    if let Some(field) = &from.field_ref {
                        ctx.field(&field.field_path, &self.node)
                    } else if let Some(key) = &from.config_map_key_ref {
                        let optional = key.optional.unwrap_or(false);
                        let data = self.config_map(ctx, &key.name, optional).await?;
                        match data.and_then(|cm| cm.data?.remove(&key.key)) {
                            Some(v) => v,
                            None if optional => continue,
                            None => {
                                return Err(format!(
                                    "couldn't find key {} in ConfigMap {}/{}",
                                    key.key, ctx.namespace, key.name
                                ))
                            }
                        }
                    } else if let Some(key) = &from.secret_key_ref {
                        let optional = key.optional.unwrap_or(false);
                        let data = self.secret(ctx, &key.name, optional).await?;
                        match data.and_then(|s| s.data?.remove(&key.key)) {
                            Some(v) => String::from_utf8_lossy(&v.0).into_owned(),
                            None if optional => continue,
                            None => {
                                return Err(format!(
                                    "couldn't find key {} in Secret {}/{}",
                                    key.key, ctx.namespace, key.name
                                ))
                            }
                        }
                    } else {
                        // resourceFieldRef: not played.
                        self.say(format_args!(
                            "{}: env {} (resourceFieldRef) left out",
                            ctx.name, var.name
                        ));
                        continue;
                    }
                }
                (None, None) => String::new(),
            };
            env.set(var.name.clone(), value);
        }
        Ok(env.list)
    }

    async fn config_map(
        &self,
        ctx: &PodCtx,
        name: &str,
        optional: bool,
    ) -> Result<Option<ConfigMap>, String> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &ctx.namespace);
        match api.get_opt(name).await {
            Ok(Some(cm)) => Ok(Some(cm)),
            Ok(None) if optional => Ok(None),
            Ok(None) => Err(format!("configmap \"{name}\" not found")),
            Err(err) => Err(format!("configmap \"{name}\": {err}")),
        }
    }

    async fn secret(
        &self,
        ctx: &PodCtx,
        name: &str,
        optional: bool,
    ) -> Result<Option<Secret>, String> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &ctx.namespace);
        match api.get_opt(name).await {
            Ok(Some(s)) => Ok(Some(s)),
            Ok(None) if optional => Ok(None),
            Ok(None) => Err(format!("secret \"{name}\" not found")),
            Err(err) => Err(format!("secret \"{name}\": {err}")),
        }
    }

    /// Starts a container's process in its own process group, its output
    /// captured; or the `StartError` state it ends in at once.
    fn spawn(
        self: &Arc<Self>,
        ctx: &PodCtx,
        c: &Container,
        env: Vec<(String, String)>,
    ) -> Result<Proc, CState> {
        let now = SystemTime::now();
        let start_error = |message: String| CState::Terminated {
            code: 128,
            reason: "StartError".into(),
            message: Some(message),
            started: now,
            finished: now,
            id: None,
        };
        let log = Arc::new(LogBuf::new(ctx, &c.name, self.base()));
        lock(&self.logs).insert(
            (ctx.namespace.clone(), ctx.name.clone(), c.name.clone()),
            log.clone(),
        );
        let vars: HashMap<String, String> = env.iter().cloned().collect();
        let argv: Vec<String> = c
            .command
            .iter()
            .flatten()
            .chain(c.args.iter().flatten())
            .map(|a| expand(a, &vars))
            .collect();
        if c.command.as_ref().is_none_or(Vec::is_empty) {
            log.finish();
            return Err(start_error(format!(
                "the test kubelet has no images: container {:?} must give its command (image {:?}'s entrypoint is unknown here)",
                c.name,
                c.image.as_deref().unwrap_or("")
            )));
        }
        let cwd = c
            .working_dir
            .as_deref()
            .map(Path::new)
            .filter(|d| d.is_absolute() && d.is_dir())
            .unwrap_or(&ctx.dir);
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env_clear()
            .envs(env)
            .current_dir(cwd)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                // Dies with the kubelet's thread, should the test process die without cleaning up.
                let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
                Ok(())
            });
        }
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(err) => {
                log.finish();
                let why = match err.kind() {
                    std::io::ErrorKind::NotFound if !argv[0].contains('/') => {
                        "executable file not found in $PATH".to_owned()
                    }
                    std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
                    std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
                    _ => err.to_string(),
                };
                return Err(start_error(format!(
                    "failed to start container {:?}: exec: {:?}: {why}",
                    c.name, argv[0]
                )));
            }
        };
        let pid = child.id().map_or(0, |p| p as i32);
        lock(&self.groups).insert(pid);
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(tokio::spawn(read_lines(out, log.clone())));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(tokio::spawn(read_lines(err, log.clone())));
        }
        Ok(Proc {
            child,
            pgid: pid,
            id: format!("testkubelet://{pid}"),
            started: now,
            log,
            readers,
        })
    }

    /// The output of a container, if it has started.
    fn log(&self, namespace: &str, pod: &str, container: &str) -> Option<Arc<LogBuf>> {
        lock(&self.logs)
            .get(&(namespace.to_owned(), pod.to_owned(), container.to_owned()))
            .cloned()
    }
}

/// An environment being built: in order, and by name for `$(VAR)`.
#[derive(Default)]
struct Env {
    list: Vec<(String, String)>,
    vars: HashMap<String, String>,
}

impl Env {
    fn set(&mut self, name: String, value: String) {
        self.vars.insert(name.clone(), value.clone());
        self.list.push((name, value));
    }
}

/// How a pod's deletion stops it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// Marked for deletion: this many seconds between SIGTERM and SIGKILL.
    Graceful(i64),
    /// Gone from the API (deleted with grace 0, or the kubelet stops): SIGKILL.
    Gone,
}

/// Until the pod is marked for deletion (or gone).
async fn deleted(del: &mut watch::Receiver<Option<i64>>) -> Stop {
    match del.wait_for(Option::is_some).await {
        Ok(grace) => Stop::Graceful(grace.unwrap_or(0)),
        Err(_) => Stop::Gone,
    }
}

/// A deleted pod's grace period: the deletion's, else the spec's, at most 30 s.
fn grace_seconds(pod: &Pod) -> i64 {
    pod.metadata
        .deletion_grace_period_seconds
        .or_else(|| pod.spec.as_ref()?.termination_grace_period_seconds)
        .unwrap_or(30)
        .clamp(0, MAX_GRACE_SECONDS)
}

/// What a pod's runner needs to know of it.
struct PodCtx {
    namespace: String,
    name: String,
    uid: String,
    hostname: String,
    service_account: String,
    labels: std::collections::BTreeMap<String, String>,
    annotations: std::collections::BTreeMap<String, String>,
    /// Its working dir (unless a container names an existing absolute one).
    dir: PathBuf,
}

impl PodCtx {
    fn new(kubelet: &Kubelet, pod: &Pod) -> Result<PodCtx, String> {
        let meta = &pod.metadata;
        let (Some(namespace), Some(name), Some(uid)) = (&meta.namespace, &meta.name, &meta.uid)
        else {
            return Err("no namespace, name or uid".into());
        };
        let spec = pod.spec.as_ref();
        let dir = kubelet.base().join("pods").join(format!(
            "{namespace}_{name}_{}",
            uid.get(..8).unwrap_or(uid)
        ));
        let dir = match std::fs::create_dir_all(&dir) {
            Ok(()) => dir,
            Err(err) => {
                kubelet.say(format_args!(
                    "{}: {err}; {name} runs in {}",
                    dir.display(),
                    kubelet.fallback.path().display()
                ));
                kubelet.fallback.path().to_owned()
            }
        };
        Ok(PodCtx {
            namespace: namespace.clone(),
            name: name.clone(),
            uid: uid.clone(),
            hostname: spec
                .and_then(|s| s.hostname.clone())
                .unwrap_or_else(|| name.clone()),
            service_account: spec
                .and_then(|s| s.service_account_name.clone())
                .unwrap_or_default(),
            labels: meta.labels.clone().unwrap_or_default(),
            annotations: meta.annotations.clone().unwrap_or_default(),
            dir,
        })
    }

    /// A `fieldRef`'s value (the downward API).
    fn field(&self, path: &str, node: &str) -> String {
        let key_of = |prefix: &str| {
            path.strip_prefix(prefix)?
                .strip_suffix("']")
                .map(str::to_owned)
        };
        match path {
            "metadata.name" => self.name.clone(),
            "metadata.namespace" => self.namespace.clone(),
            "metadata.uid" => self.uid.clone(),
            "spec.nodeName" => node.to_owned(),
            "spec.serviceAccountName" => self.service_account.clone(),
            "status.podIP" | "status.podIPs" => pod_ip().to_owned(),
            "status.hostIP" | "status.hostIPs" => LOCALHOST.to_owned(),
            _ => {
                if let Some(key) = key_of("metadata.labels['") {
                    self.labels.get(&key).cloned().unwrap_or_default()
                } else if let Some(key) = key_of("metadata.annotations['") {
                    self.annotations.get(&key).cloned().unwrap_or_default()
                } else {
                    eprintln!(
                        "[test-kubelet] {}: fieldRef {path} is not played: empty",
                        self.name
                    );
                    String::new()
                }
            }
        }
    }
}

/// `$(VAR)` references expanded as Kubernetes does: defined ones replaced,
/// undefined ones kept, `$$` an escaped `$`.
fn expand(input: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('(') {
            match tail.find(')') {
                Some(end) => {
                    let name = &tail[..end];
                    match vars.get(name) {
                        Some(value) => out.push_str(value),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &tail[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = tail;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

// ----- container statuses ---------------------------------------------------

/// Which container of the pod.
#[derive(Clone, Copy, Debug)]
enum Which {
    Init(usize),
    Main(usize),
}

#[derive(Clone, Debug, PartialEq)]
enum CState {
    Waiting {
        reason: String,
        message: Option<String>,
    },
    Running {
        started: SystemTime,
        id: String,
    },
    Terminated {
        code: i32,
        reason: String,
        message: Option<String>,
        started: SystemTime,
        finished: SystemTime,
        id: Option<String>,
    },
}

struct CStatus {
    name: String,
    image: String,
    init: bool,
    state: CState,
}

impl CStatus {
    fn json(&self) -> Value {
        let mut v = json!({
            "name": self.name,
            "image": self.image,
            "imageID": format!("testkubelet://{}", self.image),
            "restartCount": 0,
            "ready": false,
            "started": false,
            "lastState": {},
        });
        match &self.state {
            CState::Waiting { reason, message } => {
                let mut w = json!({ "reason": reason });
                if let Some(m) = message {
                    w["message"] = json!(m);
                }
                v["state"] = json!({ "waiting": w });
            }
            CState::Running { started, id } => {
                v["state"] = json!({ "running": { "startedAt": rfc3339(*started) } });
                v["ready"] = json!(true);
                v["started"] = json!(true);
                v["containerID"] = json!(id);
            }
            CState::Terminated {
                code,
                reason,
                message,
                started,
                finished,
                id,
            } => {
                let mut t = json!({
                    "exitCode": code,
                    "reason": reason,
                    "startedAt": rfc3339(*started),
                    "finishedAt": rfc3339(*finished),
                });
                if let Some(m) = message {
                    t["message"] = json!(m);
                }
                if let Some(id) = id {
                    t["containerID"] = json!(id);
                    v["containerID"] = json!(id);
                }
                v["state"] = json!({ "terminated": t });
                v["ready"] = json!(self.init && *code == 0);
            }
        }
        v
    }

    fn ended(&self, ok: bool) -> bool {
        matches!(self.state, CState::Terminated { code, .. } if (code == 0) == ok)
    }
}

/// A pod's status as the kubelet sees it.
struct PodState {
    init: Vec<CStatus>,
    main: Vec<CStatus>,
    start_time: SystemTime,
    reason: Option<String>,
    message: Option<String>,
    /// Each condition's status and when it last changed.
    conditions: HashMap<&'static str, (bool, SystemTime)>,
}

impl PodState {
    fn new(spec: &k8s_openapi::api::core::v1::PodSpec) -> PodState {
        let status = |c: &Container, init: bool, reason: &str| CStatus {
            name: c.name.clone(),
            image: c.image.clone().unwrap_or_default(),
            init,
            state: CState::Waiting {
                reason: reason.into(),
                message: None,
            },
        };
        let init: Vec<CStatus> = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| status(c, true, "PodInitializing"))
            .collect();
        let main_reason = if init.is_empty() {
            "ContainerCreating"
        } else {
            "PodInitializing"
        };
        PodState {
            main: spec
                .containers
                .iter()
                .map(|c| status(c, false, main_reason))
                .collect(),
            init,
            start_time: SystemTime::now(),
            reason: None,
            message: None,
            conditions: HashMap::new(),
        }
    }

    fn get(&mut self, which: Which) -> &mut CStatus {
        match which {
            Which::Init(i) => &mut self.init[i],
            Which::Main(i) => &mut self.main[i],
        }
    }

    fn phase(&self) -> &'static str {
        if self.init.iter().any(|c| c.ended(false)) {
            return "Failed";
        }
        if !self.init.iter().all(|c| c.ended(true)) {
            return "Pending";
        }
        let terminated = |c: &CStatus| matches!(c.state, CState::Terminated { .. });
        if !self.main.is_empty() && self.main.iter().all(terminated) {
            if self.main.iter().all(|c| c.ended(true)) {
                "Succeeded"
            } else {
                "Failed"
            }
        } else if self
            .main
            .iter()
            .any(|c| matches!(c.state, CState::Waiting { .. }))
        {
            "Pending"
        } else {
            "Running"
        }
    }

    fn json(&mut self) -> Value {
        let phase = self.phase();
        let initialized = self.init.iter().all(|c| c.ended(true));
        let ready = phase == "Running"
            && self
                .main
                .iter()
                .all(|c| matches!(c.state, CState::Running { .. }));
        let not_ready = if phase == "Succeeded" || phase == "Failed" {
            "PodCompleted"
        } else {
            "ContainersNotReady"
        };
        let now = SystemTime::now();
        let mut condition = |kind: &'static str, ok: bool, reason: &str| {
            let entry = self.conditions.entry(kind).or_insert((ok, now));
            if entry.0 != ok {
                *entry = (ok, now);
            }
            let mut c = json!({
                "type": kind,
                "status": if ok { "True" } else { "False" },
                "lastProbeTime": null,
                "lastTransitionTime": rfc3339(entry.1),
            });
            if !ok {
                c["reason"] = json!(reason);
            }
            c
        };
        let conditions = json!([
            condition("Initialized", initialized, "ContainersNotInitialized"),
            condition("Ready", ready, not_ready),
            condition("ContainersReady", ready, not_ready),
            condition("PodScheduled", true, ""),
        ]);
        let mut status = json!({
            "phase": phase,
            "conditions": conditions,
            "hostIP": LOCALHOST,
            "podIP": pod_ip(),
            "podIPs": [{ "ip": pod_ip() }],
            "startTime": rfc3339(self.start_time),
            "containerStatuses": self.main.iter().map(CStatus::json).collect::<Vec<_>>(),
        });
        if !self.init.is_empty() {
            status["initContainerStatuses"] =
                json!(self.init.iter().map(CStatus::json).collect::<Vec<_>>());
        }
        if let Some(reason) = &self.reason {
            status["reason"] = json!(reason);
        }
        if let Some(message) = &self.message {
            status["message"] = json!(message);
        }
        status
    }
}

// ----- processes and their output -------------------------------------------

/// A running container.
struct Proc {
    child: tokio::process::Child,
    pgid: i32,
    id: String,
    started: SystemTime,
    log: Arc<LogBuf>,
    readers: Vec<tokio::task::JoinHandle<()>>,
}

/// How a container ended.
struct Exit {
    code: i32,
    finished: SystemTime,
    id: String,
    /// The last lines of its output.
    message: String,
}

/// Waits for container `n` to exit; then kills what is left of its process
/// group (as the end of a container's PID 1 does) and reads its output to the end.
async fn wait_proc(kubelet: Arc<Kubelet>, n: usize, mut proc: Proc) -> (usize, Exit) {
    let status = proc.child.wait().await;
    let _ = killpg(Pid::from_raw(proc.pgid), Signal::SIGKILL);
    lock(&kubelet.groups).remove(&proc.pgid);
    for reader in proc.readers.drain(..) {
        let abort = reader.abort_handle();
        // A process that left the group may hold the pipe open.
        if tokio::time::timeout(Duration::from_secs(2), reader)
            .await
            .is_err()
        {
            abort.abort();
        }
    }
    proc.log.finish();
    let code = match status {
        Ok(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
        Err(err) => {
            kubelet.say(format_args!("waiting for {}: {err}", proc.id));
            255
        }
    };
    let exit = Exit {
        code,
        finished: SystemTime::now(),
        id: proc.id.clone(),
        message: proc.log.tail_text(),
    };
    (n, exit)
}

async fn read_lines(out: impl tokio::io::AsyncRead + Unpin, log: Arc<LogBuf>) {
    let mut reader = tokio::io::BufReader::new(out);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => log.push(&line),
        }
    }
}

/// A line of output and when it arrived.
struct LogLine {
    at: SystemTime,
    bytes: Vec<u8>,
}

#[derive(Default)]
struct LogState {
    lines: Vec<LogLine>,
    /// The container has exited and its output is all here.
    done: bool,
}

/// A container's output, in memory (and in a file under `work/logs`).
struct LogBuf {
    uid: String,
    state: watch::Sender<LogState>,
    file: Mutex<Option<std::fs::File>>,
}

impl LogBuf {
    fn new(ctx: &PodCtx, container: &str, base: &Path) -> LogBuf {
        let dir = base.join("logs");
        let uid8 = ctx.uid.get(..8).unwrap_or(&ctx.uid);
        let path = dir.join(format!(
            "{}_{}_{uid8}_{container}.log",
            ctx.namespace, ctx.name
        ));
        let file = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::File::create(&path))
            .ok();
        LogBuf {
            uid: ctx.uid.clone(),
            state: watch::Sender::new(LogState::default()),
            file: Mutex::new(file),
        }
    }

    fn push(&self, bytes: &[u8]) {
        let at = SystemTime::now();
        if let Some(file) = lock(&self.file).as_mut() {
            let _ = file.write_all(bytes);
        }
        self.state.send_modify(|s| {
            s.lines.push(LogLine {
                at,
                bytes: bytes.to_vec(),
            })
        });
    }

    fn finish(&self) {
        self.state.send_modify(|s| s.done = true);
    }

    /// The last lines, as a failed container's termination message.
    fn tail_text(&self) -> String {
        let state = self.state.borrow();
        let first = state.lines.len().saturating_sub(MESSAGE_LINES);
        let bytes: Vec<u8> = state.lines[first..]
            .iter()
            .flat_map(|l| l.bytes.iter().copied())
            .collect();
        let cut = bytes.len().saturating_sub(MESSAGE_BYTES);
        String::from_utf8_lossy(&bytes[cut..]).into_owned()
    }
}

// ----- the kubelet API --------------------------------------------------------

/// A self-signed certificate for 127.0.0.1 and `localhost` (the apiserver
/// checks none).
pub fn tls_acceptor(node: &str) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (key, cert) = (dir.path().join("key.pem"), dir.path().join("cert.pem"));
    let out = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ])
        .args(["-days", "7", "-subj", &format!("/CN={node}")])
        .args([
            "-addext",
            &format!("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:{node}"),
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("running openssl: {e}"))?;
    if !out.status.success() {
        return Err(format!("openssl: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let certs = CertificateDer::pem_file_iter(&cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(&key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Accepted TLS connections, handshakes done apart so a slow one stalls none.
struct TlsListener {
    conns: mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        SocketAddr,
    )>,
    addr: SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.conns.recv().await {
            Some(conn) => conn,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

async fn serve(
    kubelet: Arc<Kubelet>,
    listener: tokio::net::TcpListener,
    tls: tokio_rustls::TlsAcceptor,
) {
    let app = axum::Router::new()
        .route(
            "/containerLogs/{namespace}/{pod}/{container}",
            axum::routing::get(container_logs),
        )
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                "the test kubelet serves only containerLogs\n",
            )
        })
        .with_state(kubelet.clone());
    if let Err(err) = serve_tls(listener, tls, app).await {
        kubelet.say(format_args!("server: {err}"));
    }
}

/// Serves `app` over TLS on `listener` until the runtime ends.
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    tls: tokio_rustls::TlsAcceptor,
    app: axum::Router,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    let (tx, conns) = mpsc::channel(16);
    let accepting = tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(conn) => conn,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let (tls, tx) = (tls.clone(), tx.clone());
            tokio::spawn(async move {
                if let Ok(Ok(stream)) =
                    tokio::time::timeout(Duration::from_secs(10), tls.accept(tcp)).await
                {
                    let _ = tx.send((stream, peer)).await;
                }
            });
        }
    });
    let served = axum::serve(TlsListener { conns, addr }, app).await;
    accepting.abort();
    served
}

/// `GET /containerLogs/{namespace}/{pod}/{container}`, as the kubelet serves it.
async fn container_logs(
    State(kubelet): State<Arc<Kubelet>>,
    UrlPath((namespace, pod, container)): UrlPath<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let flag = |k: &str| query.get(k).is_some_and(|v| v == "true" || v == "1");
    let number = |k: &str| query.get(k).and_then(|v| v.parse::<i64>().ok());
    let Some(log) = kubelet.log(&namespace, &pod, &container) else {
        let known = lock(&kubelet.pods)
            .values()
            .any(|s| s.namespace == namespace && s.name == pod);
        return if known {
            let msg = format!(
                "container {container:?} in pod {pod:?} is waiting to start: ContainerCreating\n"
            );
            (StatusCode::BAD_REQUEST, msg).into_response()
        } else {
            (
                StatusCode::NOT_FOUND,
                format!("pod {pod:?} does not exist\n"),
            )
                .into_response()
        };
    };
    if flag("previous") {
        let msg = format!("previous terminated container {container:?} in pod {pod:?} not found\n");
        return (StatusCode::BAD_REQUEST, msg).into_response();
    }
    let since = match (number("sinceSeconds"), query.get("sinceTime")) {
        (Some(secs), _) => SystemTime::now().checked_sub(Duration::from_secs(secs.max(0) as u64)),
        (None, Some(t)) => {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
                .ok()
                .map(SystemTime::from)
        }
        (None, None) => None,
    };
    let rx = log.state.subscribe();
    let next = {
        let state = rx.borrow();
        let mut first = since.map_or(0, |t| state.lines.partition_point(|l| l.at < t));
        if let Some(n) = number("tailLines").filter(|n| *n >= 0) {
            first = first.max(state.lines.len().saturating_sub(n as usize));
        }
        first
    };
    let reading = Reading {
        rx,
        next,
        left: number("limitBytes").filter(|n| *n > 0).map(|n| n as usize),
        timestamps: flag("timestamps"),
        follow: flag("follow"),
    };
    let body = futures_util::stream::unfold(reading, |mut r| async move {
        let chunk = r.next_chunk().await?;
        Some((Ok::<_, Infallible>(chunk), r))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// A log request's progress through a container's output.
struct Reading {
    rx: watch::Receiver<LogState>,
    /// The next line to send.
    next: usize,
    /// limitBytes still allowed.
    left: Option<usize>,
    timestamps: bool,
    follow: bool,
}

impl Reading {
    /// The next lines there are, waiting for them when following; None at the end.
    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            if self.left == Some(0) {
                return None;
            }
            let (mut chunk, done) = {
                let state = self.rx.borrow_and_update();
                let mut chunk = Vec::new();
                while self.next < state.lines.len() && chunk.len() < 64 * 1024 {
                    let line = &state.lines[self.next];
                    if self.timestamps {
                        chunk.extend_from_slice(rfc3339_nano(line.at).as_bytes());
                        chunk.push(b' ');
                    }
                    chunk.extend_from_slice(&line.bytes);
                    self.next += 1;
                }
                (chunk, state.done)
            };
            if !chunk.is_empty() {
                if let Some(left) = &mut self.left {
                    chunk.truncate(*left);
                    *left -= chunk.len();
                }
                return Some(Bytes::from(chunk));
            }
            if done || !self.follow {
                return None;
            }
            if self.rx.changed().await.is_err() {
                return None;
            }
        }
    }
}

// ----- times ------------------------------------------------------------------

/// `2006-01-02T15:04:05Z` (metav1.Time: seconds, UTC).
/// `t` as Kubernetes writes a time (seconds, UTC).
pub fn rfc3339(t: SystemTime) -> String {
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

/// `2006-01-02T15:04:05.000000000Z`, the kubelet's log timestamps (RFC3339NanoFixed).
fn rfc3339_nano(t: SystemTime) -> String {
    let nanos = time::OffsetDateTime::from(t).nanosecond();
    let secs = rfc3339(t);
    format!("{}.{nanos:09}Z", &secs[..secs.len() - 1])
}
