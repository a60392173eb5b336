//! The Kubernetes backend beyond the shared contract, on the real node of
//! `scripts/kube-test-cluster.sh` (tests named `on_a_real_node`: replicas in
//! containers): the objects a job becomes, the cascade when it is deleted,
//! logs that outlive their pods, a console restarted mid-job, GPUs a node
//! advertises, quota read from the namespace and set from the console, the
//! API's refusals as messages and the deployment manifests' RBAC; and an
//! unreachable cluster (no cluster needed). Skipped without the node.

use crate::common;

use std::time::{Duration, Instant};

use app::models::{Account, JobSpec, JobStatus, LogRequest, Me, ReplicaResources};
use app::ports::Cluster;
use k8s_openapi::api::batch::v1::Job as KubeJob;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, ResourceQuota, Service};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use server::kubernetes::KubeCluster;
use server::storage::jobs::JobStore;

struct Setup {
    client: Client,
    cluster: KubeCluster,
    me: Me,
    db: common::TestDb,
    /// The image jobs run: the real node's busybox.
    image: String,
}

impl Setup {
    /// A job running `script` in `sh -c` in every replica, small enough for
    /// the node's two cores.
    fn spec(&self, name: &str, ps: u32, trainers: u32, script: &str) -> JobSpec {
        spec_in(&self.image, name, ps, trainers, script)
    }
}

/// The real node: pods run in containers of its busybox image.
async fn on_the_node() -> Option<Setup> {
    let (node, client) = common::node::client().await?;
    let image = node.shell_image;
    let db = common::sqlite().await;
    let cluster = common::kubernetes::kube_cluster(&client, &db, None);
    let ns = format!("pc-k-{:08x}", getrandom::u32().unwrap());
    let me = me_in(&db, &ns).await;
    Some(Setup {
        client,
        cluster,
        me,
        db,
        image,
    })
}

async fn me_in(db: &common::TestDb, namespace: &str) -> Me {
    let account = common::account(&db.pool, namespace, namespace).await;
    common::user_in(&db.pool, &account).await
}

fn spec_in(image: &str, name: &str, ps: u32, trainers: u32, script: &str) -> JobSpec {
    let small = ReplicaResources {
        cpu: "100m".into(),
        memory: "64Mi".into(),
        gpu: 0,
    };
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
        command: vec!["sh".into(), "-c".into(), script.into()],
        args: vec![],
        working_dir: String::new(),
        env: vec![],
        num_ps: ps,
        num_trainers: trainers,
        ps: small.clone(),
        trainer: small,
        datasets: vec![],
        models: vec![],
    }
}

