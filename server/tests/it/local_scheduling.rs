//! The local executor schedules like a cluster, on a machine made small by
//! the same settings `--local-cpus`, `--local-memory` and `--local-gpus`
//! give (GPUs are simulated: this machine has none, and the test says so by
//! using `--local-gpus N` past what `nvidia-smi` shows). Real processes
//! throughout: what replicas see is read from what they print.

use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{json, Value};
use server::console::Config;
use server::local::capacity::{CapacitySettings, GpuSetting};

use crate::common;
use crate::common::rest::{call, key_and_cookie, key_for, wait_for, Answer};
use crate::common::site::{site_configured, Site};

/// A console whose local executor has `cpus` CPUs, `gib` GiB and `gpus`
/// simulated GPUs.
async fn machine(cpus: u64, gib: u64, gpus: u32) -> Site {
    site_configured(|config, _| Config {
        local_capacity: CapacitySettings {
            cpu_millis: Some(cpus * 1000),
            memory_bytes: Some(gib << 30),
            gpus: GpuSetting::Count(gpus),
        },
        ..config
    })
    .await
}

/// `n` trainers (no parameter server) of `cpu`, `memory` and `gpu` each,
/// running `script`.
fn trainers(name: &str, n: u32, cpu: &str, memory: &str, gpu: u32, script: &str) -> Value {
    json!({
        "name": name,
        "command": ["sh", "-c", script],
        "num_ps": 0,
        "num_trainers": n,
        "trainer": {"cpu": cpu, "memory": memory, "gpu": gpu}
    })
}

async fn submit(site: &Site, key: &str, spec: Value) -> Answer {
    call(site, Method::POST, "/api/v1/jobs", Some(key), Some(spec)).await
}

async fn job(site: &Site, key: &str, name: &str) -> Value {
    call(
        site,
        Method::GET,
        &format!("/api/v1/jobs/{name}"),
        Some(key),
        None,
    )
    .await
    .json()
}

async fn pods(site: &Site, key: &str, name: &str) -> Vec<Value> {
    let got = call(
        site,
        Method::GET,
        &format!("/api/v1/jobs/{name}/pods"),
        Some(key),
        None,
    )
    .await;
    got.json().as_array().unwrap().clone()
}

