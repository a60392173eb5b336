//! The queue as one account's member sees it, built the same way for both
//! executors from what holds room and what waits (in the order it will be
//! taken): names only for the viewer's own account, whose running work
//! holds what each waiting request lacks, estimated starts
//! ([`estimate_starts`]) and each account's share.

use std::collections::HashMap;

use super::jobs::ResourceTotals;
use super::priority::Priority;
use super::queue::{
    dominant_share, estimate_starts, AccountShare, Holding, QueueView, Release, Waiting, WorkKind,
    WorkRef,
};

/// Work that holds room.
#[derive(Debug, Clone)]
pub struct Holder {
    /// What it is.
    pub kind: WorkKind,
    /// Its account.
    pub account: String,
    /// Its name.
    pub name: String,
    /// Its priority.
    pub priority: Priority,
    /// What it holds.
    pub holds: ResourceTotals,
    /// Since when, Unix ms.
    pub since: i64,
    /// Its time limit, ms (none: no limit).
    pub max_runtime_ms: Option<i64>,
    /// Being preempted.
    pub preempted: bool,
}

/// Work that waits for room.
#[derive(Debug, Clone)]
pub struct Wanting {
    /// What it is.
    pub kind: WorkKind,
    /// Its account.
    pub account: String,
    /// Its name.
    pub name: String,
    /// Its priority.
    pub priority: Priority,
    /// What it asks for.
    pub asks: ResourceTotals,
    /// Since when it waits, Unix ms.
    pub since: i64,
    /// Why it waits, as its page says.
    pub reason: String,
    /// Its time limit once running, ms (none: no limit).
    pub max_runtime_ms: Option<i64>,
}

/// What a queue view is made from.
#[derive(Debug, Clone)]
pub struct QueueFacts {
    /// Where the work runs.
    pub cluster: String,
    /// Whether the console orders the queue (see [`QueueView::ordered_here`]).
    pub ordered_here: bool,
    /// Now, Unix ms.
    pub now: i64,
    /// What the machine or cluster has room for in all.
    pub capacity: ResourceTotals,
    /// What is free now.
    pub free: ResourceTotals,
    /// What holds room.
    pub running: Vec<Holder>,
    /// What waits, in the order it will be taken.
    pub waiting: Vec<Wanting>,
}

impl QueueFacts {
    /// The queue as a member of `viewer` sees it.
    pub fn view_for(&self, viewer: &str) -> QueueView {
        let work = |kind: WorkKind, account: &str, name: &str| WorkRef {
            kind,
            account: account.to_owned(),
            name: (account == viewer).then(|| name.to_owned()),
        };
        let mut running: Vec<&Holder> = self.running.iter().collect();
        running.sort_by_key(|r| r.since);
        let ends_by = |r: &Holder| r.max_runtime_ms.map(|ms| r.since.saturating_add(ms));
        let releases: Vec<Release> = running
            .iter()
            .map(|r| Release {
                at: ends_by(r),
                totals: r.holds,
            })
            .collect();
        let asks: Vec<(ResourceTotals, Option<i64>)> = self
            .waiting
            .iter()
            .map(|w| (w.asks, w.max_runtime_ms))
            .collect();
        let starts = estimate_starts(self.now, self.free, &releases, &asks);
        let free = self.free;
        let waiting = self
            .waiting
            .iter()
            .enumerate()
            .map(|(i, w)| {
                // Who holds what it lacks (nobody, if it only waits its turn).
                let (cpu, memory, gpu) = (
                    w.asks.cpu_millis > free.cpu_millis,
                    w.asks.memory_bytes > free.memory_bytes,
                    w.asks.gpu > free.gpu,
                );
                let held_by = running
                    .iter()
                    .filter(|r| {
                        (cpu && r.holds.cpu_millis > 0)
                            || (memory && r.holds.memory_bytes > 0)
                            || (gpu && r.holds.gpu > 0)
                    })
                    .map(|r| work(r.kind, &r.account, &r.name))
                    .collect();
                Waiting {
                    position: i as u32 + 1,
                    work: work(w.kind, &w.account, &w.name),
                    priority: w.priority,
                    asks: w.asks,
                    since: w.since,
                    reason: w.reason.clone(),
                    held_by,
                    starts_by: starts.get(i).copied().flatten(),
                }
            })
            .collect();
        let mut held: HashMap<&str, ResourceTotals> = HashMap::new();
        for r in &running {
            let h = held.entry(r.account.as_str()).or_default();
            *h = h.add_times(r.holds, 1);
        }
        let mut shares: Vec<AccountShare> = held
            .into_iter()
            .map(|(account, held)| AccountShare {
                account: account.to_owned(),
                share: dominant_share(held, self.capacity),
            })
            .collect();
        shares.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.account.cmp(&b.account)));
        QueueView {
            cluster: self.cluster.clone(),
            ordered_here: self.ordered_here,
            waiting,
            running: running
                .iter()
                .map(|r| Holding {
                    work: work(r.kind, &r.account, &r.name),
                    priority: r.priority,
                    holds: r.holds,
                    since: r.since,
                    ends_by: ends_by(r),
                    preempted: r.preempted,
                })
                .collect(),
            capacity: Some(self.capacity),
            shares,
        }
    }
}
