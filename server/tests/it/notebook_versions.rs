//! Versions of a notebook's files (Submarine's "history versions"), on
//! each backend with a real JupyterLab behind the console: saves and
//! checkpoints made through the proxy as JupyterLab makes them, a file a
//! kernel wrote kept when the notebook stops, a version rendered by
//! nbconvert, two compared cell by cell, one restored into the workspace,
//! and nobody but the owner seeing any of it.

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::rest::{call, key_and_cookie, Answer};
use crate::notebook_contract::{harness, Backend, Harness};
use crate::notebooks::{http, json_of, run_cell, running_notebook, start_kernel, wait_status};

mod a_notebooks_saves_checkpoints_and_stops_are_versions_to_view_compare_and_restore {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_local() {
        super::versions(super::Backend::Local).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_a_real_node() {
        super::versions(super::Backend::RealNode).await;
    }
}

pub(crate) fn notebook(cells: Value) -> Value {
    json!({
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    })
}

pub(crate) fn markdown(id: &str, source: &str) -> Value {
    json!({"cell_type": "markdown", "id": id, "metadata": {}, "source": source})
}

fn code(id: &str, source: &str, printed: &str) -> Value {
    json!({"cell_type": "code", "id": id, "metadata": {}, "execution_count": 1, "source": source,
           "outputs": [{"output_type": "stream", "name": "stdout", "text": printed}]})
}

impl Harness {
    /// `method path` of notebook `name`'s server through the proxy, as the
    /// browser's JupyterLab sends it.
    async fn lab_send(&self, method: Method, name: &str, path: &str, body: Option<Value>) -> u16 {
        let url = format!("{}/notebooks/{}/{name}/{path}", self.url, self.account);
        let mut request = http().request(method, url).header("cookie", &self.cookie);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body).unwrap());
        }
        let answer = request.send().await.unwrap();
        let status = answer.status().as_u16();
        assert!(status < 300, "{status} {}", answer.text().await.unwrap());
        status
    }

    /// JupyterLab's save of `file` with `content`.
    pub(crate) async fn save(&self, name: &str, file: &str, content: Value) {
        let body = json!({"type": "notebook", "format": "json", "content": content});
        self.lab_send(
            Method::PUT,
            name,
            &format!("api/contents/{file}"),
            Some(body),
        )
        .await;
    }

    async fn api(&self, method: Method, path: &str) -> Answer {
        call(&self.site, method, path, Some(&self.key), None).await
    }

    async fn history(&self, name: &str, file: &str) -> Value {
        let got = self
            .api(
                Method::GET,
                &format!("/api/v1/notebooks/{name}/history?path={file}"),
            )
            .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.body);
        got.json()
    }
}

fn reasons(history: &Value) -> Vec<String> {
    history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["reason"].as_str().unwrap().to_owned())
        .collect()
}

