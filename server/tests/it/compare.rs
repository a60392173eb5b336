//! Comparing runs (`/jobs/compare`, `GET /api/v1/jobs/compare.csv`): a
//! template run, a local run and an MLflow run side by side, their
//! parameters from wherever they were recorded, their final metric values,
//! the curves overlaid, "only differences", the CSV; another account's run
//! is not found and bad input is a 400 that says what to send.

use http::{header, Method, StatusCode};
use serde_json::{json, Value};

use crate::common::rest::{call, key_and_cookie, post_ok};
use crate::common::site::{config, site_from, text, Site};
use crate::common::TestDb;

/// A loss curve of 10 points ending at `last`.
fn loss(last: f64) -> Value {
    let points: Vec<Value> = (0..10)
        .map(|s| json!({"tag": "loss", "step": s, "value": last + f64::from(9 - s) * 0.1, "wall_time": 1.7e9 + f64::from(s)}))
        .collect();
    Value::Array(points)
}

/// The account `cmp` with three runs: `tmpl-run` (the template `fit` with
/// lr 0.5, layers 3), `train` (a local run, lr 0.1, layers 3) and `mlflow-a`
/// (an MLflow run, lr 0.01, layers 3), each with a loss curve.
async fn three_runs(site: &Site, key: &str) {
    post_ok(
        site,
        key,
        "/api/v1/templates",
        json!({
            "name": "fit",
            "parameters": [
                {"name": "lr", "type": "float", "min": 0.0, "max": 1.0, "default": 0.1},
                {"name": "layers", "type": "int", "min": 1, "max": 9, "default": 3},
            ],
            "job": {"command": ["true", "{{lr}}", "{{layers}}"], "num_trainers": 1,
                    "trainer": {"cpu": "100m", "memory": "64Mi"}},
        }),
    )
    .await;
    post_ok(
        site,
        key,
        "/api/v1/templates/fit/jobs",
        json!({"name": "tmpl-run", "values": {"lr": 0.5}}),
    )
    .await;
    let run = post_ok(
        site,
        key,
        "/api/v1/local-runs",
        json!({"client_id": "c-1", "params": {"lr": 0.1, "layers": 3},
               "facts": {"host": "laptop", "command": ["python", "train.py"]}}),
    )
    .await;
    assert_eq!(run.json()["name"], "train", "{}", run.body);
    let created = post_ok(
        site,
        key,
        "/api/2.0/mlflow/runs/create",
        json!({"experiment_id": "0", "run_name": "mlflow-a"}),
    )
    .await;
    let run_id = created.json()["run"]["info"]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    post_ok(site,
        key,
        "/api/2.0/mlflow/runs/log-batch",
        json!({"run_id": run_id, "params": [{"key": "lr", "value": "0.01"}, {"key": "layers", "value": "3"}],
               "metrics": [{"key": "loss", "value": 0.25, "timestamp": 1_700_000_000_000i64, "step": 9}]}),
    )
    .await;
    for (job, last) in [("tmpl-run", 0.5), ("train", 0.75)] {
        post_ok(
            site,
            key,
            &format!("/api/v1/jobs/{job}/metrics"),
            loss(last),
        )
        .await;
    }
}

