//! The `Cluster` contract: what any backend must do, checked with real
//! processes. The local executor runs it here on SQLite and PostgreSQL; the
//! Kubernetes backend runs the same functions on a real node
//! (`scripts/kube-test-cluster.sh`: kubelet, containerd and runc, cluster DNS), its
//! replicas in containers of a busybox image built there.
//!
//! The "training program" is a small shell script: it prints its PaddlePaddle
//! environment and exits with the code a test chooses.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use app::error::AppError;
use app::models::{
    Account, Job, JobQuery, JobSort, JobSpec, JobStatus, LogRequest, Me, PodPhase, ReplicaResources,
};
use app::ports::Cluster;

struct Harness {
    cluster: Arc<dyn Cluster>,
    /// Whether this is the Kubernetes backend (replicas reach each other by
    /// DNS name there, by loopback port locally).
    kube: bool,
    /// The image replicas run (the real node's has a shell).
    image: String,
    ann: Account,
    eve: Account,
    /// The owners of `ann` and `eve`, who submit their jobs.
    ann_user: Me,
    eve_user: Me,
    _db: common::TestDb,
}

async fn account(db: &common::TestDb, name: &str, namespace: &str) -> Account {
    common::account(&db.pool, name, namespace).await
}

/// The local executor, as a console on its embedded defaults runs it.
async fn local(db: common::TestDb) -> Harness {
    let console = server::console::Console::build(common::site::config(&db))
        .await
        .unwrap();
    let cluster = console.services.cluster.clone();
    let ann = account(&db, "ann", "pc-ann").await;
    let eve = account(&db, "eve", "pc-eve").await;
    Harness {
        cluster,
        kube: false,
        image: "paddlepaddle/paddle:2.6.1".into(),
        ann_user: common::user_in(&db.pool, &ann).await,
        eve_user: common::user_in(&db.pool, &eve).await,
        ann,
        eve,
        _db: db,
    }
}

/// The Kubernetes backend on the real node, or `None` (skipped) without one.
async fn kube(db: common::TestDb) -> Option<Harness> {
    let (node, client) = common::node::client().await?;
    let cluster = common::kubernetes::kube_cluster(&client, &db, None);
    // Tests share the cluster: namespaces of their own.
    let tag = format!("{:08x}", getrandom::u32().unwrap());
    let ann = account(&db, "ann", &format!("pc-ann-{tag}")).await;
    let eve = account(&db, "eve", &format!("pc-eve-{tag}")).await;
    Some(Harness {
        cluster: Arc::new(cluster),
        kube: true,
        image: node.shell_image,
        ann_user: common::user_in(&db.pool, &ann).await,
        eve_user: common::user_in(&db.pool, &eve).await,
        ann,
        eve,
        _db: db,
    })
}

impl Harness {
    /// A job running `script` in `sh -c` for every replica.
    fn job(&self, name: &str, ps: u32, trainers: u32, script: &str) -> JobSpec {
        JobSpec {
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
            name: name.into(),
            image: self.image.clone(),
            command: vec!["sh".into(), "-c".into(), script.into()],
            args: vec![],
            working_dir: String::new(),
            env: vec![app::models::EnvVar {
                name: "GREETING".into(),
                value: "hello".into(),
            }],
            num_ps: ps,
            num_trainers: trainers,
            // Small: the real node has the machine's 2 cores to give, and
            // requests are what the scheduler counts.
            ps: ReplicaResources {
                cpu: "100m".into(),
                memory: "128Mi".into(),
                gpu: 0,
            },
            trainer: ReplicaResources {
                cpu: "100m".into(),
                memory: "128Mi".into(),
                gpu: 0,
            },
            datasets: vec![],
            models: vec![],
        }
    }
}

