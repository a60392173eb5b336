//! The console restarting must not lose jobs, nor leave them showing Running.

use crate::common;

use std::time::Duration;

use app::models::{Account, JobSpec, JobStatus, LogRequest, PodPhase, ReplicaResources};
use futures_util::StreamExt;
use server::console::Console;

#[test]
fn a_restart_marks_running_jobs_failed_and_kills_what_is_left_of_them() {
    // The first console process: its runtime is torn down mid-job, as a crash would.
    let first = tokio::runtime::Runtime::new().unwrap();
    let db = first.block_on(common::sqlite());
    let (account, child) = first.block_on(async {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO accounts (name, namespace, created_at) VALUES ('ann', 'pc-ann', 0) RETURNING id",
        )
        .fetch_one(&db.pool)
        .await
        .unwrap();
        let account = Account { id, name: "ann".into(), namespace: "pc-ann".into(), created_at: 0 };
        let console = Console::build(common::site::config(&db)).await.unwrap();
        let cluster = console.services.cluster;
        let spec = JobSpec {
            priority: Default::default(),
            max_runtime: None,
            secrets: vec![],
            notebook: None,
            template: None,
            pipeline: None,
            experiment: None,
            notebook_run: None,
            scoring: None,
            environment: None,
            environment_use: None,
            name: "survivor".into(),
            image: String::new(),
            command: vec!["sh".into(), "-c".into(), "sleep 300 & echo \"child $!\"; wait".into()],
            args: vec![],
            working_dir: String::new(),
            env: vec![],
            num_ps: 0,
            num_trainers: 1,
            ps: ReplicaResources::default(),
            trainer: ReplicaResources::default(),
            datasets: vec![],
            models: vec![],
        };
        let owner = common::user_in(&db.pool, &account).await;
        cluster.submit(&owner, spec).await.unwrap();
        let child = common::printed_child(&*cluster, &account, "survivor", "trainer-0").await;
        // The crash comes once the console has written the job down as
        // running (its replica's process group with it): a replica can
        // print before that write lands, and a crash in between is another
        // case (see the closing note of 2026-11-29: issue 44, item 6).
        let start = std::time::Instant::now();
        while cluster.job(&account, "survivor").await.unwrap().status != JobStatus::Running {
            assert!(start.elapsed() < std::time::Duration::from_secs(10), "never running");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        (account, child)
    });
    first.shutdown_background();
    assert!(
        common::alive(child),
        "the job's processes outlive the crashed console"
    );

    // The console starts again on the same database and data directory.
    let second = tokio::runtime::Runtime::new().unwrap();
    second.block_on(async {
        let console = Console::build(common::site::config(&db)).await.unwrap();
        let cluster = console.services.cluster;
        let job = cluster.job(&account, "survivor").await.unwrap();
        assert_eq!(job.status, JobStatus::Failed);
        assert!(job.message.contains("console restarted"), "{}", job.message);
        assert!(job.finished_at.is_some());
        let pods = cluster.pods(&account, "survivor").await.unwrap();
        assert_eq!(pods[0].phase, PodPhase::Failed);
        // The log written before the crash is still there.
        let mut log = cluster
            .log(
                &account,
                "survivor",
                "trainer-0",
                LogRequest {
                    tail: Some(10),
                    follow: false,
                    timestamps: false,
                },
            )
            .await
            .unwrap();
        let first_chunk = log.next().await.unwrap().unwrap();
        assert!(String::from_utf8_lossy(&first_chunk).contains("child "));
        // SIGKILL is sent during recovery; on a loaded machine the process
        // may take a moment to be gone.
        let start = std::time::Instant::now();
        while common::alive(child) && start.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert!(
        !common::alive(child),
        "recovery kills the stale job's process group"
    );
}
