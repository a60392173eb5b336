//! PaddleBoard's store on both databases: batches stored and read back (NaN
//! and infinities included), resumed jobs replacing repeated steps, envelopes
//! that keep spikes, a second console seeing what another wrote, and the
//! scalars of TensorBoard/VisualDL files a running job writes.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use crate::common::TestDb;
use app::models::{Account, ChartRange, MetricPoint, RangeQuery};
use app::ports::Metrics;
use server::paddleboard::SqlMetrics;
use server::storage::jobs::JobStore;

async fn account(db: &TestDb, name: &str) -> Account {
    common::account(&db.pool, name, &format!("pc-{name}")).await
}

/// An account with a job record called `job` (nothing runs).
async fn with_job(db: &TestDb, name: &str, job: &str) -> Account {
    let account = account(db, name).await;
    let me = common::user_in(&db.pool, &account).await;
    let spec = app::models::JobSpec {
        notebook: None,
        template: None,
        pipeline: None,
        environment: None,
        environment_use: None,
        name: job.into(),
        image: String::new(),
        command: vec!["true".into()],
        args: vec![],
        working_dir: String::new(),
        env: vec![],
        num_ps: 0,
        num_trainers: 1,
        ps: Default::default(),
        trainer: Default::default(),
        datasets: vec![],
        models: vec![],
    };
    JobStore::new(db.pool.clone())
        .insert(&me, &spec, "local")
        .await
        .unwrap();
    account
}

fn p(tag: &str, step: i64, value: f64) -> MetricPoint {
    MetricPoint {
        tag: tag.into(),
        step,
        value,
        wall_time: Some(1_700_000_000.0 + step as f64),
    }
}

fn all(width: usize) -> ChartRange {
    ChartRange::Steps(RangeQuery {
        from: None,
        to: None,
        width,
    })
}

async fn a_batch_is_stored_and_read_back_with_nan_and_infinities(db: TestDb) {
    let ann = with_job(&db, "ann", "mnist").await;
    let metrics = SqlMetrics::new(db.pool.clone(), 1_000_000);
    let batch = vec![
        p("loss", 0, 2.5),
        p("acc", 0, 0.1),
        p("loss", 1, f64::NAN),
        p("loss", 2, f64::INFINITY),
        p("loss", 3, f64::NEG_INFINITY),
        p("loss", 4, 1.25),
    ];
    let summary = metrics.append(&ann, "mnist", batch).await.unwrap();
    assert_eq!(
        (summary.accepted, summary.tags, summary.replaced),
        (6, 2, 0)
    );

    let tags = metrics.tags(&ann, "mnist").await.unwrap();
    let listed: Vec<(&str, u64, Option<i64>)> = tags
        .iter()
        .map(|t| (t.tag.as_str(), t.points, t.last_step))
        .collect();
    assert_eq!(listed, [("acc", 1, Some(0)), ("loss", 5, Some(4))]);

    // A fresh store (a restarted console) reads the same from the database.
    for store in [metrics, SqlMetrics::new(db.pool.clone(), 1_000_000)] {
        let e = store
            .envelope(&ann, "mnist", "loss", all(100))
            .await
            .unwrap();
        assert!(e.full_resolution);
        assert_eq!((e.total, e.nan, e.pos_inf, e.neg_inf), (5, 1, 1, 1));
        assert_eq!((e.min, e.max), (Some(1.25), Some(2.5)));
        let values: Vec<f64> = e.points.iter().map(|p| p.value).collect();
        assert_eq!(values[0], 2.5);
        assert!(values[1].is_nan());
        assert_eq!(values[2..], [f64::INFINITY, f64::NEG_INFINITY, 1.25]);
        assert_eq!(e.points[4].wall_time, 1_700_000_004.0);
    }
}
on_both_databases!(
    a_batch_is_stored_and_read_back_with_nan_and_infinities,
    super::a_batch_is_stored_and_read_back_with_nan_and_infinities
);