/// Parameter servers wait to be stopped; trainers print their environment
/// and exit with `$EXIT_<id>` (default 0).
const PS_AND_TRAINERS: &str = r#"
if [ "$TRAINING_ROLE" = PSERVER ]; then echo "ps up on $PADDLE_PORT"; exec sleep 300; fi
env | grep -E '^(PADDLE_|TRAINING_ROLE|POD_IP|PYTHONUNBUFFERED|GREETING)' | sort
code=$(eval echo \${EXIT_$PADDLE_TRAINER_ID:-0})
echo "trainer $PADDLE_TRAINER_ID done with $code"
exit $code
"#;

async fn wait_for(h: &Harness, account: &Account, name: &str, want: JobStatus) -> Job {
    let start = Instant::now();
    loop {
        let job = h.cluster.job(account, name).await.unwrap();
        if job.status == want {
            return job;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{name} stayed {:?}, wanted {want:?}: {}",
            job.status,
            job.message
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn log_text(
    h: &Harness,
    account: &Account,
    job: &str,
    pod: &str,
    request: LogRequest,
) -> String {
    common::log_text(h.cluster.as_ref(), account, job, pod, request).await
}

fn whole_log() -> LogRequest {
    LogRequest {
        tail: None,
        follow: false,
        timestamps: false,
    }
}

macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread")]
                async fn on_local_with_sqlite() {
                    super::$name(super::local(super::common::sqlite().await).await).await;
                }

                #[tokio::test(flavor = "multi_thread")]
                async fn on_local_with_postgres() {
                    if let Some(db) = super::common::postgres().await {
                        super::$name(super::local(db).await).await;
                    }
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn on_a_real_node() {
                    if let Some(h) = super::kube(super::common::sqlite().await).await {
                        super::$name(h).await;
                    }
                }
            }
        )*
    };
}

contract!(
    a_job_succeeds_when_every_trainer_exits_zero,
    replicas_get_the_environment_paddle_expects,
    a_failing_trainer_fails_the_job_and_stops_the_rest,
    stopping_a_job_ends_every_process_it_started,
    a_replica_that_ignores_sigterm_is_killed_after_the_grace_period,
    names_are_unique_per_account_and_bad_specs_name_their_field,
    another_accounts_job_is_not_found,
    the_job_list_filters_sorts_and_pages,
    logs_can_be_tailed_followed_and_read_without_timestamps,
    a_running_jobs_last_log_line_is_when_it_last_printed,
    deleting_a_job_removes_its_record_and_logs,
    a_program_that_cannot_start_fails_the_job_with_the_reason,
    a_job_waiting_for_room_is_pending_says_why_and_stops_without_running,
);

async fn a_job_succeeds_when_every_trainer_exits_zero(h: Harness) {
    let submitted = h
        .cluster
        .submit(&h.ann_user, h.job("mnist", 1, 2, PS_AND_TRAINERS))
        .await
        .unwrap();
    assert_eq!(submitted.cluster, h.cluster.name());
    assert_eq!((submitted.ps.total, submitted.trainers.total), (1, 2));
    let done = wait_for(&h, &h.ann, "mnist", JobStatus::Succeeded).await;
    assert_eq!(done.trainers.succeeded, 2);
    assert_eq!(done.failed(), 0);
    assert!(done.started_at.is_some() && done.finished_at >= done.started_at);

    let pods = h.cluster.pods(&h.ann, "mnist").await.unwrap();
    let phases: Vec<_> = pods.iter().map(|p| (p.name.as_str(), p.phase)).collect();
    assert_eq!(
        phases,
        [
            ("ps-0", PodPhase::Stopped),
            ("trainer-0", PodPhase::Succeeded),
            ("trainer-1", PodPhase::Succeeded)
        ]
    );
    assert_eq!(pods[1].exit_code, Some(0));
    assert!(log_text(&h, &h.ann, "mnist", "trainer-1", whole_log())
        .await
        .contains("trainer 1 done with 0"));
    // The trainers may be done before the parameter server's container has
    // started (a real node takes a second or two to start one): a stopped
    // replica that ran kept what it printed.
    if pods[0].started_at.is_some() {
        assert!(log_text(&h, &h.ann, "mnist", "ps-0", whole_log())
            .await
            .contains("ps up on"));
    }
}

