//! The real node of `scripts/kube-test-cluster.sh`: a kubelet with containerd and
//! runc, pod networking, kube-proxy and cluster DNS, on which the console's
//! pods run in containers from images built here. Tests named
//! `on_a_real_node` run there (`scripts/test.sh kube-node`). GPUs, which
//! this machine lacks, are stand-ins advertised on the Node's status
//! (`kube_backend.rs`); nothing else is pretended.

use std::time::{Duration, Instant};

use kube::Api;

/// What `scripts/kube-test-cluster.sh run` says about its node.
pub struct RealNode {
    /// The Node's name.
    pub name: String,
    /// A small image with a shell (busybox) for programs that are scripts.
    pub shell_image: String,
    /// The node's address, which pods reach (a console serving them binds it).
    pub ip: String,
}

/// The real node, or `None` (printing why) outside `scripts/kube-test-cluster.sh run`;
/// panics instead under `PADDLECLOUD_REQUIRE_KUBE_NODE=1`, so that the stage
/// that starts the node cannot pass by skipping.
pub fn real_node() -> Option<RealNode> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    // All four, or it is not the real node.
    let found = (|| {
        // The kubeconfig common::kubernetes::test_client reads.
        var("PADDLECLOUD_TEST_KUBECONFIG")?;
        Some(RealNode {
            name: var("PADDLECLOUD_TEST_KUBE_NODE")?,
            shell_image: var("PADDLECLOUD_TEST_NODE_IMAGE")?,
            ip: var("PADDLECLOUD_TEST_NODE_IP")?,
        })
    })();
    if found.is_none() {
        assert!(
            std::env::var("PADDLECLOUD_REQUIRE_KUBE_NODE").as_deref() != Ok("1"),
            "no real node (PADDLECLOUD_TEST_KUBE_NODE, PADDLECLOUD_TEST_NODE_IMAGE, \
             PADDLECLOUD_TEST_NODE_IP and PADDLECLOUD_TEST_KUBECONFIG) but its tests are required (PADDLECLOUD_REQUIRE_KUBE_NODE=1)"
        );
        eprintln!("skipping: no real node (run through scripts/kube-test-cluster.sh run ...)");
    }
    found
}

/// A kube client for the real node's cluster, if there is one.
pub async fn client() -> Option<(RealNode, kube::Client)> {
    let node = real_node()?;
    let client = super::kubernetes::test_client().await?;
    Some((node, client))
}

/// The host's processes whose command line is exactly `argv`: containers'
/// processes are the host's too, seen from outside their namespaces.
pub fn processes_running(argv: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want)
                && super::alive(*pid)
        })
        .collect()
}

/// Waits until no pod of an earlier test runs or is going on the node, so
/// that what a test measures is the start, not the wait (a pod whose image
/// could not be pulled took about 70 s to go after its deletion), and says
/// how long it waited for what.
pub async fn wait_until_free(client: &kube::Client, who: &str) {
    let everywhere: Api<k8s_openapi::api::core::v1::Pod> = Api::all(client.clone());
    let waiting = Instant::now();
    let mut seen = Vec::new();
    loop {
        let busy: Vec<String> = everywhere
            .list(&kube::api::ListParams::default())
            .await
            .unwrap()
            .into_iter()
            .filter(|p| {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                !matches!(phase, Some("Succeeded" | "Failed"))
            })
            .map(|p| {
                format!(
                    "{}/{}{}",
                    p.metadata.namespace.as_deref().unwrap_or(""),
                    p.metadata.name.as_deref().unwrap_or(""),
                    if p.metadata.deletion_timestamp.is_some() {
                        " (terminating)"
                    } else {
                        ""
                    },
                )
            })
            .collect();
        if busy.is_empty() {
            break;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(180),
            "the node stays busy: {busy:?}"
        );
        seen = busy;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    if !seen.is_empty() {
        eprintln!("{who}: waited {:?} for {seen:?} to go", waiting.elapsed());
    }
}

/// The allocatable CPU (millicores) and memory (bytes) of node `name`.
pub async fn allocatable(client: &kube::Client, name: &str) -> (u64, u64) {
    let node = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .get(name)
        .await
        .unwrap();
    let allocatable = node.status.and_then(|s| s.allocatable).unwrap();
    let cpu = app::models::quantity::parse_cpu_millis("cpu", &allocatable["cpu"].0).unwrap();
    let memory =
        app::models::quantity::parse_memory_bytes("memory", &allocatable["memory"].0).unwrap();
    (cpu, memory)
}

/// A package index with one wheel (`server/tests/fixtures/wheel_index.py`)
/// on the node's address, killed when dropped.
pub struct WheelIndex {
    child: std::process::Child,
    /// The index's URL, for `PIP_INDEX_URL`.
    pub url: String,
}

impl WheelIndex {
    /// Serves the wheel built into `dir` on `ip`.
    pub fn start(dir: &std::path::Path, ip: &str) -> Self {
        use std::io::BufRead;
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wheel_index.py");
        let mut child = std::process::Command::new("python3")
            .arg(script)
            .arg(dir)
            .arg(ip)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut url = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut url)
            .unwrap();
        Self {
            child,
            url: url.trim().to_owned(),
        }
    }
}

impl Drop for WheelIndex {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
