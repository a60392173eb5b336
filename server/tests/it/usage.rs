//! Quota and resource use through `/api/v1`, on the local executor with real
//! processes: refusal at the limit and just under it, who may set a quota,
//! another account's numbers never visible, CPU-hours of jobs that ran, and
//! a busy replica's CPU on its resource chart.

use crate::common;

use std::time::Duration;

use crate::common::rest::{call, key_for, wait_for};
use crate::common::site::{site, text, Site};
use http::{Method, StatusCode};
use serde_json::{json, Value};
use server::quota::SqlQuotas;

fn job(name: &str, trainers: u32, cpu: &str, script: &str) -> Value {
    json!({
        "name": name,
        "command": ["sh", "-c", script],
        "num_ps": 0,
        "num_trainers": trainers,
        "trainer": {"cpu": cpu, "memory": "256Mi", "gpu": 0}
    })
}

/// The site admin sets `account`'s quota (only a site admin may).
async fn admin_sets_quota(site: &Site, account: &str, form: Value) -> common::rest::Answer {
    let admin = site.admin_key().await;
    set_quota(site, &admin, Some(account), form).await
}

async fn set_quota(
    site: &Site,
    key: &str,
    account: Option<&str>,
    form: Value,
) -> common::rest::Answer {
    let path = match account {
        Some(a) => format!("/api/v1/quota?account={a}"),
        None => "/api/v1/quota".to_owned(),
    };
    call(site, Method::PUT, &path, Some(key), Some(form)).await
}

