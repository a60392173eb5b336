//! Batch scoring on the real node (tests named `on_a_real_node`): the
//! scorer's replicas are pods of the paddle-cpu environment's image, read
//! the pinned dataset version from the node's input cache, and write their
//! predictions back into the output version through the console with the
//! job's own token; the progress the job page shows counts them.

use http::StatusCode;
use serde_json::json;

use crate::real_node::NodeConsole;
use crate::scoring::{answers, ended, get, log, post, saved_dataset};
use crate::serving::{model_version, paddle_python, tiny_model};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pods_score_a_dataset_version_with_a_paddle_model_into_a_new_version_on_a_real_node() {
    let Some(python) = paddle_python() else {
        return;
    };
    let Some(NodeConsole {
        site, account, key, ..
    }) = NodeConsole::start("score", "a scoring").await
    else {
        return;
    };
    let dir = tiny_model(python);
    let files: Vec<(&str, Vec<u8>)> = ["inference.json", "inference.pdiparams"]
        .iter()
        .map(|f| (*f, std::fs::read(dir.join(f)).unwrap()))
        .collect();
    model_version(&site, &key, &account, "tiny", &files).await;
    saved_dataset(
        &site,
        &key,
        &account,
        "rows",
        &[
            ("a.jsonl", "{\"inputs\": {\"x\": [[1, 2, 3, 4]]}}\n"),
            ("b.csv", "1,2,3,4\n0,0,0,0\n"),
        ],
    )
    .await;
    // The default environment (paddlecloud/paddle-cpu) is the node's paddle
    // image; two replicas of 300m fit beside whatever else the node runs.
    let started = post(
        &site,
        &key,
        "/api/v1/scorings",
        json!({"name": "score-on-node", "model": "tiny", "dataset": "rows", "output": "scores",
               "replicas": 2, "cpu": "300m", "memory": "1Gi"}),
    )
    .await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let done = ended(&site, &key, "score-on-node").await;
    let (log0, log1) = (
        log(&site, &key, "score-on-node", "trainer-0").await,
        log(&site, &key, "score-on-node", "trainer-1").await,
    );
    assert_eq!(done["status"], "succeeded", "{done}\n{log0}\n{log1}");
    // Each pod took its own file: the shards are the files, sorted.
    assert!(log0.contains("replica 1 of 2: 1 of 2 file(s)"), "{log0}");
    assert!(log1.contains("replica 2 of 2: 1 of 2 file(s)"), "{log1}");
    let p = get(&site, &key, "/api/v1/scorings/score-on-node")
        .await
        .json();
    assert_eq!(
        (&p["inputs"], &p["scored"], &p["output_state"]),
        (&json!(2), &json!(2), &json!("ready")),
        "{p}"
    );
    let b = get(
        &site,
        &key,
        &format!("/api/v1/datasets/{account}/scores/files/b.csv.predictions.jsonl?version=1"),
    )
    .await;
    assert_eq!(b.status, StatusCode::OK, "{}", b.body);
    assert_eq!(
        answers(&b.body),
        vec![json!([0.5, 12.0]), json!([0.5, -1.0])],
        "{}",
        b.body
    );
}
