//! The notebook contract: what any notebook backend must do, checked with a
//! real JupyterLab behind the console on a real socket. The local executor
//! runs it with processes of the test venv's Python; the Kubernetes backend
//! runs the same functions on the real node (`scripts/kube-test-cluster.sh`): the
//! notebook's JupyterLab runs in a container of the PaddlePaddle image built
//! here, its workspace a claim the node's hostPath provisioner binds, and
//! the kernel's jobs run in containers beside it. The console reaches the
//! server through the API server's port-forward, as a console outside the
//! cluster must (`Reach::ApiServer`); the restart test reaches it at the
//! pod's IP, as a console in the cluster does. Kubernetes-only behaviours
//! (what the notebook is made of, why a pod waits, a console restart that
//! keeps the kernels) follow.

use std::time::{Duration, Instant};

use app::models::NotebookStatus;
use http::{Method, StatusCode};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret, Service};
use kube::Api;
use serde_json::{json, Value};
use server::console::{ClusterChoice, Config};
use server::kubernetes::notebooks::{NotebookPods, Reach};
use server::kubernetes::KubeAccess;

use crate::common;
use crate::common::rest::{call, key_and_cookie};
use crate::common::site::Site;
use crate::notebooks::{
    age, broken_python, http, json_of, jupyter_python, printed_value, run_cell, running_notebook,
    start_kernel, wait_status,
};

/// A console whose notebooks run on one backend, with a signed-up account.
pub(crate) struct Harness {
    pub(crate) site: Site,
    /// The console's base URL.
    pub(crate) url: String,
    /// The account's owner: a key and a browser session.
    pub(crate) key: String,
    pub(crate) cookie: String,
    pub(crate) account: String,
    /// What the console was built from.
    pub(crate) config: Config,
    /// On Kubernetes: what reads the cluster.
    pub(crate) kube: Option<Kube>,
    /// Holds the local backend's broken Python.
    _dir: Option<tempfile::TempDir>,
}

pub(crate) struct Kube {
    client: kube::Client,
    /// The account's namespace.
    namespace: String,
}

/// Where a harness's notebooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// Processes of the test venv's Python.
    Local,
    /// Containers on the real node.
    RealNode,
}

/// The image notebooks run on the real node: JupyterLab and PaddlePaddle.
pub(crate) const NOTEBOOK_IMAGE: &str = "paddlepaddle/paddle:3.3.1";
/// An image on the node whose Python has no JupyterLab.
const NO_JUPYTER_IMAGE: &str = "python:3.11-slim";

impl Kube {
    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The replicas notebook `name`'s StatefulSet asks for, if it has one.
    async fn replicas(&self, name: &str) -> Option<i32> {
        let set = self.api::<StatefulSet>().get_opt(name).await.unwrap()?;
        set.spec?.replicas
    }

    async fn claim(&self, name: &str) -> Option<PersistentVolumeClaim> {
        self.api::<PersistentVolumeClaim>()
            .get_opt(&format!("{name}-workspace"))
            .await
            .unwrap()
    }
}

/// The console with notebooks on `backend` (`None`: skipped, no Python with
/// JupyterLab or no real node), their servers unable to start if `broken`,
/// and a new account's owner; on Kubernetes it reaches their servers
/// through the API server.
pub(crate) async fn harness(backend: Backend, broken: bool) -> Option<Harness> {
    harness_reaching(backend, broken, Reach::ApiServer, None).await
}

