//! Job resource charts: [`app::ports::ResourceCharts`] on the samples the local
//! executor writes (`store`), or on Prometheus for jobs on Kubernetes.

use std::sync::Arc;
use std::time::Duration;

use crate::storage::db::Pool;
use app::error::AppError;
use app::models::{
    Account, JobResources, JobRole, LimitEnforcement, MetricsSource, ResourceChart, ResourceMetric,
    RESOURCE_CHART_POINTS,
};
use app::ports::ResourceCharts;
use async_trait::async_trait;

use crate::kubernetes::metrics_api::MetricsApi;
use crate::kubernetes::objects::replica_job_name;
use crate::kubernetes::prometheus::Prometheus;
use crate::local::LOCAL;
use crate::storage::jobs::JobStore;
pub use crate::storage::samples::ResourceStore;

/// Seconds between samples of local replicas, unless configured.
pub const DEFAULT_SAMPLE_SECS: u32 = 5;
/// Days samples are kept, unless configured.
pub const DEFAULT_KEEP_DAYS: u32 = 30;

/// Where the local executor's sampler writes and the charts read.
pub struct SqlResourceCharts {
    jobs: JobStore,
    store: Arc<ResourceStore>,
    sample_secs: u32,
    prometheus: Option<Prometheus>,
    /// The cluster's metrics API, sampled into `store` when there is no
    /// Prometheus.
    metrics_api: Option<Arc<MetricsApi>>,
    /// How the local executor holds replicas to their limits.
    local_limits: LimitEnforcement,
}

impl SqlResourceCharts {
    /// Charts from `store` (sampled every `sample_secs`); jobs not run
    /// locally are charted from `prometheus` when there is one, else from
    /// the samples of the cluster's `metrics_api` when there is that.
    pub fn new(
        pool: Pool,
        store: Arc<ResourceStore>,
        sample_secs: u32,
        prometheus: Option<Prometheus>,
        metrics_api: Option<Arc<MetricsApi>>,
        local_limits: LimitEnforcement,
    ) -> Self {
        Self {
            jobs: JobStore::new(pool),
            store,
            sample_secs,
            prometheus,
            metrics_api,
            local_limits,
        }
    }

    /// Prunes old samples now and then, forever.
    pub async fn prune_forever(store: Arc<ResourceStore>, keep_days: u32) {
        let keep = f64::from(keep_days) * 86_400.0;
        let mut every = tokio::time::interval(Duration::from_secs(600));
        loop {
            every.tick().await;
            match store.prune(keep).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(rows = n, "pruned old resource samples"),
                Err(err) => tracing::warn!(error = %err, "pruning resource samples"),
            }
        }
    }
}

/// What one replica of `role` requested, in `metric`'s unit.
fn requested(spec: &app::models::JobSpec, role: JobRole, metric: ResourceMetric) -> Option<f64> {
    let (resources, name) = match role {
        JobRole::Pserver => (&spec.ps, "ps"),
        JobRole::Trainer => (&spec.trainer, "trainer"),
    };
    let totals = resources.totals(name).ok()?;
    match metric {
        ResourceMetric::Cpu => Some(totals.cpu_millis as f64 / 1000.0),
        ResourceMetric::Memory => Some(totals.memory_bytes as f64),
        _ => None,
    }
}

#[async_trait]
impl ResourceCharts for SqlResourceCharts {
    async fn job_resources(
        &self,
        account: &Account,
        job: &str,
        from: Option<f64>,
        to: Option<f64>,
    ) -> Result<JobResources, AppError> {
        let stored = self.jobs.get(account.id, job).await?;
        let j = &stored.job;
        let now = crate::storage::samples::now_s();
        let start = j.started_at.unwrap_or(j.created_at) as f64 / 1000.0;
        let end = j.finished_at.map_or(now, |t| t as f64 / 1000.0);
        let to = to.unwrap_or(end).min(now);
        let from = from.unwrap_or(start).min(to - 1.0);
        let pods = self.jobs.pods(stored.id).await?;
        let source = if j.cluster == LOCAL {
            MetricsSource::Sampler {
                every_secs: self.sample_secs,
            }
        } else if self.prometheus.is_some() {
            MetricsSource::Prometheus {
                url: self
                    .prometheus
                    .as_ref()
                    .map(|p| p.url().to_owned())
                    .unwrap_or_default(),
            }
        } else if let Some(api) = &self.metrics_api {
            // Samples stored while the API answered still chart if it has gone.
            let stored = || async {
                self.store
                    .series(stored.id, ResourceMetric::Cpu, from, to, 1)
                    .await
                    .map(|s| !s.is_empty())
            };
            match api.why_not() {
                Some(why) if !stored().await? => MetricsSource::None { why },
                _ => MetricsSource::MetricsApi {
                    every_secs: self.sample_secs,
                },
            }
        } else {
            MetricsSource::None {
                why: "No metrics source: start the console with --prometheus-url to chart jobs on Kubernetes.".into(),
            }
        };
        let mut charts = Vec::new();
        if !matches!(source, MetricsSource::None { .. }) {
            for metric in ResourceMetric::ALL
                .into_iter()
                .filter(|m| source.measures(*m))
            {
                let series = match &self.prometheus {
                    Some(p) if j.cluster != LOCAL => {
                        let names: Vec<String> = pods
                            .iter()
                            .map(|p| replica_job_name(job, &p.name))
                            .collect();
                        p.pod_series(
                            &account.namespace,
                            &names,
                            metric,
                            from,
                            to,
                            RESOURCE_CHART_POINTS,
                        )
                        .await
                        .map_err(|err| AppError::Unavailable {
                            message: format!("Prometheus: {err}"),
                        })?
                        .into_iter()
                        .map(|mut s| {
                            // Back to the console's replica names.
                            if let Some(p) = pods.iter().find(|p| {
                                s.pod
                                    .starts_with(&format!("{}-", replica_job_name(job, &p.name)))
                            }) {
                                s.pod = p.name.clone();
                            }
                            s
                        })
                        .collect()
                    }
                    _ => {
                        self.store
                            .series(stored.id, metric, from, to, RESOURCE_CHART_POINTS)
                            .await?
                    }
                };
                for role in [JobRole::Pserver, JobRole::Trainer] {
                    let mine: Vec<_> = series
                        .iter()
                        .filter(|s| pods.iter().any(|p| p.name == s.pod && p.role == role))
                        .cloned()
                        .collect();
                    if pods.iter().any(|p| p.role == role) {
                        charts.push(ResourceChart {
                            metric,
                            role,
                            requested: requested(&j.spec, role, metric),
                            series: mine,
                        });
                    }
                }
            }
        }
        Ok(JobResources {
            job: j.name.clone(),
            live: j.status.is_active(),
            source,
            from,
            to,
            charts,
            limits: if j.cluster == LOCAL {
                self.local_limits
            } else {
                LimitEnforcement::Cluster
            },
        })
    }
}
