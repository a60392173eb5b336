//! Stack dumps of a local job's replicas. py-spy (from PyPI, built once as
//! one of the console's venvs, so nobody installs it by hand) reads the
//! threads of every Python process in each replica's process tree without
//! stopping it for more than a moment; what it prints goes into the
//! replica's log between a banner and an end line, and back to the caller.

use std::path::{Path, PathBuf};
use std::time::Duration;

use app::models::{dump_banner, StackDump};
use time::OffsetDateTime;

use super::sampler::{processes, tree};
use crate::storage::log_dumps::{append_stamped, dump_lines};

/// The py-spy the console builds (the same the tests install).
pub const PY_SPY: &str = "py-spy==0.4.3";

/// The longest one py-spy run may take.
const DUMP_LIMIT: Duration = Duration::from_secs(30);

/// The Python processes of the tree led by `root` (its process group and
/// descendants): a replica may be `sh -c 'python train.py'`, or a launcher
/// with a worker per device.
fn python_processes(root: i32) -> Vec<i32> {
    let procs = processes();
    tree(root, &procs)
        .into_iter()
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/exe"))
                .ok()
                .and_then(|exe| exe.file_name().map(|n| n.to_string_lossy().into_owned()))
                .is_some_and(|name| name.starts_with("python"))
        })
        .collect()
}

/// Runs `py_spy dump --pid <pid>`: what it printed, or why it could not.
async fn dump_one(py_spy: &Path, pid: i32) -> Result<String, String> {
    let run = tokio::process::Command::new(py_spy)
        .args(["dump", "--pid", &pid.to_string()])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(DUMP_LIMIT, run)
        .await
        .map_err(|_| format!("py-spy took longer than {}s", DUMP_LIMIT.as_secs()))?
        .map_err(|e| format!("py-spy could not run: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "py-spy failed on process {pid}: {}",
            err.trim().lines().last().unwrap_or("no message")
        ))
    }
}

/// Dumps replica `pod` (process group `root`), writing the dump into its
/// log at `log`.
pub async fn dump_replica(py_spy: &Path, pod: &str, root: i32, log: PathBuf) -> StackDump {
    let pythons = tokio::task::spawn_blocking(move || python_processes(root))
        .await
        .unwrap_or_default();
    if pythons.is_empty() {
        return StackDump {
            pod: pod.to_owned(),
            text: String::new(),
            error: Some("no Python process runs in this replica".to_owned()),
        };
    }
    let mut text = String::new();
    let mut errors = Vec::new();
    for pid in pythons {
        match dump_one(py_spy, pid).await {
            Ok(dump) => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(dump.trim_end());
                text.push('\n');
            }
            Err(why) => errors.push(why),
        }
    }
    let now = OffsetDateTime::now_utc();
    let at = (now.unix_timestamp_nanos() / 1_000_000) as i64;
    let shown = if text.is_empty() {
        errors.join("\n")
    } else {
        text.clone()
    };
    if let Err(err) = append_stamped(&log, &dump_lines(&dump_banner(pod, at), &shown), now).await {
        tracing::warn!(pod, error = %err, "writing a stack dump into the log");
    }
    StackDump {
        pod: pod.to_owned(),
        error: (text.is_empty()).then(|| errors.join("; ")),
        text,
    }
}
