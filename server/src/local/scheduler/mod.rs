//! The local executor's scheduler: what the machine can hold (CPU, memory,
//! GPUs), who holds it, and who waits.
//!
//! The rule is first come, first served. A job asks for all its replicas at
//! once (they start together or not at all: a parameter-server job that
//! starts half its replicas deadlocks); a serving replica asks for itself.
//! Requests are granted strictly in the order they were made: the first one
//! that does not fit waits for room, and everything behind it waits too,
//! however small. Nothing overtakes, so a large job is never starved by a
//! stream of small ones; the price is that a small job may wait behind a
//! large one while some room stands idle. GPUs are handed out by index,
//! lowest free first, and never to two running replicas at once.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use app::models::quantity::{format_cpu, format_memory};
use app::models::ResourceTotals;
use tokio::sync::{oneshot, watch};

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

/// Who asks: queue messages count what is ahead by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker {
    /// A job (all its replicas).
    Job,
    /// One replica of a serving instance.
    ServingReplica,
    /// A notebook's server.
    Notebook,
}

/// A request: replicas that start together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// Who asks.
    pub asker: Asker,
    /// Each replica's needs, in the order its GPUs are handed back.
    pub replicas: Vec<ReplicaAsk>,
}

impl Ask {
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

/// The machine's room and its queue.
pub struct LocalScheduler {
    capacity: Capacity,
    state: Mutex<State>,
}

struct State {
    next_id: u64,
    /// Held by granted requests.
    held: ResourceTotals,
    /// GPU indices no running replica holds.
    free_gpus: BTreeSet<u32>,
    queue: VecDeque<Waiter>,
}

struct Waiter {
    id: u64,
    ask: Ask,
    granted: oneshot::Sender<Vec<Vec<u32>>>,
    reason: watch::Sender<String>,
}

/// A request in the queue. Dropping it (a stop, a delete) leaves the queue;
/// [`Ticket::granted`] waits for its turn.
pub struct Ticket {
    scheduler: Arc<LocalScheduler>,
    id: u64,
    totals: ResourceTotals,
    granted: oneshot::Receiver<Vec<Vec<u32>>>,
    /// Why it waits, as the job table shows it; updated as the queue moves.
    pub reason: watch::Receiver<String>,
    taken: bool,
}

/// Room held by running replicas, given back when dropped.
pub struct Grant {
    scheduler: Arc<LocalScheduler>,
    totals: ResourceTotals,
    /// Each replica's GPU indices, in the order of the ask.
    pub gpus: Vec<Vec<u32>>,
}

impl LocalScheduler {
    /// A scheduler for a machine of `capacity`.
    pub fn new(capacity: Capacity) -> Arc<Self> {
        let free_gpus = capacity.gpus.iter().map(|g| g.index).collect();
        Arc::new(Self {
            capacity,
            state: Mutex::new(State {
                next_id: 0,
                held: ResourceTotals::default(),
                free_gpus,
                queue: VecDeque::new(),
            }),
        })
    }

