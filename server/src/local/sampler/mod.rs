//! What a local job replica's whole process tree uses, read from the kernel.
//!
//! A replica is a process group led by its root process. Its *tree* is every
//! process in that group plus every descendant by parent pid, so a child that
//! called `setsid` (and left the group) still counts. One [`snapshot`] per
//! tick walks `/proc` once, dumps the host's TCP sockets once and asks
//! `nvidia-smi` once; each replica's [`TreeSampler`] then turns the counters
//! of its own processes into a [`PodUsage`] since its previous sample.
//!
//! Processes that exit between samples: a parent's counters (`cutime` and
//! `cstime` in `/proc/<pid>/stat`, and `/proc/<pid>/io`) take in the children
//! it reaps, so a child reaped inside the tree keeps counting, short-lived
//! ones included; what was already counted of it is subtracted, so nothing
//! counts twice. A process reaped outside the tree (the root, reaped by the
//! executor; an orphan, reaped by init) loses its last interval. Every
//! per-process difference is clamped at zero, so no rate is ever negative.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use app::models::PodUsage;

mod gpu;
mod tcp;

#[cfg(test)]
use gpu::parse_gpu_tables;
pub(crate) use gpu::run_with_timeout;
use gpu::{probe_gpus, GpuTable};
use tcp::{socket_inodes, tcp_table, TcpBytes};

/// Everything one tick reads once for all replicas: every process's
/// `/proc/<pid>/stat`, the host's TCP byte counters by socket inode and the
/// processes on GPUs. Built by [`snapshot`].
#[derive(Debug, Clone)]
pub struct Procs {
    at: Instant,
    stats: HashMap<i32, Stat>,
    children: HashMap<i32, Vec<i32>>,
    /// `None` when the kernel's socket diagnostics cannot be used.
    tcp: Option<HashMap<u64, TcpBytes>>,
    /// `None` when `nvidia-smi` is absent or fails.
    gpus: Option<GpuTable>,
}

/// Reads the state of every process on the machine, once for all replicas.
///
/// Blocking (it reads `/proc`, talks netlink and may run `nvidia-smi` for up
/// to a few seconds): call it off the async runtime, e.g. in
/// `tokio::task::spawn_blocking`.
pub fn snapshot() -> Procs {
    let mut procs = processes();
    procs.tcp = match tcp_table() {
        Ok(table) => Some(table),
        Err(err) => {
            static WARNED: AtomicBool = AtomicBool::new(false);
            if !WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(error = %err, "socket diagnostics (NETLINK_SOCK_DIAG) unavailable: replicas' network use reads as 0");
            }
            None
        }
    };
    procs.gpus = probe_gpus("nvidia-smi");
    procs
}

/// The process table alone (no sockets, no GPUs): enough for
/// [`tree_memory`], and cheap enough to read every second.
pub fn processes() -> Procs {
    let at = Instant::now();
    let mut stats = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            // A process may exit between the listing and the read: skip it.
            let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if let Some(stat) = parse_stat(&text) {
                stats.insert(pid, stat);
            }
        }
    }
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (&pid, stat) in &stats {
        children.entry(stat.ppid).or_default().push(pid);
    }
    Procs {
        at,
        stats,
        children,
        tcp: None,
        gpus: None,
    }
}

/// The fields of `/proc/<pid>/stat` the sampler uses.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stat {
    ppid: i32,
    pgrp: i32,
    /// Start time, clock ticks after boot: tells a reused pid from the old one.
    start: u64,
    /// `utime + stime`, clock ticks.
    own: u64,
    /// `cutime + cstime`: the reaped children's, clock ticks.
    reaped: u64,
}

/// Parses `/proc/<pid>/stat`. The command name is in parentheses and may
/// itself hold spaces and parentheses, so fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    // fields[0] is field 3 of proc(5) (state).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Option<u64> {
        let v: i64 = fields.get(i)?.parse().ok()?;
        Some(v.max(0) as u64)
    };
    Some(Stat {
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        own: ticks(11)? + ticks(12)?,
        reaped: ticks(13)? + ticks(14)?,
        start: ticks(19)?,
    })
}

