//! The queue: who waits for room, in which order, for what, and behind
//! whose work.
//!
//! Work is taken as Kueue takes it from a cohort of cluster queues (one
//! per account): inside an account, higher priority first and then
//! earlier; between accounts, next is the account holding the smallest
//! share of the machine, by its dominant resource (the resource it holds
//! the largest fraction of, as in Dominant Resource Fairness), so an
//! account cannot push another out by submitting more, or by marking all
//! of its jobs high. Nothing overtakes the head: the first in that order
//! that does not fit waits, and everything behind it waits too, so a large
//! job is never starved by a stream of small ones.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::jobs::ResourceTotals;
use super::priority::Priority;

/// What kind of work waits or holds room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WorkKind {
    /// A job (all its replicas at once).
    Job,
    /// One replica of a serving instance.
    ServingReplica,
    /// A notebook's server.
    Notebook,
}

impl WorkKind {
    /// In words: "job", "serving replica", "notebook".
    pub fn noun(self) -> &'static str {
        match self {
            Self::Job => "job",
            Self::ServingReplica => "serving replica",
            Self::Notebook => "notebook",
        }
    }
}

/// Whose work it is. The name is shown only to members of its account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct WorkRef {
    /// A job, a serving replica or a notebook.
    pub kind: WorkKind,
    /// The account it belongs to.
    pub account: String,
    /// Its name (`None`: another account's, not yours to see).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl WorkRef {
    /// "job train-3" or "a job of account acme".
    pub fn describe(&self) -> String {
        match &self.name {
            Some(name) => format!("{} {name}", self.kind.noun()),
            None => format!("a {} of account {}", self.kind.noun(), self.account),
        }
    }
}

/// Work that holds room now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Holding {
    /// What it is.
    pub work: WorkRef,
    /// Its priority.
    pub priority: Priority,
    /// What it holds.
    pub holds: ResourceTotals,
    /// Since when, Unix milliseconds.
    pub since: i64,
    /// When its time limit ends it, Unix milliseconds (none: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ends_by: Option<i64>,
    /// Preempted: it is giving its room back to higher-priority work of its
    /// account, and queues again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preempted: bool,
}

/// Work that waits for room.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Waiting {
    /// 1 for the next to start.
    pub position: u32,
    /// What it is.
    pub work: WorkRef,
    /// Its priority.
    pub priority: Priority,
    /// What it asks for (all its replicas).
    pub asks: ResourceTotals,
    /// Since when it waits, Unix milliseconds.
    pub since: i64,
    /// Why it waits, as its page says ("waiting for 2 GPUs; 1 job ahead").
    pub reason: String,
    /// The running work holding what it lacks (none: it waits for its turn).
    pub held_by: Vec<WorkRef>,
    /// When it starts at the latest, Unix milliseconds, if everything it
    /// waits behind has a time limit (see [`estimate_starts`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_by: Option<i64>,
}

/// The queue as one account's member sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct QueueView {
    /// Where jobs run.
    pub cluster: String,
    /// Whether the console orders this queue (the local executor); on
    /// Kubernetes the cluster's scheduler does, and the order shown is its
    /// default one (priority class, then age) for the console's jobs.
    pub ordered_here: bool,
    /// What waits, in the order it will be taken.
    pub waiting: Vec<Waiting>,
    /// What holds room now.
    pub running: Vec<Holding>,
    /// What the machine has room for in all (`None` where unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<ResourceTotals>,
    /// Each account's share of the machine now (its dominant resource's
    /// fraction, 0 to 1), by account, largest first.
    pub shares: Vec<AccountShare>,
}

/// How much of the machine an account holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AccountShare {
    /// The account.
    pub account: String,
    /// Its dominant resource's fraction of the machine, 0 to 1.
    pub share: f64,
}

impl Eq for AccountShare {}

/// One waiting request, as the order needs it.
#[derive(Debug, Clone, Copy)]
pub struct QueueKey<'a> {
    /// Its account.
    pub account: &'a str,
    /// Its priority.
    pub priority: Priority,
    /// When it came, as a sequence number (smaller: earlier).
    pub seq: u64,
    /// What it asks for.
    pub asks: ResourceTotals,
}

