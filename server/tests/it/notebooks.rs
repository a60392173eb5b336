//! Notebooks on the local executor, end to end: a real `jupyter lab`
//! (the test venv's, `scripts/setup.sh test`) behind the console on a real
//! socket. JupyterLab opens through the proxy with the console's session
//! only; a kernel, over a WebSocket through the proxy, submits a job with
//! the SDK and the notebook's own key; the workspace survives a stop; the
//! key dies with it; strangers get 404; idle culling stops and start
//! clears the clock; bad input and the quota are refused with reasons.
//! Skipped without a Python that has jupyterlab, unless
//! `PADDLECLOUD_REQUIRE_JUPYTER=1` (as `make test` sets).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use http::{Method, StatusCode};
use serde_json::{json, Value};
use server::console::Config;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::common;
use crate::common::rest::{call, key_and_cookie};
use crate::common::site::Site;

/// A Python with jupyterlab: `$PADDLECLOUD_NOTEBOOK_PYTHON`, else the test venv.
pub(crate) fn jupyter_python() -> Option<&'static PathBuf> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let candidate = std::env::var_os("PADDLECLOUD_NOTEBOOK_PYTHON")
                .map(PathBuf::from)
                .or_else(common::metric_logs::python);
            let works = candidate.as_ref().is_some_and(|p| {
                std::process::Command::new(p)
                    .args(["-c", "import jupyterlab"])
                    .output()
                    .is_ok_and(|o| o.status.success())
            });
            if !works {
                assert!(
                    std::env::var_os("PADDLECLOUD_REQUIRE_JUPYTER").is_none(),
                    "no Python with jupyterlab: run scripts/setup.sh test"
                );
                eprintln!("skipping: no Python with jupyterlab (run scripts/setup.sh test)");
                return None;
            }
            candidate
        })
        .as_ref()
}

/// The console on a real socket (kernels call it back, browsers open
/// WebSockets to it) with `python` for notebooks and idle probes every
/// `probe_secs`; its base URL.
async fn socket_site(python: &Path, probe_secs: u32) -> (Site, String) {
    common::site::on_socket(|config, _, _| Config {
        notebook_python: Some(python.display().to_string()),
        notebook_probe_secs: probe_secs,
        ..config
    })
    .await
}

