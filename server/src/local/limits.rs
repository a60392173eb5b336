//! Holding replicas to what they asked for, as Kubernetes holds a pod to
//! its limits (the console sets limits equal to requests).
//!
//! Where the console may create cgroups (v2, the `memory` and `cpu`
//! controllers available to its own cgroup), each replica gets one:
//! `memory.max` (the kernel kills it at the limit, as a container is
//! OOMKilled) and `cpu.max` (it gets no more CPU time than it asked for).
//! On a v1 hierarchy (as on this project's machines) `--local-limits
//! cgroup` gives each replica a cgroup in the memory, cpu and pids
//! hierarchies (`auto` does not yet: see docs/local-executor.md).
//! Elsewhere the executor reads each replica's memory every
//! [`CHECK_EVERY`] and kills its process group past its limit; CPU is not
//! limited then. The resources
//! page and `GET /api/v1/cluster` say which one is active.

use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use app::models::quantity::{format_memory, memory_quantity};
use app::models::LimitEnforcement;
use nix::sys::signal::Signal;

use super::process::signal_group;
use super::sampler::{processes, tree_memory};
use super::scheduler::ReplicaAsk;

/// How often the sampler-enforced fallback reads replicas' memory.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// How this machine holds replicas to their limits.
#[derive(Clone)]
pub enum Limits {
    /// A cgroup per replica, under this directory.
    Cgroup(Arc<CgroupTree>),
    /// The executor reads memory and kills past the limit.
    Sampler(Arc<Enforcer>),
}

/// `--local-limits`: how to hold replicas to their limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LimitsChoice {
    /// A cgroup each where this process may create them, else the sampler.
    #[default]
    Auto,
    /// A cgroup each; the console does not start without them.
    Cgroup,
    /// The sampler, even where cgroups could be used.
    Sampler,
}

impl std::str::FromStr for LimitsChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "cgroup" => Ok(Self::Cgroup),
            "sampler" => Ok(Self::Sampler),
            other => Err(format!("“{other}”: say auto, cgroup or sampler")),
        }
    }
}

impl Limits {
    /// As `choice` says: cgroup v2 when this process may create cgroups
    /// with the memory and cpu controllers, the sampler otherwise (starting
    /// its loop).
    pub fn detect(choice: LimitsChoice) -> io::Result<Self> {
        let tree = match choice {
            LimitsChoice::Sampler => Err("the sampler was asked for".to_owned()),
            LimitsChoice::Auto => CgroupTree::of_this_process(),
            // Asked for: v1 too, where the hierarchy is v1 (see `CgroupTree::v1`).
            LimitsChoice::Cgroup => CgroupTree::of_this_process()
                .or_else(|v2| CgroupTree::v1_of_this_process().map_err(|v1| format!("{v2}; {v1}"))),
        };
        match (tree, choice) {
            (Ok(tree), _) => {
                tracing::info!(hierarchy = ?tree.hierarchy, "replica limits: a cgroup each");
                Ok(Self::Cgroup(Arc::new(tree)))
            }
            (Err(why), LimitsChoice::Cgroup) => Err(io::Error::other(format!(
                "--local-limits cgroup: no cgroup (v2 or v1) can be made here: {why}"
            ))),
            (Err(why), _) => {
                tracing::info!(%why, "replica limits: enforced by reading memory every second");
                Ok(Self::sampler(CHECK_EVERY))
            }
        }
    }

    /// The sampler-enforced fallback, reading every `every`.
    pub fn sampler(every: Duration) -> Self {
        Self::Sampler(Enforcer::start(every))
    }

    /// What the API and pages say of it.
    pub fn enforcement(&self) -> LimitEnforcement {
        match self {
            Self::Cgroup(tree) => match tree.hierarchy {
                Hierarchy::V2 { .. } => LimitEnforcement::Cgroup,
                Hierarchy::V1 { .. } => LimitEnforcement::CgroupV1 {
                    pids_max: PIDS_MAX as u32,
                },
            },
            Self::Sampler(e) => LimitEnforcement::Sampler {
                every_ms: e.every.as_millis() as u32,
            },
        }
    }

