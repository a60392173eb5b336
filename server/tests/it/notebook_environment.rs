//! A notebook that names an environment: its default Python kernel runs in
//! that environment's virtualenv (built with ipykernel added), so a cell
//! imports what only that environment has.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};
use server::console::Config;

use crate::common;
use crate::common::rest::{call, key_and_cookie};
use crate::notebooks::{http, json_of, jupyter_python, printed_value, run_cell, start_kernel};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notebooks_kernel_runs_in_the_environment_it_names() {
    let Some(python) = jupyter_python() else {
        return;
    };
    let builds = tempfile::tempdir().unwrap();
    let dir = builds.path().to_owned();
    let (site, url) = common::site::on_socket(|config, _, _| Config {
        notebook_python: Some(python.display().to_string()),
        environments_dir: dir.clone(),
        ..config
    })
    .await;
    let (key, cookie) = key_and_cookie(&site, "kernels").await;
    let saved = call(
        &site,
        Method::POST,
        "/api/v1/environments",
        Some(&key),
        Some(json!({"name": "toml", "requirements": ["tomli-w==1.0.0"]})),
    )
    .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
    let made = call(
        &site,
        Method::POST,
        "/api/v1/notebooks",
        Some(&key),
        Some(
            json!({"name": "lab", "resources": {"cpu": "500m", "memory": "1Gi"},
                    "environment": "toml"}),
        ),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    assert_eq!(made.json()["spec"]["environment"], "kernels/toml:1");
    // Building ipykernel into it takes a while: the notebook says why it waits.
    let mut said = String::new();
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let nb: Value = call(
            &site,
            Method::GET,
            "/api/v1/notebooks/lab",
            Some(&key),
            None,
        )
        .await
        .json();
        if nb["message"]
            .as_str()
            .unwrap_or_default()
            .contains("Preparing its environment")
        {
            said = nb["message"].as_str().unwrap().to_owned();
        }
        if nb["status"] == "running" {
            break;
        }
        assert!(
            Instant::now() < deadline && nb["status"] != "failed",
            "{nb}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(said.contains("kernels/toml:1"), "{said:?}");

    let lab = "/notebooks/kernels/lab/";
    let specs = http()
        .get(format!("{url}{lab}api/kernelspecs"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(specs.status(), StatusCode::OK);
    let specs = json_of(specs).await;
    assert_eq!(specs["default"], "python3", "{specs}");
    assert_eq!(
        specs["kernelspecs"]["python3"]["spec"]["display_name"], "Python 3 (kernels/toml:1)",
        "{specs}"
    );
    let kernel = start_kernel(&url, lab, &cookie).await;
    let code = "import sys, tomli_w, paddlecloud\nprint('PREFIX', sys.prefix)\nprint('TOML', tomli_w.dumps({'a': 1}).strip())";
    // A new kernel's first output can be lost while its channel connects.
    let mut printed = String::new();
    for _ in 0..3 {
        printed = run_cell(&url, lab, &kernel, &cookie, code).await;
        if printed.contains("PREFIX") {
            break;
        }
    }
    assert!(
        printed_value(&printed, "PREFIX").starts_with(&dir.display().to_string()),
        "{printed}"
    );
    assert_eq!(printed_value(&printed, "TOML"), "a = 1");
}

/// The dialogs take an environment (jobs, notebooks, serving) and the
/// model versions a job reads; what is not there comes back naming the
/// field, and nothing is made.
#[tokio::test(flavor = "multi_thread")]
async fn the_dialogs_refuse_an_environment_or_a_model_that_is_not_there_naming_the_field() {
    let site = common::site::site().await;
    let (key, cookie) = key_and_cookie(&site, "dialogs").await;
    for (page, field) in [
        ("/jobs?submit=1", "form[environment]"),
        ("/jobs?submit=1", "form[models]"),
        ("/notebooks?new=1", "form[environment]"),
    ] {
        let html = common::site::text(site.get(page, Some(&cookie)).await).await;
        assert!(
            html.contains(&format!(r#"name="{field}""#)),
            "{page}: {html}"
        );
    }
    let job = "form[name]=j&form[command]=true&form[num_ps]=0&form[num_trainers]=1\
               &form[ps_cpu]=1&form[ps_memory]=1Gi&form[trainer_cpu]=1&form[trainer_memory]=1Gi";
    let notebook = "form[name]=n&form[cpu]=1&form[memory]=1Gi";
    for (function, body, field, message) in [
        (
            "/api/submit_job",
            format!("{job}&form[models]=nope"),
            "models",
            "There is no model “nope” you can read.",
        ),
        (
            "/api/submit_job",
            format!("{job}&form[environment]=nope"),
            "environment",
            "There is no environment “nope” you can use.",
        ),
        (
            "/api/create_notebook",
            format!("{notebook}&form[environment]=nope"),
            "environment",
            "There is no environment “nope” you can use.",
        ),
        (
            "/api/launch_serving",
            "form[name]=s&form[model]=m&form[replicas]=1&form[cpu]=1&form[memory]=1Gi&form[environment]=nope".to_owned(),
            "environment",
            "There is no environment “nope” you can use.",
        ),
        (
            "/api/create_notebook",
            format!("{notebook}&form[environment]=Not+One"),
            "environment",
            "is not an environment",
        ),
    ] {
        let answer = site.fetch_post(function, &body, Some(&cookie)).await;
        let status = answer.status();
        let text = common::site::text(answer).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{function}: {text}");
        let error: Value = serde_json::from_str(&text).unwrap_or_default();
        assert!(
            text.contains(field) && text.contains(message),
            "{function}: {text} ({error})"
        );
    }
    for listed in ["/api/v1/jobs", "/api/v1/notebooks"] {
        let list = call(&site, Method::GET, listed, Some(&key), None).await;
        assert!(
            !list.body.contains(r#""name":"j""#) && !list.body.contains(r#""name":"n""#),
            "{}",
            list.body
        );
    }
}
