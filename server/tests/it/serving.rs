//! Serving on the local executor, end to end: a real PaddlePaddle model
//! exported by the test, uploaded as a model version, launched as two real
//! predict-server processes behind the console's endpoint, answering
//! predict calls with the hand-computed output; traffic counted; scaled,
//! stopped, refused when bad. Needs a Python with paddlepaddle
//! (`$PADDLECLOUD_SERVING_PYTHON`, else the test venv); skipped without one
//! unless `PADDLECLOUD_REQUIRE_PADDLE=1`.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::rest::{call, key_for, Answer};
use crate::common::site::{text, Site};
use axum::body::Body;
use http::{header, Method, Request, StatusCode};
use serde_json::{json, Value};

/// A Python that imports paddle, for the sites that serve the real model
/// ([`paddle_site`]).
pub(crate) fn paddle_python() -> Option<&'static PathBuf> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let candidate = std::env::var_os("PADDLECLOUD_SERVING_PYTHON")
                .map(PathBuf::from)
                .or_else(common::metric_logs::python);
            let works = candidate.as_ref().is_some_and(|p| {
                std::process::Command::new(p)
                    .args(["-c", "import paddle.inference"])
                    .output()
                    .is_ok_and(|o| o.status.success())
            });
            if !works {
                assert!(
                    std::env::var_os("PADDLECLOUD_REQUIRE_PADDLE").is_none(),
                    "no Python with paddlepaddle: run scripts/setup.sh test"
                );
                eprintln!("skipping: no Python with paddlepaddle (run scripts/setup.sh test)");
                return None;
            }
            candidate
        })
        .as_ref()
}

/// The app with `python` as the Python of its predict servers.
pub(crate) async fn paddle_site(python: &Path) -> Site {
    common::site::site_configured(|config, _| server::console::Config {
        serving_python: Some(python.display().to_string()),
        ..config
    })
    .await
}

/// The tiny model's files (`inference.json`, `inference.pdiparams`, and
/// `model.tar.gz` of both), exported once per test binary.
pub(crate) fn tiny_model(python: &Path) -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../sdk/python/tests/fixtures/export_tiny_model.py");
        let out = std::process::Command::new(python)
            .arg(script)
            .arg(dir.path())
            .arg("--tar")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "exporting the model: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
    .path()
}

pub(crate) async fn put_file(site: &Site, key: &str, path: &str, bytes: Vec<u8>) {
    let req = Request::builder()
        .method(Method::PUT)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {key}"))
        .body(Body::from(bytes))
        .unwrap();
    let res = site.send(req).await;
    let status = res.status();
    assert_eq!(
        status,
        StatusCode::CREATED,
        "PUT {path}: {}",
        text(res).await
    );
}

/// Registers model `name` of `account` with one ready version holding `files`.
pub(crate) async fn model_version(
    site: &Site,
    key: &str,
    account: &str,
    name: &str,
    files: &[(&str, Vec<u8>)],
) {
    model_versions(site, key, account, name, &[files.to_vec()]).await;
}