/// Starts a `python3` kernel of the notebook at `lab` through the proxy; its id.
pub(crate) async fn start_kernel(url: &str, lab: &str, cookie: &str) -> String {
    let made = http()
        .post(format!("{url}{lab}api/kernels"))
        .header("cookie", cookie)
        .header("content-type", "application/json")
        .body(r#"{"name": "python3"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), StatusCode::CREATED);
    json_of(made).await["id"].as_str().unwrap().to_owned()
}

pub(crate) async fn json_of(answer: reqwest::Response) -> Value {
    serde_json::from_slice(&answer.bytes().await.unwrap()).unwrap()
}

/// A client of the console's proxy. reqwest is built without a TLS
/// provider of its own: the process-wide one (ring, as `serve` installs) is
/// installed here, so a test does not depend on another having run first.
pub(crate) fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// Waits until the notebook's status is `want`; the notebook as it then is.
pub(crate) async fn wait_status(site: &Site, key: &str, name: &str, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let got = call(
            site,
            Method::GET,
            &format!("/api/v1/notebooks/{name}"),
            Some(key),
            None,
        )
        .await;
        let nb = got.json();
        if nb["status"] == want {
            return nb;
        }
        assert!(
            Instant::now() < deadline,
            "notebook {name} never became {want}: {nb}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Creates notebook `name` with `extra` fields and waits until it runs.
pub(crate) async fn running_notebook(site: &Site, key: &str, name: &str, extra: Value) -> Value {
    let mut spec = json!({"name": name, "resources": {"cpu": "500m", "memory": "1Gi"}});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    let made = call(
        site,
        Method::POST,
        "/api/v1/notebooks",
        Some(key),
        Some(spec),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    wait_status(site, key, name, "running").await
}

/// Runs `code` in kernel `kernel` over a WebSocket through the proxy (with
/// the browser's cookie) and returns what it printed; panics on an error.
pub(crate) async fn run_cell(
    url: &str,
    lab: &str,
    kernel: &str,
    cookie: &str,
    code: &str,
) -> String {
    let ws_url = format!(
        "{}{lab}api/kernels/{kernel}/channels",
        url.replacen("http://", "ws://", 1)
    );
    let mut request = ws_url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("cookie", cookie.parse().unwrap());
    request.headers_mut().insert("origin", url.parse().unwrap());
    let (mut socket, answer) = tokio_tungstenite::connect_async(request)
        .await
        .expect("the kernel's WebSocket opens through the proxy");
    assert_eq!(answer.status(), StatusCode::SWITCHING_PROTOCOLS);
    let msg_id = format!("test-{}", getrandom::u32().unwrap());
    let execute = json!({
        "header": {"msg_id": msg_id, "username": "test", "session": "test-session",
                   "msg_type": "execute_request", "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "buffers": [], "channel": "shell",
        "content": {"code": code, "silent": false, "store_history": false,
                    "user_expressions": {}, "allow_stdin": false, "stop_on_error": true}
    });
    socket
        .send(Message::text(execute.to_string()))
        .await
        .unwrap();
    let mut printed = String::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    // The reply comes on the shell channel and the output on iopub, in no
    // set order: the cell is done once both the reply and iopub's "idle"
    // (sent after the cell's last output) have come.
    // A kernel's first messages on iopub can be lost while its channel
    // connects: after the reply, "idle" is waited for 5 s at most.
    let (mut replied, mut idle) = (false, false);
    let mut deadline = deadline;
    while !(replied && idle) {
        let Ok(next) = tokio::time::timeout_at(deadline.into(), socket.next()).await else {
            assert!(replied, "no reply to the cell; printed so far: {printed}");
            break;
        };
        let next = next.expect("the socket stays open").unwrap();
        let Message::Text(text) = next else { continue };
        let msg: Value = serde_json::from_str(&text).unwrap();
        if msg["parent_header"]["msg_id"] != msg_id.as_str() {
            continue;
        }
        match msg["msg_type"].as_str().unwrap_or_default() {
            "stream" => printed.push_str(msg["content"]["text"].as_str().unwrap_or_default()),
            "error" => panic!("the cell failed: {}", msg["content"]["traceback"]),
            "execute_reply" => {
                assert_eq!(msg["content"]["status"], "ok", "{msg}");
                replied = true;
                deadline = deadline.min(Instant::now() + Duration::from_secs(5));
            }
            "status" => idle |= msg["content"]["execution_state"] == "idle",
            _ => {}
        }
    }
    let _ = socket.close(None).await;
    printed
}

/// The value printed after `label ` on its own line.
pub(crate) fn printed_value<'a>(printed: &'a str, label: &str) -> &'a str {
    printed
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{label} ")))
        .unwrap_or_else(|| panic!("no {label} line in {printed:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notebook_opens_through_the_console_and_its_kernel_submits_jobs_with_its_own_key() {
    let Some(python) = jupyter_python() else {
        return;
    };
    let (site, url) = socket_site(python, 3600).await;
    let (key, cookie) = key_and_cookie(&site, "nbteam").await;
    // A dataset of the account, which the notebook's kernels find by name.
    let made = call(
        &site,
        Method::POST,
        "/api/v1/datasets",
        Some(&key),
        Some(json!({"name": "train"})),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let put = site
        .send(
            http::Request::put("/api/v1/datasets/nbteam/train/files/a.txt")
                .header(http::header::AUTHORIZATION, format!("Bearer {key}"))
                .body(axum::body::Body::from("hello"))
                .unwrap(),
        )
        .await;
    assert!(put.status().is_success(), "{}", put.status());
    // Two of the account's secrets, for its kernels: a variable and a file.
    for (name, value) in [("nb-token", "tok-123456"), ("nb-cred", "cred-abcdef")] {
        let set = call(
            &site,
            Method::PUT,
            &format!("/api/v1/secrets/{name}"),
            Some(&key),
            Some(json!({ "value": value })),
        )
        .await;
        assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    }
    let secrets = json!({"secrets": [
        {"secret": "nb-token", "env": "NB_TOKEN"},
        {"secret": "nb-cred", "file": "cred.txt"},
    ]});
    let nb = running_notebook(&site, &key, "scratch", secrets).await;
    let running_since = Instant::now();
    assert_eq!(nb["owner"], "ann@example.com");
    let lab = "/notebooks/nbteam/scratch/";
    let client = http();

    // JupyterLab's page, with the console's session cookie alone: the
    // proxy adds the notebook's token.
    let page = client
        .get(format!("{url}{lab}lab"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    assert!(html.contains("JupyterLab"), "{html}");
    assert!(
        html.contains(lab),
        "the page's links stay under the proxy: {html}"
    );

    // A kernel, started and driven through the proxy (HTTP, then WebSocket).
    let kernel = start_kernel(&url, lab, &cookie).await;
    let printed = run_cell(
        &url,
        lab,
        &kernel,
        &cookie,
        "import os, paddlecloud\n\
         job = paddlecloud.create_cloud_job('from-nb', 1, '256Mi', 0, '500m', command=['true'])\n\
         print('JOB', job['name'])\n\
         print('KEY', os.environ['PADDLECLOUD_KEY'])\n\
         print('DATA', open(os.path.join(os.environ['PADDLE_DATASET_DIR_TRAIN'], 'a.txt')).read())\n\
         print('TOKEN', os.environ['NB_TOKEN'][::-1])\n\
         print('CRED', open(os.path.join(os.environ['PADDLECLOUD_SECRETS_DIR'], 'cred.txt')).read()[::-1])\n\
         open('keep.txt', 'w').write('kept')\n",
    )
    .await;
    assert_eq!(printed_value(&printed, "TOKEN"), "654321-kot");
    assert_eq!(printed_value(&printed, "CRED"), "fedcba-derc");
    assert_eq!(printed_value(&printed, "JOB"), "from-nb");
    assert_eq!(printed_value(&printed, "DATA"), "hello");
    let nb_key = printed_value(&printed, "KEY").to_owned();
    assert!(nb_key.starts_with("pcn_"), "{nb_key}");

    // The job is the owner's, and says where it came from.
    let job = call(&site, Method::GET, "/api/v1/jobs/from-nb", Some(&key), None).await;
    assert_eq!(job.status, StatusCode::OK, "{}", job.body);
    assert_eq!(job.json()["spec"]["notebook"], "scratch", "{}", job.body);
    let table = common::site::text(site.get("/jobs", Some(&cookie)).await).await;
    assert!(table.contains("from notebook scratch"), "{table}");
    // A client cannot claim a notebook it did not come from.
    let claimed = call(
        &site,
        Method::POST,
        "/api/v1/jobs",
        Some(&key),
        Some(
            json!({"name": "claims", "command": ["true"], "num_trainers": 1,
                    "trainer": {"cpu": "100m", "memory": "64Mi"}, "notebook": "scratch"}),
        ),
    )
    .await;
    assert_eq!(claimed.status, StatusCode::CREATED, "{}", claimed.body);
    assert!(
        claimed.json()["spec"]["notebook"].is_null(),
        "{}",
        claimed.body
    );

    // Stopped: the workspace stays, the key and the proxy stop working.
    let ran = running_since.elapsed().as_secs_f64();
    let stopped = call(
        &site,
        Method::POST,
        "/api/v1/notebooks/scratch/stop",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(stopped.json()["status"], "stopped", "{}", stopped.body);
    assert_eq!(stopped.json()["message"], "Stopped by ann@example.com.");
    let me = call(&site, Method::GET, "/api/v1/me", Some(&nb_key), None).await;
    assert_eq!(me.status, StatusCode::UNAUTHORIZED, "{}", me.body);
    let closed = client
        .get(format!("{url}{lab}api/status"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), StatusCode::SERVICE_UNAVAILABLE);
    // Its half CPU counted in the account's CPU-hours while it ran (the
    // jobs, which ran for milliseconds, add next to nothing).
    let usage = call(&site, Method::GET, "/api/v1/usage", Some(&key), None).await;
    let cpu_hours = usage.json()["windows"][0]["cpu"].as_f64().unwrap();
    assert!(
        cpu_hours >= 0.5 * ran / 3600.0,
        "{cpu_hours} after {ran} s: {}",
        usage.body
    );
    let workspace = site.db.dir().join("notebooks/nbteam/scratch/work");
    assert_eq!(
        std::fs::read_to_string(workspace.join("keep.txt")).unwrap(),
        "kept"
    );

    // Started again: the file is there, read through the proxy.
    let started = call(
        &site,
        Method::POST,
        "/api/v1/notebooks/scratch/start",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(started.status, StatusCode::OK, "{}", started.body);
    wait_status(&site, &key, "scratch", "running").await;
    let file = client
        .get(format!("{url}{lab}api/contents/keep.txt?content=1"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(file.status(), StatusCode::OK);
    assert_eq!(json_of(file).await["content"], "kept");

    // Deleted: record and workspace gone.
    let gone = call(
        &site,
        Method::DELETE,
        "/api/v1/notebooks/scratch",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    assert!(!workspace.exists());
    // Its runs stay for the CPU-hours, each with an end: none keeps counting.
    let runs: Vec<(Option<i64>,)> = sqlx::query_as("SELECT ended_at FROM notebook_runs")
        .fetch_all(&site.db.pool)
        .await
        .unwrap();
    assert_eq!(runs.len(), 2, "one run per start");
    assert!(runs.iter().all(|(ended,)| ended.is_some()), "{runs:?}");
    let listed = call(&site, Method::GET, "/api/v1/notebooks", Some(&key), None).await;
    assert_eq!(listed.json()["notebooks"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_its_owner_reaches_a_notebook_and_everyone_else_gets_404() {
    let Some(python) = jupyter_python() else {
        return;
    };
    let (site, url) = socket_site(python, 3600).await;
    let (key, cookie) = key_and_cookie(&site, "owners").await;
    let (_, other_cookie) = key_and_cookie(&site, "strangers").await;
    running_notebook(&site, &key, "mine", json!({})).await;
    let client = http();
    let status = |path: &'static str, cookie: Option<String>, accept: &'static str| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let mut req = client.get(format!("{url}{path}")).header("accept", accept);
            if let Some(c) = cookie {
                req = req.header("cookie", c);
            }
            req.send().await.unwrap().status()
        }
    };
    let path = "/notebooks/owners/mine/api/status";
    assert_eq!(
        status(path, Some(cookie.clone()), "*/*").await,
        StatusCode::OK
    );
    // Another account: with a session, with its own account in the path,
    // and without a session at all.
    assert_eq!(
        status(path, Some(other_cookie.clone()), "*/*").await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        status(
            "/notebooks/strangers/mine/api/status",
            Some(other_cookie),
            "*/*"
        )
        .await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(status(path, None, "*/*").await, StatusCode::NOT_FOUND);
    // A signed-out browser opening the lab is asked to sign in first.
    assert_eq!(
        status("/notebooks/owners/mine/lab", None, "text/html").await,
        StatusCode::SEE_OTHER
    );
    // Another member of the same account: the notebook is its owner's alone.
    let account = site.owner("owners").await.account;
    let member_key = member_of(&site, &account).await;
    let answer = client
        .get(format!("{url}{path}"))
        .bearer_auth(&member_key)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);
    // A page on another origin may not drive a kernel with the session.
    let forged = client
        .post(format!("{url}/notebooks/owners/mine/api/kernels"))
        .header("cookie", &cookie)
        .header("origin", "http://127.0.0.1:1")
        .header("content-type", "application/json")
        .body(r#"{"name": "python3"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    // The member may not stop it either; the account's owner may.
    let refused = call(
        &site,
        Method::POST,
        "/api/v1/notebooks/mine/stop",
        Some(&member_key),
        None,
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
}

/// A key of a new user who is a plain member of `account`.
pub(crate) async fn member_of(site: &Site, account: &app::models::Account) -> String {
    let member = common::user_with_role(&site.db.pool, account, app::models::Role::Member).await;
    server::access_keys::SqlAccessKeys::new(site.db.pool.clone())
        .create_for(&account.name, &member.email, "tests", Default::default())
        .await
        .unwrap()
        .key
}

/// Moves notebook `name`'s idle clock `minutes` into the past, as if it had
/// started (and last been used) that long ago.
pub(crate) async fn age(site: &Site, name: &str, minutes: i64) {
    let past = server::time::now_ms() - minutes * 60_000;
    sqlx::query("UPDATE notebooks SET started_at = $1, last_activity = NULL WHERE name = $2")
        .bind(past)
        .bind(name)
        .execute(&site.db.pool)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_notebook_is_stopped_and_starting_it_clears_the_clock() {
    let Some(python) = jupyter_python() else {
        return;
    };
    // The background check never runs here: each round is called by the test.
    let (site, url) = socket_site(python, 3600).await;
    let (key, cookie) = key_and_cookie(&site, "idlers").await;
    let nb = running_notebook(&site, &key, "sleepy", json!({"idle_minutes": 5})).await;
    let stops_at = nb["stops_at"].as_i64().unwrap();
    let started = nb["started_at"].as_i64().unwrap();
    assert_eq!(stops_at - started, 5 * 60_000, "{nb}");

    // Fresh: nothing happens.
    site.notebooks.cull_idle().await.unwrap();
    wait_status(&site, &key, "sleepy", "running").await;

    // A busy kernel is activity even when the clock says idle.
    let lab = "/notebooks/idlers/sleepy/";
    let kernel = start_kernel(&url, lab, &cookie).await;
    let busy = {
        let (url, cookie, kernel) = (url.clone(), cookie.clone(), kernel.clone());
        tokio::spawn(async move {
            run_cell(
                &url,
                lab,
                &kernel,
                &cookie,
                "import time; time.sleep(6); print('DONE 1')",
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_secs(3)).await;
    age(&site, "sleepy", 10).await;
    site.notebooks.cull_idle().await.unwrap();
    let nb = wait_status(&site, &key, "sleepy", "running").await;
    assert!(nb["last_activity"].as_i64().unwrap() > started, "{nb}");
    assert!(busy.await.unwrap().contains("DONE 1"));

    // "Keep running" resets the clock.
    age(&site, "sleepy", 10).await;
    let kept = call(
        &site,
        Method::POST,
        "/api/v1/notebooks/sleepy/keep",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(kept.status, StatusCode::OK, "{}", kept.body);
    assert!(kept.json()["stops_at"].as_i64().unwrap() > server::time::now_ms() + 4 * 60_000);
    site.notebooks.cull_idle().await.unwrap();
    wait_status(&site, &key, "sleepy", "running").await;

    // Idle past the timeout (the kernel's last activity long ago too): stopped, with why.
    sqlx::query("UPDATE notebooks SET started_at = $1, last_activity = $1 WHERE name = 'sleepy'")
        .bind(server::time::now_ms() - 10 * 60_000)
        .execute(&site.db.pool)
        .await
        .unwrap();
    // The kernel's own last activity (seconds ago) would count: shut it down first.
    let shut = http()
        .delete(format!("{url}{lab}api/kernels/{kernel}"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(shut.status(), StatusCode::NO_CONTENT);
    site.notebooks.cull_idle().await.unwrap();
    let nb = wait_status(&site, &key, "sleepy", "stopped").await;
    let why = nb["message"].as_str().unwrap();
    assert!(
        why.starts_with("Stopped after 5 min without kernel or terminal activity (idle since "),
        "{why}"
    );

    // Started again, the old idleness does not count: it runs on.
    call(
        &site,
        Method::POST,
        "/api/v1/notebooks/sleepy/start",
        Some(&key),
        None,
    )
    .await;
    let nb = wait_status(&site, &key, "sleepy", "running").await;
    assert!(nb["last_activity"].is_null(), "{nb}");
    site.notebooks.cull_idle().await.unwrap();
    let nb = wait_status(&site, &key, "sleepy", "running").await;
    assert!(
        nb["stops_at"].as_i64().unwrap() > server::time::now_ms() + 4 * 60_000,
        "{nb}"
    );
    call(
        &site,
        Method::DELETE,
        "/api/v1/notebooks/sleepy",
        Some(&key),
        None,
    )
    .await;
}

/// A "Python" in `dir` without jupyterlab, as a user's broken environment
/// would be: it says so and exits 1.
pub(crate) fn broken_python(dir: &Path) -> PathBuf {
    let broken = dir.join("python");
    std::fs::write(
        &broken,
        "#!/bin/sh\necho \"$0: No module named jupyterlab\" >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    broken
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_notebooks_are_refused_and_a_server_that_cannot_start_shows_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let broken = broken_python(dir.path());
    let (site, _url) = socket_site(&broken, 3600).await;
    let (key, _) = key_and_cookie(&site, "careless").await;
    let post = |spec: Value| {
        call(
            &site,
            Method::POST,
            "/api/v1/notebooks",
            Some(&key),
            Some(spec),
        )
    };

    let bad = post(json!({"name": "Bad_Name", "resources": {"cpu": "1", "memory": "1Gi"}})).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.error().1.as_deref(), Some("name"), "{}", bad.body);
    let bad = post(json!({"name": "nb", "resources": {"cpu": "lots", "memory": "1Gi"}})).await;
    assert_eq!(
        bad.error().1.as_deref(),
        Some("resources.cpu"),
        "{}",
        bad.body
    );
    let bad = post(json!({"name": "nb", "idle_minutes": 0})).await;
    assert_eq!(
        bad.error().1.as_deref(),
        Some("idle_minutes"),
        "{}",
        bad.body
    );
    let huge = post(json!({"name": "nb", "resources": {"cpu": "1000", "memory": "1Gi"}})).await;
    assert_eq!(huge.status, StatusCode::BAD_REQUEST, "{}", huge.body);
    assert!(huge.body.contains("this machine offers"), "{}", huge.body);

    // Over the account's quota: refused, saying what is over.
    let account = site.owner("careless").await.account;
    sqlx::query(
        "INSERT INTO account_quotas (account_id, cpu_millis, memory_bytes, gpu, max_jobs, \
         updated_at, updated_by) VALUES ($1, 1000, NULL, NULL, NULL, 0, 'test')",
    )
    .bind(account.id)
    .execute(&site.db.pool)
    .await
    .unwrap();
    let over = post(json!({"name": "big", "resources": {"cpu": "2", "memory": "1Gi"}})).await;
    assert_eq!(over.status, StatusCode::FORBIDDEN, "{}", over.body);
    assert!(
        over.body.contains("CPU: the notebook asks for 2"),
        "{}",
        over.body
    );

    // Its server fails: Failed, with the log's words, not a spinner.
    let made = post(json!({"name": "broken", "resources": {"cpu": "500m", "memory": "1Gi"}})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let nb = wait_status(&site, &key, "broken", "failed").await;
    let why = nb["message"].as_str().unwrap();
    assert!(why.contains("No module named jupyterlab"), "{why}");
    // A failed notebook holds no quota: a whole CPU fits again.
    let fits = post(json!({"name": "fits", "resources": {"cpu": "1", "memory": "1Gi"}})).await;
    assert_eq!(fits.status, StatusCode::CREATED, "{}", fits.body);
    wait_status(&site, &key, "fits", "failed").await;
    let dup = post(json!({"name": "broken", "resources": {"cpu": "500m", "memory": "1Gi"}})).await;
    assert_eq!(dup.status, StatusCode::CONFLICT, "{}", dup.body);
}

#[test]
fn a_restarted_console_starts_its_running_notebooks_again_with_their_workspace() {
    let Some(python) = jupyter_python() else {
        return;
    };
    let config = |db: &common::TestDb| Config {
        notebook_python: Some(python.display().to_string()),
        notebook_probe_secs: 3600,
        ..common::site::config(db)
    };
    let running = |notebooks: server::notebooks::NotebookService, account: app::models::Account| async move {
        use app::ports::Notebooks;
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let nb = notebooks.get(&account, "keep").await.unwrap();
            if nb.status == app::models::NotebookStatus::Running {
                return nb;
            }
            assert!(Instant::now() < deadline, "never running again: {nb:?}");
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    };
    // The first console process: its runtime is torn down with the notebook
    // running, as a crash would.
    let first = tokio::runtime::Runtime::new().unwrap();
    let db = first.block_on(common::sqlite());
    let dir = db.dir().join("notebooks/ann/keep");
    let me = first.block_on(async {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO accounts (name, namespace, created_at) VALUES ('ann', 'pc-ann', 0) RETURNING id",
        )
        .fetch_one(&db.pool)
        .await
        .unwrap();
        let account = app::models::Account { id, name: "ann".into(), namespace: "pc-ann".into(), created_at: 0 };
        let me = common::user_in(&db.pool, &account).await;
        let console = server::console::Console::build(config(&db)).await.unwrap();
        let spec = app::models::NotebookSpec {
            name: "keep".into(),
            resources: app::models::ReplicaResources::default(),
            idle_minutes: None,
            image: String::new(),
            environment: None,
            environment_use: None,
            secrets: vec![],
        };
        use app::ports::Notebooks;
        console.notebooks().create(&me, spec).await.unwrap();
        running(console.notebooks().clone(), account).await;
        std::fs::write(dir.join("work/notes.txt"), "still here").unwrap();
        me
    });
    let old_pid: i32 = std::fs::read_to_string(dir.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Held to what it asked for, as a pod is: where the console makes
    // cgroups (as root on v1, as on this project's machines), its JupyterLab
    // runs in one of its own with the notebook's memory as its limit.
    // SAFETY: geteuid has no preconditions.
    if unsafe { nix::libc::geteuid() } == 0 {
        let own = std::fs::read_to_string(format!("/proc/{old_pid}/cgroup")).unwrap();
        if let Some(path) = own
            .lines()
            .find_map(|l| l.split_once(":memory:").map(|(_, p)| p))
        {
            assert!(
                path.contains("/paddlecloud-replicas/console-") && path.contains("/notebook-"),
                "{own}"
            );
            let limit = std::fs::read_to_string(format!(
                "/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"
            ))
            .unwrap();
            let asked = app::models::ReplicaResources::default().memory;
            let asked = app::models::quantity::parse_memory_bytes("memory", &asked).unwrap();
            assert_eq!(limit.trim(), asked.to_string(), "{path}");
        }
    }
    first.shutdown_background();

    // The console starts again on the same database and data directory.
    let second = tokio::runtime::Runtime::new().unwrap();
    second.block_on(async {
        let console = server::console::Console::build(config(&db)).await.unwrap();
        let nb = running(console.notebooks().clone(), me.account.clone()).await;
        assert!(nb.message.is_empty(), "{nb:?}");
        let new_pid: i32 = std::fs::read_to_string(dir.join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_ne!(new_pid, old_pid);
        assert!(!common::alive(old_pid), "the old server is gone");
        let who = app::ports::Principal::new(me.clone(), app::ports::Credential::Session(0));
        let route = console
            .notebooks()
            .route(&who, "ann", "keep")
            .await
            .unwrap();
        let file = http()
            .get(format!(
                "{}/notebooks/ann/keep/api/contents/notes.txt?content=1",
                route.upstream
            ))
            .header("authorization", format!("token {}", route.jupyter_token))
            .send()
            .await
            .unwrap();
        assert_eq!(file.status(), StatusCode::OK);
        assert_eq!(json_of(file).await["content"], "still here");
        use app::ports::Notebooks;
        console.notebooks().stop(&me, "keep").await.unwrap();
    });
}