/// The pids of `root`'s tree: its process group and every descendant.
pub fn tree(root: i32, procs: &Procs) -> Vec<i32> {
    // pgrp 0 is the kernel's threads and 1 is init's: never a replica.
    if root <= 1 {
        return Vec::new();
    }
    // The root leads its group, and the kernel does not reuse a pid while a
    // group of that id lives, so matching the group by `root` stays right
    // after the root itself has gone.
    let mut todo: Vec<i32> = procs
        .stats
        .iter()
        .filter(|(pid, s)| s.pgrp == root || **pid == root)
        .map(|(pid, _)| *pid)
        .collect();
    let mut seen = HashSet::new();
    while let Some(pid) = todo.pop() {
        if seen.insert(pid) {
            if let Some(kids) = procs.children.get(&pid) {
                todo.extend(kids);
            }
        }
    }
    let mut pids: Vec<i32> = seen.into_iter().collect();
    pids.sort_unstable();
    pids
}

/// The memory of `root`'s tree now, bytes, counted as
/// [`TreeSampler::sample`] counts it.
pub fn tree_memory(root: i32, procs: &Procs) -> u64 {
    tree(root, procs).into_iter().map(read_memory).sum()
}

/// Samples one replica's tree: give it every tick's [`Procs`].
#[derive(Debug)]
pub struct TreeSampler {
    root: i32,
    /// The GPUs the executor gave the replica (none: found by its pids).
    devices: Vec<u32>,
    prev: Option<Prev>,
}

/// What the previous sample saw.
#[derive(Debug)]
struct Prev {
    at: Instant,
    procs: HashMap<i32, Seen>,
    /// The tree's TCP sockets' counters, by inode.
    sockets: HashMap<u64, TcpBytes>,
    /// Whether that sample could read socket counters at all.
    tcp_ok: bool,
}

/// One process of the tree at one sample.
#[derive(Debug, Clone, Copy)]
struct Seen {
    start: u64,
    ppid: i32,
    own: u64,
    reaped: u64,
    /// `None` when `/proc/<pid>/io` could not be read.
    io: Option<IoBytes>,
}

/// `read_bytes` and `write_bytes` of `/proc/<pid>/io`: what reached (or came
/// from) the block layer, so reads served from the page cache do not count.
#[derive(Debug, Clone, Copy, Default)]
struct IoBytes {
    read: u64,
    write: u64,
}

impl TreeSampler {
    /// A sampler for the replica whose root process (and group leader) is
    /// `root_pid`.
    pub fn new(root_pid: i32) -> Self {
        Self::with_devices(root_pid, Vec::new())
    }

    /// A sampler for a replica that holds the GPUs `devices` alone: its GPU
    /// use is theirs (whichever of its processes is on them).
    pub fn with_devices(root_pid: i32, devices: Vec<u32>) -> Self {
        TreeSampler {
            root: root_pid,
            devices,
            prev: None,
        }
    }

