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
//! * mounts a container's `volumeMounts` (`readOnly`, `subPath`,
//!   `subPathExpr`) of these volumes, bind-mounted at their `mountPath` in a
//!   mount namespace of the container's own (`/` made private in it, so the
//!   host never sees them): `persistentVolumeClaim` (the claim, once bound,
//!   gives its PersistentVolume's `hostPath.path`; `scripts/kube-test-cluster.sh`'s
//!   default StorageClass provisions those under `/tmp/hostpath_pv/`; a
//!   volume of another kind fails the container with `StartError`),
//!   `hostPath` (made if missing, as its `type` says), `configMap` and
//!   `secret` (their keys, or `items`, written as files under
//!   `work/pods/NS_POD_UID8/volumes/VOLUME/`; always read-only, as a
//!   kubelet mounts them). A claim not bound yet, or a missing ConfigMap or
//!   Secret that is not `optional`, holds the container in `ContainerCreating`
//!   (with a message), retried every second; a mount that fails fails the
//!   container with `StartError`, naming it. The mount points (dirs, or empty
//!   files for a file's `subPath`) are made on the host, and stay there empty.
//!   Containers without such mounts run in the host's mount namespace;
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
//!   `workingDir` if that is an existing absolute dir (after its mounts, for
//!   a container that has some), else `work/pods/NS_POD_UID8`.
//! * The environment is the pod's (`value`, `$(VAR)`, `fieldRef`,
//!   `configMapKeyRef`, `secretKeyRef`, `envFrom`; a missing ConfigMap or Secret
//!   holds the pod in `CreateContainerConfigError`, retried every second) over
//!   `PATH` from the test process, `HOSTNAME` (spec.hostname, else the pod's
//!   name) and `HOME` (the pod's dir): a pod's own `HOME` wins.
//!   `resourceFieldRef`s are left out.
//! * Timings on 2 busy cores: create -> Running 50-100 ms; exit -> final status
//!   20-150 ms; delete -> gone ~50 ms when SIGTERM ends the leader.
//!
//! Unlike a real kubelet: no images (a container without `command` fails
//! with `StartError`), probes (running means ready), resource limits,
//! restarts (pods end `Succeeded` or `Failed` whatever their
//! `restartPolicy`), exec/attach/port-forward, or previous logs; volumes of
//! no kind but the four above (`emptyDir`, `downwardAPI`, `projected`... are
//! left unmounted: their `mountPath` is the host's folder, shared with the
//! test and other pods, as a serving test relies on for its model dir), nor
//! updates of mounted ConfigMaps and Secrets; every pod shares the host's
//! network as 127.0.0.1 (ports can collide; pod hostnames and Services do
//! not resolve; [`routable_pod_ips`] makes them report the host's own IPv4
//! instead, for Endpoints and the API server's service proxy); no
//! `KUBERNETES_SERVICE_*` variables nor ServiceAccount token. A failed
//! container's `message` is always the end of its output (a real one only
//! with `terminationMessagePolicy: FallbackToLogsOnError`), and a failed
//! init container sets the pod's `status.reason` to `Init:Error` (a real
//! kubelet leaves it empty; kubectl derives that text). Logs are kept in
//! memory for as long as the pod exists.

mod api;
mod env;
mod node;
mod pods;
mod process;
mod status;
mod volumes;

use api::serve;
pub use api::{rfc3339, serve_tls, tls_acceptor};
use env::*;
use node::*;
use pods::*;
use process::*;
use status::*;
use volumes::*;

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

/// The one Node every test of this binary runs its pods on: with several
/// Nodes the scheduler spreads pods over all of them, whoever's test they
/// belong to, and a kubelet that stops takes its pods with it.
pub const NODE: &str = "test-node";

/// Namespaces whose pods report the host's IPv4 (see [`routable_pod_ips`]).
static ROUTABLE: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);

/// The IP a pod of `namespace` reports (`status.podIP`): 127.0.0.1 unless
/// its namespace asked for [`routable_pod_ips`].
fn pod_ip(namespace: &str) -> String {
    if lock(&ROUTABLE).contains(namespace) {
        if let Some(ip) = host_ipv4() {
            return ip;
        }
    }
    LOCALHOST.to_owned()
}

/// Makes the pods of `namespace` report the machine's first non-loopback
/// IPv4 as their IP (they still share the host's network), so that
/// Endpoints accept them (127.0.0.0/8 is refused) and the API server's
/// service proxy reaches their ports. Call before its pods start. Returns
/// the address, or `None` when the machine has none (pods keep 127.0.0.1).
pub fn routable_pod_ips(namespace: &str) -> Option<String> {
    let ip = host_ipv4()?;
    lock(&ROUTABLE).insert(namespace.to_owned());
    Some(ip)
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
/// recording in the test database; pods reach the console at `console_url`.
pub fn kube_cluster(
    client: &Client,
    db: &super::TestDb,
    console_url: Option<String>,
) -> server::kubernetes::KubeCluster {
    server::kubernetes::KubeCluster::start(
        client.clone(),
        "test-kube".into(),
        server::storage::jobs::JobStore::new(db.pool.clone()),
        db.dir(),
        Duration::from_secs(1),
        console_url,
    )
}

/// `--cluster kube` on the cluster of `client` (named "test-kube"), serving
/// pods mounting their model at `serving_model_root` if given.
pub fn kube_choice(
    client: &Client,
    serving_model_root: Option<String>,
) -> server::console::ClusterChoice {
    server::console::ClusterChoice::Kube {
        access: server::kubernetes::KubeAccess::Client {
            client: client.clone(),
            name: "test-kube".into(),
        },
        serving_model_root,
        notebook_pods: Default::default(),
    }
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
    pub async fn start(client: kube::Client, work: &std::path::Path) -> TestKubelet {
        let node = NODE;
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
}

/// The kubelets running in this process, by node name.
static NODES: LazyLock<Mutex<HashMap<String, Weak<Shared>>>> = LazyLock::new(Default::default);

/// What a process needs of a kubelet running on its own thread.
struct Shared {
    node: String,
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
