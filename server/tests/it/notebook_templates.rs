//! Notebook templates (issue 43's "a template or a pipeline node" for
//! parameterized runs), on each backend with a real JupyterLab and a real
//! papermill: a run saved as a template keeps a copy of its notebook and
//! takes its parameters (defaulting to the run's values); a template made
//! from a notebook file adds limits and a job parameter; a run of the
//! template, and a pipeline node that names it, run the notebook with the
//! values; the template outlives the run it came from; a bad template is
//! refused naming the field, before anything is kept.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::rest::call;
use crate::notebook_contract::{harness, Backend, Harness, NOTEBOOK_IMAGE};
use crate::notebook_versions::notebook;
use crate::notebooks::running_notebook;

mod a_notebook_run_saved_as_a_template_runs_its_notebook_with_new_values_alone_and_in_a_pipeline {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_local() {
        super::templates(super::Backend::Local).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_a_real_node() {
        super::templates(super::Backend::RealNode).await;
    }
}

fn code(source: &str, tags: &[&str]) -> Value {
    json!({"cell_type": "code", "metadata": {"tags": tags}, "execution_count": null,
           "source": source, "outputs": []})
}

impl Harness {
    async fn delete_job(&self, name: &str) {
        let gone = call(
            &self.site,
            Method::DELETE,
            &format!("/api/v1/jobs/{name}"),
            Some(&self.key),
            None,
        )
        .await;
        assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    }

