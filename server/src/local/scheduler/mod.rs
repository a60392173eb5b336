//! The local executor's scheduler: what the machine can hold (CPU, memory,
//! GPUs), who holds it, and who waits.
//!
//! A job asks for all its replicas at once (they start together or not at
//! all: a parameter-server job that starts half its replicas deadlocks); a
//! serving replica or a notebook asks for itself. Requests are taken in the
//! order [`app::models::queue::fair_order`] gives: inside an account by
//! priority, then age; between accounts, the one holding the smallest share
//! of the machine first. The first in that order that does not fit waits
//! for room, and everything behind it waits too, however small. Nothing
//! overtakes, so a large job is never starved by a stream of small ones;
//! the price is that a small job may wait behind a large one while some
//! room stands idle. GPUs are handed out by index, lowest free first, and
//! never to two running replicas at once.
//!
//! With preemption on (`--preemption-grace`), a head of the queue that
//! does not fit takes room from its own account's running jobs of lower
//! priority (lowest first, then the most recently started), and only when
//! stopping them makes room: each is told through its [`Grant`], stops
//! within the grace period, and queues again. Priority is an account's own
//! ordering (each owner decides who may use `high`), so preemption never
//! crosses accounts; between accounts, fair share decides.

mod words;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use app::models::quantity::format_memory;
use app::models::queue::{fair_order, preemption_victims, Preempted, QueueKey};
use app::models::queue_view::{Holder, QueueFacts, Wanting};
use app::models::{Preemptible, Priority, QueueView, ResourceTotals, WorkKind};
use tokio::sync::{oneshot, watch};

use words::{ahead_text, cpus, gpus, lacking};

use super::capacity::Capacity;

/// What one replica asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaAsk {
    /// Millicores.
    pub cpu_millis: u64,
    /// Bytes.
    pub memory_bytes: u64,
    /// Whole GPUs.
    pub gpus: u32,
}

impl From<ResourceTotals> for ReplicaAsk {
    fn from(t: ResourceTotals) -> Self {
        Self {
            cpu_millis: t.cpu_millis,
            memory_bytes: t.memory_bytes,
            gpus: u32::try_from(t.gpu).unwrap_or(u32::MAX),
        }
    }
}

/// Who asks: queue messages count what is ahead by kind (in the order of
/// [`WorkKind`]'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker {
    /// A job (all its replicas).
    Job,
    /// One replica of a serving instance.
    ServingReplica,
    /// A notebook's server.
    Notebook,
}

impl Asker {
    /// As the queue page names it.
    pub fn kind(self) -> WorkKind {
        match self {
            Self::Job => WorkKind::Job,
            Self::ServingReplica => WorkKind::ServingReplica,
            Self::Notebook => WorkKind::Notebook,
        }
    }
}

/// Whose request it is: fair share counts by account, priority orders an
/// account's own, and the queue page names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owner {
    /// The account.
    pub account: String,
    /// The job, serving instance or notebook.
    pub name: String,
    /// Its priority in the account.
    pub priority: Priority,
    /// Its time limit once running, milliseconds (none: no limit).
    pub max_runtime_ms: Option<i64>,
}

/// A request: replicas that start together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// Who asks.
    pub asker: Asker,
    /// Each replica's needs, in the order its GPUs are handed back.
    pub replicas: Vec<ReplicaAsk>,
    /// Whose it is (set by the workload before it joins the queue).
    pub owner: Owner,
}

impl Ask {
    /// The same request, as `account`'s `name` (its priority kept).
    pub fn owned_by(mut self, account: &str, name: &str) -> Self {
        self.owner.account = account.to_owned();
        self.owner.name = name.to_owned();
        self
    }

    /// The replicas' needs together.
    pub fn totals(&self) -> ResourceTotals {
        self.replicas
            .iter()
            .fold(ResourceTotals::default(), |t, r| ResourceTotals {
                cpu_millis: t.cpu_millis + r.cpu_millis,
                memory_bytes: t.memory_bytes + r.memory_bytes,
                gpu: t.gpu + u64::from(r.gpus),
            })
    }
}