    /// Usage since the previous call. The first call reports CPU and every
    /// rate as 0 (there is no interval yet); memory and GPU are always the
    /// present values.
    ///
    /// `memory` is the sum of the tree's proportional set sizes (`Pss` of
    /// `/proc/<pid>/smaps_rollup`): a page shared by several processes of the
    /// tree (a forked worker's copy-on-write heap, a shared library) counts
    /// once in total rather than once per process; where `smaps_rollup` is
    /// missing, the plain resident size of `/proc/<pid>/statm` is summed.
    ///
    /// `net_rx`/`net_tx` are the TCP payload bytes of the tree's own sockets
    /// (`tcpi_bytes_received`, `tcpi_bytes_acked`); a socket closed between
    /// samples loses what it moved since the previous sample, and one that
    /// appeared counts all its bytes. UDP and Unix sockets are not counted.
    ///
    /// For a replica given GPUs by the executor, `gpu_util` and
    /// `gpu_memory` are those GPUs' utilisation and the memory of every
    /// process on them (no other replica holds them). Otherwise
    /// `gpu_memory` sums what `nvidia-smi` shows for the tree's processes,
    /// and `gpu_util` sums the utilisation of every GPU one of them is on.
    /// Both are `None` when no process of the tree is on a GPU, or the GPUs
    /// are simulated, or `nvidia-smi` is absent.
    pub fn sample(&mut self, procs: &Procs) -> PodUsage {
        let pids = tree(self.root, procs);
        let mut now = HashMap::with_capacity(pids.len());
        let mut memory = 0u64;
        let mut inodes = HashSet::new();
        for &pid in &pids {
            let stat = procs.stats[&pid];
            now.insert(
                pid,
                Seen {
                    start: stat.start,
                    ppid: stat.ppid,
                    own: stat.own,
                    reaped: stat.reaped,
                    io: read_io(pid),
                },
            );
            memory += read_memory(pid);
            socket_inodes(pid, &mut inodes);
        }
        let (gpu_util, gpu_memory) = match &procs.gpus {
            None => (None, None),
            Some(g) if self.devices.is_empty() => g.usage(&pids),
            Some(g) => g.device_usage(&self.devices),
        };
        let mut usage = PodUsage {
            memory: memory as f64,
            gpu_util,
            gpu_memory,
            ..PodUsage::default()
        };

        let prev = self.prev.as_ref();
        // New sockets count in full only if the previous sample could see
        // sockets too; else everything open is a baseline.
        let count_new = prev.is_some_and(|p| p.tcp_ok) && procs.tcp.is_some();
        let mut sockets = HashMap::new();
        let mut net = TcpBytes::default();
        for inode in inodes {
            let old = prev.and_then(|p| p.sockets.get(&inode)).copied();
            let cur = procs.tcp.as_ref().and_then(|t| t.get(&inode)).copied();
            match (cur, old) {
                (Some(cur), Some(old)) => {
                    net.sent += cur.sent.saturating_sub(old.sent);
                    net.received += cur.received.saturating_sub(old.received);
                    sockets.insert(inode, cur);
                }
                (Some(cur), None) => {
                    if count_new {
                        net.sent += cur.sent;
                        net.received += cur.received;
                    }
                    sockets.insert(inode, cur);
                }
                // Still open but not in this dump (or no dump): keep the old
                // counters, lest it count from zero when it shows again.
                (None, Some(old)) => {
                    sockets.insert(inode, old);
                }
                (None, None) => {} // not TCP
            }
        }

        if let Some(prev) = prev {
            let dt = procs.at.saturating_duration_since(prev.at).as_secs_f64();
            // Twice the same snapshot (or clocks that did not move): no rate.
            if dt > 1e-3 {
                let used = used_since(&prev.procs, &now, &procs.stats);
                usage.cpu = used.ticks as f64 / clock_ticks() / dt;
                usage.disk_read = used.io.read as f64 / dt;
                usage.disk_write = used.io.write as f64 / dt;
                usage.net_rx = net.received as f64 / dt;
                usage.net_tx = net.sent as f64 / dt;
            }
        }
        self.prev = Some(Prev {
            at: procs.at,
            procs: now,
            sockets,
            tcp_ok: procs.tcp.is_some(),
        });
        usage
    }
}

/// CPU and disk used by a tree between two samples.
#[derive(Debug, Default)]
struct Used {
    ticks: u64,
    io: IoBytes,
}

