//! The job table's totals, kept in `job_counts` by triggers: whatever
//! happens to jobs, each filter's total is what counting the rows says.

use app::models::{Account, JobQuery, JobSource, JobSpec, JobStatus, Me};
use server::storage::jobs::JobStore;
use sqlx::AnyPool;

use crate::common::{self, TestDb};

async fn account(pool: &AnyPool, name: &str) -> (Account, Me) {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO accounts (name, namespace, created_at) VALUES ($1, $2, 0) RETURNING id",
    )
    .bind(name)
    .bind(format!("pc-{name}"))
    .fetch_one(pool)
    .await
    .unwrap();
    let account = Account {
        id,
        name: name.into(),
        namespace: format!("pc-{name}"),
        created_at: 0,
    };
    let me = common::user_in(pool, &account).await;
    (account, me)
}

fn spec(name: &str) -> JobSpec {
    serde_json::from_value(serde_json::json!({
        "name": name, "command": ["true"], "num_trainers": 1,
        "trainer": {"cpu": "1", "memory": "256Mi"},
    }))
    .unwrap()
}

/// Every status and source filter (alone and together), and a name filter:
/// the listed total against a count of the rows.
async fn assert_totals_match_the_rows(db: &TestDb, store: &JobStore, account: &Account) {
    let statuses = std::iter::once(None).chain(JobStatus::ALL.iter().copied().map(Some));
    for status in statuses {
        for source in std::iter::once(None).chain(JobSource::ALL.iter().copied().map(Some)) {
            let counted: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM jobs WHERE account_id = $1 \
                 AND ($2 = '' OR status = $2) AND ($3 = '' OR source = $3)",
            )
            .bind(account.id)
            .bind(status.map_or("", |s| s.as_str()))
            .bind(source.map_or("", |s| s.as_str()))
            .fetch_one(&db.pool)
            .await
            .unwrap();
            let query = JobQuery {
                status,
                source,
                ..Default::default()
            };
            let listed = store.list(account.id, &query).await.unwrap().total;
            assert_eq!(
                listed, counted as u64,
                "status {status:?}, source {source:?}"
            );
        }
    }
    let named = JobQuery {
        name: Some("b".into()),
        ..Default::default()
    };
    let counted: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE account_id = $1 AND name LIKE '%b%'")
            .bind(account.id)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        store.list(account.id, &named).await.unwrap().total,
        counted as u64
    );
}

/// Submitted, moved on, recorded as a local run, deleted: the totals of
/// every filter follow, and another account's jobs never count.
async fn the_job_table_totals_follow_every_change_to_jobs(db: TestDb) {
    let (ann, ann_me) = account(&db.pool, "ann").await;
    let (bob, bob_me) = account(&db.pool, "bob").await;
    let store = JobStore::new(db.pool.clone());
    let mut ids = Vec::new();
    for i in 0..12 {
        let (job, _) = store
            .insert(
                &ann_me,
                &spec(&format!("job-{i:02}-{}", ["a", "b"][i % 2])),
                "local",
            )
            .await
            .unwrap();
        ids.push(job.id);
    }
    store
        .insert(&bob_me, &spec("elsewhere"), "local")
        .await
        .unwrap();
    assert_eq!(
        store
            .list(ann.id, &JobQuery::default())
            .await
            .unwrap()
            .total,
        12
    );
    assert_totals_match_the_rows(&db, &store, &ann).await;

    for (i, id) in ids.iter().enumerate() {
        let status = [JobStatus::Running, JobStatus::Succeeded, JobStatus::Failed][i % 3];
        store.set_status(*id, status, "").await.unwrap();
    }
    // The same status again changes nothing.
    store
        .set_status(ids[0], JobStatus::Running, "still")
        .await
        .unwrap();
    // A job that turns out to be a local run changes where it ran.
    sqlx::query("UPDATE jobs SET source = 'local', status = 'running' WHERE id = $1")
        .bind(ids[1])
        .execute(&db.pool)
        .await
        .unwrap();
    assert_totals_match_the_rows(&db, &store, &ann).await;

    store.delete(ids[2]).await.unwrap();
    store.delete(ids[3]).await.unwrap();
    let running = JobQuery {
        status: Some(JobStatus::Running),
        ..Default::default()
    };
    assert_eq!(store.list(ann.id, &running).await.unwrap().total, 4);
    assert_eq!(
        store
            .list(ann.id, &JobQuery::default())
            .await
            .unwrap()
            .total,
        10
    );
    assert_totals_match_the_rows(&db, &store, &ann).await;
    assert_eq!(
        store
            .list(bob.id, &JobQuery::default())
            .await
            .unwrap()
            .total,
        1
    );
    // Past the last page there is no row to carry the total: it is still told.
    let past = JobQuery {
        page: Some(99),
        ..Default::default()
    };
    let page = store.list(ann.id, &past).await.unwrap();
    assert!(page.jobs.is_empty());
    assert_eq!(page.total, 10);
}
on_both_databases!(
    the_job_table_totals_follow_every_change_to_jobs,
    super::the_job_table_totals_follow_every_change_to_jobs
);

