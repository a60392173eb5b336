//! What this machine offers to replicas: its CPUs, memory and GPUs, learnt
//! at start (`nvidia-smi` for GPUs) or set by the operator
//! (`--local-cpus`, `--local-memory`, `--local-gpus`), e.g. to keep some
//! for the console itself.

use app::models::quantity::{format_cpu, format_memory};
use app::models::{GpuDevice, ResourceTotals};

/// The operator's settings; `None` (or [`GpuSetting::Detect`]) learns it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapacitySettings {
    /// Millicores replicas may hold in all.
    pub cpu_millis: Option<u64>,
    /// Bytes replicas may hold in all.
    pub memory_bytes: Option<u64>,
    /// Which GPUs replicas get.
    pub gpus: GpuSetting,
}

/// `--local-gpus`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GpuSetting {
    /// Every GPU `nvidia-smi` shows.
    #[default]
    Detect,
    /// None: no replica gets a GPU (a job asking for one never fits).
    None,
    /// The first N GPUs; past what `nvidia-smi` shows, simulated ones
    /// (their indices are handed out as if they existed: for tests and for
    /// trying a GPU job's scheduling on a machine without GPUs).
    Count(u32),
}

impl std::str::FromStr for GpuSetting {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" | "" => Ok(Self::Detect),
            "none" => Ok(Self::None),
            n => n
                .parse()
                .map(Self::Count)
                .map_err(|_| format!("“{n}”: say a number of GPUs, none or auto")),
        }
    }
}

/// One GPU replicas may be given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// `CUDA_VISIBLE_DEVICES` index.
    pub index: u32,
    /// Model name.
    pub name: String,
    /// Memory, bytes, where known.
    pub memory_bytes: Option<u64>,
    /// Stands in for a device this machine lacks.
    pub simulated: bool,
}

/// The GPUs `program` (`nvidia-smi`) shows, for the executor's capacity;
/// `None` when it is not installed, fails or hangs.
pub fn gpu_devices(program: &str) -> Option<Vec<Gpu>> {
    let csv = super::sampler::run_with_timeout(
        program,
        &[
            "--query-gpu=index,name,memory.total",
            "--format=csv,noheader,nounits",
        ],
    )?;
    Some(parse_gpu_devices(&csv))
}

/// `0, NVIDIA H100 80GB HBM3, 81559` lines (memory in MiB).
fn parse_gpu_devices(csv: &str) -> Vec<Gpu> {
    csv.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            Some(Gpu {
                index: fields.first()?.parse().ok()?,
                name: fields.get(1)?.to_string(),
                memory_bytes: fields
                    .get(2)
                    .and_then(|m| m.parse::<u64>().ok())
                    .map(|mib| mib * 1024 * 1024),
                simulated: false,
            })
        })
        .collect()
}

/// The machine's room for replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capacity {
    /// Millicores.
    pub cpu_millis: u64,
    /// Bytes.
    pub memory_bytes: u64,
    /// The GPUs.
    pub gpus: Vec<Gpu>,
    /// Where the numbers come from, in words.
    pub source: String,
}

impl Capacity {
    /// The room as totals.
    pub fn totals(&self) -> ResourceTotals {
        ResourceTotals {
            cpu_millis: self.cpu_millis,
            memory_bytes: self.memory_bytes,
            gpu: self.gpus.len() as u64,
        }
    }

    /// The GPUs as the API shows them, `held` being in use.
    pub fn devices(&self, held: &std::collections::BTreeSet<u32>) -> Vec<GpuDevice> {
        self.gpus
            .iter()
            .map(|g| GpuDevice {
                index: g.index,
                name: g.name.clone(),
                memory_bytes: g.memory_bytes,
                simulated: g.simulated,
                in_use: held.contains(&g.index),
            })
            .collect()
    }
}