async fn wait_status(cluster: &dyn Cluster, account: &Account, name: &str, want: JobStatus) {
    let start = Instant::now();
    loop {
        let job = cluster.job(account, name).await.unwrap();
        if job.status == want {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{name} is {:?}: {}",
            job.status,
            job.message
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn until<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    until_some(what, || {
        let done = f();
        async move { done.await.then_some(()) }
    })
    .await
}

/// What `f` gives once it gives something (30 s at most).
async fn until_some<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(got) = f().await {
            return got;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_becomes_a_parent_its_service_and_one_job_per_replica_and_deleting_it_cascades_on_a_real_node(
) {
    let Some(s) = on_the_node().await else { return };
    let ns = s.me.account.namespace.clone();
    s.cluster
        .submit(&s.me, s.spec("mnist", 1, 2, "sleep 30"))
        .await
        .unwrap();

    let namespace = Api::<Namespace>::all(s.client.clone())
        .get(&ns)
        .await
        .unwrap();
    let labels = namespace.metadata.labels.unwrap();
    assert_eq!(labels["app.kubernetes.io/managed-by"], "paddlecloud");

    let parent = Api::<ConfigMap>::namespaced(s.client.clone(), &ns)
        .get("mnist")
        .await
        .unwrap();
    let uid = parent.metadata.uid.clone().unwrap();
    let service = Api::<Service>::namespaced(s.client.clone(), &ns)
        .get("mnist")
        .await
        .unwrap();
    assert_eq!(
        service.spec.unwrap().cluster_ip.as_deref(),
        Some("None"),
        "headless"
    );
    let jobs = Api::<KubeJob>::namespaced(s.client.clone(), &ns)
        .list(&ListParams::default())
        .await
        .unwrap();
    let mut names: Vec<String> = jobs
        .items
        .iter()
        .map(|j| j.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["mnist-ps-0", "mnist-trainer-0", "mnist-trainer-1"]);
    for job in &jobs.items {
        let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("ConfigMap", uid.as_str())
        );
        assert_eq!(job.spec.as_ref().unwrap().backoff_limit, Some(0));
    }
    wait_status(&s.cluster, &s.me.account, "mnist", JobStatus::Running).await;
    let running = s.cluster.job(&s.me.account, "mnist").await.unwrap();
    assert_eq!((running.ps.ready, running.trainers.ready), (1, 2));
    let pods = Api::<Pod>::namespaced(s.client.clone(), &ns)
        .list(&ListParams::default())
        .await
        .unwrap();
    let trainer = pods
        .items
        .iter()
        .find(|p| p.metadata.labels.as_ref().unwrap()["paddlecloud.org/replica"] == "trainer-1")
        .unwrap();
    let spec = trainer.spec.as_ref().unwrap();
    assert_eq!(
        (spec.hostname.as_deref(), spec.subdomain.as_deref()),
        (Some("trainer-1"), Some("mnist"))
    );
    let limits = spec.containers[0]
        .resources
        .as_ref()
        .unwrap()
        .limits
        .as_ref()
        .unwrap();
    let memory = &limits["memory"].0;
    assert_eq!(limits["cpu"].0, "100m");
    assert_eq!(
        app::models::quantity::parse_memory_bytes("memory", memory).unwrap(),
        64 << 20,
        "{memory}"
    );

    s.cluster.delete(&s.me.account, "mnist").await.unwrap();
    let cms = Api::<ConfigMap>::namespaced(s.client.clone(), &ns);
    assert!(cms.get_opt("mnist").await.unwrap().is_none());
    let jobs = Api::<KubeJob>::namespaced(s.client.clone(), &ns);
    until("the replicas' Jobs to go", || {
        let jobs = jobs.clone();
        async move {
            jobs.list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty()
        }
    })
    .await;
    assert_eq!(
        s.cluster
            .job(&s.me.account, "mnist")
            .await
            .unwrap_err()
            .status(),
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_pods_log_is_served_after_the_pod_is_gone_on_a_real_node() {
    let Some(s) = on_the_node().await else { return };
    let ns = s.me.account.namespace.clone();
    s.cluster
        .submit(&s.me, s.spec("short", 0, 1, "echo first; echo second"))
        .await
        .unwrap();
    wait_status(&s.cluster, &s.me.account, "short", JobStatus::Succeeded).await;
    Api::<KubeJob>::namespaced(s.client.clone(), &ns)
        .delete_collection(&DeleteParams::background(), &ListParams::default())
        .await
        .unwrap();
    let pods = Api::<Pod>::namespaced(s.client.clone(), &ns);
    pods.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();
    until("the pod to go", || {
        let pods = pods.clone();
        async move {
            pods.list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty()
        }
    })
    .await;
    let request = LogRequest {
        tail: None,
        follow: false,
        timestamps: false,
    };
    let log = common::log_text(&s.cluster, &s.me.account, "short", "trainer-0", request).await;
    assert_eq!(log, "first\nsecond\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_console_picks_up_a_running_job_from_the_cluster_on_a_real_node() {
    let Some(s) = on_the_node().await else { return };
    s.cluster
        .submit(&s.me, s.spec("resumed", 0, 1, "sleep 2; echo done"))
        .await
        .unwrap();
    wait_status(&s.cluster, &s.me.account, "resumed", JobStatus::Running).await;
    drop(s.cluster);
    // A new console process on the same database: it learns from the watch.
    let again = common::kubernetes::kube_cluster(&s.client, &s.db, None);
    wait_status(&again, &s.me.account, "resumed", JobStatus::Succeeded).await;
    let job = again.job(&s.me.account, "resumed").await.unwrap();
    assert_eq!(job.trainers.succeeded, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_namespaces_quota_is_read_and_its_refusal_is_shown_with_the_servers_words_on_a_real_node(
) {
    let Some(s) = on_the_node().await else { return };
    let ns = s.me.account.namespace.clone();
    // The namespace exists once the account submits.
    s.cluster
        .submit(&s.me, s.spec("first", 0, 1, "sleep 30"))
        .await
        .unwrap();
    let quota: ResourceQuota = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": { "name": "paddlecloud" },
        "spec": { "hard": { "count/jobs.batch": "2", "requests.cpu": "10" } },
    }))
    .unwrap();
    Api::<ResourceQuota>::namespaced(s.client.clone(), &ns)
        .create(&PostParams::default(), &quota)
        .await
        .unwrap();
    until("the quota's usage", || {
        let cluster = s.cluster.clone();
        let account = s.me.account.clone();
        async move {
            let q = cluster.quota(&account).await.unwrap();
            q.iter()
                .any(|(r, hard, used)| r == "count/jobs.batch" && hard == "2" && used == "1")
        }
    })
    .await;
    // Two more replica Jobs do not fit: the API server's message reaches the user.
    let err = s
        .cluster
        .submit(&s.me, s.spec("second", 1, 1, "true"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 403, "{err}");
    assert!(err.to_string().contains("exceeded quota"), "{err}");
    // Nothing half-made stays.
    assert_eq!(
        s.cluster
            .job(&s.me.account, "second")
            .await
            .unwrap_err()
            .status(),
        404
    );
    let cms = Api::<ConfigMap>::namespaced(s.client.clone(), &ns);
    until("the refused job's parent to go", || {
        let cms = cms.clone();
        async move { cms.get_opt("second").await.unwrap().is_none() }
    })
    .await;
    s.cluster.stop(&s.me.account, "first").await.unwrap();
}

/// A client of an API server that is not there (a port nothing listens on).
fn nowhere() -> Client {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
    Client::try_from(config).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn pages_render_with_a_cluster_unreachable_banner_within_two_seconds() {
    let site = common::site::site_configured(|config, _| server::console::Config {
        cluster: common::kubernetes::kube_choice(&nowhere(), None),
        ..config
    })
    .await;
    let cookie = site.sign_up("away").await;
    // The probe's first answer (a refused connection) comes at once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let res = site.get("/jobs", Some(&cookie)).await;
    assert_eq!(res.status(), http::StatusCode::OK);
    let page = common::site::text(res).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(page.contains("data-testid=\"cluster-banner\""), "{page}");
    assert!(page.contains("Cluster unreachable"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_cluster_is_reported_within_two_seconds_and_refuses_submits_clearly() {
    let client = nowhere();
    let db = common::sqlite().await;
    let cluster = common::kubernetes::kube_cluster(&client, &db, None);
    let me = me_in(&db, "pc-away").await;
    let started = Instant::now();
    while cluster.health().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "no banner after 2 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        cluster.health().unwrap().contains("does not answer"),
        "{:?}",
        cluster.health()
    );
    let err = cluster
        .submit(
            &me,
            spec_in("paddlepaddle/paddle:3.3.1", "lost", 0, 1, "true"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.status(), 503);
    assert!(err.to_string().contains("unreachable"), "{err}");
    // What the console knows still shows.
    let page = cluster
        .list_jobs(&me.account, &Default::default())
        .await
        .unwrap();
    assert_eq!(page.total, 0);
}

/// Runs kubectl (1.20, on PATH inside `kube-test-cluster.sh run`) against the
/// test cluster, with `stdin`; returns (success, stdout + stderr).
fn kubectl(args: &[&str], stdin: &str) -> (bool, String) {
    use std::io::Write;
    let config = std::env::var("PADDLECLOUD_TEST_KUBECONFIG").unwrap();
    let mut child = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(config)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl on PATH (scripts/kube-test-cluster.sh run puts it there)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_deployment_manifests_apply_and_grant_the_console_what_it_does_and_no_more_on_a_real_node(
) {
    if common::node::real_node().is_none() {
        return;
    }
    let manifests = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/paddlecloud.yaml"
    ))
    .unwrap();
    // Namespace, account and RBAC for real (they start nothing); then the
    // whole file through the API server's validation without persisting.
    let rbac: Vec<&str> = manifests
        .split("\n---\n")
        .filter(|doc| {
            [
                "kind: Namespace",
                "kind: ServiceAccount",
                "kind: ClusterRole",
            ]
            .iter()
            .any(|k| doc.contains(k))
        })
        .collect();
    assert_eq!(rbac.len(), 4, "namespace, service account, role, binding");
    let (ok, out) = kubectl(&["apply", "-f", "-"], &rbac.join("\n---\n"));
    assert!(ok, "{out}");
    let (ok, out) = kubectl(&["apply", "--dry-run=server", "-f", "-"], &manifests);
    assert!(ok, "{out}");
    assert!(
        out.contains("deployment.apps/paddlecloud-console created (server dry run)"),
        "{out}"
    );

    let sa = "--as=system:serviceaccount:paddlecloud:paddlecloud";
    for (verb, what, ns) in [
        ("create", "namespaces", None),
        ("create", "priorityclasses.scheduling.k8s.io", None),
        ("watch", "pods", None),
        ("list", "nodes", None),
        ("get", "pods --subresource=log", Some("pc-anyone")),
        // `pods/exec` would read as the pod named "exec": subresources are flags.
        ("create", "pods --subresource=exec", Some("pc-anyone")),
        ("create", "jobs.batch", Some("pc-anyone")),
        ("deletecollection", "jobs.batch", Some("pc-anyone")),
        ("create", "configmaps", Some("pc-anyone")),
        ("create", "secrets", Some("pc-anyone")),
        ("create", "services", Some("pc-anyone")),
        ("list", "resourcequotas", Some("pc-anyone")),
        ("create", "deployments.apps", Some("pc-anyone")),
        ("patch", "deployments.apps", Some("pc-anyone")),
        (
            "create",
            "horizontalpodautoscalers.autoscaling",
            Some("pc-anyone"),
        ),
        ("patch", "secrets", Some("pc-anyone")),
        ("create", "services/proxy", Some("pc-anyone")),
        // Notebooks.
        ("create", "statefulsets.apps", Some("pc-anyone")),
        ("patch", "statefulsets.apps", Some("pc-anyone")),
        ("delete", "statefulsets.apps", Some("pc-anyone")),
        ("create", "persistentvolumeclaims", Some("pc-anyone")),
        ("delete", "persistentvolumeclaims", Some("pc-anyone")),
        ("patch", "configmaps", Some("pc-anyone")),
    ] {
        let mut args = vec!["auth", "can-i", verb];
        args.extend(what.split(' '));
        args.push(sa);
        match ns {
            Some(ns) => args.extend(["-n", ns]),
            None => args.push("--all-namespaces"),
        }
        let (_, out) = kubectl(&args, "");
        assert_eq!(out.lines().next(), Some("yes"), "{verb} {what}: {out}");
    }
    // kubectl's can-i needs the group in discovery, which metrics-server
    // adds; the API server's own review does not.
    let review = "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n  \
         user: system:serviceaccount:paddlecloud:paddlecloud\n  groups: [system:serviceaccounts]\n  \
         resourceAttributes: {group: metrics.k8s.io, resource: pods, verb: list, namespace: pc-anyone}\n";
    let (ok, out) = kubectl(
        &["create", "-f", "-", "-o", "jsonpath={.status.allowed}"],
        review,
    );
    assert!(
        ok && out.starts_with("true"),
        "list pods.metrics.k8s.io: {out}"
    );
    for (verb, what) in [
        ("delete", "nodes"),
        ("create", "clusterrolebindings"),
        ("delete", "namespaces"),
        ("create", "pods/exec"),
        ("create", "apiservices.apiregistration.k8s.io"),
    ] {
        let (_, out) = kubectl(&["auth", "can-i", verb, what, sa, "--all-namespaces"], "");
        assert_eq!(
            out.lines().next(),
            Some("no"),
            "{verb} {what} must not be granted: {out}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_that_ran_locally_is_still_stopped_and_read_where_it_ran_after_a_switch() {
    let db = common::sqlite().await;
    let local = std::sync::Arc::new(common::local_cluster(&db).await);
    let me = me_in(&db, "pc-both").await;
    let local_spec = spec_in(
        "paddlepaddle/paddle:2.6.1",
        "earlier",
        0,
        1,
        "echo from here; sleep 30",
    );
    local.submit(&me, local_spec).await.unwrap();
    // The console now runs on a cluster (here one that is away).
    let both = server::clusters::Clusters::new(
        std::sync::Arc::new(common::kubernetes::kube_cluster(&nowhere(), &db, None)),
        vec![local.clone()],
        JobStore::new(db.pool.clone()),
    );
    let mut events = both.subscribe();
    wait_status(&both, &me.account, "earlier", JobStatus::Running).await;
    let stopped = both.stop(&me.account, "earlier").await.unwrap();
    assert_eq!(
        (stopped.status, stopped.cluster.as_str()),
        (JobStatus::Stopped, "local")
    );
    let request = LogRequest {
        tail: None,
        follow: false,
        timestamps: false,
    };
    let log = common::log_text(&both, &me.account, "earlier", "trainer-0", request).await;
    assert_eq!(log, "from here\n");
    // The local executor's events reach the router's listeners.
    let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(event.job, "earlier");
    // New jobs go to the default backend.
    assert_eq!(
        both.submit(
            &me,
            spec_in("paddlepaddle/paddle:2.6.1", "later", 0, 1, "true")
        )
        .await
        .unwrap_err()
        .status(),
        503
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_set_in_the_console_becomes_the_namespaces_resource_quota_and_its_use_is_read_back_on_a_real_node(
) {
    use app::models::{Quota, UsedFrom};
    use app::ports::Quotas;
    let Some(s) = on_the_node().await else { return };
    let quotas = server::quota::SqlQuotas::new(
        s.db.pool.clone(),
        Some(std::sync::Arc::new(s.cluster.clone())),
    );
    // Only a site admin sets quotas.
    sqlx::query("UPDATE users SET site_admin = 1 WHERE id = $1")
        .bind(s.me.user_id)
        .execute(&s.db.pool)
        .await
        .unwrap();
    let quota = Quota {
        cpu_millis: Some(3000),
        memory_bytes: Some(4 << 30),
        gpu: Some(2),
        max_jobs: Some(4),
    };
    quotas
        .set_quota(&s.me, &s.me.account.name, quota)
        .await
        .unwrap();
    let api = Api::<ResourceQuota>::namespaced(s.client.clone(), &s.me.account.namespace);
    let rq = api.get(server::kubernetes::QUOTA_NAME).await.unwrap();
    let hard = rq.spec.unwrap().hard.unwrap();
    assert_eq!(hard["requests.cpu"].0, "3");
    assert_eq!(hard["requests.memory"].0, "4Gi");
    assert_eq!(hard["requests.nvidia.com/gpu"].0, "2");
    assert!(
        !hard.contains_key("count/pods"),
        "the job count is the console's to enforce"
    );

    // One trainer (1 CPU, 1Gi, 1 GPU): the quota controller counts its pod
    // as soon as it exists (it waits: the node has no GPU).
    let mut counted = s.spec("counted", 0, 1, "sleep 30");
    counted.trainer = ReplicaResources {
        cpu: "1".into(),
        memory: "1Gi".into(),
        gpu: 1,
    };
    s.cluster.submit(&s.me, counted).await.unwrap();
    // The GPU is a limit of the trainer's container, as device plugins ask.
    let trainer = Api::<KubeJob>::namespaced(s.client.clone(), &s.me.account.namespace)
        .get("counted-trainer-0")
        .await
        .unwrap();
    let pod = trainer.spec.unwrap().template.spec.unwrap();
    let limits = pod.containers[0].resources.clone().unwrap().limits.unwrap();
    assert_eq!(limits["nvidia.com/gpu"].0, "1");
    until("the namespace's quota to count the pod", || {
        let quotas = &quotas;
        let account = s.me.account.clone();
        async move {
            let u = quotas.quota_use(&account).await.unwrap();
            u.from == UsedFrom::Kubernetes && u.used.cpu_millis == 1000 && u.used.gpu == 1
        }
    })
    .await;
    let u = quotas.quota_use(&s.me.account).await.unwrap();
    assert_eq!(u.used.memory_bytes, 1 << 30);
    assert_eq!(u.jobs, 1);

    // No limits at all: the ResourceQuota goes.
    quotas
        .set_quota(&s.me, &s.me.account.name, Quota::default())
        .await
        .unwrap();
    assert!(api
        .get_opt(server::kubernetes::QUOTA_NAME)
        .await
        .unwrap()
        .is_none());
    s.cluster.stop(&s.me.account, "counted").await.unwrap();
}

/// Advertises `gpus` stand-in `nvidia.com/gpu` on the node's status, as a
/// device plugin would (none: the resource goes). There is no GPU on this
/// machine and no device plugin: the scheduler and the kubelet's admission
/// count them, a container gets no device.
async fn advertise_gpus(client: &Client, node: &str, gpus: Option<u32>) {
    // A merge patch: `null` removes the key.
    let amount = gpus.map(|n| n.to_string());
    let patch = serde_json::json!({ "status": {
        "capacity": { "nvidia.com/gpu": amount },
        "allocatable": { "nvidia.com/gpu": amount },
    }});
    Api::<Node>::all(client.clone())
        .patch_status(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// The console's reading of the cluster's room, once it says `want` (it
/// is kept 5 s).
async fn room_until(
    cluster: &KubeCluster,
    what: &str,
    want: impl Fn(&app::models::ClusterCapacity) -> bool,
) -> app::models::ClusterCapacity {
    until_some(what, || async {
        let c = cluster.capacity().await.unwrap();
        want(&c).then_some(c)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gpu_trainer_runs_where_the_node_advertises_one_waits_where_none_is_free_and_the_room_counts_it_on_a_real_node(
) {
    use app::models::ResourceTotals;
    let Some(node) = common::node::real_node() else {
        return;
    };
    let Some(s) = on_the_node().await else { return };
    // Nothing of earlier tests holds the node: what is used is this test's.
    common::node::wait_until_free(&s.client, "the room").await;
    let (cpu, memory) = common::node::allocatable(&s.client, &node.name).await;
    advertise_gpus(&s.client, &node.name, Some(1)).await;
    // The room is the node's allocatable, the GPU included, and nothing used.
    let room = room_until(&s.cluster, "the advertised GPU", |c| {
        c.total.is_some_and(|t| t.gpu == 1)
    })
    .await;
    assert_eq!(
        (room.total, room.used),
        (
            Some(ResourceTotals {
                cpu_millis: cpu,
                memory_bytes: memory,
                gpu: 1
            }),
            Some(ResourceTotals::default())
        ),
        "{}",
        room.source
    );
    assert!(room.source.contains("1 node it may use"), "{}", room.source);

    let mut gpu = s.spec("gpu", 0, 1, "echo trained; sleep 30");
    gpu.trainer.gpu = 1;
    s.cluster.submit(&s.me, gpu.clone()).await.unwrap();
    wait_status(&s.cluster, &s.me.account, "gpu", JobStatus::Running).await;
    // Its request is what the room says is used.
    room_until(&s.cluster, "the trainer's request", |c| {
        c.used
            == Some(ResourceTotals {
                cpu_millis: 100,
                memory_bytes: 64 << 20,
                gpu: 1,
            })
    })
    .await;
    // The node's one GPU is held: a second job waits, saying why.
    gpu.name = "waits".into();
    s.cluster.submit(&s.me, gpu).await.unwrap();
    let job = until_some("the scheduler's reason", || async {
        let job = s.cluster.job(&s.me.account, "waits").await.unwrap();
        job.message.contains("nvidia.com/gpu").then_some(job)
    })
    .await;
    assert_eq!(job.status, JobStatus::Pending, "{}", job.message);
    assert!(job.message.contains("Insufficient"), "{}", job.message);
    // Freed, it runs.
    s.cluster.stop(&s.me.account, "gpu").await.unwrap();
    wait_status(&s.cluster, &s.me.account, "waits", JobStatus::Running).await;
    s.cluster.stop(&s.me.account, "waits").await.unwrap();
    advertise_gpus(&s.client, &node.name, None).await;
}

/// Priority on the cluster (issue 44 item 5): a high-priority job's pods run
/// in the class the console made, with its value, so the scheduler takes
/// them before lower ones'; a job the node cannot hold is in the queue with
/// the scheduler's reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_priority_is_its_pods_priority_class_and_the_queue_lists_what_cannot_be_placed_on_a_real_node(
) {
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    let Some(s) = on_the_node().await else { return };
    let mut urgent = s.spec("urgent", 0, 1, "echo hi; sleep 30");
    urgent.priority = app::models::Priority::High;
    s.cluster.submit(&s.me, urgent).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(s.client.clone(), &s.me.account.namespace);
    let pod = until_some("the urgent job's pod", || async {
        pods.list(&ListParams::default().labels("paddlecloud.org/job=urgent"))
            .await
            .ok()
            .and_then(|l| l.items.into_iter().next())
    })
    .await;
    let spec = pod.spec.unwrap();
    assert_eq!(
        spec.priority_class_name.as_deref(),
        Some("paddlecloud-high")
    );
    assert_eq!(spec.priority, Some(10_000));
    let classes: Api<PriorityClass> = Api::all(s.client.clone());
    let low = classes.get("paddlecloud-low").await.unwrap();
    assert_eq!(
        (low.value, low.preemption_policy.as_deref()),
        (100, Some("Never"))
    );

    // Far more memory than the node has: it waits, and the queue says why.
    let mut huge = s.spec("huge", 0, 1, "true");
    huge.trainer.memory = "900Gi".into();
    s.cluster.submit(&s.me, huge).await.unwrap();
    let queue = until_some("the scheduler's reason", || async {
        let q = s.cluster.queue(&s.me.account).await.ok()?;
        let w = q
            .waiting
            .iter()
            .find(|w| w.work.name.as_deref() == Some("huge"))?;
        w.reason.contains("Insufficient memory").then(|| q.clone())
    })
    .await;
    assert!(!queue.ordered_here);
    assert_eq!(queue.waiting[0].work.account, s.me.account.name);
    for name in ["urgent", "huge"] {
        s.cluster.delete(&s.me.account, name).await.unwrap();
    }
}
