//! What a job's record says of its run when the cluster was seen late.

use app::models::{Account, JobStatus, PodPhase};
use server::storage::jobs::{JobStore, PodUpdate};

use crate::common::{self, TestDb};

/// A watch can miss every Running event when the replicas end quickly: the
/// job goes from Pending straight to Succeeded. Its start is then its
/// earliest replica's, not empty; one that never ran has none.
async fn a_job_seen_only_at_its_end_takes_its_start_from_its_replicas(db: TestDb) {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO accounts (name, namespace, created_at) VALUES ('quick', 'pc-quick', 0) RETURNING id",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let account = Account {
        id,
        name: "quick".into(),
        namespace: "pc-quick".into(),
        created_at: 0,
    };
    let me = common::user_in(&db.pool, &account).await;
    let store = JobStore::new(db.pool.clone());
    let spec = |name: &str| {
        serde_json::from_value(serde_json::json!({
            "name": name, "command": ["true"], "num_trainers": 2,
            "trainer": {"cpu": "1", "memory": "256Mi"},
        }))
        .unwrap()
    };
    let (ran, _) = store.insert(&me, &spec("ran"), "kube").await.unwrap();
    for (pod, started) in [("trainer-0", 1_000_500), ("trainer-1", 1_000_000)] {
        let update = PodUpdate {
            phase: Some(PodPhase::Succeeded),
            exit_code: Some(0),
            started_at: Some(started),
            finished_at: Some(1_002_000),
            ..Default::default()
        };
        store.update_pod(ran.id, pod, update).await.unwrap();
    }
    store
        .set_status(ran.id, JobStatus::Succeeded, "")
        .await
        .unwrap();
    let job = store.by_id(ran.id).await.unwrap().job;
    assert_eq!(job.started_at, Some(1_000_000));
    assert!(job.finished_at >= job.started_at);

    let (never, _) = store.insert(&me, &spec("never"), "kube").await.unwrap();
    store
        .set_status(never.id, JobStatus::Stopped, "stopped in the queue")
        .await
        .unwrap();
    assert_eq!(store.by_id(never.id).await.unwrap().job.started_at, None);
}
on_both_databases!(
    a_job_seen_only_at_its_end_takes_its_start_from_its_replicas,
    super::a_job_seen_only_at_its_end_takes_its_start_from_its_replicas
);