async fn replicas_get_the_environment_paddle_expects(h: Harness) {
    h.cluster
        .submit(&h.ann_user, h.job("env", 2, 2, PS_AND_TRAINERS))
        .await
        .unwrap();
    wait_for(&h, &h.ann, "env", JobStatus::Succeeded).await;
    let log = log_text(&h, &h.ann, "env", "trainer-1", whole_log()).await;
    let var = |name: &str| {
        log.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} missing from:\n{log}"))
            .to_owned()
    };
    assert_eq!(var("PADDLE_JOB_ID"), "env");
    assert_eq!(var("TRAINING_ROLE"), "TRAINER");
    assert_eq!(var("PADDLE_TRAINER_ID"), "1");
    assert_eq!(var("PADDLE_TRAINERS_NUM"), "2");
    assert_eq!(var("PYTHONUNBUFFERED"), "1");
    assert_eq!(var("GREETING"), "hello");
    let ps: Vec<String> = var("PADDLE_PSERVERS_IP_PORT_LIST")
        .split(',')
        .map(str::to_owned)
        .collect();
    let trainers: Vec<String> = var("PADDLE_TRAINER_ENDPOINTS")
        .split(',')
        .map(str::to_owned)
        .collect();
    assert_eq!((ps.len(), trainers.len()), (2, 2));
    // Locally replicas share loopback and differ by port; on Kubernetes each
    // has its own DNS name through the job's headless Service.
    let host = if h.kube {
        "trainer-1.env".to_owned()
    } else {
        "127.0.0.1".to_owned()
    };
    let me = format!("{host}:{}", var("PADDLE_PORT"));
    assert_eq!(
        trainers[1], me,
        "a trainer's own endpoint is its entry in the list"
    );
    assert_eq!(var("PADDLE_CURRENT_ENDPOINT"), me);
    let mut all: Vec<&String> = ps.iter().chain(&trainers).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 4, "every replica has its own endpoint");
    if h.kube {
        assert_eq!(
            ps[1],
            format!("ps-1.env:{}", ps[1].rsplit(':').next().unwrap())
        );
    } else {
        assert!(all.iter().all(|e| e.starts_with("127.0.0.1:")));
    }
    // The console's own secrets never reach a job.
    assert!(!log.contains("DATABASE_URL"));
}

async fn a_failing_trainer_fails_the_job_and_stops_the_rest(h: Harness) {
    let mut spec = h.job("bad", 1, 3, PS_AND_TRAINERS);
    spec.env.push(app::models::EnvVar {
        name: "EXIT_1".into(),
        value: "3".into(),
    });
    h.cluster.submit(&h.ann_user, spec).await.unwrap();
    let failed = wait_for(&h, &h.ann, "bad", JobStatus::Failed).await;
    assert!(
        failed.message.contains("trainer-1 exited with code 3"),
        "{}",
        failed.message
    );
    assert_eq!(failed.trainers.failed, 1);
    let pods = h.cluster.pods(&h.ann, "bad").await.unwrap();
    let t1 = pods.iter().find(|p| p.name == "trainer-1").unwrap();
    assert_eq!((t1.phase, t1.exit_code), (PodPhase::Failed, Some(3)));
    assert!(pods.iter().all(|p| p.phase.is_finished()), "{pods:?}");
    assert_eq!(
        pods.iter().find(|p| p.name == "ps-0").unwrap().phase,
        PodPhase::Stopped
    );
    // The job page's timeline: what happened, in order, with the reasons.
    let history = h.cluster.history(&h.ann, "bad").await.unwrap();
    assert!(
        history.windows(2).all(|w| w[0].at <= w[1].at),
        "out of order: {history:?}"
    );
    let first = &history[0];
    assert_eq!(
        (first.pod.as_deref(), first.state.as_str()),
        (None, "pending")
    );
    let t1_failed = history
        .iter()
        .find(|e| e.pod.as_deref() == Some("trainer-1") && e.state == "failed")
        .unwrap_or_else(|| panic!("no trainer-1 failure in {history:?}"));
    assert_eq!(t1_failed.exit_code, Some(3), "{t1_failed:?}");
    assert!(
        history
            .iter()
            .any(|e| e.pod.as_deref() == Some("ps-0") && e.state == "stopped"),
        "{history:?}"
    );
    let last_of_job = history.iter().rev().find(|e| e.pod.is_none()).unwrap();
    assert_eq!(last_of_job.state, "failed", "{history:?}");
    assert!(
        last_of_job.message.contains("trainer-1 exited with code 3"),
        "{last_of_job:?}"
    );
    // Each move once: a replica's phase is not written again unchanged.
    let t1_moves = history
        .iter()
        .filter(|e| e.pod.as_deref() == Some("trainer-1"))
        .map(|e| e.state.as_str())
        .collect::<Vec<_>>();
    let mut deduped = t1_moves.clone();
    deduped.dedup();
    assert_eq!(t1_moves, deduped, "{history:?}");
}