    /// The limits of the replica `cmd` starts (`key` names it uniquely on
    /// this machine), as it asked: its cgroup is made now and joined as the
    /// process starts; [`ReplicaLimit::watch`] it once it has.
    pub fn for_command(
        &self,
        key: &str,
        asked: &ReplicaAsk,
        cmd: &mut tokio::process::Command,
    ) -> io::Result<ReplicaLimit> {
        let limit = self.replica(key, asked.cpu_millis, asked.memory_bytes)?;
        limit.apply(cmd)?;
        Ok(limit)
    }

    /// The limits of one replica (`key` names it uniquely on this machine):
    /// its cgroup is made now; it is joined as the replica starts.
    pub fn replica(
        &self,
        key: &str,
        cpu_millis: u64,
        memory_bytes: u64,
    ) -> io::Result<ReplicaLimit> {
        let kind = match self {
            Self::Cgroup(tree) => Kind::Cgroup(tree.replica(key, cpu_millis, memory_bytes)?),
            Self::Sampler(e) => Kind::Sampler {
                enforcer: e.clone(),
                exceeded: Arc::new(Mutex::new(None)),
                watching: None,
            },
        };
        Ok(ReplicaLimit { memory_bytes, kind })
    }
}

/// One replica's limits, for as long as it runs.
pub struct ReplicaLimit {
    memory_bytes: u64,
    kind: Kind,
}

enum Kind {
    Cgroup(ReplicaCgroup),
    Sampler {
        enforcer: Arc<Enforcer>,
        exceeded: Exceeded,
        watching: Option<u64>,
    },
}

