//! The console's own `/metrics` (issue 44 item 8), read as Prometheus reads
//! it: parsed by the Prometheus project's Python client
//! (`prometheus_client.openmetrics.parser`, strict about the format). Only
//! the scrape token or a site admin reads it; requests are counted under
//! the route the router matched (never the raw path), with their latency;
//! jobs by status, the background loops and the database pool are there.

use std::io::Write;
use std::process::Command;

use http::{header, Method, StatusCode};
use serde_json::{json, Value};

use crate::common;
use crate::common::rest::{call, key_for, wait_for};

const TOKEN: &str = "scrape-secret-0123456789";

/// Every sample of `text`, as the Python client parses it: `[name, labels,
/// value]`; `None` (after saying so) without the tests' Python venv.
fn parsed(text: &str) -> Option<Vec<(String, Value, f64)>> {
    let Some(python) = common::metric_logs::python() else {
        let required = std::env::var(common::metric_logs::REQUIRE_ENV)
            .is_ok_and(|v| !v.is_empty() && v != "0");
        assert!(!required, "no Python venv with prometheus_client");
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: no Python venv; /metrics was not parsed by prometheus_client"
        );
        return None;
    };
    let script = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append([s.name, s.labels, s.value])
print(json.dumps(out))
"#;
    let mut command = Command::new(python);
    command.args(["-c", script]);
    let out = common::cli::piped(command, text);
    assert!(
        out.status.success(),
        "prometheus_client refused the text: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<(String, Value, f64)> = serde_json::from_slice(&out.stdout).unwrap();
    Some(samples)
}

/// The value of the sample `name` whose labels include `labels`.
fn value(samples: &[(String, Value, f64)], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l[*k] == *v))
        .map(|s| s.2)
}

on_both_databases!(
    the_console_metrics_are_for_a_scraper_or_a_site_admin_and_count_what_happened,
    super::metrics_are_counted_and_guarded
);
async fn metrics_are_counted_and_guarded(db: common::TestDb) {
    let mut config = common::site::config(&db);
    config.metrics_token = Some(TOKEN.to_owned());
    let site = common::site::site_from(db, config).await;
    let key = key_for(&site, "ops").await;
    let quick = json!({"name": "quick", "command": ["true"], "num_trainers": 1,
                       "trainer": {"cpu": "100m", "memory": "64Mi"}});
    let made = call(&site, Method::POST, "/api/v1/jobs", Some(&key), Some(quick)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    wait_for(&site, &key, "quick", "succeeded").await;
    for _ in 0..3 {
        let listed = call(&site, Method::GET, "/api/v1/jobs", Some(&key), None).await;
        assert_eq!(listed.status, StatusCode::OK);
    }
    let missing = call(
        &site,
        Method::GET,
        "/api/v1/jobs/nope-xyz-123",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let _ = call(&site, Method::GET, "/no-such-page-xyz-123", None, None).await;

    // Who may read it.
    let anonymous = call(&site, Method::GET, "/metrics", None, None).await;
    assert_eq!(
        anonymous.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        anonymous.body
    );
    let wrong = call(&site, Method::GET, "/metrics", Some("not-the-token"), None).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "{}", wrong.body);
    let owner = call(&site, Method::GET, "/metrics", Some(&key), None).await;
    assert_eq!(owner.status, StatusCode::FORBIDDEN, "{}", owner.body);
    assert!(owner.body.contains("site admin"), "{}", owner.body);
    let admin = call(
        &site,
        Method::GET,
        "/metrics",
        Some(&site.admin_key().await),
        None,
    )
    .await;
    assert_eq!(admin.status, StatusCode::OK, "{}", admin.body);

    // The pipeline scheduler's loop runs here once its lease is taken.
    let mut text = String::new();
    for _ in 0..100 {
        let scraped = call(&site, Method::GET, "/metrics", Some(TOKEN), None).await;
        assert_eq!(scraped.status, StatusCode::OK, "{}", scraped.body);
        assert!(
            scraped.headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("application/openmetrics-text"),
            "{:?}",
            scraped.headers
        );
        text = scraped.body;
        if text.contains("paddlecloud_loop_passes_total{loop=\"pipeline-scheduler\"}") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        !text.contains("nope-xyz") && !text.contains("no-such-page"),
        "raw paths in labels:\n{text}"
    );
    let Some(samples) = parsed(&text) else {
        return;
    };
    let requests = "paddlecloud_http_requests_total";
    let listed = [
        ("method", "GET"),
        ("route", "/api/v1/jobs"),
        ("status", "200"),
    ];
    assert!(value(&samples, requests, &listed).unwrap() >= 3.0, "{text}");
    let missing = [("route", "/api/v1/jobs/{name}"), ("status", "404")];
    assert_eq!(value(&samples, requests, &missing), Some(1.0), "{text}");
    assert!(
        value(&samples, requests, &[("route", "other"), ("status", "404")]).is_some(),
        "{text}"
    );
    let count = "paddlecloud_http_request_duration_seconds_count";
    let route = [("method", "GET"), ("route", "/api/v1/jobs")];
    assert!(value(&samples, count, &route).unwrap() >= 3.0, "{text}");
    let bucket = "paddlecloud_http_request_duration_seconds_bucket";
    let all = value(
        &samples,
        bucket,
        &[("method", "GET"), ("route", "/api/v1/jobs"), ("le", "+Inf")],
    );
    assert_eq!(all, value(&samples, count, &route), "{text}");
    assert_eq!(
        value(&samples, "paddlecloud_jobs", &[("status", "succeeded")]),
        Some(1.0),
        "{text}"
    );
    let scheduler = [("loop", "pipeline-scheduler")];
    assert_eq!(
        value(&samples, "paddlecloud_loop_running", &scheduler),
        Some(1.0),
        "{text}"
    );
    assert!(
        value(&samples, "paddlecloud_loop_passes_total", &scheduler).unwrap() >= 1.0,
        "{text}"
    );
    let last = value(
        &samples,
        "paddlecloud_loop_last_pass_timestamp_seconds",
        &scheduler,
    )
    .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((now - last).abs() < 60.0, "last pass {last}, now {now}");
    assert!(
        value(&samples, "paddlecloud_db_pool_max_connections", &[]).unwrap() >= 1.0,
        "{text}"
    );
    assert!(
        value(
            &samples,
            "paddlecloud_db_pool_connections",
            &[("state", "idle")]
        )
        .is_some(),
        "{text}"
    );
    assert_eq!(
        value(&samples, "paddlecloud_queue_length", &[]),
        Some(0.0),
        "{text}"
    );
    let version = [("version", env!("CARGO_PKG_VERSION"))];
    assert_eq!(
        value(&samples, "paddlecloud_build_info", &version),
        Some(1.0),
        "{text}"
    );
}