/// Stops the jobs `names`, so that a test leaves nothing running.
async fn stop_all<S: AsRef<str>>(site: &Site, key: &str, names: impl IntoIterator<Item = S>) {
    for name in names {
        let path = format!("/api/v1/jobs/{}/stop", name.as_ref());
        call(site, Method::POST, &path, Some(key), None).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_that_fits_the_quota_exactly_runs_and_one_more_core_is_refused_with_what_is_over() {
    let site = site().await;
    let key = key_for(&site, "quota-edge").await;
    let set = admin_sets_quota(
        &site,
        "quota-edge",
        json!({"cpu": "3", "memory": "", "gpu": "", "max_jobs": "5"}),
    )
    .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    assert_eq!(set.json()["quota"]["cpu_millis"], 3000);

    // 2 cores running, 1 left: a 1-core job fits exactly.
    let first = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(job("two", 2, "1", "sleep 30")),
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let used = call(&site, Method::GET, "/api/v1/quota", Some(&key), None)
        .await
        .json();
    assert_eq!(used["used"]["cpu_millis"], 2000);
    assert_eq!(used["jobs"], 1);

    // Just over: 1.5 cores asked, 1 left.
    let over = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(job("over", 1, "1500m", "true")),
    )
    .await;
    assert_eq!(over.status, StatusCode::FORBIDDEN, "{}", over.body);
    let message = over.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("CPU: the job asks for 1.5, 1 of 3 is left (500m over)"),
        "{message}"
    );
    // Refused means not recorded.
    let missing = call(&site, Method::GET, "/api/v1/jobs/over", Some(&key), None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);

    let exact = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(job("exact", 1, "1", "true")),
    )
    .await;
    assert_eq!(exact.status, StatusCode::CREATED, "{}", exact.body);
    wait_for(&site, &key, "exact", "succeeded").await;

    // Stopping the first job gives its cores back.
    let stop = call(
        &site,
        Method::POST,
        "/api/v1/jobs/two/stop",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(stop.status, StatusCode::OK, "{}", stop.body);
    wait_for(&site, &key, "two", "stopped").await;
    let again = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(job("after", 1, "3", "true")),
    )
    .await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_job_count_limit_refuses_a_job_beyond_it() {
    let site = site().await;
    let key = key_for(&site, "quota-count").await;
    let set = admin_sets_quota(&site, "quota-count", json!({"max_jobs": "1"})).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    let first = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(job("one", 1, "100m", "sleep 30")),
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let second = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(job("two", 1, "100m", "true")),
    )
    .await;
    assert_eq!(second.status, StatusCode::FORBIDDEN);
    assert!(
        second
            .body
            .contains("Jobs: the job asks for 1, 0 of 1 is left (1 over)"),
        "{}",
        second.body
    );
    stop_all(&site, &key, ["one"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn jobs_submitted_at_the_same_moment_get_no_more_than_the_quota_between_them() {
    let site = site().await;
    let key = key_for(&site, "quota-race").await;
    let set = admin_sets_quota(&site, "quota-race", json!({"max_jobs": "2"})).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    let names: Vec<String> = (0..8).map(|i| format!("race-{i}")).collect();
    let answers = futures_util::future::join_all(names.iter().map(|name| {
        call(
            &site,
            Method::POST,
            "/api/v1/jobs",
            Some(&key),
            Some(job(name, 1, "100m", "sleep 30")),
        )
    }))
    .await;
    let admitted = answers
        .iter()
        .filter(|a| a.status == StatusCode::CREATED)
        .count();
    for a in &answers {
        assert!(
            a.status == StatusCode::CREATED || a.status == StatusCode::FORBIDDEN,
            "{} {}",
            a.status,
            a.body
        );
    }
    stop_all(&site, &key, &names).await;
    let said: Vec<_> = answers
        .iter()
        .map(|a| (a.status, a.body.as_str()))
        .collect();
    assert_eq!(admitted, 2, "{said:#?}");
}

on_both_databases!(
    an_admission_holds_off_the_next_of_its_account_in_any_console_until_it_ends,
    super::admissions_take_turns
);

async fn admissions_take_turns(db: common::TestDb) {
    use app::ports::Quotas;
    let ann = common::account(&db.pool, "turns-a", "pc-turns-a").await;
    let bob = common::account(&db.pool, "turns-b", "pc-turns-b").await;
    let here = SqlQuotas::new(db.pool.clone(), None);
    // On PostgreSQL, a second console: its own pool on the same database.
    // A SQLite file has one console, so there it is the same one.
    let second_console;
    let there = if db.url.starts_with("postgres") {
        second_console = SqlQuotas::new(server::storage::db::connect(&db.url).await.unwrap(), None);
        &second_console
    } else {
        &here
    };
    let first = here.admission(&ann).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), there.admission(&bob))
        .await
        .expect("another account's admission waited")
        .unwrap();
    let mut next = Box::pin(there.admission(&ann));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut next)
            .await
            .is_err(),
        "a second admission of the same account went ahead while the first lasted"
    );
    drop(first);
    tokio::time::timeout(Duration::from_secs(10), next)
        .await
        .expect("the next admission still waits after the first ended")
        .unwrap();

    // More accounts admitting at once than the pool has connections (16)
    // leave it to the queries their admissions wait on.
    let mut held = Vec::new();
    for i in 0..20 {
        let name = format!("turns-{i}");
        let account = common::account(&db.pool, &name, &format!("pc-{name}")).await;
        held.push(here.admission(&account).await.unwrap());
    }
    tokio::time::timeout(Duration::from_secs(10), here.quota_use(&bob))
        .await
        .expect("admissions held every pooled connection")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_quota_fields_are_named_and_change_nothing() {
    let site = site().await;
    let key = key_for(&site, "quota-bad").await;
    let bad = admin_sets_quota(&site, "quota-bad", json!({"cpu": "lots", "gpu": "2"})).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.error().1.as_deref(), Some("cpu"));
    let bad = admin_sets_quota(&site, "quota-bad", json!({"gpu": "-1"})).await;
    assert_eq!(bad.error().1.as_deref(), Some("gpu"));
    let q = call(&site, Method::GET, "/api/v1/quota", Some(&key), None)
        .await
        .json();
    assert_eq!(q["quota"]["gpu"], Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn only_a_site_admin_sets_a_quota_and_other_accounts_stay_invisible() {
    let site = site().await;
    let ann = key_for(&site, "team-a").await;
    let bob = key_for(&site, "team-b").await;
    // The owner may read the quota but not raise it: a quota its owner
    // could lift would protect nothing on a shared cluster.
    let refused = set_quota(&site, &ann, None, json!({"cpu": ""})).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert!(
        refused.body.contains("Only a site admin"),
        "{}",
        refused.body
    );
    // Nor may a member.
    let owner = site.owner("team-a").await;
    let member = common::user_in(&site.db.pool, &owner.account).await;
    sqlx::query("UPDATE users SET role = 'member' WHERE id = $1")
        .bind(member.user_id)
        .execute(&site.db.pool)
        .await
        .unwrap();
    let member_key = server::access_keys::SqlAccessKeys::new(site.db.pool.clone())
        .create_for("team-a", &member.email, "member", Default::default())
        .await
        .unwrap()
        .key;
    let refused = set_quota(&site, &member_key, None, json!({"cpu": "100"})).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_eq!(
        call(&site, Method::GET, "/api/v1/quota", Some(&member_key), None)
            .await
            .status,
        StatusCode::OK
    );

    // Another account's quota, usage and job charts are "not found".
    let set = admin_sets_quota(&site, "team-a", json!({"cpu": "8"})).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    for path in [
        "/api/v1/quota?account=team-a",
        "/api/v1/usage?account=team-a",
        "/api/v1/usage.csv?account=team-a",
    ] {
        let got = call(&site, Method::GET, path, Some(&bob), None).await;
        assert_eq!(got.status, StatusCode::NOT_FOUND, "{path}: {}", got.body);
        assert!(!got.body.contains("8000"), "{}", got.body);
    }
    let started = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&ann),
        Some(job("secret", 1, "100m", "true")),
    )
    .await;
    assert_eq!(started.status, StatusCode::CREATED);
    let charts = call(
        &site,
        Method::GET,
        "/api/v1/jobs/secret/resources",
        Some(&bob),
        None,
    )
    .await;
    assert_eq!(charts.status, StatusCode::NOT_FOUND);
    assert_eq!(
        set_quota(&site, &bob, Some("team-a"), json!({"cpu": "1"}))
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    // A user granted site admin from the command line sets anyone's.
    let granted = SqlQuotas::new(site.db.pool.clone(), None)
        .grant_site_admin("ann@example.com", true)
        .await
        .unwrap();
    assert_eq!(granted, 1, "ann is one user, owner of both test accounts");
    let by_admin = set_quota(&site, &bob, Some("team-a"), json!({"cpu": "2", "gpu": "1"})).await;
    assert_eq!(by_admin.status, StatusCode::OK, "{}", by_admin.body);
    let seen = call(&site, Method::GET, "/api/v1/quota", Some(&ann), None)
        .await
        .json();
    assert_eq!(seen["quota"]["cpu_millis"], 2000);
    assert_eq!(seen["updated"][0], "ann@example.com");
}