/// [`harness`], reaching Kubernetes notebook servers as `reach` says, their
/// environments' init steps installing from `pip_index` if given.
async fn harness_reaching(
    backend: Backend,
    broken: bool,
    reach: Reach,
    pip_index: Option<String>,
) -> Option<Harness> {
    let mut dir = None;
    let (address, python, client, image) = match backend {
        Backend::Local => {
            let python = if broken {
                let made = tempfile::tempdir().unwrap();
                let python = broken_python(made.path());
                dir = Some(made);
                python
            } else {
                jupyter_python()?.clone()
            };
            (
                "127.0.0.1".to_owned(),
                python.display().to_string(),
                None,
                None,
            )
        }
        Backend::RealNode => {
            let (node, client) = common::node::client().await?;
            let image = if broken {
                NO_JUPYTER_IMAGE
            } else {
                NOTEBOOK_IMAGE
            };
            (node.ip, "python3".to_owned(), Some(client), Some(image))
        }
    };
    let mut built = None;
    let (site, url) = common::site::on_socket_at(&address, |config, _, _| {
        let cluster = match &client {
            None => config.cluster.clone(),
            Some(client) => ClusterChoice::Kube {
                access: KubeAccess::Client {
                    client: client.clone(),
                    name: "real-node".into(),
                },
                serving_model_root: None,
                pod_support: Box::new(server::kubernetes::inputs::PodSupport {
                    pip_index_url: pip_index.clone(),
                    ..Default::default()
                }),
                notebook_pods: Box::new(NotebookPods {
                    image: image.unwrap().to_owned(),
                    grace_seconds: 1,
                    reach,
                    ..NotebookPods::default()
                }),
            },
        };
        // Notebooks in pods: the console's own JupyterLab build renders
        // versions; notebook runs' environments (papermill) are built
        // locally. Built once per machine, like the environments' tests'.
        let environments_dir = crate::environments::shared_environments();
        let config = Config {
            notebook_python: Some(python),
            notebook_probe_secs: 3600,
            cluster,
            environments_dir,
            ..config
        };
        built = Some(config.clone());
        config
    })
    .await;
    // Tests share the cluster: an account (and namespace) of their own.
    let account = format!("nb{:08x}", getrandom::u32().unwrap());
    let (key, cookie) = key_and_cookie(&site, &account).await;
    let namespace = site.namespace_of(&account).await;
    let kube = client.map(|client| Kube { client, namespace });
    Some(Harness {
        site,
        url,
        key,
        cookie,
        account,
        config: built.unwrap(),
        kube,
        _dir: dir,
    })
}

impl Harness {
    /// The account's owner, as signed in.
    async fn principal(&self) -> app::ports::Principal {
        let me = self.site.owner(&self.account).await;
        app::ports::Principal::new(me, app::ports::Credential::Session(0))
    }

    pub(crate) async fn post(&self, path: &str, body: Option<Value>) -> common::rest::Answer {
        call(&self.site, Method::POST, path, Some(&self.key), body).await
    }

    /// Deletes notebook `name` (its workspace with it).
    pub(crate) async fn delete(&self, name: &str) {
        let path = format!("/api/v1/notebooks/{name}");
        let gone = call(&self.site, Method::DELETE, &path, Some(&self.key), None).await;
        assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    }

    /// GET `path` of notebook `name` through the console's proxy, with the
    /// browser's session.
    pub(crate) async fn lab_get(&self, name: &str, path: &str) -> reqwest::Response {
        http()
            .get(format!(
                "{}/notebooks/{}/{name}/{path}",
                self.url, self.account
            ))
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap()
    }
}

macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn on_local() {
                    super::$name(super::Backend::Local).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn on_a_real_node() {
                    super::$name(super::Backend::RealNode).await;
                }
            }
        )*
    };
}

contract!(
    a_notebook_submits_jobs_with_its_own_key_and_keeps_its_workspace_until_deleted,
    a_notebook_whose_server_dies_comes_back_with_its_workspace_and_says_its_kernels_memory_is_gone,
    a_server_that_cannot_start_fails_with_its_own_words,
    the_idle_clock_reads_the_servers_kernels_and_stops_a_notebook_idle_past_its_timeout,
);