/// Sums the tree's counters' growth from `prev` to `now`; `alive` is every
/// process on the machine now.
fn used_since(
    prev: &HashMap<i32, Seen>,
    now: &HashMap<i32, Seen>,
    alive: &HashMap<i32, Stat>,
) -> Used {
    // What was already counted of each process that has gone, credited to
    // the nearest ancestor still in the tree: that is who reaped it (or whose
    // gone child reaped it and passed it up), so whose counters now hold it
    // again. If someone else reaped it, the subtraction only clamps that
    // ancestor's growth at zero: an undercount, never a double count.
    let mut already: HashMap<i32, (u64, IoBytes)> = HashMap::new();
    for (&pid, gone) in prev {
        if alive.get(&pid).is_some_and(|s| s.start == gone.start) {
            continue; // still alive (in the tree or not)
        }
        let mut up = gone.ppid;
        // Bounded: a pid cycle cannot happen, but a bad read must not loop.
        for _ in 0..64 {
            let Some(ancestor) = prev.get(&up) else { break };
            if now.get(&up).is_some_and(|n| n.start == ancestor.start) {
                let entry = already.entry(up).or_default();
                entry.0 += gone.own + gone.reaped;
                if let Some(io) = gone.io {
                    entry.1.read += io.read;
                    entry.1.write += io.write;
                }
                break;
            }
            up = ancestor.ppid;
        }
    }

    let mut used = Used::default();
    for (pid, cur) in now {
        let Some(old) = prev.get(pid).filter(|o| o.start == cur.start) else {
            // New since the previous sample: all it used, used since then.
            used.ticks += cur.own + cur.reaped;
            if let Some(io) = cur.io {
                used.io.read += io.read;
                used.io.write += io.write;
            }
            continue;
        };
        let (done, done_io) = already.get(pid).copied().unwrap_or_default();
        used.ticks += cur.own.saturating_sub(old.own);
        used.ticks += cur.reaped.saturating_sub(old.reaped).saturating_sub(done);
        // /proc/<pid>/io folds reaped children into the process's own
        // counters, so the subtraction applies to the whole growth.
        if let (Some(c), Some(o)) = (cur.io, old.io) {
            used.io.read += c.read.saturating_sub(o.read).saturating_sub(done_io.read);
            used.io.write += c
                .write
                .saturating_sub(o.write)
                .saturating_sub(done_io.write);
        }
    }
    used
}

/// Clock ticks per second, as `/proc/<pid>/stat` counts them.
fn clock_ticks() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(
        || match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
            Ok(Some(t)) if t > 0 => t as f64,
            _ => 100.0, // Linux's USER_HZ everywhere
        },
    )
}

/// Bytes per page, as `/proc/<pid>/statm` counts them.
fn page_size() -> u64 {
    static SIZE: OnceLock<u64> = OnceLock::new();
    *SIZE.get_or_init(
        || match nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
            Ok(Some(s)) if s > 0 => s as u64,
            _ => 4096,
        },
    )
}

/// `/proc/<pid>/io`, or `None` when it cannot be read (another user's
/// process, a kernel without task I/O accounting, a process just gone).
fn read_io(pid: i32) -> Option<IoBytes> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let field = |name: &str| {
        text.lines().find_map(|l| {
            l.strip_prefix(name)?
                .strip_prefix(':')?
                .trim()
                .parse::<u64>()
                .ok()
        })
    };
    Some(IoBytes {
        read: field("read_bytes")?,
        write: field("write_bytes")?,
    })
}

