//! Experiments end to end: a search over a template's parameters whose
//! trials are real jobs on the local executor, writing their objective to
//! PaddleBoard through the SDK; early stopping, the quota holding trials
//! back, steering (pause, extend, retry), bad input, and a console killed
//! mid-experiment.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common;
use crate::common::rest::{call, key_and_cookie, Answer};
use crate::common::site::Site;

/// A template whose job charts `loss` = (x − 0.3)² + a penalty per
/// optimizer + 1/(step + 1) for `steps` steps, `pause` seconds apart.
fn bowl_template(python: &str) -> Value {
    let sdk = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk/python");
    json!({
        "name": "bowl",
        "description": "A bowl whose bottom is at x = 0.3",
        "parameters": [
            {"name": "x", "type": "float", "min": 0.0, "max": 1.0, "default": 0.5},
            {"name": "opt", "type": "enum", "choices": ["adam", "sgd", "rmsprop"], "default": "sgd"},
            {"name": "steps", "type": "int", "min": 1, "max": 50, "default": 3},
            {"name": "pause", "type": "float", "min": 0.0, "max": 5.0, "default": 0.0},
        ],
        "job": {
            "command": [python, "-c",
                "import time, paddlecloud\n\
                 penalty = {'adam': 0.0, 'sgd': 5.0, 'rmsprop': 10.0}['{{opt}}']\n\
                 for i in range({{steps}}):\n    \
                     paddlecloud.draw_board(({{x}} - 0.3) ** 2 + penalty + 1.0 / (i + 1), 'loss', step=i)\n    \
                     assert paddlecloud.flush_board()\n    \
                     time.sleep({{pause}})\n"],
            "num_trainers": 1,
            "trainer": {"cpu": "250m", "memory": "256Mi"},
            "env": [{"name": "PYTHONPATH", "value": sdk}],
        }
    })
}

/// What trial `values` reports last after `steps` steps.
fn bowl_loss(values: &Value, steps: i64) -> f64 {
    let x = values["x"].as_f64().unwrap_or(0.5);
    let penalty = match values["opt"].as_str().unwrap_or("sgd") {
        "adam" => 0.0,
        "sgd" => 5.0,
        _ => 10.0,
    };
    (x - 0.3).powi(2) + penalty + 1.0 / steps as f64
}

/// A random search over `x` in [0, 1] of `template` for the lowest `loss`.
fn x_search(name: &str, template: &str, max_trials: u32, parallel_trials: u32) -> Value {
    json!({
        "name": name,
        "template": template,
        "parameters": [{"name": "x", "type": "float", "min": 0.0, "max": 1.0}],
        "objective": {"metric": "loss", "direction": "minimize"},
        "algorithm": {"type": "random"},
        "max_trials": max_trials,
        "parallel_trials": parallel_trials,
    })
}

/// Saves `template`, which must be accepted.
async fn save_template(site: &Site, key: &str, template: Value) {
    let saved = post(site, key, "/api/v1/templates", template).await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
}

async fn post(site: &Site, key: &str, path: &str, body: Value) -> Answer {
    call(site, Method::POST, path, Some(key), Some(body)).await
}

async fn get(site: &Site, key: &str, path: &str) -> Answer {
    call(site, Method::GET, path, Some(key), None).await
}

