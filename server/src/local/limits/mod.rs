//! Holding replicas to what they asked for, as Kubernetes holds a pod to
//! its limits (the console sets limits equal to requests).
//!
//! Where the console may create cgroups, each replica gets one
//! ([`cgroup`]): on v2 `memory.max` (the kernel kills it at the limit, as a
//! container is OOMKilled) and `cpu.max` (it gets no more CPU time than it
//! asked for); on v1 (as on this project's machines) the same in the
//! memory, cpu and pids hierarchies. Elsewhere (not root, no writable
//! hierarchy) the executor reads each replica's memory every
//! [`CHECK_EVERY`] and kills its process group past its limit
//! ([`enforcer`]); CPU is not limited then. The resources page, the Quota
//! page and `GET /api/v1/cluster` say which one is active.

mod cgroup;
mod enforcer;

use std::ffi::CString;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::models::quantity::memory_quantity;
use app::models::LimitEnforcement;

use super::scheduler::ReplicaAsk;
use cgroup::ReplicaCgroup;
pub use cgroup::{CgroupTree, PIDS_MAX};
pub use enforcer::Enforcer;
use enforcer::Exceeded;

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
    /// A cgroup each where this process may create them (v2, else v1),
    /// else the sampler.
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
    /// As `choice` says: a cgroup each when this process may create them
    /// (v2 with the memory and cpu controllers, else v1 with the memory and
    /// cpu hierarchies), the sampler otherwise (starting its loop).
    pub fn detect(choice: LimitsChoice) -> io::Result<Self> {
        let tree = match choice {
            LimitsChoice::Sampler => Err("the sampler was asked for".to_owned()),
            LimitsChoice::Auto | LimitsChoice::Cgroup => CgroupTree::of_this_process()
                .or_else(|v2| CgroupTree::v1_of_this_process().map_err(|v1| format!("{v2}; {v1}"))),
        };
        match (tree, choice) {
            (Ok(tree), _) => {
                tracing::info!(?tree, "replica limits: a cgroup each");
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
            Self::Cgroup(tree) if tree.is_v1() => LimitEnforcement::CgroupV1 {
                pids_max: PIDS_MAX as u32,
            },
            Self::Cgroup(_) => LimitEnforcement::Cgroup,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// The one console folder under `replicas` (`console-<pid>-<n>`).
    fn console_folder(replicas: &Path) -> PathBuf {
        let mut found: Vec<PathBuf> = std::fs::read_dir(replicas)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with("console-")
            })
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        found.pop().unwrap()
    }

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
        let dir = console_folder(&own.join("paddlecloud-replicas")).join("7-trainer-0");
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
        let replicas = fs
            .path()
            .join("system.slice/console.service/paddlecloud-replicas");
        let procs = console_folder(&replicas).join("r/cgroup.procs");
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
        let folder = |hierarchy: &str| {
            console_folder(&fs.path().join(hierarchy).join("paddlecloud-replicas"))
                .join("9-trainer-0")
        };
        let read = |path: PathBuf| std::fs::read_to_string(path).unwrap();
        let memory = folder("memory/box");
        assert_eq!(read(memory.join("memory.limit_in_bytes")), "1073741824");
        let cpu = folder("cpu,cpuacct");
        assert_eq!(read(cpu.join("cpu.cfs_quota_us")), "25000");
        assert_eq!(read(cpu.join("cpu.cfs_period_us")), "100000");
        assert_eq!(read(folder("pids").join("pids.max")), "4096");
        assert_eq!(replica.exceeded(), None);
        // A process that asked for nothing is not held at all.
        let _unasked = limits.replica("serving-1", 0, u64::MAX).unwrap();
        let unasked = |h: &str| folder(h).with_file_name("serving-1");
        assert_eq!(read(unasked("cpu,cpuacct").join("cpu.cfs_quota_us")), "-1");
        assert_eq!(
            read(unasked("memory/box").join("memory.limit_in_bytes")),
            "-1"
        );
        std::fs::write(
            memory.join("memory.oom_control"),
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

    #[test]
    fn each_console_keeps_its_replicas_cgroups_apart_and_removes_what_a_gone_one_left() {
        let fs = tempfile::tempdir().unwrap();
        let replicas = fs.path().join("memory/paddlecloud-replicas");
        // Left by a console whose process is gone (no pid is that large),
        // and by one from before consoles had folders.
        std::fs::create_dir_all(replicas.join("console-4194305-0/job-7-trainer-0")).unwrap();
        std::fs::create_dir_all(replicas.join("job-3-trainer-0")).unwrap();
        std::fs::create_dir_all(fs.path().join("cpu")).unwrap();
        let own = "4:memory:/\n2:cpu:/\n";
        let one = CgroupTree::v1(fs.path(), own).unwrap();
        assert!(!replicas.join("console-4194305-0").exists());
        assert!(!replicas.join("job-3-trainer-0").exists());
        let two = CgroupTree::v1(fs.path(), own).unwrap();
        let a = one.replica("job-7-trainer-0", 100, 1 << 20).unwrap();
        let b = two.replica("job-7-trainer-0", 200, 2 << 20).unwrap();
        assert_ne!(a.memory, b.memory);
        let limit = |c: &ReplicaCgroup| {
            std::fs::read_to_string(c.memory.join("memory.limit_in_bytes")).unwrap()
        };
        assert_eq!((limit(&a), limit(&b)), ("1048576".into(), "2097152".into()));
        let ours = |dir: &Path| {
            dir.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(&format!("console-{}-", std::process::id()))
        };
        assert!(ours(a.memory.parent().unwrap()) && ours(b.memory.parent().unwrap()));
    }

    /// The real thing, where this machine has it (cgroup v1, as root, as
    /// this project's machines): a replica past its memory is killed by
    /// the kernel, and one that spins gets no more CPU than it asked for.
    #[test]
    fn on_a_v1_machine_the_kernel_holds_a_replica_to_its_memory_and_cpu() {
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { nix::libc::geteuid() } == 0;
        if !root || own.lines().count() < 2 {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: no writable cgroup v1 hierarchy here (not root, or cgroup v2)"
            );
            return;
        }
        let limits = Limits::detect(LimitsChoice::Auto).unwrap();
        // `auto` takes v1 where v2 is not there.
        assert_eq!(
            limits.enforcement(),
            LimitEnforcement::CgroupV1 { pids_max: 4096 }
        );
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