async fn stopping_a_job_ends_every_process_it_started(h: Harness) {
    // Each replica leaves a grandchild behind, as launchers and data loaders
    // do: a sleep this test alone runs, found by its command line among the
    // host's processes (a container's are the host's too).
    let seconds = (300_000 + getrandom::u32().unwrap() % 100_000).to_string();
    let script = format!("sleep {seconds} & echo \"child $!\"; wait");
    h.cluster
        .submit(&h.ann_user, h.job("long", 1, 2, &script))
        .await
        .unwrap();
    let running = wait_for(&h, &h.ann, "long", JobStatus::Running).await;
    assert_eq!((running.ps.ready, running.trainers.ready), (1, 2));
    for pod in ["ps-0", "trainer-0", "trainer-1"] {
        common::printed_child(h.cluster.as_ref(), &h.ann, "long", pod).await;
    }
    // Printed after the fork; the grandchild runs `sleep` once it has
    // exec'd, which a replica held to 100m of CPU may take a while to do.
    let start = Instant::now();
    let mut children = common::node::processes_running(&["sleep", &seconds]);
    while children.len() < 3 && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        children = common::node::processes_running(&["sleep", &seconds]);
    }
    assert_eq!(
        children.len(),
        3,
        "one grandchild per replica: {children:?}"
    );

    let stopped = h.cluster.stop(&h.ann, "long").await.unwrap();
    assert_eq!(stopped.status, JobStatus::Stopped);
    assert_eq!(stopped.message, "Stopped by a user.");
    let pods = h.cluster.pods(&h.ann, "long").await.unwrap();
    assert!(
        pods.iter().all(|p| p.phase == PodPhase::Stopped),
        "{pods:?}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let left = common::node::processes_running(&["sleep", &seconds]);
    assert!(left.is_empty(), "grandchildren {left:?} outlived the stop");
    // Stopping again changes nothing.
    assert_eq!(
        h.cluster.stop(&h.ann, "long").await.unwrap().status,
        JobStatus::Stopped
    );
}