/// Polls until `ok` holds of the job (up to 30 s).
async fn until(
    site: &Site,
    key: &str,
    name: &str,
    what: &str,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    for _ in 0..600 {
        let j = job(site, key, name).await;
        if ok(&j) {
            return j;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name} never {what}: {}", job(site, key, name).await);
}

async fn log(site: &Site, key: &str, job: &str, pod: &str) -> String {
    call(
        site,
        Method::GET,
        &format!("/api/v1/jobs/{job}/pods/{pod}/log"),
        Some(key),
        None,
    )
    .await
    .body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_can_never_fit_is_refused_naming_the_resource_the_request_and_the_machine() {
    let site = machine(2, 4, 1).await;
    let key = key_for(&site, "small").await;
    let refused = |spec: Value| {
        let (site, key) = (&site, key.clone());
        async move {
            let got = submit(site, &key, spec).await;
            assert_eq!(got.status, StatusCode::BAD_REQUEST, "{}", got.body);
            let body = got.json();
            (
                body["error"]["field"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                body["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        }
    };
    // Three replicas of one CPU each start together: 3 CPUs at once.
    let (field, message) = refused(trainers("wide", 3, "1", "256Mi", 0, "true")).await;
    assert_eq!(field, "trainer.cpu");
    assert!(
        message.contains("3 CPUs") && message.contains("2 CPUs"),
        "{message}"
    );
    // One replica larger than the machine.
    let (field, message) = refused(trainers("fat", 1, "1", "8Gi", 0, "true")).await;
    assert_eq!(field, "trainer.memory");
    assert!(
        message.contains("8 GiB") && message.contains("4 GiB"),
        "{message}"
    );
    let (field, message) = refused(trainers("greedy", 1, "1", "256Mi", 2, "true")).await;
    assert_eq!(field, "trainer.gpu");
    assert!(
        message.contains("2 GPUs") && message.contains("1 GPU"),
        "{message}"
    );
    // Nothing was recorded, and what fits is taken.
    let listed = call(&site, Method::GET, "/api/v1/jobs", Some(&key), None).await;
    assert_eq!(listed.json()["total"], 0, "{}", listed.body);
    let ok = submit(&site, &key, trainers("fits", 2, "1", "1Gi", 0, "true")).await;
    assert_eq!(ok.status, StatusCode::CREATED, "{}", ok.body);
    wait_for(&site, &key, "fits", "succeeded").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_that_together_exceed_the_machine_run_one_after_the_other_in_order_each_started_whole()
{
    let site = machine(2, 8, 0).await;
    let (key, cookie) = key_and_cookie(&site, "queue").await;
    let work = "sleep 1.5";
    for (name, n) in [("first", 2), ("second", 2), ("third", 1)] {
        let got = submit(&site, &key, trainers(name, n, "1", "256Mi", 0, work)).await;
        assert_eq!(got.status, StatusCode::CREATED, "{}", got.body);
    }
    // While the first runs, the others wait and say why.
    let second = until(&site, &key, "second", "said why it waits", |j| {
        j["status"] == "pending" && !j["message"].as_str().unwrap_or("").is_empty()
    })
    .await;
    assert_eq!(second["message"], "waiting for 2 CPUs: 0 free");
    // The same pass writes the third's reason a moment after the second's.
    let third = until(&site, &key, "third", "said why it waits", |j| {
        j["status"] == "pending" && !j["message"].as_str().unwrap_or("").is_empty()
    })
    .await;
    assert_eq!(third["message"], "waiting for 1 CPU: 0 free; 1 job ahead");
    // The job table shows the reason beside the status.
    let page = common::site::text(site.get("/jobs", Some(&cookie)).await)
        .await
        .replace("<!>", "");
    assert!(
        page.contains("data-testid=\"reason\">waiting for 2 CPUs: 0 free<"),
        "{page}"
    );

    for name in ["first", "second", "third"] {
        wait_for(&site, &key, name, "succeeded").await;
    }
    let span = |pods: &[Value]| {
        let starts: Vec<i64> = pods
            .iter()
            .map(|p| p["started_at"].as_i64().unwrap())
            .collect();
        let ends: Vec<i64> = pods
            .iter()
            .map(|p| p["finished_at"].as_i64().unwrap())
            .collect();
        (
            *starts.iter().min().unwrap(),
            *starts.iter().max().unwrap(),
            *ends.iter().max().unwrap(),
        )
    };
    let (a_start, a_last_start, a_end) = span(&pods(&site, &key, "first").await);
    let (b_start, b_last_start, b_end) = span(&pods(&site, &key, "second").await);
    let (c_start, _, _) = span(&pods(&site, &key, "third").await);
    // Each job's replicas start together (within one supervisor turn)…
    assert!(a_last_start - a_start < 1000, "{a_start} {a_last_start}");
    assert!(b_last_start - b_start < 1000, "{b_start} {b_last_start}");
    // …and only once the job before them gave its room back, in order.
    assert!(
        b_start >= a_end,
        "second started at {b_start}, first ended at {a_end}"
    );
    assert!(
        c_start >= b_end,
        "third started at {c_start}, second ended at {b_end}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_replicas_hold_disjoint_gpus_and_each_sees_only_its_own() {
    let site = machine(8, 8, 4).await;
    let key = key_for(&site, "gpus").await;
    let show = "echo \"visible=$CUDA_VISIBLE_DEVICES selected=$FLAGS_selected_gpus\"; sleep 3";
    for spec in [
        trainers("pair", 2, "1", "256Mi", 1, show),
        trainers("double", 1, "1", "256Mi", 2, show),
        trainers("none", 1, "1", "256Mi", 0, show),
    ] {
        let got = submit(&site, &key, spec).await;
        assert_eq!(got.status, StatusCode::CREATED, "{}", got.body);
    }
    for name in ["pair", "double", "none"] {
        until(&site, &key, name, "ran", |j| j["status"] == "running").await;
    }
    // All four GPUs held at once, by three replicas, none twice.
    let cluster = call(&site, Method::GET, "/api/v1/cluster", Some(&key), None).await;
    assert_eq!(cluster.status, StatusCode::OK, "{}", cluster.body);
    let cluster = cluster.json();
    assert_eq!(cluster["total"]["gpu"], 4);
    assert_eq!(cluster["used"]["gpu"], 4);
    let gpus = cluster["gpus"].as_array().unwrap();
    assert!(
        gpus.iter()
            .all(|g| g["in_use"] == true && g["simulated"] == true),
        "{gpus:?}"
    );
    let mut held = Vec::new();
    for name in ["pair", "double"] {
        for pod in pods(&site, &key, name).await {
            held.extend(
                pod["gpus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|g| g.as_u64().unwrap()),
            );
        }
    }
    held.sort_unstable();
    assert_eq!(held, [0, 1, 2, 3]);
    for name in ["pair", "double", "none"] {
        wait_for(&site, &key, name, "succeeded").await;
    }
    // What each replica saw: its own devices, numbered from 0 for Paddle.
    let seen = |text: String| text.lines().next().unwrap_or("").to_owned();
    let p0 = seen(log(&site, &key, "pair", "trainer-0").await);
    let p1 = seen(log(&site, &key, "pair", "trainer-1").await);
    let d0 = seen(log(&site, &key, "double", "trainer-0").await);
    let n0 = seen(log(&site, &key, "none", "trainer-0").await);
    let ids = |line: &str| {
        line.split(' ')
            .next()
            .unwrap()
            .trim_start_matches("visible=")
            .to_owned()
    };
    assert_eq!(p0.split(' ').nth(1), Some("selected=0"), "{p0}");
    assert_eq!(d0.split(' ').nth(1), Some("selected=0,1"), "{d0}");
    let mut all: Vec<String> = [ids(&p0), ids(&p1), ids(&d0)]
        .iter()
        .flat_map(|s| s.split(',').map(str::to_owned).collect::<Vec<_>>())
        .collect();
    all.sort();
    assert_eq!(all, ["0", "1", "2", "3"], "{p0} | {p1} | {d0}");
    assert_eq!(n0, "visible= selected=", "a replica without GPUs sees none");
    // All given back.
    let after = call(&site, Method::GET, "/api/v1/cluster", Some(&key), None)
        .await
        .json();
    assert_eq!(after["used"]["gpu"], 0, "{after}");
    // GPU-hours count the GPUs the replicas held, for as long as they ran.
    let mut want = 0.0;
    for name in ["pair", "double"] {
        let j = job(&site, &key, name).await;
        let ran = j["finished_at"].as_i64().unwrap() - j["started_at"].as_i64().unwrap();
        want += 2.0 * ran as f64 / 3_600_000.0;
    }
    let usage = call(&site, Method::GET, "/api/v1/usage", Some(&key), None)
        .await
        .json();
    let got = usage["windows"][0]["gpu"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-9, "GPU-hours {got}, held {want}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_past_its_memory_limit_ends_with_that_reason() {
    let site = machine(4, 8, 0).await;
    let key = key_for(&site, "greedy").await;
    // 300 MB of touched memory against a 96Mi limit.
    let script = "python3 -c \"import time; a = b'x' * (300 << 20); print('allocated', flush=True); time.sleep(30)\"";
    let got = submit(&site, &key, trainers("hog", 1, "1", "96Mi", 0, script)).await;
    assert_eq!(got.status, StatusCode::CREATED, "{}", got.body);
    let failed = wait_for(&site, &key, "hog", "failed").await;
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.contains("exceeded its memory limit 96Mi"),
        "{message}"
    );
    let pod = &pods(&site, &key, "hog").await[0];
    assert_eq!(pod["phase"], "failed");
    assert!(
        pod["message"].as_str().unwrap().starts_with("OOMKilled"),
        "{pod}"
    );
    // Which way limits are held here is said with the job's charts.
    let charts = call(
        &site,
        Method::GET,
        "/api/v1/jobs/hog/resources",
        Some(&key),
        None,
    )
    .await;
    let by = charts.json()["limits"]["by"].as_str().unwrap().to_owned();
    assert_eq!(by, expected_limits(), "{}", charts.body);
}

/// How this machine holds replicas: as root (this project's machines and
/// CI) the console makes a cgroup each, v1 where the hierarchy is v1 (as
/// here) and v2 where it is v2; without root it reads memory instead.
fn expected_limits() -> &'static str {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { nix::libc::geteuid() } == 0;
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    match (root, own.lines().count()) {
        (false, _) => "sampler",
        (true, 1) => "cgroup",
        (true, _) => "cgroup_v1",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_spins_gets_no_more_cpu_than_it_asked_for() {
    if expected_limits() == "sampler" {
        // Said, not hidden: without cgroups CPU is not limited (the Quota
        // page says so), and there is nothing to measure.
        eprintln!("SKIPPED: not root, so no cgroup holds CPU here");
        return;
    }
    let site = machine(4, 8, 0).await;
    let (key, cookie) = key_and_cookie(&site, "spinner").await;
    // Three seconds of spinning; what it prints is the CPU time it got.
    let script = "python3 -c \"import os, time\nt = time.time()\nwhile time.time() - t < 3: pass\nc = os.times()\nprint('cpu', c.user + c.system, flush=True)\"";
    let got = submit(&site, &key, trainers("spin", 1, "200m", "256Mi", 0, script)).await;
    assert_eq!(got.status, StatusCode::CREATED, "{}", got.body);
    wait_for(&site, &key, "spin", "succeeded").await;
    let log = log(&site, &key, "spin", "trainer-0").await;
    let used: f64 = log
        .lines()
        .find_map(|l| l.split("cpu ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no CPU time printed: {log}"));
    // 0.2 CPU for 3 s is 0.6 s; unheld it would have been about 3 s.
    assert!(used < 1.2, "spun {used} s of CPU in 3 s at a 200m limit");
    // The page says so.
    let quota = site.page_ok(&cookie, "/quota").await;
    assert!(
        quota.contains("Memory, CPU and process limits: enforced by a cgroup"),
        "{quota}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_waiting_for_room_can_be_stopped_and_deleted_without_running() {
    let site = machine(1, 8, 0).await;
    let key = key_for(&site, "impatient").await;
    submit(
        &site,
        &key,
        trainers("holder", 1, "1", "256Mi", 0, "sleep 30"),
    )
    .await;
    until(&site, &key, "holder", "ran", |j| j["status"] == "running").await;
    submit(
        &site,
        &key,
        trainers("waiter", 1, "1", "256Mi", 0, "touch ran; sleep 30"),
    )
    .await;
    until(&site, &key, "waiter", "waited", |j| {
        j["message"] == "waiting for 1 CPU: 0 free"
    })
    .await;
    let stopped = call(
        &site,
        Method::POST,
        "/api/v1/jobs/waiter/stop",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
    let stopped = stopped.json();
    assert_eq!(stopped["status"], "stopped");
    let pod = &pods(&site, &key, "waiter").await[0];
    assert_eq!(pod["phase"], "stopped");
    assert!(pod["started_at"].is_null(), "never started: {pod}");
    let gone = call(
        &site,
        Method::DELETE,
        "/api/v1/jobs/waiter",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    // The queue moved on: a job behind it runs once the holder is done.
    submit(&site, &key, trainers("next", 1, "1", "256Mi", 0, "true")).await;
    call(
        &site,
        Method::POST,
        "/api/v1/jobs/holder/stop",
        Some(&key),
        None,
    )
    .await;
    wait_for(&site, &key, "next", "succeeded").await;
}

#[test]
fn jobs_waiting_when_the_console_stops_are_queued_again_and_run_in_order() {
    let small = || CapacitySettings {
        cpu_millis: Some(1000),
        memory_bytes: Some(8 << 30),
        gpus: GpuSetting::Count(0),
    };
    let first = tokio::runtime::Runtime::new().unwrap();
    let (db, key) = first.block_on(async {
        let site = machine(1, 8, 0).await;
        let key = key_for(&site, "patient").await;
        submit(
            &site,
            &key,
            trainers("running", 1, "1", "256Mi", 0, "sleep 60"),
        )
        .await;
        until(&site, &key, "running", "ran", |j| j["status"] == "running").await;
        for name in ["later", "last"] {
            submit(&site, &key, trainers(name, 1, "1", "256Mi", 0, "sleep 0.5")).await;
            until(&site, &key, name, "waited", |j| j["status"] == "pending").await;
        }
        (site.db, key)
    });
    // The console goes away with one job running and two waiting.
    first.shutdown_background();

    let second = tokio::runtime::Runtime::new().unwrap();
    second.block_on(async {
        let config = Config {
            local_capacity: small(),
            ..common::site::config(&db)
        };
        let site = common::site::site_from(db, config).await;
        let lost = job(&site, &key, "running").await;
        assert_eq!(lost["status"], "failed");
        assert!(
            lost["message"]
                .as_str()
                .unwrap()
                .contains("console restarted"),
            "{lost}"
        );
        // Nothing of the waiting jobs was lost: they run, in their order,
        // with a job token that works (the old one was never handed out).
        wait_for(&site, &key, "later", "succeeded").await;
        wait_for(&site, &key, "last", "succeeded").await;
        let started = |pods: Vec<Value>| pods[0]["started_at"].as_i64().unwrap();
        let finished = |pods: Vec<Value>| pods[0]["finished_at"].as_i64().unwrap();
        let later_end = finished(pods(&site, &key, "later").await);
        let last_start = started(pods(&site, &key, "last").await);
        assert!(last_start >= later_end, "{last_start} < {later_end}");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_the_log_of_a_job_that_waits_for_room_shows_its_lines_once_it_runs() {
    let site = machine(1, 8, 0).await;
    let key = key_for(&site, "follower").await;
    submit(
        &site,
        &key,
        trainers("holder", 1, "1", "256Mi", 0, "sleep 2"),
    )
    .await;
    until(&site, &key, "holder", "ran", |j| j["status"] == "running").await;
    let script = "echo from the waiter; sleep 0.5; echo its last line";
    submit(&site, &key, trainers("waiter", 1, "1", "256Mi", 0, script)).await;
    until(&site, &key, "waiter", "waited", |j| {
        j["status"] == "pending"
    })
    .await;
    // `paddlecloud logs -f` on a job that has not started: the follow
    // waits for what it will write (it used to end at once, empty).
    let follow = site
        .send(
            http::Request::get("/api/v1/jobs/waiter/pods/trainer-0/log?follow=true")
                .header(http::header::AUTHORIZATION, format!("Bearer {key}"))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(follow.status(), StatusCode::OK);
    let body = tokio::time::timeout(
        Duration::from_secs(60),
        axum::body::to_bytes(follow.into_body(), usize::MAX),
    )
    .await
    .expect("the follow ends when the job does")
    .unwrap();
    let text = String::from_utf8_lossy(&body);
    assert!(
        text.contains("from the waiter") && text.contains("its last line"),
        "{text:?}"
    );
    assert_eq!(job(&site, &key, "waiter").await["status"], "succeeded");
}
