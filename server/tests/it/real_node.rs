//! The console on a real node (`scripts/kube-test-cluster.sh`): the shipped
//! fit-a-line template trains with two data-parallel trainers over gloo, in
//! containers of the PaddlePaddle CPU image built there, reaching each other
//! by cluster DNS and the console (its SDK) over the pod network.

use crate::common;

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams};
use serde_json::{json, Value};

use common::rest::Endpoint;
use common::site::Site;

/// The console served on the node's address, where pods reach it; its URL.
pub(crate) async fn console_on(
    node: &common::node::RealNode,
    client: &kube::Client,
) -> (Site, String) {
    common::site::on_socket_at(&node.ip, |config, _, _| server::console::Config {
        cluster: common::kubernetes::kube_choice(client, None),
        ..config
    })
    .await
}

/// A console on the real node with a new account (named `prefix` and a
/// random suffix) and its owner's key, once nothing else holds the node
/// (`who` waits, as the log says).
pub(crate) struct NodeConsole {
    pub node: common::node::RealNode,
    pub site: Site,
    pub account: String,
    pub key: String,
}

impl NodeConsole {
    /// `None` off the real node (the test is skipped, saying why).
    pub(crate) async fn start(prefix: &str, who: &str) -> Option<Self> {
        let (node, client) = common::node::client().await?;
        let (site, _url) = console_on(&node, &client).await;
        let account = format!("{prefix}{:08x}", getrandom::u32().unwrap());
        let key = common::rest::key_for(&site, &account).await;
        common::node::wait_until_free(&client, who).await;
        Some(Self {
            node,
            site,
            account,
            key,
        })
    }
}

pub(crate) async fn job(to: &Endpoint<'_>, key: &str, name: &str) -> Value {
    let got = to
        .call(
            Method::GET,
            &format!("/api/v1/jobs/{name}"),
            Some(key),
            None,
        )
        .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    got.json()
}

pub(crate) async fn log(to: &Endpoint<'_>, key: &str, name: &str, pod: &str) -> String {
    let path = format!("/api/v1/jobs/{name}/pods/{pod}/log");
    let got = to.call(Method::GET, &path, Some(key), None).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.body);
    got.body
}

/// Polls until the job has `status`, failing at once (with both trainers'
/// logs) if it ends otherwise.
pub(crate) async fn wait_for(
    to: &Endpoint<'_>,
    key: &str,
    name: &str,
    status: &str,
    limit: Duration,
) -> Value {
    let start = Instant::now();
    let mut said = String::new();
    loop {
        let j = job(to, key, name).await;
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
                let path = format!("/api/v1/jobs/{name}/pods/{pod}/log");
                let got = to.call(Method::GET, &path, Some(key), None).await;
                logs += &format!("\n--- {pod} ({}) ---\n{}", got.status, got.body);
            }
            panic!(
                "{name} is {} ({}), wanted {status}{logs}",
                j["status"], j["message"]
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
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
    let namespace = site.namespace_of(&account).await;
    // Its two trainers ask for the node's two CPUs.
    common::node::wait_until_free(&client, "fit-a-line").await;
    let run = FitALine {
        to: &Endpoint::Here(&site),
        key: &key,
        account: &account,
        namespace: &namespace,
        trainers: 2,
    };
    run.trains_is_charted_registered_and_served(&client, &node.name)
        .await;
}

/// The shipped fit-a-line template run end to end through a console, as
/// its user would: `trainers` over gloo in containers of the PaddlePaddle
/// image, the loss on PaddleBoard, the line registered and served by the
/// default predict server, the logs kept after the pods are gone.
pub struct FitALine<'a> {
    /// The console.
    pub to: &'a Endpoint<'a>,
    /// An access key of `account`'s owner.
    pub key: &'a str,
    pub account: &'a str,
    /// Where the account's pods are.
    pub namespace: &'a str,
    pub trainers: u32,
}