async fn a_resumed_job_replaces_its_points_from_the_repeated_step_on(db: TestDb) {
    let ann = with_job(&db, "ann", "resumed").await;
    let metrics = SqlMetrics::new(db.pool.clone(), 1_000_000);
    let first: Vec<_> = (0..100).map(|s| p("loss", s, 1.0)).collect();
    metrics.append(&ann, "resumed", first).await.unwrap();
    // Load it into memory, so the cached copy must follow the restart too.
    metrics
        .envelope(&ann, "resumed", "loss", all(1000))
        .await
        .unwrap();
    let again: Vec<_> = (50..80).map(|s| p("loss", s, 2.0)).collect();
    let summary = metrics.append(&ann, "resumed", again).await.unwrap();
    assert_eq!(summary.replaced, 50);

    for store in [&metrics, &SqlMetrics::new(db.pool.clone(), 1_000_000)] {
        let points = store
            .points(&ann, "resumed", "loss", None, None)
            .await
            .unwrap();
        let steps: Vec<i64> = points.iter().map(|p| p.step).collect();
        assert_eq!(steps, (0..80).collect::<Vec<_>>(), "no zig-zag");
        assert!(points[..50].iter().all(|p| p.value == 1.0));
        assert!(points[50..].iter().all(|p| p.value == 2.0));
    }
    let tags = metrics.tags(&ann, "resumed").await.unwrap();
    assert_eq!((tags[0].points, tags[0].last_step), (80, Some(79)));
}
on_both_databases!(
    a_resumed_job_replaces_its_points_from_the_repeated_step_on,
    super::a_resumed_job_replaces_its_points_from_the_repeated_step_on
);

async fn a_console_sees_points_that_another_console_wrote(db: TestDb) {
    let ann = with_job(&db, "ann", "shared").await;
    let one = SqlMetrics::new(db.pool.clone(), 1_000_000);
    let two = SqlMetrics::new(db.pool.clone(), 1_000_000);
    one.append(&ann, "shared", vec![p("loss", 0, 1.0)])
        .await
        .unwrap();
    assert_eq!(
        one.envelope(&ann, "shared", "loss", all(10))
            .await
            .unwrap()
            .total,
        1
    );
    two.append(&ann, "shared", vec![p("loss", 1, 0.5)])
        .await
        .unwrap();
    let seen = one.envelope(&ann, "shared", "loss", all(10)).await.unwrap();
    assert_eq!(
        seen.total, 2,
        "the cached copy is checked against the database"
    );
}
on_both_databases!(
    a_console_sees_points_that_another_console_wrote,
    super::a_console_sees_points_that_another_console_wrote
);

#[tokio::test]
async fn a_single_spike_among_200000_points_is_in_a_1000_pixel_chart() {
    let db = common::sqlite().await;
    let ann = with_job(&db, "ann", "long").await;
    let metrics = SqlMetrics::new(db.pool.clone(), 1_000_000);
    for chunk in (0..200_000i64).collect::<Vec<_>>().chunks(10_000) {
        let batch = chunk
            .iter()
            .map(|&s| {
                p(
                    "loss",
                    s,
                    if s == 123_457 {
                        50.0
                    } else {
                        1.0 + (s % 7) as f64 * 0.01
                    },
                )
            })
            .collect();
        metrics.append(&ann, "long", batch).await.unwrap();
    }
    let e = metrics
        .envelope(&ann, "long", "loss", all(1000))
        .await
        .unwrap();
    assert_eq!(e.total, 200_000);
    assert!(!e.full_resolution);
    assert!(e.points.len() <= 2000, "{}", e.points.len());
    assert!(e
        .points
        .iter()
        .any(|p| p.step == 123_457 && p.value == 50.0));
    assert_eq!(e.max, Some(50.0));

    // Zooming in gives every point of the range.
    let zoom = ChartRange::Steps(RangeQuery {
        from: Some(123_000),
        to: Some(123_999),
        width: 1000,
    });
    let e = metrics.envelope(&ann, "long", "loss", zoom).await.unwrap();
    assert!(e.full_resolution);
    assert_eq!(e.points.len(), 1000);
}

#[tokio::test]
async fn another_accounts_job_and_unknown_tags_are_not_found() {
    let db = common::sqlite().await;
    let ann = with_job(&db, "ann", "mine").await;
    let eve = with_job(&db, "eve", "hers").await;
    let metrics = SqlMetrics::new(db.pool.clone(), 1_000_000);
    metrics
        .append(&ann, "mine", vec![p("loss", 0, 1.0)])
        .await
        .unwrap();
    let err = metrics
        .append(&eve, "mine", vec![p("loss", 1, 1.0)])
        .await
        .unwrap_err();
    assert_eq!(err.status(), 404);
    assert_eq!(
        metrics
            .envelope(&eve, "mine", "loss", all(10))
            .await
            .unwrap_err()
            .status(),
        404
    );
    assert_eq!(
        metrics
            .envelope(&ann, "mine", "nope", all(10))
            .await
            .unwrap_err()
            .status(),
        404
    );
    let bad = metrics
        .append(&ann, "mine", vec![p("loss", 0, 1.0), p("", 1, 1.0)])
        .await
        .unwrap_err();
    assert_eq!(bad.field(), Some("[1].tag"));
    assert_eq!(
        metrics.tags(&ann, "mine").await.unwrap()[0].points,
        1,
        "nothing of a bad batch is kept"
    );
}

