//! Resource use of jobs on Kubernetes from the cluster's metrics API
//! (`metrics.k8s.io`, as metrics-server serves it), for a console started
//! without `--prometheus-url`: every few seconds the PodMetrics of each
//! namespace with running jobs become samples in the console's database,
//! charted (and kept, and pruned) as the local executor's are. The API
//! gives CPU and memory only, and only while a pod runs.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use app::models::{PodSample, PodUsage};
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::Api;

use super::objects::{label, CONSOLE, JOB_ID, MANAGED_BY, REPLICA};
use super::Inner;
use crate::storage::samples::ResourceStore;

/// The API's group and version.
pub const METRICS_API: &str = "metrics.k8s.io/v1beta1";
/// How often the API is looked for while no job runs.
const PROBE_EVERY: Duration = Duration::from_secs(60);

/// Whether the cluster serves the metrics API, as last seen.
#[derive(Default)]
pub struct MetricsApi {
    seen: Mutex<Seen>,
}

#[derive(Default, Clone, PartialEq, Debug)]
enum Seen {
    /// Not asked yet.
    #[default]
    Unknown,
    /// It answered.
    Serving,
    /// It is not there (or not answering), in the API server's words.
    Missing(String),
}

impl MetricsApi {
    /// Whether the last look found it serving.
    pub fn serving(&self) -> bool {
        *self.seen.lock().expect("metrics api lock") == Seen::Serving
    }

    /// Why there are no samples, in a user's words, when it is not serving.
    pub fn why_not(&self) -> Option<String> {
        match &*self.seen.lock().expect("metrics api lock") {
            Seen::Serving => None,
            Seen::Unknown => Some(
                "No metrics yet: the console has not reached the cluster's metrics API \
                 (metrics.k8s.io) so far."
                    .to_owned(),
            ),
            Seen::Missing(why) => Some(format!(
                "No metrics source: the cluster does not serve metrics.k8s.io ({why}); install \
                 metrics-server, or start the console with --prometheus-url."
            )),
        }
    }

    fn set(&self, seen: Seen) {
        let mut now = self.seen.lock().expect("metrics api lock");
        if *now != seen {
            match &seen {
                Seen::Serving => tracing::info!("the cluster's metrics API answers: sampling jobs"),
                Seen::Missing(why) => {
                    tracing::warn!(why = %why, "the cluster's metrics API (metrics.k8s.io) is not there")
                }
                Seen::Unknown => {}
            }
            *now = seen;
        }
    }
}

/// PodMetrics, as kube-rs addresses them.
fn pod_metrics() -> ApiResource {
    ApiResource {
        group: "metrics.k8s.io".into(),
        version: "v1beta1".into(),
        api_version: METRICS_API.into(),
        kind: "PodMetrics".into(),
        plural: "pods".into(),
    }
}