/// What cannot fit on this machine even when it is idle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeverFits {
    /// `cpu`, `memory` or `gpu`.
    pub resource: &'static str,
    /// What the request asks for, in words.
    pub asked: String,
    /// What the machine offers, in words.
    pub capacity: String,
}

/// What a granted request gets: each replica's GPUs, and the channel that
/// tells it to give the room back.
type Granted = (Vec<Vec<u32>>, watch::Receiver<Option<Preempted>>);

/// The machine's room and its queue.
pub struct LocalScheduler {
    capacity: Capacity,
    /// What a preempted job gets between SIGTERM and SIGKILL (`None`:
    /// nothing is preempted).
    preemption: Option<std::time::Duration>,
    state: Mutex<State>,
}

struct State {
    next_id: u64,
    /// Held by granted requests.
    held: ResourceTotals,
    /// GPU indices no running replica holds.
    free_gpus: BTreeSet<u32>,
    queue: VecDeque<Waiter>,
    /// Granted requests, by id: what each holds and whose it is.
    running: HashMap<u64, Running>,
}

struct Waiter {
    id: u64,
    ask: Ask,
    /// When it joined, Unix milliseconds.
    since: i64,
    /// Its place among its account's requests of the same priority: its
    /// id, or the first ticket's for a job queued again after preemption.
    seq: u64,
    granted: oneshot::Sender<Granted>,
    reason: watch::Sender<String>,
}

/// A granted request, for fair share and the queue page.
struct Running {
    owner: Owner,
    asker: Asker,
    totals: ResourceTotals,
    since: i64,
    /// Tells its holder to give the room back; `Some` once sent.
    preempt: watch::Sender<Option<Preempted>>,
}

/// A request in the queue. Dropping it (a stop, a delete) leaves the queue;
/// [`Ticket::granted`] waits for its turn.
pub struct Ticket {
    scheduler: Arc<LocalScheduler>,
    id: u64,
    seq: u64,
    totals: ResourceTotals,
    granted: oneshot::Receiver<Granted>,
    /// Why it waits, as the job table shows it; updated as the queue moves.
    pub reason: watch::Receiver<String>,
    taken: bool,
}

/// Room held by running replicas, given back when dropped.
pub struct Grant {
    scheduler: Arc<LocalScheduler>,
    id: u64,
    totals: ResourceTotals,
    /// Each replica's GPU indices, in the order of the ask.
    pub gpus: Vec<Vec<u32>>,
    /// Its place in the order, to queue again with after preemption.
    pub seq: u64,
    /// Says when the room must be given back (preemption).
    pub preempted: watch::Receiver<Option<Preempted>>,
}

impl LocalScheduler {
    /// A scheduler for a machine of `capacity` that preempts nothing.
    pub fn new(capacity: Capacity) -> Arc<Self> {
        Self::preempting(capacity, None)
    }

    /// A scheduler for a machine of `capacity` that preempts lower-priority
    /// jobs with `grace` between SIGTERM and SIGKILL (`None`: never).
    pub fn preempting(capacity: Capacity, grace: Option<std::time::Duration>) -> Arc<Self> {
        let free_gpus = capacity.gpus.iter().map(|g| g.index).collect();
        Arc::new(Self {
            capacity,
            preemption: grace,
            state: Mutex::new(State {
                next_id: 0,
                held: ResourceTotals::default(),
                free_gpus,
                queue: VecDeque::new(),
                running: HashMap::new(),
            }),
        })
    }

    /// The machine's room.
    pub fn capacity(&self) -> &Capacity {
        &self.capacity
    }

