//! Where no cgroup can be made: the executor reads each replica's memory
//! every [`super::CHECK_EVERY`] and kills its process group past its limit
//! (CPU is not limited then).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use app::models::quantity::{format_memory, memory_quantity};
use nix::sys::signal::Signal;

use crate::local::process::signal_group;
use crate::local::sampler::{processes, tree_memory};

/// The sampler-enforced fallback: one loop reads every watched replica's
/// memory and kills those past their limits.
pub struct Enforcer {
    pub(super) every: Duration,
    watched: Mutex<Watched>,
}

/// Why a replica was ended for its memory, once it was.
pub(super) type Exceeded = Arc<Mutex<Option<String>>>;

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
    pub(super) fn start(every: Duration) -> Arc<Self> {
        let enforcer = Arc::new(Self {
            every,
            watched: Mutex::new(Watched::default()),
        });
        tokio::spawn(enforce(Arc::downgrade(&enforcer)));
        enforcer
    }

    pub(super) fn watch(&self, pgid: i32, limit: u64, exceeded: Exceeded) -> u64 {
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

    pub(super) fn unwatch(&self, id: u64) {
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
