//! Counting requests where every one passes: the console's endpoint times
//! each forwarded request into the bucket of the moment, and a task writes
//! each bucket once its time is over. Percentiles are exact within a bucket
//! (its latencies are kept until it is written). Each call counts twice:
//! for the instance (what its callers saw) and for the version that
//! answered it; a shadow's copies count only for their version.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::models::{TrafficPoint, TRAFFIC_BUCKET_SECS};

use crate::storage::serving::ServingStore;
use crate::time::now_s;

/// One instance's open bucket.
#[derive(Default)]
struct Bucket {
    start: f64,
    latencies_ms: Vec<f32>,
    errors: u64,
}

/// What a bucket counts: an instance's calls (version 0), or one version's
/// (its shadow copies apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    /// The instance.
    pub id: i64,
    /// The version, or 0 for the whole instance.
    pub version: u32,
    /// Whether shadow copies.
    pub shadow: bool,
}

/// The open buckets of every instance this console forwards for.
#[derive(Default)]
pub struct Traffic {
    open: Mutex<HashMap<Key, Bucket>>,
    /// Buckets whose time is over, waiting to be written.
    done: Mutex<Vec<(Key, TrafficPoint)>>,
}

fn bucket_start(t: f64) -> f64 {
    (t / TRAFFIC_BUCKET_SECS).floor() * TRAFFIC_BUCKET_SECS
}

/// The `q`-quantile of sorted values (nearest rank).
fn quantile(sorted: &[f32], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    f64::from(sorted[rank - 1])
}

fn close(bucket: &mut Bucket) -> TrafficPoint {
    let mut l = std::mem::take(&mut bucket.latencies_ms);
    l.sort_by(f32::total_cmp);
    TrafficPoint {
        t: bucket.start,
        secs: TRAFFIC_BUCKET_SECS,
        requests: l.len() as u64,
        errors: bucket.errors,
        p50_ms: quantile(&l, 0.50),
        p90_ms: quantile(&l, 0.90),
        p99_ms: quantile(&l, 0.99),
    }
}

impl Traffic {
    /// Counts one answered request of instance `id`, answered by `version`
    /// (0: no version answered), or a copy sent to its shadow.
    pub fn record(&self, id: i64, version: u32, shadow: bool, latency: Duration, error: bool) {
        let start = bucket_start(now_s());
        let mut open = self.open.lock().expect("traffic lock");
        let mut keys = vec![Key {
            id,
            version,
            shadow,
        }];
        if !shadow && version != 0 {
            keys.push(Key {
                id,
                version: 0,
                shadow: false,
            });
        }
        for key in keys {
            let bucket = open.entry(key).or_default();
            if bucket.start != start {
                if !bucket.latencies_ms.is_empty() {
                    let point = close(bucket);
                    self.done.lock().expect("traffic lock").push((key, point));
                }
                bucket.start = start;
                bucket.errors = 0;
            }
            bucket.latencies_ms.push(latency.as_secs_f32() * 1000.0);
            bucket.errors += u64::from(error);
        }
    }

    /// Closes the buckets whose time is over (all of them with `all`) and
    /// hands back what is to be written.
    pub fn take_finished(&self, all: bool) -> Vec<(Key, TrafficPoint)> {
        let current = bucket_start(now_s());
        let mut out = std::mem::take(&mut *self.done.lock().expect("traffic lock"));
        let mut open = self.open.lock().expect("traffic lock");
        open.retain(|id, bucket| {
            if all || bucket.start < current {
                if !bucket.latencies_ms.is_empty() {
                    out.push((*id, close(bucket)));
                }
                false
            } else {
                true
            }
        });
        out
    }

    /// Writes finished buckets every bucket length and prunes what is older
    /// than `keep` every ten minutes, for as long as the console runs.
    pub fn spawn_writer(self: &Arc<Self>, store: ServingStore, keep: Duration) {
        let traffic = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs_f64(TRAFFIC_BUCKET_SECS));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut last_prune = now_s();
            loop {
                tick.tick().await;
                let rows = traffic.take_finished(false);
                if let Err(err) = write(&store, rows).await {
                    tracing::warn!(error = %err, "writing serving traffic");
                }
                if now_s() - last_prune > 600.0 {
                    last_prune = now_s();
                    if let Err(err) = store.prune_traffic(last_prune - keep.as_secs_f64()).await {
                        tracing::warn!(error = %err, "pruning serving traffic");
                    }
                }
            }
        });
    }
}

/// Writes finished buckets: the instances' and the versions'.
pub async fn write(
    store: &ServingStore,
    rows: Vec<(Key, TrafficPoint)>,
) -> Result<(), app::error::AppError> {
    let (instances, versions): (Vec<_>, Vec<_>) =
        rows.into_iter().partition(|(k, _)| k.version == 0);
    let instances: Vec<(i64, TrafficPoint)> =
        instances.into_iter().map(|(k, p)| (k.id, p)).collect();
    let versions: Vec<_> = versions
        .into_iter()
        .map(|(k, p)| (k.id, k.version, k.shadow, p))
        .collect();
    if !instances.is_empty() {
        store.add_traffic(&instances).await?;
    }
    if !versions.is_empty() {
        store.add_version_traffic(&versions).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_gives_exact_nearest_rank_percentiles_and_counts_errors() {
        let traffic = Traffic::default();
        for ms in 1..=100 {
            traffic.record(7, 3, false, Duration::from_millis(ms), ms % 10 == 0);
        }
        let rows: Vec<_> = traffic
            .take_finished(true)
            .into_iter()
            .filter(|(k, _)| k.version == 0)
            .collect();
        // The records may straddle a bucket boundary: add the buckets up.
        let requests: u64 = rows.iter().map(|(_, p)| p.requests).sum();
        let errors: u64 = rows.iter().map(|(_, p)| p.errors).sum();
        assert_eq!((requests, errors), (100, 10));
        if rows.len() == 1 {
            let p = rows[0].1;
            assert_eq!((p.p50_ms, p.p90_ms, p.p99_ms), (50.0, 90.0, 99.0));
        }
        assert!(traffic.take_finished(true).is_empty());
    }
}

#[cfg(test)]
mod by_version {
    use super::*;

    #[test]
    fn a_call_counts_for_its_instance_and_its_version_and_a_shadow_copy_for_its_version_only() {
        let traffic = Traffic::default();
        traffic.record(7, 3, false, Duration::from_millis(5), false);
        traffic.record(7, 4, false, Duration::from_millis(5), true);
        traffic.record(7, 5, true, Duration::from_millis(5), false);
        let rows = traffic.take_finished(true);
        let count = |version, shadow| {
            rows.iter()
                .filter(|(k, _)| k.version == version && k.shadow == shadow)
                .map(|(_, p)| p.requests)
                .sum::<u64>()
        };
        assert_eq!(count(0, false), 2, "the instance: both answered calls");
        assert_eq!((count(3, false), count(4, false)), (1, 1));
        assert_eq!(count(5, true), 1);
        assert_eq!(count(5, false), 0);
    }
}
