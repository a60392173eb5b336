//! The console deployed in the cluster as a user deploys it: its own image
//! (`scripts/console-image.sh`, the runtime stage of `deploy/Dockerfile`),
//! `deploy/paddlecloud.yaml` applied as it is (2 replicas, in-cluster
//! credentials), PostgreSQL beside the node. Driven through its Service: a
//! job that loses a console replica, a notebook, the fit-a-line template
//! trained, charted, registered and served.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const NAMESPACE: &str = "paddlecloud";
const DEPLOYMENT: &str = "deployment/paddlecloud-console";

/// kubectl (1.20.2, first in `PATH` under `scripts/kube-test-cluster.sh run`) with
/// `args`; its output, or a panic with it.
fn kubectl(args: &[&str]) -> String {
    let out = Command::new("kubectl").args(args).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kubectl {args:?}: {text}");
    text
}

/// Deletes what the manifest made, and the account's namespace with what the
/// console made in it (a notebook, jobs), when the test ends, passed or not:
/// the node's CPUs are few, and later tests count on them.
struct Deployed {
    manifest: &'static str,
    namespace: String,
}

impl Drop for Deployed {
    fn drop(&mut self) {
        for what in [
            ["-f", self.manifest],
            ["namespace", self.namespace.as_str()],
        ] {
            let _ = Command::new("kubectl")
                .args([
                    "delete",
                    "--ignore-not-found",
                    "--wait=true",
                    "--timeout=60s",
                ])
                .args(what)
                .output();
        }
    }
}