/// The fraction of `capacity` that `held` is, by its dominant resource
/// (resources the machine has none of do not count).
pub fn dominant_share(held: ResourceTotals, capacity: ResourceTotals) -> f64 {
    let part = |h: u64, c: u64| if c == 0 { 0.0 } else { h as f64 / c as f64 };
    part(held.cpu_millis, capacity.cpu_millis)
        .max(part(held.memory_bytes, capacity.memory_bytes))
        .max(part(held.gpu, capacity.gpu))
}

/// The order in which `waiting` is taken (indices into it), given what each
/// account holds now: see the module's documentation. Each account's share
/// grows by what it is given as the order is made, as it would as its work
/// starts; accounts tied on share go by their heads' priority, then age.
pub fn fair_order(
    waiting: &[QueueKey<'_>],
    held: &HashMap<&str, ResourceTotals>,
    capacity: ResourceTotals,
) -> Vec<usize> {
    // Each account's own line: higher priority first, then earlier.
    let mut lines: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, w) in waiting.iter().enumerate() {
        lines.entry(w.account).or_default().push(i);
    }
    for line in lines.values_mut() {
        line.sort_by_key(|&i| (std::cmp::Reverse(waiting[i].priority), waiting[i].seq));
        line.reverse(); // popped from the end
    }
    let mut holds: HashMap<&str, ResourceTotals> = held.clone();
    let mut order = Vec::with_capacity(waiting.len());
    loop {
        let next = lines
            .iter()
            .filter_map(|(account, line)| line.last().map(|&head| (*account, head)))
            .min_by(|(a, x), (b, y)| {
                let share = |acc: &str| {
                    dominant_share(holds.get(acc).copied().unwrap_or_default(), capacity)
                };
                share(a)
                    .total_cmp(&share(b))
                    .then(waiting[*y].priority.cmp(&waiting[*x].priority))
                    .then(waiting[*x].seq.cmp(&waiting[*y].seq))
            });
        let Some((account, head)) = next else {
            break;
        };
        if let Some(line) = lines.get_mut(account) {
            line.pop();
        }
        let h = holds.entry(account).or_default();
        *h = h.add_times(waiting[head].asks, 1);
        order.push(head);
    }
    order
}

/// Room that comes back: `totals` at `at` (Unix ms), or never known
/// (`None`: work without a time limit).
#[derive(Debug, Clone, Copy)]
pub struct Release {
    /// When, at the latest.
    pub at: Option<i64>,
    /// What.
    pub totals: ResourceTotals,
}

/// When each of `waiting` (in the order it will be taken, each with what it
/// asks and its time limit in ms) starts at the latest: the running work's
/// room comes back by its time limit (`running`), and what starts before it
/// holds its own until its own limit. Nothing overtakes, so the first that
/// would wait on room with no known end, and everything behind it, get
/// `None`. An upper bound: work that ends early brings the start forward.
pub fn estimate_starts(
    now: i64,
    free: ResourceTotals,
    running: &[Release],
    waiting: &[(ResourceTotals, Option<i64>)],
) -> Vec<Option<i64>> {
    // Releases still to come, soonest last (popped); unknown ends sort as
    // never.
    let mut releases: Vec<Release> = running.to_vec();
    let key = |r: &Release| std::cmp::Reverse(r.at.unwrap_or(i64::MAX));
    releases.sort_by_key(key);
    let (mut t, mut free) = (now, free);
    let mut out = Vec::with_capacity(waiting.len());
    for (asks, limit) in waiting {
        while !asks.fits_in(&free) {
            match releases.pop() {
                Some(Release {
                    at: Some(at),
                    totals,
                }) => {
                    t = t.max(at);
                    free = free.add_times(totals, 1);
                }
                // Behind room with no known end: no estimate from here on.
                _ => {
                    out.resize(waiting.len(), None);
                    return out;
                }
            }
        }
        out.push(Some(t));
        free = free.minus(*asks);
        let at = limit.map(|ms| t.saturating_add(ms));
        releases.push(Release { at, totals: *asks });
        releases.sort_by_key(key);
    }
    out
}