/// The process's proportional set size in bytes (its resident size where
/// `smaps_rollup` is missing); 0 when gone.
fn read_memory(pid: i32) -> u64 {
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
        let pss = text.lines().find_map(|l| {
            let kib = l.strip_prefix("Pss:")?.trim().strip_suffix("kB")?.trim();
            kib.parse::<u64>().ok()
        });
        if let Some(kib) = pss {
            return kib * 1024;
        }
    }
    std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page_size())
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command, Stdio};
    use std::sync::{Mutex, MutexGuard};
    use std::thread::sleep;
    use std::time::Duration;

    use nix::sys::signal::{kill, killpg, Signal};
    use nix::unistd::Pid;

    use super::*;

    const MIB: f64 = 1024.0 * 1024.0;

    /// The tests measure CPU time on a 2-core machine: one at a time, so two
    /// busy loops do not share a core. What a loop gets still depends on
    /// the machine's load, so each test compares the sampler's reading with
    /// the CPU the tree really used ([`used_by_tree`]), not with one core.
    fn serial() -> MutexGuard<'static, ()> {
        static LOCK: Mutex<()> = Mutex::new(());
        LOCK.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A process tree in its own group, killed (group and descendants that
    /// left it) when dropped, even when an assertion fails.
    struct Replica(Child);

    impl Replica {
        fn spawn(cmd: &mut Command) -> Replica {
            Replica(
                cmd.process_group(0)
                    .spawn()
                    .expect("spawning a test replica"),
            )
        }

        fn sh(script: &str) -> Replica {
            Replica::spawn(
                Command::new("sh")
                    .arg("-c")
                    .arg(script)
                    .stdin(Stdio::null()),
            )
        }

        fn pid(&self) -> i32 {
            self.0.id() as i32
        }
    }

    impl Drop for Replica {
        fn drop(&mut self) {
            let root = self.pid();
            for pid in tree(root, &processes()) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            let _ = killpg(Pid::from_raw(root), Signal::SIGKILL);
            let _ = self.0.wait();
        }
    }

    /// CPU seconds the tree under `root` has used in all, as `snap` reads
    /// it: each process's own time and what it reaped of its children. A
    /// child reaped inside the tree moves from its own count to its
    /// parent's, so the sum only grows by what the tree really ran.
    fn used_by_tree(root: i32, snap: &Procs) -> f64 {
        let ticks: u64 = (tree(root, snap).iter())
            .map(|p| snap.stats[p].own + snap.stats[p].reaped)
            .sum();
        ticks as f64 / clock_ticks()
    }

    /// Samples `root` now and again after `wait`: the second usage, the
    /// interval between the two snapshots (seconds), and the cores the tree
    /// really got meanwhile. That, not one core, is what the sampler must
    /// report: on a busy machine a busy loop gets less than a core.
    fn measure(root: i32, wait: Duration) -> (PodUsage, f64, f64) {
        let mut sampler = TreeSampler::new(root);
        let first = snapshot();
        sampler.sample(&first);
        sleep(wait);
        let second = snapshot();
        let usage = sampler.sample(&second);
        let dt = (second.at - first.at).as_secs_f64();
        let got = (used_by_tree(root, &second) - used_by_tree(root, &first)) / dt;
        (usage, dt, got)
    }

    /// Polls `ready` every 20 ms until it gives a value (20 s at most).
    fn wait_for<T>(mut ready: impl FnMut() -> Option<T>) -> T {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(value) = ready() {
                return value;
            }
            assert!(std::time::Instant::now() < deadline, "never came");
            sleep(Duration::from_millis(20));
        }
    }

    /// The sampler's reading matches the cores the loop got, which were
    /// some (it ran) and at most about one.
    fn assert_reads(usage: &PodUsage, got: f64) {
        assert!(got > 0.05 && got < 1.3, "the loop got {got:.3} cores");
        assert!(
            (usage.cpu - got).abs() < 0.15,
            "read {:.3} cores, the tree got {got:.3}: {usage:?}",
            usage.cpu
        );
    }

    #[test]
    fn a_busy_loop_uses_about_one_core() {
        let _serial = serial();
        let child = Replica::sh("while :; do :; done");
        let (usage, dt, got) = measure(child.pid(), Duration::from_millis(1500));
        eprintln!("busy loop: {:.3} cores over {dt:.3} s", usage.cpu);
        assert_reads(&usage, got);
    }

    #[test]
    fn the_first_sample_reports_no_rates_but_real_memory() {
        let _serial = serial();
        let child = Replica::sh("while :; do :; done");
        sleep(Duration::from_millis(300));
        let usage = TreeSampler::new(child.pid()).sample(&snapshot());
        eprintln!("first sample: {usage:?}");
        assert_eq!(usage.cpu, 0.0);
        assert_eq!(
            (
                usage.disk_read,
                usage.disk_write,
                usage.net_rx,
                usage.net_tx
            ),
            (0.0, 0.0, 0.0, 0.0)
        );
        assert!(usage.memory > 0.0, "{usage:?}");
    }

    #[test]
    fn memory_counts_what_a_process_touched_and_little_for_an_idle_one() {
        let _serial = serial();
        // Perl (always on Debian) fills a 200 MiB string, touching every page.
        let big = Replica::spawn(
            Command::new("perl")
                .arg("-e")
                .arg(r#"$x = "x" x (200*1024*1024); sleep 30"#)
                .stdin(Stdio::null()),
        );
        let idle = Replica::spawn(Command::new("sleep").arg("30").stdin(Stdio::null()));
        let mut sampler = TreeSampler::new(big.pid());
        let mut memory = 0.0;
        for _ in 0..100 {
            memory = sampler.sample(&processes()).memory;
            if memory >= 200.0 * MIB {
                break;
            }
            sleep(Duration::from_millis(100));
        }
        let idle_memory = TreeSampler::new(idle.pid()).sample(&processes()).memory;
        eprintln!(
            "200 MiB string: {:.1} MiB; idle sleep: {:.2} MiB",
            memory / MIB,
            idle_memory / MIB
        );
        assert!(memory >= 200.0 * MIB, "{memory}");
        assert!(
            idle_memory > 0.0 && idle_memory < 10.0 * MIB,
            "{idle_memory}"
        );
    }

    #[test]
    fn a_grandchilds_cpu_counts() {
        let _serial = serial();
        // `; true` keeps the outer shell from exec'ing the inner one, so the
        // loop runs in a grandchild of the root.
        let child = Replica::sh(r#"sh -c "while :; do :; done"; true"#);
        sleep(Duration::from_millis(200));
        let pids = tree(child.pid(), &processes());
        let (usage, dt, got) = measure(child.pid(), Duration::from_millis(1500));
        eprintln!(
            "grandchild busy loop: {:.3} cores over {dt:.3} s, tree {pids:?}",
            usage.cpu
        );
        assert!(pids.len() >= 2, "{pids:?}");
        assert_reads(&usage, got);
    }

    #[test]
    fn a_grandchild_that_left_the_group_still_counts() {
        let _serial = serial();
        let child = Replica::sh(r#"setsid sh -c "while :; do :; done"; true"#);
        sleep(Duration::from_millis(200));
        let procs = processes();
        let pids = tree(child.pid(), &procs);
        let outside: Vec<i32> = pids
            .iter()
            .copied()
            .filter(|p| procs.stats[p].pgrp != child.pid())
            .collect();
        let (usage, dt, got) = measure(child.pid(), Duration::from_millis(1500));
        eprintln!(
            "setsid grandchild busy loop: {:.3} cores over {dt:.3} s, outside the group {outside:?}",
            usage.cpu
        );
        assert_eq!(outside.len(), 1, "{pids:?}");
        assert_reads(&usage, got);
    }

    #[test]
    fn short_lived_children_reaped_inside_the_tree_count() {
        let _serial = serial();
        // Short busy children the shell waits for: each lives ~0.3 s, so most
        // are born and reaped between two samples, seen only through the
        // shell's cutime.
        let child = Replica::sh("while :; do timeout 0.3 sh -c 'while :; do :; done'; done");
        let (usage, dt, got) = measure(child.pid(), Duration::from_millis(2000));
        eprintln!(
            "reaped busy children: {:.3} cores over {dt:.3} s",
            usage.cpu
        );
        assert_reads(&usage, got);
    }

    #[test]
    fn a_child_reaped_inside_the_tree_counts_once_not_again_through_its_parent() {
        let _serial = serial();
        // A busy grandchild that dies after 1 s of CPU (its CPU-time limit,
        // however long a busy machine takes to give it that), reaped by the
        // inner shell, itself reaped by the root shell, which then idles.
        let child = Replica::sh("sh -c 'ulimit -t 1; while :; do :; done'; sleep 30");
        let mut sampler = TreeSampler::new(child.pid());
        // Part of its second is used before the first sample, so that
        // counting it again through the parents' cutime would show.
        let first = wait_for(|| {
            let now = snapshot();
            (used_by_tree(child.pid(), &now) >= 0.3).then_some(now)
        });
        sampler.sample(&first);
        let before = used_by_tree(child.pid(), &first);
        // Done when the tree has used about its second and stopped growing.
        let mut last = before;
        let busy_gone = || {
            sleep(Duration::from_millis(200));
            let now = snapshot();
            let used = used_by_tree(child.pid(), &now);
            let still = used - last < 0.01;
            last = used;
            (used >= 0.9 && still).then_some(now)
        };
        let second = wait_for(busy_gone);
        let usage = sampler.sample(&second);
        let dt = (second.at - first.at).as_secs_f64();
        let after = usage.cpu * dt;
        let all = used_by_tree(child.pid(), &second);
        eprintln!(
            "reaped child: {before:.2} s of CPU before the first sample, {after:.2} s after it, {all:.2} s in all"
        );
        // Counting the part before the first sample again through the
        // parents' cutime would make it `all` + `before`.
        assert!(
            (before + after - all).abs() < 0.15,
            "{before} + {after} vs {all}"
        );
    }

    #[test]
    fn a_tree_that_exited_reports_zeros_not_negatives() {
        let _serial = serial();
        let mut child = Replica::sh("while :; do :; done");
        let mut sampler = TreeSampler::new(child.pid());
        sampler.sample(&snapshot());
        sleep(Duration::from_millis(300));
        let _ = killpg(Pid::from_raw(child.pid()), Signal::SIGKILL);
        let _ = child.0.wait();
        let usage = sampler.sample(&snapshot());
        eprintln!("after exit: {usage:?}");
        assert_eq!(usage, PodUsage::default());
    }

    #[test]
    fn a_child_writing_50_mib_with_fsync_shows_disk_writes() {
        let _serial = serial();
        // Not tmpfs (which has no block I/O to count) when /var/tmp is a disk.
        let base = if std::path::Path::new("/var/tmp").is_dir() {
            std::path::PathBuf::from("/var/tmp")
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::tempdir_in(base).unwrap();
        let file = dir.path().join("f");
        let done = dir.path().join("done");
        // dd runs as the shell's child and is reaped by it: its bytes reach
        // the sampler through the shell's /proc/<pid>/io.
        let script = format!(
            "read go; dd if=/dev/zero of={} bs=1M count=50 conv=fsync 2>/dev/null; touch {}; sleep 30",
            file.display(),
            done.display()
        );
        let mut child = Replica::spawn(
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .stdin(Stdio::piped()),
        );
        let mut sampler = TreeSampler::new(child.pid());
        let first = snapshot();
        sampler.sample(&first);
        child.0.stdin.take().unwrap().write_all(b"go\n").unwrap();
        for _ in 0..300 {
            if done.exists() {
                break;
            }
            sleep(Duration::from_millis(100));
        }
        let second = snapshot();
        let usage = sampler.sample(&second);
        let dt = (second.at - first.at).as_secs_f64();
        let written = usage.disk_write * dt;
        eprintln!(
            "dd 50 MiB: {:.1} MiB written over {dt:.3} s ({:.1} MiB/s), read {:.1} MiB",
            written / MIB,
            usage.disk_write / MIB,
            usage.disk_read * dt / MIB
        );
        assert!(done.exists(), "dd did not finish");
        assert!(written >= 45.0 * MIB, "{usage:?}");
        assert!(written <= 55.0 * MIB, "{usage:?}");
    }

    #[test]
    fn a_child_sending_10_mib_over_tcp_shows_it_sent_and_its_peer_is_not_counted() {
        let _serial = serial();
        const SIZE: usize = 10 * 1024 * 1024;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // The child connects, waits for a byte, then sends 10 MiB and stays
        // (a closed socket's last bytes are not counted).
        let script = format!(
            r#"use IO::Socket::INET;
               my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:{port}") or die "connect: $!";
               sysread($s, my $go, 1) == 1 or die "no go";
               my $buf = "x" x (1024 * 1024);
               print $s $buf for 1..10;
               sleep 30;"#
        );
        let child = Replica::spawn(
            Command::new("perl")
                .arg("-e")
                .arg(script)
                .stdin(Stdio::null()),
        );
        let (mut peer, _) = listener.accept().unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut sampler = TreeSampler::new(child.pid());
        let first = snapshot();
        assert!(first.tcp.is_some(), "sock_diag unavailable on this machine");
        sampler.sample(&first);
        peer.write_all(b"g").unwrap();
        let mut got = vec![0u8; SIZE];
        peer.read_exact(&mut got).unwrap();
        // Let the last ACKs reach the sender's counters.
        sleep(Duration::from_millis(200));
        let second = snapshot();
        let usage = sampler.sample(&second);
        let dt = (second.at - first.at).as_secs_f64();
        let (sent, received) = (usage.net_tx * dt, usage.net_rx * dt);
        eprintln!(
            "TCP: child sent {:.2} MiB, received {received:.0} B over {dt:.3} s (peer received {:.2} MiB, not counted)",
            sent / MIB,
            SIZE as f64 / MIB
        );
        assert!((8.0 * MIB..=11.0 * MIB).contains(&sent), "{usage:?}");
        // The child received one byte; the peer's 10 MiB must not show here.
        assert!(received < 64.0 * 1024.0, "{usage:?}");
    }

    #[test]
    fn nvidia_smi_output_maps_pids_to_gpu_memory_and_utilisation() {
        let gpus = "0, GPU-aaaa, 40\n1, GPU-bbbb, 75\n2, GPU-cccc, [N/A]\n";
        let apps = "100, GPU-aaaa, 1024\n101, GPU-aaaa, 512\n102, GPU-bbbb, 2048\n200, GPU-cccc, 4096\nbogus line\n";
        let table = parse_gpu_tables(gpus, apps);
        assert_eq!(table.apps.len(), 4);
        // Two processes on GPU 0: its memory adds up, its utilisation counts once.
        assert_eq!(table.usage(&[100, 101]), (Some(40.0), Some(1536.0 * MIB)));
        assert_eq!(table.usage(&[100, 102]), (Some(115.0), Some(3072.0 * MIB)));
        // A GPU whose utilisation is not reported still has memory.
        assert_eq!(table.usage(&[200]), (Some(0.0), Some(4096.0 * MIB)));
        assert_eq!(table.usage(&[300]), (None, None));
        assert_eq!(parse_gpu_tables("", ""), GpuTable::default());
        // GPUs given to a replica: theirs, whoever of its processes is on them.
        assert_eq!(table.device_usage(&[0]), (Some(40.0), Some(1536.0 * MIB)));
        assert_eq!(
            table.device_usage(&[1, 7]),
            (Some(75.0), Some(2048.0 * MIB))
        );
        assert_eq!(table.device_usage(&[7]), (None, None), "a simulated GPU");
    }

    #[test]
    fn without_nvidia_smi_gpu_fields_are_none() {
        let _serial = serial();
        assert_eq!(probe_gpus("/nonexistent/nvidia-smi"), None);
        if probe_gpus("nvidia-smi").is_some() {
            eprintln!("nvidia-smi is installed here: only the missing-program case is checked");
            return;
        }
        let child = Replica::sh("sleep 30");
        let usage = TreeSampler::new(child.pid()).sample(&snapshot());
        assert_eq!((usage.gpu_util, usage.gpu_memory), (None, None));
    }

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "4242 (a) b (c) d) S 17 4242 4242 0 -1 4194304 100 0 0 0 150 50 7 3 20 0 1 0 98765 1000 200 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                ppid: 17,
                pgrp: 4242,
                start: 98765,
                own: 200,
                reaped: 10,
            })
        );
    }
}
