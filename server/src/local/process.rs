//! Starting and ending the executor's processes: job replicas, serving
//! replicas and notebook servers alike (the backbone every long-running
//! workload of the local executor shares: a turn in the machine's queue,
//! [`super::scheduler::Ticket::wait_turn`]; a free port, its log, its own
//! process group recorded in a pid file; an end with a grace period; and
//! leftovers of a previous console found by their marker and ended).

use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// `n` free TCP ports on 127.0.0.1, held open together so they differ, then
/// released for the replicas to bind.
pub fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind(("127.0.0.1", 0)))
        .collect::<std::io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// Builds the command for one replica: its own process group (so a stop ends
/// everything it started), stdin closed, stdout and stderr piped to its log.
/// Its environment is `inherited` (what it may have of the console's own)
/// and then `env`; nothing else.
pub fn command(
    argv: &[String],
    cwd: &Path,
    inherited: &[(String, String)],
    env: &[(String, String)],
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(cwd)
        .env_clear()
        .envs(inherited.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    cmd
}

/// The `PATH` replicas inherit (a plain system one when the console's
/// environment gave none).
pub fn inherited_path(inherited: &[(String, String)]) -> &str {
    inherited
        .iter()
        .find(|(k, _)| k == "PATH")
        .map_or("/usr/local/bin:/usr/bin:/bin", |(_, v)| v.as_str())
}

/// Sends `signal` to a whole process group; one that is already gone is fine.
pub fn signal_group(pgid: i64, signal: Signal) {
    let Ok(raw) = i32::try_from(pgid) else { return };
    if raw <= 1 {
        return; // never signal init or "every process"
    }
    match killpg(Pid::from_raw(raw), signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(err) => tracing::warn!(pgid, %signal, error = %err, "signalling a replica"),
    }
}

/// SIGTERM to a process group, SIGKILL after `grace`, and waits for its
/// leader `child`; whatever of the group is left is killed.
pub async fn end(child: &mut tokio::process::Child, pgid: i64, grace: Duration) {
    signal_group(pgid, Signal::SIGTERM);
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        signal_group(pgid, Signal::SIGKILL);
        let _ = child.wait().await;
    }
    signal_group(pgid, Signal::SIGKILL);
}

/// The non-empty lines at the end (last 16 KiB) of a process's log.
pub fn log_lines(log: &Path) -> Vec<String> {
    let Ok(bytes) = std::fs::read(log) else {
        return Vec::new();
    };
    let tail = &bytes[bytes.len().saturating_sub(16 * 1024)..];
    String::from_utf8_lossy(tail)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A free port of 127.0.0.1 for a server to bind, as a reason on failure.
pub fn free_port() -> Result<u16, String> {
    free_ports(1)
        .map_err(|e| format!("no free port: {e}"))?
        .first()
        .copied()
        .ok_or_else(|| "no free port".to_owned())
}

/// `log` opened for appending, twice: a process's stdout and stderr.
pub fn log_outputs(log: &Path) -> Result<(Stdio, Stdio), String> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("cannot open its log: {e}"))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot open its log: {e}"))?;
    Ok((Stdio::from(out), Stdio::from(err)))
}

/// How a process ended, for a message: "code 3", "signal 9 (SIGKILL)",
/// or "a signal" when its status could not be read.
pub fn exit_words(status: Option<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) if s.code().is_some() => format!("code {}", s.code().unwrap_or_default()),
        Some(s) if s.signal().is_some() => {
            let n = s.signal().unwrap_or_default();
            match nix::sys::signal::Signal::try_from(n) {
                Ok(signal) => format!("signal {n} ({})", signal.as_str()),
                Err(_) => format!("signal {n}"),
            }
        }
        _ => "a signal".to_owned(),
    }
}

/// Ends the process group recorded in `pid_file` by a previous console, if
/// its leader still carries `marker` (`NAME=value`) in its environment: a
/// recycled pid is someone else's process and is left alone.
pub fn kill_recorded_group(pid_file: &Path, marker: &str) {
    let Some(pgid) = std::fs::read_to_string(pid_file)
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
    else {
        return;
    };
    let ours = std::fs::read(format!("/proc/{pgid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == marker.as_bytes()));
    if ours {
        signal_group(pgid, Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_group_is_ended_only_while_its_leader_carries_the_marker() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let spawn = || {
            let mut cmd = std::process::Command::new("sleep");
            cmd.arg("30").env("PADDLECLOUD_TEST_MARKER", "mine");
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            cmd.spawn().unwrap()
        };
        let mut other = spawn();
        std::fs::write(&pid_file, other.id().to_string()).unwrap();
        kill_recorded_group(&pid_file, "PADDLECLOUD_TEST_MARKER=theirs");
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            other.try_wait().unwrap().is_none(),
            "a stranger's group was ended"
        );
        kill_recorded_group(&pid_file, "PADDLECLOUD_TEST_MARKER=mine");
        let status = other.wait().unwrap();
        assert_eq!(exit_words(Some(status)), "signal 9 (SIGKILL)");
        assert_eq!(exit_words(None), "a signal");
        kill_recorded_group(&dir.path().join("none"), "PADDLECLOUD_TEST_MARKER=mine");
    }
}
