//! What the chosen cluster runs jobs, serving and notebooks on: this
//! machine's processes, or Kubernetes with the local executor kept for
//! the jobs that ran here.

use std::sync::Arc;

use anyhow::Context;
use app::ports::Cluster;

use super::{Base, ClusterChoice, Config, Host, Stores};
use crate::backend::notebooks::NotebookBackend;
use crate::backend::quota::ClusterQuota;
use crate::backend::serving::ServingBackend;
use crate::clusters::Clusters;
use crate::kubernetes::metrics_api::MetricsApi;
use crate::kubernetes::notebooks::KubeNotebooks;
use crate::kubernetes::serving::KubeServing;
use crate::kubernetes::KubeCluster;
use crate::local::notebooks::LocalNotebooks;
use crate::local::serving::LocalServing;
use crate::local::workload_host::{ServerPython, WorkloadHost};
use crate::local::LocalCluster;
use crate::storage::jobs::JobStore;

/// What the chosen cluster runs jobs and serving on.
pub(super) struct Backends {
    /// Where jobs run.
    pub(super) cluster: Arc<dyn Cluster>,
    /// Where serving replicas run.
    pub(super) serving: Arc<dyn ServingBackend>,
    /// Where notebook servers run.
    pub(super) notebooks: Arc<dyn NotebookBackend>,
    /// A quota the cluster enforces itself, if it does.
    pub(super) quota: Option<Arc<dyn ClusterQuota>>,
    /// The cluster's metrics API, sampled for charts without Prometheus.
    pub(super) metrics_api: Option<Arc<MetricsApi>>,
}

impl Backends {
    /// The backends of `config.cluster`, around the `local` executor: its
    /// processes, or a Kubernetes cluster for new jobs while jobs that ran
    /// locally (before, or MLflow runs) stay controllable. Without
    /// Prometheus, jobs on Kubernetes are charted from the cluster's metrics
    /// API (metrics-server), sampled here.
    pub(super) async fn connect(
        base: &Base,
        config: &Config,
        stores: &Stores,
        host: &Host,
        local: LocalCluster,
        without_prometheus: bool,
    ) -> anyhow::Result<Self> {
        let ClusterChoice::Kube {
            access,
            serving_model_root,
            notebook_pods,
            pod_support,
        } = config.cluster.clone()
        else {
            return Ok(Self::local(base, config, host, local));
        };
        let (client, name) = access.client().await.context(
            "connecting to Kubernetes (KUBECONFIG, ~/.kube/config or the in-cluster \
             service account)",
        )?;
        let kube = KubeCluster::start(
            client,
            name,
            JobStore::new(base.pool.clone()),
            &config.data_dir,
            base.grace,
            config.preemption_grace,
            config.public_url.clone(),
            *pod_support,
            stores.secrets.clone(),
        );
        kube.build_tools_with(host.venvs.clone());
        tracing::info!(cluster = %kube.name(), "jobs run on Kubernetes");
        let metrics_api = without_prometheus.then(|| {
            let lease = base.lease("metrics-api-sampling");
            let (api, task) =
                kube.sample_metrics_api(stores.samples.clone(), base.sample_every, lease.clone());
            // Ended, and its lease given up, when the console stops (as the
            // loops `Base::guard` starts).
            base.loops.add(lease, task);
            api
        });
        let serving = KubeServing::new(&kube, serving_model_root);
        let python = config.notebook_python.clone();
        let notebooks = KubeNotebooks::new(
            &kube,
            *notebook_pods,
            python.unwrap_or_else(|| "python3".to_owned()),
        );
        let kube = Arc::new(kube);
        let clusters = Clusters::new(
            kube.clone(),
            vec![Arc::new(local)],
            JobStore::new(base.pool.clone()),
        );
        Ok(Self {
            cluster: Arc::new(clusters),
            serving: Arc::new(serving),
            notebooks: Arc::new(notebooks),
            quota: Some(kube),
            metrics_api,
        })
    }

    /// Processes on this machine.
    fn local(base: &Base, config: &Config, host: &Host, local: LocalCluster) -> Self {
        Self {
            cluster: Arc::new(local),
            serving: Arc::new(LocalServing::new(WorkloadHost::new(
                &config.data_dir,
                "serving",
                ServerPython::given_or_built(
                    config.serving_python.clone(),
                    "PaddlePaddle for the predict server",
                    crate::environments::paddle_cpu_requirements(),
                ),
                base.grace,
                base.inherited_env.clone(),
                host.machine.clone(),
                host.venvs.clone(),
            ))),
            notebooks: Arc::new(LocalNotebooks::new(WorkloadHost::new(
                &config.data_dir,
                "notebooks",
                ServerPython::given_or_built(
                    config.notebook_python.clone(),
                    "JupyterLab",
                    vec![crate::backend::notebooks::JUPYTERLAB.to_owned()],
                ),
                base.grace,
                base.inherited_env.clone(),
                host.machine.clone(),
                host.venvs.clone(),
            ))),
            quota: None,
            metrics_api: None,
        }
    }
}
