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

/// Steps and values of every stored point of `tag`, read by a fresh store
/// (from the database, not from the writer's memory).
async fn stored(db: &TestDb, who: &Account, job: &str, tag: &str) -> Vec<(i64, f64)> {
    SqlMetrics::new(db.pool.clone(), 1_000_000)
        .points(who, job, tag, None, None)
        .await
        .unwrap()
        .iter()
        .map(|p| (p.step, p.value))
        .collect()
}

async fn blocks(db: &TestDb) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM metric_blocks")
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

async fn big_and_small_batches_and_a_cut_inside_one_keep_every_point_in_order(db: TestDb) {
    let ann = with_job(&db, "ann", "blocks").await;
    let metrics = SqlMetrics::new(db.pool.clone(), 1_000_000);
    // Big batches: a stored block each.
    for (from, to) in [
        (0, 5_000),
        (5_000, 15_000),
        (15_000, 25_000),
        (25_000, 35_000),
    ] {
        let batch = (from..to).map(|s| p("loss", s, s as f64)).collect();
        metrics.append(&ann, "blocks", batch).await.unwrap();
    }
    let big = blocks(&db).await;
    // A job logging one point a call: they join one block, not one each.
    for s in 35_000..35_300 {
        metrics
            .append(&ann, "blocks", vec![p("loss", s, s as f64)])
            .await
            .unwrap();
    }
    assert_eq!(blocks(&db).await, big + 1, "single points share a block");
    // Resumed from a checkpoint at 12,345: inside the second batch.
    let again = (12_345..12_400).map(|s| p("loss", s, -1.0)).collect();
    let summary = metrics.append(&ann, "blocks", again).await.unwrap();
    assert_eq!(summary.replaced, 35_300 - 12_345);
    let points = stored(&db, &ann, "blocks", "loss").await;
    assert_eq!(points.len(), 12_400);
    assert!(points.iter().enumerate().all(|(i, (s, _))| *s == i as i64));
    assert!(points[..12_345].iter().all(|(s, v)| *v == *s as f64));
    assert!(points[12_345..].iter().all(|(_, v)| *v == -1.0));
    let tags = metrics.tags(&ann, "blocks").await.unwrap();
    assert_eq!((tags[0].points, tags[0].last_step), (12_400, Some(12_399)));
}
on_both_databases!(
    big_and_small_batches_and_a_cut_inside_one_keep_every_point_in_order,
    super::big_and_small_batches_and_a_cut_inside_one_keep_every_point_in_order
);

async fn writers_of_one_series_at_once_never_leave_it_zig_zagging(db: TestDb) {
    let ann = with_job(&db, "ann", "racing").await;
    let metrics = Arc::new(SqlMetrics::new(db.pool.clone(), 1_000_000));
    // Two replicas' worth of writers repeating each other's steps.
    let writers = (0..4).map(|w| {
        let (metrics, ann) = (metrics.clone(), ann.clone());
        tokio::spawn(async move {
            for b in 0..20 {
                let batch = (b * 100..b * 100 + 100)
                    .map(|s| p("loss", s, f64::from(w)))
                    .collect();
                metrics.append(&ann, "racing", batch).await.unwrap();
            }
        })
    });
    for w in writers.collect::<Vec<_>>() {
        w.await.unwrap();
    }
    let points = stored(&db, &ann, "racing", "loss").await;
    assert!(
        points.windows(2).all(|w| w[0].0 < w[1].0),
        "steps strictly increase"
    );
    let tags = metrics.tags(&ann, "racing").await.unwrap();
    assert_eq!(tags[0].points as usize, points.len());
    assert_eq!(tags[0].last_step, points.last().map(|p| p.0));
}
on_both_databases!(
    writers_of_one_series_at_once_never_leave_it_zig_zagging,
    super::writers_of_one_series_at_once_never_leave_it_zig_zagging
);

#[tokio::test(flavor = "multi_thread")]
async fn the_first_chart_of_a_series_this_console_wrote_comes_from_memory() {
    let db = common::sqlite().await;
    let ann = with_job(&db, "ann", "live").await;
    let metrics = SqlMetrics::new(db.pool.clone(), 1_000_000);
    let batch = (0..1_000).map(|s| p("loss", s, 1.0)).collect();
    metrics.append(&ann, "live", batch).await.unwrap();
    // Were the chart loaded from the database, it would now be empty.
    sqlx::query("DELETE FROM metric_blocks")
        .execute(&db.pool)
        .await
        .unwrap();
    let e = metrics
        .envelope(&ann, "live", "loss", all(100))
        .await
        .unwrap();
    assert_eq!(e.total, 1_000);
}

async fn points_stored_a_row_each_before_blocks_are_kept_on_upgrade(db: TestDb) {
    let ann = with_job(&db, "ann", "old").await;
    let job_id: i64 = sqlx::query_scalar("SELECT id FROM jobs WHERE name = 'old'")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    // What a console before blocks left: a series and its rows (NaN as NULL).
    let series: i64 = sqlx::query_scalar(
        "INSERT INTO metric_series (job_id, tag, points, last_step, revision) \
         VALUES ($1, 'loss', 30000, 29999, 7) RETURNING id",
    )
    .bind(job_id)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    sqlx::query(
        "WITH RECURSIVE n(s) AS (SELECT 0 UNION ALL SELECT s + 1 FROM n WHERE s < 29999) \
         INSERT INTO metric_points (series_id, step, wall_time, value) \
         SELECT $1, s, 1700000000.0 + s, CASE WHEN s = 7 THEN NULL ELSE s / 2.0 END FROM n",
    )
    .bind(series)
    .execute(&db.pool)
    .await
    .unwrap();
    let metrics = SqlMetrics::new(db.pool.clone(), 1_000_000);
    assert_eq!(metrics.convert_row_points().await.unwrap(), 30_000);
    assert_eq!(metrics.convert_row_points().await.unwrap(), 0, "once");
    let points = stored(&db, &ann, "old", "loss").await;
    assert_eq!(points.len(), 30_000);
    assert!(points[7].1.is_nan());
    assert_eq!(points[29_999], (29_999, 14_999.5));
    // Writing on continues the series.
    metrics
        .append(&ann, "old", vec![p("loss", 30_000, 0.25)])
        .await
        .unwrap();
    assert_eq!(stored(&db, &ann, "old", "loss").await.len(), 30_001);
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM metric_points")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(rows, 0);
}
on_both_databases!(
    points_stored_a_row_each_before_blocks_are_kept_on_upgrade,
    super::points_stored_a_row_each_before_blocks_are_kept_on_upgrade
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

#[tokio::test(flavor = "multi_thread")]
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

#[tokio::test(flavor = "multi_thread")]
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

#[tokio::test(flavor = "multi_thread")]
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

#[tokio::test(flavor = "multi_thread")]
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