async fn a_notebook_submits_jobs_with_its_own_key_and_keeps_its_workspace_until_deleted(
    backend: Backend,
) {
    let Some(h) = harness(backend, false).await else {
        return;
    };
    let name = "scratch";
    // A dataset of the account's: at $PADDLE_DATASET_DIR_<NAME> in the kernel.
    let made = h
        .post("/api/v1/datasets", Some(json!({"name": "notes"})))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    crate::common::rest::put_file(
        &h.site,
        &h.key,
        &format!("/api/v1/datasets/{}/notes", h.account),
        "a.txt",
        "in the dataset",
    )
    .await;
    // Two of the account's secrets for its kernels: a variable and a file.
    for (secret, value) in [("nb-token", "tok-24680"), ("nb-cred", "cred-13579")] {
        let set = call(
            &h.site,
            Method::PUT,
            &format!("/api/v1/secrets/{secret}"),
            Some(&h.key),
            Some(json!({ "value": value })),
        )
        .await;
        assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    }
    let secrets = json!({"secrets": [
        {"secret": "nb-token", "env": "NB_TOKEN"},
        {"secret": "nb-cred", "file": "cred.txt"},
    ]});
    running_notebook(&h.site, &h.key, name, secrets).await;
    if let Some(k) = &h.kube {
        // Reached by name through the API server: no route to the pod is used.
        let route = h
            .site
            .notebooks
            .route(&h.principal().await, &h.account, name)
            .await
            .unwrap();
        assert_eq!(
            route.upstream,
            format!("http://{name}-0.{}:8888", k.namespace)
        );
    }
    let lab = format!("/notebooks/{}/{name}/", h.account);
    let kernel = start_kernel(&h.url, &lab, &h.cookie).await;
    let printed = run_cell(
        &h.url,
        &lab,
        &kernel,
        &h.cookie,
        "import os, paddlecloud\n\
         job = paddlecloud.create_cloud_job('from-nb', 1, '256Mi', 0, '500m', command=['true'],\n\
                                            image='paddlepaddle/paddle:3.3.1')\n\
         print('JOB', job['name'])\n\
         print('KEY', os.environ['PADDLECLOUD_KEY'])\n\
         print('HOME', os.path.samefile(os.getcwd(), os.environ['HOME']))\n\
         print('DATA', open(os.environ['PADDLE_DATASET_DIR_NOTES'] + '/a.txt').read())\n\
         print('TOKEN', os.environ['NB_TOKEN'][::-1])\n\
         print('CRED', open(os.environ['PADDLECLOUD_SECRETS_DIR'] + '/cred.txt').read()[::-1])\n\
         open('keep.txt', 'w').write('kept')\n",
    )
    .await;
    assert_eq!(printed_value(&printed, "JOB"), "from-nb");
    assert_eq!(printed_value(&printed, "TOKEN"), "08642-kot");
    assert_eq!(printed_value(&printed, "CRED"), "97531-derc");
    assert_eq!(printed_value(&printed, "DATA"), "in the dataset");
    assert_eq!(
        printed_value(&printed, "HOME"),
        "True",
        "kernels start in the workspace"
    );
    let nb_key = printed_value(&printed, "KEY").to_owned();
    assert!(nb_key.starts_with("pcn_"), "{nb_key}");
    let job = call(
        &h.site,
        Method::GET,
        "/api/v1/jobs/from-nb",
        Some(&h.key),
        None,
    )
    .await;
    assert_eq!(job.json()["spec"]["notebook"], name, "{}", job.body);
    if let Some(k) = &h.kube {
        assert_eq!(k.replicas(name).await, Some(1));
        let claim = k.claim(name).await.expect("a workspace claim");
        assert_eq!(claim.status.and_then(|s| s.phase).as_deref(), Some("Bound"));
        let service = k
            .api::<Service>()
            .get_opt(&format!("{name}-notebook"))
            .await
            .unwrap();
        assert!(service.is_some(), "a Service in front of it");
        let pod = k.api::<Pod>().get(&format!("{name}-0")).await.unwrap();
        let labels = pod.metadata.labels.unwrap_or_default();
        assert_eq!(labels["app.kubernetes.io/managed-by"], "paddlecloud");
        assert_eq!(labels["paddlecloud.org/notebook"], name);
        // The key is in the Secret the pod reads, not in the pod's spec.
        let spec = serde_json::to_string(&pod.spec).unwrap();
        assert!(!spec.contains(&nb_key), "{spec}");
        let secret = k
            .api::<Secret>()
            .get(&format!("{name}-notebook"))
            .await
            .unwrap();
        let stored = secret.data.unwrap_or_default()["PADDLECLOUD_KEY"].0.clone();
        assert_eq!(String::from_utf8(stored).unwrap(), nb_key);
    }

    // Stopped: the key and the proxy stop working, the workspace stays.
    let stopped = h
        .post(&format!("/api/v1/notebooks/{name}/stop"), None)
        .await;
    assert_eq!(stopped.json()["status"], "stopped", "{}", stopped.body);
    let me = call(&h.site, Method::GET, "/api/v1/me", Some(&nb_key), None).await;
    assert_eq!(me.status, StatusCode::UNAUTHORIZED, "{}", me.body);
    let closed = h.lab_get(name, "api/status").await;
    assert_eq!(closed.status(), StatusCode::SERVICE_UNAVAILABLE);
    if let Some(k) = &h.kube {
        assert_eq!(k.replicas(name).await, Some(0), "stop scales it to 0");
        assert!(
            k.api::<Pod>()
                .get_opt(&format!("{name}-0"))
                .await
                .unwrap()
                .is_none(),
            "its pod is gone once stopped"
        );
        assert!(k.claim(name).await.is_some(), "the workspace stays");
    }

    // Started again: a new key, the file still there.
    let started = h
        .post(&format!("/api/v1/notebooks/{name}/start"), None)
        .await;
    assert_eq!(started.status, StatusCode::OK, "{}", started.body);
    wait_status(&h.site, &h.key, name, "running").await;
    let file = h.lab_get(name, "api/contents/keep.txt?content=1").await;
    assert_eq!(file.status(), StatusCode::OK);
    assert_eq!(json_of(file).await["content"], "kept");

    // Deleted: a notebook made again under its name starts empty.
    h.delete(name).await;
    if let Some(k) = &h.kube {
        assert_eq!(k.replicas(name).await, None, "its StatefulSet is gone");
        assert!(k.claim(name).await.is_none(), "its claim is gone");
    }
    running_notebook(&h.site, &h.key, name, json!({})).await;
    let file = h.lab_get(name, "api/contents/keep.txt").await;
    assert_eq!(file.status(), StatusCode::NOT_FOUND);
    h.delete(name).await;
}

