//! The console on a real node (`scripts/kube-node.sh`): the shipped
//! fit-a-line template trains with two data-parallel trainers over gloo, in
//! containers of the PaddlePaddle CPU image built there, reaching each other
//! by cluster DNS and the console (its SDK) over the pod network.

use crate::common;

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams};
use serde_json::{json, Value};

use common::rest::call;
use common::site::Site;

/// The console served on the node's address, where pods reach it; its URL.
async fn console_on(node: &common::node::RealNode, client: &kube::Client) -> (Site, String) {
    common::site::on_socket_at(&node.ip, |config, _, _| server::console::Config {
        cluster: common::kubelet::kube_choice(client, None),
        ..config
    })
    .await
}

async fn job(site: &Site, key: &str, name: &str) -> Value {
    let got = call(
        site,
        Method::GET,
        &format!("/api/v1/jobs/{name}"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    got.json()
}

async fn log(site: &Site, key: &str, name: &str, pod: &str) -> String {
    let path = format!("/api/v1/jobs/{name}/pods/{pod}/log");
    let got = call(site, Method::GET, &path, Some(key), None).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    got.body
}

/// Polls until the job has `status`, failing at once (with both trainers'
/// logs) if it ends otherwise.
async fn wait_for(site: &Site, key: &str, name: &str, status: &str, limit: Duration) -> Value {
    let start = Instant::now();
    let mut said = String::new();
    loop {
        let j = job(site, key, name).await;
        if j["status"] == status {
            return j;
        }
        // What it waits for, each time that changes (a slow start says why).
        let now = format!("{} {}", j["status"], j["message"]);
        if now != said && j["message"].as_str().is_some_and(|m| !m.is_empty()) {
            eprintln!("{name} at {:?}: {now}", start.elapsed());
        }
        said = now;
        let ended =
            ["succeeded", "failed", "stopped"].contains(&j["status"].as_str().unwrap_or(""));
        if ended || start.elapsed() > limit {
            let mut logs = String::new();
            for pod in ["trainer-0", "trainer-1"] {
                logs += &format!("\n--- {pod} ---\n{}", log(site, key, name, pod).await);
            }
            panic!(
                "{name} is {} ({}), wanted {status}{logs}",
                j["status"], j["message"]
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until no pod of an earlier test runs or is going on the node, so
/// that what a test measures is the start, not the wait (a pod whose image
/// could not be pulled took about 70 s to go after its deletion), and says
/// how long it waited for what.
async fn wait_until_the_node_is_free(client: &kube::Client, who: &str) {
    let everywhere: Api<Pod> = Api::all(client.clone());
    let waiting = Instant::now();
    let mut seen = Vec::new();
    loop {
        let busy: Vec<String> = everywhere
            .list(&ListParams::default())
            .await
            .unwrap()
            .into_iter()
            .filter(|p| {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                !matches!(phase, Some("Succeeded" | "Failed"))
            })
            .map(|p| {
                format!(
                    "{}/{}{}",
                    p.metadata.namespace.as_deref().unwrap_or(""),
                    p.metadata.name.as_deref().unwrap_or(""),
                    if p.metadata.deletion_timestamp.is_some() {
                        " (terminating)"
                    } else {
                        ""
                    },
                )
            })
            .collect();
        if busy.is_empty() {
            break;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(180),
            "the node stays busy: {busy:?}"
        );
        seen = busy;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    if !seen.is_empty() {
        eprintln!("{who}: waited {:?} for {seen:?} to go", waiting.elapsed());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fit_a_line_template_trains_over_gloo_in_containers_charts_its_loss_and_its_model_is_served_on_a_real_node(
) {
    let Some((node, client)) = common::node::client().await else {
        return;
    };
    let (site, _url) = console_on(&node, &client).await;
    let account = format!("fit{:08x}", getrandom::u32().unwrap());
    let key = common::rest::key_for(&site, &account).await;

    // Its two trainers ask for the node's two CPUs.
    wait_until_the_node_is_free(&client, "fit-a-line").await;
    let submitted = Instant::now();
    let run = json!({"owner": "paddlecloud", "name": "fit", "values": {"epochs": 5}});
    let created = call(
        &site,
        Method::POST,
        "/api/v1/templates/fit-a-line/jobs",
        Some(&key),
        Some(run),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let running = wait_for(&site, &key, "fit", "running", Duration::from_secs(120)).await;
    eprintln!("fit-a-line: submit -> Running {:?}", submitted.elapsed());
    assert_eq!(running["trainers"]["total"], 2, "{running}");
    // They run in containers on the node (containerd's ids, the node's
    // name); the console deletes the pods once it has their logs.
    let namespace = site.namespace_of(&account).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let listed = pods
        .list(&ListParams::default().labels("paddlecloud.org/job=fit"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 2);
    for pod in &listed.items {
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.node_name.as_deref(), Some(node.name.as_str()));
        let status = pod.status.as_ref().unwrap();
        let id = status.container_statuses.as_ref().unwrap()[0]
            .container_id
            .clone()
            .unwrap();
        assert!(id.starts_with("containerd://"), "{id}");
    }

    let done = wait_for(&site, &key, "fit", "succeeded", Duration::from_secs(300)).await;
    eprintln!("fit-a-line: submit -> Succeeded {:?}", submitted.elapsed());
    assert_eq!(done["trainers"]["succeeded"], 2, "{done}");

    // Both trainers trained together (world size 2), the loss went down to
    // the noise, and trainer 0 registered the line with the console's SDK.
    let first = log(&site, &key, "fit", "trainer-0").await;
    let second = log(&site, &key, "fit", "trainer-1").await;
    assert!(second.contains("trainer 1/2 epoch 5 loss"), "{second}");
    let last_loss: f64 = first
        .lines()
        .filter_map(|l| l.strip_prefix("trainer 0/2 epoch 5 loss "))
        .next()
        .unwrap_or_else(|| panic!("no last epoch in {first}"))
        .trim()
        .parse()
        .unwrap();
    assert!(last_loss < 0.05, "loss {last_loss}: {first}");
    assert!(first.contains("registered fit-a-line version 1"), "{first}");
    // Trainer 0's VisualDL file, written inside its container, is charted on
    // PaddleBoard (sent by the SDK's shipper the pod runs the command under):
    // one point per epoch, the last the loss the log printed.
    let curve = call(
        &site,
        Method::GET,
        "/api/v1/jobs/fit/metrics/vdl/train/loss?format=csv",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(curve.status, StatusCode::OK, "{}", curve.body);
    let values: Vec<f64> = curve
        .body
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(values.len(), 5, "{}", curve.body);
    assert!(
        (values[4] - last_loss).abs() < 1e-4,
        "{} vs {last_loss}",
        curve.body
    );
    assert!(values[4] < values[0], "the loss went down: {}", curve.body);
    let model = call(
        &site,
        Method::GET,
        &format!("/api/v1/models/{account}/fit-a-line"),
        Some(&key),
        None,
    )
    .await;
    assert_eq!(model.status, StatusCode::OK, "{}", model.body);
    // The weights for evaluate-a-line and the exported program for serving.
    let files = call(
        &site,
        Method::GET,
        &format!("/api/v1/models/{account}/fit-a-line/files?version=1"),
        Some(&key),
        None,
    )
    .await;
    assert_eq!(files.status, StatusCode::OK, "{}", files.body);
    for file in ["line.pdparams", "inference.pdiparams"] {
        assert!(files.body.contains(file), "{file} not in {}", files.body);
    }

    // The registered version, served by the default predict server in a
    // container of the same image, answers through the console's /serve/.
    let launched_at = Instant::now();
    let launched = call(
        &site,
        Method::POST,
        "/api/v1/serving",
        Some(&key),
        Some(json!({
            "name": "line", "model": "fit-a-line", "version": 1, "replicas": 1,
            "resources": {"cpu": "500m", "memory": "1Gi"},
            "image": "paddlepaddle/paddle:3.3.1",
        })),
    )
    .await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    loop {
        let instance = call(&site, Method::GET, "/api/v1/serving/line", Some(&key), None)
            .await
            .json();
        if instance["status"] == "ready" {
            break;
        }
        assert!(
            launched_at.elapsed() < Duration::from_secs(180) && instance["status"] != "failed",
            "{instance}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    eprintln!(
        "fit-a-line served: launch -> Ready {:?}",
        launched_at.elapsed()
    );
    let answer = call(
        &site,
        Method::POST,
        &format!("/serve/{account}/line/predict"),
        Some(&key),
        Some(json!({"inputs": {"x": [[1.0, 1.0]]}})),
    )
    .await;
    let y = answer.first_prediction();
    // 2·1 − 3.4·1 + 4.2
    assert!((y - 2.8).abs() < 0.3, "{}", answer.body);
    let gone = call(
        &site,
        Method::DELETE,
        "/api/v1/serving/line",
        Some(&key),
        None,
    )
    .await;
    assert!(gone.status.is_success(), "{}", gone.body);

    // The logs outlive the pods.
    pods.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("paddlecloud.org/job=fit"),
    )
    .await
    .unwrap();
    let start = Instant::now();
    while !pods
        .list(&ListParams::default().labels("paddlecloud.org/job=fit"))
        .await
        .unwrap()
        .items
        .is_empty()
    {
        assert!(start.elapsed() < Duration::from_secs(30), "the pods stayed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(log(&site, &key, "fit", "trainer-0").await, first);
    assert_eq!(log(&site, &key, "fit", "trainer-1").await, second);
}

/// Submit → every replica Running, for 2-replica jobs of the cached shell
/// image, one after another: each must start, and the figures are printed
/// (README: "On a real node").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_two_replica_jobs_in_a_row_each_start_and_their_start_times_are_printed_on_a_real_node(
) {
    let Some((node, client)) = common::node::client().await else {
        return;
    };
    let (site, _url) = console_on(&node, &client).await;
    let account = format!("start{:08x}", getrandom::u32().unwrap());
    let key = common::rest::key_for(&site, &account).await;
    wait_until_the_node_is_free(&client, "20 jobs").await;
    let mut took = Vec::new();
    for i in 0..20 {
        let name = format!("start-{i}");
        let spec = json!({
            "name": name, "image": node.shell_image, "command": ["sh", "-c", "exec sleep 600"],
            "num_trainers": 2, "trainer": {"cpu": "100m", "memory": "64Mi"}
        });
        let submitted = Instant::now();
        let created = call(&site, Method::POST, "/api/v1/jobs", Some(&key), Some(spec)).await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        let running = wait_for(&site, &key, &name, "running", Duration::from_secs(60)).await;
        took.push(submitted.elapsed());
        assert_eq!(running["trainers"]["ready"], 2, "{running}");
        let stopped = call(
            &site,
            Method::POST,
            &format!("/api/v1/jobs/{name}/stop"),
            Some(&key),
            None,
        )
        .await;
        assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
    }
    took.sort();
    let ms = |d: Duration| d.as_millis();
    println!(
        "submit -> all replicas Running, 20 jobs of 2 replicas on the real node: p50 {} ms, p90 {} ms, max {} ms",
        ms(took[9]),
        ms(took[17]),
        ms(took[19])
    );
}

/// What the kubelet says of a replica reaches the job table in the console's
/// words: a container over its memory limit is OOMKilled (the job fails
/// naming the limit); an image that is not there fails the job with the
/// pull error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oomkilled_replica_and_a_missing_image_are_named_in_the_job_table_on_a_real_node() {
    let Some((node, client)) = common::node::client().await else {
        return;
    };
    let (site, _url) = console_on(&node, &client).await;
    let account = format!("why{:08x}", getrandom::u32().unwrap());
    let key = common::rest::key_for(&site, &account).await;
    let submit = |spec: Value| {
        let (site, key) = (&site, &key);
        async move {
            let created = call(site, Method::POST, "/api/v1/jobs", Some(key), Some(spec)).await;
            assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        }
    };
    // A string that doubles until the shell is past 64Mi.
    submit(json!({
        "name": "greedy", "image": node.shell_image,
        "command": ["sh", "-c", "echo growing; a=x; while :; do a=\"$a$a\"; done"],
        "num_trainers": 1, "trainer": {"cpu": "100m", "memory": "64Mi"}
    }))
    .await;
    submit(json!({
        "name": "absent", "image": "localhost/paddlecloud/no-such-image:1",
        "command": ["sh", "-c", "echo never"],
        "num_trainers": 1, "trainer": {"cpu": "100m", "memory": "64Mi"}
    }))
    .await;

    let start = Instant::now();
    let greedy = loop {
        let j = job(&site, &key, "greedy").await;
        if j["status"] == "failed" {
            break j;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{j}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        greedy["message"], "trainer-0 OOMKilled: exceeded its memory limit 64Mi.",
        "{greedy}"
    );
    assert!(log(&site, &key, "greedy", "trainer-0")
        .await
        .contains("growing"));

    let absent = loop {
        let j = job(&site, &key, "absent").await;
        if j["status"] != "pending" {
            break j;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{j}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // Failed at once, not left pending: no retry brings an image that is not there.
    assert_eq!(absent["status"], "failed", "{absent}");
    let why = absent["message"].as_str().unwrap();
    assert!(
        why.starts_with("trainer-0 ") && why.contains("ImagePull") && why.contains("no-such-image"),
        "{absent}"
    );
    // Its pod, which never ran, goes at once and gives its CPU back (a
    // kubelet retrying the pull let it go only after about a minute).
    let namespace = site.namespace_of(&account).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let failed_at = Instant::now();
    while !pods
        .list(&ListParams::default().labels("paddlecloud.org/job=absent"))
        .await
        .unwrap()
        .items
        .is_empty()
    {
        assert!(
            failed_at.elapsed() < Duration::from_secs(10),
            "the pod that never ran is still there"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
