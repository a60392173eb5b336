//! Metric files the real tensorboardX and VisualDL writers write while a
//! command runs under the SDK's `paddlecloud.ship` (as every replica's
//! command runs in a pod on Kubernetes), sent to the console piece by piece
//! and stored as the job's series: every point of the writers' manifest,
//! exactly as the console reads a local job's directory.

use std::path::Path;

use http::{Method, StatusCode};

use crate::common::metric_logs::{
    load_fixture, python, python_fixture, same_value, stored, writer_script,
};
use crate::common::rest::{call, key_and_cookie, spec};

#[tokio::test(flavor = "multi_thread")]
async fn the_real_writers_files_shipped_from_a_replica_become_the_series_their_manifest_lists() {
    // Skips (saying so) without the writers' venv, or fails where it is required.
    if python_fixture().is_none() {
        return;
    }
    let python = python().unwrap();
    let (site, url) = crate::common::site::on_socket(|config, _, _| config).await;
    let (key, _) = key_and_cookie(&site, "shipper").await;
    let submitted = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(spec("shipped", "sleep 300")),
    )
    .await;
    assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.body);

    // The replica's directory: the writers write below it, as in a pod.
    let work = tempfile::tempdir().unwrap();
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk/python");
    let out = tokio::process::Command::new(&python)
        .args(["-m", "paddlecloud.ship", "--"])
        .arg(&python)
        .arg(writer_script())
        .arg("out")
        .current_dir(work.path())
        .env("PYTHONPATH", &sdk)
        .env("PADDLECLOUD_SERVER", &url)
        .env("PADDLECLOUD_JOB_TOKEN", &key)
        .env("PADDLE_JOB_ID", "shipped")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("refused"), "{stderr}");
    let fixture = load_fixture(&work.path().join("out"));

    let tags = call(
        &site,
        Method::GET,
        "/api/v1/jobs/shipped/metrics",
        Some(&key),
        None,
    )
    .await
    .json();
    let mut stored_points = 0;
    for run in ["tb", "vdl", "tiny_tb", "tiny_vdl"] {
        let mut want: Vec<&str> = fixture
            .expected_in(run)
            .iter()
            .map(|e| e.tag.as_str())
            .collect();
        want.sort();
        want.dedup();
        for tag in want {
            let full = format!("out/{run}/{tag}");
            let expected: Vec<_> = fixture
                .expected_in(run)
                .into_iter()
                .filter(|e| e.tag == tag)
                .collect();
            let path = format!(
                "/api/v1/jobs/shipped/metrics/{}?format=csv",
                full.replace('%', "%25").replace(' ', "%20")
            );
            let csv = call(&site, Method::GET, &path, Some(&key), None).await;
            assert_eq!(csv.status, StatusCode::OK, "{full}: {} ({tags})", csv.body);
            let rows: Vec<(i64, f64, f64)> = csv
                .body
                .lines()
                .skip(1)
                .map(|line| {
                    let mut cols = line.split(',');
                    let step = cols.next().unwrap().parse().unwrap();
                    let wall = cols.next().unwrap().parse().unwrap();
                    let value = parse_value(cols.next().unwrap());
                    (step, wall, value)
                })
                .collect();
            assert_eq!(rows.len(), expected.len(), "{full}: points");
            for ((step, wall, value), e) in rows.iter().zip(&expected) {
                assert_eq!(*step, e.step, "{full}");
                assert!(
                    same_value(*value, stored(e)),
                    "{full} step {step}: {value} != {}",
                    e.value
                );
                match e.wall_time {
                    Some(w) => assert!((wall - w).abs() < 1e-3, "{full}: wall {wall} != {w}"),
                    None => assert!(
                        *wall >= fixture.started - 0.01 && *wall <= fixture.finished + 0.01,
                        "{full}: wall time {wall} outside the writers' run"
                    ),
                }
            }
            stored_points += rows.len();
        }
    }
    assert_eq!(stored_points, fixture.expected.len());
    let series = tags.as_array().map(Vec::len).unwrap_or(0);
    assert!(series > 4, "{tags}");
    eprintln!("{stored_points} points in {series} series shipped from the writers' files");
}

