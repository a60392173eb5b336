//! A cgroup per replica, on cgroup v2 or v1.
//!
//! Each console keeps its replicas' cgroups under a folder of its own,
//! `<its cgroup>/paddlecloud-replicas/console-<pid>-<n>/`: two consoles in
//! one process (the tests) or on one machine number their jobs alike, and
//! `job-7-trainer-0` of one must never be the other's. A folder left by a
//! console that is gone is removed when the next one starts.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The processes one replica may have at once where v1's `pids`
/// controller holds them (a fork bomb stops there, not at the machine's).
pub const PIDS_MAX: u64 = 4096;

/// The folder, in this process's cgroup, under which consoles keep theirs.
const REPLICAS: &str = "paddlecloud-replicas";

/// Where v2 moves the console's own process (a cgroup with processes
/// cannot hand controllers down to its children).
const CONSOLE_LEAF: &str = "paddlecloud-console";

/// Numbers the consoles of this process.
static CONSOLES: AtomicU64 = AtomicU64::new(0);

/// One replica's cgroup: its folder in each hierarchy it joins.
pub(super) struct ReplicaCgroup {
    pub dirs: Vec<PathBuf>,
    /// The one with the memory controller's files.
    pub memory: PathBuf,
    pub v1: bool,
}

/// Where replicas' cgroups are made.
#[derive(Debug)]
enum Hierarchy {
    /// cgroup v2: one folder with `memory.max` and `cpu.max`.
    V2 { dir: PathBuf },
    /// cgroup v1: a folder per controller (memory, cpu, and pids where
    /// mounted).
    V1 {
        memory: PathBuf,
        cpu: PathBuf,
        pids: Option<PathBuf>,
    },
}

/// The cgroups under which one console's replicas get theirs.
#[derive(Debug)]
pub struct CgroupTree {
    hierarchy: Hierarchy,
}

