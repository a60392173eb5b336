//! Stalled jobs: a running job that wrote no log line, took no metric point
//! and used no CPU for a while is marked stalled (a badge in the table, a
//! banner on its page, a `stalled` notification) until any of the three
//! moves again. The watcher gathers the signals; the rule is here.

use serde::{Deserialize, Serialize};

use crate::models::time::format_utc_seconds;

/// A replica uses "no CPU" below this share of one core (2%): an idle
/// Python interpreter waiting on a lock or a socket stays well under it.
pub const IDLE_CPU_CORES: f64 = 0.02;

/// The minutes a job may show no sign of life before it is stalled, unless
/// the console says otherwise (`--stall-minutes`).
pub const DEFAULT_STALL_MINUTES: u32 = 30;

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

    #[test]
    fn the_message_says_since_when_and_for_how_long() {
        assert_eq!(
            stall_message(0, 31 * MIN + 5),
            "No log line, metric point or CPU use since 1970-01-01 00:00:00 UTC (31 min)."
        );
    }
}