async fn template_local_and_mlflow_runs_compare_side_by_side(db: TestDb) {
    let config = config(&db);
    let site = site_from(db, config).await;
    let (key, cookie) = key_and_cookie(&site, "cmp").await;
    three_runs(&site, &key).await;

    // The job table ticks into the comparison: a GET form of check boxes.
    let jobs = site.page_ok(&cookie, "/jobs").await;
    assert!(
        jobs.contains("<form id=\"compare-jobs\" method=\"GET\" action=\"/jobs/compare\""),
        "{jobs}"
    );
    assert!(
        jobs.contains("name=\"jobs\" value=\"train\" form=\"compare-jobs\""),
        "{jobs}"
    );

    // The check boxes' way of asking (jobs repeated) and the link's (commas).
    let html = site
        .page_ok(&cookie, "/jobs/compare?jobs=tmpl-run&jobs=train,mlflow-a")
        .await;
    for part in [
        "<th data-run=\"tmpl-run\">tmpl-run<small class=\"origin\">template fit v1</small></th>",
        "<th data-run=\"train\">train<small class=\"origin\">local run on laptop</small></th>",
        "<th data-run=\"mlflow-a\">mlflow-a<small class=\"origin\">MLflow run</small></th>",
        "<tr class=\"differs\" data-param=\"lr\"><th>lr</th><td>0.5</td><td>0.1</td><td>0.01</td></tr>",
        "<tr class=\"same\" data-param=\"layers\"><th>layers</th><td>3</td><td>3</td><td>3</td></tr>",
        "<tr class=\"differs\" data-metric=\"loss\"><th>loss</th><td class=\"num\" title=\"0.5 at step 9\">0.5</td>\
         <td class=\"num\" title=\"0.75 at step 9\">0.75</td><td class=\"num\" title=\"0.25 at step 9\">0.25</td></tr>",
        "href=\"/api/v1/jobs/compare.csv?jobs=tmpl-run,train,mlflow-a\"",
        "href=\"/jobs/compare?jobs=tmpl-run,train,mlflow-a&amp;diff=1\"",
    ] {
        assert!(html.contains(part), "{part} not in {html}");
    }
    // The one tag all three have is overlaid: one chart, a line per run.
    let chart = html
        .split("data-testid=\"compare-chart\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no chart in {html}"));
    assert!(html.contains("data-tag=\"loss\""), "{html}");
    assert!(chart.contains("<svg"), "{chart}");
    for run in ["tmpl-run", "train", "mlflow-a"] {
        assert!(chart.contains(&format!("</span>{run}<")), "{run}: {chart}");
    }
    assert!(
        html.contains("<input type=\"checkbox\" name=\"tag\" value=\"loss\" checked"),
        "{html}"
    );

    // Only differences: what every run shares goes; the count says so.
    let diff = site
        .page_ok(&cookie, "/jobs/compare?jobs=train,mlflow-a&diff=1")
        .await;
    assert!(!diff.contains("data-param=\"layers\""), "{diff}");
    assert!(diff.contains("data-param=\"lr\""), "{diff}");
    assert!(diff.contains("1 of 2 differ"), "{diff}");
    assert!(diff.contains(">Show all rows<"), "{diff}");

    // The CSV: a run a row, MLflow's column names, final values.
    let csv = call(
        &site,
        Method::GET,
        "/api/v1/jobs/compare.csv?jobs=tmpl-run,train,mlflow-a",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(csv.status, StatusCode::OK, "{}", csv.body);
    assert_eq!(csv.headers[header::CONTENT_TYPE], "text/csv; charset=utf-8");
    let lines: Vec<&str> = csv.body.lines().collect();
    assert_eq!(
        lines[0],
        "job,status,source,origin,created_at_ms,params.layers,params.lr,metrics.loss"
    );
    assert!(lines[1].starts_with("tmpl-run,"), "{}", csv.body);
    assert!(lines[1].contains(",template fit v1,"), "{}", csv.body);
    assert!(lines[1].ends_with(",3,0.5,0.5"), "{}", csv.body);
    assert!(
        lines[2].starts_with("train,running,local,local run on laptop,"),
        "{}",
        csv.body
    );
    assert!(lines[2].ends_with(",3,0.1,0.75"), "{}", csv.body);
    assert!(
        lines[3].starts_with("mlflow-a,running,mlflow,MLflow run,"),
        "{}",
        csv.body
    );
    assert!(lines[3].ends_with(",3,0.01,0.25"), "{}", csv.body);
    assert_eq!(lines.len(), 4, "{}", csv.body);
    let diff = call(
        &site,
        Method::GET,
        "/api/v1/jobs/compare.csv?jobs=train,mlflow-a&diff=1",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(
        diff.body.lines().next(),
        Some("job,status,source,origin,created_at_ms,params.lr,metrics.loss"),
        "{}",
        diff.body
    );
}

on_both_databases!(
    template_local_and_mlflow_runs_compare_side_by_side,
    super::template_local_and_mlflow_runs_compare_side_by_side
);

async fn another_accounts_run_is_not_found_and_bad_input_says_what_to_send(db: TestDb) {
    let config = config(&db);
    let site = site_from(db, config).await;
    let (key, _) = key_and_cookie(&site, "cmp").await;
    three_runs(&site, &key).await;
    let (eve, eve_cookie) = key_and_cookie(&site, "eve").await;

    let get = |path: &'static str, key: String| {
        let site = &site;
        async move { call(site, Method::GET, path, Some(&key), None).await }
    };
    let theirs = get("/api/v1/jobs/compare.csv?jobs=train", eve.clone()).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{}", theirs.body);
    assert!(theirs.body.contains("Job “train”"), "{}", theirs.body);
    assert!(!theirs.body.contains("0.1"), "{}", theirs.body);
    let page = text(
        site.get("/jobs/compare?jobs=train", Some(&eve_cookie))
            .await,
    )
    .await;
    assert!(page.contains("data-testid=\"compare-error\""), "{page}");
    assert!(!page.contains("laptop"), "{page}");
    let fn_call = site
        .fetch_post(
            "/api/compare_runs",
            "query[jobs][0]=train",
            Some(&eve_cookie),
        )
        .await;
    assert_eq!(fn_call.status(), StatusCode::NOT_FOUND);

    let none = get("/api/v1/jobs/compare.csv", key.clone()).await;
    assert_eq!(none.status, StatusCode::BAD_REQUEST, "{}", none.body);
    assert_eq!(
        none.error(),
        ("invalid".to_owned(), Some("jobs".to_owned())),
        "{}",
        none.body
    );
    assert!(
        none.body.contains("Say which runs to compare"),
        "{}",
        none.body
    );
    let many: Vec<String> = (0..101).map(|i| format!("r{i}")).collect();
    let too_many = call(
        &site,
        Method::GET,
        &format!("/api/v1/jobs/compare.csv?jobs={}", many.join(",")),
        Some(&key),
        None,
    )
    .await;
    assert_eq!(
        too_many.status,
        StatusCode::BAD_REQUEST,
        "{}",
        too_many.body
    );
    assert!(
        too_many.body.contains("at most 100 runs"),
        "{}",
        too_many.body
    );
    let unknown = get("/api/v1/jobs/compare.csv?jobs=train,nope", key.clone()).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.body);
    assert!(unknown.body.contains("Job “nope”"), "{}", unknown.body);
    let no_key = call(
        &site,
        Method::GET,
        "/api/v1/jobs/compare.csv?jobs=train",
        None,
        None,
    )
    .await;
    assert_eq!(no_key.status, StatusCode::UNAUTHORIZED);
}