/// Learns this machine's room, as `settings` leave it to learn; `nvidia_smi`
/// is the program asked for GPUs.
pub fn detect(settings: &CapacitySettings, nvidia_smi: &str) -> Capacity {
    let detected_gpus = || gpu_devices(nvidia_smi).unwrap_or_default();
    let gpus = match settings.gpus {
        GpuSetting::None => Vec::new(),
        GpuSetting::Detect => detected_gpus(),
        GpuSetting::Count(n) => {
            let mut gpus: Vec<Gpu> = detected_gpus().into_iter().take(n as usize).collect();
            let real = gpus.len() as u32;
            gpus.extend((real..n).map(|index| Gpu {
                index,
                name: "simulated".into(),
                memory_bytes: None,
                simulated: true,
            }));
            if real < n {
                tracing::warn!(
                    asked = n,
                    found = real,
                    "--local-gpus asks for more GPUs than nvidia-smi shows: the rest are \
                     simulated (replicas get their indices as if they existed)"
                );
            }
            gpus
        }
    };
    let cpu_millis = settings.cpu_millis.unwrap_or_else(machine_cpu_millis);
    let memory_bytes = settings.memory_bytes.unwrap_or_else(machine_memory_bytes);
    let said = |set: bool| if set { "set by flag" } else { "detected" };
    let simulated = gpus.iter().filter(|g| g.simulated).count();
    let source = format!(
        "{} CPUs ({}), {} of memory ({}), {} GPU{} ({}{})",
        format_cpu(cpu_millis),
        said(settings.cpu_millis.is_some()),
        format_memory(memory_bytes),
        said(settings.memory_bytes.is_some()),
        gpus.len(),
        if gpus.len() == 1 { "" } else { "s" },
        match settings.gpus {
            GpuSetting::Detect => "nvidia-smi",
            GpuSetting::None => "none by flag",
            GpuSetting::Count(_) => "set by flag",
        },
        if simulated > 0 {
            format!(", {simulated} simulated")
        } else {
            String::new()
        }
    );
    Capacity {
        cpu_millis,
        memory_bytes,
        gpus,
        source,
    }
}

/// The CPUs this process may run on (affinity and cgroup quota included).
fn machine_cpu_millis() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64) * 1000
}

/// `MemTotal` of `/proc/meminfo`, or less where a cgroup limits this process.
fn machine_memory_bytes() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| meminfo_total(&m))
        .unwrap_or(0);
    match cgroup_memory_limit() {
        Some(limit) if limit < total => limit,
        _ => total,
    }
}

/// `MemTotal: 16303208 kB` in bytes.
fn meminfo_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// This process's cgroup memory limit (v2 `memory.max` or v1
/// `memory.limit_in_bytes`), if it has one.
fn cgroup_memory_limit() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let file = if controllers.is_empty() {
            format!("/sys/fs/cgroup{path}/memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
        } else {
            continue;
        };
        if let Some(limit) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
        {
            return Some(limit);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_lists_the_gpus_the_executor_hands_out() {
        let gpus = parse_gpu_devices(
            "0, NVIDIA H100 80GB HBM3, 81559
1, NVIDIA H100 80GB HBM3, [N/A]
not a gpu
",
        );
        assert_eq!(gpus.len(), 2);
        assert_eq!(
            (gpus[0].index, gpus[0].name.as_str()),
            (0, "NVIDIA H100 80GB HBM3")
        );
        assert_eq!(gpus[0].memory_bytes, Some(81559 * 1024 * 1024));
        assert_eq!((gpus[1].index, gpus[1].memory_bytes), (1, None));
        assert!(!gpus[0].simulated);
    }

    #[test]
    fn gpu_settings_read_as_the_flag_is_written() {
        assert_eq!("auto".parse::<GpuSetting>(), Ok(GpuSetting::Detect));
        assert_eq!("none".parse::<GpuSetting>(), Ok(GpuSetting::None));
        assert_eq!("2".parse::<GpuSetting>(), Ok(GpuSetting::Count(2)));
        assert!("two".parse::<GpuSetting>().is_err());
    }

    #[test]
    fn gpus_past_what_nvidia_smi_shows_are_simulated_and_flags_override_detection() {
        let c = detect(
            &CapacitySettings {
                cpu_millis: Some(1500),
                memory_bytes: Some(2 << 30),
                gpus: GpuSetting::Count(2),
            },
            "/nonexistent/nvidia-smi",
        );
        assert_eq!((c.cpu_millis, c.memory_bytes), (1500, 2 << 30));
        assert_eq!(c.gpus.iter().map(|g| g.index).collect::<Vec<_>>(), [0, 1]);
        assert!(c.gpus.iter().all(|g| g.simulated));
        assert_eq!(
            c.source,
            "1.5 CPUs (set by flag), 2 GiB of memory (set by flag), 2 GPUs (set by flag, 2 simulated)"
        );
    }

    #[test]
    fn without_flags_the_machine_is_measured() {
        let c = detect(&CapacitySettings::default(), "/nonexistent/nvidia-smi");
        assert!(c.cpu_millis >= 1000);
        assert!(c.memory_bytes > 256 << 20, "{}", c.memory_bytes);
        assert!(c.gpus.is_empty());
        assert_eq!(
            meminfo_total("MemTotal:       16303208 kB\nMemFree: 1 kB\n"),
            Some(16303208 * 1024)
        );
    }
}
