//! What the console builds itself from PyPI, as environments are built:
//! a wait for a build hears how far pip is, and on the embedded defaults
//! (no `--serving-python`) the predict server runs in the console's build
//! of PaddlePaddle, the shipped paddle-cpu environment's (one build for
//! both). Notebooks' JupyterLab is built the same way; `make_run.spec.ts`
//! starts one from a console run as `make run` runs it.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use http::{Method, StatusCode};
use serde_json::json;
use server::local::venvs::{BuildProgress, Venvs, Waited, Waiting};
use tokio::sync::watch;

use crate::common;
use crate::common::rest::{call, key_for};
use crate::environments::shared_environments;
use crate::serving::{
    launch, launch_spec, model_version, paddle_python, predict, tiny_model, wait_until,
};

/// A small package of PyPI (what the environments tests install too).
const SMALL: &str = "tomli-w==1.0.0";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_for_a_build_hears_what_is_prepared_then_how_far_pip_is_and_nothing_once_built() {
    let dir = tempfile::tempdir().unwrap();
    let venvs = Venvs::new(dir.path().to_owned(), "python3".into());
    let waiting = Waiting {
        what: "the tools".into(),
        note: "a test".into(),
    };
    let requirements = vec![SMALL.to_owned()];
    let heard = Arc::new(Mutex::new(Vec::<String>::new()));
    let told = |words: String| {
        heard.lock().unwrap().push(words);
        async { Ok::<_, Infallible>(()) }
    };
    let (_keep, mut stop) = watch::channel(false);
    let Ok(waited) = venvs.wait(&requirements, &waiting, &mut stop, told).await;
    let Waited::Ready(built) = waited else {
        panic!("the build failed: {waited:?}");
    };
    let said = heard.lock().unwrap().clone();
    assert_eq!(
        said.first().map(String::as_str),
        Some("Preparing the tools (a test)…"),
        "{said:#?}"
    );
    assert!(
        said.iter()
            .skip(1)
            .all(|w| w.starts_with("Preparing the tools (a test): ")),
        "{said:#?}"
    );
    // What the reports are read from: pip's real log of this build.
    let log = dir
        .path()
        .join(format!("{}.log", venvs.hash(&requirements)));
    let progress = BuildProgress::read(&log).await;
    assert_eq!(progress.collected, 1, "{progress:?}");
    assert!(!progress.now.is_empty(), "{progress:?}");
    let imports = std::process::Command::new(built.join("bin/python"))
        .args(["-c", "import tomli_w"])
        .status()
        .unwrap();
    assert!(imports.success(), "the build lacks {SMALL}");

    // Built: the next wait is answered at once, without a word.
    heard.lock().unwrap().clear();
    let told = |words: String| {
        heard.lock().unwrap().push(words);
        async { Ok::<_, Infallible>(()) }
    };
    let Ok(again) = venvs.wait(&requirements, &waiting, &mut stop, told).await;
    assert_eq!(again, Waited::Ready(built));
    assert_eq!(*heard.lock().unwrap(), Vec::<String>::new());

    // A build pip refuses fails with pip's words, after the same reports.
    let told = |_: String| async { Ok::<_, Infallible>(()) };
    let bad = vec!["no-such-package-of-paddlecloud-tests==0.0.1".to_owned()];
    let Ok(failed) = venvs.wait(&bad, &waiting, &mut stop, told).await;
    let Waited::Failed(why) = failed else {
        panic!("a missing package was built: {failed:?}");
    };
    assert!(why.starts_with("The tools could not be built: "), "{why}");
    assert!(
        why.contains("no-such-package-of-paddlecloud-tests"),
        "{why}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_serving_python_the_predict_server_runs_in_the_consoles_paddlepaddle_build() {
    // The tiny model is exported with the test venv's PaddlePaddle; the
    // instance is served by the console's own build.
    let Some(python) = paddle_python() else {
        return;
    };
    let model = tiny_model(python);
    let site = common::site::site_configured(|config, _| server::console::Config {
        serving_python: None,
        // Shared with the environments tests (and kept between runs): the
        // build is paddle-cpu's, as a job in that environment uses.
        environments_dir: shared_environments(),
        ..config
    })
    .await;
    let key = key_for(&site, "vision").await;
    let read = |f: &str| std::fs::read(model.join(f)).unwrap();
    let files = [
        ("inference.json", read("inference.json")),
        ("inference.pdiparams", read("inference.pdiparams")),
    ];
    model_version(&site, &key, "vision", "tiny", &files).await;
    let launched = launch(&site, &key, launch_spec("built-api", "tiny", 1)).await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    // A cold machine installs PaddlePaddle first.
    let ready = wait_until(&site, &key, "built-api", 900, |v| v["status"] != "pending").await;
    assert_eq!(ready["status"], "ready", "{ready}");
    let answer = predict(
        &site,
        &key,
        "vision",
        "built-api",
        json!({"inputs": [[1, 2, 3, 4]]}),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let venvs = Venvs::new(shared_environments(), "python3".into());
    let requirements = server::environments::paddle_cpu_requirements();
    assert!(
        venvs.dir(&requirements).join(".paddlecloud-ready").exists(),
        "the build is not paddle-cpu's"
    );
    let stopped = call(
        &site,
        Method::POST,
        "/api/v1/serving/built-api/stop",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
}
