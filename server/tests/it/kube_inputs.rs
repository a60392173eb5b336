//! Datasets and model versions in pods on the real node
//! (`server/src/kubernetes/inputs.rs`): at the variables a local replica
//! gets, read-only, fetched by an init step into the node's cache once per
//! revision, with the SDK importable beside them.

use crate::common;
use crate::real_node::{log, wait_for, NodeConsole};

use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{json, Value};

use common::rest::Endpoint;

/// The node's cache, as the tests' console leaves it (`--kube-input-cache`).
const NODE_CACHE: &str = server::kubernetes::inputs::DEFAULT_NODE_DIR;

async fn call_ok(
    to: &Endpoint<'_>,
    key: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let got = to.call(method, path, Some(key), body).await;
    assert!(
        got.status.is_success(),
        "{path}: {} {}",
        got.status,
        got.body
    );
    if got.body.is_empty() {
        Value::Null
    } else {
        got.json()
    }
}

/// What the job prints: what the init step did, its inputs' contents
/// through every variable, whether it can write there, and the SDK's view.
const READER: &str = r#"cat /opt/paddlecloud/inputs/fetch.log
echo "labels=$(cat "$PADDLE_DATASET_DIR/labels.csv")"
echo "train=$(cat "$PADDLE_DATASET_DIR_DIGITS/train/a.txt")"
echo "weights=$(cat "$PADDLE_MODEL_DIR_BASE/weights.txt")"
if touch "$PADDLE_DATASET_DIR/new" 2>/dev/null; then echo dataset-writable; else echo dataset-read-only; fi
if touch "$PADDLE_MODEL_DIR/new" 2>/dev/null; then echo model-writable; else echo model-read-only; fi
echo "cached=$(ls /opt/paddlecloud/cache/datasets)"
python3 -c 'import os, paddlecloud; print("sdk-model-dir=" + paddlecloud.model_dir("base")); print("sdk-key=" + str(bool(os.environ["PADDLECLOUD_JOB_TOKEN"])))'
"#;

async fn run_reader(to: &Endpoint<'_>, key: &str, name: &str) -> String {
    run_reader_of(to, key, name, "digits").await
}

/// [`run_reader`] of `dataset` (`digits`, or a saved version `digits:N`).
async fn run_reader_of(to: &Endpoint<'_>, key: &str, name: &str, dataset: &str) -> String {
    let spec = json!({
        "name": name, "image": "python:3.11-slim",
        "command": ["sh", "-c", READER],
        "num_trainers": 1, "trainer": {"cpu": "200m", "memory": "128Mi"},
        "datasets": [dataset], "models": ["base"],
    });
    call_ok(to, key, Method::POST, "/api/v1/jobs", Some(spec)).await;
    wait_for(to, key, name, "succeeded", Duration::from_secs(120)).await;
    log(to, key, name, "trainer-0").await
}