    /// What a preempted job gets between SIGTERM and SIGKILL (`None`:
    /// preemption is off).
    pub fn preemption_grace(&self) -> Option<std::time::Duration> {
        self.preemption
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why `ask` cannot run here even on an idle machine, if it cannot.
    pub fn never_fits(&self, ask: &Ask) -> Option<NeverFits> {
        let need = ask.totals();
        let cap = self.capacity.totals();
        if need.cpu_millis > cap.cpu_millis {
            return Some(NeverFits {
                resource: "cpu",
                asked: cpus(need.cpu_millis),
                capacity: cpus(cap.cpu_millis),
            });
        }
        if need.memory_bytes > cap.memory_bytes {
            return Some(NeverFits {
                resource: "memory",
                asked: format_memory(need.memory_bytes),
                capacity: format_memory(cap.memory_bytes),
            });
        }
        if need.gpu > cap.gpu {
            return Some(NeverFits {
                resource: "gpu",
                asked: gpus(need.gpu),
                capacity: gpus(cap.gpu),
            });
        }
        None
    }

    /// Joins the queue (at its end). The caller checked [`Self::never_fits`]:
    /// a request that can never fit would wait forever.
    pub fn enqueue(self: &Arc<Self>, ask: Ask) -> Ticket {
        self.enqueue_at(ask, None)
    }

    /// Joins the queue again after preemption, keeping the place `seq` the
    /// job had among its account's requests of its priority.
    pub fn requeue(self: &Arc<Self>, ask: Ask, seq: u64) -> Ticket {
        self.enqueue_at(ask, Some(seq))
    }

    fn enqueue_at(self: &Arc<Self>, ask: Ask, seq: Option<u64>) -> Ticket {
        let (granted_tx, granted) = oneshot::channel();
        let (reason_tx, reason) = watch::channel(String::new());
        let totals = ask.totals();
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id += 1;
        let seq = seq.unwrap_or(id);
        state.queue.push_back(Waiter {
            id,
            seq,
            ask,
            since: crate::time::now_ms(),
            granted: granted_tx,
            reason: reason_tx,
        });
        self.dispatch(&mut state);
        drop(state);
        Ticket {
            scheduler: self.clone(),
            id,
            seq,
            totals,
            granted,
            reason,
            taken: false,
        }
    }

    /// What is held, which GPUs are held, and how many wait.
    pub fn usage(&self) -> (ResourceTotals, BTreeSet<u32>, usize) {
        let state = self.lock();
        let all: BTreeSet<u32> = self.capacity.gpus.iter().map(|g| g.index).collect();
        let held = all.difference(&state.free_gpus).copied().collect();
        (state.held, held, state.queue.len())
    }

    /// The queue in the order it is taken (indices into it).
    fn order(&self, state: &State) -> Vec<usize> {
        let keys: Vec<QueueKey<'_>> = state
            .queue
            .iter()
            .map(|w| QueueKey {
                account: &w.ask.owner.account,
                priority: w.ask.owner.priority,
                seq: w.seq,
                asks: w.ask.totals(),
            })
            .collect();
        fair_order(&keys, &held_by_account(state), self.capacity.totals())
    }

    /// Grants from the head of the queue (in [`Self::order`]) while the
    /// head fits, then tells every waiter why it waits.
    fn dispatch(&self, state: &mut State) {
        while let Some(&head) = self.order(state).first() {
            if !state.queue[head].ask.totals().fits_in(&self.free(state)) {
                if self.preemption.is_some() {
                    self.preempt_for(state, head);
                }
                break;
            }
            let waiter = state.queue.remove(head).expect("a head");
            let totals = waiter.ask.totals();
            let mut gpus = Vec::with_capacity(waiter.ask.replicas.len());
            for replica in &waiter.ask.replicas {
                let mine: Vec<u32> = state
                    .free_gpus
                    .iter()
                    .take(replica.gpus as usize)
                    .copied()
                    .collect();
                for g in &mine {
                    state.free_gpus.remove(g);
                }
                gpus.push(mine);
            }
            state.held = add(state.held, totals);
            let (preempt, preempted) = watch::channel(None);
            state.running.insert(
                waiter.id,
                Running {
                    owner: waiter.ask.owner.clone(),
                    asker: waiter.ask.asker,
                    totals,
                    since: crate::time::now_ms(),
                    preempt,
                },
            );
            if let Err((gpus, _)) = waiter.granted.send((gpus, preempted)) {
                // Its ticket went while it was being granted.
                release(state, waiter.id, totals, &gpus);
            }
        }
        let free = self.free(state);
        let mut ahead = [0usize; 3];
        for i in self.order(state) {
            let waiter = &state.queue[i];
            let lack = lacking(&waiter.ask.totals(), &free);
            let mut behind = (ahead != [0; 3]).then(|| ahead_text(ahead));
            if behind.is_none() {
                let giving = giving_back(state, &waiter.ask.owner.account);
                if !giving.is_empty() {
                    behind = Some(format!("preempting {}", giving.join(", ")));
                }
            }
            let reason = match (lack.is_empty(), behind) {
                (false, None) => format!("waiting for {}", lack.join(" and ")),
                (false, Some(b)) => format!("waiting for {}; {b}", lack.join(" and ")),
                (true, Some(b)) => format!("waiting for its turn: {b}"),
                (true, None) => "starting".to_owned(),
            };
            waiter.reason.send_if_modified(|r| {
                let changed = *r != reason;
                *r = reason.clone();
                changed
            });
            ahead[waiter.ask.asker as usize] += 1;
        }
    }

    /// Preempts what makes room for the queue's head (`head`, an index
    /// into it) if anything can: its account's running jobs of lower
    /// priority, lowest first, then the most recently started, as few as
    /// make room with what is free and what others already give back. If
    /// even all of them would not, none is stopped in vain.
    fn preempt_for(&self, state: &State, head: usize) {
        let waiter = &state.queue[head];
        let theirs: Vec<&Running> = state
            .running
            .values()
            .filter(|r| r.asker == Asker::Job && r.owner.account == waiter.ask.owner.account)
            .collect();
        let running: Vec<Preemptible> = theirs
            .iter()
            .map(|r| Preemptible {
                priority: r.owner.priority,
                since: r.since,
                holds: r.totals,
                giving_back: r.preempt.borrow().is_some(),
            })
            .collect();
        let need = waiter.ask.totals();
        let victims =
            preemption_victims(need, waiter.ask.owner.priority, self.free(state), &running);
        let why = Preempted {
            by: waiter.ask.owner.name.clone(),
            kind: waiter.ask.asker.kind(),
            priority: waiter.ask.owner.priority,
        };
        for r in victims.into_iter().map(|i| theirs[i]) {
            tracing::info!(job = %r.owner.name, account = %r.owner.account, by = %why.by, "preempting");
            r.preempt.send_replace(Some(why.clone()));
        }
    }

    /// What is free now.
    fn free(&self, state: &State) -> ResourceTotals {
        let cap = self.capacity.totals();
        ResourceTotals {
            cpu_millis: cap.cpu_millis.saturating_sub(state.held.cpu_millis),
            memory_bytes: cap.memory_bytes.saturating_sub(state.held.memory_bytes),
            gpu: state.free_gpus.len() as u64,
        }
    }
}

impl LocalScheduler {
    /// The queue as a member of `account` sees it: everything that waits,
    /// in order, and everything that holds room, with names only for
    /// `account`'s own work.
    pub fn view(&self, cluster: &str, account: &str) -> QueueView {
        let state = self.lock();
        let running = state
            .running
            .values()
            .map(|r| Holder {
                kind: r.asker.kind(),
                account: r.owner.account.clone(),
                name: r.owner.name.clone(),
                priority: r.owner.priority,
                holds: r.totals,
                since: r.since,
                max_runtime_ms: r.owner.max_runtime_ms,
                preempted: r.preempt.borrow().is_some(),
            })
            .collect();
        let waiting = self
            .order(&state)
            .into_iter()
            .map(|q| {
                let w = &state.queue[q];
                Wanting {
                    kind: w.ask.asker.kind(),
                    account: w.ask.owner.account.clone(),
                    name: w.ask.owner.name.clone(),
                    priority: w.ask.owner.priority,
                    asks: w.ask.totals(),
                    since: w.since,
                    reason: w.reason.borrow().clone(),
                    max_runtime_ms: w.ask.owner.max_runtime_ms,
                }
            })
            .collect();
        QueueFacts {
            cluster: cluster.to_owned(),
            ordered_here: true,
            now: crate::time::now_ms(),
            capacity: self.capacity.totals(),
            free: self.free(&state),
            running,
            waiting,
        }
        .view_for(account)
    }
}

/// `account`'s running work that is giving its room back, in words.
fn giving_back(state: &State, account: &str) -> Vec<String> {
    let mut names: Vec<String> = state
        .running
        .values()
        .filter(|r| r.owner.account == account && r.preempt.borrow().is_some())
        .map(|r| format!("{} {}", r.asker.kind().noun(), r.owner.name))
        .collect();
    names.sort();
    names
}

/// What each account's granted requests hold.
fn held_by_account(state: &State) -> HashMap<&str, ResourceTotals> {
    let mut held: HashMap<&str, ResourceTotals> = HashMap::new();
    for r in state.running.values() {
        let h = held.entry(r.owner.account.as_str()).or_default();
        *h = add(*h, r.totals);
    }
    held
}

impl Ticket {
    /// Waits for its turn and the room; the room is held until the [`Grant`]
    /// is dropped.
    pub async fn granted(mut self) -> Grant {
        let (gpus, preempted) = (&mut self.granted)
            .await
            .expect("a waiter leaves the queue only with its ticket");
        self.taken = true;
        Grant {
            scheduler: self.scheduler.clone(),
            id: self.id,
            totals: self.totals,
            gpus,
            seq: self.seq,
            preempted,
        }
    }
}

impl Ticket {
    /// Waits in the queue for its turn, as every workload of the executor
    /// does (job replicas, serving replicas, notebook servers): each new
    /// reason it waits for (not "starting", not one already told) goes to
    /// `told`, which records it where the workload's page shows it. `None`
    /// if `stop` says stop first (dropping the ticket leaves the queue); an
    /// error from `told` ends the wait with it.
    pub async fn wait_turn<E, Told>(
        self,
        stop: &mut watch::Receiver<bool>,
        mut told: impl FnMut(String) -> Told,
    ) -> Result<Option<Grant>, E>
    where
        Told: std::future::Future<Output = Result<(), E>>,
    {
        let mut reason = self.reason.clone();
        let granted = self.granted();
        tokio::pin!(granted);
        let mut shown = String::new();
        let mut reasons_open = true;
        loop {
            if reasons_open {
                let now = reason.borrow_and_update().clone();
                if now != shown && now != "starting" && !now.is_empty() {
                    told(now.clone()).await?;
                    shown = now;
                }
            }
            tokio::select! {
                grant = &mut granted => return Ok(Some(grant)),
                changed = reason.changed(), if reasons_open => reasons_open = changed.is_ok(),
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        let scheduler = self.scheduler.clone();
        let mut state = scheduler.lock();
        state.queue.retain(|w| w.id != self.id);
        // Granted, but never taken: give the room back.
        if let Ok((gpus, _)) = self.granted.try_recv() {
            release(&mut state, self.id, self.totals, &gpus);
        }
        scheduler.dispatch(&mut state);
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        let scheduler = self.scheduler.clone();
        let mut state = scheduler.lock();
        release(&mut state, self.id, self.totals, &self.gpus);
        scheduler.dispatch(&mut state);
    }
}

fn release(state: &mut State, id: u64, totals: ResourceTotals, gpus: &[Vec<u32>]) {
    state.running.remove(&id);
    state.held = state.held.minus(totals);
    state.free_gpus.extend(gpus.iter().flatten());
}

fn add(a: ResourceTotals, b: ResourceTotals) -> ResourceTotals {
    a.add_times(b, 1)
}

#[cfg(test)]
mod tests;