    /// The machine's room.
    pub fn capacity(&self) -> &Capacity {
        &self.capacity
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
        let (granted_tx, granted) = oneshot::channel();
        let (reason_tx, reason) = watch::channel(String::new());
        let totals = ask.totals();
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.queue.push_back(Waiter {
            id,
            ask,
            granted: granted_tx,
            reason: reason_tx,
        });
        self.dispatch(&mut state);
        drop(state);
        Ticket {
            scheduler: self.clone(),
            id,
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

    /// Grants from the head of the queue while the head fits, then tells
    /// every waiter why it waits.
    fn dispatch(&self, state: &mut State) {
        while let Some(head) = state.queue.front() {
            if !lacking(&head.ask.totals(), &self.free(state)).is_empty() {
                break;
            }
            let waiter = state.queue.pop_front().expect("a head");
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
            if let Err(gpus) = waiter.granted.send(gpus) {
                // Its ticket went while it was being granted.
                release(state, totals, &gpus);
            }
        }
        let free = self.free(state);
        let mut ahead = [0usize; 3];
        for waiter in &state.queue {
            let lack = lacking(&waiter.ask.totals(), &free);
            let behind = (ahead != [0; 3]).then(|| ahead_text(ahead));
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

impl Ticket {
    /// Waits for its turn and the room; the room is held until the [`Grant`]
    /// is dropped.
    pub async fn granted(mut self) -> Grant {
        let gpus = (&mut self.granted)
            .await
            .expect("a waiter leaves the queue only with its ticket");
        self.taken = true;
        Grant {
            scheduler: self.scheduler.clone(),
            totals: self.totals,
            gpus,
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
        if let Ok(gpus) = self.granted.try_recv() {
            release(&mut state, self.totals, &gpus);
        }
        scheduler.dispatch(&mut state);
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        let scheduler = self.scheduler.clone();
        let mut state = scheduler.lock();
        release(&mut state, self.totals, &self.gpus);
        scheduler.dispatch(&mut state);
    }
}

fn release(state: &mut State, totals: ResourceTotals, gpus: &[Vec<u32>]) {
    state.held = ResourceTotals {
        cpu_millis: state.held.cpu_millis.saturating_sub(totals.cpu_millis),
        memory_bytes: state.held.memory_bytes.saturating_sub(totals.memory_bytes),
        gpu: state.held.gpu.saturating_sub(totals.gpu),
    };
    state.free_gpus.extend(gpus.iter().flatten());
}

fn add(a: ResourceTotals, b: ResourceTotals) -> ResourceTotals {
    a.add_times(b, 1)
}

fn cpus(millis: u64) -> String {
    if millis <= 1000 {
        format!("{} CPU", format_cpu(millis))
    } else {
        format!("{} CPUs", format_cpu(millis))
    }
}

fn gpus(n: u64) -> String {
    if n == 1 {
        "1 GPU".to_owned()
    } else {
        format!("{n} GPUs")
    }
}

/// What `need` lacks of `free`, in words: `2 GPUs: 1 free`.
fn lacking(need: &ResourceTotals, free: &ResourceTotals) -> Vec<String> {
    let mut out = Vec::new();
    if need.cpu_millis > free.cpu_millis {
        out.push(format!(
            "{}: {} free",
            cpus(need.cpu_millis),
            format_cpu(free.cpu_millis)
        ));
    }
    if need.memory_bytes > free.memory_bytes {
        out.push(format!(
            "{} of memory: {} free",
            format_memory(need.memory_bytes),
            format_memory(free.memory_bytes)
        ));
    }
    if need.gpu > free.gpu {
        out.push(format!("{}: {} free", gpus(need.gpu), free.gpu));
    }
    out
}

/// `3 jobs ahead`, `1 job and 2 serving replicas ahead`: what waits ahead
/// by kind (jobs, serving replicas, notebooks, as [`Asker`] numbers them).
fn ahead_text(ahead: [usize; 3]) -> String {
    const NOUNS: [(&str, &str); 3] = [
        ("job", "jobs"),
        ("serving replica", "serving replicas"),
        ("notebook", "notebooks"),
    ];
    let parts: Vec<String> = ahead
        .iter()
        .zip(NOUNS)
        .filter(|(n, _)| **n > 0)
        .map(|(&n, (one, many))| {
            if n == 1 {
                format!("1 {one}")
            } else {
                format!("{n} {many}")
            }
        })
        .collect();
    let list = match parts.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    format!("{list} ahead")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::capacity::Gpu;

    fn machine(cpus: u64, gib: u64, gpus: u32) -> Arc<LocalScheduler> {
        LocalScheduler::new(Capacity {
            cpu_millis: cpus * 1000,
            memory_bytes: gib << 30,
            gpus: (0..gpus)
                .map(|index| Gpu {
                    index,
                    name: "simulated".into(),
                    memory_bytes: None,
                    simulated: true,
                })
                .collect(),
            source: String::new(),
        })
    }

    fn job(replicas: &[(u64, u64, u32)]) -> Ask {
        Ask {
            asker: Asker::Job,
            replicas: replicas
                .iter()
                .map(|&(cpus, gib, gpus)| ReplicaAsk {
                    cpu_millis: cpus * 1000,
                    memory_bytes: gib << 30,
                    gpus,
                })
                .collect(),
        }
    }

    fn now(ticket: Ticket) -> Option<Grant> {
        let waker = futures_util::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        let mut fut = Box::pin(ticket.granted());
        match fut.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(g) => Some(g),
            std::task::Poll::Pending => None,
        }
    }

    use std::future::Future;

    #[test]
    fn a_request_larger_than_the_machine_never_fits_and_says_by_how_much() {
        let s = machine(2, 4, 1);
        let too_many_gpus = s.never_fits(&job(&[(1, 1, 1), (1, 1, 1)])).unwrap();
        assert_eq!(
            (
                too_many_gpus.resource,
                too_many_gpus.asked.as_str(),
                too_many_gpus.capacity.as_str()
            ),
            ("gpu", "2 GPUs", "1 GPU")
        );
        let cpu = s.never_fits(&job(&[(2, 1, 0), (1, 1, 0)])).unwrap();
        assert_eq!(
            (cpu.asked.as_str(), cpu.capacity.as_str()),
            ("3 CPUs", "2 CPUs")
        );
        assert_eq!(s.never_fits(&job(&[(1, 5, 0)])).unwrap().resource, "memory");
        assert_eq!(s.never_fits(&job(&[(1, 2, 0), (1, 2, 1)])), None);
    }

    #[test]
    fn replicas_get_disjoint_gpus_and_give_them_back() {
        let s = machine(8, 8, 4);
        let a = now(s.enqueue(job(&[(1, 1, 2), (1, 1, 1)]))).unwrap();
        assert_eq!(a.gpus, vec![vec![0, 1], vec![2]]);
        let b = now(s.enqueue(job(&[(1, 1, 1), (1, 1, 0)]))).unwrap();
        assert_eq!(b.gpus, vec![vec![3], vec![]]);
        drop(a);
        let c = now(s.enqueue(job(&[(1, 1, 3)]))).unwrap();
        assert_eq!(c.gpus, vec![vec![0, 1, 2]]);
        let (held, held_gpus, queued) = s.usage();
        assert_eq!(held.gpu, 4);
        assert_eq!(held_gpus.len(), 4);
        assert_eq!(queued, 0);
    }

    #[test]
    fn requests_start_in_order_and_a_small_one_never_overtakes() {
        let s = machine(2, 8, 2);
        let first = now(s.enqueue(job(&[(1, 1, 1)]))).unwrap();
        let big = s.enqueue(job(&[(1, 1, 2)]));
        assert_eq!(*big.reason.borrow(), "waiting for 2 GPUs: 1 free");
        let small = s.enqueue(job(&[(1, 1, 0)]));
        assert_eq!(
            *small.reason.borrow(),
            "waiting for its turn: 1 job ahead",
            "one CPU is free, but the GPU job came first"
        );
        let serving = s.enqueue(Ask {
            asker: Asker::ServingReplica,
            replicas: vec![ReplicaAsk {
                cpu_millis: 500,
                memory_bytes: 1 << 30,
                gpus: 1,
            }],
        });
        assert_eq!(
            *serving.reason.borrow(),
            "waiting for its turn: 2 jobs ahead"
        );
        drop(first);
        let big = now(big).expect("the head starts once the GPUs are back");
        assert_eq!(big.gpus, vec![vec![0, 1]]);
        let small = now(small).expect("then the next in line");
        assert_eq!(
            *serving.reason.borrow(),
            "waiting for 500m CPU: 0 free and 1 GPU: 0 free"
        );
        drop((big, small));
        assert!(now(serving).is_some());
    }

    #[test]
    fn leaving_the_queue_lets_the_next_one_start() {
        let s = machine(1, 8, 0);
        let running = now(s.enqueue(job(&[(1, 1, 0)]))).unwrap();
        let queued = s.enqueue(job(&[(1, 1, 0)]));
        let next = s.enqueue(job(&[(1, 1, 0)]));
        assert_eq!(
            *next.reason.borrow(),
            "waiting for 1 CPU: 0 free; 1 job ahead"
        );
        drop(queued); // a stop while queued
        assert_eq!(*next.reason.borrow(), "waiting for 1 CPU: 0 free");
        drop(running);
        let next = now(next).expect("its turn");
        assert_eq!(s.usage().0.cpu_millis, 1000);
        drop(next);
        assert_eq!(s.usage().0.cpu_millis, 0);
    }

    #[test]
    fn a_grant_never_taken_gives_its_room_back() {
        let s = machine(1, 8, 1);
        let held = now(s.enqueue(job(&[(1, 1, 1)]))).unwrap();
        let waiting = s.enqueue(job(&[(1, 1, 1)]));
        drop(held);
        // Granted now, but its owner goes before taking it.
        drop(waiting);
        assert_eq!(s.usage().0, ResourceTotals::default());
        assert!(now(s.enqueue(job(&[(1, 1, 1)]))).is_some());
    }

    #[test]
    fn memory_lacking_is_said_in_binary_units() {
        let s = machine(4, 2, 0);
        let _held = now(s.enqueue(job(&[(1, 1, 0)]))).unwrap();
        let t = s.enqueue(job(&[(1, 2, 0)]));
        assert_eq!(
            *t.reason.borrow(),
            "waiting for 2 GiB of memory: 1 GiB free"
        );
        assert_eq!(ahead_text([1, 2, 0]), "1 job and 2 serving replicas ahead");
        assert_eq!(ahead_text([3, 0, 0]), "3 jobs ahead");
        assert_eq!(
            ahead_text([2, 1, 1]),
            "2 jobs, 1 serving replica and 1 notebook ahead"
        );
    }
}
