//! A job's own page (`/jobs/<name>`) and `GET /api/v1/jobs/{name}/detail`:
//! a real job on the local executor that reads a dataset, fails, and has a
//! model version registered as its own; its page tells what it is, what
//! happened (with the reasons), its replicas, what it read and registered,
//! and offers "Run again with changes" (the submit dialog filled from it),
//! "Save as template" and Delete. Another account's job is not found.

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::rest::{call, key_and_cookie, post_ok, wait_for};
use crate::common::site::{config, site_from, text, Site};
use crate::common::TestDb;

/// Account `jobpage` with dataset `mnist`, and job `boom` that reads it, prints
/// a line and exits 3, with version 1 of model `fit` registered as its own.
async fn a_failed_job(site: &Site, key: &str) {
    post_ok(site, key, "/api/v1/datasets", json!({"name": "mnist"})).await;
    post_ok(
        site,
        key,
        "/api/v1/jobs",
        json!({
            "name": "boom", "num_trainers": 1,
            "command": ["sh", "-c", "echo reading $PADDLE_DATASET_DIR; exit 3"],
            "env": [{"name": "FOO", "value": "bar"}],
            "trainer": {"cpu": "100m", "memory": "64Mi"},
            "datasets": ["mnist"],
        }),
    )
    .await;
    wait_for(site, key, "boom", "failed").await;
    post_ok(site, key, "/api/v1/models", json!({"name": "fit"})).await;
    post_ok(
        site,
        key,
        "/api/v1/models/jobpage/fit/versions",
        json!({"description": "from boom", "job": "boom"}),
    )
    .await;
}

async fn a_jobs_page_tells_what_it_is_what_happened_and_what_it_read_and_registered(db: TestDb) {
    let config = config(&db);
    let site = site_from(db, config).await;
    let (key, cookie) = key_and_cookie(&site, "jobpage").await;
    a_failed_job(&site, &key).await;

    // The API's answer: the row, the replica, the history, the version.
    let detail = call(
        &site,
        Method::GET,
        "/api/v1/jobs/boom/detail",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(detail.status, StatusCode::OK, "{}", detail.body);
    let d = detail.json();
    assert_eq!(d["owner"], "jobpage");
    assert_eq!(d["job"]["status"], "failed");
    assert_eq!(d["pods"][0]["exit_code"], 3, "{d}");
    let history = d["history"].as_array().unwrap();
    assert_eq!(
        (&history[0]["pod"], &history[0]["state"]),
        (&Value::Null, &json!("pending")),
        "{d}"
    );
    let states: Vec<String> = history
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e["pod"].as_str().unwrap_or("job"),
                e["state"].as_str().unwrap()
            )
        })
        .collect();
    for want in ["trainer-0:running", "trainer-0:failed", "job:failed"] {
        assert!(
            states.contains(&want.to_owned()),
            "{want} not in {states:?}"
        );
    }
    assert_eq!(d["registered"][0]["name"], "fit", "{d}");
    assert_eq!(d["registered"][0]["version"], 1, "{d}");

    // The page, rendered on the server (it works without JavaScript).
    let html = site.page_ok(&cookie, "/jobs/boom").await;
    for part in [
        "<title>Job boom · PaddleCloud</title>",
        "data-testid=\"job-status\" class=\"status failed\">Failed",
        "data-testid=\"job-message\"",
        "<code data-testid=\"job-command\">sh -c 'echo reading $PADDLE_DATASET_DIR; exit 3'",
        "<code>FOO=bar",
        "1 trainer × 100m CPU, 64Mi",
        "<strong>trainer-0 failed (exit 3)",
        "<td data-testid=\"exit-code\">3",
        "href=\"/datasets/jobpage/mnist\"",
        " in $PADDLE_DATASET_DIR, $PADDLE_DATASET_DIR_MNIST",
        "href=\"/models/jobpage/fit?version=1\">jobpage/fit:1",
        "href=\"/jobs?submit=1&amp;from=boom\"",
        "href=\"/jobs/boom/template\"",
        "<form action=\"/api/delete_job\" method=\"post\">",
        "class=\"log-console inline\"",
        "id=\"board-charts\"",
        "id=\"resource-charts\"",
        "href=\"/jobs/boom?pod=trainer-0#log\"",
    ] {
        assert!(html.contains(part), "{part} not in {html}");
    }
    // The log console shows the replica's output in place.
    assert!(html.contains("reading "), "{html}");
    // The timeline reads newest first: the failure above the submission.
    let failed_at = html.find("<strong>Failed<").expect("the job's failure");
    let pending_at = html.find("<strong>Pending<").expect("its submission");
    assert!(failed_at < pending_at, "{html}");

    // A job event refreshes the top region alone, not the charts or the log.
    let request = http::Request::get("/jobs/boom")
        .header(http::header::ACCEPT, "text/html")
        .header(http::header::COOKIE, &cookie)
        .header(app::components::live::REGION_HEADER, "job-detail")
        .body(axum::body::Body::empty())
        .unwrap();
    let region = text(site.send(request).await).await;
    assert!(region.contains("trainer-0 failed (exit 3)"), "{region}");
    assert!(!region.contains("log-console"), "{region}");
    assert!(!region.contains("board-charts"), "{region}");

    // The job table links each job to its page.
    let table = site.page_ok(&cookie, "/jobs").await;
    assert!(
        table.contains("<a href=\"/jobs/boom\" class=\"job-link\">boom</a>"),
        "{table}"
    );

    // "Run again with changes": the submit dialog filled from the job.
    let again = site.page_ok(&cookie, "/jobs?submit=1&from=boom").await;
    for part in [
        "value=\"boom-2\"",
        "value=\"sh -c 'echo reading $PADDLE_DATASET_DIR; exit 3'\"",
        ">FOO=bar</textarea>",
        "name=\"form[datasets]\" value=\"mnist\"",
        "name=\"form[trainer_memory]\" value=\"64Mi\"",
    ] {
        assert!(again.contains(part), "{part} not in {again}");
    }
    // Submitting it as the dialog posts it (no JavaScript) runs the copy.
    let form = [
        ("form[name]", "boom-2"),
        ("form[image]", ""),
        ("form[environment]", ""),
        ("form[command]", "sh -c 'exit 0'"),
        ("form[working_dir]", ""),
        ("form[num_ps]", "0"),
        ("form[ps_cpu]", "1"),
        ("form[ps_memory]", "1Gi"),
        ("form[num_trainers]", "1"),
        ("form[trainer_cpu]", "100m"),
        ("form[trainer_memory]", "64Mi"),
        ("form[trainer_gpu]", "0"),
        ("form[env]", "FOO=bar"),
        ("form[datasets]", "mnist"),
        ("form[models]", ""),
    ];
    let body: Vec<String> = form
        .iter()
        .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
        .collect();
    let submitted = site
        .form_post_as(
            &cookie,
            "/api/submit_job",
            &body.join("&"),
            "/jobs?submit=1&from=boom",
        )
        .await;
    assert!(
        submitted.status().is_redirection(),
        "{}",
        submitted.status()
    );
    assert_eq!(submitted.headers()[http::header::LOCATION], "/jobs");
    let copy = wait_for(&site, &key, "boom-2", "succeeded").await;
    assert_eq!(copy["spec"]["datasets"], json!(["mnist"]), "{copy}");

    // Delete from the page goes back to the table, the job gone.
    let deleted = site
        .form_post_as(&cookie, "/api/delete_job", "name=boom", "/jobs/boom")
        .await;
    assert!(deleted.status().is_redirection(), "{}", deleted.status());
    assert_eq!(deleted.headers()[http::header::LOCATION], "/jobs");
    let gone = call(
        &site,
        Method::GET,
        "/api/v1/jobs/boom/detail",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "{}", gone.body);
}