#[tokio::test(flavor = "multi_thread")]
async fn cpu_hours_are_what_finished_jobs_requested_times_how_long_they_ran() {
    let site = site().await;
    let key = key_for(&site, "hours").await;
    for (name, cpu) in [("a", "2"), ("b", "500m")] {
        let r = call(
            &site,
            Method::POST,
            "/api/v1/jobs",
            Some(&key),
            Some(job(name, 1, cpu, "sleep 1")),
        )
        .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
    let mut expected = 0.0;
    for (name, cores) in [("a", 2.0), ("b", 0.5)] {
        let j = wait_for(&site, &key, name, "succeeded").await;
        let ran = (j["finished_at"].as_i64().unwrap() - j["started_at"].as_i64().unwrap()) as f64;
        assert!(ran >= 900.0, "{name} ran {ran} ms");
        expected += cores * ran / 3_600_000.0;
    }
    let report = call(&site, Method::GET, "/api/v1/usage", Some(&key), None)
        .await
        .json();
    for w in 0..3 {
        let cpu = report["windows"][w]["cpu"].as_f64().unwrap();
        assert!(
            (cpu - expected).abs() < 1e-6,
            "window {w}: {cpu} vs {expected}"
        );
        assert_eq!(report["windows"][w]["gpu"].as_f64().unwrap(), 0.0);
    }
    assert_eq!(report["users"][0]["user"], "ann@example.com");
    assert_eq!(report["days"].as_array().unwrap().len(), 30);
    let csv = call(&site, Method::GET, "/api/v1/usage.csv", Some(&key), None).await;
    assert_eq!(csv.status, StatusCode::OK);
    assert!(csv.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    assert!(
        csv.body
            .starts_with("scope,who,window,cpu_hours,gpu_hours\n"),
        "{}",
        csv.body
    );
    assert!(
        csv.body
            .contains(&format!("account,,1d,{expected:.4},0.0000")),
        "{}",
        csv.body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_replica_shows_far_more_cpu_than_an_idle_one_on_its_chart_with_the_requested_line() {
    let site = site().await;
    let key = key_for(&site, "busy").await;
    for (name, script) in [("spin", "while :; do :; done"), ("idle", "sleep 60")] {
        let r = call(
            &site,
            Method::POST,
            "/api/v1/jobs",
            Some(&key),
            Some(job(name, 1, "2", script)),
        )
        .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        wait_for(&site, &key, name, "running").await;
    }
    // The test site samples every second; give it a few.
    let cpu_of = |v: &Value| -> Vec<f64> {
        let chart = v["charts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["metric"] == "cpu" && c["role"] == "trainer")
            .cloned()
            .unwrap();
        assert_eq!(chart["requested"], 2.0);
        chart["series"][0]["values"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    };
    let (mut spin, mut idle) = (Vec::new(), Vec::new());
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let got = call(
            &site,
            Method::GET,
            "/api/v1/jobs/spin/resources",
            Some(&key),
            None,
        )
        .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.body);
        assert_eq!(got.json()["source"]["kind"], "sampler");
        spin = cpu_of(&got.json());
        idle = cpu_of(
            &call(
                &site,
                Method::GET,
                "/api/v1/jobs/idle/resources",
                Some(&key),
                None,
            )
            .await
            .json(),
        );
        if spin.len() >= 3 && idle.len() >= 3 {
            break;
        }
    }
    stop_all(&site, &key, ["spin", "idle"]).await;
    assert!(
        spin.len() >= 3 && idle.len() >= 3,
        "samples: {spin:?} {idle:?}"
    );
    // A busy loop: clearly busy (other tests share the two cores), never
    // more than one core; a sleeping job: next to nothing.
    let last = spin[spin.len() - 1];
    assert!((0.25..=1.4).contains(&last), "busy: {spin:?}");
    assert!(idle.iter().all(|c| *c < 0.05), "idle: {idle:?}");
    // No GPU on this machine: no GPU line, not a line at zero.
    let v = call(
        &site,
        Method::GET,
        "/api/v1/jobs/spin/resources",
        Some(&key),
        None,
    )
    .await
    .json();
    let gpu = v["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == "gpu_util")
        .unwrap();
    assert_eq!(gpu["series"].as_array().unwrap().len(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_quota_page_renders_bars_and_hours_without_javascript() {
    let site = site().await;
    let cookie = site.sign_up("page").await;
    // The owner's page has no form to set it (only a site admin may).
    let page = text(site.get("/quota", Some(&cookie)).await).await;
    assert!(!page.contains("Save quota"), "{page}");
    let signed_in = site
        .fetch_post(
            "/api/sign_in",
            &format!(
                "account={}&email=admin%40example.com&password={}",
                common::site::ADMIN_ACCOUNT,
                common::site::ADMIN_PASSWORD.replace(' ', "+")
            ),
            None,
        )
        .await;
    let admin = common::site::cookie_pair(&signed_in);
    let set = site
        .form_post(
            "/api/set_quota",
            "account=page&form%5Bcpu%5D=4&form%5Bmemory%5D=8Gi&form%5Bgpu%5D=&form%5Bmax_jobs%5D=3",
            "/quota",
        )
        .await;
    // Without a cookie the form comes back refused; with it, simply back.
    assert!(
        common::site::location(&set).contains("__err="),
        "{}",
        common::site::location(&set)
    );
    let res = site
        .send(
            http::Request::post("/api/set_quota")
                .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(http::header::ACCEPT, "text/html")
                .header(http::header::REFERER, "http://localhost/quota?account=page")
                .header(http::header::COOKIE, &admin)
                .body(axum::body::Body::from(
                    "account=page&form%5Bcpu%5D=4&form%5Bmemory%5D=8Gi&form%5Bgpu%5D=&form%5Bmax_jobs%5D=3",
                ))
                .unwrap(),
        )
        .await;
    assert!(
        common::site::location(&res).ends_with("/quota?account=page"),
        "{}",
        common::site::location(&res)
    );
    let page = text(site.get("/quota", Some(&cookie)).await).await;
    assert!(page.contains("0 of 4"), "CPU bar: {page}");
    assert!(page.contains("0 B of 8 GiB"), "memory bar");
    assert!(page.contains("0 · no limit"), "GPU without a limit");
    assert!(page.contains("Export CSV"));
    assert!(
        page.contains("<svg"),
        "the chart by day is drawn on the server"
    );
}

on_both_databases!(
    samples_roll_up_into_minutes_and_hours_that_long_ranges_read_and_pruning_drops,
    super::samples_roll_up
);

async fn samples_roll_up(db: common::TestDb) {
    use app::models::{PodSample, PodUsage, ResourceMetric};
    use server::storage::samples::{now_s, ResourceStore};
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO accounts (name, namespace, created_at) VALUES ('pyramid', 'pc-pyramid', 0) RETURNING id",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let account = app::models::Account {
        id,
        name: "pyramid".into(),
        namespace: "pc-pyramid".into(),
        created_at: 0,
    };
    let me = common::user_in(&db.pool, &account).await;
    let (stored, _) = server::storage::jobs::JobStore::new(db.pool.clone())
        .insert(
            &me,
            &serde_json::from_value(job("p", 1, "1", "true")).unwrap(),
            "local",
        )
        .await
        .unwrap();
    let job_id = stored.id;
    let store = ResourceStore::new(db.pool.clone());
    // Three hours of samples every 5 s; CPU is the sample's hour (0, 1, 2).
    let end = (now_s() / 3600.0).floor() * 3600.0;
    let start = end - 3.0 * 3600.0;
    let mut batch = Vec::new();
    let mut t = start;
    while t < end {
        let hour = ((t - start) / 3600.0).floor();
        let usage = PodUsage {
            cpu: hour,
            memory: 1e6,
            ..PodUsage::default()
        };
        batch.push(PodSample {
            pod: "trainer-0".into(),
            t,
            usage,
        });
        t += 5.0;
    }
    for chunk in batch.chunks(1) {
        store.insert(job_id, chunk).await.unwrap();
    }
    store.flush(job_id).await.unwrap();
    // A month's view reads hour means: one point per hour, the hour's CPU.
    let month = store
        .series(job_id, ResourceMetric::Cpu, end - 30.0 * 86_400.0, end, 400)
        .await
        .unwrap();
    assert_eq!(month[0].values, vec![0.0, 1.0, 2.0], "{month:?}");
    assert_eq!(month[0].ts, vec![start, start + 3600.0, start + 7200.0]);
    // Half an hour reads raw samples: 360 of them.
    let recent = store
        .series(job_id, ResourceMetric::Cpu, end - 1800.0, end, 400)
        .await
        .unwrap();
    assert_eq!(recent[0].values.len(), 360);
    // No GPU samples: no GPU line.
    let gpu = store
        .series(job_id, ResourceMetric::GpuUtil, start, end, 400)
        .await
        .unwrap();
    assert!(gpu.is_empty());
    // Keeping one hour drops the rest: raw and rollups alike.
    let dropped = store.prune(3600.0 + (now_s() - end)).await.unwrap();
    assert!(dropped > 1000, "{dropped}");
    let left = store
        .series(job_id, ResourceMetric::Cpu, start, end, 400)
        .await
        .unwrap();
    assert!(
        left[0].ts.iter().all(|t| *t >= end - 3600.0 - 60.0),
        "{:?}",
        &left[0].ts[..3]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_on_a_cluster_without_a_metrics_source_says_so_instead_of_empty_charts() {
    use app::models::MetricsSource;
    let site = site().await;
    let key = key_for(&site, "nometrics").await;
    let me = site.owner("nometrics").await;
    // A job recorded as run on Kubernetes, with no Prometheus configured.
    server::storage::jobs::JobStore::new(site.db.pool.clone())
        .insert(
            &me,
            &serde_json::from_value(job("remote", 1, "1", "true")).unwrap(),
            "kube",
        )
        .await
        .unwrap();
    let got = call(
        &site,
        Method::GET,
        "/api/v1/jobs/remote/resources",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    let v: app::models::JobResources = serde_json::from_str(&got.body).unwrap();
    match v.source {
        MetricsSource::None { why } => assert!(why.contains("--prometheus-url"), "{why}"),
        other => panic!("expected no source, got {other:?}"),
    }
    assert!(v.charts.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_quota_and_job_resources_pages_name_themselves_in_the_window_title() {
    let site = site().await;
    let (key, cookie) = common::rest::key_and_cookie(&site, "titled").await;
    let submitted = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(job("short", 1, "500m", "echo done")),
    )
    .await;
    assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.body);

    let quota = text(site.get("/quota", Some(&cookie)).await).await;
    assert!(
        quota.contains("<title>Quota · PaddleCloud</title>"),
        "{quota}"
    );
    let resources = text(site.get("/jobs/short/resources", Some(&cookie)).await).await;
    assert!(
        resources.contains("<title>short · resources · PaddleCloud</title>"),
        "{resources}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_shorter_than_the_sampling_period_still_has_points_on_its_charts() {
    // The default period (5 s): the job below has ended before the second
    // regular sample would have been taken.
    let site = common::site::site_configured(|c, _| server::console::Config {
        sample_secs: 5,
        ..c
    })
    .await;
    let key = key_for(&site, "brief").await;
    let r = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(job("blink", 1, "500m", "sleep 2")),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    wait_for(&site, &key, "blink", "succeeded").await;
    let got = call(
        &site,
        Method::GET,
        "/api/v1/jobs/blink/resources",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    let v = got.json();
    for metric in ["cpu", "memory"] {
        let chart = v["charts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["metric"] == metric && c["role"] == "trainer")
            .unwrap_or_else(|| panic!("no {metric} chart: {v}"));
        let points = chart["series"][0]["values"]
            .as_array()
            .map_or(0, |a| a.iter().filter(|x| x.is_f64()).count());
        assert!(points >= 1, "{metric}: {chart}");
    }
}