/// A quantity as a plain number: `250m`, `12345678n`, `1.5`, `1024Ki`, `2G`.
pub fn quantity(raw: &str) -> Option<f64> {
    const SUFFIXES: &[(&str, f64)] = &[
        ("Ki", 1024.0),
        ("Mi", 1024.0 * 1024.0),
        ("Gi", 1024.0 * 1024.0 * 1024.0),
        ("Ti", 1024.0 * 1024.0 * 1024.0 * 1024.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ];
    let raw = raw.trim();
    let (number, scale) = SUFFIXES
        .iter()
        .find_map(|(suffix, scale)| raw.strip_suffix(suffix).map(|n| (n, *scale)))
        .unwrap_or((raw, 1.0));
    // Finite after scaling too: `1e300T` would be infinite.
    let value = number.parse::<f64>().ok()? * scale;
    value.is_finite().then_some(value)
}

/// One PodMetrics item as a sample of a console job's replica: the job's
/// id, and the replica's usage at the API's timestamp.
fn sample_of(item: &DynamicObject) -> Option<(i64, PodSample)> {
    let labels: &Option<BTreeMap<String, String>> = &item.metadata.labels;
    let job_id: i64 = label(labels, JOB_ID)?.parse().ok()?;
    let replica = label(labels, REPLICA)?.to_owned();
    let stamp: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time =
        serde_json::from_value(item.data.get("timestamp")?.clone()).ok()?;
    let mut usage = PodUsage::default();
    for c in item.data.get("containers")?.as_array()? {
        let of = |what: &str| c["usage"][what].as_str().and_then(quantity);
        usage.cpu += of("cpu").unwrap_or(0.0);
        usage.memory += of("memory").unwrap_or(0.0);
    }
    Some((
        job_id,
        PodSample {
            pod: replica,
            t: stamp.0.as_millisecond() as f64 / 1000.0,
            usage,
        },
    ))
}

/// What a failed call says about the API: a 404 or 503 is the API not
/// being there (no APIService, or its server down); anything else is an
/// error of this call.
fn missing(err: &kube::Error) -> Option<String> {
    match err {
        kube::Error::Api(status) if status.code == 404 || status.code == 503 => {
            Some(format!("{} {}", status.code, status.message.trim()))
        }
        _ => None,
    }
}

/// Samples the running jobs' pods every `every` into `store` until the
/// cluster goes; `api` tells the charts whether the API is there.
pub(super) async fn sample(
    inner: Weak<Inner>,
    store: Arc<ResourceStore>,
    every: Duration,
    api: Arc<MetricsApi>,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The API's timestamp of each replica's last stored sample: metrics-server
    // refreshes less often than this polls, and a repeat is not a new sample.
    let mut last: HashMap<(i64, String), f64> = HashMap::new();
    let mut probed: Option<std::time::Instant> = None;
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let jobs = match inner.store.active_by_namespace(&inner.name).await {
            Ok(jobs) => jobs,
            Err(err) => {
                tracing::warn!(error = %err, "listing jobs to sample");
                continue;
            }
        };
        if jobs.is_empty() {
            // Nothing to sample: look for the API now and then, so the
            // charts can say whether it is there.
            if probed.is_none_or(|at| at.elapsed() >= PROBE_EVERY) {
                probed = Some(std::time::Instant::now());
                match inner.client.list_api_group_resources(METRICS_API).await {
                    Ok(_) => api.set(Seen::Serving),
                    Err(err) => {
                        if let Some(why) = missing(&err) {
                            api.set(Seen::Missing(why));
                        }
                    }
                }
            }
            last.clear();
            continue;
        }
        let selector = format!("{MANAGED_BY}={CONSOLE},{JOB_ID}");
        let mut samples: HashMap<i64, Vec<PodSample>> = HashMap::new();
        for (ns, ids) in &jobs {
            let pods: Api<DynamicObject> =
                Api::namespaced_with(inner.client.clone(), ns, &pod_metrics());
            let listed = match pods.list(&ListParams::default().labels(&selector)).await {
                Ok(listed) => listed,
                Err(err) => {
                    match missing(&err) {
                        Some(why) => api.set(Seen::Missing(why)),
                        None => {
                            tracing::debug!(namespace = %ns, error = %err, "reading pod metrics")
                        }
                    }
                    continue;
                }
            };
            api.set(Seen::Serving);
            for (job_id, sample) in listed.items.iter().filter_map(sample_of) {
                // Another console's job may share the namespace and the id.
                if !ids.contains(&job_id) {
                    continue;
                }
                let key = (job_id, sample.pod.clone());
                if last.get(&key).is_some_and(|t| *t >= sample.t) {
                    continue;
                }
                last.insert(key, sample.t);
                samples.entry(job_id).or_default().push(sample);
            }
        }
        for (job_id, rows) in samples {
            if let Err(err) = store.insert(job_id, &rows).await {
                tracing::warn!(job_id, error = %err, "storing resource samples");
            }
        }
        last.retain(|(job_id, _), _| jobs.values().any(|ids| ids.contains(job_id)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_the_metrics_api_writes_them() {
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-9 * b.max(1.0);
        assert!(close(quantity("1234567890n"), 1.23456789));
        assert!(close(quantity("250m"), 0.25));
        assert!(close(quantity("2"), 2.0));
        assert!(close(quantity("1500u"), 0.0015));
        assert!(close(quantity("204800Ki"), 200.0 * 1024.0 * 1024.0));
        assert!(close(quantity("1Gi"), 1024.0 * 1024.0 * 1024.0));
        assert!(close(quantity("2M"), 2e6));
        assert_eq!(quantity("lots"), None);
        assert_eq!(quantity(""), None);
        assert_eq!(quantity("1e300T"), None, "finite once scaled");
    }

    #[test]
    fn a_pod_metrics_item_becomes_a_sample_of_its_replica() {
        let item: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": METRICS_API,
            "kind": "PodMetrics",
            "metadata": {
                "name": "demo-trainer-0-x7k2p",
                "namespace": "pc-acme",
                "labels": { JOB_ID: "42", REPLICA: "demo-trainer-0", MANAGED_BY: CONSOLE },
            },
            "timestamp": "2026-11-23T21:00:05Z",
            "window": "10s",
            "containers": [
                { "name": "paddle", "usage": { "cpu": "950000000n", "memory": "204800Ki" } },
                { "name": "sidecar", "usage": { "cpu": "50m", "memory": "1Mi" } },
            ],
        }))
        .unwrap();
        let (job_id, sample) = sample_of(&item).unwrap();
        assert_eq!(job_id, 42);
        assert_eq!(sample.pod, "demo-trainer-0");
        assert_eq!(sample.t, 1_795_467_605.0);
        assert!((sample.usage.cpu - 1.0).abs() < 1e-9);
        assert_eq!(sample.usage.memory, 201.0 * 1024.0 * 1024.0);
        assert_eq!(sample.usage.gpu_util, None);
    }

    #[test]
    fn a_pod_not_of_a_console_job_is_no_sample() {
        let item: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": METRICS_API,
            "kind": "PodMetrics",
            "metadata": { "name": "coredns-1", "namespace": "kube-system" },
            "timestamp": "2026-11-23T21:00:05Z",
            "window": "10s",
            "containers": [],
        }))
        .unwrap();
        assert!(sample_of(&item).is_none());
    }
}
