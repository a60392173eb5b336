//! Stalled jobs: a running job that wrote no log line, took no metric point
//! and used no CPU for a while is marked stalled (a badge in the table, a
//! banner on its page, a `stalled` notification) until any of the three
//! moves again. Idle GPUs: a running job holding GPUs that stayed under
//! [`IDLE_GPU_PERCENT`] for as long is marked too (`idle_gpus`), and the
//! site admin sees such jobs across accounts. The watcher gathers the
//! signals; the rules are here.

use serde::{Deserialize, Serialize};

use crate::models::time::format_utc_seconds;

/// A replica uses "no CPU" below this share of one core (2%): an idle
/// Python interpreter waiting on a lock or a socket stays well under it.
pub const IDLE_CPU_CORES: f64 = 0.02;

/// The minutes a job may show no sign of life before it is stalled, unless
/// the console says otherwise (`--stall-minutes`).
pub const DEFAULT_STALL_MINUTES: u32 = 30;

/// A GPU is idle below this utilisation, percent (what `nvidia-smi` and
/// DCGM report).
pub const IDLE_GPU_PERCENT: f64 = 5.0;

/// What a running job last did, each in Unix ms (`None`: never).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Activity {
    /// When its first replica started.
    pub started_at: Option<i64>,
    /// The newest line of any replica's log.
    pub log_at: Option<i64>,
    /// The newest metric point that arrived.
    pub metric_at: Option<i64>,
    /// The newest resource sample in which a replica used CPU.
    pub cpu_at: Option<i64>,
}

impl Activity {
    /// The newest sign of life, counting the start as one.
    pub fn last(&self) -> Option<i64> {
        [self.started_at, self.log_at, self.metric_at, self.cpu_at]
            .into_iter()
            .flatten()
            .max()
    }
}

/// What the watcher does about one running job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallVerdict {
    /// Quiet for `after` or longer and not yet marked: mark it, stalled
    /// since its last sign of life.
    Stall {
        /// Unix ms.
        since: i64,
    },
    /// Marked, and it moved since: clear the mark.
    Resume,
    /// Nothing changes.
    Same,
}

/// Judges a running job at `now` (ms) that has been quiet since
/// `activity.last()`, marked stalled since `marked` (if it is), with jobs
/// stalling after `after_ms` of quiet. A job that has not started is never
/// stalled (the queue explains it).
pub fn judge_stall(
    activity: &Activity,
    marked: Option<i64>,
    now: i64,
    after_ms: i64,
) -> StallVerdict {
    let Some(last) = activity.last() else {
        return StallVerdict::Same;
    };
    match marked {
        Some(since) if last > since => StallVerdict::Resume,
        Some(_) => StallVerdict::Same,
        None if now - last >= after_ms => StallVerdict::Stall { since: last },
        None => StallVerdict::Same,
    }
}

/// The GPUs a running job held over the watcher's window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GpuWindow {
    /// How many GPUs it holds (0: the rule does not apply).
    pub gpus: u32,
    /// Whether it has run for the whole window.
    pub held_long_enough: bool,
    /// How many samples of its GPUs' utilisation the window has (none:
    /// nothing can be said; a machine without `nvidia-smi` warns nobody).
    pub samples: i64,
    /// The highest utilisation any of them showed, percent.
    pub peak: Option<f64>,
}

/// Judges a running job's GPUs, marked idle since `marked` (if they are),
/// at `now`, the window being the watcher's `after`: idle when every
/// sample of a window it ran all of stayed under [`IDLE_GPU_PERCENT`];
/// busy again as soon as one did not.
pub fn judge_idle_gpus(
    w: &GpuWindow,
    marked: Option<i64>,
    now: i64,
    after_ms: i64,
) -> StallVerdict {
    if w.gpus == 0 || w.samples == 0 {
        return StallVerdict::Same;
    }
    let idle = w.held_long_enough && w.peak.is_none_or(|p| p < IDLE_GPU_PERCENT);
    match (idle, marked) {
        (true, None) => StallVerdict::Stall {
            since: now - after_ms,
        },
        (false, Some(_)) if w.peak.is_some_and(|p| p >= IDLE_GPU_PERCENT) => StallVerdict::Resume,
        _ => StallVerdict::Same,
    }
}

/// What a job with idle GPUs is told, and shows.
pub fn idle_gpus_message(gpus: u32, since: i64, now: i64) -> String {
    let minutes = (now - since).max(0) / 60_000;
    format!(
        "{gpus} GPU{} held under {IDLE_GPU_PERCENT}% utilisation since {} ({minutes} min).",
        if gpus == 1 { "" } else { "s" },
        format_utc_seconds(since)
    )
}

/// A job holding idle GPUs, as the site admin's list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct IdleGpuJob {
    /// Its account.
    pub account: String,
    /// Its name.
    pub job: String,
    /// Who submitted it.
    pub submitted_by: String,
    /// How many GPUs it holds.
    pub gpus: u32,
    /// Since when they have been idle, Unix ms.
    pub since: i64,
}