on_both_databases!(
    another_accounts_run_is_not_found_and_bad_input_says_what_to_send,
    super::another_accounts_run_is_not_found_and_bad_input_says_what_to_send
);

/// The points of the chart's line of the page's first run (palette colour
/// 0), as `x,y` pairs.
fn first_line(html: &str) -> Vec<String> {
    let chart = html
        .split("data-testid=\"compare-chart\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no chart in {html}"));
    let line = chart
        .split("<polyline class=\"chart-stroke-0\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no line in {chart}"));
    let points = line
        .split("points=\"")
        .nth(1)
        .and_then(|p| p.split('"').next())
        .unwrap_or_else(|| panic!("no points in {line}"));
    points.split_whitespace().map(str::to_owned).collect()
}

async fn a_point_written_after_a_view_is_on_the_next_view(db: TestDb) {
    let config = config(&db);
    let site = site_from(db, config).await;
    let (key, cookie) = key_and_cookie(&site, "cmp").await;
    three_runs(&site, &key).await;
    let path = "/jobs/compare?jobs=train,tmpl-run";
    // Viewed twice: the second view is drawn from what the first kept.
    let before = first_line(&site.page_ok(&cookie, path).await);
    assert_eq!(before.len(), 10, "{before:?}");
    assert_eq!(first_line(&site.page_ok(&cookie, path).await), before);

    // One more point, far above the rest: a longer line on a taller axis.
    post_ok(
        &site,
        &key,
        "/api/v1/jobs/train/metrics",
        json!([{"tag": "loss", "step": 10, "value": 50.0, "wall_time": 1.7e9 + 10.0}]),
    )
    .await;
    let html = site.page_ok(&cookie, path).await;
    let after = first_line(&html);
    assert_eq!(after.len(), 11, "{after:?}");
    assert_ne!(
        after[..10],
        before[..],
        "the axes grew to hold step 10 at 50"
    );
    assert!(
        html.contains("<td class=\"num\" title=\"50 at step 10\">50</td>"),
        "{html}"
    );
}

on_both_databases!(
    a_point_written_after_a_view_is_on_the_next_view,
    super::a_point_written_after_a_view_is_on_the_next_view
);