/// Registers model `name` of `account` with a ready version per entry of
/// `versions`, each holding its files.
pub(crate) async fn model_versions(
    site: &Site,
    key: &str,
    account: &str,
    name: &str,
    versions: &[Vec<(&str, Vec<u8>)>],
) {
    let made = call(
        site,
        Method::POST,
        "/api/v1/models",
        Some(key),
        Some(json!({"name": name})),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let base = format!("/api/v1/models/{account}/{name}");
    for (i, files) in versions.iter().enumerate() {
        let n = i + 1;
        let v = call(
            site,
            Method::POST,
            &format!("{base}/versions"),
            Some(key),
            Some(json!({"description": "test"})),
        )
        .await;
        assert_eq!(v.status, StatusCode::CREATED, "{}", v.body);
        for (path, bytes) in files {
            let path = format!("{base}/files/{path}?version={n}");
            put_file(site, key, &path, bytes.clone()).await;
        }
        let done = call(
            site,
            Method::POST,
            &format!("{base}/versions/{n}/finish"),
            Some(key),
            None,
        )
        .await;
        assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    }
}

pub(crate) fn launch_spec(name: &str, model: &str, replicas: u32) -> Value {
    json!({
        "name": name,
        "model": model,
        "replicas": replicas,
        "resources": {"cpu": "500m", "memory": "512Mi"}
    })
}

/// Polls the instance until `done` says so (at most `secs`), returning it.
pub(crate) async fn wait_until(
    site: &Site,
    key: &str,
    name: &str,
    secs: u64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let start = Instant::now();
    loop {
        let got = call(
            site,
            Method::GET,
            &format!("/api/v1/serving/{name}"),
            Some(key),
            None,
        )
        .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.body);
        let v = got.json();
        if done(&v) {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "timed out; the instance is {v}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `POST /api/v1/serving` with `spec`, as `key`.
pub(crate) async fn launch(site: &Site, key: &str, spec: Value) -> Answer {
    call(site, Method::POST, "/api/v1/serving", Some(key), Some(spec)).await
}

pub(crate) async fn predict(
    site: &Site,
    key: &str,
    account: &str,
    name: &str,
    body: Value,
) -> Answer {
    call(
        site,
        Method::POST,
        &format!("/serve/{account}/{name}/predict"),
        Some(key),
        Some(body),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_version_served_locally_answers_predict_calls_through_the_balancing_endpoint() {
    let Some(python) = paddle_python() else {
        return;
    };
    let model = tiny_model(python);
    let site = paddle_site(python).await;
    let key = key_for(&site, "vision").await;
    let read = |f: &str| std::fs::read(model.join(f)).unwrap();
    model_version(
        &site,
        &key,
        "vision",
        "tiny",
        &[
            ("inference.json", read("inference.json")),
            ("inference.pdiparams", read("inference.pdiparams")),
        ],
    )
    .await;

    let launched = launch(&site, &key, launch_spec("tiny-api", "tiny", 2)).await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    let v = launched.json();
    assert_eq!(v["status"], "pending");
    assert_eq!(v["version"], 1);
    assert_eq!(v["endpoint"], "/serve/vision/tiny-api");
    // Before a replica answers, a call is told to come back, not lost in a 500.
    let early = predict(
        &site,
        &key,
        "vision",
        "tiny-api",
        json!({"inputs": {"x": [[1, 2, 3, 4]]}}),
    )
    .await;
    assert!(
        early.status == StatusCode::SERVICE_UNAVAILABLE || early.status == StatusCode::OK,
        "{} {}",
        early.status,
        early.body
    );

    let ready = wait_until(&site, &key, "tiny-api", 120, |v| v["status"] == "ready").await;
    assert_eq!(ready["ready"], 2);

    for _ in 0..20 {
        let answer = predict(
            &site,
            &key,
            "vision",
            "tiny-api",
            json!({"inputs": {"x": [[1, 2, 3, 4]]}}),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let outputs = answer.json()["outputs"].clone();
        let first = outputs
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .clone();
        assert_eq!(first, json!([[0.5, 12.0]]));
    }
    // The model's own refusal comes through as it is.
    let bad = predict(
        &site,
        &key,
        "vision",
        "tiny-api",
        json!({"inputs": {"nope": [[1]]}}),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);

    // Round robin: both replicas answered.
    let logs = site.db.dir().join("serving/vision/tiny-api/logs");
    for replica in ["main-v1-0.log", "main-v1-1.log"] {
        let log = std::fs::read_to_string(logs.join(replica)).unwrap();
        assert!(
            log.contains("/predict"),
            "{replica} served no predict call:\n{log}"
        );
    }

    // Every call was counted where it passed, with its latency.
    flush(&site).await;
    let traffic = call(
        &site,
        Method::GET,
        "/api/v1/serving/tiny-api/traffic",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(traffic.status, StatusCode::OK, "{}", traffic.body);
    let points = traffic.json()["points"].as_array().unwrap().clone();
    let requests: u64 = points.iter().map(|p| p["requests"].as_u64().unwrap()).sum();
    let errors: u64 = points.iter().map(|p| p["errors"].as_u64().unwrap()).sum();
    assert_eq!(
        requests, 22,
        "20 answers, 1 refusal, the early call: {points:?}"
    );
    assert_eq!(errors, u64::from(early.status.is_server_error()));
    assert!(points.iter().all(|p| p["p99_ms"].as_f64().unwrap() > 0.0));
    let listed = call(&site, Method::GET, "/api/v1/serving", Some(&key), None)
        .await
        .json();
    let recent = &listed["instances"][0]["recent"];
    assert!(recent["requests"].as_u64().unwrap() >= 21, "{listed}");

    // Another account sees nothing of it.
    let other = key_for(&site, "speech").await;
    let theirs = predict(
        &site,
        &other,
        "vision",
        "tiny-api",
        json!({"inputs": {"x": [[1, 2, 3, 4]]}}),
    )
    .await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    let theirs = call(
        &site,
        Method::GET,
        "/api/v1/serving/tiny-api",
        Some(&other),
        None,
    )
    .await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    let anonymous = call(
        &site,
        Method::POST,
        "/serve/vision/tiny-api/predict",
        None,
        Some(json!({})),
    )
    .await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);

    // Scale down, then stop: the record stays, calls are refused.
    let scaled = call(
        &site,
        Method::POST,
        "/api/v1/serving/tiny-api/scale",
        Some(&key),
        Some(json!({"replicas": 1})),
    )
    .await;
    assert_eq!(scaled.status, StatusCode::OK, "{}", scaled.body);
    wait_until(&site, &key, "tiny-api", 30, |v| {
        v["ready"] == 1 && v["spec"]["replicas"] == 1 && v["status"] == "ready"
    })
    .await;
    let stopped = call(
        &site,
        Method::POST,
        "/api/v1/serving/tiny-api/stop",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
    assert_eq!(stopped.json()["status"], "stopped");
    let after = predict(
        &site,
        &key,
        "vision",
        "tiny-api",
        json!({"inputs": {"x": [[1, 2, 3, 4]]}}),
    )
    .await;
    assert_eq!(after.status, StatusCode::SERVICE_UNAVAILABLE);
    let again = call(
        &site,
        Method::POST,
        "/api/v1/serving/tiny-api/scale",
        Some(&key),
        Some(json!({"replicas": 2})),
    )
    .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    let deleted = call(
        &site,
        Method::DELETE,
        "/api/v1/serving/tiny-api",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
}

pub(crate) async fn flush(site: &Site) {
    site.serving.flush_traffic().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_archive_in_the_version_is_unpacked_and_served() {
    let Some(python) = paddle_python() else {
        return;
    };
    let model = tiny_model(python);
    let site = paddle_site(python).await;
    let key = key_for(&site, "vision").await;
    model_version(
        &site,
        &key,
        "vision",
        "packed",
        &[(
            "export/model.tar.gz",
            std::fs::read(model.join("model.tar.gz")).unwrap(),
        )],
    )
    .await;
    let mut spec = launch_spec("packed-api", "vision/packed", 1);
    spec["file"] = json!("export/model.tar.gz");
    spec["version"] = json!(1);
    let launched = launch(&site, &key, spec).await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    wait_until(&site, &key, "packed-api", 120, |v| v["status"] == "ready").await;
    let answer = predict(
        &site,
        &key,
        "vision",
        "packed-api",
        json!({"inputs": [[1, 2, 3, 4], [0, 0, 0, 0]]}),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let first = answer.json()["outputs"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone();
    assert_eq!(first, json!([[0.5, 12.0], [0.5, -1.0]]));
    call(
        &site,
        Method::POST,
        "/api/v1/serving/packed-api/stop",
        Some(&key),
        None,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_does_not_load_fails_the_instance_with_the_reason_from_its_log() {
    let Some(python) = paddle_python() else {
        return;
    };
    let model = tiny_model(python);
    let site = paddle_site(python).await;
    let key = key_for(&site, "vision").await;
    model_version(
        &site,
        &key,
        "vision",
        "broken",
        &[
            (
                "inference.json",
                std::fs::read(model.join("inference.json")).unwrap(),
            ),
            ("inference.pdiparams", b"these are not parameters".to_vec()),
        ],
    )
    .await;
    let launched = launch(&site, &key, launch_spec("broken-api", "broken", 1)).await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    let failed = wait_until(&site, &key, "broken-api", 120, |v| v["status"] != "pending").await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let message = failed["message"].as_str().unwrap();
    assert!(message.contains("cannot load the model"), "{message}");
    assert_eq!(failed["ready"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_launches_are_refused_with_the_field_or_the_quota_at_fault() {
    let site = common::site::site().await;
    let key = key_for(&site, "vision").await;
    let refused = |spec: Value| {
        let site = &site;
        let key = key.clone();
        async move { launch(site, &key, spec).await }
    };
    let unknown = refused(launch_spec("a", "nothing-here", 1)).await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST, "{}", unknown.body);
    assert_eq!(unknown.error().1.as_deref(), Some("model"));
    assert!(unknown.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no model “nothing-here”"));
    let zero = refused(launch_spec("a", "m", 0)).await;
    assert_eq!(zero.error().1.as_deref(), Some("replicas"));
    let mut cpu = launch_spec("a", "m", 1);
    cpu["resources"]["cpu"] = json!("lots");
    assert_eq!(
        refused(cpu).await.error().1.as_deref(),
        Some("resources.cpu")
    );
    let bad_name = refused(launch_spec("Not A Name", "m", 1)).await;
    assert_eq!(bad_name.error().1.as_deref(), Some("name"));
    let not_json = launch(&site, &key, json!({"name": 3})).await;
    assert_eq!(not_json.status, StatusCode::BAD_REQUEST);

    // Over the quota: what is over, by how much, before anything starts.
    model_version(
        &site,
        &key,
        "vision",
        "m",
        &[("inference.json", b"{}".to_vec())],
    )
    .await;
    let admin = site.admin_key().await;
    let set = call(
        &site,
        Method::PUT,
        "/api/v1/quota?account=vision",
        Some(&admin),
        Some(json!({"cpu": "1", "memory": "", "gpu": "", "max_jobs": ""})),
    )
    .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    let over = refused(launch_spec("big", "m", 3)).await;
    assert_eq!(over.status, StatusCode::FORBIDDEN, "{}", over.body);
    let message = over.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("CPU: the instance asks for 1.5, 1 of 1 is left (500m over)"),
        "{message}"
    );
    let none = call(&site, Method::GET, "/api/v1/serving", Some(&key), None).await;
    assert_eq!(none.json()["instances"], json!([]));
}

async fn traffic_buckets_add_up_and_are_pruned(db: common::TestDb) {
    use app::models::{ReplicaResources, ServingSpec, TrafficPoint};
    use server::storage::serving::ServingStore;
    let account_id: i64 = sqlx::query_scalar(
        "INSERT INTO accounts (name, namespace, created_at) VALUES ('acme', 'pc-acme', 0) RETURNING id",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let store = ServingStore::new(db.pool.clone());
    let spec = ServingSpec {
        name: "api".into(),
        model: "m".into(),
        version: Some(1),
        file: String::new(),
        script: String::new(),
        command: vec![],
        image: String::new(),
        env: vec![],
        replicas: 1,
        resources: ReplicaResources::default(),
        autoscale: None,
        environment: None,
        environment_use: None,
        canary: None,
        shadow: None,
        secrets: vec![],
    };
    let id = store
        .insert(account_id, "ann@example.com", "acme/m", 1, &spec, "local")
        .await
        .unwrap();
    let taken = store
        .insert(account_id, "ann@example.com", "acme/m", 1, &spec, "local")
        .await
        .unwrap_err();
    assert_eq!(taken.field(), Some("name"));
    let point = |t: f64, requests: u64, p50: f64, p99: f64| TrafficPoint {
        t,
        secs: 5.0,
        requests,
        errors: 1,
        p50_ms: p50,
        p90_ms: p50,
        p99_ms: p99,
    };
    // The same bucket written in two parts (a flush, then the rest) adds up.
    store
        .add_traffic(&[(id, point(1000.0, 30, 10.0, 40.0))])
        .await
        .unwrap();
    store
        .add_traffic(&[
            (id, point(1000.0, 10, 50.0, 20.0)),
            (id, point(1005.0, 5, 1.0, 2.0)),
        ])
        .await
        .unwrap();
    let got = store.traffic(id, 0.0, 2000.0).await.unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].requests, got[0].errors), (40, 2));
    assert_eq!(got[0].p50_ms, 20.0);
    assert_eq!(got[0].p99_ms, 40.0);
    assert_eq!(store.prune_traffic(1003.0).await.unwrap(), 1);
    assert_eq!(store.traffic(id, 0.0, 2000.0).await.unwrap().len(), 1);
    // Deleting the instance takes its traffic along.
    store.delete(id).await.unwrap();
    assert!(store.traffic(id, 0.0, 2000.0).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn traffic_buckets_add_up_and_are_pruned_on_sqlite() {
    traffic_buckets_add_up_and_are_pruned(common::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn traffic_buckets_add_up_and_are_pruned_on_postgres() {
    let Some(db) = common::postgres().await else {
        return;
    };
    traffic_buckets_add_up_and_are_pruned(db).await;
}

/// A replica of the test's own that answers HTTP and keeps one core busy.
const BUSY_SERVER: &str = "import http.server as h, os, threading\n\
threading.Thread(target=lambda: exec('while True: pass'), daemon=True).start()\n\
h.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), h.SimpleHTTPRequestHandler).serve_forever()\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_instance_over_its_cpu_target_is_scaled_up_to_its_bound_and_back_by_hand() {
    let site = common::site::site().await;
    let key = key_for(&site, "vision").await;
    model_version(
        &site,
        &key,
        "vision",
        "m",
        &[("inference.json", b"{}".to_vec())],
    )
    .await;
    let spec = json!({
        "name": "busy",
        "model": "m",
        "replicas": 1,
        "resources": {"cpu": "100m", "memory": "128Mi"},
        "command": ["python3", "-c", BUSY_SERVER],
        "autoscale": {"min": 1, "max": 2, "cpu_percent": 50}
    });
    let launched = launch(&site, &key, spec).await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    // A core against 100m requested is far over 50%: up to the bound of 2.
    let grown = wait_until(&site, &key, "busy", 60, |v| {
        v["spec"]["replicas"] == 2 && v["ready"] == 2
    })
    .await;
    assert_eq!(grown["spec"]["autoscale"]["max"], 2);
    // A fixed size turns the autoscaler off.
    let fixed = call(
        &site,
        Method::POST,
        "/api/v1/serving/busy/scale",
        Some(&key),
        Some(json!({"replicas": 1})),
    )
    .await;
    assert_eq!(fixed.status, StatusCode::OK, "{}", fixed.body);
    assert_eq!(fixed.json()["spec"]["autoscale"], Value::Null);
    wait_until(&site, &key, "busy", 30, |v| v["ready"] == 1).await;
    tokio::time::sleep(Duration::from_secs(12)).await;
    let still = call(&site, Method::GET, "/api/v1/serving/busy", Some(&key), None)
        .await
        .json();
    assert_eq!(
        (still["spec"]["replicas"].as_u64(), still["ready"].as_u64()),
        (Some(1), Some(1))
    );
    call(
        &site,
        Method::POST,
        "/api/v1/serving/busy/stop",
        Some(&key),
        None,
    )
    .await;
}

/// A member's caps hold for what scaling an instance adds, as for
/// launching it: one admission rule for every workload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_an_instance_past_the_members_cap_is_refused_as_launching_it_is() {
    let smtp = common::smtp::SmtpServer::start().await;
    let site = crate::members::site_mailing(common::sqlite().await, &smtp).await;
    let ann = key_for(&site, "team").await;
    crate::members::join(&site, &smtp, &ann, "bob@example.com", "member").await;
    let bob = server::access_keys::SqlAccessKeys::new(site.db.pool.clone())
        .create_for("team", "bob@example.com", "laptop", Default::default())
        .await
        .unwrap()
        .key;
    let members = call(&site, Method::GET, "/api/v1/members", Some(&ann), None).await;
    let bob_id = members.json()["members"][1]["user_id"].as_i64().unwrap();
    let capped = call(
        &site,
        Method::PUT,
        &format!("/api/v1/members/{bob_id}/caps"),
        Some(&ann),
        Some(json!({"cpu": "300m", "memory": "", "gpu": "", "max_jobs": ""})),
    )
    .await;
    assert_eq!(capped.status, StatusCode::NO_CONTENT, "{}", capped.body);
    model_version(
        &site,
        &ann,
        "team",
        "m",
        &[("inference.json", b"{}".to_vec())],
    )
    .await;
    let spec = |replicas: u32| {
        json!({
            "name": "small", "model": "m", "replicas": replicas,
            "resources": {"cpu": "100m", "memory": "64Mi"},
            "command": ["sh", "-c", "exec python3 -m http.server \"$PORT\" --bind 127.0.0.1"],
        })
    };
    // Four replicas of 100m are over Bob's 300m at launch.
    let over = launch(&site, &bob, spec(4)).await;
    assert_eq!(over.status, StatusCode::FORBIDDEN, "{}", over.body);
    assert!(
        over.body.contains("Over your cap in this account"),
        "{}",
        over.body
    );
    let launched = launch(&site, &bob, spec(2)).await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    // Two more would make 400m: refused, and the instance keeps its size.
    let scale = |replicas: u32| {
        let (site, bob) = (&site, bob.clone());
        async move {
            let body = json!({ "replicas": replicas });
            let path = "/api/v1/serving/small/scale";
            call(site, Method::POST, path, Some(&bob), Some(body)).await
        }
    };
    let grown = scale(4).await;
    assert_eq!(grown.status, StatusCode::FORBIDDEN, "{}", grown.body);
    let message = grown.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("Over your cap in this account")
            && message.contains("CPU: the instance asks for 200m, 100m of 300m is left"),
        "{message}"
    );
    let kept = call(
        &site,
        Method::GET,
        "/api/v1/serving/small",
        Some(&bob),
        None,
    )
    .await;
    assert_eq!(kept.json()["spec"]["replicas"], 2);
    // One more fits.
    assert_eq!(scale(3).await.status, StatusCode::OK);
    call(
        &site,
        Method::POST,
        "/api/v1/serving/small/stop",
        Some(&bob),
        None,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_replica_waits_its_turn_for_room_and_one_larger_than_the_machine_is_refused() {
    use server::local::capacity::{CapacitySettings, GpuSetting};
    // A machine of one CPU and one (simulated) GPU, shared by jobs and replicas.
    let site = common::site::site_configured(|config, _| server::console::Config {
        local_capacity: CapacitySettings {
            cpu_millis: Some(1000),
            memory_bytes: Some(4 << 30),
            gpus: GpuSetting::Count(1),
        },
        ..config
    })
    .await;
    let key = key_for(&site, "vision").await;
    model_version(
        &site,
        &key,
        "vision",
        "m",
        &[("inference.json", b"{}".to_vec())],
    )
    .await;
    let serve = "import http.server as h, os\n\
                 h.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), h.SimpleHTTPRequestHandler).serve_forever()\n";
    let spec = |name: &str, cpu: &str, gpu: u32| {
        json!({
            "name": name,
            "model": "m",
            "replicas": 1,
            "resources": {"cpu": cpu, "memory": "128Mi", "gpu": gpu},
            "command": ["python3", "-c", serve]
        })
    };
    let huge = launch(&site, &key, spec("huge", "2", 0)).await;
    assert_eq!(huge.status, StatusCode::BAD_REQUEST, "{}", huge.body);
    assert_eq!(huge.error().1.as_deref(), Some("resources.cpu"));
    assert!(
        huge.body.contains("2 CPUs") && huge.body.contains("1 CPU"),
        "{}",
        huge.body
    );
    let listed = call(&site, Method::GET, "/api/v1/serving", Some(&key), None).await;
    assert!(
        !listed.body.contains("huge"),
        "nothing recorded: {}",
        listed.body
    );

    // A job holds the machine's CPU: the replica waits and says why.
    let job = json!({
        "name": "holder",
        "command": ["sh", "-c", "sleep 30"],
        "num_ps": 0,
        "num_trainers": 1,
        "trainer": {"cpu": "1", "memory": "128Mi", "gpu": 0}
    });
    let submitted = call(&site, Method::POST, "/api/v1/jobs", Some(&key), Some(job)).await;
    assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.body);
    crate::common::rest::wait_for(&site, &key, "holder", "running").await;
    let launched = launch(&site, &key, spec("patient", "500m", 1)).await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    let waiting = wait_until(&site, &key, "patient", 20, |v| {
        v["message"].as_str().unwrap_or("").contains("waiting for")
    })
    .await;
    assert_eq!(waiting["message"], "Replica 0 waiting for 500m CPU: 0 free");
    assert_eq!(waiting["ready"], 0);
    // The job ends: the replica gets its room and its GPU, and answers.
    call(
        &site,
        Method::POST,
        "/api/v1/jobs/holder/stop",
        Some(&key),
        None,
    )
    .await;
    wait_until(&site, &key, "patient", 30, |v| v["ready"] == 1).await;
    let cluster = call(&site, Method::GET, "/api/v1/cluster", Some(&key), None)
        .await
        .json();
    assert_eq!(cluster["used"]["gpu"], 1, "{cluster}");
    assert_eq!(cluster["gpus"][0]["in_use"], true, "{cluster}");
    call(
        &site,
        Method::POST,
        "/api/v1/serving/patient/stop",
        Some(&key),
        None,
    )
    .await;
    let after = call(&site, Method::GET, "/api/v1/cluster", Some(&key), None)
        .await
        .json();
    assert_eq!(after["used"]["cpu_millis"], 0, "{after}");
}

/// A replica of the test's own that answers every call with its secret
/// variable and file, reversed (proof they arrived, without echoing them).
const SECRET_SERVER: &str = r#"import http.server as h, json, os
class H(h.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
    def do_POST(self):
        d = os.environ['PADDLECLOUD_SECRETS_DIR']
        f = open(os.path.join(d, 'c.txt')).read()
        b = json.dumps({'env': os.environ['S_TOKEN'][::-1], 'file': f[::-1], 'dir': d}).encode()
        self.send_response(200); self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)
h.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), H).serve_forever()
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_instances_replicas_get_the_accounts_secrets_until_it_stops() {
    let site = common::site::site().await;
    let key = key_for(&site, "vault").await;
    model_version(
        &site,
        &key,
        "vault",
        "m",
        &[("inference.json", b"{}".to_vec())],
    )
    .await;
    for (name, value) in [("s-token", "token-12345"), ("s-cred", "cred-67890")] {
        let path = format!("/api/v1/secrets/{name}");
        let set = call(
            &site,
            Method::PUT,
            &path,
            Some(&key),
            Some(json!({ "value": value })),
        )
        .await;
        assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    }
    let spec = json!({
        "name": "keeper", "model": "m", "replicas": 1,
        "resources": {"cpu": "100m", "memory": "128Mi"},
        "command": ["python3", "-c", SECRET_SERVER],
        "secrets": [{"secret": "s-token", "env": "S_TOKEN"}, {"secret": "s-cred", "file": "c.txt"}],
    });
    let launched = launch(&site, &key, spec).await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    assert!(!launched.body.contains("token-12345"), "{}", launched.body);
    wait_until(&site, &key, "keeper", 60, |v| v["ready"] == 1).await;
    let answer = predict(&site, &key, "vault", "keeper", json!({})).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let got = answer.json();
    assert_eq!(got["env"], "54321-nekot");
    assert_eq!(got["file"], "09876-derc");
    let dir = got["dir"].as_str().unwrap().to_owned();
    assert!(std::path::Path::new(&dir).exists());
    let audit = call(&site, Method::GET, "/api/v1/audit", Some(&key), None)
        .await
        .body;
    assert!(
        audit.contains("serving keeper: s-token as S_TOKEN, s-cred as file c.txt"),
        "{audit}"
    );
    call(
        &site,
        Method::POST,
        "/api/v1/serving/keeper/stop",
        Some(&key),
        None,
    )
    .await;
    wait_until(&site, &key, "keeper", 30, |v| v["status"] == "stopped").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::path::Path::new(&dir).exists() {
        assert!(Instant::now() < deadline, "{dir} outlived the instance");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
