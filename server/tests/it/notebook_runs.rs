//! Parameterized runs (Submarine's "parameters that let a notebook run like
//! a job"), on each backend with a real JupyterLab and a real papermill: a
//! saved notebook's parameters cell read and typed, a run with values given
//! as a form sends them (text turned into numbers), the job's replica runs
//! it with papermill and sends the executed notebook back, a failing cell
//! fails the job and is named, and nobody but the notebook's owner runs it
//! or writes a run's output but the run's own job.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::rest::{call, Answer};
use crate::notebook_contract::{harness, Backend, Harness, NOTEBOOK_IMAGE};
use crate::notebook_versions::{markdown, notebook};
use crate::notebooks::running_notebook;

mod a_notebook_with_a_parameters_cell_runs_as_a_job_with_typed_values_and_a_failing_cell_fails_it {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_local() {
        super::runs(super::Backend::Local).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_a_real_node() {
        super::runs(super::Backend::RealNode).await;
    }
}

fn code(source: &str, tags: &[&str]) -> Value {
    json!({"cell_type": "code", "metadata": {"tags": tags}, "execution_count": null,
           "source": source, "outputs": []})
}

impl Harness {
    pub(crate) async fn get(&self, path: &str) -> Answer {
        call(&self.site, Method::GET, path, Some(&self.key), None).await
    }

    /// `GET path` of a notebook rendered as a page, with `key` (the
    /// owner's when `None`). On a console whose notebooks run in pods the
    /// first page waits for the console's own JupyterLab build, answering
    /// 503 "Preparing …; try again in a minute" meanwhile, as a user would
    /// be told: asked again every 5 s, for up to 10 minutes (a cold build
    /// on a busy machine takes minutes).
    pub(crate) async fn page(&self, path: &str, key: Option<&str>) -> Answer {
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            let key = key.unwrap_or(&self.key);
            let page = call(&self.site, Method::GET, path, Some(key), None).await;
            let preparing =
                page.status == StatusCode::SERVICE_UNAVAILABLE && page.body.contains("Preparing");
            if !preparing || Instant::now() > deadline {
                return page;
            }
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    }