/// Recovery (Submarine's P0): the server dies under a running notebook (its
/// process group killed; on Kubernetes its pod deleted) and it comes back
/// by itself with its workspace, saying that the kernels' memory is gone.
async fn a_notebook_whose_server_dies_comes_back_with_its_workspace_and_says_its_kernels_memory_is_gone(
    backend: Backend,
) {
    let Some(h) = harness(backend, false).await else {
        return;
    };
    let name = "phoenix";
    running_notebook(&h.site, &h.key, name, json!({})).await;
    let lab = format!("/notebooks/{}/{name}/", h.account);
    let kernel = start_kernel(&h.url, &lab, &h.cookie).await;
    let code = "open('kept.txt', 'w').write('kept')\nremembered = 41\nprint('SET', remembered)\n";
    let printed = run_cell(&h.url, &lab, &kernel, &h.cookie, code).await;
    assert_eq!(printed_value(&printed, "SET"), "41");

    match &h.kube {
        None => {
            let pid_file = h
                .config
                .data_dir
                .join("notebooks")
                .join(&h.account)
                .join(name)
                .join("pid");
            let group: i32 = std::fs::read_to_string(&pid_file)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(group),
                nix::sys::signal::Signal::SIGKILL,
            )
            .unwrap();
        }
        Some(k) => {
            let pods = k.api::<Pod>();
            let gone = kube::api::DeleteParams {
                grace_period_seconds: Some(0),
                ..Default::default()
            };
            pods.delete(&format!("{name}-0"), &gone).await.unwrap();
        }
    }

    let deadline = Instant::now() + Duration::from_secs(240);
    let back = loop {
        let got = call(
            &h.site,
            Method::GET,
            &format!("/api/v1/notebooks/{name}"),
            Some(&h.key),
            None,
        )
        .await;
        let nb = got.json();
        if nb["status"] == "running"
            && nb["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Started again"))
        {
            break nb;
        }
        assert_ne!(nb["status"], "failed", "{nb}");
        assert!(Instant::now() < deadline, "it did not come back: {nb}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let said = back["message"].as_str().unwrap();
    assert!(
        said.contains("the workspace and its files are as they were"),
        "{said}"
    );
    assert!(
        said.contains("what they held in memory (variables, imports) is gone"),
        "{said}"
    );
    if h.kube.is_none() {
        assert!(said.contains("JupyterLab exited with signal 9"), "{said}");
    }

    // The file is there; the kernel's variable is not.
    let file = h.lab_get(name, "api/contents/kept.txt").await;
    assert_eq!(file.status(), StatusCode::OK);
    let file: Value = serde_json::from_str(&file.text().await.unwrap()).unwrap();
    assert_eq!(file["content"], "kept");
    let kernel = start_kernel(&h.url, &lab, &h.cookie).await;
    let printed = run_cell(
        &h.url,
        &lab,
        &kernel,
        &h.cookie,
        "print('HAS', 'remembered' in globals())\n",
    )
    .await;
    assert_eq!(printed_value(&printed, "HAS"), "False");
    h.delete(name).await;
}

