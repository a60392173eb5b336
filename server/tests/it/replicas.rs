//! Two console processes on one PostgreSQL with the Kubernetes backend (the
//! real node of `scripts/kube-test-cluster.sh`, pods in containers), as a console
//! scaled out runs: what one replica does the other shows live, either
//! replica acts on the same jobs, and killing one loses nothing it
//! acknowledged. Run through `scripts/with-postgres.sh` inside
//! `scripts/kube-test-cluster.sh run`; skipped without either.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use app::models::{JobSpec, ReplicaResources, ServingSpec};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

const BIN: &str = env!("CARGO_BIN_EXE_paddlecloud");

/// One `paddlecloud serve --cluster kube` process.
struct Replica {
    child: Child,
    url: String,
    pid: u32,
}

impl Replica {
    /// Listening on `ip` (where pods reach it: its public URL).
    async fn start(db_url: &str, data: &Path, kubeconfig: &Path, ip: &str) -> Self {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut child = Command::new(BIN)
            .args(["serve", "--cluster", "kube", "--addr", &format!("{ip}:0")])
            .args(["--stop-grace", "1", "--lease-secs", "3"])
            .arg("--database-url")
            .arg(db_url)
            .arg("--data-dir")
            .arg(data)
            .current_dir(&repo)
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "warn")
            .env_remove("DATABASE_URL")
            .env_remove("PADDLECLOUD_PUBLIC_URL")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = loop {
            let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
                .await
                .expect("the console said nothing for a minute")
                .unwrap()
                .expect("the console exited before saying where it listens");
            if let Some(rest) = line.strip_prefix("PaddleCloud Console: ") {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
        };
        // Keep draining stdout so the console never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self { child, url, pid }
    }

    /// SIGKILL: no chance to release a lease or finish a request.
    async fn kill(mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }
}

/// A REST client for one user's access key, and her browser's session
/// (the live streams are the pages').
#[derive(Clone)]
struct Api {
    http: reqwest::Client,
    key: String,
    cookie: String,
}

impl Api {
    async fn send(&self, req: reqwest::RequestBuilder) -> (u16, String) {
        let res = req.bearer_auth(&self.key).send().await.unwrap();
        let status = res.status().as_u16();
        (status, res.text().await.unwrap())
    }

    async fn get(&self, url: String) -> (u16, String) {
        self.send(self.http.get(url)).await
    }

    async fn get_json(&self, url: String) -> Value {
        let (status, body) = self.get(url.clone()).await;
        assert_eq!(status, 200, "GET {url}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    async fn post(&self, url: String, body: &Value) -> (u16, String) {
        let req = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string());
        self.send(req).await
    }

    /// The `data` of each server-sent event of `url`, as they come.
    async fn events(&self, url: String) -> mpsc::UnboundedReceiver<String> {
        let mut res = self
            .http
            .get(&url)
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200, "GET {url}");
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut buf = String::new();
            while let Ok(Some(chunk)) = res.chunk().await {
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buf.find("\n\n") {
                    let event: String = buf.drain(..end + 2).collect();
                    let data: Vec<&str> = event
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(|d| d.strip_prefix(' ').unwrap_or(d))
                        .collect();
                    // Keep-alive comments carry no data.
                    if !data.is_empty() && tx.send(data.join("\n")).is_err() {
                        return;
                    }
                }
            }
        });
        rx
    }
}

/// Waits up to `secs` for an event whose data satisfies `want`.
async fn event_where(
    events: &mut mpsc::UnboundedReceiver<String>,
    secs: u64,
    what: &str,
    want: impl Fn(&str) -> bool,
) -> Duration {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, events.recv()).await {
            Ok(Some(data)) if want(&data) => return started.elapsed(),
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the stream ended before {what}"),
            Err(_) => panic!("no event for {what} in {secs} s"),
        }
    }
}

