//! Background loops run in one console process at a time when several share
//! a database: the lease in the database decides which, and moves when its
//! holder goes away.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use server::storage::lease::Lease;

use crate::common::TestDb;

const TTL: Duration = Duration::from_millis(600);

on_both_databases!(
    one_holder_at_a_time_and_the_lease_moves_when_its_holder_stops_renewing,
    super::one_holder_at_a_time
);

async fn one_holder_at_a_time(db: TestDb) {
    let a = Lease::new(db.pool.clone(), "scheduler", "console-a", TTL);
    let b = Lease::new(db.pool.clone(), "scheduler", "console-b", TTL);
    assert!(a.hold().await, "the first to ask gets it");
    assert!(!b.hold().await, "the second does not while it lasts");
    assert!(a.hold().await, "its holder renews it");
    assert_eq!(a.holder().await.as_deref(), Some("console-a"));
    // Another lease is another loop: held independently.
    let other = Lease::new(db.pool.clone(), "sweep", "console-b", TTL);
    assert!(other.hold().await);

    // A stops renewing (it died): once the lease has run out, B takes it,
    // and A, back, does not get it back while B renews.
    tokio::time::sleep(TTL + Duration::from_millis(100)).await;
    assert!(b.hold().await, "the lease moves once it ran out");
    assert!(!a.hold().await);
    assert_eq!(b.holder().await.as_deref(), Some("console-b"));
    // Given up on purpose, it moves at once.
    b.release().await;
    assert!(a.hold().await);
}

on_both_databases!(
    a_guarded_loop_runs_in_one_process_and_moves_when_that_process_goes,
    super::a_guarded_loop
);

async fn a_guarded_loop(db: TestDb) {
    let passes = [Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0))];
    let counting = |n: Arc<AtomicUsize>| {
        move || {
            let n = n.clone();
            async move {
                loop {
                    n.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    };
    let first = Lease::new(db.pool.clone(), "pipeline-scheduler", "one", TTL)
        .guard(counting(passes[0].clone()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = Lease::new(db.pool.clone(), "pipeline-scheduler", "two", TTL)
        .guard(counting(passes[1].clone()));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let (one, two) = (
        passes[0].load(Ordering::SeqCst),
        passes[1].load(Ordering::SeqCst),
    );
    assert!(one > 5, "the holder's loop runs: {one}");
    assert_eq!(two, 0, "the other's does not");

    // The first process goes away (its guard and its loop end with it): the
    // second's loop starts within the lease's life, the first's stays still.
    first.abort();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let stopped_at = passes[0].load(Ordering::SeqCst);
    tokio::time::sleep(TTL * 2).await;
    assert_eq!(
        passes[0].load(Ordering::SeqCst),
        stopped_at,
        "the loop ended with its guard"
    );
    assert!(
        passes[1].load(Ordering::SeqCst) > 3,
        "the loop moved to the second process"
    );
    second.abort();
}