/// The console's running pods, by name; not those being deleted (they
/// still run for a while, answering nothing new).
fn console_pods() -> Vec<String> {
    let listed: Value = serde_json::from_str(&kubectl(&[
        "-n",
        NAMESPACE,
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/name=paddlecloud-console",
        "-o",
        "json",
    ]))
    .unwrap();
    listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null()
        })
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A GET through the Service with `key`: its status and JSON body, or
/// `None` while no replica answers (a Service whose endpoint just went).
async fn get(http: &reqwest::Client, url: &str, key: &str) -> Option<(u16, Value)> {
    let res = http
        .get(url)
        .bearer_auth(key)
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?;
    let status = res.status().as_u16();
    let body = res.text().await.ok()?;
    Some((status, serde_json::from_str(&body).unwrap_or(Value::Null)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_deployed_from_its_manifest_runs_jobs_through_its_service_and_loses_nothing_with_a_replica_on_a_real_node(
) {
    let Some((node, client)) = common::node::client().await else {
        return;
    };
    let db = common::postgres()
        .await
        .expect("the deployed console needs PostgreSQL beside the node (scripts/with-postgres.sh)");
    // Its first user and key, made in the database it will use.
    let account = format!("dep{:08x}", getrandom::u32().unwrap());
    common::accounts(&db)
        .create_confirmed(
            app::models::SignUpForm {
                account: account.clone(),
                email: "ann@example.com".into(),
                password: "a long password".into(),
            },
            false,
            false,
        )
        .await
        .unwrap();
    let key = server::access_keys::SqlAccessKeys::new(db.pool.clone())
        .create_for(&account, "ann@example.com", "tests", Default::default())
        .await
        .unwrap()
        .key;
    // Pods reach the server at the node's address, not loopback.
    let url = db.url.replacen("@127.0.0.1:", &format!("@{}:", node.ip), 1);
    assert_ne!(url, db.url, "a PostgreSQL URL on 127.0.0.1: {}", db.url);

    // As the manifest's header says: the secret, then the file as it is.
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/paddlecloud.yaml");
    let started = Instant::now();
    // The namespace the console gives the account.
    let _deployed = Deployed {
        manifest,
        namespace: app::models::namespace_for(&account),
    };
    kubectl(&["apply", "-f", manifest]);
    kubectl(&[
        "-n",
        NAMESPACE,
        "create",
        "secret",
        "generic",
        "paddlecloud-db",
        &format!("--from-literal=DATABASE_URL={url}"),
    ]);
    let rollout = [
        "-n",
        NAMESPACE,
        "rollout",
        "status",
        DEPLOYMENT,
        "--timeout=180s",
    ];
    kubectl(&rollout);
    eprintln!(
        "deployed: 2 replicas ready {:?} after apply",
        started.elapsed()
    );
    let pods = console_pods();
    assert_eq!(pods.len(), 2, "{pods:?}");
    let ip = kubectl(&[
        "-n",
        NAMESPACE,
        "get",
        "service",
        "paddlecloud-console",
        "-o",
        "jsonpath={.spec.clusterIP}",
    ]);
    let base = format!("http://{}:3000", ip.trim());

    // reqwest has no TLS provider of its own: the process-wide one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let health = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let (status, me) = get(&http, &format!("{base}/api/v1/me"), &key)
        .await
        .unwrap();
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["account"]["name"], account.as_str(), "{me}");

    // A job through the Service: two trainers in containers, long enough
    // to lose a console replica while it runs.
    let spec = json!({
        "name": "steady", "image": node.shell_image,
        "command": ["sh", "-c", "echo started $PADDLE_TRAINER_ID; sleep 15; echo done $PADDLE_TRAINER_ID"],
        "num_trainers": 2, "trainer": {"cpu": "100m", "memory": "64Mi"}
    });
    let created = http
        .post(format!("{base}/api/v1/jobs"))
        .bearer_auth(&key)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(spec.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201, "{}", created.text().await.unwrap());
    let job_url = format!("{base}/api/v1/jobs/steady");
    let wait = |want: &'static str, limit: Duration| {
        let (http, job_url, key) = (http.clone(), job_url.clone(), key.clone());
        async move {
            let start = Instant::now();
            loop {
                if let Some((200, job)) = get(&http, &job_url, &key).await {
                    if job["status"] == want {
                        return job;
                    }
                    assert!(
                        !["failed", "stopped"].contains(&job["status"].as_str().unwrap_or("")),
                        "{job}"
                    );
                }
                assert!(start.elapsed() < limit, "steady never became {want}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    wait("running", Duration::from_secs(60)).await;

    // One console replica goes mid-job; the other carries on, and the
    // Deployment brings a new one.
    kubectl(&["-n", NAMESPACE, "delete", "pod", &pods[0], "--wait=false"]);
    let done = wait("succeeded", Duration::from_secs(90)).await;
    assert_eq!(done["trainers"]["succeeded"], 2, "{done}");
    // Either replica serves the logs (kube-proxy picks one per connection),
    // from the data volume they share once the pods are cleaned up.
    for trainer in ["trainer-0", "trainer-1", "trainer-0", "trainer-1"] {
        let log = http
            .get(format!("{job_url}/pods/{trainer}/log"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let id = &trainer[trainer.len() - 1..];
        assert!(
            log.contains(&format!("started {id}")) && log.contains(&format!("done {id}")),
            "{log}"
        );
    }
    kubectl(&rollout);
    let now = console_pods();
    assert_eq!(now.len(), 2, "{now:?}");
    assert!(!now.contains(&pods[0]), "{now:?}");
    // The job's record and the account are where they were, for either replica.
    for _ in 0..4 {
        let (status, job) = get(&http, &job_url, &key).await.unwrap();
        assert_eq!(
            (status, job["status"].as_str()),
            (200, Some("succeeded")),
            "{job}"
        );
    }
    notebook_through_the_service(&http, &base, &account, &key, &node.shell_image).await;
    // The shipped template end to end through the Service: one trainer (two
    // of one CPU each do not fit beside the console's replicas on this
    // node's two cores), its loss shipped to the console by the Service's
    // name, the line registered and served, predicting through `/serve/`.
    let namespace = app::models::namespace_for(&account);
    let fit = crate::real_node::FitALine {
        to: &common::rest::Endpoint::Http {
            http: http.clone(),
            base: base.clone(),
        },
        key: &key,
        account: &account,
        namespace: &namespace,
        trainers: 1,
    };
    fit.trains_is_charted_registered_and_served(&client, &node.name)
        .await;
    measure(&http, &base, &account).await;
}

/// A notebook made through the deployed console: JupyterLab in a container
/// opens through either replica (each request on a fresh connection, so
/// kube-proxy spreads them; only one replica started it), and its kernel
/// submits a job with the SDK, which reaches the console by its Service's
/// name (the manifest's `PADDLECLOUD_PUBLIC_URL`).
async fn notebook_through_the_service(
    http: &reqwest::Client,
    base: &str,
    account: &str,
    key: &str,
    shell_image: &str,
) {
    let made = http
        .post(format!("{base}/api/v1/notebooks"))
        .bearer_auth(key)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(
            json!({
                "name": "lab", "image": "paddlepaddle/paddle:3.3.1",
                "resources": {"cpu": "250m", "memory": "1Gi"},
            })
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201, "{}", made.text().await.unwrap());
    let started = Instant::now();
    loop {
        let (_, nb) = get(http, &format!("{base}/api/v1/notebooks/lab"), key)
            .await
            .unwrap();
        if nb["status"] == "running" {
            break;
        }
        assert!(
            nb["status"] != "failed" && started.elapsed() < Duration::from_secs(180),
            "{nb}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    eprintln!(
        "deployed: a notebook Running {:?} after it was made",
        started.elapsed()
    );
    let signed_in = http
        .post(format!("{base}/api/sign_in"))
        .header("accept", "application/json")
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(format!(
            "account={account}&email=ann%40example.com&password=a+long+password"
        ))
        .send()
        .await
        .unwrap();
    let cookie = signed_in
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or_else(|| panic!("no session cookie: {signed_in:?}"))
        .to_owned();
    let lab = format!("/notebooks/{account}/lab/");
    for _ in 0..8 {
        // reqwest has no TLS provider of its own: the process-wide one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let status = reqwest::Client::new()
            .get(format!("{base}{lab}api/status"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(status.status(), 200, "{}", status.text().await.unwrap());
    }
    let kernel = crate::notebooks::start_kernel(base, &lab, &cookie).await;
    let code = format!(
        "import paddlecloud\n\
         job = paddlecloud.create_cloud_job('from-lab', 1, '64Mi', 0, '100m', command=['true'],\n\
                                            image='{shell_image}')\n\
         print('JOB', job['name'])\n"
    );
    let printed = crate::notebooks::run_cell(base, &lab, &kernel, &cookie, &code).await;
    assert_eq!(crate::notebooks::printed_value(&printed, "JOB"), "from-lab");
    let (status, job) = get(http, &format!("{base}/api/v1/jobs/from-lab"), key)
        .await
        .unwrap();
    assert_eq!(
        (status, &job["spec"]["notebook"]),
        (200, &json!("lab")),
        "{job}"
    );
    let gone = http
        .delete(format!("{base}/api/v1/notebooks/lab"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 204, "{}", gone.text().await.unwrap());
}

/// The console's own figures in the cluster (docs/testing.md, "On a real node"): its
/// job table as a signed-in browser gets it through the Service, pages a
/// second with 4 at a time for 5 s; and each replica's resident memory,
/// read from the host (a container's processes are the host's).
async fn measure(http: &reqwest::Client, base: &str, account: &str) {
    let signed_in = http
        .post(format!("{base}/api/sign_in"))
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(reqwest::header::ACCEPT, "application/json")
        .body(format!(
            "account={account}&email=ann%40example.com&password=a+long+password"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 200);
    let cookie = signed_in.headers()[reqwest::header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let page = |http: reqwest::Client, cookie: String, url: String| async move {
        let res = http
            .get(url)
            .header(reqwest::header::COOKIE, cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let body = res.text().await.unwrap();
        assert!(body.contains("steady"), "the job table lists the job");
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (http, cookie, url) = (http.clone(), cookie.clone(), format!("{base}/jobs"));
            tokio::spawn(async move {
                let mut n = 0u32;
                while Instant::now() < deadline {
                    page(http.clone(), cookie.clone(), url.clone()).await;
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut pages = 0;
    for w in workers {
        pages += w.await.unwrap();
    }
    println!(
        "job table through the Service (2 replicas, 4 at a time): {:.0} pages/s",
        f64::from(pages) / 5.0
    );
    let argv = [
        "paddlecloud",
        "serve",
        "--cluster",
        "kube",
        "--addr",
        "0.0.0.0:3000",
    ];
    for pid in common::node::processes_running(&argv) {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let rss = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .unwrap_or("VmRSS: ?");
        println!("console replica (pid {pid} on the host): {rss}");
    }
}