async fn until<F, Fut>(what: &str, secs: u64, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check().await {
        assert!(Instant::now() < deadline, "waited {secs} s for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reads a followed log on from line `seen` to at least line `upto`:
/// every line, in order, none twice. Returns the last line number read.
async fn read_lines(log: &mut mpsc::UnboundedReceiver<String>, mut seen: u32, upto: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen < upto {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, log.recv())
            .await
            .unwrap_or_else(|_| panic!("log stopped at line {seen}"))
            .expect("the log stream ended");
        for line in chunk.lines() {
            // `STAMP line N`
            let n: u32 = line.rsplit(' ').next().unwrap().parse().unwrap();
            assert_eq!(n, seen + 1, "after line {seen} came {line:?}");
            seen = n;
        }
    }
    seen
}

fn small() -> ReplicaResources {
    ReplicaResources {
        cpu: "100m".into(),
        memory: "64Mi".into(),
        gpu: 0,
    }
}

/// A trainer (in `image`) that prints `line 1`, `line 2`, … every 50 ms for
/// a minute.
fn counting_job(name: &str, image: &str) -> JobSpec {
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
        image: image.into(),
        command: vec![
            "sh".into(),
            "-c".into(),
            "i=0; while [ $i -lt 1200 ]; do i=$((i+1)); echo line $i; sleep 0.05; done".into(),
        ],
        args: vec![],
        working_dir: String::new(),
        env: vec![],
        num_ps: 0,
        num_trainers: 1,
        ps: small(),
        trainer: small(),
        datasets: vec![],
        models: vec![],
    }
}

fn admin(args: &[&str], db_url: &str, data: &Path, stdin: &str) -> String {
    let data = data.to_str().unwrap();
    let all = [
        &["admin"],
        args,
        &["--database-url", db_url, "--data-dir", data],
    ]
    .concat();
    let (ok, out, err) = common::cli::paddlecloud(&all, stdin);
    assert!(ok, "paddlecloud admin {args:?}: {err}");
    out
}

/// The steps of `tag` as B's CSV of every point has them.
async fn steps_on(api: &Api, base: &str, job: &str, tag: &str) -> Vec<i64> {
    let (status, csv) = api
        .get(format!("{base}/api/v1/jobs/{job}/metrics/{tag}?format=csv"))
        .await;
    if status == 404 {
        return vec![];
    }
    assert_eq!(status, 200, "{csv}");
    csv.lines()
        .filter_map(|l| l.split(',').next()?.parse().ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_database_show_and_steer_the_same_work_and_one_dying_loses_nothing_on_a_real_node(
) {
    let Some(db) = common::postgres().await else {
        return;
    };
    let Some(node) = common::node::real_node() else {
        return;
    };
    let kubeconfig = PathBuf::from(std::env::var_os("PADDLECLOUD_TEST_KUBECONFIG").unwrap());
    let a = Replica::start(&db.url, &db.dir().join("a"), &kubeconfig, &node.ip).await;
    let b = Replica::start(&db.url, &db.dir().join("b"), &kubeconfig, &node.ip).await;
    let (url_a, url_b) = (a.url.clone(), b.url.clone());

    let account = format!("rep{:08x}", getrandom::u32().unwrap());
    let home = db.dir().join("home");
    admin(
        &[
            "create-account",
            "--name",
            &account,
            "--email",
            "ann@example.com",
            "--password-stdin",
        ],
        &db.url,
        &home,
        "a long password\n",
    );
    let key = admin(
        &[
            "create-key",
            "--account",
            &account,
            "--user",
            "ann@example.com",
        ],
        &db.url,
        &home,
        "",
    )
    .trim()
    .to_owned();
    assert!(key.starts_with("pck_"), "create-key printed {key:?}");
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let signed_in = http
        .post(format!("{url_b}/api/sign_in"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(format!(
            "account={account}&email=ann%40example.com&password=a+long+password"
        ))
        .send()
        .await
        .unwrap();
    let status = signed_in.status();
    let cookie = signed_in.headers().get("set-cookie").cloned();
    assert!(
        status.is_success(),
        "{status}: {}",
        signed_in.text().await.unwrap()
    );
    let cookie = cookie
        .expect("a session cookie")
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let api = Api { http, key, cookie };

    // B's job table follows; A takes the job.
    let mut b_jobs = api.events(format!("{url_b}/events/jobs")).await;
    let spec = serde_json::to_value(counting_job("train", &node.shell_image)).unwrap();
    let (status, body) = api.post(format!("{url_a}/api/v1/jobs"), &spec).await;
    assert_eq!(status, 201, "{body}");
    event_where(&mut b_jobs, 10, "the job on B's table", |d| d == "train").await;
    let listed = api.get_json(format!("{url_b}/api/v1/jobs")).await;
    assert!(listed.to_string().contains("\"train\""), "{listed}");
    let page = api.get(format!("{url_b}/jobs")).await;
    assert_eq!(page.0, 200);

    // B follows the trainer's log as it is written.
    let pod = {
        let mut name = String::new();
        until("the trainer's pod", 30, || async {
            let pods = api
                .get_json(format!("{url_b}/api/v1/jobs/train/pods"))
                .await;
            let running = pods.as_array().and_then(|pods| {
                pods.iter()
                    .find(|p| p["phase"] == "running")
                    .and_then(|p| p["name"].as_str())
                    .map(str::to_owned)
            });
            running.is_some()
        })
        .await;
        let pods = api
            .get_json(format!("{url_b}/api/v1/jobs/train/pods"))
            .await;
        name.push_str(pods[0]["name"].as_str().unwrap());
        name
    };
    let mut log = api
        .events(format!("{url_b}/events/log?job=train&pod={pod}&tail=10000"))
        .await;
    let mut lines_seen = read_lines(&mut log, 0, 20).await;

    // Points written through A are on B's charts, and B's live stream says
    // so, within 2 s.
    let mut b_metrics = api
        .events(format!("{url_b}/events/metrics?job=train"))
        .await;
    let written = Instant::now();
    let points = json!([{"tag": "loss", "step": 1, "value": 0.5}, {"tag": "loss", "step": 2, "value": 0.25}]);
    let (status, body) = api
        .post(format!("{url_a}/api/v1/jobs/train/metrics"), &points)
        .await;
    assert_eq!(status, 200, "{body}");
    let heard = event_where(&mut b_metrics, 2, "B's live chart", |d| d == "train").await;
    eprintln!("B heard of A's points after {heard:?}");
    until("A's points on B's chart", 2, || async {
        steps_on(&api, &url_b, "train", "loss").await == [1, 2]
    })
    .await;
    assert!(written.elapsed() <= Duration::from_secs(2));

    // A serving instance launched on A answers through B's /serve/.
    let model_dir = db.dir().join("tiny");
    std::fs::create_dir_all(&model_dir).unwrap();
    std::fs::write(model_dir.join("inference.json"), b"{\"tiny\": true}").unwrap();
    let version = json!({"description": "tiny", "tags": []});
    let (status, body) = api
        .post(
            format!("{url_a}/api/v1/models"),
            &json!({"name": "tiny", "description": "", "tags": []}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = api
        .post(
            format!("{url_a}/api/v1/models/{account}/tiny/versions"),
            &version,
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = api
        .send(
            api.http
                .put(format!(
                    "{url_a}/api/v1/models/{account}/tiny/files/inference.json?version=1"
                ))
                .body(std::fs::read(model_dir.join("inference.json")).unwrap()),
        )
        .await;
    assert!(status < 300, "{status} {body}");
    let (status, body) = api
        .post(
            format!("{url_a}/api/v1/models/{account}/tiny/versions/1/finish"),
            &json!({}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let serving = ServingSpec {
        name: "echo".into(),
        model: "tiny".into(),
        version: None,
        file: String::new(),
        script: String::new(),
        command: vec![
            "sh".into(),
            "-c".into(),
            "exec python3 -m http.server \"$PORT\" --directory \"$PADDLECLOUD_MODEL_DIR\"".into(),
        ],
        // Python's HTTP server; its init container fetches the model from A.
        image: "paddlepaddle/paddle:3.3.1".into(),
        env: vec![],
        replicas: 1,
        resources: small(),
        autoscale: None,
        environment: None,
        environment_use: None,
        canary: None,
        shadow: None,
        secrets: vec![],
    };
    let (status, body) = api
        .post(
            format!("{url_a}/api/v1/serving"),
            &serde_json::to_value(serving).unwrap(),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    until("the instance ready, as B sees it", 90, || async {
        let got = api.get_json(format!("{url_b}/api/v1/serving/echo")).await;
        assert_ne!(got["status"], "failed", "{got}");
        got["status"] == "ready"
    })
    .await;
    until("an answer through B's /serve/", 30, || async {
        let (status, body) = api
            .get(format!("{url_b}/serve/{account}/echo/inference.json"))
            .await;
        status == 200 && body == "{\"tiny\": true}"
    })
    .await;

    // Kill A while it takes points: every point it acknowledged is on B.
    let writer = {
        let (api, url_a) = (api.clone(), url_a.clone());
        tokio::spawn(async move {
            let mut acknowledged = vec![];
            for batch in 0..10_000i64 {
                let points: Vec<Value> = (0..50)
                    .map(|i| json!({"tag": "acc", "step": batch * 50 + i, "value": i}))
                    .collect();
                let sent = api
                    .http
                    .post(format!("{url_a}/api/v1/jobs/train/metrics"))
                    .bearer_auth(&api.key)
                    .header("content-type", "application/json")
                    .body(Value::from(points).to_string())
                    .send()
                    .await;
                match sent {
                    Ok(res) if res.status().as_u16() == 200 => {
                        acknowledged.extend(batch * 50..batch * 50 + 50)
                    }
                    _ => break,
                }
            }
            acknowledged
        })
    };
    let holder_a = format!(":{}:", a.pid);
    let lease_of = |name: &'static str| {
        let pool = db.pool.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT holder FROM leases WHERE name = $1")
                .bind(name)
                .fetch_optional(&pool)
                .await
                .unwrap()
                .unwrap_or_default()
        }
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = lease_of("pipeline-scheduler").await;
    a.kill().await;
    let acknowledged = writer.await.unwrap();
    assert!(acknowledged.len() >= 50, "A acknowledged no points");
    eprintln!(
        "A acknowledged {} points before it was killed",
        acknowledged.len()
    );
    let stored = steps_on(&api, &url_b, "train", "acc").await;
    let missing: Vec<&i64> = acknowledged
        .iter()
        .filter(|s| !stored.contains(s))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged but lost: {} points, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );

    // The loops A ran move to B within the lease's life.
    if before.contains(&holder_a) {
        until("B holding the pipeline scheduler's lease", 10, || async {
            lease_of("pipeline-scheduler")
                .await
                .contains(&format!(":{}:", b.pid))
        })
        .await;
    }

    // The job lives on without A: B still follows its log, and B stops it.
    lines_seen = read_lines(&mut log, lines_seen, lines_seen + 20).await;
    assert!(lines_seen >= 40);
    let (status, body) = api
        .post(format!("{url_b}/api/v1/jobs/train/stop"), &json!({}))
        .await;
    assert!(status < 300, "{status} {body}");
    until("the job stopped", 30, || async {
        api.get_json(format!("{url_b}/api/v1/jobs/train")).await["status"] == "stopped"
    })
    .await;
    drop(b);
}
