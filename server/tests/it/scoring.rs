//! Batch scoring on the local executor, end to end, with a real PaddlePaddle
//! model and the shipped paddle-cpu environment: a model alias over a
//! dataset's saved version on two replicas, the predictions written as a
//! new version of an output dataset and counted as progress; a bad input
//! file fails its replica while the other replica's work stays, and a retry
//! redoes only what is missing (the replicas' own words say so); a good
//! version scores completely and its outputs are the model's answers;
//! refusals name their field; the model version's lineage says what it
//! scored; hooks given with the form score a model that is not a paddle
//! model at all. Needs a Python with paddlepaddle (skipped without one unless
//! `PADDLECLOUD_REQUIRE_PADDLE=1`).

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::rest::{call, key_and_cookie, Answer};
use crate::common::site::Site;
use crate::serving::{model_version, paddle_python, put_file, tiny_model};

pub(crate) async fn post(site: &Site, key: &str, path: &str, body: Value) -> Answer {
    call(site, Method::POST, path, Some(key), Some(body)).await
}

pub(crate) async fn get(site: &Site, key: &str, path: &str) -> Answer {
    call(site, Method::GET, path, Some(key), None).await
}

/// Waits (the first scoring may build paddle-cpu from pip's cache) until
/// job `name` ends; returns it.
pub(crate) async fn ended(site: &Site, key: &str, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let job = get(site, key, &format!("/api/v1/jobs/{name}")).await.json();
        if !["pending", "running"].contains(&job["status"].as_str().unwrap_or("")) {
            return job;
        }
        assert!(Instant::now() < deadline, "{name} did not end: {job}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

pub(crate) async fn log(site: &Site, key: &str, job: &str, pod: &str) -> String {
    get(site, key, &format!("/api/v1/jobs/{job}/pods/{pod}/log"))
        .await
        .body
}

/// A dataset `name` of `account` holding `files`, saved as its version 1.
pub(crate) async fn saved_dataset(
    site: &Site,
    key: &str,
    account: &str,
    name: &str,
    files: &[(&str, &str)],
) {
    let made = post(site, key, "/api/v1/datasets", json!({"name": name})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    for (path, text) in files {
        let url = format!("/api/v1/datasets/{account}/{name}/files/{path}");
        put_file(site, key, &url, text.as_bytes().to_vec()).await;
    }
    let saved = post(
        site,
        key,
        &format!("/api/v1/datasets/{account}/{name}/versions"),
        json!({}),
    )
    .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
}

/// The first output of each line of a predictions file.
pub(crate) fn answers(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            v["outputs"]
                .as_object()
                .unwrap()
                .values()
                .next()
                .unwrap()
                .clone()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_alias_scores_a_dataset_version_on_two_replicas_and_a_retry_redoes_only_what_is_missing(
) {
    let Some(python) = paddle_python() else {
        return;
    };
    let (site, _) = crate::common::site::on_socket(|mut config, _, _| {
        config.environments_dir = crate::environments::shared_environments();
        config
    })
    .await;
    let (key, cookie) = key_and_cookie(&site, "scorers").await;
    let dir = tiny_model(python);
    let files: Vec<(&str, Vec<u8>)> = ["inference.json", "inference.pdiparams"]
        .iter()
        .map(|f| (*f, std::fs::read(dir.join(f)).unwrap()))
        .collect();
    model_version(&site, &key, "scorers", "tiny", &files).await;
    let alias = call(
        &site,
        Method::PUT,
        "/api/v1/models/scorers/tiny/aliases/production",
        Some(&key),
        Some(json!({"version": 1})),
    )
    .await;
    assert_eq!(alias.status, StatusCode::OK, "{}", alias.body);
    // Sorted: a.jsonl and c.csv go to replica 0, b.csv to replica 1; c.csv's
    // second row is not numbers, which fails its replica.
    saved_dataset(
        &site,
        &key,
        "scorers",
        "rows",
        &[
            ("a.jsonl", "{\"inputs\": {\"x\": [[1, 2, 3, 4]]}}\n"),
            ("b.csv", "a,b,c,d\n1,2,3,4\n0,0,0,0\n2,1,0,-1\n"),
            ("c.csv", "1,2,3,4\nx,y,z,w\n"),
            ("README.md", "not scored"),
        ],
    )
    .await;

    // Refusals name the field at fault, and leave nothing behind.
    for (body, field) in [
        (
            json!({"model": "nope", "dataset": "rows", "output": "scores"}),
            "model",
        ),
        (
            json!({"model": "tiny@staging", "dataset": "rows", "output": "scores"}),
            "model",
        ),
        (
            json!({"model": "tiny", "dataset": "rows:9", "output": "scores"}),
            "dataset",
        ),
        (
            json!({"model": "tiny", "dataset": "rows:v1", "output": "scores"}),
            "dataset",
        ),
        (
            json!({"model": "tiny", "dataset": "rows", "output": "Not A Name"}),
            "output",
        ),
        (
            json!({"model": "tiny", "dataset": "rows", "output": "scores", "replicas": 0}),
            "replicas",
        ),
    ] {
        let refused = post(&site, &key, "/api/v1/scorings", body.clone()).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            refused.body
        );
        assert_eq!(
            refused.json()["error"]["field"],
            field,
            "{body}: {}",
            refused.body
        );
    }
    let none = get(&site, &key, "/api/v1/datasets/scorers/scores").await;
    assert_eq!(none.status, StatusCode::NOT_FOUND, "{}", none.body);

    let started = post(
        &site,
        &key,
        "/api/v1/scorings",
        json!({"model": "tiny@production", "dataset": "rows", "output": "scores",
               "replicas": 2, "cpu": "500m", "memory": "1Gi"}),
    )
    .await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let job = started.json();
    let first = job["name"].as_str().unwrap().to_owned();
    assert!(first.starts_with("score-tiny-"), "{job}");
    let spec = &job["spec"];
    assert_eq!(spec["models"], json!(["scorers/tiny:1"]), "{spec}");
    assert_eq!(spec["datasets"], json!(["scorers/rows:1"]), "{spec}");
    assert_eq!(spec["num_trainers"], 2, "{spec}");
    assert_eq!(spec["scoring"]["output"], "scorers/scores", "{spec}");
    assert_eq!(spec["scoring"]["version"], 1, "{spec}");

    let done = ended(&site, &key, &first).await;
    let (log0, log1) = (
        log(&site, &key, &first, "trainer-0").await,
        log(&site, &key, &first, "trainer-1").await,
    );
    assert_eq!(done["status"], "failed", "{done}\n{log0}\n{log1}");
    assert!(log0.contains("c.csv: row 2 is not numbers"), "{log0}");
    assert!(log1.contains("1/1 files"), "{log1}");
    let progress = get(&site, &key, &format!("/api/v1/scorings/{first}")).await;
    assert_eq!(progress.status, StatusCode::OK, "{}", progress.body);
    let p = progress.json();
    assert_eq!(
        (
            &p["inputs"],
            &p["scored"],
            &p["skipped"],
            &p["output_state"]
        ),
        (&json!(3), &json!(2), &json!(1), &json!("uploading")),
        "{p}"
    );
    let detail = get(&site, &key, &format!("/api/v1/jobs/{first}/detail"))
        .await
        .json();
    assert_eq!(detail["scoring"]["scored"], 2, "{detail}");

    // The retry skips what is there: replica 1 has nothing left, replica 0
    // only c.csv, which fails again and says why.
    let retried = post(
        &site,
        &key,
        &format!("/api/v1/scorings/{first}/retry"),
        json!({}),
    )
    .await;
    assert_eq!(retried.status, StatusCode::CREATED, "{}", retried.body);
    let second = retried.json()["name"].as_str().unwrap().to_owned();
    let used = &retried.json()["spec"]["scoring"];
    assert_eq!(
        (&used["attempt"], &used["version"], &used["first"]),
        (&json!(2), &json!(1), &json!(first))
    );
    ended(&site, &key, &second).await;
    let (log0, log1) = (
        log(&site, &key, &second, "trainer-0").await,
        log(&site, &key, &second, "trainer-1").await,
    );
    assert!(log0.contains("2 of 3 file(s), 1 already scored"), "{log0}");
    assert!(log0.contains("c.csv: row 2 is not numbers"), "{log0}");
    assert!(log1.contains("1 of 3 file(s), 1 already scored"), "{log1}");
    let again = get(&site, &key, &format!("/api/v1/scorings/{second}"))
        .await
        .json();
    assert_eq!(
        (&again["scored"], &again["status"]),
        (&json!(2), &json!("failed")),
        "{again}"
    );

    // Without the bad file, version 2 scores whole into the next version.
    let gone = call(
        &site,
        Method::DELETE,
        "/api/v1/datasets/scorers/rows/files/c.csv",
        Some(&key),
        None,
    )
    .await;
    assert!(gone.status.is_success(), "{}", gone.body);
    let v2 = post(
        &site,
        &key,
        "/api/v1/datasets/scorers/rows/versions",
        json!({}),
    )
    .await;
    assert_eq!(v2.json()["version"], 2, "{}", v2.body);
    let started = post(
        &site,
        &key,
        "/api/v1/scorings",
        json!({"name": "score-v2", "model": "tiny", "dataset": "rows:2", "output": "scores", "replicas": 2}),
    )
    .await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let done = ended(&site, &key, "score-v2").await;
    assert_eq!(
        done["status"],
        "succeeded",
        "{done}\n{}",
        log(&site, &key, "score-v2", "trainer-0").await
    );
    let p = get(&site, &key, "/api/v1/scorings/score-v2").await.json();
    assert_eq!(
        (
            &p["inputs"],
            &p["scored"],
            &p["output_state"],
            &p["version"]
        ),
        (&json!(2), &json!(2), &json!("ready"), &json!(2)),
        "{p}"
    );
    let b = get(
        &site,
        &key,
        "/api/v1/datasets/scorers/scores/files/b.csv.predictions.jsonl?version=2",
    )
    .await;
    assert_eq!(b.status, StatusCode::OK, "{}", b.body);
    assert_eq!(
        answers(&b.body),
        vec![json!([0.5, 12.0]), json!([0.5, -1.0]), json!([3.5, -2.0])],
        "{}",
        b.body
    );
    let versions = get(&site, &key, "/api/v1/datasets/scorers/scores/versions")
        .await
        .json();
    assert_eq!(versions[0]["job"], "score-v2", "{versions}");
    let refused = post(&site, &key, "/api/v1/scorings/score-v2/retry", json!({})).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
    assert!(
        refused.body.contains("Every file is scored"),
        "{}",
        refused.body
    );
    let plain = post(
        &site,
        &key,
        "/api/v1/jobs",
        crate::common::rest::spec("plain", "true"),
    )
    .await;
    assert_eq!(plain.status, StatusCode::CREATED, "{}", plain.body);
    let not = get(&site, &key, "/api/v1/scorings/plain").await;
    assert_eq!(not.status, StatusCode::NOT_FOUND, "{}", not.body);

    // The model version's page says what it scored; the output's lineage
    // says which job wrote which version; the job's page shows its progress.
    let html = site
        .page_ok(&cookie, "/models/scorers/tiny?version=1")
        .await;
    assert!(
        html.contains("cored into scorers/scores by job score-v2, score-tiny-"),
        "{html}"
    );
    let edges = get(
        &site,
        &key,
        "/api/v1/lineage?node=dataset%3Ascorers%2Fscores",
    )
    .await;
    assert_eq!(edges.status, StatusCode::OK, "{}", edges.body);
    assert!(
        edges.body.contains("\"relation\":\"wrote\""),
        "{}",
        edges.body
    );
    assert!(
        edges.body.contains("job:scorers/score-v2"),
        "{}",
        edges.body
    );
    let page = site.page_ok(&cookie, &format!("/jobs/{first}")).await;
    for part in [
        "2 of 3 files scored",
        "data-testid=\"scoring-retry\"",
        "scorers/scores:1",
    ] {
        assert!(page.contains(part), "{part} not in {page}");
    }
}

/// Hooks of a model that multiplies by the number in its `factor.txt`.
pub(crate) const SCALE_HOOKS: &str = "\
def load(model_dir):
    with open(model_dir + '/factor.txt') as f:
        return float(f.read())

def predict(state, inputs):
    return {'y': inputs['x'] * state}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_given_with_the_form_score_a_model_that_is_not_a_paddle_model() {
    if paddle_python().is_none() {
        return;
    }
    let (site, _) = crate::common::site::on_socket(|mut config, _, _| {
        config.environments_dir = crate::environments::shared_environments();
        config
    })
    .await;
    let (key, _) = key_and_cookie(&site, "hookers").await;
    model_version(
        &site,
        &key,
        "hookers",
        "scale",
        &[("factor.txt", b"3".to_vec())],
    )
    .await;
    saved_dataset(
        &site,
        &key,
        "hookers",
        "rows",
        &[(
            "a.jsonl",
            "{\"inputs\": {\"x\": [1, 2]}}\n{\"inputs\": {\"x\": [[5]]}}\n",
        )],
    )
    .await;
    let too_long = "#".repeat(app::models::MAX_SCORING_SCRIPT_BYTES + 1);
    let refused = post(
        &site,
        &key,
        "/api/v1/scorings",
        json!({"model": "scale", "dataset": "rows", "output": "scaled", "script": too_long}),
    )
    .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert_eq!(
        refused.json()["error"]["field"],
        "script",
        "{}",
        refused.body
    );

    let started = post(
        &site,
        &key,
        "/api/v1/scorings",
        json!({"name": "scaled", "model": "scale", "dataset": "rows", "output": "scaled",
               "cpu": "500m", "memory": "1Gi", "script": SCALE_HOOKS}),
    )
    .await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let done = ended(&site, &key, "scaled").await;
    let printed = log(&site, &key, "scaled", "trainer-0").await;
    assert_eq!(done["status"], "succeeded", "{done}\n{printed}");
    assert!(printed.contains("loaded by"), "{printed}");
    let out = get(
        &site,
        &key,
        "/api/v1/datasets/hookers/scaled/files/a.jsonl.predictions.jsonl?version=1",
    )
    .await;
    assert_eq!(out.status, StatusCode::OK, "{}", out.body);
    assert_eq!(
        answers(&out.body),
        vec![json!([3.0, 6.0]), json!([[15.0]])],
        "{}",
        out.body
    );
}
