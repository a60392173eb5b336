//! Preemption on the real node (issue 44 item 5), through a console started
//! with `--preemption-grace 2` on `--cluster kube`: an account's low job
//! asks for most of the node's free CPU; its high job, asking as much,
//! cannot be placed beside it, so the console stops the low job's pod and
//! makes its replica Job again. The high job runs and ends; the low job,
//! waiting meanwhile and saying why, then runs again in a new pod.

use std::time::Duration;

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::json;

use crate::common;
use crate::common::rest::Endpoint;
use crate::real_node::wait_for;

/// A console on `--cluster kube` on the real node, with `preemption` as
/// its `--preemption-grace`, and a new account's owner, once the node is
/// free.
pub(crate) struct NodeSite {
    pub(crate) node: common::node::RealNode,
    pub(crate) client: kube::Client,
    pub(crate) site: common::site::Site,
    pub(crate) key: String,
    pub(crate) namespace: String,
}

impl NodeSite {
    /// `None` off the real node (the test is skipped).
    pub(crate) async fn start(prefix: &str, preemption: Option<Duration>) -> Option<Self> {
        let (node, client) = common::node::client().await?;
        let (site, _url) =
            common::site::on_socket_at(&node.ip, |config, _, _| server::console::Config {
                cluster: common::kubernetes::kube_choice(&client, None),
                preemption_grace: preemption,
                ..config
            })
            .await;
        let account = format!("{prefix}{:08x}", getrandom::u32().unwrap());
        let key = common::rest::key_for(&site, &account).await;
        let namespace = site.namespace_of(&account).await;
        common::node::wait_until_free(&client, prefix).await;
        Some(Self {
            node,
            client,
            site,
            key,
            namespace,
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_preemption_on_a_high_job_takes_its_accounts_low_jobs_room_and_the_low_one_runs_again_on_a_real_node(
) {
    let Some(NodeSite {
        node,
        client,
        site,
        key,
        namespace,
    }) = NodeSite::start("pre", Some(Duration::from_secs(2))).await
    else {
        return;
    };
    let to = Endpoint::Here(&site);

    // Each job asks for 60% of the CPU the node has free: one fits, not two.
    let room = to
        .call(Method::GET, "/api/v1/cluster", Some(&key), None)
        .await
        .json();
    let free = room["total"]["cpu_millis"].as_u64().unwrap()
        - room["used"]["cpu_millis"].as_u64().unwrap();
    let cpu = format!("{}m", free * 6 / 10);
    eprintln!("the node has {free}m of CPU free; each job asks for {cpu}");
    let job = |name: &str, priority: &str, script: &str| {
        json!({
            "name": name, "image": node.shell_image, "priority": priority,
            "command": ["sh", "-c", script],
            "num_trainers": 1, "trainer": {"cpu": cpu, "memory": "32Mi"},
        })
    };
    let submit = |spec: serde_json::Value| async {
        let made = to
            .call(Method::POST, "/api/v1/jobs", Some(&key), Some(spec))
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    };
    let limit = Duration::from_secs(90);
    submit(job("sweep", "low", "echo run started; sleep 600")).await;
    wait_for(&to, &key, "sweep", "running", limit).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let uids = || async {
        let lp = ListParams::default().labels("paddlecloud.org/job=sweep");
        let mut uids: Vec<String> = pods
            .list(&lp)
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.metadata.uid)
            .collect();
        uids.sort();
        uids
    };
    let first = uids().await;
    assert_eq!(first.len(), 1, "{first:?}");

    let mut urgent = job("urgent", "high", "echo urgent ran; sleep 5");
    urgent["max_runtime"] = json!("60s");
    submit(urgent).await;
    let waiting = wait_for(&to, &key, "sweep", "pending", limit).await;
    let said = waiting["message"].as_str().unwrap_or_default();
    assert!(
        said.starts_with("Preempted by job urgent (high priority)"),
        "{waiting}"
    );
    wait_for(&to, &key, "urgent", "running", limit).await;
    // The queue: the low job waits behind the high one, and starts by the
    // high one's time limit at the latest.
    let q = to
        .call(Method::GET, "/api/v1/queue", Some(&key), None)
        .await
        .json();
    let now = server::time::now_ms();
    assert_eq!(q["waiting"][0]["work"]["name"], "sweep", "{q}");
    assert_eq!(q["waiting"][0]["held_by"][0]["name"], "urgent", "{q}");
    let holding = q["running"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["work"]["name"] == "urgent")
        .cloned()
        .unwrap_or_else(|| panic!("urgent holds room: {q}"));
    let ends = holding["ends_by"].as_i64().expect("its limit's end");
    assert!(ends > now && ends <= now + 60_000, "{q}");
    assert_eq!(q["waiting"][0]["starts_by"], ends, "{q}");
    wait_for(&to, &key, "urgent", "succeeded", limit).await;
    // Its replica Job made again, in a new pod.
    wait_for(&to, &key, "sweep", "running", limit).await;
    let second = uids().await;
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(first, second, "a new pod runs the preempted job");

    // The job's history keeps the preempted run.
    let history = to
        .call(Method::GET, "/api/v1/jobs/sweep/detail", Some(&key), None)
        .await;
    assert!(
        history.body.contains("Preempted by job urgent"),
        "{}",
        history.body
    );
    for name in ["sweep", "urgent"] {
        let path = format!("/api/v1/jobs/{name}");
        to.call(Method::DELETE, &path, Some(&key), None).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_past_its_time_limit_is_stopped_and_fails_saying_so_on_a_real_node() {
    let Some(NodeSite {
        node,
        client,
        site,
        key,
        namespace,
    }) = NodeSite::start("lim", None).await
    else {
        return;
    };
    let to = Endpoint::Here(&site);
    let spec = json!({
        "name": "bounded", "image": node.shell_image, "max_runtime": "5s",
        "command": ["sh", "-c", "echo started; sleep 600"],
        "num_trainers": 1, "trainer": {"cpu": "100m", "memory": "32Mi"},
    });
    let made = to
        .call(Method::POST, "/api/v1/jobs", Some(&key), Some(spec))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let limit = Duration::from_secs(90);
    wait_for(&to, &key, "bounded", "running", limit).await;
    let started = std::time::Instant::now();
    let failed = wait_for(&to, &key, "bounded", "failed", limit).await;
    assert_eq!(
        failed["message"], "Ran past its time limit of 5s: stopped.",
        "{failed}"
    );
    // Not before its limit; its pod is gone.
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let detail = to
        .call(Method::GET, "/api/v1/jobs/bounded/detail", Some(&key), None)
        .await
        .json();
    assert_eq!(
        detail["pods"][0]["message"], "Stopped at the job's time limit.",
        "{detail}"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let lp = ListParams::default().labels("paddlecloud.org/job=bounded");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !pods.list(&lp).await.unwrap().items.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "its pod is still there"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
