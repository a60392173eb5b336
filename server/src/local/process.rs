//! Starting and ending replica processes.

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