async fn a_server_that_cannot_start_fails_with_its_own_words(backend: Backend) {
    let Some(h) = harness(backend, true).await else {
        return;
    };
    let made = h
        .post(
            "/api/v1/notebooks",
            Some(json!({"name": "broken", "resources": {"cpu": "500m", "memory": "1Gi"}})),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let nb = wait_status(&h.site, &h.key, "broken", "failed").await;
    let why = nb["message"].as_str().unwrap();
    assert!(why.contains("No module named jupyterlab"), "{why}");
    if let Some(k) = &h.kube {
        assert_eq!(
            k.replicas("broken").await,
            Some(0),
            "a failed notebook's pods do not come back failing"
        );
    }
    h.delete("broken").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notebook_too_big_for_any_node_waits_and_says_why_on_a_real_node() {
    let Some(h) = harness(Backend::RealNode, false).await else {
        return;
    };
    // The node has a few CPUs, not a hundred.
    let made = h
        .post(
            "/api/v1/notebooks",
            Some(json!({"name": "huge", "resources": {"cpu": "100", "memory": "1Gi"}})),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let deadline = Instant::now() + Duration::from_secs(60);
    let nb = loop {
        let nb = call(
            &h.site,
            Method::GET,
            "/api/v1/notebooks/huge",
            Some(&h.key),
            None,
        )
        .await
        .json();
        if nb["message"]
            .as_str()
            .unwrap_or("")
            .contains("Insufficient cpu")
        {
            break nb;
        }
        assert!(Instant::now() < deadline, "never said why it waits: {nb}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(nb["status"], "pending", "{nb}");
    assert!(
        nb["message"]
            .as_str()
            .unwrap()
            .starts_with("Waiting for room: "),
        "{nb}"
    );
    let stopped = h.post("/api/v1/notebooks/huge/stop", None).await;
    assert_eq!(stopped.json()["status"], "stopped", "{}", stopped.body);
    assert_eq!(stopped.json()["message"], "Stopped by ann@example.com.");
    h.delete("huge").await;
}

#[test]
fn a_restarted_console_takes_over_a_running_notebook_and_its_kernels_on_a_real_node() {
    // The first console process: its runtime is torn down with the notebook
    // running, as a crash would; the second is built on the same database.
    let first = tokio::runtime::Runtime::new().unwrap();
    let Some((h, me, kernel, pod_uid)) = first.block_on(async {
        let h = harness_reaching(Backend::RealNode, false, Reach::PodIp, None).await?;
        running_notebook(&h.site, &h.key, "keep", json!({})).await;
        let lab = format!("/notebooks/{}/keep/", h.account);
        let kernel = start_kernel(&h.url, &lab, &h.cookie).await;
        run_cell(&h.url, &lab, &kernel, &h.cookie, "answer = 42\n").await;
        let k = h.kube.as_ref().unwrap();
        let pod = k.api::<Pod>().get("keep-0").await.unwrap();
        let me = h.site.owner(&h.account).await;
        Some((h, me, kernel, pod.metadata.uid.unwrap()))
    }) else {
        return;
    };
    first.shutdown_background();

    let second = tokio::runtime::Runtime::new().unwrap();
    second.block_on(async {
        // Clients belong to the runtime they were made on: new ones.
        let client = common::kubernetes::test_client().await.unwrap();
        let mut config = h.config.clone();
        if let ClusterChoice::Kube { access, .. } = &mut config.cluster {
            *access = KubeAccess::Client {
                client: client.clone(),
                name: "real-node".into(),
            };
        }
        let console = server::console::Console::build(config).await.unwrap();
        use app::ports::Notebooks;
        let who = app::ports::Principal::new(me.clone(), app::ports::Credential::Session(0));
        let deadline = Instant::now() + Duration::from_secs(60);
        let route = loop {
            if let Ok(route) = console.notebooks().route(&who, &h.account, "keep").await {
                break route;
            }
            assert!(Instant::now() < deadline, "never reachable again");
            tokio::time::sleep(Duration::from_millis(300)).await;
        };
        let nb = console.notebooks().get(&me.account, "keep").await.unwrap();
        assert_eq!(nb.status, NotebookStatus::Running, "{nb:?}");
        // The same pod, and the kernel with what it held.
        let pods: Api<Pod> = Api::namespaced(client, &h.kube.as_ref().unwrap().namespace);
        let pod = pods.get("keep-0").await.unwrap();
        assert_eq!(
            pod.metadata.uid.unwrap(),
            pod_uid,
            "the pod was not replaced"
        );
        let found = http()
            .get(format!(
                "{}/notebooks/{}/keep/api/kernels/{kernel}",
                route.upstream, h.account
            ))
            .header("authorization", format!("token {}", route.jupyter_token))
            .send()
            .await
            .unwrap();
        assert_eq!(found.status(), StatusCode::OK, "the kernel lives on");
        console.notebooks().delete(&me, "keep").await.unwrap();
    });
    drop(h);
}

/// The idle clock asks the server itself (through the same way in as the
/// proxy: on the real node, the API server): a kernel's recent activity keeps
/// a notebook the clock calls idle running; idle past its timeout with no
/// kernel, it is stopped, saying why.
async fn the_idle_clock_reads_the_servers_kernels_and_stops_a_notebook_idle_past_its_timeout(
    backend: Backend,
) {
    let Some(h) = harness(backend, false).await else {
        return;
    };
    let name = "dozy";
    running_notebook(&h.site, &h.key, name, json!({"idle_minutes": 5})).await;
    let lab = format!("/notebooks/{}/{name}/", h.account);
    let kernel = start_kernel(&h.url, &lab, &h.cookie).await;
    run_cell(&h.url, &lab, &kernel, &h.cookie, "x = 1\n").await;
    age(&h.site, name, 10).await;
    h.site.notebooks.cull_idle().await.unwrap();
    let nb = wait_status(&h.site, &h.key, name, "running").await;
    let ten_minutes_ago = server::time::now_ms() - 9 * 60_000;
    assert!(
        nb["last_activity"]
            .as_i64()
            .is_some_and(|t| t > ten_minutes_ago),
        "the kernel's activity was read from the server: {nb}"
    );
    assert!(nb["probe_error"].as_str().unwrap_or("").is_empty(), "{nb}");

    // No kernel, idle past the timeout: stopped, with why.
    let shut = http()
        .delete(format!("{}{lab}api/kernels/{kernel}", h.url))
        .header("cookie", &h.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(shut.status(), StatusCode::NO_CONTENT);
    sqlx::query("UPDATE notebooks SET started_at = $1, last_activity = $1 WHERE name = $2")
        .bind(server::time::now_ms() - 10 * 60_000)
        .bind(name)
        .execute(&h.site.db.pool)
        .await
        .unwrap();
    h.site.notebooks.cull_idle().await.unwrap();
    let nb = wait_status(&h.site, &h.key, name, "stopped").await;
    let why = nb["message"].as_str().unwrap();
    assert!(
        why.starts_with("Stopped after 5 min without kernel or terminal activity"),
        "{why}"
    );
    h.delete(name).await;
}

/// A notebook in an environment: its server runs in the environment's
/// image, the init step installs the requirement the image lacks (from the
/// console's package index), and the kernel imports it and finds its
/// program on `PATH`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notebooks_kernel_imports_its_environments_requirements_and_runs_their_programs_on_a_real_node(
) {
    let Some(node) = common::node::real_node() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let index = common::node::WheelIndex::start(dir.path(), &node.ip);
    let Some(h) = harness_reaching(
        Backend::RealNode,
        false,
        Reach::ApiServer,
        Some(index.url.clone()),
    )
    .await
    else {
        return;
    };
    let environment = json!({
        "name": "demo", "requirements": ["pcdemo==1.0"], "image": NOTEBOOK_IMAGE,
    });
    let made = h.post("/api/v1/environments", Some(environment)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let name = "in-demo";
    running_notebook(&h.site, &h.key, name, json!({"environment": "demo"})).await;
    let lab = format!("/notebooks/{}/{name}/", h.account);
    let kernel = start_kernel(&h.url, &lab, &h.cookie).await;
    let printed = run_cell(
        &h.url,
        &lab,
        &kernel,
        &h.cookie,
        "import shutil, subprocess, pcdemo, paddlecloud\n\
         print('MODULE', pcdemo.__file__)\n\
         print('PROGRAM', shutil.which('pcdemo-hello'))\n\
         print('SAYS', subprocess.run(['pcdemo-hello'], capture_output=True, text=True).stdout.strip())\n",
    )
    .await;
    assert_eq!(
        printed_value(&printed, "MODULE"),
        "/opt/paddlecloud/env/pcdemo/__init__.py"
    );
    assert_eq!(
        printed_value(&printed, "PROGRAM"),
        "/opt/paddlecloud/env/bin/pcdemo-hello"
    );
    assert_eq!(printed_value(&printed, "SAYS"), "hello from pcdemo");
    h.delete(name).await;
}