    /// Job `name` succeeded and its log has `printed`.
    async fn ran(&self, name: &str, printed: &str) -> Value {
        let ended = self.ended(name).await;
        let log = self.log(name).await;
        assert_eq!(ended["status"], "succeeded", "{ended}\n{log}");
        assert!(log.contains(printed), "{printed} in\n{log}");
        ended
    }
}

async fn templates(backend: Backend) {
    let Some(h) = harness(backend, false).await else {
        return;
    };
    let name = "templated";
    running_notebook(&h.site, &h.key, name, json!({})).await;
    let environment = json!({"name": "lab", "requirements": [], "image": NOTEBOOK_IMAGE});
    let made = h.post("/api/v1/environments", Some(environment)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let train = notebook(json!([
        code("epochs = 2\nlabel = 'first'", &["parameters"]),
        code("print(f'RAN epochs={epochs} label={label}')", &[]),
    ]));
    h.save(name, "train.ipynb", train).await;
    let first = h
        .post(
            &format!("/api/v1/notebooks/{name}/runs"),
            Some(
                json!({"path": "train.ipynb", "name": "nb-1", "environment": "lab",
                        "values": {"epochs": 3},
                        "resources": {"cpu": "500m", "memory": "1Gi"}}),
            ),
        )
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    h.ran("nb-1", "RAN epochs=3 label=first").await;

    // Bad templates are refused naming the field.
    let job = json!({"environment": "lab", "trainer": {"cpu": "500m", "memory": "1Gi"}});
    for (body, field) in [
        (
            json!({"name": "t", "job": job, "notebook": {"job": "nothing"}}),
            "notebook.job",
        ),
        (
            json!({"name": "t", "job": {"command": ["python3", "x.py"], "num_trainers": 1},
                   "notebook": {"job": "nb-1"}}),
            "job.command",
        ),
        (
            json!({"name": "t", "job": job, "notebook": {"job": "nb-1"},
                   "parameters": [{"name": "batch", "type": "int", "default": 1}]}),
            "parameters[0].name",
        ),
        (
            json!({"name": "t", "job": job,
                   "notebook": {"notebook": name, "path": "none.ipynb"}}),
            "notebook",
        ),
        (
            json!({"name": "t", "job": {"num_trainers": 2}, "notebook": {"job": "nb-1"}}),
            "job.num_trainers",
        ),
    ] {
        let bad = h.post("/api/v1/templates", Some(body.clone())).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{body}: {}", bad.body);
        assert_eq!(bad.json()["error"]["field"], field, "{}", bad.body);
    }

    // The run saved as a template: the notebook's parameters, defaulting
    // to the run's values.
    let saved = h
        .post(
            "/api/v1/templates",
            Some(json!({"name": "nb-tmpl", "job": job, "notebook": {"job": "nb-1"}})),
        )
        .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
    let saved = saved.json();
    let params: Vec<_> = saved["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].clone(), p["default"].clone()))
        .collect();
    assert_eq!(
        params,
        [
            (json!("epochs"), json!(3)),
            (json!("label"), json!("first"))
        ],
        "{saved}"
    );
    assert_eq!(saved["notebook"]["path"], "train.ipynb", "{saved}");
    assert_eq!(saved["notebook"]["job"], "nb-1", "{saved}");
    let copy = saved["notebook"]["input"].as_str().unwrap().to_owned();
    assert_eq!(copy.len(), 32, "{saved}");

    // From a notebook file: limits, and a parameter that sets the job.
    let from_file = h
        .post(
            "/api/v1/templates",
            Some(json!({
                "name": "nb-file",
                "job": {"environment": "lab", "trainer": {"cpu": "500m", "memory": "{{memory}}"}},
                "parameters": [
                    {"name": "epochs", "type": "int", "min": 1, "max": 10, "default": 1},
                    {"name": "memory", "type": "enum", "choices": ["1Gi", "2Gi"], "default": "1Gi"},
                ],
                "notebook": {"notebook": name, "path": "train.ipynb"},
            })),
        )
        .await;
    assert_eq!(from_file.status, StatusCode::CREATED, "{}", from_file.body);
    let over = h
        .post(
            "/api/v1/templates/nb-file/jobs",
            Some(json!({"values": {"epochs": 11}})),
        )
        .await;
    assert_eq!(over.status, StatusCode::BAD_REQUEST, "{}", over.body);
    assert_eq!(over.json()["error"]["field"], "values.epochs");

    // The run it came from goes; the template keeps its copy and runs it.
    h.delete_job("nb-1").await;
    let run = h
        .post(
            "/api/v1/templates/nb-tmpl/jobs",
            Some(json!({"name": "nb-2", "values": {"label": "templated"}})),
        )
        .await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.body);
    let spec = &run.json()["spec"];
    assert_eq!(spec["template"]["name"], "nb-tmpl", "{spec}");
    let own = spec["notebook_run"]["run"].as_str().unwrap();
    assert_ne!(own, copy, "a run has its own copy");
    h.ran("nb-2", "RAN epochs=3 label=templated").await;
    let output = h.get("/api/v1/jobs/nb-2/notebook/output").await;
    assert_eq!(output.status, StatusCode::OK, "{}", output.body);
    h.delete_job("nb-2").await;

    // The template's notebook, as a file and as a page.
    let file = h.get("/api/v1/templates/nb-tmpl/notebook").await;
    assert_eq!(file.status, StatusCode::OK, "{}", file.body);
    assert!(file.body.contains("label = 'first'"), "{}", file.body);
    let page = h
        .page("/api/v1/templates/nb-tmpl/notebook/html", None)
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let policy = page.headers["content-security-policy"].to_str().unwrap();
    assert!(policy.starts_with("sandbox"), "{policy}");
    let plain = h.get("/api/v1/templates/fit-a-line/notebook").await;
    assert_eq!(plain.status, StatusCode::NOT_FOUND, "{}", plain.body);

    // Saved again as it reads (its run is gone): the copy is kept.
    let again = h.post("/api/v1/templates", Some(saved.clone())).await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.body);
    assert_eq!(again.json()["version"], 2, "{}", again.body);
    // Another account's copy is never read: a made-up key is refused.
    let mut forged = saved.clone();
    forged["notebook"] = json!({"input": "ab".repeat(16)});
    let refused = h.post("/api/v1/templates", Some(forged)).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert_eq!(refused.json()["error"]["field"], "notebook");

    // A pipeline node that names the template runs the notebook.
    let pipeline = h
        .post(
            "/api/v1/pipelines",
            Some(json!({"name": "nbflow", "values": {"e": 4}, "pipeline": {
                "name": "nbflow", "parameters": {"e": 1},
                "nodes": [{"name": "fit", "template": {"name": "nb-file",
                           "values": {"epochs": "{{params.e}}", "memory": "2Gi"}}}],
            }})),
        )
        .await;
    assert_eq!(pipeline.status, StatusCode::CREATED, "{}", pipeline.body);
    let deadline = Instant::now() + Duration::from_secs(600);
    let run = loop {
        let run = h.get("/api/v1/pipelines/nbflow").await.json();
        if run["status"] != "running" {
            break run;
        }
        assert!(Instant::now() < deadline, "the pipeline never ended: {run}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(run["status"], "succeeded", "{run}");
    let ended = h.ran("nbflow-fit", "RAN epochs=4 label=first").await;
    assert_eq!(ended["spec"]["trainer"]["memory"], "2Gi", "{ended}");
    assert_eq!(ended["spec"]["pipeline"]["node"], "fit", "{ended}");
    h.delete_job("nbflow-fit").await;
    h.delete(name).await;
}
