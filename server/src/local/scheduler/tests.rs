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
        owner: Owner::default(),
    }
}

/// `job` as `account`'s `name` at `priority`.
fn of(account: &str, name: &str, priority: Priority, replicas: &[(u64, u64, u32)]) -> Ask {
    let mut ask = job(replicas).owned_by(account, name);
    ask.owner.priority = priority;
    ask
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
        owner: Owner::default(),
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

#[test]
fn an_accounts_high_priority_job_goes_before_its_earlier_ones_but_not_before_another_accounts_turn()
{
    let s = machine(4, 16, 0);
    // `a` fills the machine; then a and b queue.
    let running = now(s.enqueue(of("a", "big", Priority::Normal, &[(4, 4, 0)]))).unwrap();
    let a_normal = s.enqueue(of("a", "first", Priority::Normal, &[(2, 2, 0)]));
    let b_low = s.enqueue(of("b", "late", Priority::Low, &[(2, 2, 0)]));
    let a_high = s.enqueue(of("a", "urgent", Priority::High, &[(2, 2, 0)]));
    let view = s.view("local", "a");
    let order: Vec<(u32, Option<String>, String)> = view
        .waiting
        .iter()
        .map(|w| (w.position, w.work.name.clone(), w.work.account.clone()))
        .collect();
    // b holds nothing and a all of it: b's goes first; then a's, high first.
    assert_eq!(
        order,
        vec![
            (1, None, "b".into()),
            (2, Some("urgent".into()), "a".into()),
            (3, Some("first".into()), "a".into()),
        ]
    );
    // What the first lacks, and whose work holds it (a's own, named).
    let first = &view.waiting[0];
    assert_eq!(first.reason, "waiting for 2 CPUs: 0 free");
    assert_eq!(first.held_by.len(), 1);
    assert_eq!(first.held_by[0].name.as_deref(), Some("big"));
    assert_eq!(view.shares[0].account, "a");
    assert_eq!(view.shares[0].share, 1.0);
    // b sees a's work without its names.
    let seen_by_b = s.view("local", "b");
    assert_eq!(seen_by_b.waiting[0].work.name.as_deref(), Some("late"));
    assert_eq!(seen_by_b.waiting[1].work.name, None);
    assert_eq!(seen_by_b.running[0].work.describe(), "a job of account a");
    // The machine frees: b's and a's high one start, a's normal one waits.
    drop(running);
    let b = now(b_low).expect("b's job starts first");
    let high = now(a_high).expect("then a's high one");
    assert_eq!(*a_normal.reason.borrow(), "waiting for 2 CPUs: 0 free");
    drop((b, high));
    assert!(now(a_normal).is_some());
}

/// `machine`, preempting with a grace of one second.
fn preempting(cpus: u64) -> Arc<LocalScheduler> {
    let capacity = machine(cpus, 16, 0).capacity().clone();
    LocalScheduler::preempting(capacity, Some(std::time::Duration::from_secs(1)))
}

/// Whether `ticket` is granted by now, keeping it in the queue if not.
fn poll(ticket: &mut std::pin::Pin<Box<dyn Future<Output = Grant>>>) -> Option<Grant> {
    let waker = futures_util::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    match ticket.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(g) => Some(g),
        std::task::Poll::Pending => None,
    }
}

fn told(grant: &Grant) -> Option<String> {
    grant.preempted.borrow().as_ref().map(Preempted::words)
}

#[test]
fn a_waiting_high_job_preempts_its_accounts_most_recent_low_job_and_no_more_than_it_needs() {
    let s = preempting(4);
    let older = now(s.enqueue(of("a", "older", Priority::Low, &[(2, 2, 0)]))).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let newer = now(s.enqueue(of("a", "newer", Priority::Low, &[(2, 2, 0)]))).unwrap();
    let mut urgent: std::pin::Pin<Box<dyn Future<Output = Grant>>> = Box::pin(
        s.enqueue(of("a", "urgent", Priority::High, &[(2, 2, 0)]))
            .granted(),
    );
    assert!(
        poll(&mut urgent).is_none(),
        "it waits for the room to come back"
    );
    assert_eq!(told(&older), None, "one job's room is enough");
    assert_eq!(
        told(&newer).as_deref(),
        Some("Preempted by job urgent (high priority)")
    );
    let view = s.view("local", "a");
    assert_eq!(
        view.waiting[0].reason,
        "waiting for 2 CPUs: 0 free; preempting job newer"
    );
    let marked: Vec<_> = view
        .running
        .iter()
        .map(|h| (h.work.name.clone().unwrap(), h.preempted))
        .collect();
    assert!(marked.contains(&("newer".into(), true)), "{marked:?}");
    assert!(marked.contains(&("older".into(), false)), "{marked:?}");
    // Its replicas stopped, the preempted job gives the room back and queues
    // again in its old place, before a low job of its account that came later.
    let seq = newer.seq;
    drop(newer);
    let high = poll(&mut urgent).expect("the high job starts in the room given back");
    let later = s.enqueue(of("a", "later", Priority::Low, &[(2, 2, 0)]));
    let again = s.requeue(of("a", "newer", Priority::Low, &[(2, 2, 0)]), seq);
    let order: Vec<_> = s
        .view("local", "a")
        .waiting
        .iter()
        .map(|w| w.work.name.clone().unwrap())
        .collect();
    assert_eq!(order, ["newer", "later"]);
    assert_eq!(
        told(&older),
        None,
        "a job of the same priority is never preempted"
    );
    drop(high);
    assert!(now(again).is_some());
    drop(later);
}

#[test]
fn preemption_never_crosses_accounts_never_stops_work_in_vain_and_is_off_unless_asked() {
    let s = preempting(4);
    let theirs = now(s.enqueue(of("b", "theirs", Priority::Low, &[(2, 2, 0)]))).unwrap();
    let ours = now(s.enqueue(of("a", "ours", Priority::Low, &[(2, 2, 0)]))).unwrap();
    // Stopping a's own low job would free 2 CPUs of the 4 it asks for.
    let big = s.enqueue(of("a", "big", Priority::High, &[(4, 2, 0)]));
    assert_eq!(told(&ours), None, "stopping it would not make room");
    assert_eq!(
        told(&theirs),
        None,
        "another account's work is never preempted"
    );
    drop(big);
    // Without preemption a high job waits like any other.
    let off = machine(2, 16, 0);
    let low = now(off.enqueue(of("a", "low", Priority::Low, &[(2, 2, 0)]))).unwrap();
    let high = off.enqueue(of("a", "high", Priority::High, &[(2, 2, 0)]));
    assert_eq!(told(&low), None);
    assert_eq!(*high.reason.borrow(), "waiting for 2 CPUs: 0 free");
    drop((theirs, ours, low, high));
}
