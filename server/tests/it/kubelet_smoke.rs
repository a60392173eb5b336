//! The test kubelet (`common::kubelet`) against a real control plane: pods
//! really run as local processes, their status follows them, their logs come
//! back through the apiserver's `pods/log`, and deletions, Jobs and garbage
//! collection end them as on a real cluster; claims of the default
//! StorageClass, ConfigMaps and Secrets are mounted in their containers.
//! Skipped without `PADDLECLOUD_TEST_KUBECONFIG` (`scripts/kube-test-cluster.sh run ...`).

use crate::common;

use std::time::{Duration, Instant};

use crate::common::kubelet::{test_client, TestKubelet};
use futures_util::{AsyncBufReadExt as _, StreamExt as _};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, ContainerStateTerminated, Namespace, PersistentVolume, PersistentVolumeClaim, Pod,
    Secret,
};
use kube::api::{Api, DeleteParams, LogParams, PostParams, PropagationPolicy};
use kube::runtime::watcher::{self, Event};
use kube::Client;
use serde_json::json;

/// A cluster, a kubelet and a fresh namespace for one test.
struct Env {
    client: Client,
    ns: String,
    pods: Api<Pod>,
    kubelet: TestKubelet,
    _work: tempfile::TempDir,
}

async fn env(test: &str) -> Option<Env> {
    let client = test_client().await?;
    let work = tempfile::tempdir().unwrap();
    let kubelet = TestKubelet::start(client.clone(), work.path()).await;
    let ns = format!(
        "{test}-{}-{}",
        std::process::id(),
        server::time::now_ms() % 100_000
    );
    let namespace: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": ns } })).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    Some(Env {
        pods: Api::namespaced(client.clone(), &ns),
        client,
        ns,
        kubelet,
        _work: work,
    })
}

