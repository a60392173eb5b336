//! One server process of a long-running workload on this machine, from
//! the moment it is spawned until it ends: a serving replica's predict
//! server, a notebook's JupyterLab, and whatever server-like workload comes
//! next. Its process group is recorded in a pid file (so a console that
//! went away leaves something to find: see
//! [`super::process::kill_recorded_group`]), it is asked whether it answers
//! until it does (or a deadline passes), and it runs until it exits or is
//! told to stop, when its group gets SIGTERM and, after the grace period,
//! SIGKILL. What to do next (restart, fail the workload, report a port) is
//! the caller's.

use std::future::Future;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::process::Child;
use tokio::sync::watch;

use super::process::{end, signal_group};

/// How a server process ended.
#[derive(Debug)]
pub enum Ended {
    /// It was told to stop and has been ended.
    Stopped,
    /// It exited by itself (its group has been killed after it);
    /// `answered` says whether it had answered before.
    Exited {
        /// Whether the probe had seen it answer.
        answered: bool,
        /// Its exit status, if it could be read.
        status: Option<ExitStatus>,
    },
    /// It did not answer before the deadline and has been ended.
    NoAnswer,
}

/// How a server process is watched.
pub struct Watch<'a> {
    /// Where its process group is recorded while it runs.
    pub pid_file: &'a Path,
    /// How often it is asked whether it answers, until it does.
    pub probe_every: Duration,
    /// How long it may take to answer; `None`: as long as it runs.
    pub deadline: Option<Duration>,
    /// SIGTERM → SIGKILL when it is stopped.
    pub grace: Duration,
}

/// Watches `child` (the leader of its own process group) as `how` says
/// until it ends: `answers` is asked whether it answers, `on_answer` runs
/// once when it first does, `stop` turning true ends it.
pub async fn watch_server<P, PF, A, AF>(
    child: &mut Child,
    how: Watch<'_>,
    stop: &mut watch::Receiver<bool>,
    mut answers: P,
    mut on_answer: A,
) -> Ended
where
    P: FnMut() -> PF,
    PF: Future<Output = bool>,
    A: FnMut() -> AF,
    AF: Future<Output = ()>,
{
    let pgid = child.id().map(i64::from).unwrap_or(0);
    let _ = std::fs::write(how.pid_file, pgid.to_string());
    let deadline = how.deadline.map(|d| tokio::time::Instant::now() + d);
    let mut answered = false;
    let ended = loop {
        tokio::select! {
            status = child.wait() => {
                // The group may hold children of the server: end them with it.
                signal_group(pgid, Signal::SIGKILL);
                break Ended::Exited { answered, status: status.ok() };
            }
            _ = stop.changed() => {
                end(child, pgid, how.grace).await;
                break Ended::Stopped;
            }
            _ = tokio::time::sleep(how.probe_every), if !answered => {
                if answers().await {
                    answered = true;
                    on_answer().await;
                } else if deadline.is_some_and(|d| tokio::time::Instant::now() > d) {
                    end(child, pgid, how.grace).await;
                    break Ended::NoAnswer;
                }
            }
        }
    };
    let _ = std::fs::remove_file(how.pid_file);
    ended
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn sh(script: &str) -> Child {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", script]).process_group(0).kill_on_drop(true);
        cmd.spawn().unwrap()
    }

    fn how(pid_file: &Path, deadline: Option<Duration>) -> Watch<'_> {
        Watch {
            pid_file,
            probe_every: Duration::from_millis(20),
            deadline,
            grace: Duration::from_secs(2),
        }
    }

    #[tokio::test]
    async fn a_server_that_answers_runs_until_stopped_and_its_pid_file_goes_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let (stop_tx, mut stop) = watch::channel(false);
        let mut child = sh("sleep 30");
        let answered = AtomicBool::new(false);
        let stopper = async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert!(pid_file.exists(), "no pid file while it runs");
            stop_tx.send_replace(true);
        };
        let watching = watch_server(
            &mut child,
            how(&pid_file, Some(Duration::from_millis(100))),
            &mut stop,
            || async { true },
            || async { answered.store(true, Ordering::SeqCst) },
        );
        let (ended, ()) = tokio::join!(watching, stopper);
        assert!(matches!(ended, Ended::Stopped), "{ended:?}");
        assert!(answered.load(Ordering::SeqCst));
        assert!(!pid_file.exists());
        assert!(child.try_wait().unwrap().is_some(), "still running");
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_ended_at_its_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let (_stop_tx, mut stop) = watch::channel(false);
        let mut child = sh("sleep 30");
        let ended = watch_server(
            &mut child,
            how(&pid_file, Some(Duration::from_millis(100))),
            &mut stop,
            || async { false },
            || async { panic!("it never answered") },
        )
        .await;
        assert!(matches!(ended, Ended::NoAnswer), "{ended:?}");
        assert!(child.try_wait().unwrap().is_some(), "still running");
    }

    #[tokio::test]
    async fn a_server_that_exits_says_how_and_whether_it_had_answered() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let (_stop_tx, mut stop) = watch::channel(false);
        let mut child = sh("sleep 0.2; exit 3");
        let ended = watch_server(
            &mut child,
            how(&pid_file, None),
            &mut stop,
            || async { false },
            || async {},
        )
        .await;
        match ended {
            Ended::Exited { answered, status } => {
                assert!(!answered);
                assert_eq!(status.and_then(|s| s.code()), Some(3));
            }
            other => panic!("{other:?}"),
        }
    }
}