/// What a stalled job's banner and notification say.
pub fn stall_message(since: i64, now: i64) -> String {
    let minutes = (now - since).max(0) / 60_000;
    format!(
        "No log line, metric point or CPU use since {} ({minutes} min).",
        format_utc_seconds(since)
    )
}

/// One replica's stack dump (py-spy), or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct StackDump {
    /// The replica: `trainer-0`.
    pub pod: String,
    /// The dump as py-spy printed it (each thread's stack, innermost
    /// first); empty when it failed.
    pub text: String,
    /// Why there is no dump (not running, not Python, py-spy refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The line that opens a dump in a replica's log, so a reader of the log
/// console sees where it starts.
pub fn dump_banner(pod: &str, at: i64) -> String {
    format!(
        "===== stack dump of {pod} (py-spy) at {} =====",
        format_utc_seconds(at)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    fn quiet_since(t: i64) -> Activity {
        Activity {
            started_at: Some(0),
            log_at: Some(t),
            metric_at: None,
            cpu_at: Some(t - MIN),
        }
    }

    #[test]
    fn a_job_quiet_for_the_whole_window_stalls_since_its_last_sign_of_life() {
        let a = quiet_since(10 * MIN);
        assert_eq!(
            judge_stall(&a, None, 40 * MIN, 30 * MIN),
            StallVerdict::Stall { since: 10 * MIN }
        );
        assert_eq!(
            judge_stall(&a, None, 40 * MIN - 1, 30 * MIN),
            StallVerdict::Same
        );
    }

    #[test]
    fn any_one_signal_keeps_a_job_alive() {
        for a in [
            Activity {
                metric_at: Some(35 * MIN),
                ..quiet_since(10 * MIN)
            },
            Activity {
                cpu_at: Some(35 * MIN),
                ..quiet_since(10 * MIN)
            },
            Activity {
                log_at: Some(35 * MIN),
                ..quiet_since(10 * MIN)
            },
        ] {
            assert_eq!(
                judge_stall(&a, None, 40 * MIN, 30 * MIN),
                StallVerdict::Same
            );
        }
    }

    #[test]
    fn a_marked_job_resumes_when_it_moves_and_stays_marked_while_quiet() {
        let a = quiet_since(10 * MIN);
        assert_eq!(
            judge_stall(&a, Some(10 * MIN), 50 * MIN, 30 * MIN),
            StallVerdict::Same
        );
        let moved = Activity {
            log_at: Some(45 * MIN),
            ..a
        };
        assert_eq!(
            judge_stall(&moved, Some(10 * MIN), 50 * MIN, 30 * MIN),
            StallVerdict::Resume
        );
    }

    #[test]
    fn a_job_that_never_started_is_not_stalled() {
        assert_eq!(
            judge_stall(&Activity::default(), None, 100 * MIN, 30 * MIN),
            StallVerdict::Same
        );
    }

    fn gpus(peak: Option<f64>) -> GpuWindow {
        GpuWindow {
            gpus: 2,
            held_long_enough: true,
            samples: 30,
            peak,
        }
    }

    #[test]
    fn gpus_under_five_percent_for_the_whole_window_are_idle_and_one_busy_sample_clears_it() {
        assert_eq!(
            judge_idle_gpus(&gpus(Some(3.0)), None, 40 * MIN, 30 * MIN),
            StallVerdict::Stall { since: 10 * MIN }
        );
        assert_eq!(
            judge_idle_gpus(&gpus(Some(30.0)), None, 40 * MIN, 30 * MIN),
            StallVerdict::Same
        );
        assert_eq!(
            judge_idle_gpus(&gpus(Some(30.0)), Some(10 * MIN), 40 * MIN, 30 * MIN),
            StallVerdict::Resume
        );
        assert_eq!(
            judge_idle_gpus(&gpus(Some(3.0)), Some(10 * MIN), 40 * MIN, 30 * MIN),
            StallVerdict::Same
        );
    }

    #[test]
    fn no_samples_a_short_run_or_no_gpus_warn_nobody() {
        let none = GpuWindow {
            samples: 0,
            peak: None,
            ..gpus(None)
        };
        assert_eq!(
            judge_idle_gpus(&none, None, 40 * MIN, 30 * MIN),
            StallVerdict::Same
        );
        let young = GpuWindow {
            held_long_enough: false,
            ..gpus(Some(1.0))
        };
        assert_eq!(
            judge_idle_gpus(&young, None, 40 * MIN, 30 * MIN),
            StallVerdict::Same
        );
        let cpu_only = GpuWindow {
            gpus: 0,
            ..gpus(Some(1.0))
        };
        assert_eq!(
            judge_idle_gpus(&cpu_only, None, 40 * MIN, 30 * MIN),
            StallVerdict::Same
        );
        assert_eq!(
            idle_gpus_message(2, 0, 30 * MIN),
            "2 GPUs held under 5% utilisation since 1970-01-01 00:00:00 UTC (30 min)."
        );
    }

    #[test]
    fn the_message_says_since_when_and_for_how_long() {
        assert_eq!(
            stall_message(0, 31 * MIN + 5),
            "No log line, metric point or CPU use since 1970-01-01 00:00:00 UTC (31 min)."
        );
    }
}
