//! Autoscaling on the local executor, as Kubernetes' HorizontalPodAutoscaler
//! does it: every period, the replicas' CPU use (their whole process trees,
//! from /proc) against what each requested gives the utilisation, and
//! `ceil(replicas × utilisation / target)` within the bounds is the new
//! number of replicas. Within 10% of the target nothing changes. Like the
//! HPA, it scales up at once but down only to the most it recommended over
//! the last [`DOWNSCALE_WINDOW`], so a lull between bursts does not stop
//! replicas that the next burst needs again.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::time::{Duration, Instant};

use app::models::Autoscale;
use tokio::sync::watch;

use super::sampler::{snapshot, TreeSampler};

/// How often the replicas are measured and the size decided.
pub const PERIOD: Duration = Duration::from_secs(5);

/// How long a lower recommendation must last before replicas stop (the
/// HorizontalPodAutoscaler's default).
pub const DOWNSCALE_WINDOW: Duration = Duration::from_secs(300);

/// Recent recommendations, to scale down only as far as all of them allow.
pub struct Stabilizer {
    window: Duration,
    recent: VecDeque<(Instant, u32)>,
}

impl Stabilizer {
    /// Remembers recommendations for `window`.
    pub fn new(window: Duration) -> Self {
        Self {
            window,
            recent: VecDeque::new(),
        }
    }

    /// The replicas to run at `now` for `current` replicas when the
    /// measurement alone asks for `want`: more at once, fewer only as far as
    /// every recommendation within the window allows.
    pub fn next(&mut self, now: Instant, current: u32, want: u32) -> u32 {
        while self
            .recent
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > self.window)
        {
            self.recent.pop_front();
        }
        self.recent.push_back((now, want));
        if want >= current {
            return want;
        }
        let most = self.recent.iter().map(|(_, w)| *w).max().unwrap_or(want);
        most.min(current)
    }
}

/// The replicas to run for `current` replicas using `utilisation` (mean CPU
/// used / requested, 1.0 = all of it) under `bounds`.
pub fn desired(current: u32, utilisation: f64, bounds: Autoscale) -> u32 {
    let target = f64::from(bounds.cpu_percent) / 100.0;
    let ratio = utilisation / target;
    let want = if (ratio - 1.0).abs() <= 0.1 {
        current
    } else {
        (f64::from(current) * ratio).ceil() as u32
    };
    want.clamp(bounds.min, bounds.max)
}

/// The process group leaders of the running replicas: the files each
/// replica keeps in `pids` while its process runs.
fn leaders(pids: &Path) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir(pids) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|s| s.trim().parse().ok())
        .filter(|pid| *pid > 1)
        .collect()
}

/// Resizes the instance through `size` for as long as it runs (the caller
/// drops this future when it stops), while `bounds` says to autoscale.
pub async fn run(
    pids_dir: &Path,
    size: &watch::Sender<u32>,
    mut bounds: watch::Receiver<Option<Autoscale>>,
    cpu_request_cores: f64,
) {
    let mut samplers: BTreeMap<i32, TreeSampler> = BTreeMap::new();
    let mut stable = Stabilizer::new(DOWNSCALE_WINDOW);
    loop {
        tokio::time::sleep(PERIOD).await;
        let Some(b) = *bounds.borrow_and_update() else {
            samplers.clear();
            stable = Stabilizer::new(DOWNSCALE_WINDOW);
            continue;
        };
        let pids = leaders(pids_dir);
        samplers.retain(|pid, _| pids.contains(pid));
        let fresh: Vec<i32> = pids
            .iter()
            .copied()
            .filter(|p| !samplers.contains_key(p))
            .collect();
        let mut taken = std::mem::take(&mut samplers);
        let measured = tokio::task::spawn_blocking(move || {
            let procs = snapshot();
            for pid in fresh {
                // A new replica's first sample only primes its counters.
                let mut s = TreeSampler::new(pid);
                s.sample(&procs);
                taken.insert(pid, s);
            }
            let used: Vec<f64> = pids
                .iter()
                .filter_map(|pid| taken.get_mut(pid).map(|s| s.sample(&procs).cpu))
                .collect();
            (taken, used)
        })
        .await;
        let Ok((back, used)) = measured else { return };
        samplers = back;
        let current = *size.borrow();
        if used.is_empty() || cpu_request_cores <= 0.0 {
            continue;
        }
        let utilisation = used.iter().sum::<f64>() / used.len() as f64 / cpu_request_cores;
        // Within the bounds as they are now: recommendations from before a
        // lower maximum must not hold replicas above it.
        let want = stable
            .next(Instant::now(), current, desired(current, utilisation, b))
            .clamp(b.min, b.max);
        if want != current {
            tracing::info!(
                from = current,
                to = want,
                utilisation,
                "autoscaling a serving instance"
            );
            size.send_replace(want);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Autoscale = Autoscale {
        min: 1,
        max: 5,
        cpu_percent: 50,
    };

    #[test]
    fn replicas_follow_utilisation_against_the_target_within_the_bounds() {
        assert_eq!(desired(2, 1.0, B), 4);
        assert_eq!(desired(2, 0.52, B), 2, "within 10% of the target");
        assert_eq!(desired(4, 0.1, B), 1);
        assert_eq!(desired(3, 4.0, B), 5, "capped at the most");
        assert_eq!(desired(1, 0.0, B), 1, "never below the fewest");
    }

    #[test]
    fn replicas_are_added_at_once_but_stop_only_after_the_load_stayed_low_for_the_window() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut s = Stabilizer::new(Duration::from_secs(300));
        assert_eq!(s.next(at(0), 2, 4), 4, "up at once");
        // The burst is over: the measurement alone would go back to 1.
        assert_eq!(s.next(at(5), 4, 1), 4);
        assert_eq!(s.next(at(200), 4, 1), 4);
        assert_eq!(s.next(at(299), 4, 2), 4);
        // 300 s after the last time 4 was wanted, the most since is 2.
        assert_eq!(s.next(at(306), 4, 1), 2);
        assert_eq!(s.next(at(600), 2, 1), 1);
        // Never above what runs when only fewer are wanted.
        let mut s = Stabilizer::new(Duration::from_secs(300));
        assert_eq!(s.next(at(0), 5, 5), 5);
        assert_eq!(s.next(at(10), 3, 2), 3, "scaled by hand meanwhile");
    }
}