impl ReplicaLimit {
    /// Makes `cmd`'s process join the replica's cgroup before it runs
    /// anything (so not one allocation escapes the limit).
    pub fn apply(&self, cmd: &mut tokio::process::Command) -> io::Result<()> {
        let Kind::Cgroup(cgroup) = &self.kind else {
            return Ok(());
        };
        // One `cgroup.procs` per hierarchy it joins (v2: one; v1: memory,
        // cpu and pids each).
        let procs = cgroup
            .dirs
            .iter()
            .map(|dir| {
                CString::new(
                    dir.join("cgroup.procs")
                        .into_os_string()
                        .into_encoded_bytes(),
                )
                .map_err(io::Error::other)
            })
            .collect::<io::Result<Vec<CString>>>()?;
        // SAFETY: between fork and exec only async-signal-safe calls are
        // made (open, write, close), on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                for procs in &procs {
                    let fd =
                        nix::libc::open(procs.as_ptr(), nix::libc::O_WRONLY | nix::libc::O_CLOEXEC);
                    if fd < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    // "0" moves the writing process itself (v1 and v2 alike).
                    let written = nix::libc::write(fd, b"0".as_ptr().cast(), 1);
                    let err = io::Error::last_os_error();
                    nix::libc::close(fd);
                    if written != 1 {
                        return Err(err);
                    }
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// Watches the started replica (its process group `pgid`), where the
    /// executor enforces limits itself.
    pub fn watch(&mut self, pgid: i32) {
        if let Kind::Sampler {
            enforcer,
            exceeded,
            watching,
        } = &mut self.kind
        {
            *watching = Some(enforcer.watch(pgid, self.memory_bytes, exceeded.clone()));
        }
    }

    /// Why the replica was ended, if it was for its memory: "exceeded its
    /// memory limit 2Gi" (and what it used, where that was measured).
    pub fn exceeded(&self) -> Option<String> {
        match &self.kind {
            Kind::Cgroup(cgroup) => {
                // v2 counts kills in memory.events, v1 in memory.oom_control.
                let file = if cgroup.v1 {
                    "memory.oom_control"
                } else {
                    "memory.events"
                };
                let events = std::fs::read_to_string(cgroup.memory.join(file)).ok()?;
                let kills = events
                    .lines()
                    .find_map(|l| l.strip_prefix("oom_kill "))
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .unwrap_or(0);
                (kills > 0).then(|| {
                    format!(
                        "OOMKilled: exceeded its memory limit {}",
                        memory_quantity(self.memory_bytes)
                    )
                })
            }
            Kind::Sampler { exceeded, .. } => exceeded.lock().ok()?.clone(),
        }
    }
}

impl Drop for ReplicaLimit {
    fn drop(&mut self) {
        match &self.kind {
            // Empty once its processes are gone; a straggler keeps it (and
            // the next replica of that name empties it first).
            Kind::Cgroup(cgroup) => {
                for dir in &cgroup.dirs {
                    let _ = std::fs::remove_dir(dir);
                }
            }
            Kind::Sampler {
                enforcer,
                watching: Some(id),
                ..
            } => enforcer.unwatch(*id),
            Kind::Sampler { .. } => {}
        }
    }
}

/// The processes one replica may have at once where v1's `pids`
/// controller holds them (a fork bomb stops there, not at the machine's).
pub const PIDS_MAX: u64 = 4096;

/// One replica's cgroup: its folder in each hierarchy it joins.
struct ReplicaCgroup {
    dirs: Vec<PathBuf>,
    /// The one with the memory controller's files.
    memory: PathBuf,
    v1: bool,
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

/// The cgroups under which replicas get theirs.
pub struct CgroupTree {
    hierarchy: Hierarchy,
}

impl CgroupTree {
    /// Prepares `<this process's cgroup>/paddlecloud-replicas` on the v2
    /// hierarchy mounted at `/sys/fs/cgroup`, if this process is on a pure
    /// v2 hierarchy with the memory and cpu controllers available.
    fn of_this_process() -> Result<Self, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        let mut lines = own.lines();
        let path = match (lines.next(), lines.next()) {
            (Some(line), None) => line.strip_prefix("0::").ok_or("not cgroup v2")?,
            _ => return Err("a cgroup v1 or hybrid hierarchy".into()),
        };
        Self::prepare(Path::new("/sys/fs/cgroup"), path).map_err(|e| e.to_string())
    }

    /// The v1 hierarchies of this process under `/sys/fs/cgroup` (each
    /// mounted at the name `/proc/self/cgroup` gives its controllers).
    fn v1_of_this_process() -> Result<Self, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        Self::v1(Path::new("/sys/fs/cgroup"), &own).map_err(|e| format!("cgroup v1: {e}"))
    }

    /// Under `mount`, this process's v1 cgroups as `own` (the text of
    /// `/proc/self/cgroup`) lists them: `paddlecloud-replicas` made in the
    /// memory, cpu and (if there) pids hierarchies.
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
        let made = |controller: &str| -> io::Result<Option<PathBuf>> {
            let Some(dir) = place(controller) else {
                return Ok(None);
            };
            let dir = dir.join("paddlecloud-replicas");
            std::fs::create_dir_all(&dir)?;
            Ok(Some(dir))
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
    /// controllers down), enables memory and cpu below it, and makes the
    /// parent of replicas' cgroups.
    pub fn prepare(mount: &Path, own: &str) -> io::Result<Self> {
        let own = mount.join(own.trim_start_matches('/'));
        let controllers = std::fs::read_to_string(own.join("cgroup.controllers"))?;
        for needed in ["memory", "cpu"] {
            if !controllers.split_whitespace().any(|c| c == needed) {
                return Err(io::Error::other(format!(
                    "the {needed} controller is not available to this process's cgroup"
                )));
            }
        }
        let console = own.join("paddlecloud-console");
        std::fs::create_dir_all(&console)?;
        std::fs::write(console.join("cgroup.procs"), std::process::id().to_string())?;
        std::fs::write(own.join("cgroup.subtree_control"), "+memory +cpu")?;
        let dir = own.join("paddlecloud-replicas");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("cgroup.subtree_control"), "+memory +cpu")?;
        Ok(Self {
            hierarchy: Hierarchy::V2 { dir },
        })
    }