/// A CSV value as the series route writes it (`NaN`, `inf`, `-inf`, numbers).
fn parse_value(text: &str) -> f64 {
    match text {
        "NaN" | "nan" => f64::NAN,
        "inf" | "Infinity" => f64::INFINITY,
        "-inf" | "-Infinity" => f64::NEG_INFINITY,
        other => other.parse().unwrap_or_else(|_| panic!("value {other:?}")),
    }
}

/// One piece POSTed to `path` (a metric-files route) with `key`, and `tags`
/// as the plugin tags header if given.
async fn piece(
    site: &crate::common::site::Site,
    key: &str,
    path: &str,
    tags: Option<http::HeaderValue>,
    body: Vec<u8>,
) -> crate::common::rest::Answer {
    let mut req =
        http::Request::post(path).header(http::header::AUTHORIZATION, format!("Bearer {key}"));
    if let Some(tags) = tags {
        req = req.header("paddlecloud-plugin-tags", tags);
    }
    crate::common::rest::answer(
        site.send(req.body(axum::body::Body::from(body)).unwrap())
            .await,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_pieces_are_refused_naming_what_is_wrong_and_store_nothing() {
    let site = crate::common::site::site().await;
    let (key, _) = key_and_cookie(&site, "shipbad").await;
    let (stranger, _) = key_and_cookie(&site, "shipother").await;
    let submitted = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(spec("target", "sleep 300")),
    )
    .await;
    assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.body);
    let file = "/api/v1/jobs/target/metric-files/runs/events.out.tfevents.1.host";

    // What is wrong, named: the field at fault and a sentence.
    let refused = [
        (
            "/api/v1/jobs/target/metric-files/notes.txt",
            None,
            "file",
            "not a metric file",
        ),
        (
            "/api/v1/jobs/target/metric-files/runs/../../etc/events.out.tfevents.1",
            None,
            "file",
            "no `..`",
        ),
        (
            file,
            Some(http::HeaderValue::from_static("[{\"tag\": 3}]")),
            "paddlecloud-plugin-tags",
            "as JSON",
        ),
        (
            file,
            Some(http::HeaderValue::from_bytes(b"[\xff]").unwrap()),
            "paddlecloud-plugin-tags",
            "as JSON",
        ),
    ];
    for (path, tags, field, words) in refused {
        let answer = piece(&site, &key, path, tags, b"\x01\x02".to_vec()).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{path}: {}",
            answer.body
        );
        assert_eq!(
            answer.error().1.as_deref(),
            Some(field),
            "{path}: {}",
            answer.body
        );
        assert!(answer.body.contains(words), "{path}: {}", answer.body);
    }
    let bad_offset = format!("{file}?offset=-1");
    let answer = piece(&site, &key, &bad_offset, None, Vec::new()).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    let too_big = piece(&site, &key, file, None, vec![0; (4 << 20) + 1]).await;
    assert!(too_big.status.is_client_error(), "{}", too_big.status);
    let far_too_big = piece(&site, &key, file, None, vec![0; 5 << 20]).await;
    assert_eq!(far_too_big.status, StatusCode::PAYLOAD_TOO_LARGE);

    // Another account's job is not there for this key; no key is no entry.
    let answer = piece(&site, &stranger, file, None, Vec::new()).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.body);
    let res = site
        .send(
            http::Request::post(file)
                .body(axum::body::Body::from(Vec::new()))
                .unwrap(),
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);

    // An empty first piece is fine: nothing yet, the next piece from 0.
    let answer = piece(&site, &key, file, None, Vec::new()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(answer.json()["offset"], 0, "{}", answer.body);
    let tags = call(
        &site,
        Method::GET,
        "/api/v1/jobs/target/metrics",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(
        tags.json(),
        serde_json::json!([]),
        "nothing stored: {}",
        tags.body
    );
}