fn urlencode(s: &str) -> String {
    app::models::url::encode(s)
}

on_both_databases!(
    a_jobs_page_tells_what_it_is_what_happened_and_what_it_read_and_registered,
    super::a_jobs_page_tells_what_it_is_what_happened_and_what_it_read_and_registered
);

async fn another_accounts_job_page_and_detail_are_not_found(db: TestDb) {
    let config = config(&db);
    let site = site_from(db, config).await;
    let (key, _) = key_and_cookie(&site, "jobpage").await;
    a_failed_job(&site, &key).await;
    let (eve, eve_cookie) = key_and_cookie(&site, "eve").await;

    let theirs = call(
        &site,
        Method::GET,
        "/api/v1/jobs/boom/detail",
        Some(&eve),
        None,
    )
    .await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{}", theirs.body);
    assert!(theirs.body.contains("Job “boom”"), "{}", theirs.body);
    let res = site.get("/jobs/boom", Some(&eve_cookie)).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let html = text(res).await;
    assert!(html.contains("Job “boom”"), "{html}");
    assert!(!html.contains("exit 3"), "{html}");
    assert!(!html.contains("log-console"), "{html}");
    let fn_call = site
        .fetch_post("/api/job_overview", "name=boom", Some(&eve_cookie))
        .await;
    assert_eq!(fn_call.status(), StatusCode::NOT_FOUND);
    let no_key = call(&site, Method::GET, "/api/v1/jobs/boom/detail", None, None).await;
    assert_eq!(no_key.status, StatusCode::UNAUTHORIZED);
    // Not signed in: the page sends you to sign in, as every page does.
    let anonymous = site.get("/jobs/boom", None).await;
    assert!(
        anonymous.status().is_redirection(),
        "{}",
        anonymous.status()
    );
}

on_both_databases!(
    another_accounts_job_page_and_detail_are_not_found,
    super::another_accounts_job_page_and_detail_are_not_found
);