    /// A fresh cgroup `key` with the replica's limits written.
    fn replica(&self, key: &str, cpu_millis: u64, memory_bytes: u64) -> io::Result<ReplicaCgroup> {
        let fresh = |parent: &Path| -> io::Result<PathBuf> {
            let dir = parent.join(key);
            // One left by a previous replica of that name: its processes are gone.
            let _ = std::fs::remove_dir(&dir);
            std::fs::create_dir_all(&dir)?;
            Ok(dir)
        };
        // This much CPU time in every 100 ms period.
        let quota = (cpu_millis * 100).max(1000);
        match &self.hierarchy {
            Hierarchy::V2 { dir } => {
                let dir = fresh(dir)?;
                std::fs::write(dir.join("memory.max"), memory_bytes.to_string())?;
                // No swap: past the limit is past the limit, as in a container.
                let _ = std::fs::write(dir.join("memory.swap.max"), "0");
                std::fs::write(dir.join("cpu.max"), format!("{quota} 100000"))?;
                Ok(ReplicaCgroup {
                    dirs: vec![dir.clone()],
                    memory: dir,
                    v1: false,
                })
            }
            Hierarchy::V1 { memory, cpu, pids } => {
                let memory = fresh(memory)?;
                std::fs::write(
                    memory.join("memory.limit_in_bytes"),
                    memory_bytes.to_string(),
                )?;
                // No swap: where swap is accounted, memsw at most the limit;
                // and the cgroup's swappiness 0 (v1 then does not swap it).
                let _ = std::fs::write(
                    memory.join("memory.memsw.limit_in_bytes"),
                    memory_bytes.to_string(),
                );
                let _ = std::fs::write(memory.join("memory.swappiness"), "0");
                let cpu = fresh(cpu)?;
                std::fs::write(cpu.join("cpu.cfs_period_us"), "100000")?;
                std::fs::write(cpu.join("cpu.cfs_quota_us"), quota.to_string())?;
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

/// The sampler-enforced fallback: one loop reads every watched replica's
/// memory and kills those past their limits.
pub struct Enforcer {
    every: Duration,
    watched: Mutex<Watched>,
}

/// Why a replica was ended for its memory, once it was.
type Exceeded = Arc<Mutex<Option<String>>>;

/// One watched replica: its process group, its limit (bytes), and where to
/// say it was exceeded.
#[derive(Clone)]
struct WatchedReplica {
    pgid: i32,
    limit: u64,
    exceeded: Exceeded,
}

#[derive(Default)]
struct Watched {
    next: u64,
    replicas: HashMap<u64, WatchedReplica>,
}

impl Enforcer {
    fn start(every: Duration) -> Arc<Self> {
        let enforcer = Arc::new(Self {
            every,
            watched: Mutex::new(Watched::default()),
        });
        tokio::spawn(enforce(Arc::downgrade(&enforcer)));
        enforcer
    }

    fn watch(&self, pgid: i32, limit: u64, exceeded: Exceeded) -> u64 {
        let mut w = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        let id = w.next;
        w.next += 1;
        w.replicas.insert(
            id,
            WatchedReplica {
                pgid,
                limit,
                exceeded,
            },
        );
        id
    }

    fn unwatch(&self, id: u64) {
        let mut w = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        w.replicas.remove(&id);
    }
}

/// Every `every`, the memory of each watched replica's process tree (as the
/// resource charts count it); a replica past its limit is killed, and why
/// is kept for its pod's message.
async fn enforce(enforcer: Weak<Enforcer>) {
    let Some(every) = enforcer.upgrade().map(|e| e.every) else {
        return;
    };
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(enforcer) = enforcer.upgrade() else {
            return;
        };
        let replicas: Vec<WatchedReplica> = {
            let w = enforcer.watched.lock().unwrap_or_else(|e| e.into_inner());
            w.replicas.values().cloned().collect()
        };
        if replicas.is_empty() {
            continue;
        }
        let over = tokio::task::spawn_blocking(move || {
            let procs = processes();
            replicas
                .into_iter()
                .filter_map(|r| {
                    let used = tree_memory(r.pgid, &procs);
                    (used > r.limit).then_some((r.pgid, r.limit, used, r.exceeded))
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        for (pgid, limit, used, exceeded) in over {
            let why = format!(
                "OOMKilled: exceeded its memory limit {} (used {})",
                memory_quantity(limit),
                format_memory(used)
            );
            tracing::warn!(pgid, %why, "ending a replica past its memory limit");
            if let Ok(mut e) = exceeded.lock() {
                e.get_or_insert(why);
            }
            signal_group(i64::from(pgid), Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the cgroup v2 file system, which this project's
    /// machines (a v1/hybrid hierarchy) lack: plain files where the kernel
    /// would have its own. It checks what the executor writes, not what the
    /// kernel then does.
    fn fake_cgroupfs() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("system.slice/console.service");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(
            own.join("cgroup.controllers"),
            "cpuset cpu io memory pids\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn a_cgroup_tree_moves_the_console_aside_and_gives_each_replica_its_limits() {
        let fs = fake_cgroupfs();
        let tree = CgroupTree::prepare(fs.path(), "/system.slice/console.service").unwrap();
        let own = fs.path().join("system.slice/console.service");
        assert_eq!(
            std::fs::read_to_string(own.join("paddlecloud-console/cgroup.procs")).unwrap(),
            std::process::id().to_string()
        );
        assert_eq!(
            std::fs::read_to_string(own.join("cgroup.subtree_control")).unwrap(),
            "+memory +cpu"
        );
        let limits = Limits::Cgroup(Arc::new(tree));
        assert_eq!(limits.enforcement(), LimitEnforcement::Cgroup);
        let replica = limits.replica("7-trainer-0", 1500, 2 << 30).unwrap();
        let dir = own.join("paddlecloud-replicas/7-trainer-0");
        assert_eq!(
            std::fs::read_to_string(dir.join("memory.max")).unwrap(),
            "2147483648"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("cpu.max")).unwrap(),
            "150000 100000"
        );
        assert_eq!(replica.exceeded(), None);
        // What the kernel writes when it killed a process of the cgroup.
        std::fs::write(
            dir.join("memory.events"),
            "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
        )
        .unwrap();
        assert_eq!(
            replica.exceeded().as_deref(),
            Some("OOMKilled: exceeded its memory limit 2Gi")
        );
    }

    #[test]
    fn a_cgroup_without_the_memory_controller_is_not_used() {
        let fs = fake_cgroupfs();
        let own = fs.path().join("system.slice/console.service");
        std::fs::write(own.join("cgroup.controllers"), "cpu pids\n").unwrap();
        let err = CgroupTree::prepare(fs.path(), "/system.slice/console.service")
            .err()
            .unwrap();
        assert!(err.to_string().contains("memory"), "{err}");
    }

    #[test]
    fn a_process_joins_its_cgroup_before_it_runs() {
        let fs = fake_cgroupfs();
        let tree = CgroupTree::prepare(fs.path(), "/system.slice/console.service").unwrap();
        let limits = Limits::Cgroup(Arc::new(tree));
        let replica = limits.replica("r", 1000, 1 << 30).unwrap();
        let procs = fs
            .path()
            .join("system.slice/console.service/paddlecloud-replicas/r/cgroup.procs");
        std::fs::write(&procs, "").unwrap(); // the kernel's file is always there
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let status = runtime.block_on(async {
            let mut cmd = tokio::process::Command::new("true");
            replica.apply(&mut cmd).unwrap();
            cmd.status().await.unwrap()
        });
        assert!(status.success());
        // The child wrote "0" (itself) there, as the kernel's file takes it.
        assert_eq!(std::fs::read_to_string(procs).unwrap(), "0");
    }
    #[test]
    fn a_v1_hierarchy_gives_each_replica_memory_cpu_and_pids_limits() {
        let fs = tempfile::tempdir().unwrap();
        for dir in ["memory/box", "cpu,cpuacct", "pids"] {
            std::fs::create_dir_all(fs.path().join(dir)).unwrap();
        }
        let own = "8:pids:/\n4:memory:/box\n2:cpu,cpuacct:/\n0::/\n";
        let limits = Limits::Cgroup(Arc::new(CgroupTree::v1(fs.path(), own).unwrap()));
        assert_eq!(
            limits.enforcement(),
            LimitEnforcement::CgroupV1 { pids_max: 4096 }
        );
        let replica = limits.replica("9-trainer-0", 250, 1 << 30).unwrap();
        let read = |path: &str| std::fs::read_to_string(fs.path().join(path)).unwrap();
        let memory = "memory/box/paddlecloud-replicas/9-trainer-0";
        assert_eq!(
            read(&format!("{memory}/memory.limit_in_bytes")),
            "1073741824"
        );
        let cpu = "cpu,cpuacct/paddlecloud-replicas/9-trainer-0";
        assert_eq!(read(&format!("{cpu}/cpu.cfs_quota_us")), "25000");
        assert_eq!(read(&format!("{cpu}/cpu.cfs_period_us")), "100000");
        assert_eq!(
            read("pids/paddlecloud-replicas/9-trainer-0/pids.max"),
            "4096"
        );
        assert_eq!(replica.exceeded(), None);
        std::fs::write(
            fs.path().join(memory).join("memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
        )
        .unwrap();
        assert_eq!(
            replica.exceeded().as_deref(),
            Some("OOMKilled: exceeded its memory limit 1Gi")
        );
        // Without a memory hierarchy there is nothing to hold memory with.
        assert!(CgroupTree::v1(fs.path(), "2:cpu,cpuacct:/\n").is_err());
    }

    /// The real thing, where this machine has it (cgroup v1, as root, as
    /// this project's machines): a replica past its memory is killed by
    /// the kernel, and one that spins gets no more CPU than it asked for.
    #[test]
    fn on_a_v1_machine_the_kernel_holds_a_replica_to_its_memory_and_cpu() {
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { nix::libc::geteuid() } == 0;
        let tree = match CgroupTree::v1(Path::new("/sys/fs/cgroup"), &own) {
            Ok(tree) if root && own.lines().count() > 1 => tree,
            _ => {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPED: no writable cgroup v1 hierarchy here (not root, or cgroup v2)"
                );
                return;
            }
        };
        let limits = Limits::Cgroup(Arc::new(tree));
        let key = format!("test-{}", std::process::id());
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let run = |cpu_millis: u64, memory: u64, script: &str| {
            let replica = limits.replica(&key, cpu_millis, memory).unwrap();
            let mut cmd = tokio::process::Command::new("python3");
            cmd.args(["-c", script]);
            replica.apply(&mut cmd).unwrap();
            let out = runtime.block_on(async { cmd.output().await }).unwrap();
            (out, replica.exceeded())
        };
        // 64 MiB allowed, 256 MiB touched.
        let (out, exceeded) = run(
            1000,
            64 << 20,
            "b = bytearray(256 << 20); print('survived')",
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("survived"));
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&out.status),
            Some(9),
            "{out:?}"
        );
        assert_eq!(
            exceeded.as_deref(),
            Some("OOMKilled: exceeded its memory limit 64Mi")
        );
        // 0.2 CPU: two seconds of spinning get about 0.4 s of CPU time.
        let spin = "import os, time\nt = time.time()\nwhile time.time() - t < 2: pass\nprint(os.times().user + os.times().system)";
        let (out, _) = run(200, 256 << 20, spin);
        let used: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert!(used < 1.0, "spun {used} s of CPU in 2 s at a 0.2 CPU limit");
    }
}
