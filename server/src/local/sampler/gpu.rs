//! GPU use from `nvidia-smi`: the processes on GPUs and each GPU's
//! utilisation, read once per tick with a timeout.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long one `nvidia-smi` call may take before it is killed: a wedged
/// driver can make it hang, and the sampler must not stall with it.
const NVIDIA_SMI_TIMEOUT: Duration = Duration::from_secs(5);

/// What `nvidia-smi` shows: the processes on GPUs and each GPU's use.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct GpuTable {
    /// (pid, GPU uuid, MiB used) of every compute process.
    pub(super) apps: Vec<(i32, String, u64)>,
    /// Utilisation in percent, by GPU uuid.
    pub(super) util: HashMap<String, f64>,
    /// Each GPU's uuid by its index.
    pub(super) uuids: HashMap<u32, String>,
}

impl GpuTable {
    /// (`gpu_util`, `gpu_memory` in bytes) of the processes `pids`; both
    /// `None` when none of them is on a GPU.
    pub(super) fn usage(&self, pids: &[i32]) -> (Option<f64>, Option<f64>) {
        let mut gpus = HashSet::new();
        let mut mib = 0u64;
        for (pid, uuid, used) in &self.apps {
            if pids.contains(pid) {
                gpus.insert(uuid.as_str());
                mib += used;
            }
        }
        if gpus.is_empty() {
            return (None, None);
        }
        let util = gpus.iter().filter_map(|g| self.util.get(*g)).sum();
        (Some(util), Some((mib * 1024 * 1024) as f64))
    }

    /// (`gpu_util`, `gpu_memory` in bytes) of the GPUs with indices
    /// `devices`, held by one replica alone: their utilisation and what
    /// every process on them uses. `None` when `nvidia-smi` does not know
    /// them (a simulated GPU).
    pub(super) fn device_usage(&self, devices: &[u32]) -> (Option<f64>, Option<f64>) {
        let uuids: Vec<&String> = devices.iter().filter_map(|i| self.uuids.get(i)).collect();
        if uuids.is_empty() {
            return (None, None);
        }
        let util = uuids.iter().filter_map(|u| self.util.get(*u)).sum();
        let mib: u64 = self
            .apps
            .iter()
            .filter(|(_, uuid, _)| uuids.contains(&uuid))
            .map(|(_, _, used)| used)
            .sum();
        (Some(util), Some((mib * 1024 * 1024) as f64))
    }
}

/// Reads `nvidia-smi --query-gpu=index,uuid,utilization.gpu` and
/// `--query-compute-apps=pid,gpu_uuid,used_memory` output (CSV, no header,
/// no units). Lines it cannot read (`[N/A]`, `[Not Supported]`) are skipped.
pub(super) fn parse_gpu_tables(gpus_csv: &str, apps_csv: &str) -> GpuTable {
    let rows = |csv: &str| -> Vec<Vec<String>> {
        csv.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
            .collect()
    };
    let util = rows(gpus_csv)
        .into_iter()
        .filter_map(|r| Some((r.get(1)?.clone(), r.get(2)?.parse::<f64>().ok()?)))
        .collect();
    let uuids = rows(gpus_csv)
        .into_iter()
        .filter_map(|r| Some((r.first()?.parse::<u32>().ok()?, r.get(1)?.clone())))
        .collect();
    let apps = rows(apps_csv)
        .into_iter()
        .filter_map(|r| {
            Some((
                r.first()?.parse().ok()?,
                r.get(1)?.clone(),
                r.get(2)?.parse().ok()?,
            ))
        })
        .collect();
    GpuTable { apps, util, uuids }
}

/// Asks `program` (`nvidia-smi`) for the GPUs and their processes; `None`
/// when it is not installed, fails or hangs.
pub(super) fn probe_gpus(program: &str) -> Option<GpuTable> {
    let format = "--format=csv,noheader,nounits";
    let gpus = run_with_timeout(program, &["--query-gpu=index,uuid,utilization.gpu", format])?;
    let apps = run_with_timeout(
        program,
        &["--query-compute-apps=pid,gpu_uuid,used_memory", format],
    )?;
    Some(parse_gpu_tables(&gpus, &apps))
}

/// The standard output of `program args`, if it succeeds within
/// [`NVIDIA_SMI_TIMEOUT`]; killed otherwise.
pub(crate) fn run_with_timeout(program: &str, args: &[&str]) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    // Read on a thread so a full pipe cannot block the wait, and the wait can
    // time out.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        let _ = tx.send(text);
    });
    let text = rx.recv_timeout(NVIDIA_SMI_TIMEOUT);
    if text.is_err() {
        let _ = child.kill();
    }
    let status = child.wait().ok()?;
    let text = text.ok()?;
    status.success().then_some(text)
}