/// Jobs moved between two statuses at once, in both directions (as two
/// replicas' watchers do): no transaction deadlocks or fails, and the
/// totals are right after.
async fn jobs_changing_status_at_once_keep_the_totals_right(db: TestDb) {
    let (ann, me) = account(&db.pool, "busy").await;
    let store = JobStore::new(db.pool.clone());
    let mut ids = Vec::new();
    for i in 0..8 {
        let (job, _) = store
            .insert(&me, &spec(&format!("j{i}")), "local")
            .await
            .unwrap();
        store
            .set_status(job.id, JobStatus::Running, "")
            .await
            .unwrap();
        ids.push(job.id);
    }
    let tasks: Vec<_> = ids
        .into_iter()
        .enumerate()
        .map(|(i, id)| {
            let store = store.clone();
            tokio::spawn(async move {
                let pair = [JobStatus::Running, JobStatus::Pending];
                for round in 0..25 {
                    let status = pair[(round + i) % 2];
                    store.set_status(id, status, "").await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_totals_match_the_rows(&db, &store, &ann).await;
    assert_eq!(
        store
            .list(ann.id, &JobQuery::default())
            .await
            .unwrap()
            .total,
        8
    );
}
on_both_databases!(
    jobs_changing_status_at_once_keep_the_totals_right,
    super::jobs_changing_status_at_once_keep_the_totals_right
);

/// A database from before the counts: its jobs are counted when the
/// console that brings `job_counts` starts.
async fn jobs_recorded_before_the_counts_are_counted_on_upgrade(db: TestDb) {
    let (ann, me) = account(&db.pool, "old").await;
    let store = JobStore::new(db.pool.clone());
    // Back to the schema before migration 21, as an older console left it.
    let undo = if db.url.starts_with("sqlite") {
        "DROP TRIGGER job_counts_insert; DROP TRIGGER job_counts_update; \
         DROP TRIGGER job_counts_delete; DROP TABLE job_counts; \
         DELETE FROM _sqlx_migrations WHERE version = 21"
    } else {
        "DROP FUNCTION job_counts_track() CASCADE; DROP TABLE job_counts; \
         DELETE FROM _sqlx_migrations WHERE version = 21"
    };
    sqlx::raw_sql(undo).execute(&db.pool).await.unwrap();
    for i in 0..5 {
        let (job, _) = store
            .insert(&me, &spec(&format!("old-{i}")), "local")
            .await
            .unwrap();
        if i < 2 {
            store
                .set_status(job.id, JobStatus::Failed, "")
                .await
                .unwrap();
        }
    }
    let pool = server::storage::db::connect(&db.url).await.unwrap();
    let store = JobStore::new(pool);
    let failed = JobQuery {
        status: Some(JobStatus::Failed),
        ..Default::default()
    };
    assert_eq!(store.list(ann.id, &failed).await.unwrap().total, 2);
    assert_eq!(
        store
            .list(ann.id, &JobQuery::default())
            .await
            .unwrap()
            .total,
        5
    );
    assert_totals_match_the_rows(&db, &store, &ann).await;
}
on_both_databases!(
    jobs_recorded_before_the_counts_are_counted_on_upgrade,
    super::jobs_recorded_before_the_counts_are_counted_on_upgrade
);