    /// Waits (the first run builds its environment from PyPI) until job
    /// `name` ends; returns it.
    pub(crate) async fn ended(&self, name: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(900);
        loop {
            let job = self.get(&format!("/api/v1/jobs/{name}")).await;
            assert_eq!(job.status, StatusCode::OK, "{}", job.body);
            let job = job.json();
            if ["succeeded", "failed", "stopped", "lost"].contains(&job["status"].as_str().unwrap())
            {
                return job;
            }
            assert!(Instant::now() < deadline, "{name} did not end: {job}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    pub(crate) async fn log(&self, job: &str) -> String {
        self.get(&format!("/api/v1/jobs/{job}/pods/trainer-0/log"))
            .await
            .body
    }
}

async fn runs(backend: Backend) {
    let Some(h) = harness(backend, false).await else {
        return;
    };
    let name = "runner";
    running_notebook(&h.site, &h.key, name, json!({})).await;
    // Runs take an environment with the notebook image, so that on the
    // node papermill is in the image already (locally it is built).
    let environment = json!({"name": "lab", "requirements": [], "image": NOTEBOOK_IMAGE});
    let made = h.post("/api/v1/environments", Some(environment)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);

    // A notebook saved through the proxy, its parameters cell tagged.
    let train = notebook(json!([
        markdown("a", "# Train"),
        code("epochs = 2  # passes over the data\nlr = 0.1\nlabel = 'first'\nuse_gpu = False", &["parameters"]),
        code("print(f'RAN epochs={epochs} lr={lr} label={label} types={type(epochs).__name__},{type(lr).__name__}')", &[]),
        code("import os\nprint('JOB', os.environ['PADDLE_JOB_ID'])", &[]),
    ]));
    h.save(name, "train.ipynb", train).await;

    let read = h
        .get(&format!(
            "/api/v1/notebooks/{name}/parameters?path=train.ipynb"
        ))
        .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    let read = read.json();
    assert_eq!(read["cell"], 2, "{read}");
    let params: Vec<_> = read["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].clone(), p["type"].clone(), p["default"].clone()))
        .collect();
    assert_eq!(
        params,
        [
            (json!("epochs"), json!("int"), json!(2)),
            (json!("lr"), json!("float"), json!(0.1)),
            (json!("label"), json!("string"), json!("first")),
            (json!("use_gpu"), json!("bool"), json!(false)),
        ],
        "{read}"
    );
    assert_eq!(read["parameters"][0]["description"], "passes over the data");

    // Bad values are refused before anything runs, naming the field.
    let runs = format!("/api/v1/notebooks/{name}/runs");
    for (values, field) in [
        (json!({"epochs": "five"}), "values.epochs"),
        (json!({"batch": 3}), "values.batch"),
    ] {
        let bad = h
            .post(
                &runs,
                Some(json!({"path": "train.ipynb", "values": values, "environment": "lab"})),
            )
            .await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
        assert_eq!(bad.json()["error"]["field"], field, "{}", bad.body);
    }
    let missing = h.post(&runs, Some(json!({"path": "none.ipynb"}))).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);
    assert!(missing.body.contains("Ctrl+S"), "{}", missing.body);

    // A run with values as a form sends them: text where numbers go.
    let started = h
        .post(
            &runs,
            Some(json!({
                "path": "train.ipynb", "name": "train-1", "environment": "lab",
                "values": {"epochs": "5", "lr": 0.5, "label": "second"},
                "resources": {"cpu": "500m", "memory": "1Gi"},
            })),
        )
        .await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let job = started.json();
    assert_eq!(job["spec"]["notebook_run"]["notebook"], name);
    assert_eq!(
        job["spec"]["notebook_run"]["values"],
        json!({"epochs": 5, "lr": 0.5, "label": "second"})
    );
    let ended = h.ended("train-1").await;
    let log = h.log("train-1").await;
    assert_eq!(ended["status"], "succeeded", "{ended}\n{log}");
    assert!(
        log.contains("RAN epochs=5 lr=0.5 label=second types=int,float"),
        "{log}"
    );
    assert!(log.contains("JOB train-1"), "{log}");

    let detail = h.get("/api/v1/jobs/train-1/detail").await.json();
    let report = &detail["notebook_run"];
    assert_eq!(
        (report["cells"].clone(), report["done"].clone()),
        (json!(4), json!(4)),
        "{detail}"
    );
    assert!(report["failed"].is_null(), "{detail}");

    // The executed notebook: papermill's injected cell after the tagged
    // one, the outputs; its page sandboxed as a version's.
    let output = h.get("/api/v1/jobs/train-1/notebook/output").await;
    assert_eq!(output.status, StatusCode::OK, "{}", output.body);
    let output: Value = serde_json::from_str(&output.body).unwrap();
    let injected = &output["cells"][2];
    assert!(
        injected["metadata"]["tags"]
            .to_string()
            .contains("injected-parameters"),
        "{injected}"
    );
    assert!(output.to_string().contains("RAN epochs=5"), "{output}");
    let page = h
        .page("/api/v1/jobs/train-1/notebook/output/html", None)
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let policy = page.headers["content-security-policy"].to_str().unwrap();
    assert!(policy.starts_with("sandbox"), "{policy}");
    assert!(
        page.body.contains("RAN epochs=5"),
        "the page shows the outputs"
    );
    let input = h.get("/api/v1/jobs/train-1/notebook/input").await;
    assert_eq!(input.status, StatusCode::OK);
    assert!(
        input.body.contains("label = 'first'"),
        "the input is the version as saved"
    );

    // A failing cell fails the job, and the page names it.
    let failing = notebook(json!([
        code("divisor = 1", &["parameters"]),
        code("print('BEFORE')", &[]),
        code("print(10 / divisor)", &[]),
        code("print('AFTER')", &[]),
    ]));
    h.save(name, "fail.ipynb", failing).await;
    let started = h
        .post(
            &runs,
            Some(
                json!({"path": "fail.ipynb", "name": "fail-1", "environment": "lab",
                        "values": {"divisor": 0}}),
            ),
        )
        .await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let ended = h.ended("fail-1").await;
    let log = h.log("fail-1").await;
    assert_eq!(ended["status"], "failed", "{ended}\n{log}");
    assert!(log.contains("BEFORE") && !log.contains("AFTER"), "{log}");
    assert!(log.contains("ZeroDivisionError"), "{log}");
    let detail = h.get("/api/v1/jobs/fail-1/detail").await.json();
    let failed = &detail["notebook_run"]["failed"];
    // Code cells: the parameters, papermill's injected one, BEFORE, the division.
    assert_eq!(failed["cell"], 4, "{detail}");
    assert_eq!(
        failed["error"], "ZeroDivisionError: division by zero",
        "{detail}"
    );
    assert_eq!(failed["source"], "print(10 / divisor)", "{detail}");
    assert_eq!(detail["notebook_run"]["done"], 3, "{detail}");

    // Only the run's own job writes its output.
    let put = call(
        &h.site,
        Method::PUT,
        "/api/v1/jobs/fail-1/notebook/output",
        Some(&h.key),
        Some(json!({"cells": []})),
    )
    .await;
    assert_eq!(put.status, StatusCode::FORBIDDEN, "{}", put.body);
    // A plain job is no notebook run.
    let plain = h.get("/api/v1/jobs/nothing/notebook/input").await;
    assert_eq!(plain.status, StatusCode::NOT_FOUND, "{}", plain.body);

    // Another member reads the job's notebook, but runs nobody's notebook
    // but their own.
    let account = h.site.owner(&h.account).await.account;
    let other = crate::notebooks::member_of(&h.site, &account).await;
    let theirs = call(
        &h.site,
        Method::GET,
        &format!("/api/v1/notebooks/{name}/parameters?path=train.ipynb"),
        Some(&other),
        None,
    )
    .await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND, "{}", theirs.body);
    let ran = call(
        &h.site,
        Method::POST,
        &runs,
        Some(&other),
        Some(json!({"path": "train.ipynb"})),
    )
    .await;
    assert_eq!(ran.status, StatusCode::NOT_FOUND, "{}", ran.body);
    let read = call(
        &h.site,
        Method::GET,
        "/api/v1/jobs/train-1/notebook/output",
        Some(&other),
        None,
    )
    .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);

    // Deleting the job deletes its run's files.
    let gone = call(
        &h.site,
        Method::DELETE,
        "/api/v1/jobs/train-1",
        Some(&h.key),
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    let output = h.get("/api/v1/jobs/train-1/notebook/output").await;
    assert_eq!(output.status, StatusCode::NOT_FOUND, "{}", output.body);
    // The node is the next test's: nothing of this one stays on it.
    let gone = call(
        &h.site,
        Method::DELETE,
        "/api/v1/jobs/fail-1",
        Some(&h.key),
        None,
    )
    .await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.body);
    h.delete(name).await;
}