impl FitALine<'_> {
    /// Runs it on `node` of the cluster of `client` (5 epochs, job "fit",
    /// serving instance "line"), asserting each step.
    pub async fn trains_is_charted_registered_and_served(&self, client: &kube::Client, node: &str) {
        let (to, key, account, trainers) = (self.to, self.key, self.account, self.trainers);
        let submitted = Instant::now();
        let run = json!({"owner": "paddlecloud", "name": "fit",
                         "values": {"epochs": 5, "trainers": trainers}});
        let created = to
            .call(
                Method::POST,
                "/api/v1/templates/fit-a-line/jobs",
                Some(key),
                Some(run),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        let running = wait_for(to, key, "fit", "running", Duration::from_secs(120)).await;
        eprintln!("fit-a-line: submit -> Running {:?}", submitted.elapsed());
        assert_eq!(running["trainers"]["total"], trainers, "{running}");
        // They run in containers on the node (containerd's ids, the node's
        // name); the console deletes the pods once it has their logs.
        let pods: Api<Pod> = Api::namespaced(client.clone(), self.namespace);
        let listed = pods
            .list(&ListParams::default().labels("paddlecloud.org/job=fit"))
            .await
            .unwrap();
        assert_eq!(listed.items.len(), trainers as usize);
        for pod in &listed.items {
            let spec = pod.spec.as_ref().unwrap();
            assert_eq!(spec.node_name.as_deref(), Some(node));
            let status = pod.status.as_ref().unwrap();
            let id = status.container_statuses.as_ref().unwrap()[0]
                .container_id
                .clone()
                .unwrap();
            assert!(id.starts_with("containerd://"), "{id}");
        }

        let done = wait_for(to, key, "fit", "succeeded", Duration::from_secs(300)).await;
        eprintln!("fit-a-line: submit -> Succeeded {:?}", submitted.elapsed());
        assert_eq!(done["trainers"]["succeeded"], trainers, "{done}");

        // The trainers trained together (world size `trainers`), the loss
        // went down to the noise, and trainer 0 registered the line with the
        // console's SDK.
        let mut logs = Vec::new();
        for i in 0..trainers {
            let log = log(to, key, "fit", &format!("trainer-{i}")).await;
            let last = format!("trainer {i}/{trainers} epoch 5 loss");
            assert!(log.contains(&last), "{log}");
            logs.push(log);
        }
        let first = &logs[0];
        let last_loss: f64 = first
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("trainer 0/{trainers} epoch 5 loss ")))
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
        let curve = to
            .call(
                Method::GET,
                "/api/v1/jobs/fit/metrics/vdl/train/loss?format=csv",
                Some(key),
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
        let model = to
            .call(
                Method::GET,
                &format!("/api/v1/models/{account}/fit-a-line"),
                Some(key),
                None,
            )
            .await;
        assert_eq!(model.status, StatusCode::OK, "{}", model.body);
        // The weights for evaluate-a-line and the exported program for serving.
        let files = to
            .call(
                Method::GET,
                &format!("/api/v1/models/{account}/fit-a-line/files?version=1"),
                Some(key),
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
        let launched = to
            .call(
                Method::POST,
                "/api/v1/serving",
                Some(key),
                Some(json!({
                    "name": "line", "model": "fit-a-line", "version": 1, "replicas": 1,
                    "resources": {"cpu": "500m", "memory": "1Gi"},
                    "image": "paddlepaddle/paddle:3.3.1",
                })),
            )
            .await;
        assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
        loop {
            let instance = to
                .call(Method::GET, "/api/v1/serving/line", Some(key), None)
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
        let answer = to
            .call(
                Method::POST,
                &format!("/serve/{account}/line/predict"),
                Some(key),
                Some(json!({"inputs": {"x": [[1.0, 1.0]]}})),
            )
            .await;
        let y = answer.first_prediction();
        // 2·1 − 3.4·1 + 4.2
        assert!((y - 2.8).abs() < 0.3, "{}", answer.body);
        let gone = to
            .call(Method::DELETE, "/api/v1/serving/line", Some(key), None)
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
        for (i, kept) in logs.iter().enumerate() {
            assert_eq!(&log(to, key, "fit", &format!("trainer-{i}")).await, kept);
        }
    }
}

/// Submit → every replica Running, for 2-replica jobs of the cached shell
/// image, one after another: each must start, and the figures are printed
/// (docs/testing.md: "On a real node"). A benchmark, outside CI's node stage:
/// `scripts/test.sh kube-bench`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn benchmark_twenty_two_replica_jobs_in_a_row_each_start_and_their_start_times_are_printed_on_a_real_node(
) {
    let Some(NodeConsole {
        node, site, key, ..
    }) = NodeConsole::start("start", "20 jobs").await
    else {
        return;
    };
    let to = Endpoint::Here(&site);
    let mut took = Vec::new();
    for i in 0..20 {
        let name = format!("start-{i}");
        let spec = json!({
            "name": name, "image": node.shell_image, "command": ["sh", "-c", "exec sleep 600"],
            "num_trainers": 2, "trainer": {"cpu": "100m", "memory": "64Mi"}
        });
        let submitted = Instant::now();
        let created = to
            .call(Method::POST, "/api/v1/jobs", Some(&key), Some(spec))
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        let running = wait_for(&to, &key, &name, "running", Duration::from_secs(60)).await;
        took.push(submitted.elapsed());
        assert_eq!(running["trainers"]["ready"], 2, "{running}");
        let stopped = to
            .call(
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
    let to = Endpoint::Here(&site);
    let submit = |spec: Value| {
        let (to, key) = (&to, &key);
        async move {
            let created = to
                .call(Method::POST, "/api/v1/jobs", Some(key), Some(spec))
                .await;
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
        let j = job(&to, &key, "greedy").await;
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
    assert!(log(&to, &key, "greedy", "trainer-0")
        .await
        .contains("growing"));

    let absent = loop {
        let j = job(&to, &key, "absent").await;
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

/// The submit dialog's room line reads the node: its allocatable, less what
/// its pods request, and warns of a job larger than the node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_submit_dialog_shows_the_nodes_room_and_warns_of_a_job_larger_than_it_on_a_real_node() {
    let Some((node, client)) = common::node::client().await else {
        return;
    };
    let (site, _url) = console_on(&node, &client).await;
    let account = format!("room{:08x}", getrandom::u32().unwrap());
    let (_key, cookie) = common::rest::key_and_cookie(&site, &account).await;
    let page = common::site::text(site.get("/jobs?submit=1", Some(&cookie)).await).await;
    let line = page
        .split("data-testid=\"room-left\"")
        .nth(1)
        .and_then(|rest| rest.split("</p>").next())
        .unwrap_or_else(|| panic!("no room line in the dialog: {page}"))
        // Without the markers Leptos puts between text nodes.
        .replace("<!>", "");
    assert!(line.contains("Free on test-kube now:"), "{line}");
    // "of" the node's allocatable CPU, as the dialog writes amounts.
    let (millis, _) = common::node::allocatable(&client, &node.name).await;
    let cpu = app::models::quantity::format_cpu(millis);
    assert!(line.contains(&format!(" of {cpu} CPU")), "{line}");
    // The dialog's default job asks for 5 CPU.
    if millis < 5000 {
        assert!(page.contains("could never start"), "{page}");
    }
}
