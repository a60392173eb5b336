//! The loop that samples a running job's replicas every few seconds and
//! stores what they used, for the job's resource charts.

use std::sync::Arc;
use std::time::Duration;

use app::models::PodSample;

use super::sampler::{snapshot, TreeSampler};
use crate::storage::samples::{now_s, ResourceStore};

/// How long after the priming read the first real sample is taken: long
/// enough for a CPU rate, short enough that a job of a second has one.
const FIRST_SAMPLE_AFTER: Duration = Duration::from_millis(250);
/// For this long after it starts a job is sampled at least every second, so
/// a short job has points on its charts and a long one a detailed start.
const EARLY: Duration = Duration::from_secs(60);

/// When the next sample is due, `elapsed` after the replicas started.
fn next_wait(elapsed: Duration, primed: bool, every: Duration) -> Duration {
    if !primed {
        FIRST_SAMPLE_AFTER
    } else if elapsed < EARLY {
        every.min(Duration::from_secs(1))
    } else {
        every
    }
}

/// Samples `pods` (name, process group leader, the GPUs it holds) of job
/// `job_id` at once, then every second for a minute, then every `every`,
/// until aborted; keeps nothing open: the caller flushes.
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
    let started = std::time::Instant::now();
    // The first read only primes the counters: its rates are not real.
    let mut primed = false;
    loop {
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
        tokio::time::sleep(next_wait(started.elapsed(), primed, every)).await;
        primed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_job_is_sampled_at_once_then_every_second_for_a_minute() {
        let every = Duration::from_secs(5);
        assert_eq!(next_wait(Duration::ZERO, false, every), FIRST_SAMPLE_AFTER);
        assert_eq!(
            next_wait(Duration::from_secs(3), true, every),
            Duration::from_secs(1)
        );
        assert_eq!(next_wait(Duration::from_secs(61), true, every), every);
        // A site sampling faster than once a second keeps its own pace.
        let fast = Duration::from_millis(500);
        assert_eq!(next_wait(Duration::from_secs(3), true, fast), fast);
    }
}
