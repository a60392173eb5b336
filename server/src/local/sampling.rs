//! The loop that samples a running job's replicas every few seconds and
//! stores what they used, for the job's resource charts.

use std::sync::Arc;
use std::time::Duration;

use app::models::PodSample;

use super::sampler::{snapshot, TreeSampler};
use crate::storage::samples::{now_s, ResourceStore};

/// Samples `pods` (name, process group leader, the GPUs it holds) of job
/// `job_id` every `every` until aborted, then keeps nothing open: the
/// caller flushes.
pub async fn sample_pods(
    store: Arc<ResourceStore>,
    job_id: i64,
    pods: Vec<(String, i32, Vec<u32>)>,
    every: Duration,
) {
    let mut samplers: Vec<(String, i32, TreeSampler)> = pods
        .into_iter()
        .map(|(pod, pid, gpus)| (pod, pid, TreeSampler::with_devices(pid, gpus)))
        .collect();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first sample only primes the counters: its rates are not real.
    let mut primed = false;
    loop {
        tick.tick().await;
        let taken = tokio::task::spawn_blocking(move || {
            let procs = snapshot();
            let t = now_s();
            let samples: Vec<PodSample> = samplers
                .iter_mut()
                // A replica whose leader is gone has ended; its group is
                // killed with it.
                .filter(|(_, pid, _)| std::path::Path::new(&format!("/proc/{pid}")).exists())
                .map(|(pod, _, sampler)| PodSample {
                    pod: pod.clone(),
                    t,
                    usage: sampler.sample(&procs),
                })
                .collect();
            (samplers, samples)
        })
        .await;
        let Ok((back, samples)) = taken else {
            tracing::warn!(job_id, "sampling a job's replicas failed");
            return;
        };
        samplers = back;
        if primed && !samples.is_empty() {
            if let Err(err) = store.insert(job_id, &samples).await {
                tracing::warn!(job_id, error = %err, "storing resource samples");
            }
        }
        primed = true;
    }
}