/// Why a running job must give its room back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preempted {
    /// What takes its room (of the same account).
    pub by: String,
    /// What it is.
    pub kind: WorkKind,
    /// Its priority.
    pub priority: Priority,
}

impl Preempted {
    /// As the job's status and its replicas say it.
    pub fn words(&self) -> String {
        format!(
            "Preempted by {} {} ({} priority)",
            self.kind.noun(),
            self.by,
            self.priority.as_str()
        )
    }
}

/// Running work preemption may stop: a job of the waiting request's own
/// account.
#[derive(Debug, Clone, Copy)]
pub struct Preemptible {
    /// Its priority.
    pub priority: Priority,
    /// When it started, Unix ms.
    pub since: i64,
    /// What it holds.
    pub holds: ResourceTotals,
    /// Already told to give its room back (its room is on its way).
    pub giving_back: bool,
}

/// Which of `running` (indices) to preempt so that a request of `priority`
/// asking `need` fits, with `free` free now: jobs of lower priority, lowest
/// first, then the most recently started (it loses the least work), as few
/// as make room together with what is already on its way back. Empty when
/// nothing need be stopped, and when even all of them would not make room:
/// no work is stopped in vain. The rule both executors follow.
pub fn preemption_victims(
    need: ResourceTotals,
    priority: Priority,
    free: ResourceTotals,
    running: &[Preemptible],
) -> Vec<usize> {
    let mut coming = running
        .iter()
        .filter(|r| r.giving_back)
        .fold(free, |t, r| t.add_times(r.holds, 1));
    let mut candidates: Vec<usize> = (0..running.len())
        .filter(|&i| !running[i].giving_back && running[i].priority < priority)
        .collect();
    candidates.sort_by_key(|&i| {
        (
            running[i].priority,
            std::cmp::Reverse(running[i].since),
            std::cmp::Reverse(i),
        )
    });
    let mut chosen = Vec::new();
    for i in candidates {
        if need.fits_in(&coming) {
            break;
        }
        coming = coming.add_times(running[i].holds, 1);
        chosen.push(i);
    }
    if need.fits_in(&coming) {
        chosen
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(cpu: u64) -> ResourceTotals {
        ResourceTotals {
            cpu_millis: cpu * 1000,
            memory_bytes: cpu << 30,
            gpu: 0,
        }
    }

    fn key(account: &str, priority: Priority, seq: u64, cpu: u64) -> QueueKey<'_> {
        QueueKey {
            account,
            priority,
            seq,
            asks: ask(cpu),
        }
    }

    #[test]
    fn inside_an_account_high_goes_before_normal_before_low_and_then_the_earlier() {
        use Priority::*;
        let waiting = [
            key("a", Low, 0, 1),
            key("a", Normal, 1, 1),
            key("a", High, 2, 1),
            key("a", Normal, 3, 1),
        ];
        let order = fair_order(&waiting, &HashMap::new(), ask(8));
        assert_eq!(order, vec![2, 1, 3, 0]);
    }

    #[test]
    fn between_accounts_the_one_holding_less_goes_next_whatever_the_other_marks_high() {
        use Priority::*;
        // `a` already holds half the machine and asks more, all high; `b`
        // holds nothing and came later.
        let waiting = [
            key("a", High, 0, 2),
            key("a", High, 1, 2),
            key("b", Low, 2, 2),
            key("b", Low, 3, 2),
        ];
        let held = HashMap::from([("a", ask(4))]);
        let order = fair_order(&waiting, &held, ask(8));
        // b holds 0, then 1/4: both of b's go first; then a's.
        assert_eq!(order, vec![2, 3, 0, 1]);
        // Nobody holding anything: they alternate, a tie going to the
        // higher priority.
        let order = fair_order(&waiting, &HashMap::new(), ask(8));
        assert_eq!(order, vec![0, 2, 1, 3]);
    }

    #[test]
    fn a_start_is_estimated_from_the_time_limits_of_what_it_waits_behind() {
        let hour = 3_600_000;
        let cpu = |n: u64| ResourceTotals {
            cpu_millis: n * 1000,
            ..Default::default()
        };
        // A 4-CPU machine, full: 2 CPUs end within an hour, 2 within three.
        let running = [
            Release {
                at: Some(3 * hour),
                totals: cpu(2),
            },
            Release {
                at: Some(hour),
                totals: cpu(2),
            },
        ];
        // 2 CPUs for 30 minutes; then 3 CPUs; then 1 CPU with no limit;
        // then 4 CPUs.
        let waiting = [
            (cpu(2), Some(hour / 2)),
            (cpu(3), None),
            (cpu(1), None),
            (cpu(4), Some(hour)),
        ];
        let got = estimate_starts(0, cpu(0), &running, &waiting);
        // The first when the one-hour one ends; the second needs 3: when
        // the first ends (1.5 h) it has 2, at 3 h 4; the third fits beside
        // it at once (nothing overtakes, so no earlier); the fourth needs
        // the whole machine, held by work with no end.
        assert_eq!(got, vec![Some(hour), Some(3 * hour), Some(3 * hour), None]);
        // Running work without a limit: no estimate for what waits on it.
        let unknown = [Release {
            at: None,
            totals: cpu(4),
        }];
        assert_eq!(
            estimate_starts(0, cpu(0), &unknown, &waiting[..1]),
            vec![None]
        );
        // Room free now: now.
        assert_eq!(
            estimate_starts(5, cpu(4), &[], &waiting[..1]),
            vec![Some(5)]
        );
    }

    #[test]
    fn the_share_is_the_resource_an_account_holds_most_of() {
        let capacity = ResourceTotals {
            cpu_millis: 8000,
            memory_bytes: 32 << 30,
            gpu: 4,
        };
        let held = ResourceTotals {
            cpu_millis: 1000,
            memory_bytes: 4 << 30,
            gpu: 2,
        };
        assert_eq!(dominant_share(held, capacity), 0.5);
        // A machine without GPUs: GPUs do not count.
        let none = ResourceTotals { gpu: 0, ..capacity };
        assert_eq!(dominant_share(held, none), 0.125);
    }

    #[test]
    fn preemption_stops_the_lowest_and_newest_first_only_what_makes_room_and_nothing_in_vain() {
        let cpus = |n: u64| ResourceTotals {
            cpu_millis: n * 1000,
            ..Default::default()
        };
        let job = |priority, since, n| Preemptible {
            priority,
            since,
            holds: cpus(n),
            giving_back: false,
        };
        let running = [
            job(Priority::Low, 1, 2),
            job(Priority::Normal, 2, 2),
            job(Priority::Low, 3, 2),
            job(Priority::High, 4, 2),
        ];
        // One job's room is enough: the newest low one.
        assert_eq!(
            preemption_victims(cpus(2), Priority::High, cpus(0), &running),
            [2]
        );
        // Both lows before the normal one.
        assert_eq!(
            preemption_victims(cpus(4), Priority::High, cpus(0), &running),
            [2, 0]
        );
        assert_eq!(
            preemption_victims(cpus(6), Priority::High, cpus(0), &running),
            [2, 0, 1]
        );
        // Never a job of the same or higher priority: 8 CPUs cannot be made.
        assert!(preemption_victims(cpus(8), Priority::High, cpus(0), &running).is_empty());
        // A normal request only stops lows.
        assert!(preemption_victims(cpus(6), Priority::Normal, cpus(0), &running).is_empty());
        // What is free, or already on its way back, counts.
        assert!(preemption_victims(cpus(2), Priority::High, cpus(2), &running).is_empty());
        let mut giving = running;
        giving[2].giving_back = true;
        assert!(preemption_victims(cpus(2), Priority::High, cpus(0), &giving).is_empty());
        assert_eq!(
            preemption_victims(cpus(4), Priority::High, cpus(0), &giving),
            [0]
        );
    }
}
