//! Resource charts of jobs on Kubernetes without Prometheus: the console
//! samples the cluster's metrics API (`metrics.k8s.io`), here served through
//! the real API server's aggregation by a stand-in for metrics-server that
//! reads the real node's kubelet Summary API (see common/metrics_server.rs).
//! Without the API the charts say what to install; with it, a busy trainer
//! in a container that holds 200 MB shows both. Skipped without the node.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use app::models::{JobRole, JobSpec, JobStatus, MetricsSource, ReplicaResources, ResourceMetric};
use app::ports::{Cluster, ResourceCharts};
use server::resources::{ResourceStore, SqlResourceCharts};

const MIB: f64 = 1024.0 * 1024.0;

/// A trainer that touches every page of 200 MiB, then spins.
const TRAINER: &str = "b = bytearray(200 * 1024 * 1024)\n\
for i in range(0, len(b), 4096):\n    b[i] = 1\n\
while True:\n    pass\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_charts_come_from_the_clusters_metrics_api_and_say_what_to_install_without_it_on_a_real_node(
) {
    let Some((_, client)) = common::node::client().await else {
        return;
    };
    let db = common::sqlite().await;
    let cluster = common::kubernetes::kube_cluster(&client, &db, None);
    let store = Arc::new(ResourceStore::new(db.pool.clone()));
    let lease = server::storage::lease::Lease::new(
        db.pool.clone(),
        "metrics-api-sampling",
        &server::storage::lease::holder_id(),
        Duration::from_secs(3),
    );
    let (api, _task) = cluster.sample_metrics_api(store.clone(), Duration::from_secs(1), lease);
    let resources = SqlResourceCharts::new(
        db.pool.clone(),
        store,
        1,
        None,
        Some(api.clone()),
        app::models::LimitEnforcement::Cluster,
    );
    let ns = format!("pc-m-{:08x}", getrandom::u32().unwrap());
    let account = common::account(&db.pool, &ns, &ns).await;
    let me = common::user_in(&db.pool, &account).await;
    let spec = JobSpec {
        priority: Default::default(),
        max_runtime: None,
        secrets: vec![],
        notebook: None,
        template: None,
        pipeline: None,
        experiment: None,
        notebook_run: None,
        scoring: None,
        environment: None,
        environment_use: None,
        name: "spin".into(),
        image: "paddlepaddle/paddle:3.3.1".into(),
        command: vec!["python3".into(), "-c".into(), TRAINER.into()],
        args: vec![],
        working_dir: String::new(),
        env: vec![],
        num_ps: 0,
        num_trainers: 1,
        ps: ReplicaResources {
            cpu: "250m".into(),
            memory: "256Mi".into(),
            gpu: 0,
        },
        trainer: ReplicaResources {
            cpu: "1".into(),
            memory: "1Gi".into(),
            gpu: 0,
        },
        datasets: vec![],
        models: vec![],
    };
    cluster.submit(&me, spec).await.unwrap();
    let start = Instant::now();
    while cluster.job(&account, "spin").await.unwrap().status != JobStatus::Running {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the job never ran"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // No metrics API yet: the charts say so, and what would fix it.
    let start = Instant::now();
    loop {
        let got = resources
            .job_resources(&account, "spin", None, None)
            .await
            .unwrap();
        match got.source {
            MetricsSource::None { why } if why.contains("does not serve metrics.k8s.io") => {
                assert!(why.contains("install metrics-server"), "{why}");
                assert!(got.charts.is_empty());
                break;
            }
            other => assert!(
                start.elapsed() < Duration::from_secs(20),
                "expected no metrics source, got {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // With it: CPU and memory of the trainer, measured.
    let server = common::metrics_server::MetricsServer::start(client.clone()).await;
    server.register().await;
    let start = Instant::now();
    let got = loop {
        let got = resources
            .job_resources(&account, "spin", None, None)
            .await
            .unwrap();
        let memory = got
            .charts
            .iter()
            .find(|c| c.metric == ResourceMetric::Memory)
            .and_then(|c| c.series.first())
            .and_then(|s| s.values.last().copied())
            .unwrap_or(0.0);
        if memory >= 190.0 * MIB {
            break got;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no memory of 200 MiB charted: {:?}",
            got.charts
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(got.source, MetricsSource::MetricsApi { every_secs: 1 });
    let charted: Vec<(ResourceMetric, JobRole)> =
        got.charts.iter().map(|c| (c.metric, c.role)).collect();
    assert_eq!(
        charted,
        vec![
            (ResourceMetric::Cpu, JobRole::Trainer),
            (ResourceMetric::Memory, JobRole::Trainer)
        ],
        "CPU and memory only, of the trainer"
    );
    let cpu = &got.charts[0];
    assert_eq!(cpu.requested, Some(1.0));
    assert_eq!(cpu.series.len(), 1);
    assert_eq!(cpu.series[0].pod, "trainer-0");
    let spin = cpu.series[0].values.iter().copied().fold(0.0, f64::max);
    // A busy loop: clearly busy (limited to one of the node's two cores).
    assert!(
        (0.25..=1.4).contains(&spin),
        "busy: {:?}",
        cpu.series[0].values
    );
    assert!(api.serving());

    cluster.stop(&account, "spin").await.unwrap();
    server.unregister().await;
}
