//! The tests' Kubernetes cluster (the real node of
//! `scripts/kube-test-cluster.sh`, see `super::node`), named by
//! `PADDLECLOUD_TEST_KUBECONFIG`, and the console's backend on it.

use std::path::PathBuf;
use std::time::Duration;

use kube::Client;

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
        None,
        console_url,
        Default::default(),
        server::secrets::SqlSecrets::new(
            db.pool.clone(),
            std::sync::Arc::new(server::secrets::seal::Sealer::from_bytes(&[1; 32])),
        ),
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
        pod_support: Default::default(),
    }
}

/// [`kube_choice`], environments' init steps installing from the package
/// index at `index_url` (`--kube-pip-index-url`).
pub fn kube_choice_installing_from(
    client: &Client,
    index_url: &str,
) -> server::console::ClusterChoice {
    let mut cluster = kube_choice(client, None);
    if let server::console::ClusterChoice::Kube { pod_support, .. } = &mut cluster {
        pod_support.pip_index_url = Some(index_url.to_owned());
    }
    cluster
}

/// A kube client for the test cluster, or None when
/// `PADDLECLOUD_TEST_KUBECONFIG` is unset (`super::node::real_node` says
/// why, and fails where the node is required).
pub async fn test_client() -> Option<kube::Client> {
    let path = std::env::var_os("PADDLECLOUD_TEST_KUBECONFIG")?;
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