async fn versions(backend: Backend) {
    let Some(h) = harness(backend, false).await else {
        return;
    };
    let name = "versioned";
    running_notebook(&h.site, &h.key, name, json!({})).await;
    let owner = h.site.owner(&h.account).await.email;

    // Two saves of the same content keep one version; an edit keeps another,
    // and Ctrl+S's checkpoint marks it.
    let first = notebook(json!([
        markdown("m1", "# Learning rate sweep\n<script>alert('x')</script>"),
        code("c1", "lr = 0.1\nepochs = 2\nprint(lr)", "0.1\n"),
    ]));
    let second = notebook(json!([
        markdown("m1", "# Learning rate sweep\n<script>alert('x')</script>"),
        code("c1", "lr = 0.01\nepochs = 2\nprint(lr)", "0.01\n"),
        markdown("m2", "Smaller is steadier."),
    ]));
    h.save(name, "sweep.ipynb", first.clone()).await;
    h.save(name, "sweep.ipynb", first.clone()).await;
    h.save(name, "sweep.ipynb", second.clone()).await;
    h.lab_send(
        Method::POST,
        name,
        "api/contents/sweep.ipynb/checkpoints",
        None,
    )
    .await;
    let history = h.history(name, "sweep.ipynb").await;
    assert_eq!(reasons(&history), ["checkpoint", "save"], "{history}");
    let newest = &history["versions"][0];
    assert_eq!(newest["author"], owner.as_str());
    assert_eq!(newest["cells"], 3);
    let (v1, v2) = (
        history["versions"][1]["id"].as_i64().unwrap(),
        newest["id"].as_i64().unwrap(),
    );

    // The file of a version is the notebook as it was saved.
    let file = h
        .api(
            Method::GET,
            &format!("/api/v1/notebooks/{name}/versions/{v1}"),
        )
        .await;
    assert_eq!(file.status, StatusCode::OK, "{}", file.body);
    assert_eq!(
        file.json()["cells"][1]["source"],
        "lr = 0.1\nepochs = 2\nprint(lr)"
    );

    // Compared cell by cell: the edited line, the new output, the new cell.
    let diff = h
        .api(
            Method::GET,
            &format!("/api/v1/notebooks/{name}/diff?from={v1}&to={v2}"),
        )
        .await;
    assert_eq!(diff.status, StatusCode::OK, "{}", diff.body);
    let cells = diff.json()["cells"].clone();
    let changes: Vec<&str> = cells
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    assert_eq!(changes, ["same", "changed", "added"], "{cells}");
    let lines: Vec<(&str, &str)> = cells[1]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["change"].as_str().unwrap(), l["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        lines,
        [
            ("removed", "lr = 0.1"),
            ("added", "lr = 0.01"),
            ("same", "epochs = 2"),
            ("same", "print(lr)")
        ]
    );
    assert_eq!(cells[1]["new_outputs"], json!(["0.01\n"]));

    // Rendered by nbconvert, served so that nothing in it runs.
    let page_path = format!("/api/v1/notebooks/{name}/versions/{v1}/html");
    let page = h.page(&page_path, None).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains("Learning rate sweep"),
        "the markdown is rendered"
    );
    assert!(
        !page.body.contains("<script>alert"),
        "the notebook's script is gone"
    );
    let policy = page.headers["content-security-policy"].to_str().unwrap();
    assert!(policy.starts_with("sandbox"), "{policy}");

    // A notebook file a kernel wrote (no save went through the proxy) is kept
    // when the notebook stops; a hidden folder's is not.
    let lab = format!("/notebooks/{}/{name}/", h.account);
    let kernel = start_kernel(&h.url, &lab, &h.cookie).await;
    let made = notebook(json!([markdown("k1", "Written by the kernel.")]));
    run_cell(
        &h.url,
        &lab,
        &kernel,
        &h.cookie,
        &format!(
            "import json, os\nos.makedirs('runs', exist_ok=True)\nos.makedirs('.private', exist_ok=True)\n\
             json.dump({made}, open('runs/made.ipynb', 'w'))\njson.dump({made}, open('.private/x.ipynb', 'w'))\nprint('OK', 1)\n"
        ),
    )
    .await;
    let stopped = h
        .post(&format!("/api/v1/notebooks/{name}/stop"), None)
        .await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
    let kept = h.history(name, "runs/made.ipynb").await;
    let files: Vec<&str> = kept["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["runs/made.ipynb", "sweep.ipynb"], "{kept}");
    assert_eq!(reasons(&kept), ["stop"]);
    assert_eq!(kept["versions"][0]["author"], owner.as_str());
    assert_eq!(
        reasons(&h.history(name, "sweep.ipynb").await),
        ["checkpoint", "save"],
        "an unchanged file adds no version at a stop"
    );

    // A restore needs the notebook's server; once it runs, the file is the
    // old version again and the restore is a version of its own.
    let restore = format!("/api/v1/notebooks/{name}/versions/{v1}/restore");
    let refused = h.post(&restore, None).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
    assert!(refused.body.contains("Start"), "{}", refused.body);
    let started = h
        .post(&format!("/api/v1/notebooks/{name}/start"), None)
        .await;
    assert_eq!(started.status, StatusCode::OK, "{}", started.body);
    wait_status(&h.site, &h.key, name, "running").await;
    let restored = h.post(&restore, None).await;
    assert_eq!(restored.status, StatusCode::OK, "{}", restored.body);
    assert_eq!(restored.json()["reason"], "restore");
    assert_eq!(restored.json()["restored_from"], v1);
    let now = json_of(h.lab_get(name, "api/contents/sweep.ipynb?content=1").await).await;
    assert_eq!(
        now["content"]["cells"][1]["source"],
        "lr = 0.1\nepochs = 2\nprint(lr)"
    );
    assert_eq!(
        reasons(&h.history(name, "sweep.ipynb").await),
        ["restore", "checkpoint", "save"]
    );

    // Nobody else sees them: another account's owner, or a member of this one.
    let (stranger, _) = key_and_cookie(&h.site, &format!("{}x", h.account)).await;
    let account = h.site.owner(&h.account).await.account;
    let member = crate::notebooks::member_of(&h.site, &account).await;
    for key in [&stranger, &member] {
        for path in [
            format!("/api/v1/notebooks/{name}/history"),
            format!("/api/v1/notebooks/{name}/versions/{v1}/html"),
            format!("/api/v1/notebooks/{name}/diff?from={v1}&to={v2}"),
        ] {
            let got = call(&h.site, Method::GET, &path, Some(key), None).await;
            assert_eq!(got.status, StatusCode::NOT_FOUND, "{path}: {}", got.body);
        }
        let got = call(&h.site, Method::POST, &restore, Some(key), None).await;
        assert_eq!(got.status, StatusCode::NOT_FOUND, "{}", got.body);
    }
    // Bad input is a 400 that says what is wrong.
    let bad = h
        .api(
            Method::GET,
            &format!("/api/v1/notebooks/{name}/history?path=../x.ipynb"),
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
    let bad = h
        .api(
            Method::GET,
            &format!("/api/v1/notebooks/{name}/diff?from=1"),
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);

    // Deleted with the notebook, files and all.
    let objects = h.config.data_dir.join("objects").join("notebook-versions");
    let count = || {
        std::fs::read_dir(&objects)
            .map(|d| {
                d.flat_map(|e| std::fs::read_dir(e.unwrap().path()).unwrap())
                    .count()
            })
            .unwrap_or(0)
    };
    assert!(
        count() >= 4,
        "the versions' files and pages are in {}",
        objects.display()
    );
    h.delete(name).await;
    assert_eq!(
        count(),
        0,
        "files of deleted versions are left in {}",
        objects.display()
    );
}
