//! Notebook files shared read-only (Submarine's "sharing"), on each backend
//! with real JupyterLabs: with the account's members, with another account,
//! by a link that works signed out until revoked or expired; recipients
//! read the newest version rendered and copy it into a notebook of their
//! own; nobody else reads anything.

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::rest::{call, key_and_cookie, Answer};
use crate::notebook_contract::{harness, Backend, Harness};
use crate::notebooks::{http, running_notebook};

mod a_shared_notebook_file_is_read_by_whom_it_is_shared_with_and_copied_into_their_notebook {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_local() {
        super::sharing(super::Backend::Local).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_a_real_node() {
        super::sharing(super::Backend::RealNode).await;
    }
}

fn notebook(lr: &str) -> Value {
    json!({
        "cells": [
            {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "# Shared sweep"},
            {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": null,
             "outputs": [], "source": format!("lr = {lr}")},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    })
}

/// Saves `file` of `account`'s notebook `name` through the proxy with `key`.
async fn save(h: &Harness, key: &str, account: &str, name: &str, file: &str, content: Value) {
    let body = json!({"type": "notebook", "format": "json", "content": content});
    let answer = http()
        .put(format!(
            "{}/notebooks/{account}/{name}/api/contents/{file}",
            h.url
        ))
        .header("authorization", format!("token {key}"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
}

async fn as_key(h: &Harness, key: &str, method: Method, path: &str, body: Option<Value>) -> Answer {
    call(&h.site, method, path, Some(key), body).await
}

/// What `GET path` answers with no key at all.
async fn signed_out(h: &Harness, path: &str) -> (StatusCode, String) {
    let answer = http().get(format!("{}{path}", h.url)).send().await.unwrap();
    let status = answer.status();
    (status, answer.text().await.unwrap())
}

fn paths(files: &Value) -> Vec<String> {
    files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect()
}

async fn sharing(backend: Backend) {
    let Some(h) = harness(backend, false).await else {
        return;
    };
    let name = "sharer";
    running_notebook(&h.site, &h.key, name, json!({})).await;
    save(&h, &h.key, &h.account, name, "sweep.ipynb", notebook("0.1")).await;
    let shares = format!("/api/v1/notebooks/{name}/shares");

    // Bad shares say what is wrong.
    for (body, field) in [
        (
            json!({"path": "never-saved.ipynb", "with": "members"}),
            "path",
        ),
        (
            json!({"path": "sweep.ipynb", "with": "account", "account": "no-such-account"}),
            "account",
        ),
        (
            json!({"path": "sweep.ipynb", "with": "account", "account": h.account}),
            "account",
        ),
        (
            json!({"path": "sweep.ipynb", "with": "link", "expires_days": 0}),
            "expires_days",
        ),
    ] {
        let got = h.post(&shares, Some(body)).await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST, "{}", got.body);
        assert_eq!(got.json()["error"]["field"], field, "{}", got.body);
    }

    // With the account's members: a member reads it; another account does not.
    let made = h
        .post(
            &shares,
            Some(json!({"path": "sweep.ipynb", "with": "members"})),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let members_share = made.json()["share"]["id"].as_i64().unwrap();
    let again = h
        .post(
            &shares,
            Some(json!({"path": "sweep.ipynb", "with": "members"})),
        )
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
    let account = h.site.owner(&h.account).await.account;
    let member = crate::notebooks::member_of(&h.site, &account).await;
    let seen = as_key(&h, &member, Method::GET, "/api/v1/notebook-shares", None).await;
    assert_eq!(paths(&seen.json()), ["sweep.ipynb"], "{}", seen.body);
    assert_eq!(seen.json()[0]["owner_account"], h.account.as_str());
    let page = h
        .page(
            &format!("/api/v1/notebook-shares/{members_share}/html"),
            Some(&member),
        )
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("Shared sweep"));
    assert!(page.headers["content-security-policy"]
        .to_str()
        .unwrap()
        .starts_with("sandbox"));
    let other_account = format!("{}b", h.account);
    let (other, _) = key_and_cookie(&h.site, &other_account).await;
    let none = as_key(&h, &other, Method::GET, "/api/v1/notebook-shares", None).await;
    assert_eq!(paths(&none.json()), Vec::<String>::new());
    let refused = as_key(
        &h,
        &other,
        Method::GET,
        &format!("/api/v1/notebook-shares/{members_share}/file"),
        None,
    )
    .await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND, "{}", refused.body);

    // With the other account: its owner reads it and copies it into a
    // notebook of theirs, twice, under names no file there has.
    let made = h
        .post(
            &shares,
            Some(json!({"path": "sweep.ipynb", "with": "account", "account": other_account})),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let account_share = made.json()["share"]["id"].as_i64().unwrap();
    let seen = as_key(&h, &other, Method::GET, "/api/v1/notebook-shares", None).await;
    assert_eq!(paths(&seen.json()), ["sweep.ipynb"], "{}", seen.body);
    let copy = format!("/api/v1/notebook-shares/{account_share}/copy");
    let stopped = as_key(
        &h,
        &other,
        Method::POST,
        &copy,
        Some(json!({"notebook": "nope"})),
    )
    .await;
    assert_eq!(stopped.status, StatusCode::NOT_FOUND, "{}", stopped.body);
    running_notebook(&h.site, &other, "mine", json!({})).await;
    for expected in ["sweep.ipynb", "sweep-copy.ipynb"] {
        let copied = as_key(
            &h,
            &other,
            Method::POST,
            &copy,
            Some(json!({"notebook": "mine"})),
        )
        .await;
        assert_eq!(copied.status, StatusCode::OK, "{}", copied.body);
        assert_eq!(copied.json()["path"], expected);
        assert_eq!(copied.json()["reason"], "save");
    }
    let theirs = as_key(
        &h,
        &other,
        Method::GET,
        "/api/v1/notebooks/mine/history?path=sweep-copy.ipynb",
        None,
    )
    .await;
    assert_eq!(theirs.json()["versions"][0]["cells"], 2, "{}", theirs.body);
    let file = http()
        .get(format!(
            "{}/notebooks/{other_account}/mine/api/contents/sweep.ipynb?content=1",
            h.url
        ))
        .header("authorization", format!("token {other}"))
        .send()
        .await
        .unwrap();
    let file: Value = serde_json::from_str(&file.text().await.unwrap()).unwrap();
    assert_eq!(file["content"]["cells"][1]["source"], "lr = 0.1");

    // By a link: read signed out, always the newest version, until revoked.
    let made = h
        .post(
            &shares,
            Some(json!({"path": "sweep.ipynb", "with": "link", "expires_days": 7})),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let link = made.json()["link"].as_str().unwrap().to_owned();
    let link_share = made.json()["share"]["id"].as_i64().unwrap();
    let token = link.rsplit('/').next().unwrap().to_owned();
    assert!(token.starts_with("pcf_"), "{link}");
    let (status, body) = signed_out(&h, &format!("/api/v1/shared/notebooks/{token}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = signed_out(&h, &link).await;
    assert_eq!(status, StatusCode::OK, "the link's page opens signed out");
    save(
        &h,
        &h.key,
        &h.account,
        name,
        "sweep.ipynb",
        notebook("0.01"),
    )
    .await;
    let (status, body) = signed_out(&h, &format!("/api/v1/shared/notebooks/{token}/file")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let newest: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(newest["cells"][1]["source"], "lr = 0.01");
    let gone = call(
        &h.site,
        Method::DELETE,
        &format!("{shares}/{link_share}"),
        Some(&h.key),
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    let (status, _) = signed_out(&h, &format!("/api/v1/shared/notebooks/{token}/html")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a revoked link");
    let listed = as_key(&h, &h.key, Method::GET, &shares, None).await;
    assert_eq!(
        listed.json().as_array().unwrap().len(),
        2,
        "{}",
        listed.body
    );
    // Only the owner shares or sees the shares.
    let refused = as_key(&h, &member, Method::GET, &shares, None).await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND, "{}", refused.body);

    // Gone with the notebook.
    h.delete(name).await;
    let none = as_key(&h, &other, Method::GET, "/api/v1/notebook-shares", None).await;
    assert_eq!(paths(&none.json()), Vec::<String>::new());
    let gone = call(
        &h.site,
        Method::DELETE,
        "/api/v1/notebooks/mine",
        Some(&other),
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
}