/// The revisions of `account`'s dataset `digits` the node keeps.
fn revisions_on_the_node(account: &str) -> Vec<String> {
    let dir = format!("{NODE_CACHE}/datasets/{account}/digits");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    found.sort();
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_datasets_and_model_versions_are_in_its_pod_read_only_and_fetched_once_per_node_on_a_real_node(
) {
    let Some(NodeConsole {
        site, account, key, ..
    }) = NodeConsole::start("inp", "inputs").await
    else {
        return;
    };
    let to = Endpoint::Here(&site);

    call_ok(
        &to,
        &key,
        Method::POST,
        "/api/v1/datasets",
        Some(json!({"name": "digits"})),
    )
    .await;
    let dataset = format!("/api/v1/datasets/{account}/digits");
    common::rest::put_file(&site, &key, &dataset, "labels.csv", "0,1").await;
    common::rest::put_file(&site, &key, &dataset, "train/a.txt", "alpha").await;
    call_ok(
        &to,
        &key,
        Method::POST,
        "/api/v1/models",
        Some(json!({"name": "base"})),
    )
    .await;
    let model = format!("/api/v1/models/{account}/base");
    let v = call_ok(
        &to,
        &key,
        Method::POST,
        &format!("{model}/versions"),
        Some(json!({})),
    )
    .await;
    let v = v["version"].as_u64().unwrap();
    common::rest::put_file(
        &site,
        &key,
        &model,
        &format!("weights.txt?version={v}"),
        "v1",
    )
    .await;
    call_ok(
        &to,
        &key,
        Method::POST,
        &format!("{model}/versions/{v}/finish"),
        None,
    )
    .await;

    // The first job on the node fetches both.
    let first = run_reader(&to, &key, "reader").await;
    let says = |text: &str, line: &str| assert!(text.contains(line), "no “{line}” in:\n{text}");
    says(&first, &format!("dataset {account}/digits: fetched r"));
    says(
        &first,
        &format!("model {account}/base version {v}: fetched v{v}"),
    );
    says(&first, "labels=0,1");
    says(&first, "train=alpha");
    says(&first, "weights=v1");
    says(&first, "dataset-read-only");
    says(&first, "model-read-only");
    // The pod sees its own inputs' folders of the node's cache, no one else's.
    says(&first, &format!("cached={account}\n"));
    says(
        &first,
        &format!("sdk-model-dir=/opt/paddlecloud/inputs/models/{account}/base/{v}"),
    );
    says(&first, "sdk-key=True");
    let recorded = crate::real_node::job(&to, &key, "reader").await;
    assert_eq!(
        recorded["spec"]["models"],
        json!([format!("{account}/base:{v}")])
    );
    assert_eq!(revisions_on_the_node(&account).len(), 1);

    // A second job on the node downloads nothing.
    let second = run_reader(&to, &key, "again").await;
    says(&second, &format!("dataset {account}/digits: r"));
    says(&second, "in the node's cache");
    assert!(!second.contains("fetched"), "{second}");
    says(&second, "labels=0,1");

    // The files as they are saved as version 1, then changed.
    let saved = call_ok(
        &to,
        &key,
        Method::POST,
        &format!("{dataset}/versions"),
        Some(json!({"description": "before the change"})),
    )
    .await;
    assert_eq!(saved["version"], 1);

    // A changed dataset is a new revision: fetched again, the old one kept
    // for jobs that may still read it.
    common::rest::put_file(&site, &key, &dataset, "labels.csv", "2,3").await;
    let third = run_reader(&to, &key, "changed").await;
    says(&third, &format!("dataset {account}/digits: fetched r"));
    says(
        &third,
        &format!("model {account}/base version {v}: v{v} in the node's cache"),
    );
    says(&third, "labels=2,3");
    assert_eq!(revisions_on_the_node(&account).len(), 2);

    // The saved version is fetched as v1 and holds the files as they were;
    // a second job finds it in the node's cache.
    let old = run_reader_of(&to, &key, "saved", "digits:1").await;
    says(
        &old,
        &format!("dataset {account}/digits version 1: fetched v1"),
    );
    says(&old, "labels=0,1");
    says(&old, "train=alpha");
    let again = run_reader_of(&to, &key, "saved-again", "digits:1").await;
    says(
        &again,
        &format!("dataset {account}/digits version 1: v1 in the node's cache"),
    );
    assert_eq!(revisions_on_the_node(&account).len(), 3);

    // What the submitter cannot read is refused before anything runs.
    let refused = to
        .call(
            Method::POST,
            "/api/v1/jobs",
            Some(&key),
            Some(json!({
                "name": "nosy", "image": "python:3.11-slim", "command": ["true"],
                "num_trainers": 1, "datasets": ["someone-else/private"],
            })),
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert_eq!(
        refused.error().1.as_deref(),
        Some("datasets"),
        "{}",
        refused.body
    );
}

/// An environment's requirement the image lacks is installed by the init
/// step from the console's package index (`--kube-pip-index-url`), and
/// the job imports it and runs its program from `PATH`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_environments_requirements_the_image_lacks_are_installed_and_its_programs_are_on_the_path_on_a_real_node(
) {
    let Some((node, client)) = common::node::client().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let index = common::node::WheelIndex::start(dir.path(), &node.ip);
    let (site, _url) =
        common::site::on_socket_at(&node.ip, |config, _, _| server::console::Config {
            cluster: common::kubernetes::kube_choice_installing_from(&client, &index.url),
            ..config
        })
        .await;
    let account = format!("env{:08x}", getrandom::u32().unwrap());
    let key = common::rest::key_for(&site, &account).await;
    let to = Endpoint::Here(&site);
    common::node::wait_until_free(&client, "an environment").await;
    let environment = json!({
        "name": "demo", "requirements": ["pcdemo==1.0"], "image": "python:3.11-slim",
    });
    call_ok(
        &to,
        &key,
        Method::POST,
        "/api/v1/environments",
        Some(environment),
    )
    .await;
    let spec = json!({
        "name": "uses-demo", "environment": "demo",
        "command": ["sh", "-c", "pcdemo-hello && python3 -c 'import paddlecloud, pcdemo; print(\"module=\" + pcdemo.__file__)' && echo \"script=$(command -v pcdemo-hello)\""],
        "num_trainers": 1, "trainer": {"cpu": "200m", "memory": "256Mi"},
    });
    call_ok(&to, &key, Method::POST, "/api/v1/jobs", Some(spec)).await;
    wait_for(
        &to,
        &key,
        "uses-demo",
        "succeeded",
        Duration::from_secs(180),
    )
    .await;
    let printed = log(&to, &key, "uses-demo", "trainer-0").await;
    for line in [
        "hello from pcdemo",
        "module=/opt/paddlecloud/env/pcdemo/__init__.py",
        "script=/opt/paddlecloud/env/bin/pcdemo-hello",
    ] {
        assert!(printed.contains(line), "no “{line}” in:\n{printed}");
    }
}
