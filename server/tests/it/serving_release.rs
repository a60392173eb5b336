//! Releasing versions by degrees on the local executor (issue 42 items 3
//! and 4), with real predict-server processes: an instance that follows
//! `model@production` rolls to the version the alias moves to while a
//! client calls it throughout and loses no call; a canary answers its share
//! of the calls, a shadow's answers are recorded beside the main ones and
//! never returned, and promote and roll back are one call each. Each
//! version's files hold its number, which a serving script answers with,
//! so every answer says which version gave it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::rest::{call, key_for, Answer};
use crate::common::site::Site;
use crate::serving::{
    flush, launch, model_versions, paddle_python, paddle_site, predict, wait_until,
};

/// Answers every call with the version whose files it loaded.
const SCRIPT: &str = "\
import json, os

def load(model_dir):
    with open(os.path.join(model_dir, 'answer.json')) as f:
        return json.load(f)

def predict(state, inputs):
    return {'version': state['v']}
";

/// Adds versions 1..=`n` of model `name` of `account`, each holding its
/// number.
pub(crate) async fn versions(site: &Site, key: &str, account: &str, name: &str, n: u32) {
    let files: Vec<Vec<(&str, Vec<u8>)>> = (1..=n)
        .map(|v| vec![("answer.json", format!("{{\"v\": {v}}}").into_bytes())])
        .collect();
    model_versions(site, key, account, name, &files).await;
}

fn spec(name: &str, model: &str, replicas: u32) -> Value {
    json!({
        "name": name,
        "model": model,
        "replicas": replicas,
        "script": SCRIPT,
        "resources": {"cpu": "100m", "memory": "256Mi"}
    })
}

/// The version that answered, or `None` for a failed call.
fn answered(a: &Answer) -> Option<u64> {
    (a.status == StatusCode::OK)
        .then(|| a.json()["outputs"]["version"].as_u64())
        .flatten()
}

async fn release(site: &Site, key: &str, name: &str, body: Value) -> Answer {
    let path = format!("/api/v1/serving/{name}/release");
    call(site, Method::POST, &path, Some(key), Some(body)).await
}

/// One predict call to instance `api` of account `acme`.
async fn call_api(site: &Site, key: &str) -> Answer {
    predict(site, key, "acme", "api", json!({"inputs": {"x": [[1.0]]}})).await
}