async fn a_replica_that_ignores_sigterm_is_killed_after_the_grace_period(h: Harness) {
    let script = "trap '' TERM; echo stubborn; while true; do sleep 0.1; done";
    h.cluster
        .submit(&h.ann_user, h.job("stubborn", 0, 1, script))
        .await
        .unwrap();
    wait_for(&h, &h.ann, "stubborn", JobStatus::Running).await;
    // Running is when its process started, not when its shell has set the
    // trap (a replica held to 100m of CPU may take a while): the line
    // printed after it says so.
    let start = Instant::now();
    loop {
        let request = LogRequest {
            tail: None,
            follow: false,
            timestamps: false,
        };
        let log =
            common::log_text(h.cluster.as_ref(), &h.ann, "stubborn", "trainer-0", request).await;
        if log.lines().any(|l| l == "stubborn") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no trap set: {log}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = Instant::now();
    let stopped = h.cluster.stop(&h.ann, "stubborn").await.unwrap();
    assert_eq!(stopped.status, JobStatus::Stopped);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "killed before the 1 s grace: {took:?}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

async fn names_are_unique_per_account_and_bad_specs_name_their_field(h: Harness) {
    h.cluster
        .submit(&h.ann_user, h.job("same", 0, 1, "exit 0"))
        .await
        .unwrap();
    let err = h
        .cluster
        .submit(&h.ann_user, h.job("same", 0, 1, "exit 0"))
        .await
        .unwrap_err();
    assert_eq!((err.status(), err.field()), (409, Some("name")));
    // Another account may use the name.
    h.cluster
        .submit(&h.eve_user, h.job("same", 0, 1, "exit 0"))
        .await
        .unwrap();

    let mut bad = h.job("Bad_Name", 0, 1, "exit 0");
    assert_eq!(
        h.cluster
            .submit(&h.ann_user, bad.clone())
            .await
            .unwrap_err()
            .field(),
        Some("name")
    );
    bad.name = "fine".into();
    bad.num_trainers = 0;
    assert_eq!(
        h.cluster
            .submit(&h.ann_user, bad.clone())
            .await
            .unwrap_err()
            .field(),
        Some("num_trainers")
    );
    bad.num_trainers = 1;
    bad.trainer.memory = "lots".into();
    let err = h.cluster.submit(&h.ann_user, bad).await.unwrap_err();
    assert_eq!((err.status(), err.field()), (400, Some("trainer.memory")));
    assert!(
        h.cluster.job(&h.ann, "fine").await.is_err(),
        "a refused spec leaves no record"
    );
}

async fn another_accounts_job_is_not_found(h: Harness) {
    h.cluster
        .submit(&h.ann_user, h.job("private", 0, 1, "sleep 30"))
        .await
        .unwrap();
    let eve = &h.eve;
    assert_eq!(
        h.cluster.job(eve, "private").await.unwrap_err().status(),
        404
    );
    assert_eq!(
        h.cluster.stop(eve, "private").await.unwrap_err().status(),
        404
    );
    assert_eq!(
        h.cluster.delete(eve, "private").await.unwrap_err().status(),
        404
    );
    assert_eq!(
        h.cluster.pods(eve, "private").await.unwrap_err().status(),
        404
    );
    assert_eq!(
        h.cluster
            .history(eve, "private")
            .await
            .unwrap_err()
            .status(),
        404
    );
    assert_eq!(
        h.cluster
            .log(eve, "private", "trainer-0", whole_log())
            .await
            .err()
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        h.cluster
            .list_jobs(eve, &JobQuery::default())
            .await
            .unwrap()
            .total,
        0
    );
    assert_eq!(
        h.cluster
            .log(&h.ann, "private", "trainer-9", whole_log())
            .await
            .err()
            .unwrap()
            .status(),
        404
    );
    h.cluster.stop(&h.ann, "private").await.unwrap();
}

async fn the_job_list_filters_sorts_and_pages(h: Harness) {
    for name in ["alpha", "beta", "gamma-one"] {
        h.cluster
            .submit(&h.ann_user, h.job(name, 0, 1, "exit 0"))
            .await
            .unwrap();
        wait_for(&h, &h.ann, name, JobStatus::Succeeded).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut failing = h.job("delta", 0, 1, "exit 1");
    failing.env.clear();
    h.cluster.submit(&h.ann_user, failing).await.unwrap();
    wait_for(&h, &h.ann, "delta", JobStatus::Failed).await;

    let names =
        |page: app::models::JobPage| page.jobs.into_iter().map(|j| j.name).collect::<Vec<_>>();
    let all = h
        .cluster
        .list_jobs(&h.ann, &JobQuery::default())
        .await
        .unwrap();
    assert_eq!(all.total, 4);
    assert_eq!(
        names(all),
        ["delta", "gamma-one", "beta", "alpha"],
        "newest first"
    );

    let q = JobQuery {
        status: Some(JobStatus::Failed),
        ..Default::default()
    };
    assert_eq!(
        names(h.cluster.list_jobs(&h.ann, &q).await.unwrap()),
        ["delta"]
    );
    let q = JobQuery {
        name: Some("MMA".into()),
        ..Default::default()
    };
    assert_eq!(
        names(h.cluster.list_jobs(&h.ann, &q).await.unwrap()),
        ["gamma-one"]
    );
    let q = JobQuery {
        name: Some("%".into()),
        ..Default::default()
    };
    assert_eq!(
        h.cluster.list_jobs(&h.ann, &q).await.unwrap().total,
        0,
        "% is a character, not a wildcard"
    );
    let q = JobQuery {
        sort: JobSort::Name,
        per_page: Some(3),
        page: Some(2),
        ..Default::default()
    };
    let page = h.cluster.list_jobs(&h.ann, &q).await.unwrap();
    assert_eq!((page.total, page.pages()), (4, 2));
    assert_eq!(names(page), ["gamma-one"]);

    let beta = h.cluster.job(&h.ann, "beta").await.unwrap();
    let q = JobQuery {
        from: Some(beta.created_at),
        to: Some(beta.created_at + 1),
        ..Default::default()
    };
    assert_eq!(
        names(h.cluster.list_jobs(&h.ann, &q).await.unwrap()),
        ["beta"]
    );
}

async fn logs_can_be_tailed_followed_and_read_without_timestamps(h: Harness) {
    let script = "for i in 1 2 3 4 5; do echo line $i; sleep 0.2; done; echo oops >&2";
    h.cluster
        .submit(&h.ann_user, h.job("chatty", 0, 1, script))
        .await
        .unwrap();
    wait_for(&h, &h.ann, "chatty", JobStatus::Running).await;

    // Following from the start sees every line, in order, and ends with the pod.
    let followed = log_text(
        &h,
        &h.ann,
        "chatty",
        "trainer-0",
        LogRequest {
            tail: Some(1000),
            follow: true,
            timestamps: false,
        },
    )
    .await;
    assert_eq!(followed, "line 1\nline 2\nline 3\nline 4\nline 5\noops\n");
    wait_for(&h, &h.ann, "chatty", JobStatus::Succeeded).await;

    let tail = log_text(
        &h,
        &h.ann,
        "chatty",
        "trainer-0",
        LogRequest {
            tail: Some(2),
            follow: false,
            timestamps: true,
        },
    )
    .await;
    let lines: Vec<&str> = tail.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].ends_with(" line 5") && lines[1].ends_with(" oops"),
        "{tail}"
    );
    let stamp = lines[0].split(' ').next().unwrap();
    assert!(
        stamp.len() >= 20 && stamp.ends_with('Z') && stamp.contains('T'),
        "{stamp}"
    );
}

/// The stall watcher's sign of life from the log: the newest line's stamp,
/// which stays put while the job prints nothing.
async fn a_running_jobs_last_log_line_is_when_it_last_printed(h: Harness) {
    let before = server::time::now_ms();
    let script = "echo first; sleep 1; echo second; sleep 60";
    h.cluster
        .submit(&h.ann_user, h.job("quiet", 0, 1, script))
        .await
        .unwrap();
    wait_for(&h, &h.ann, "quiet", JobStatus::Running).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !log_text(&h, &h.ann, "quiet", "trainer-0", whole_log())
        .await
        .contains("second")
    {
        assert!(Instant::now() < deadline, "it never printed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let printed = server::time::now_ms();
    let at = h
        .cluster
        .last_log_at(&h.ann, "quiet")
        .await
        .unwrap()
        .expect("a line");
    // Stamped when "second" was read: a second after "first", by now.
    assert!(
        before + 900 <= at && at <= printed,
        "{before} {at} {printed}"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        h.cluster.last_log_at(&h.ann, "quiet").await.unwrap(),
        Some(at)
    );
    let other = h.cluster.last_log_at(&h.eve, "quiet").await;
    assert!(matches!(other, Err(AppError::NotFound { .. })), "{other:?}");
    h.cluster.stop(&h.ann, "quiet").await.unwrap();
}

async fn deleting_a_job_removes_its_record_and_logs(h: Harness) {
    h.cluster
        .submit(&h.ann_user, h.job("gone", 0, 1, "echo bye; sleep 30"))
        .await
        .unwrap();
    wait_for(&h, &h.ann, "gone", JobStatus::Running).await;
    h.cluster.delete(&h.ann, "gone").await.unwrap();
    assert_eq!(
        h.cluster.job(&h.ann, "gone").await.unwrap_err().status(),
        404
    );
    // The name is free again, and the new job starts with an empty log.
    h.cluster
        .submit(&h.ann_user, h.job("gone", 0, 1, "echo again"))
        .await
        .unwrap();
    wait_for(&h, &h.ann, "gone", JobStatus::Succeeded).await;
    assert_eq!(
        log_text(&h, &h.ann, "gone", "trainer-0", whole_log()).await,
        "again\n"
    );
}

async fn a_program_that_cannot_start_fails_the_job_with_the_reason(h: Harness) {
    let mut spec = h.job("missing", 1, 1, "");
    spec.command = vec!["/nonexistent/python3".into(), "train.py".into()];
    h.cluster.submit(&h.ann_user, spec).await.unwrap();
    let failed = wait_for(&h, &h.ann, "missing", JobStatus::Failed).await;
    assert!(
        failed
            .message
            .contains("Could not start /nonexistent/python3"),
        "{}",
        failed.message
    );
    let pods = h.cluster.pods(&h.ann, "missing").await.unwrap();
    assert!(pods.iter().all(|p| p.phase.is_finished()), "{pods:?}");
    // The replica whose failure the job names says why in its log (which
    // one fails first is a race on Kubernetes).
    let culprit = failed.message.split([' ', ':']).next().unwrap().to_owned();
    assert!(log_text(&h, &h.ann, "missing", &culprit, whole_log())
        .await
        .contains("Could not start"));
}

/// A job the cluster has no room for waits as Pending with the reason where
/// the job table shows it (locally: the executor's queue; on Kubernetes: the
/// scheduler's words), and a stop ends it without a replica having run.
async fn a_job_waiting_for_room_is_pending_says_why_and_stops_without_running(h: Harness) {
    let mut waiter = h.job("waiter", 0, 1, "echo ran; sleep 30");
    if h.kube {
        // More GPUs than the test node has: the scheduler cannot place it.
        waiter.trainer.gpu = 9;
    } else {
        // The test console's 8 (simulated) GPUs are all held by another job.
        let mut holder = h.job("holder", 0, 1, "sleep 30");
        holder.trainer.gpu = 8;
        h.cluster.submit(&h.ann_user, holder).await.unwrap();
        wait_for(&h, &h.ann, "holder", JobStatus::Running).await;
        waiter.trainer.gpu = 1;
    }
    h.cluster.submit(&h.ann_user, waiter).await.unwrap();
    let start = Instant::now();
    let waiting = loop {
        let j = h.cluster.job(&h.ann, "waiter").await.unwrap();
        if j.message.to_lowercase().contains("gpu") {
            break j;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no reason given: {:?} {:?}",
            j.status,
            j.message
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(waiting.status, JobStatus::Pending, "{}", waiting.message);
    let stopped = h.cluster.stop(&h.ann, "waiter").await.unwrap();
    assert_eq!(stopped.status, JobStatus::Stopped);
    // Why it waited stays in its history after the row moved on.
    let history = h.cluster.history(&h.ann, "waiter").await.unwrap();
    assert!(
        history
            .iter()
            .any(|e| e.pod.is_none() && e.state == "pending" && e.message == waiting.message),
        "{history:?}"
    );
    let last_of_job = history.iter().rev().find(|e| e.pod.is_none());
    assert_eq!(last_of_job.map(|e| e.state.as_str()), Some("stopped"));
    let pods = h.cluster.pods(&h.ann, "waiter").await.unwrap();
    assert!(pods.iter().all(|p| p.started_at.is_none()), "{pods:?}");
    if !h.kube {
        h.cluster.stop(&h.ann, "holder").await.unwrap();
    }
}
