//! Counting requests where every one passes: the console's endpoint times
//! each forwarded request into the bucket of the moment, and a task writes
//! each bucket once its time is over. Percentiles are exact within a bucket
//! (its latencies are kept until it is written).

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

/// The open buckets of every instance this console forwards for.
#[derive(Default)]
pub struct Traffic {
    open: Mutex<HashMap<i64, Bucket>>,
    /// Buckets whose time is over, waiting to be written.
    done: Mutex<Vec<(i64, TrafficPoint)>>,
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
    /// Counts one answered request of instance `id`.
    pub fn record(&self, id: i64, latency: Duration, error: bool) {
        let now = now_s();
        let start = bucket_start(now);
        let mut open = self.open.lock().expect("traffic lock");
        let bucket = open.entry(id).or_default();
        if bucket.start != start {
            if !bucket.latencies_ms.is_empty() {
                let point = close(bucket);
                self.done.lock().expect("traffic lock").push((id, point));
            }
            bucket.start = start;
            bucket.errors = 0;
        }
        bucket.latencies_ms.push(latency.as_secs_f32() * 1000.0);
        bucket.errors += u64::from(error);
    }

    /// Closes the buckets whose time is over (all of them with `all`) and
    /// hands back what is to be written.
    pub fn take_finished(&self, all: bool) -> Vec<(i64, TrafficPoint)> {
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
                if !rows.is_empty() {
                    if let Err(err) = store.add_traffic(&rows).await {
                        tracing::warn!(error = %err, "writing serving traffic");
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_gives_exact_nearest_rank_percentiles_and_counts_errors() {
        let traffic = Traffic::default();
        for ms in 1..=100 {
            traffic.record(7, Duration::from_millis(ms), ms % 10 == 0);
        }
        let rows = traffic.take_finished(true);
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