/// Calls until one answer comes from `version` (at most `secs`).
async fn until_answered_by(
    site: &Site,
    key: &str,
    account: &str,
    name: &str,
    version: u64,
    secs: u64,
) {
    let start = Instant::now();
    loop {
        let a = predict(site, key, account, name, json!({"inputs": {"x": [[1.0]]}})).await;
        if answered(&a) == Some(version) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "v{version} never answered: {} {}",
            a.status,
            a.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_following_an_alias_rolls_to_where_it_moves_and_a_client_calling_throughout_loses_no_call(
) {
    let Some(python) = paddle_python() else {
        return;
    };
    let site = paddle_site(python).await;
    let key = key_for(&site, "acme").await;
    versions(&site, &key, "acme", "echo", 2).await;
    let alias = "/api/v1/models/acme/echo/aliases/production";
    let set = call(
        &site,
        Method::PUT,
        alias,
        Some(&key),
        Some(json!({"version": 1})),
    )
    .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    let launched = launch(&site, &key, spec("api", "echo@production", 2)).await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    wait_until(&site, &key, "api", 120, |v| {
        v["status"] == "ready" && v["ready"] == 2
    })
    .await;

    // A client calls as fast as answers come, with a second one beside it,
    // while the alias moves and the replicas roll.
    let done = AtomicBool::new(false);
    let client = || async {
        let mut seen = Vec::new();
        while !done.load(Ordering::Relaxed) {
            let a = call_api(&site, &key).await;
            seen.push((answered(&a), a.status, a.body.clone()));
        }
        seen
    };
    let mover = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let moved = call(
            &site,
            Method::PUT,
            alias,
            Some(&key),
            Some(json!({"version": 2})),
        )
        .await;
        assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
        // The roll shows its progress while it goes.
        let rolling = wait_until(&site, &key, "api", 60, |v| {
            v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Rolling from v1 to v2"))
                || v["version"] == 2
        })
        .await;
        let rolled = wait_until(&site, &key, "api", 120, |v| {
            v["version"] == 2 && v["ready"] == 2 && v["status"] == "ready"
        })
        .await;
        // A little more calling on the new version alone.
        tokio::time::sleep(Duration::from_millis(500)).await;
        done.store(true, Ordering::Relaxed);
        (rolled, rolling)
    };
    let (first, second, (rolled, rolling)) = tokio::join!(client(), client(), mover);
    println!("while rolling: {}", rolling["message"]);
    let calls: Vec<_> = first.into_iter().chain(second).collect();
    let lost: Vec<_> = calls.iter().filter(|c| c.0.is_none()).collect();
    assert!(
        lost.is_empty(),
        "{} of {} calls lost: {:?}",
        lost.len(),
        calls.len(),
        lost.first()
    );
    assert!(calls.iter().any(|c| c.0 == Some(1)) && calls.iter().any(|c| c.0 == Some(2)));
    println!("{} calls during the roll, none lost", calls.len());
    assert_eq!(
        rolled["spec"]["version"], 2,
        "the pinned version follows: {rolled}"
    );
    assert_eq!(rolled["spec"]["model"], "echo@production");
    // Once rolled, only the new version answers.
    for _ in 0..10 {
        let a = call_api(&site, &key).await;
        assert_eq!(answered(&a), Some(2), "{}", a.body);
    }
    // An alias deleted leaves the instance where it is.
    let deleted = call(&site, Method::DELETE, alias, Some(&key), None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.body);
    site.serving.follow_once().await.unwrap();
    let a = call_api(&site, &key).await;
    assert_eq!(answered(&a), Some(2), "{}", a.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_answers_its_share_a_shadow_answers_no_one_and_promote_and_roll_back_are_one_call_each(
) {
    let Some(python) = paddle_python() else {
        return;
    };
    let site = paddle_site(python).await;
    let key = key_for(&site, "acme").await;
    versions(&site, &key, "acme", "echo", 3).await;
    let mut launched = spec("api", "echo", 1);
    launched["version"] = json!(1);
    let launched = launch(&site, &key, launched).await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    wait_until(&site, &key, "api", 120, |v| v["status"] == "ready").await;

    // Bad releases name what is wrong.
    let bad = |body: Value, status: StatusCode, field: &'static str| {
        let (site, key) = (&site, &key);
        async move {
            let a = release(site, key, "api", body.clone()).await;
            assert_eq!(a.status, status, "{body}: {}", a.body);
            assert_eq!(a.json()["error"]["field"], field, "{body}: {}", a.body);
        }
    };
    bad(
        json!({"action": "canary", "version": 2, "percent": 100, "replicas": 1}),
        StatusCode::BAD_REQUEST,
        "canary.percent",
    )
    .await;
    bad(
        json!({"action": "canary", "version": 9, "percent": 10, "replicas": 1}),
        StatusCode::BAD_REQUEST,
        "canary.version",
    )
    .await;
    bad(
        json!({"action": "canary", "version": 1, "percent": 10, "replicas": 1}),
        StatusCode::BAD_REQUEST,
        "canary.version",
    )
    .await;
    bad(json!({"action": "promote"}), StatusCode::CONFLICT, "action").await;
    bad(
        json!({"action": "end_shadow"}),
        StatusCode::CONFLICT,
        "action",
    )
    .await;

    // A canary of v2 takes a tenth of the calls, spread evenly.
    let a = release(
        &site,
        &key,
        "api",
        json!({"action": "canary", "version": 2, "percent": 10, "replicas": 1}),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let tracks = a.json()["tracks"].clone();
    assert_eq!(tracks[0]["percent"], 90, "{tracks}");
    assert_eq!(
        (tracks[1]["track"].as_str(), tracks[1]["version"].as_u64()),
        (Some("canary"), Some(2))
    );
    until_answered_by(&site, &key, "acme", "api", 2, 60).await;
    let mut by_version = std::collections::BTreeMap::<u64, u32>::new();
    for _ in 0..200 {
        let a = call_api(&site, &key).await;
        *by_version
            .entry(answered(&a).expect("answered"))
            .or_default() += 1;
    }
    assert_eq!(by_version, [(1, 180), (2, 20)].into(), "exactly its share");

    // A shadow of v3 gets a copy of half the calls; no caller sees v3.
    let a = release(
        &site,
        &key,
        "api",
        json!({"action": "shadow", "version": 3, "percent": 50, "replicas": 1}),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let shadow_calls = "/api/v1/serving/api/shadow-calls?limit=200";
    let start = Instant::now();
    loop {
        let a = call_api(&site, &key).await;
        assert_ne!(
            answered(&a),
            Some(3),
            "a shadow's answer reached the caller"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let got = call(&site, Method::GET, shadow_calls, Some(&key), None).await;
        if got
            .json()
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["shadow_status"] == 200)
        {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the shadow never answered: {}",
            got.body
        );
    }
    for _ in 0..20 {
        let a = call_api(&site, &key).await;
        assert!(matches!(answered(&a), Some(1 | 2)), "{}", a.body);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = call(&site, Method::GET, shadow_calls, Some(&key), None).await;
    let recorded = got.json();
    let answered_by_shadow: Vec<&Value> = recorded
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["shadow_status"] == 200)
        .collect();
    assert!(
        answered_by_shadow.len() >= 10,
        "half of 20 calls at least: {recorded}"
    );
    let one = answered_by_shadow[0];
    assert_eq!(one["version"], 3);
    let body = |k: &str| serde_json::from_str::<Value>(one[k].as_str().unwrap()).unwrap();
    assert_eq!(body("shadow")["outputs"]["version"], 3, "{one}");
    assert!(
        matches!(body("primary")["outputs"]["version"].as_u64(), Some(1 | 2)),
        "{one}"
    );
    assert_eq!(one["agrees"], false, "v3 answers differently: {one}");
    assert_eq!(one["path"], "predict");

    // The traffic by version: the main one and the canary answered, the
    // shadow got copies.
    flush(&site).await;
    let traffic = call(
        &site,
        Method::GET,
        "/api/v1/serving/api/traffic",
        Some(&key),
        None,
    )
    .await;
    let versions: Vec<(u64, bool, u64)> = traffic.json()["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let n = v["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["requests"].as_u64().unwrap())
                .sum();
            (
                v["version"].as_u64().unwrap(),
                v["shadow"].as_bool().unwrap(),
                n,
            )
        })
        .collect();
    assert!(
        versions.iter().any(|v| v.0 == 1 && !v.1 && v.2 >= 180),
        "{versions:?}"
    );
    assert!(
        versions.iter().any(|v| v.0 == 2 && !v.1 && v.2 >= 20),
        "{versions:?}"
    );
    assert!(
        versions.iter().any(|v| v.0 == 3 && v.1 && v.2 >= 10),
        "{versions:?}"
    );

    // Promote: the main replicas roll to v2 and the canary ends.
    let a = release(&site, &key, "api", json!({"action": "promote"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let promoted = wait_until(&site, &key, "api", 120, |v| {
        v["version"] == 2 && v["status"] == "ready"
    })
    .await;
    assert!(promoted["spec"]["canary"].is_null(), "{promoted}");
    for _ in 0..20 {
        let a = call_api(&site, &key).await;
        assert_eq!(answered(&a), Some(2), "{}", a.body);
    }

    // A canary of v3, rolled back: every call is v2's again; the shadow ends.
    let a = release(
        &site,
        &key,
        "api",
        json!({"action": "canary", "version": 3, "percent": 50, "replicas": 1}),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    until_answered_by(&site, &key, "acme", "api", 3, 60).await;
    for body in [
        json!({"action": "rollback"}),
        json!({"action": "end_shadow"}),
    ] {
        let a = release(&site, &key, "api", body).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    }
    let after = wait_until(&site, &key, "api", 10, |_| true).await;
    assert_eq!(after["tracks"].as_array().unwrap().len(), 1, "{after}");
    for _ in 0..20 {
        let a = call_api(&site, &key).await;
        assert_eq!(answered(&a), Some(2), "{}", a.body);
    }
}