/// The experiment `name` once `done` says so of it (within `secs`).
async fn wait_for(
    site: &Site,
    key: &str,
    name: &str,
    secs: u64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let e = get(site, key, &format!("/api/v1/experiments/{name}"))
            .await
            .json();
        if done(&e) {
            return e;
        }
        assert!(Instant::now() < deadline, "not there in {secs} s: {e:#}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn statuses(e: &Value) -> Vec<String> {
    e["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap().to_owned())
        .collect()
}

/// A console on a socket (trials post their points back) with `bowl`
/// saved in account `account`; its key, or `None` without the test venv.
async fn bowl_site(account: &str) -> Option<(Site, String)> {
    let Some(python) = common::metric_logs::python() else {
        eprintln!("skipping: no test venv (run scripts/setup.sh test)");
        return None;
    };
    let (site, _) = common::site::on_socket(|config, _, _| config).await;
    let (key, _) = key_and_cookie(&site, account).await;
    save_template(&site, &key, bowl_template(&python.display().to_string())).await;
    Some((site, key))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_runs_its_trials_as_template_jobs_and_finds_the_best_then_runs_more_when_extended(
) {
    let Some((site, key)) = bowl_site("searcher").await else {
        return;
    };
    let created = post(
        &site,
        &key,
        "/api/v1/experiments",
        json!({
            "name": "bowl-search",
            "template": "bowl",
            "values": {"steps": 3},
            "parameters": [
                {"name": "x", "type": "float", "min": 0.0, "max": 1.0},
                {"name": "opt", "type": "enum", "choices": ["adam", "sgd"]},
            ],
            "objective": {"metric": "loss", "direction": "minimize"},
            "algorithm": {"type": "random"},
            "max_trials": 4,
            "parallel_trials": 2,
        }),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(
        created.headers["location"],
        "/api/v1/experiments/bowl-search"
    );
    let e = created.json();
    assert_eq!(e["status"], "running");
    assert_eq!(e["spec"]["template_version"], 1, "the version is pinned");
    assert!(e["spec"]["seed"].is_u64(), "a seed is drawn: {e}");

    let e = wait_for(&site, &key, "bowl-search", 120, |e| {
        e["status"] != "running"
    })
    .await;
    assert_eq!(e["status"], "succeeded", "{e:#}");
    assert_eq!(e["message"], "All 4 trials ran.");
    let trials = e["trials"].as_array().unwrap();
    let numbers: Vec<u64> = trials
        .iter()
        .map(|t| t["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3, 4]);
    for t in trials {
        assert_eq!(t["status"], "succeeded", "{t}");
        let values = &t["values"];
        let x = values["x"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&x), "{t}");
        let objective = t["objective"].as_f64().unwrap();
        assert!(
            (objective - bowl_loss(values, 3)).abs() < 1e-9,
            "the objective is the last loss the job wrote: {t}"
        );
        assert_eq!(t["step"], 2);
        // Each trial is an ordinary job that records its experiment and
        // its values as a template run does.
        let job = get(
            &site,
            &key,
            &format!("/api/v1/jobs/{}", t["job"].as_str().unwrap()),
        )
        .await;
        assert_eq!(job.status, StatusCode::OK, "{}", job.body);
        let job = job.json();
        assert_eq!(
            job["spec"]["experiment"],
            json!({"name": "bowl-search", "trial": t["number"]})
        );
        let run = &job["spec"]["template"];
        assert_eq!(run["name"], "bowl");
        assert_eq!(run["values"]["x"], values["x"]);
        assert_eq!(run["values"]["opt"], values["opt"]);
        assert_eq!(run["values"]["steps"], 3);
        assert_eq!(job["status"], "succeeded");
    }
    let lowest = trials
        .iter()
        .min_by(|a, b| {
            a["objective"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["objective"].as_f64().unwrap())
        })
        .unwrap();
    let best = get(&site, &key, "/api/v1/experiments/bowl-search/best").await;
    assert_eq!(best.status, StatusCode::OK, "{}", best.body);
    assert_eq!(best.json()["number"], lowest["number"]);

    let list = get(&site, &key, "/api/v1/experiments").await.json();
    let summary = &list["experiments"][0];
    assert_eq!(summary["name"], "bowl-search");
    assert_eq!(summary["trials"]["succeeded"], 4);
    assert_eq!(summary["best"]["number"], lowest["number"]);
    assert!(summary.get("spec").is_none(), "the list is a summary");

    // Its trials compare like any runs: their values and final loss a row
    // each, their origin the experiment and trial.
    let csv = get(
        &site,
        &key,
        "/api/v1/jobs/compare.csv?jobs=bowl-search-t1,bowl-search-t2&diff=1",
    )
    .await;
    assert_eq!(csv.status, StatusCode::OK, "{}", csv.body);
    let lines: Vec<&str> = csv.body.lines().collect();
    assert!(lines[0].contains("params.x"), "{}", csv.body);
    assert!(lines[0].ends_with("metrics.loss"), "{}", csv.body);
    assert!(
        lines[1].starts_with("bowl-search-t1,succeeded,console,experiment bowl-search · trial 1,"),
        "{}",
        csv.body
    );
    let loss: f64 = lines[1].rsplit(',').next().unwrap().parse().unwrap();
    assert!(
        (loss - trials[0]["objective"].as_f64().unwrap()).abs() < 1e-9,
        "{}",
        csv.body
    );

    // Two more: it runs again and the new trials try new values.
    let more = post(
        &site,
        &key,
        "/api/v1/experiments/bowl-search/extend",
        json!({"more": 2}),
    )
    .await;
    assert_eq!(more.status, StatusCode::OK, "{}", more.body);
    assert_eq!(more.json()["status"], "running");
    let e = wait_for(&site, &key, "bowl-search", 120, |e| {
        e["status"] != "running"
    })
    .await;
    assert_eq!(e["status"], "succeeded", "{e:#}");
    assert_eq!(e["message"], "All 6 trials ran.");
    let trials = e["trials"].as_array().unwrap();
    for new in &trials[4..] {
        assert!(
            trials[..4].iter().all(|old| old["values"] != new["values"]),
            "a new trial repeats old values: {new}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poor_trials_are_stopped_early_against_the_median_of_the_finished_ones() {
    let Some((site, key)) = bowl_site("pruner").await else {
        return;
    };
    // A grid over the optimizer alone, in the order a seed gives: the seed
    // is picked so that the best (adam) runs first; the two worse ones are
    // then poor from their first point.
    let space: app::models::SearchSpace = serde_json::from_value(json!({
        "parameters": [{"name": "opt", "type": "enum", "choices": ["adam", "sgd", "rmsprop"]}]
    }))
    .unwrap();
    let grid = app::models::Algorithm::Grid { points: 5 };
    let seed = (0..100u64)
        .find(|&seed| {
            let first = server::experiments::search::suggest(
                &space,
                &grid,
                app::models::Direction::Minimize,
                seed,
                1,
                &[],
                &[],
            );
            first.is_some_and(|v| v["opt"] == "adam")
        })
        .unwrap();
    let created = post(
        &site,
        &key,
        "/api/v1/experiments",
        json!({
            "name": "pruned",
            "template": "bowl",
            "values": {"steps": 10, "pause": 0.4, "x": 0.3},
            "parameters": space.parameters,
            "objective": {"metric": "loss", "direction": "minimize"},
            "algorithm": {"type": "grid"},
            "early_stopping": {"type": "median", "n_startup_trials": 1},
            "max_trials": 5,
            "parallel_trials": 1,
            "seed": seed,
        }),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let e = wait_for(&site, &key, "pruned", 180, |e| e["status"] != "running").await;
    assert_eq!(e["status"], "succeeded", "{e:#}");
    assert_eq!(statuses(&e), ["succeeded", "pruned", "pruned"], "{e:#}");
    let trials = e["trials"].as_array().unwrap();
    assert_eq!(trials[0]["values"]["opt"], "adam");
    assert_eq!(trials[0]["step"], 9);
    for t in &trials[1..] {
        let why = t["message"].as_str().unwrap();
        assert!(
            why.starts_with("Stopped early: At step"),
            "the trial says why it was stopped: {t}"
        );
        assert!(
            t["step"].as_i64().unwrap() < 9,
            "stopped before its end: {t}"
        );
        let job = get(
            &site,
            &key,
            &format!("/api/v1/jobs/{}", t["job"].as_str().unwrap()),
        )
        .await
        .json();
        assert_eq!(job["status"], "stopped", "its job was stopped: {job}");
    }
    assert_eq!(
        e["message"],
        "Every combination of the grid was tried (3 trials)."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trials_over_the_quota_wait_saying_why_and_a_paused_experiment_starts_none() {
    let Some((site, key)) = bowl_site("tight").await else {
        return;
    };
    let account = site.owner("tight").await.account;
    sqlx::query(
        "INSERT INTO account_quotas (account_id, cpu_millis, memory_bytes, gpu, max_jobs, \
         updated_at, updated_by) VALUES ($1, NULL, NULL, NULL, 1, 0, 'test')",
    )
    .bind(account.id)
    .execute(&site.db.pool)
    .await
    .unwrap();
    let created = post(
        &site,
        &key,
        "/api/v1/experiments",
        json!({
            "name": "tight",
            "template": "bowl",
            "values": {"steps": 8, "pause": 0.5},
            "parameters": [{"name": "x", "type": "float", "min": 0.0, "max": 1.0}],
            "objective": {"metric": "loss", "direction": "minimize"},
            "max_trials": 2,
            "parallel_trials": 2,
        }),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    // One job at a time: the second trial waits, and says for what.
    let e = wait_for(&site, &key, "tight", 60, |e| {
        e["trials"].as_array().is_some_and(|t| {
            t.len() == 2
                && t.iter().any(|t| {
                    t["status"] == "waiting"
                        && t["message"]
                            .as_str()
                            .is_some_and(|m| m.starts_with("Waiting for quota: Over"))
                })
        })
    })
    .await;
    assert!(statuses(&e).contains(&"running".to_owned()), "{e:#}");
    // Paused: the waiting trial stays waiting; the running one goes on.
    let paused = post(&site, &key, "/api/v1/experiments/tight/pause", json!({})).await;
    assert_eq!(paused.status, StatusCode::OK, "{}", paused.body);
    assert_eq!(paused.json()["status"], "paused");
    let again = post(&site, &key, "/api/v1/experiments/tight/pause", json!({})).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
    let e = wait_for(&site, &key, "tight", 60, |e| {
        e["trials"][0]["status"] == "succeeded"
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let e2 = get(&site, &key, "/api/v1/experiments/tight").await.json();
    assert_eq!(statuses(&e2), ["succeeded", "waiting"], "{e:#} {e2:#}");
    assert_eq!(e2["status"], "paused");
    // Resumed: the room the first left lets the second run.
    let resumed = post(&site, &key, "/api/v1/experiments/tight/resume", json!({})).await;
    assert_eq!(resumed.status, StatusCode::OK, "{}", resumed.body);
    let e = wait_for(&site, &key, "tight", 90, |e| e["status"] != "running").await;
    assert_eq!(e["status"], "succeeded", "{e:#}");
    assert_eq!(statuses(&e), ["succeeded", "succeeded"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_trials_end_the_experiment_past_its_tolerance_and_run_again_on_request() {
    let Some((site, key)) = bowl_site("failing").await else {
        return;
    };
    // A program that fails above x = 0.5 and writes no point below it (a
    // trial that ends without its objective fails too).
    let python = common::metric_logs::python().unwrap();
    let mut template = bowl_template(&python.display().to_string());
    template["name"] = json!("brittle");
    template["job"]["command"][2] = json!("import sys\nsys.exit(1 if {{x}} > 0.5 else 0)\n");
    save_template(&site, &key, template).await;
    let mut spec = x_search("brittle", "brittle", 3, 1);
    spec["max_failed_trials"] = json!(1);
    let created = post(&site, &key, "/api/v1/experiments", spec).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let e = wait_for(&site, &key, "brittle", 90, |e| e["status"] != "running").await;
    assert_eq!(e["status"], "failed", "{e:#}");
    assert_eq!(
        e["message"],
        "2 trials failed, more than the 1 it tolerates."
    );
    assert_eq!(statuses(&e), ["failed", "failed"]);
    for t in e["trials"].as_array().unwrap() {
        let why = t["message"].as_str().unwrap();
        assert!(
            why.starts_with("Its job failed")
                || why.starts_with("Its job ended without a value of loss"),
            "{t}"
        );
    }
    let extend = post(
        &site,
        &key,
        "/api/v1/experiments/brittle/extend",
        json!({"more": 1}),
    )
    .await;
    assert_eq!(extend.status, StatusCode::CONFLICT, "{}", extend.body);
    // Run again: each failed trial's values once more, as new trials.
    let retried = post(&site, &key, "/api/v1/experiments/brittle/retry", json!({})).await;
    assert_eq!(retried.status, StatusCode::OK, "{}", retried.body);
    let r = retried.json();
    assert_eq!(r["status"], "running");
    let trials = r["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 4);
    assert_eq!(trials[2]["values"], trials[0]["values"]);
    assert_eq!(trials[3]["values"], trials[1]["values"]);
    let e = wait_for(&site, &key, "brittle", 90, |e| e["status"] != "running").await;
    // They fail again (the program is the same): the experiment fails.
    assert_eq!(e["status"], "failed", "{e:#}");
    let none = post(&site, &key, "/api/v1/experiments/brittle/stop", json!({})).await;
    assert_eq!(none.status, StatusCode::CONFLICT, "{}", none.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_experiment_is_refused_naming_the_field_and_another_accounts_is_not_found() {
    let site = common::site::site().await;
    let (key, _) = key_and_cookie(&site, "careful").await;
    save_template(&site, &key, bowl_template("python3")).await;
    let good = x_search("fine", "bowl", 2, 1);
    let with = |change: Value| {
        let mut body = good.clone();
        for (k, v) in change.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let cases = [
        (with(json!({"template": "nowhere"})), "template"),
        (
            with(json!({"parameters": [{"name": "nope", "type": "bool"}]})),
            "parameters[0].name",
        ),
        (
            with(json!({"parameters": [{"name": "x", "type": "float", "min": 0.0, "max": 2.0}]})),
            "parameters[0].max",
        ),
        (
            with(json!({"parameters": [{"name": "x", "type": "float", "min": 0.5, "max": 0.1}]})),
            "parameters[0].min",
        ),
        (with(json!({"values": {"steps": 99}})), "values.steps"),
        (with(json!({"values": {"x": 0.2}})), "values.x"),
        (with(json!({"max_trials": 0})), "max_trials"),
        (with(json!({"parallel_trials": 33})), "parallel_trials"),
        (
            with(json!({"name": "a-name-that-is-far-too-long-for-its-trials-jobs"})),
            "name",
        ),
        (
            with(json!({"objective": {"metric": "", "direction": "minimize"}})),
            "objective.metric",
        ),
    ];
    for (body, field) in cases {
        let refused = post(&site, &key, "/api/v1/experiments", body.clone()).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            refused.body
        );
        assert_eq!(
            refused.error().1.as_deref(),
            Some(field),
            "{body}: {}",
            refused.body
        );
    }
    let not_json = call(
        &site,
        Method::POST,
        "/api/v1/experiments",
        Some(&key),
        Some(json!("x")),
    )
    .await;
    assert_eq!(
        not_json.status,
        StatusCode::BAD_REQUEST,
        "{}",
        not_json.body
    );
    assert!(
        get(&site, &key, "/api/v1/experiments").await.json()["experiments"]
            .as_array()
            .unwrap()
            .is_empty(),
        "nothing refused was recorded"
    );

    let made = post(&site, &key, "/api/v1/experiments", good.clone()).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let twice = post(&site, &key, "/api/v1/experiments", good.clone()).await;
    assert_eq!(twice.status, StatusCode::CONFLICT, "{}", twice.body);
    assert!(twice.body.contains("An experiment"), "{}", twice.body);
    let zero = post(
        &site,
        &key,
        "/api/v1/experiments/fine/extend",
        json!({"more": 0}),
    )
    .await;
    assert_eq!(zero.status, StatusCode::BAD_REQUEST, "{}", zero.body);
    assert_eq!(zero.error().1.as_deref(), Some("more"));
    let resume = post(&site, &key, "/api/v1/experiments/fine/resume", json!({})).await;
    assert_eq!(resume.status, StatusCode::CONFLICT, "{}", resume.body);

    let (other, _) = key_and_cookie(&site, "elsewhere").await;
    for path in ["/api/v1/experiments/fine", "/api/v1/experiments/fine/best"] {
        assert_eq!(get(&site, &other, path).await.status, StatusCode::NOT_FOUND);
    }
    for action in ["pause", "resume", "stop", "retry"] {
        let path = format!("/api/v1/experiments/fine/{action}");
        let answer = post(&site, &other, &path, json!({})).await;
        assert_eq!(
            answer.status,
            StatusCode::NOT_FOUND,
            "{path}: {}",
            answer.body
        );
    }
    assert!(
        get(&site, &other, "/api/v1/experiments").await.json()["experiments"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let stopped = post(&site, &key, "/api/v1/experiments/fine/stop", json!({})).await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
    assert_eq!(stopped.json()["status"], "stopped");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_librarys_example_experiment_is_accepted_against_the_shipped_fit_a_line() {
    let site = common::site::site().await;
    let (key, _) = key_and_cookie(&site, "reader").await;
    let text = include_str!("../../../library/experiments/fit-a-line-search.yaml");
    let spec: Value = serde_norway::from_str(text).unwrap();
    let created = post(&site, &key, "/api/v1/experiments", spec).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let e = created.json();
    assert_eq!(e["spec"]["template"], "paddlecloud/fit-a-line");
    assert_eq!(e["spec"]["parallel_trials"], 2);
    let stopped = post(
        &site,
        &key,
        "/api/v1/experiments/fit-a-line-search/stop",
        json!({}),
    )
    .await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
    for t in stopped.json()["trials"].as_array().unwrap() {
        assert_eq!(t["status"], "stopped", "{t}");
    }
}

/// A console on `db` served at a fresh loopback socket, its leases short
/// (a crashed holder's is taken over within seconds).
async fn console_on(db: &common::TestDb) -> server::console::Console {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let config = server::console::Config {
        public_url: Some(url),
        lease_ttl: Duration::from_secs(2),
        ..common::site::config(db)
    };
    let console = server::console::Console::build(config).await.unwrap();
    listener.set_nonblocking(true).unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let router = console.router();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    console
}

#[test]
fn killing_the_console_mid_experiment_loses_no_trial_and_submits_none_twice() {
    let Some(python) = common::metric_logs::python() else {
        eprintln!("skipping: no test venv (run scripts/setup.sh test)");
        return;
    };
    // The first console: its runtime is torn down while trials run, as a
    // crash would.
    let first = tokio::runtime::Runtime::new().unwrap();
    let db = first.block_on(common::sqlite());
    let account = first.block_on(async {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO accounts (name, namespace, created_at) VALUES ('ann', 'pc-ann', 0) \
             RETURNING id",
        )
        .fetch_one(&db.pool)
        .await
        .unwrap();
        let account = app::models::Account {
            id,
            name: "ann".into(),
            namespace: "pc-ann".into(),
            created_at: 0,
        };
        let me = common::user_in(&db.pool, &account).await;
        let console = console_on(&db).await;
        let services = console.services.clone();
        let template =
            serde_json::from_value(bowl_template(&python.display().to_string())).unwrap();
        services.templates.save(&me, template).await.unwrap();
        let spec = serde_json::from_value(json!({
            "name": "crash",
            "template": "bowl",
            "values": {"steps": 6, "pause": 0.5},
            "parameters": [{"name": "x", "type": "float", "min": 0.0, "max": 1.0}],
            "objective": {"metric": "loss", "direction": "minimize"},
            "algorithm": {"type": "random"},
            "max_trials": 5,
            "parallel_trials": 2,
            "max_failed_trials": 5,
        }))
        .unwrap();
        let who = app::ports::Principal::new(me.clone(), app::ports::Credential::AccessKey(0));
        app::use_cases::experiments::create_experiment(&services, &who, spec)
            .await
            .unwrap();
        // Until two trials run (and at least one point is in).
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let e = services.experiments.get(&account, "crash").await.unwrap();
            let running = e
                .trials
                .iter()
                .filter(|t| t.status == app::models::TrialStatus::Running)
                .count();
            if running == 2 {
                break;
            }
            assert!(Instant::now() < deadline, "no two trials ran: {e:#?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        account
    });
    first.shutdown_background();

    // The console starts again on the same database: its controller takes
    // the experiment over once the dead one's lease has run out.
    let second = tokio::runtime::Runtime::new().unwrap();
    second.block_on(async {
        let console = console_on(&db).await;
        let services = console.services.clone();
        let deadline = Instant::now() + Duration::from_secs(150);
        let e = loop {
            let e = services.experiments.get(&account, "crash").await.unwrap();
            if !e.status.is_active() {
                break e;
            }
            assert!(Instant::now() < deadline, "never ended: {e:#?}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        assert_eq!(e.status, app::models::ExperimentStatus::Succeeded, "{e:#?}");
        // Every trial claimed is there, numbered without a gap, and none is
        // left waiting or running.
        let numbers: Vec<u32> = e.trials.iter().map(|t| t.number).collect();
        assert_eq!(numbers, (1..=5).collect::<Vec<_>>(), "{e:#?}");
        assert!(e.trials.iter().all(|t| !t.status.is_active()), "{e:#?}");
        // The trials that ran across the crash ended as the local executor
        // ends every job a restart finds (failed, saying so); the others
        // succeeded.
        for t in &e.trials {
            match t.status {
                app::models::TrialStatus::Succeeded => assert!(t.objective.is_some()),
                app::models::TrialStatus::Failed => {
                    assert!(t.message.contains("console restarted"), "{t:?}")
                }
                other => panic!("trial {} is {other:?}: {t:?}", t.number),
            }
        }
        // One job per trial, and no other: none was submitted twice.
        let query = app::models::JobQuery {
            per_page: Some(100),
            ..Default::default()
        };
        let jobs = services.cluster.list_jobs(&account, &query).await.unwrap();
        let mut marked: Vec<(String, u32)> = jobs
            .jobs
            .iter()
            .filter_map(|j| {
                j.spec
                    .experiment
                    .as_ref()
                    .map(|x| (j.name.clone(), x.trial))
            })
            .collect();
        marked.sort_by_key(|(_, n)| *n);
        let expected: Vec<(String, u32)> =
            e.trials.iter().map(|t| (t.job.clone(), t.number)).collect();
        assert_eq!(marked, expected);
    });
}

/// The same controller on the Kubernetes backend (the real node of
/// `scripts/kube-test-cluster.sh`): trials become the cluster's jobs, their
/// pods in containers labelled with the experiment and trial, their points
/// posted back by the SDK the console mounts. Skipped without the node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiments_trials_run_as_kubernetes_jobs_labelled_by_experiment_and_trial_on_a_real_node(
) {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, ListParams};
    let Some(crate::real_node::NodeConsole { site, key, .. }) =
        crate::real_node::NodeConsole::start("ke", "an experiment").await
    else {
        return;
    };
    let Some((_, client)) = common::node::client().await else {
        return;
    };
    let template = json!({
        "name": "kdip",
        "parameters": [{"name": "x", "type": "float", "min": 0.0, "max": 1.0, "default": 0.5}],
        "job": {
            "image": "paddlepaddle/paddle:3.3.1",
            "command": ["python3", "-c",
                "import time, paddlecloud\nfor i in range(3):\n    paddlecloud.draw_board(({{x}} - 0.3) ** 2 + 1.0 / (i + 1), 'loss', step=i)\n    assert paddlecloud.flush_board()\n    time.sleep(1)\n"],
            "num_trainers": 1,
            "trainer": {"cpu": "250m", "memory": "512Mi"},
        }
    });
    save_template(&site, &key, template).await;
    let created = post(
        &site,
        &key,
        "/api/v1/experiments",
        x_search("kdip-search", "kdip", 2, 2),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let pods = Api::<Pod>::all(client.clone());
    let mine = ListParams::default().labels("paddlecloud.org/experiment=kdip-search");
    let mut trials_seen = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(240);
    let e = loop {
        for pod in pods.list(&mine).await.unwrap().items {
            trials_seen.insert(pod.metadata.labels.unwrap()["paddlecloud.org/trial"].clone());
        }
        let e = get(&site, &key, "/api/v1/experiments/kdip-search")
            .await
            .json();
        if e["status"] != "running" {
            break e;
        }
        assert!(Instant::now() < deadline, "it never ended: {e:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(e["status"], "succeeded", "{e:#}");
    assert_eq!(statuses(&e), ["succeeded", "succeeded"]);
    for t in e["trials"].as_array().unwrap() {
        let expected = (t["values"]["x"].as_f64().unwrap() - 0.3).powi(2) + 1.0 / 3.0;
        assert!(
            (t["objective"].as_f64().unwrap() - expected).abs() < 1e-6,
            "{t}"
        );
    }
    assert_eq!(
        trials_seen.into_iter().collect::<Vec<_>>(),
        ["1", "2"],
        "each trial's pod carries its labels"
    );
}
