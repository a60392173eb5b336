//! What a cluster can run at once, what runs now and what waits: the local
//! executor's machine (`GET /api/v1/cluster`, the Quota page).

use serde::{Deserialize, Serialize};

use super::jobs::ResourceTotals;
use super::quantity::{format_cpu, format_memory};

/// One GPU the local executor hands out to replicas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct GpuDevice {
    /// Its index, as `nvidia-smi` and `CUDA_VISIBLE_DEVICES` number it.
    pub index: u32,
    /// Its model name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Its memory, bytes, where known.
    pub memory_bytes: Option<u64>,
    /// It stands in for a device this machine lacks (`--local-gpus N` past
    /// what `nvidia-smi` shows): replicas get its index as if it existed.
    pub simulated: bool,
    /// A running replica holds it now.
    pub in_use: bool,
}

/// How replicas are held to the memory (and CPU) they asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum LimitEnforcement {
    /// A cgroup (v2) per replica: `memory.max` (the kernel kills it at the
    /// limit) and `cpu.max` (it gets no more CPU than it asked for).
    Cgroup,
    /// A cgroup (v1) per replica, in the memory, cpu and pids hierarchies:
    /// `memory.limit_in_bytes`, `cpu.cfs_quota_us` and `pids.max`.
    CgroupV1 {
        /// The processes a replica may have at once.
        pids_max: u32,
    },
    /// The executor reads each replica's memory every `every_ms` and kills
    /// it past its limit; CPU is not limited.
    Sampler {
        /// How often, milliseconds.
        every_ms: u32,
    },
    /// The cluster's own (Kubernetes sets each pod's limits).
    Cluster,
}

impl LimitEnforcement {
    /// One line for the resources page and the Quota page.
    pub fn describe(self) -> String {
        match self {
            Self::Cgroup => {
                "Memory and CPU limits: enforced by a cgroup (v2) per replica.".to_owned()
            }
            Self::CgroupV1 { pids_max } => format!(
                "Memory, CPU and process limits: enforced by a cgroup (v1) per replica \
                 (at most {pids_max} processes each)."
            ),
            Self::Sampler { every_ms } => format!(
                "Memory limits: enforced by reading each replica's memory every {} (no cgroups \
                 the console may create here); CPU is not limited.",
                if every_ms % 1000 == 0 {
                    format!("{} s", every_ms / 1000)
                } else {
                    format!("{every_ms} ms")
                }
            ),
            Self::Cluster => "Limits: enforced by the cluster.".to_owned(),
        }
    }
}

/// A cluster's room for replicas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ClusterCapacity {
    /// The cluster's name, as the job table's "where it ran" shows it.
    pub cluster: String,
    /// What replicas may hold at once (on Kubernetes: the allocatable of
    /// the nodes pods may go to); `None` where it cannot be read.
    pub total: Option<ResourceTotals>,
    /// What running replicas (jobs' and serving instances') hold now (on
    /// Kubernetes: what every pod placed on those nodes requests).
    pub used: Option<ResourceTotals>,
    /// The GPUs, each with whether it is held (local executor).
    pub gpus: Vec<GpuDevice>,
    /// Jobs and serving replicas waiting for room, first come first served.
    pub queued: u32,
    /// How limits are enforced.
    pub limits: LimitEnforcement,
    /// Where the numbers come from (detected, or set by a flag).
    pub source: String,
}

/// Whether a workload fits in the cluster's room, as its dialog says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// The room is not known (the backend cannot read it).
    Unknown,
    /// It fits in what is free now.
    Fits {
        /// What is free now.
        free: ResourceTotals,
    },
    /// More than is free now, within the total: it waits for room.
    Waits {
        /// What is free now.
        free: ResourceTotals,
    },
    /// More than the cluster has in all: it never starts.
    Never {
        /// The cluster's total.
        total: ResourceTotals,
    },
}

impl ClusterCapacity {
    /// What is free now: the total less what is held (`None` when either
    /// is unknown).
    pub fn free(&self) -> Option<ResourceTotals> {
        Some(self.total?.minus(self.used?))
    }

    /// Where `ask` (a workload's totals) stands against the room.
    pub fn room_for(&self, ask: ResourceTotals) -> Room {
        let (Some(total), Some(free)) = (self.total, self.free()) else {
            return Room::Unknown;
        };
        if !ask.fits_in(&total) {
            Room::Never { total }
        } else if ask.fits_in(&free) {
            Room::Fits { free }
        } else {
            Room::Waits { free }
        }
    }

    /// "2 CPUs, 7.8 GiB, 1 GPU": what `totals` holds, in words.
    pub fn describe(totals: ResourceTotals) -> String {
        let gpus = match totals.gpu {
            1 => "1 GPU".to_owned(),
            n => format!("{n} GPUs"),
        };
        format!(
            "{} CPU{}, {} of memory, {gpus}",
            format_cpu(totals.cpu_millis),
            if totals.cpu_millis == 1000 { "" } else { "s" },
            format_memory(totals.memory_bytes),
        )
    }
}

#[cfg(test)]
mod room_tests {
    use super::*;

    fn totals(cpu_millis: u64, gib: u64, gpu: u64) -> ResourceTotals {
        ResourceTotals {
            cpu_millis,
            memory_bytes: gib << 30,
            gpu,
        }
    }

    fn cluster(total: Option<ResourceTotals>, used: Option<ResourceTotals>) -> ClusterCapacity {
        ClusterCapacity {
            cluster: "k".into(),
            total,
            used,
            gpus: vec![],
            queued: 0,
            limits: LimitEnforcement::Cluster,
            source: String::new(),
        }
    }

    #[test]
    fn a_job_fits_waits_or_never_starts_by_what_is_free_and_what_there_is() {
        let c = cluster(Some(totals(4000, 8, 1)), Some(totals(3000, 2, 0)));
        assert_eq!(c.free(), Some(totals(1000, 6, 1)));
        assert_eq!(
            c.room_for(totals(1000, 1, 1)),
            Room::Fits {
                free: totals(1000, 6, 1)
            }
        );
        assert_eq!(
            c.room_for(totals(2000, 1, 0)),
            Room::Waits {
                free: totals(1000, 6, 1)
            }
        );
        assert_eq!(
            c.room_for(totals(1000, 1, 2)),
            Room::Never {
                total: totals(4000, 8, 1)
            }
        );
    }

    #[test]
    fn a_room_that_cannot_be_read_says_nothing() {
        let c = cluster(None, None);
        assert_eq!(c.room_for(totals(1, 1, 0)), Room::Unknown);
        // More held than there is (pods of others): nothing is free.
        let full = cluster(Some(totals(1000, 1, 0)), Some(totals(1500, 2, 0)));
        assert_eq!(full.free(), Some(totals(0, 0, 0)));
    }
}
