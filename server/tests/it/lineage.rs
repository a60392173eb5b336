//! Lineage (issue 42 item 6): a dataset read by a job that registered a
//! model version, which a second job reads and a serving instance serves;
//! `GET /api/v1/lineage` around each of them gives the graph two steps each
//! way, the model version's sentence says what trained and serves it, and
//! the pages draw it (without JavaScript). Another account sees none of
//! this account's jobs; a bad node is a 400 naming it.

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::rest::{call, key_and_cookie, key_for, post_ok, wait_for};
use crate::common::site::{config, site_from, Site};
use crate::common::TestDb;

/// Dataset `mnist` → job `fit` → `lenet` v1 → job `tune` and instance `api`.
async fn a_history(site: &Site, key: &str) {
    post_ok(site, key, "/api/v1/datasets", json!({"name": "mnist"})).await;
    let job = |name: &str, extra: Value| {
        let mut spec = json!({
            "name": name, "num_trainers": 1, "command": ["true"],
            "trainer": {"cpu": "100m", "memory": "64Mi"},
        });
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        spec
    };
    post_ok(
        site,
        key,
        "/api/v1/jobs",
        job("fit", json!({"datasets": ["mnist"]})),
    )
    .await;
    wait_for(site, key, "fit", "succeeded").await;
    post_ok(site, key, "/api/v1/models", json!({"name": "lenet"})).await;
    post_ok(
        site,
        key,
        "/api/v1/models/lin/lenet/versions",
        json!({"description": "from fit", "job": "fit"}),
    )
    .await;
    let file = "/api/v1/models/lin/lenet/files/model.txt?version=1";
    crate::serving::put_file(site, key, file, b"weights".to_vec()).await;
    post_ok(
        site,
        key,
        "/api/v1/models/lin/lenet/versions/1/finish",
        json!({}),
    )
    .await;
    post_ok(
        site,
        key,
        "/api/v1/jobs",
        job("tune", json!({"models": ["lenet:1"]})),
    )
    .await;
    post_ok(
        site,
        key,
        "/api/v1/serving",
        json!({"name": "api", "model": "lenet", "version": 1, "replicas": 1,
               "command": ["sleep", "60"], "resources": {"cpu": "100m", "memory": "64Mi"}}),
    )
    .await;
}

async fn lineage(site: &Site, key: &str, node: &str) -> crate::common::rest::Answer {
    let path = format!("/api/v1/lineage?node={}", app::models::url::encode(node));
    call(site, Method::GET, &path, Some(key), None).await
}

/// `from --relation--> to` for every edge.
fn edges(graph: &Value) -> Vec<String> {
    let mut out: Vec<String> = graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} --{}--> {}",
                e["from"].as_str().unwrap(),
                e["relation"].as_str().unwrap(),
                e["to"].as_str().unwrap()
            )
        })
        .collect();
    out.sort();
    out
}

async fn each_node_shows_what_it_came_from_and_what_came_of_it(db: TestDb) {
    let config = config(&db);
    let site = site_from(db, config).await;
    let (key, cookie) = key_and_cookie(&site, "lin").await;
    a_history(&site, &key).await;

    let model = lineage(&site, &key, "model:lin/lenet:1").await;
    assert_eq!(model.status, StatusCode::OK, "{}", model.body);
    let graph = model.json();
    assert_eq!(
        edges(&graph),
        vec![
            "dataset:lin/mnist --read--> job:lin/fit",
            "job:lin/fit --registered--> model:lin/lenet:1",
            "model:lin/lenet:1 --read--> job:lin/tune",
            "model:lin/lenet:1 --serves--> serving:lin/api",
        ]
    );
    let depth = |key: &str| {
        graph["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node"]["name"] == key)
            .map(|n| n["depth"].as_i64().unwrap())
    };
    assert_eq!(
        (depth("mnist"), depth("fit"), depth("lenet"), depth("api")),
        (Some(-2), Some(-1), Some(0), Some(1))
    );

    // Two steps down from the dataset: the job, then what it registered.
    let data = lineage(&site, &key, "dataset:lin/mnist").await.json();
    assert_eq!(
        edges(&data),
        vec![
            "dataset:lin/mnist --read--> job:lin/fit",
            "job:lin/fit --registered--> model:lin/lenet:1",
        ]
    );
    // From the instance up: the version, then the job that registered it.
    let api = lineage(&site, &key, "serving:lin/api").await.json();
    assert_eq!(
        edges(&api),
        vec![
            "job:lin/fit --registered--> model:lin/lenet:1",
            "model:lin/lenet:1 --serves--> serving:lin/api",
        ]
    );

    // The model version's page answers in a sentence and draws the graph,
    // each box a link to its page; the job page and the instance page too.
    let html = site.page_ok(&cookie, "/models/lin/lenet?version=1").await;
    for part in [
        "Trained by job fit from lin/mnist; served by api; read by job tune.",
        "<a href=\"/jobs/fit\">",
        "<a href=\"/datasets/lin/mnist\">",
        "<a href=\"/serving/api\">",
        "class=\"node model root\"",
        "href=\"/lineage?node=model%3Alin%2Flenet%3A1\"",
    ] {
        assert!(html.contains(part), "{part} not in {html}");
    }
    let page = site.page_ok(&cookie, "/jobs/fit").await;
    assert!(page.contains("class=\"node job root\""), "{page}");
    let shared = site
        .page_ok(&cookie, "/lineage?node=serving%3Alin%2Fapi")
        .await;
    assert!(shared.contains("class=\"node serving root\""), "{shared}");

    // Another account sees neither the job nor the instance, and its
    // lineage of the (private) model is not found.
    let other = key_for(&site, "other").await;
    for node in [
        "job:lin/fit",
        "serving:lin/api",
        "model:lin/lenet:1",
        "dataset:lin/mnist",
    ] {
        let got = lineage(&site, &other, node).await;
        assert_eq!(got.status, StatusCode::NOT_FOUND, "{node}: {}", got.body);
    }
    // A public dataset's graph shows the other account none of our jobs.
    let public = call(
        &site,
        Method::PUT,
        "/api/v1/datasets/lin/mnist/public",
        Some(&key),
        Some(json!({"public": true})),
    )
    .await;
    assert!(public.status.is_success(), "{}", public.body);
    let seen = lineage(&site, &other, "dataset:lin/mnist").await;
    assert_eq!(seen.status, StatusCode::OK, "{}", seen.body);
    assert!(edges(&seen.json()).is_empty(), "{}", seen.body);

    for bad in [
        "model:lin/lenet",
        "job:lin",
        "thing:lin/x",
        "model:lin/lenet:0",
    ] {
        let got = lineage(&site, &key, bad).await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST, "{bad}: {}", got.body);
        assert_eq!(got.json()["error"]["field"], "node", "{bad}");
    }
}

on_both_databases!(
    each_node_shows_what_it_came_from_and_what_came_of_it,
    super::each_node_shows_what_it_came_from_and_what_came_of_it
);