impl Env {
    /// Creates a pod of one container running `command`.
    async fn pod(&self, name: &str, command: &[&str]) -> Pod {
        self.create(json!({
            "metadata": { "name": name },
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 2,
                "containers": [{ "name": "main", "image": "busybox", "command": command }],
            },
        }))
        .await
    }

    async fn create(&self, pod: serde_json::Value) -> Pod {
        let pod: Pod = serde_json::from_value(pod).unwrap();
        self.pods
            .create(&PostParams::default(), &pod)
            .await
            .unwrap()
    }

    /// Waits (up to `secs`) until pod `name` satisfies `ok`, and returns it.
    async fn wait(&self, name: &str, secs: u64, what: &str, ok: impl Fn(&Pod) -> bool) -> Pod {
        let start = Instant::now();
        loop {
            if let Some(pod) = self.pods.get_opt(name).await.unwrap() {
                if ok(&pod) {
                    return pod;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(secs),
                    "{name} not {what} after {secs} s: {:?}",
                    pod.status
                );
            } else {
                assert!(
                    start.elapsed() < Duration::from_secs(secs),
                    "{name} never appeared"
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn phase(&self, name: &str, phase: &str, secs: u64) -> Pod {
        self.wait(name, secs, phase, |p| phase_of(p) == phase).await
    }

    /// Waits (up to `secs`) until pod `name` is gone.
    async fn gone(&self, name: &str, secs: u64) {
        let start = Instant::now();
        while self.pods.get_opt(name).await.unwrap().is_some() {
            assert!(
                start.elapsed() < Duration::from_secs(secs),
                "{name} still there after {secs} s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn log(&self, name: &str, params: LogParams) -> String {
        self.pods.logs(name, &params).await.unwrap()
    }

    /// Deletes the namespace (what is left in it goes with it) and stops the kubelet.
    async fn done(self) {
        let _ = Api::<Namespace>::all(self.client.clone())
            .delete(&self.ns, &DeleteParams::default())
            .await;
        self.kubelet.stop().await;
    }
}

fn phase_of(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// The first container's terminated state.
fn terminated(pod: &Pod) -> Option<ContainerStateTerminated> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .terminated
        .clone()
}

/// The pid in a container's `testkubelet://PID` id.
fn pid_of(pod: &Pod) -> i32 {
    let status = &pod
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0];
    status
        .container_id
        .as_deref()
        .unwrap()
        .trim_start_matches("testkubelet://")
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_pod_ends_failed_with_its_exit_code_and_both_output_streams_in_its_log() {
    let Some(env) = env("failing").await else {
        return;
    };
    env.pod("fail", &["sh", "-c", "echo hi; echo oops >&2; exit 3"])
        .await;
    let pod = env.phase("fail", "Failed", 30).await;
    let t = terminated(&pod).unwrap();
    assert_eq!(t.exit_code, 3, "{t:?}");
    assert_eq!(t.reason.as_deref(), Some("Error"));
    assert!(t.message.as_deref().unwrap_or("").contains("oops"), "{t:?}");
    assert!(t.started_at.is_some() && t.finished_at.is_some());
    let status = pod.status.unwrap();
    assert_eq!(status.pod_ip.as_deref(), Some("127.0.0.1"));
    assert_eq!(status.host_ip.as_deref(), Some("127.0.0.1"));
    let cs = &status.container_statuses.unwrap()[0];
    assert!(!cs.ready);
    assert_eq!(cs.restart_count, 0);
    let log = env.log("fail", LogParams::default()).await;
    let mut lines: Vec<&str> = log.lines().collect();
    lines.sort();
    assert_eq!(lines, ["hi", "oops"], "{log:?}");
    env.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tail_lines_timestamps_and_limit_bytes_work_through_the_apiserver() {
    let Some(env) = env("logparams").await else {
        return;
    };
    env.pod(
        "lines",
        &["sh", "-c", "for i in 1 2 3; do echo line $i; done"],
    )
    .await;
    env.phase("lines", "Succeeded", 30).await;
    let all = env.log("lines", LogParams::default()).await;
    assert_eq!(all, "line 1\nline 2\nline 3\n");
    let tail = LogParams {
        tail_lines: Some(1),
        ..LogParams::default()
    };
    assert_eq!(env.log("lines", tail).await, "line 3\n");
    let stamped = env
        .log(
            "lines",
            LogParams {
                timestamps: true,
                ..LogParams::default()
            },
        )
        .await;
    let stamp = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z line \d$").unwrap();
    assert_eq!(stamped.lines().count(), 3, "{stamped:?}");
    for line in stamped.lines() {
        assert!(stamp.is_match(line), "{line:?}");
    }
    let limited = LogParams {
        limit_bytes: Some(9),
        ..LogParams::default()
    };
    assert_eq!(env.log("lines", limited).await, "line 1\nli");
    let previous = LogParams {
        previous: true,
        ..LogParams::default()
    };
    assert!(env.pods.logs("lines", &previous).await.is_err());
    env.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_followed_log_delivers_lines_live_and_ends_when_the_pod_ends() {
    let Some(env) = env("follow").await else {
        return;
    };
    let script = "for i in $(seq 1 20); do echo tick $i; sleep 0.1; done";
    env.pod("ticker", &["sh", "-c", script]).await;
    env.phase("ticker", "Running", 30).await;
    let follow = LogParams {
        follow: true,
        ..LogParams::default()
    };
    let start = Instant::now();
    let mut lines = env
        .pods
        .log_stream("ticker", &follow)
        .await
        .unwrap()
        .lines();
    let mut got = Vec::new();
    let read = async {
        while let Some(line) = lines.next().await {
            got.push((start.elapsed(), line.unwrap()));
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("the stream did not end");
    let ended = start.elapsed();
    let texts: Vec<&str> = got.iter().map(|(_, l)| l.as_str()).collect();
    let expected: Vec<String> = (1..=20).map(|i| format!("tick {i}")).collect();
    assert_eq!(texts, expected);
    // Lines came as they were printed (2 s in all), not at once at the end.
    let (first, last) = (got[0].0, got[19].0);
    assert!(
        last - first > Duration::from_millis(1000),
        "first {first:?}, last {last:?}"
    );
    assert!(
        ended < last + Duration::from_secs(3),
        "ended {ended:?} after last line {last:?}"
    );
    env.phase("ticker", "Succeeded", 10).await;
    env.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn env_from_field_refs_secrets_config_maps_and_references_arrives() {
    let Some(env) = env("envs").await else { return };
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), &env.ns);
    let secret = serde_json::from_value(json!({
        "metadata": { "name": "token" }, "stringData": { "token": "s3cret" },
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.ns);
    let map = serde_json::from_value(json!({
        "metadata": { "name": "settings" }, "data": { "color": "blue", "size": "xl" },
    }))
    .unwrap();
    maps.create(&PostParams::default(), &map).await.unwrap();
    let field = |path: &str| json!({ "fieldRef": { "fieldPath": path } });
    let created = env
        .create(json!({
            "metadata": { "name": "envs", "labels": { "app": "smoke" } },
            "spec": {
                "restartPolicy": "Never",
                "hostname": "trainer-0",
                "containers": [{
                    "name": "main",
                    "image": "busybox",
                    "command": ["sh", "-c", "env | sort; echo args \"$@\"", "sh"],
                    "args": ["$(GREETING)", "$$(GREETING)", "$(MISSING)"],
                    "envFrom": [{ "configMapRef": { "name": "settings" }, "prefix": "CM_" }],
                    "env": [
                        { "name": "GREETING", "value": "hello" },
                        { "name": "GREETING_TWICE", "value": "$(GREETING) $(GREETING)" },
                        { "name": "POD_NAME", "valueFrom": field("metadata.name") },
                        { "name": "POD_NAMESPACE", "valueFrom": field("metadata.namespace") },
                        { "name": "POD_UID", "valueFrom": field("metadata.uid") },
                        { "name": "POD_IP", "valueFrom": field("status.podIP") },
                        { "name": "HOST_IP", "valueFrom": field("status.hostIP") },
                        { "name": "NODE_NAME", "valueFrom": field("spec.nodeName") },
                        { "name": "APP", "valueFrom": field("metadata.labels['app']") },
                        { "name": "TOKEN", "valueFrom": { "secretKeyRef": { "name": "token", "key": "token" } } },
                        { "name": "COLOR", "valueFrom": { "configMapKeyRef": { "name": "settings", "key": "color" } } },
                        { "name": "CPU", "valueFrom": { "resourceFieldRef": { "resource": "limits.cpu" } } },
                    ],
                }],
            },
        }))
        .await;
    env.phase("envs", "Succeeded", 30).await;
    let log = env.log("envs", LogParams::default()).await;
    let uid = created.metadata.uid.unwrap();
    for line in [
        "GREETING=hello".to_owned(),
        "GREETING_TWICE=hello hello".to_owned(),
        "POD_NAME=envs".to_owned(),
        format!("POD_NAMESPACE={}", env.ns),
        format!("POD_UID={uid}"),
        "POD_IP=127.0.0.1".to_owned(),
        "HOST_IP=127.0.0.1".to_owned(),
        format!("NODE_NAME={}", common::kubelet::NODE),
        "APP=smoke".to_owned(),
        "TOKEN=s3cret".to_owned(),
        "COLOR=blue".to_owned(),
        "CM_color=blue".to_owned(),
        "CM_size=xl".to_owned(),
        "HOSTNAME=trainer-0".to_owned(),
        format!("PATH={}", std::env::var("PATH").unwrap()),
        "args hello $(GREETING) $(MISSING)".to_owned(),
    ] {
        assert!(log.lines().any(|l| l == line), "no {line:?} in\n{log}");
    }
    assert!(!log.contains("CPU="), "{log}");
    env.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn init_containers_run_in_order_and_a_failing_one_fails_the_pod() {
    let Some(env) = env("init").await else { return };
    let pod = |name: &str, second_init: &str| {
        json!({
            "metadata": { "name": name },
            "spec": {
                "restartPolicy": "Never",
                "initContainers": [
                    { "name": "one", "image": "busybox", "command": ["sh", "-c", "echo one > order"] },
                    { "name": "two", "image": "busybox", "command": ["sh", "-c", second_init] },
                ],
                "containers": [
                    { "name": "main", "image": "busybox", "command": ["cat", "order"] },
                    { "name": "side", "image": "busybox", "command": ["sh", "-c", "echo side car"] },
                ],
            },
        })
    };
    env.create(pod("ok", "echo two >> order")).await;
    env.create(pod("bad", "echo broken; exit 7")).await;
    env.phase("ok", "Succeeded", 30).await;
    let main = LogParams {
        container: Some("main".into()),
        ..LogParams::default()
    };
    assert_eq!(env.log("ok", main).await, "one\ntwo\n");
    let side = LogParams {
        container: Some("side".into()),
        ..LogParams::default()
    };
    assert_eq!(env.log("ok", side).await, "side car\n");
    let bad = env.phase("bad", "Failed", 30).await;
    let status = bad.status.unwrap();
    assert_eq!(status.reason.as_deref(), Some("Init:Error"));
    let init = status.init_container_statuses.unwrap();
    let t = init[1].state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!((t.exit_code, t.reason.as_deref()), (7, Some("Error")));
    let waiting = status.container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .waiting
        .unwrap();
    assert_eq!(waiting.reason.as_deref(), Some("PodInitializing"));
    env.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_that_cannot_start_fails_the_pod_with_start_error() {
    let Some(env) = env("starterror").await else {
        return;
    };
    env.pod("missing", &["no-such-program-here", "x"]).await;
    env.create(json!({
        "metadata": { "name": "imageonly" },
        "spec": { "restartPolicy": "Never", "containers": [{ "name": "main", "image": "busybox" }] },
    }))
    .await;
    let pod = env.phase("missing", "Failed", 30).await;
    let t = terminated(&pod).unwrap();
    assert_eq!(
        (t.exit_code, t.reason.as_deref()),
        (128, Some("StartError"))
    );
    assert!(t.message.unwrap().contains("executable file not found"));
    let pod = env.phase("imageonly", "Failed", 30).await;
    let t = terminated(&pod).unwrap();
    assert_eq!(t.reason.as_deref(), Some("StartError"));
    assert!(t.message.unwrap().contains("no images"));
    env.done().await;
}

/// Deletes pod `name` and returns its last status before it vanished.
async fn delete_and_watch(env: &Env, name: &str) -> (Pod, Duration) {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = watcher::watcher(env.pods.clone(), config).boxed();
    // The watch is set up (it has listed the pod) before the delete.
    loop {
        if let Some(Ok(Event::InitDone)) = events.next().await {
            break;
        }
    }
    let start = Instant::now();
    env.pods
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    let mut last = None;
    let watching = async {
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::Apply(pod)) => last = Some(pod),
                Ok(Event::Delete(_)) => return,
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), watching)
        .await
        .expect("not deleted");
    (
        last.expect("no update before the pod vanished"),
        start.elapsed(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_running_pod_ends_its_process_group_and_the_pod_disappears() {
    let Some(env) = env("delete").await else {
        return;
    };
    // The leader dies of SIGTERM; its child ignores it, but goes with the container.
    let script = "(trap '' TERM; exec sleep 600) & echo child $!; exec sleep 600";
    env.pod("sleeper", &["sh", "-c", script]).await;
    // All ignore SIGTERM: SIGKILL after the grace period (2 s).
    let stubborn = "trap '' TERM; sleep 600 & echo child $!; while :; do sleep 0.1; done";
    env.pod("stubborn", &["sh", "-c", stubborn]).await;
    for name in ["sleeper", "stubborn"] {
        let pod = env.phase(name, "Running", 30).await;
        let leader = pid_of(&pod);
        let child = loop {
            let log = env.log(name, LogParams::default()).await;
            if let Some(pid) = log.lines().find_map(|l| l.strip_prefix("child ")) {
                break pid.trim().parse::<i32>().unwrap();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert!(common::alive(leader) && common::alive(child));
        let (last, took) = delete_and_watch(&env, name).await;
        let t = terminated(&last).unwrap();
        let (code, least, most) = if name == "sleeper" {
            // SIGTERM ended it: no waiting for the grace period (under load, some slack).
            (143, 0, 1900)
        } else {
            (137, 1900, 10_000)
        };
        assert_eq!(t.exit_code, code, "{name}: {t:?}");
        let took_ms = took.as_millis() as u64;
        assert!((least..most).contains(&took_ms), "{name} took {took:?}");
        assert_eq!(phase_of(&last), "Failed");
        assert!(!common::alive(leader), "{name}'s leader {leader} lives");
        assert!(!common::alive(child), "{name}'s child {child} lives");
        eprintln!("{name}: delete -> gone in {took:?}");
    }
    env.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_with_backoff_limit_0_gets_its_pod_run_and_reports_succeeded() {
    let Some(env) = env("job").await else { return };
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), &env.ns);
    let job: Job = serde_json::from_value(json!({
        "metadata": { "name": "train" },
        "spec": {
            "backoffLimit": 0,
            "template": { "spec": {
                "restartPolicy": "Never",
                "containers": [{ "name": "train", "image": "paddle", "command": ["sh", "-c", "echo trained"] }],
            }},
        },
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let start = Instant::now();
    loop {
        let job = jobs.get("train").await.unwrap();
        if job.status.as_ref().and_then(|s| s.succeeded) == Some(1) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{:?}",
            job.status
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("job created -> succeeded=1 in {:?}", start.elapsed());
    let pods = env
        .pods
        .list(&kube::api::ListParams::default().labels("job-name=train"))
        .await
        .unwrap();
    let pod = pods.items[0].metadata.name.clone().unwrap();
    assert_eq!(env.log(&pod, LogParams::default()).await, "trained\n");
    env.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pods_owned_by_a_config_map_are_garbage_collected_with_it() {
    let Some(env) = env("gc").await else { return };
    let maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.ns);
    let parent: ConfigMap =
        serde_json::from_value(json!({ "metadata": { "name": "parent" } })).unwrap();
    let parent = maps.create(&PostParams::default(), &parent).await.unwrap();
    let mut pids = Vec::new();
    for name in ["child-a", "child-b"] {
        env.create(json!({
            "metadata": {
                "name": name,
                "ownerReferences": [{
                    "apiVersion": "v1", "kind": "ConfigMap", "name": "parent",
                    "uid": parent.metadata.uid, "blockOwnerDeletion": true,
                }],
            },
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 5,
                "containers": [{ "name": "main", "image": "busybox", "command": ["sleep", "600"] }],
            },
        }))
        .await;
    }
    for name in ["child-a", "child-b"] {
        pids.push(pid_of(&env.phase(name, "Running", 30).await));
    }
    let start = Instant::now();
    let background = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    maps.delete("parent", &background).await.unwrap();
    env.gone("child-a", 30).await;
    env.gone("child-b", 30).await;
    eprintln!("owner deleted -> owned pods gone in {:?}", start.elapsed());
    for pid in pids {
        assert!(!common::alive(pid), "{pid} lives");
    }
    env.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn status_follows_the_process_promptly() {
    let Some(env) = env("timing").await else {
        return;
    };
    let created = Instant::now();
    env.pod("quick", &["sh", "-c", "sleep 1; date +%s%N"]).await;
    env.phase("quick", "Running", 30).await;
    let running = created.elapsed();
    let pod = env.phase("quick", "Succeeded", 30).await;
    let seen = std::time::SystemTime::now();
    let log = env.log("quick", LogParams::default()).await;
    let printed: u128 = log.trim().parse().unwrap();
    let since_epoch = seen
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let exit_to_status = Duration::from_nanos((since_epoch - printed) as u64);
    eprintln!("create -> Running {running:?}; exit -> Succeeded seen {exit_to_status:?}");
    assert!(running < Duration::from_secs(5), "{running:?}");
    assert!(
        exit_to_status < Duration::from_secs(3),
        "{exit_to_status:?}"
    );
    let t = terminated(&pod).unwrap();
    assert_eq!((t.exit_code, t.reason.as_deref()), (0, Some("Completed")));
    env.done().await;
}

/// A 1Gi claim `name` with no storage class (the cluster's default provisions it).
async fn claim(env: &Env, name: &str) -> Api<PersistentVolumeClaim> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), &env.ns);
    let pvc = serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": { "requests": { "storage": "1Gi" } },
        },
    }))
    .unwrap();
    claims.create(&PostParams::default(), &pvc).await.unwrap();
    claims
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_of_the_default_class_is_provisioned_and_mounted_and_outlives_its_pod() {
    let Some(env) = env("volumes").await else {
        return;
    };
    let start = Instant::now();
    // Mount points of this test's own: the kubelet makes them on the host.
    let root = format!("/mnt/pc-kubelet-test-{:08x}", getrandom::u32().unwrap());
    let (work, conf, secret) = (
        format!("{root}/work"),
        format!("{root}/conf"),
        format!("{root}/secret"),
    );
    let claims = claim(&env, "workspace").await;
    let maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.ns);
    let map = serde_json::from_value(json!({
        "metadata": { "name": "code" }, "data": { "greeting.py": "print('hello')\n" },
    }))
    .unwrap();
    maps.create(&PostParams::default(), &map).await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), &env.ns);
    let token = serde_json::from_value(json!({
        "metadata": { "name": "token" }, "stringData": { "token": "s3cret", "other": "unused" },
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &token)
        .await
        .unwrap();
    let volumes = json!([
        { "name": "work", "persistentVolumeClaim": { "claimName": "workspace" } },
        { "name": "code", "configMap": { "name": "code" } },
        { "name": "token", "secret": { "secretName": "token", "items": [{ "key": "token", "path": "nested/token" }] } },
        { "name": "scratch", "emptyDir": {} },
    ]);
    // In its working dir (the claim), with HOME there too: a relative write
    // lands in the claim, not in the host's folder under the mount.
    let script = "echo \"home $HOME\"; echo \"cwd $(pwd)\"; echo written by writer > note.txt; \
                  cat \"$CODE/greeting.py\" \"$SECRET/nested/token\"; echo; ls \"$SECRET\"; \
                  if (echo x > \"$CODE/new.py\") 2>/dev/null; then echo code writable; else echo code read-only; fi";
    env.create(json!({
        "metadata": { "name": "writer" },
        "spec": {
            "restartPolicy": "Never",
            "volumes": volumes,
            "containers": [{
                "name": "main", "image": "jupyter", "command": ["sh", "-c", script],
                "workingDir": work,
                "env": [
                    { "name": "HOME", "value": work },
                    { "name": "CODE", "value": conf },
                    { "name": "SECRET", "value": secret },
                ],
                "volumeMounts": [
                    { "name": "work", "mountPath": work },
                    { "name": "code", "mountPath": conf, "readOnly": true },
                    { "name": "token", "mountPath": secret },
                    { "name": "scratch", "mountPath": format!("{root}/scratch") },
                ],
            }],
        },
    }))
    .await;
    let pod = env.phase("writer", "Succeeded", 60).await;
    let first = start.elapsed();
    let log = env.log("writer", LogParams::default()).await;
    assert_eq!(
        log,
        format!(
            "home {work}\ncwd {work}\nprint('hello')\ns3cret\nnested\n\
             code read-only\n"
        ),
        "{:?}",
        pod.status
    );
    // The file is in the volume the claim is bound to...
    let pvc = claims.get("workspace").await.unwrap();
    let volume = pvc.spec.unwrap().volume_name.unwrap();
    let pv = Api::<PersistentVolume>::all(env.client.clone())
        .get(&volume)
        .await
        .unwrap();
    let host = pv.spec.unwrap().host_path.unwrap().path;
    assert!(host.starts_with("/tmp/hostpath_pv/"), "{host}");
    assert_eq!(
        std::fs::read_to_string(format!("{host}/note.txt")).unwrap(),
        "written by writer\n"
    );
    // ...and nowhere on the host's side of the mounts, which were the container's own.
    assert!(std::path::Path::new(&work).is_dir());
    assert!(!std::path::Path::new(&work).join("note.txt").exists());
    assert!(!std::path::Path::new(&conf).join("greeting.py").exists());
    // An emptyDir is not played: no mount, no mount point.
    assert!(!std::path::Path::new(&root).join("scratch").exists());

    // A second pod mounting the claim finds the file.
    env.create(json!({
        "metadata": { "name": "reader" },
        "spec": {
            "restartPolicy": "Never",
            "volumes": [{ "name": "work", "persistentVolumeClaim": { "claimName": "workspace", "readOnly": true } }],
            "containers": [{
                "name": "main", "image": "jupyter", "command": ["cat", format!("{work}/note.txt")],
                "volumeMounts": [{ "name": "work", "mountPath": work }],
            }],
        },
    }))
    .await;
    env.phase("reader", "Succeeded", 30).await;
    assert_eq!(
        env.log("reader", LogParams::default()).await,
        "written by writer\n"
    );
    let both = start.elapsed();

    // Gone with its claim (reclaimPolicy Delete), once no pod uses it.
    for name in ["writer", "reader"] {
        env.pods
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    for name in ["writer", "reader"] {
        env.gone(name, 30).await;
    }
    claims
        .delete("workspace", &DeleteParams::default())
        .await
        .unwrap();
    let deleted = Instant::now();
    while std::path::Path::new(&host).exists() {
        assert!(
            deleted.elapsed() < Duration::from_secs(30),
            "{host} still there 30 s after its claim was deleted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "claim + pod -> Succeeded in {first:?}; second pod done at {both:?}; \
         claim deleted -> its dir gone in {:?}",
        deleted.elapsed()
    );
    std::fs::remove_dir_all(&root).unwrap();
    env.done().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_bound_to_a_volume_that_is_not_host_path_fails_its_container_to_start() {
    let Some(env) = env("nfsclaim").await else {
        return;
    };
    // Bound by hand: a static NFS volume, reserved for the claim.
    let pv_name = format!("{}-nfs", env.ns);
    let volumes: Api<PersistentVolume> = Api::all(env.client.clone());
    let pv = serde_json::from_value(json!({
        "metadata": { "name": pv_name },
        "spec": {
            "capacity": { "storage": "1Gi" },
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": { "namespace": env.ns, "name": "shared" },
            "nfs": { "server": "127.0.0.1", "path": "/exports" },
        },
    }))
    .unwrap();
    volumes.create(&PostParams::default(), &pv).await.unwrap();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), &env.ns);
    let pvc = serde_json::from_value(json!({
        "metadata": { "name": "shared" },
        "spec": {
            "storageClassName": "",
            "volumeName": pv_name,
            "accessModes": ["ReadWriteOnce"],
            "resources": { "requests": { "storage": "1Gi" } },
        },
    }))
    .unwrap();
    claims.create(&PostParams::default(), &pvc).await.unwrap();
    env.create(json!({
        "metadata": { "name": "nfs" },
        "spec": {
            "restartPolicy": "Never",
            "volumes": [{ "name": "data", "persistentVolumeClaim": { "claimName": "shared" } }],
            "containers": [{
                "name": "main", "image": "busybox", "command": ["echo", "ran"],
                "volumeMounts": [{ "name": "data", "mountPath": "/mnt/pc-kubelet-test-nfs" }],
            }],
        },
    }))
    .await;
    let pod = env.phase("nfs", "Failed", 30).await;
    let t = terminated(&pod).unwrap();
    assert_eq!(t.reason.as_deref(), Some("StartError"), "{t:?}");
    let message = t.message.unwrap();
    assert!(
        message.contains("mounts only hostPath PersistentVolumes") && message.contains("nfs"),
        "{message}"
    );
    assert!(!std::path::Path::new("/mnt/pc-kubelet-test-nfs").exists());
    env.done().await;
    let _ = volumes.delete(&pv_name, &DeleteParams::default()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_path_mounts_one_file_and_a_mount_that_cannot_be_made_fails_the_container_naming_it()
{
    let Some(env) = env("mountedge").await else {
        return;
    };
    let root = format!("/mnt/pc-kubelet-test-{:08x}", getrandom::u32().unwrap());
    let maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.ns);
    let map = serde_json::from_value(json!({
        "metadata": { "name": "code" }, "data": { "greeting.py": "print('hello')\n" },
    }))
    .unwrap();
    maps.create(&PostParams::default(), &map).await.unwrap();
    let pod = |name: &str, mounts: serde_json::Value, command: &[&str]| {
        json!({
            "metadata": { "name": name },
            "spec": {
                "restartPolicy": "Never",
                "volumes": [
                    { "name": "code", "configMap": { "name": "code" } },
                    { "name": "host", "hostPath": { "path": format!("{root}/host"), "type": "DirectoryOrCreate" } },
                ],
                "containers": [{
                    "name": "main", "image": "busybox", "command": command,
                    "env": [{ "name": "FILE", "value": "greeting.py" }],
                    "volumeMounts": mounts,
                }],
            },
        })
    };
    // One key of the ConfigMap as a file, by subPathExpr.
    let file = format!("{root}/single/greeting.py");
    env.create(pod(
        "single",
        json!([{ "name": "code", "mountPath": file, "subPathExpr": "$(FILE)" }]),
        &["cat", &file],
    ))
    .await;
    // A mount point inside a read-only mount cannot be made.
    let (conf, inner) = (format!("{root}/conf"), format!("{root}/conf/inner"));
    env.create(pod(
        "nested",
        json!([
            { "name": "code", "mountPath": conf },
            { "name": "host", "mountPath": inner },
        ]),
        &["echo", "ran"],
    ))
    .await;
    env.phase("single", "Succeeded", 30).await;
    assert_eq!(
        env.log("single", LogParams::default()).await,
        "print('hello')\n"
    );
    // On the host, the mount point only: an empty file.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "");
    let pod = env.phase("nested", "Failed", 30).await;
    let t = terminated(&pod).unwrap();
    assert_eq!(
        (t.exit_code, t.reason.as_deref()),
        (128, Some("StartError"))
    );
    let message = t.message.unwrap();
    assert!(
        message.contains(&format!(
            "creating the mount point of volume \"host\" (hostPath \"{root}/host\") at {inner}"
        )) && message.contains("Read-only file system"),
        "{message}"
    );
    std::fs::remove_dir_all(&root).unwrap();
    env.done().await;
}
