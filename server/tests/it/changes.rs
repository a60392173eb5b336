//! The change feed between console processes on one database: what one
//! process changed reaches the others' live streams (not its own, which
//! hear it in-process), once, coalesced, and a late commit is not skipped.

use std::time::Duration;

use server::storage::changes::{Change, ChangeFeed, Kind};
use tokio::sync::broadcast::Receiver;

use crate::common::TestDb;

/// What `rx` receives within `wait`, in order.
async fn drain(rx: &mut Receiver<Change>, wait: Duration) -> Vec<(Kind, i64, String)> {
    let mut got = vec![];
    let deadline = tokio::time::Instant::now() + wait;
    while let Ok(Ok(change)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        got.push((change.kind, change.account_id, change.name));
    }
    got
}

on_both_databases!(
    a_change_made_in_one_process_reaches_the_others_once_and_not_itself,
    super::reaches_the_others
);

async fn reaches_the_others(db: TestDb) {
    let a = ChangeFeed::start(db.pool.clone(), "console-a");
    let b = ChangeFeed::start(db.pool.clone(), "console-b");
    let c = ChangeFeed::start(db.pool.clone(), "console-c");
    // Let each read where the feed stands before anything changes.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (mut at_a, mut at_b, mut at_c) = (a.subscribe(), b.subscribe(), c.subscribe());

    // A burst of changes to one job is one change for the others.
    for _ in 0..50 {
        a.publish(Kind::Metrics, 7, "train");
    }
    a.publish(Kind::Jobs, 7, "train");
    b.publish(Kind::Serving, 8, "echo");

    let wait = Duration::from_millis(1200);
    let mut heard_b = drain(&mut at_b, wait).await;
    heard_b.sort_by_key(|(kind, _, _)| format!("{kind:?}"));
    assert_eq!(
        heard_b,
        [
            (Kind::Jobs, 7, "train".to_owned()),
            (Kind::Metrics, 7, "train".to_owned())
        ]
    );
    let mut heard_c = drain(&mut at_c, Duration::from_millis(100)).await;
    heard_c.sort_by_key(|(kind, _, _)| format!("{kind:?}"));
    assert_eq!(
        heard_c,
        [
            (Kind::Jobs, 7, "train".to_owned()),
            (Kind::Metrics, 7, "train".to_owned()),
            (Kind::Serving, 8, "echo".to_owned())
        ]
    );
    assert_eq!(
        drain(&mut at_a, Duration::from_millis(100)).await,
        [(Kind::Serving, 8, "echo".to_owned())],
        "a process hears the others, never itself"
    );

    // Later changes come again (coalescing is per flush, not forever).
    a.publish(Kind::Metrics, 7, "train");
    assert_eq!(
        drain(&mut at_b, wait).await,
        [(Kind::Metrics, 7, "train".to_owned())]
    );
}

on_both_databases!(
    a_change_committed_after_a_newer_one_is_still_delivered,
    super::late_commit
);

async fn late_commit(db: TestDb) {
    let b = ChangeFeed::start(db.pool.clone(), "console-b");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut at_b = b.subscribe();
    // Two writers' ids: 2 becomes visible first, then 1 (PostgreSQL hands
    // out sequence numbers before commit). Written here by hand, in that
    // order, with ids chosen below the newest.
    let newest: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM changes")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let insert = |id: i64, name: &'static str| {
        let pool = db.pool.clone();
        async move {
            sqlx::query(
                "INSERT INTO changes (id, origin, kind, account_id, name, at) \
                 VALUES ($1, 'console-a', 'jobs', 1, $2, $3)",
            )
            .bind(id)
            .bind(name)
            .bind(server::time::now_ms())
            .execute(&pool)
            .await
            .unwrap();
        }
    };
    insert(newest + 2, "second").await;
    let first = drain(&mut at_b, Duration::from_millis(700)).await;
    insert(newest + 1, "first").await;
    let then = drain(&mut at_b, Duration::from_millis(700)).await;
    assert_eq!(first, [(Kind::Jobs, 1, "second".to_owned())]);
    assert_eq!(then, [(Kind::Jobs, 1, "first".to_owned())]);
}