#[tokio::test]
async fn scalars_from_tensorboard_and_visualdl_files_a_job_writes_reach_its_board() {
    let Some(python) = common::metric_logs::python() else {
        assert!(
            std::env::var("PADDLECLOUD_REQUIRE_PYTHON_WRITERS").is_err(),
            "the Python writers venv is required"
        );
        eprintln!("SKIPPED: no ~/.cache/paddlecloud/pyvenv with tensorboardX and visualdl");
        return;
    };
    let site = common::site::site().await;
    site.sign_up("vision").await;
    let by = site.owner("vision").await;
    let account = by.account.clone();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/write_metric_logs.py"
    );
    let spec = app::models::JobSpec {
        notebook: None,
        template: None,
        pipeline: None,
        environment: None,
        environment_use: None,
        name: "writers".into(),
        image: String::new(),
        command: vec![python.display().to_string(), script.into(), ".".into()],
        args: vec![],
        working_dir: String::new(),
        env: vec![],
        num_ps: 0,
        num_trainers: 1,
        ps: Default::default(),
        trainer: Default::default(),
        datasets: vec![],
        models: vec![],
    };
    let services = &site.services;
    services.cluster.submit(&by, spec).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let job = services.cluster.job(&account, "writers").await.unwrap();
        if !job.status.is_active() {
            assert_eq!(
                job.status,
                app::models::JobStatus::Succeeded,
                "{}",
                job.message
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the writers did not finish"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let metrics: Arc<dyn Metrics> = services.metrics.clone();
    // The last pass runs when the job ends; give it a moment.
    let mut tags = Vec::new();
    for _ in 0..50 {
        tags = metrics.tags(&account, "writers").await.unwrap();
        // The tiny runs are written last.
        if tags.iter().any(|t| t.tag.starts_with("tiny_vdl/")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let count = |tag: &str| tags.iter().find(|t| t.tag == tag).map(|t| t.points);
    assert_eq!(count("tb/train/loss"), Some(1000), "{tags:?}");
    assert_eq!(count("tb/train/acc"), Some(1000));
    assert!(
        count("tb/tensor/float_val").is_some(),
        "tensor-style scalars: {tags:?}"
    );
    // VisualDL: a first run of 1,000 steps and a second one that goes on to 1,200.
    assert_eq!(count("vdl/train/loss"), Some(1200), "{tags:?}");
    assert!(tags
        .iter()
        .all(|t| !t.tag.contains("img") && !t.tag.contains("hist")));
    let e = metrics
        .envelope(&account, "writers", "tb/train/loss", all(2000))
        .await
        .unwrap();
    assert!(
        e.nan + e.pos_inf + e.neg_inf > 0,
        "NaN/Inf written by tensorboardX are kept"
    );
}

#[tokio::test]
async fn a_chart_against_time_gets_the_points_logged_in_that_time() {
    let db = common::sqlite().await;
    let ann = with_job(&db, "ann", "timed").await;
    let metrics = SqlMetrics::new(db.pool.clone(), 1_000_000);
    // p() logs step s at wall time 1.7e9 + s.
    metrics
        .append(
            &ann,
            "timed",
            (0..100).map(|s| p("loss", s, s as f64)).collect(),
        )
        .await
        .unwrap();
    let range = ChartRange::WallTime {
        from: 1_700_000_010.0,
        to: 1_700_000_019.5,
        width: 100,
    };
    let e = metrics
        .envelope(&ann, "timed", "loss", range)
        .await
        .unwrap();
    let steps: Vec<i64> = e.points.iter().map(|p| p.step).collect();
    assert_eq!(steps, (10..20).collect::<Vec<_>>());
    assert_eq!(
        e.origin,
        Some(1_700_000_000.0),
        "relative time starts at the first point"
    );
}
