//! The real node of `scripts/kube-node.sh`: a kubelet with containerd and
//! runc, pod networking, kube-proxy and cluster DNS, on which the console's
//! pods run in containers from images built here. Tests named
//! `on_a_real_node` run there (`scripts/test.sh kube-node`); the test kubelet
//! (`common::kubelet`) plays a node only for what this machine cannot do
//! (`nvidia.com/gpu`, the GPU sampler) and for suites not moved yet.

/// What `scripts/kube-node.sh run` says about its node.
pub struct RealNode {
    /// The Node's name.
    pub name: String,
    /// A small image with a shell (busybox) for programs that are scripts.
    pub shell_image: String,
    /// The node's address, which pods reach (a console serving them binds it).
    pub ip: String,
}

/// The real node, or `None` (printing why) outside `scripts/kube-node.sh run`;
/// panics instead under `PADDLECLOUD_REQUIRE_KUBE_NODE=1`, so that the stage
/// that starts the node cannot pass by skipping.
pub fn real_node() -> Option<RealNode> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    // All four, or it is not the real node.
    let found = (|| {
        // The kubeconfig common::kubelet::test_client reads.
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
        eprintln!("skipping: no real node (run through scripts/kube-node.sh run ...)");
    }
    found
}

/// A kube client for the real node's cluster, if there is one.
pub async fn client() -> Option<(RealNode, kube::Client)> {
    let node = real_node()?;
    let client = super::kubelet::test_client().await?;
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