impl CgroupTree {
    /// Prepares this console's folder on the v2 hierarchy mounted at
    /// `/sys/fs/cgroup`, if this process is on a pure v2 hierarchy with
    /// the memory and cpu controllers available.
    pub(super) fn of_this_process() -> Result<Self, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        let mut lines = own.lines();
        let path = match (lines.next(), lines.next()) {
            (Some(line), None) => line.strip_prefix("0::").ok_or("not cgroup v2")?,
            _ => return Err("a cgroup v1 or hybrid hierarchy".into()),
        };
        Self::prepare(Path::new("/sys/fs/cgroup"), path).map_err(|e| e.to_string())
    }

    /// This console's folders in the v1 hierarchies of this process under
    /// `/sys/fs/cgroup` (each mounted at the name `/proc/self/cgroup`
    /// gives its controllers).
    pub(super) fn v1_of_this_process() -> Result<Self, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        Self::v1(Path::new("/sys/fs/cgroup"), &own).map_err(|e| format!("cgroup v1: {e}"))
    }

    /// Under `mount`, this process's v1 cgroups as `own` (the text of
    /// `/proc/self/cgroup`) lists them: this console's folder under
    /// `paddlecloud-replicas` in the memory, cpu and (if there) pids
    /// hierarchies.
    pub fn v1(mount: &Path, own: &str) -> io::Result<Self> {
        let place = |controller: &str| -> Option<PathBuf> {
            own.lines().find_map(|line| {
                let mut fields = line.splitn(3, ':');
                let (_, names, path) = (fields.next()?, fields.next()?, fields.next()?);
                names
                    .split(',')
                    .any(|n| n == controller)
                    .then(|| mount.join(names).join(path.trim_start_matches('/')))
            })
        };
        let console = console_name();
        let made = |controller: &str| -> io::Result<Option<PathBuf>> {
            let Some(dir) = place(controller) else {
                return Ok(None);
            };
            consoles_folder(&dir.join(REPLICAS), &console).map(Some)
        };
        let needed = |controller: &str| -> io::Result<PathBuf> {
            made(controller)?.ok_or_else(|| {
                io::Error::other(format!("no {controller} hierarchy for this process"))
            })
        };
        Ok(Self {
            hierarchy: Hierarchy::V1 {
                memory: needed("memory")?,
                cpu: needed("cpu")?,
                pids: made("pids")?,
            },
        })
    }

    /// Under `mount`, the cgroup `own` (this process's): moves this process
    /// into a leaf of its own (a cgroup with processes cannot hand
    /// controllers down), enables memory and cpu below it, and makes this
    /// console's folder for replicas' cgroups.
    pub fn prepare(mount: &Path, own: &str) -> io::Result<Self> {
        // A second console of this process finds the first one's leaf.
        let own = own.trim_start_matches('/');
        let own = own
            .strip_suffix(CONSOLE_LEAF)
            .map_or(own, |o| o.trim_end_matches('/'));
        let own = mount.join(own);
        let controllers = std::fs::read_to_string(own.join("cgroup.controllers"))?;
        for needed in ["memory", "cpu"] {
            if !controllers.split_whitespace().any(|c| c == needed) {
                return Err(io::Error::other(format!(
                    "the {needed} controller is not available to this process's cgroup"
                )));
            }
        }
        let leaf = own.join(CONSOLE_LEAF);
        std::fs::create_dir_all(&leaf)?;
        std::fs::write(leaf.join("cgroup.procs"), std::process::id().to_string())?;
        std::fs::write(own.join("cgroup.subtree_control"), "+memory +cpu")?;
        let replicas = own.join(REPLICAS);
        std::fs::create_dir_all(&replicas)?;
        std::fs::write(replicas.join("cgroup.subtree_control"), "+memory +cpu")?;
        let dir = consoles_folder(&replicas, &console_name())?;
        std::fs::write(dir.join("cgroup.subtree_control"), "+memory +cpu")?;
        Ok(Self {
            hierarchy: Hierarchy::V2 { dir },
        })
    }

    /// Whether it is v1's.
    pub(super) fn is_v1(&self) -> bool {
        matches!(self.hierarchy, Hierarchy::V1 { .. })
    }

    /// This console's folders, one per hierarchy.
    fn folders(&self) -> Vec<&Path> {
        match &self.hierarchy {
            Hierarchy::V2 { dir } => vec![dir],
            Hierarchy::V1 { memory, cpu, pids } => {
                let mut dirs = vec![memory.as_path(), cpu.as_path()];
                dirs.extend(pids.as_deref());
                dirs
            }
        }
    }

    /// A fresh cgroup `key` with the replica's limits written (`0` CPU
    /// and `u64::MAX` memory mean no limit: nothing was asked).
    pub(super) fn replica(
        &self,
        key: &str,
        cpu_millis: u64,
        memory_bytes: u64,
    ) -> io::Result<ReplicaCgroup> {
        let fresh = |parent: &Path| -> io::Result<PathBuf> {
            let dir = parent.join(key);
            // One left by a previous replica of that name: its processes are gone.
            let _ = std::fs::remove_dir(&dir);
            std::fs::create_dir_all(&dir)?;
            Ok(dir)
        };
        // This much CPU time in every 100 ms period.
        let quota = (cpu_millis > 0).then(|| (cpu_millis * 100).max(1000));
        let memory_limit = (memory_bytes != u64::MAX).then_some(memory_bytes);
        match &self.hierarchy {
            Hierarchy::V2 { dir } => {
                let dir = fresh(dir)?;
                let max = memory_limit.map_or("max".to_owned(), |m| m.to_string());
                std::fs::write(dir.join("memory.max"), max)?;
                // No swap: past the limit is past the limit, as in a container.
                let _ = std::fs::write(dir.join("memory.swap.max"), "0");
                let quota = quota.map_or("max".to_owned(), |q| q.to_string());
                std::fs::write(dir.join("cpu.max"), format!("{quota} 100000"))?;
                Ok(ReplicaCgroup {
                    dirs: vec![dir.clone()],
                    memory: dir,
                    v1: false,
                })
            }
            Hierarchy::V1 { memory, cpu, pids } => {
                let memory = fresh(memory)?;
                let limit = memory_limit.map_or("-1".to_owned(), |m| m.to_string());
                std::fs::write(memory.join("memory.limit_in_bytes"), &limit)?;
                // No swap: where swap is accounted, memsw at most the limit;
                // and the cgroup's swappiness 0 (v1 then does not swap it).
                let _ = std::fs::write(memory.join("memory.memsw.limit_in_bytes"), &limit);
                let _ = std::fs::write(memory.join("memory.swappiness"), "0");
                let cpu = fresh(cpu)?;
                std::fs::write(cpu.join("cpu.cfs_period_us"), "100000")?;
                let quota = quota.map_or("-1".to_owned(), |q| q.to_string());
                std::fs::write(cpu.join("cpu.cfs_quota_us"), quota)?;
                let mut dirs = vec![memory.clone(), cpu];
                if let Some(pids) = pids {
                    let pids = fresh(pids)?;
                    std::fs::write(pids.join("pids.max"), PIDS_MAX.to_string())?;
                    dirs.push(pids);
                }
                Ok(ReplicaCgroup {
                    dirs,
                    memory,
                    v1: true,
                })
            }
        }
    }
}

impl Drop for CgroupTree {
    /// The console's folders go with it (its replicas' went with them; a
    /// straggler keeps its own, and the next console removes both).
    fn drop(&mut self) {
        for dir in self.folders() {
            remove_tree(dir);
        }
    }
}

/// `console-<pid>-<n>`: this process, and which of its consoles.
fn console_name() -> String {
    let n = CONSOLES.fetch_add(1, Ordering::Relaxed);
    format!("console-{}-{n}", std::process::id())
}

/// Makes `replicas/console`, first removing what consoles of processes that
/// are gone left under `replicas` (and, from before consoles had folders,
/// replicas' cgroups made right there).
fn consoles_folder(replicas: &Path, console: &str) -> io::Result<PathBuf> {
    std::fs::create_dir_all(replicas)?;
    for entry in std::fs::read_dir(replicas)?.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let name = entry.file_name();
        let alive = name
            .to_str()
            .and_then(|n| n.strip_prefix("console-"))
            .and_then(|n| n.split('-').next())
            .is_some_and(|pid| Path::new("/proc").join(pid).exists());
        if !alive {
            // A cgroup with processes in it refuses: a straggler keeps it.
            remove_tree(&path);
        }
    }
    let dir = replicas.join(console);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Removes the cgroup `dir` and the cgroups in it, as far as they are
/// empty (a cgroup folder's files are the kernel's: `remove_dir` takes
/// it whole once no process and no child cgroup is left).
fn remove_tree(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.path().is_dir() {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
    let _ = std::fs::remove_dir(dir);
}
