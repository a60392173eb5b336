//! Environment profiles through the REST API: a real virtualenv built from
//! PyPI with its log, a job that runs inside it (importing a package only
//! that environment has), immutable versions recorded exactly by jobs,
//! publication by a site admin only, and the shipped ones. The last test
//! runs the shipped fit-a-line template (PaddlePaddle, 2 trainers over
//! gloo) in the shipped paddle-cpu environment, reads its VisualDL loss,
//! and evaluates the model version it registered with evaluate-a-line.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common;
use crate::common::rest::{call, key_and_cookie, Answer};
use crate::common::site::Site;

/// A small pure-Python package that neither the console's Python nor the
/// test venv has: importing it proves a job runs in the environment.
const ONLY_IN_ENV: &str = "tomli-w==1.0.0";

async fn post(site: &Site, key: &str, path: &str, body: Value) -> Answer {
    call(site, Method::POST, path, Some(key), Some(body)).await
}

async fn get(site: &Site, key: &str, path: &str) -> Answer {
    call(site, Method::GET, path, Some(key), None).await
}

/// Waits until `path` (an environment) has a finished build; its detail.
async fn built(site: &Site, key: &str, path: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let detail = get(site, key, path).await;
        assert_eq!(detail.status, StatusCode::OK, "{}", detail.body);
        let detail = detail.json();
        match detail["build"]["state"].as_str().unwrap() {
            "ready" | "failed" => return detail,
            _ => {}
        }
        assert!(Instant::now() < deadline, "the build never ended: {detail}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits for job `name` to end; the job.
async fn ended(site: &Site, key: &str, name: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let job = get(site, key, &format!("/api/v1/jobs/{name}")).await.json();
        if matches!(
            job["status"].as_str().unwrap(),
            "succeeded" | "failed" | "stopped"
        ) {
            return job;
        }
        assert!(Instant::now() < deadline, "{name} never ended: {job}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The whole log of `job`'s first trainer.
async fn trainer_log(site: &Site, key: &str, job: &str) -> String {
    get(site, key, &format!("/api/v1/jobs/{job}/pods/trainer-0/log"))
        .await
        .body
}

fn job(name: &str, code: &str, environment: Option<&str>) -> Value {
    let mut spec = json!({
        "name": name,
        "command": ["python", "-c", code],
        "num_trainers": 1,
        "trainer": {"cpu": "500m", "memory": "256Mi"},
    });
    if let Some(e) = environment {
        spec["environment"] = json!(e);
    }
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_environment_is_built_from_pypi_and_a_job_runs_inside_it() {
    let site = common::site::site().await;
    let (key, _) = key_and_cookie(&site, "envs").await;
    let saved = post(
        &site,
        &key,
        "/api/v1/environments",
        json!({"name": "tools", "description": "TOML writing", "requirements": [ONLY_IN_ENV, ""]}),
    )
    .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
    assert_eq!(saved.json()["version"], 1);
    assert_eq!(saved.json()["requirements"], json!([ONLY_IN_ENV]));
    assert_eq!(
        saved.headers["location"],
        "/api/v1/environments/tools?version=1"
    );
    let detail = built(
        &site,
        &key,
        "/api/v1/environments/tools",
        Duration::from_secs(240),
    )
    .await;
    let log = detail["build"]["log"].as_str().unwrap();
    assert_eq!(detail["build"]["state"], "ready", "{log}");
    assert!(
        log.contains("Successfully installed tomli-w-1.0.0"),
        "{log}"
    );
    assert!(log.contains("Ready."), "{log}");

    // A job in it imports what only it has, and the SDK; one without it cannot.
    let code = "import tomli_w, paddlecloud, sys; print('inside', tomli_w.dumps({'a': 1}).strip(), sys.prefix)";
    let inside = post(
        &site,
        &key,
        "/api/v1/jobs",
        job("inside", code, Some("tools")),
    )
    .await;
    assert_eq!(inside.status, StatusCode::CREATED, "{}", inside.body);
    assert_eq!(inside.json()["spec"]["environment"], "envs/tools:1");
    assert_eq!(
        inside.json()["spec"]["environment_use"]["requirements"],
        json!([ONLY_IN_ENV])
    );
    let outside = post(&site, &key, "/api/v1/jobs", job("outside", code, None)).await;
    assert_eq!(outside.status, StatusCode::CREATED, "{}", outside.body);
    let done = ended(&site, &key, "inside", Duration::from_secs(60)).await;
    let log = trainer_log(&site, &key, "inside").await;
    assert_eq!(done["status"], "succeeded", "{done} {log}");
    assert!(log.contains("inside a = 1"), "{log}");
    let done = ended(&site, &key, "outside", Duration::from_secs(60)).await;
    let log = trainer_log(&site, &key, "outside").await;
    assert_eq!(done["status"], "failed", "{done}");
    assert!(log.contains("No module named 'tomli_w'"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_that_fails_says_why_and_so_does_a_job_that_needed_it() {
    let site = common::site::site().await;
    let (key, _) = key_and_cookie(&site, "broken").await;
    let saved = post(
        &site,
        &key,
        "/api/v1/environments",
        json!({"name": "nothing", "requirements": ["paddlecloud-no-such-package-anywhere==0.0.1"]}),
    )
    .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
    let detail = built(
        &site,
        &key,
        "/api/v1/environments/nothing",
        Duration::from_secs(180),
    )
    .await;
    assert_eq!(detail["build"]["state"], "failed", "{detail}");
    let message = detail["build"]["message"].as_str().unwrap();
    assert!(
        message.contains("Installing the requirements from PyPI failed"),
        "{message}"
    );
    assert!(
        detail["build"]["log"]
            .as_str()
            .unwrap()
            .contains("paddlecloud-no-such-package-anywhere"),
        "{detail}"
    );
    let submitted = post(
        &site,
        &key,
        "/api/v1/jobs",
        job("needs-it", "pass", Some("nothing")),
    )
    .await;
    assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.body);
    let done = ended(&site, &key, "needs-it", Duration::from_secs(180)).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert!(
        done["message"]
            .as_str()
            .unwrap()
            .contains("Its environment broken/nothing:1 could not be built"),
        "{done}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn versions_are_immutable_and_a_job_records_the_exact_one() {
    let site = common::site::site().await;
    let (key, _) = key_and_cookie(&site, "versions").await;
    for requirements in [json!([]), json!(["tomli-w==1.0.0"])] {
        let saved = post(
            &site,
            &key,
            "/api/v1/environments",
            json!({"name": "base", "requirements": requirements, "image": "python:3.11-slim"}),
        )
        .await;
        assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
    }
    let v1 = get(&site, &key, "/api/v1/environments/base?version=1").await;
    assert_eq!(
        v1.json()["environment"]["requirements"],
        json!([]),
        "{}",
        v1.body
    );
    let newest = get(&site, &key, "/api/v1/environments/base").await.json();
    assert_eq!(newest["environment"]["version"], 2);
    assert_eq!(newest["versions"], json!([2, 1]));
    assert_eq!(newest["can_edit"], true);
    for (named, recorded) in [
        ("base", "versions/base:2"),
        ("base:1", "versions/base:1"),
        ("versions/base:2", "versions/base:2"),
    ] {
        let spec = job(
            &format!("pin-{}", recorded.len() + named.len()),
            "pass",
            Some(named),
        );
        let submitted = post(&site, &key, "/api/v1/jobs", spec).await;
        assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.body);
        assert_eq!(submitted.json()["spec"]["environment"], recorded);
    }
    // A client cannot say what an environment holds.
    let mut spec = job("claims", "pass", None);
    spec["environment_use"] = json!({"reference": "x/y:1", "requirements": ["evil"]});
    let submitted = post(&site, &key, "/api/v1/jobs", spec).await;
    assert!(
        submitted.json()["spec"]["environment_use"].is_null(),
        "{}",
        submitted.body
    );
    // Names that are no environment: a 400 on `environment`.
    for named in ["base:9", "nowhere", "Bad Name"] {
        let refused = post(
            &site,
            &key,
            "/api/v1/jobs",
            job("nope", "pass", Some(named)),
        )
        .await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{named}: {}",
            refused.body
        );
        assert_eq!(
            refused.error().1.as_deref(),
            Some("environment"),
            "{}",
            refused.body
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_environments_are_refused_naming_the_field() {
    let site = common::site::site().await;
    let (key, _) = key_and_cookie(&site, "badenv").await;
    for (body, field) in [
        (json!({"name": "Not Valid"}), "name"),
        (
            json!({"name": "ok", "requirements": ["-e ."]}),
            "requirements[0]",
        ),
        (
            json!({"name": "ok", "requirements": ["numpy", "pkg @ https://x/p.whl"]}),
            "requirements[1]",
        ),
        (json!({"name": "ok", "image": "two words"}), "image"),
    ] {
        let refused = post(&site, &key, "/api/v1/environments", body.clone()).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            refused.body
        );
        assert_eq!(
            refused.error().1.as_deref(),
            Some(field),
            "{}",
            refused.body
        );
    }
    let list = get(&site, &key, "/api/v1/environments").await.json();
    assert!(
        list["environments"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["environment"]["owner"] == "paddlecloud"),
        "nothing was saved: {list}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn another_accounts_environment_is_not_found_until_a_site_admin_publishes_it() {
    let site = common::site::site().await;
    let (owner, _) = key_and_cookie(&site, "maker").await;
    let (other, _) = key_and_cookie(&site, "user").await;
    let saved = post(
        &site,
        &owner,
        "/api/v1/environments",
        json!({"name": "shared"}),
    )
    .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
    let hidden = get(&site, &other, "/api/v1/environments/shared?owner=maker").await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND, "{}", hidden.body);
    let refused = post(
        &site,
        &other,
        "/api/v1/jobs",
        job("uses", "pass", Some("maker/shared")),
    )
    .await;
    assert_eq!(
        refused.error().1.as_deref(),
        Some("environment"),
        "{}",
        refused.body
    );
    // Publishing is a site admin's: not the owner's, not anyone's.
    for key in [&owner, &other] {
        let denied = post(
            &site,
            key,
            "/api/v1/environments/shared/publish",
            json!({"owner": "maker", "public": true}),
        )
        .await;
        assert_eq!(denied.status, StatusCode::FORBIDDEN, "{}", denied.body);
    }
    let admin = site.admin_key().await;
    let published = post(
        &site,
        &admin,
        "/api/v1/environments/shared/publish",
        json!({"owner": "maker", "public": true}),
    )
    .await;
    assert_eq!(published.status, StatusCode::OK, "{}", published.body);
    assert_eq!(published.json()["public"], true);
    let seen = get(&site, &other, "/api/v1/environments/shared?owner=maker").await;
    assert_eq!(seen.status, StatusCode::OK, "{}", seen.body);
    assert_eq!(seen.json()["can_edit"], false);
    let uses = post(
        &site,
        &other,
        "/api/v1/jobs",
        job("uses", "pass", Some("maker/shared")),
    )
    .await;
    assert_eq!(
        uses.json()["spec"]["environment"],
        "maker/shared:1",
        "{}",
        uses.body
    );
    // A new version stays published.
    post(
        &site,
        &owner,
        "/api/v1/environments",
        json!({"name": "shared", "description": "v2"}),
    )
    .await;
    let seen = get(&site, &other, "/api/v1/environments/shared?owner=maker")
        .await
        .json();
    assert_eq!(seen["environment"]["version"], 2, "{seen}");
    // Taken back: gone again for the other account.
    let back = post(
        &site,
        &admin,
        "/api/v1/environments/shared/publish",
        json!({"owner": "maker", "public": false}),
    )
    .await;
    assert_eq!(back.status, StatusCode::OK, "{}", back.body);
    assert_eq!(back.json()["public"], false);
    let hidden = get(&site, &other, "/api/v1/environments/shared?owner=maker").await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND, "{}", hidden.body);

    // Templates are shared the same way.
    let template = json!({"name": "hello", "job": {"command": ["true"], "num_trainers": 1}});
    let saved = post(&site, &owner, "/api/v1/templates", template).await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
    let hidden = get(&site, &other, "/api/v1/templates/hello?owner=maker").await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND, "{}", hidden.body);
    let denied = post(
        &site,
        &owner,
        "/api/v1/templates/hello/publish",
        json!({"public": true}),
    )
    .await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN, "{}", denied.body);
    let published = post(
        &site,
        &admin,
        "/api/v1/templates/hello/publish",
        json!({"owner": "maker", "public": true}),
    )
    .await;
    assert_eq!(published.status, StatusCode::OK, "{}", published.body);
    let run = post(
        &site,
        &other,
        "/api/v1/templates/hello/jobs",
        json!({"owner": "maker", "name": "borrowed"}),
    )
    .await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.body);
    assert_eq!(run.json()["spec"]["template"]["owner"], "maker");
    // The owner's audit log says who published what, and who took it back.
    let log = get(&site, &owner, "/api/v1/audit").await.json();
    let events: Vec<(String, String)> = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_owned(),
                e["detail"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for (action, detail) in [
        (
            "template.published",
            "template maker/hello published for every account",
        ),
        (
            "environment.unpublished",
            "environment maker/shared taken back from every account",
        ),
        (
            "environment.published",
            "environment maker/shared published for every account",
        ),
    ] {
        assert!(
            events.contains(&(action.to_owned(), detail.to_owned())),
            "{action}: {log}"
        );
    }
    assert!(log.to_string().contains(common::site::ADMIN_EMAIL), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_ships_paddle_cpu_and_minimal_for_everyone() {
    let site = common::site::site().await;
    let (key, _) = key_and_cookie(&site, "newcomer").await;
    let list = get(&site, &key, "/api/v1/environments").await.json();
    let shipped: Vec<(String, String, bool)> = list["environments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let e = &e["environment"];
            (
                e["owner"].as_str().unwrap().to_owned(),
                e["name"].as_str().unwrap().to_owned(),
                e["public"].as_bool().unwrap(),
            )
        })
        .collect();
    for name in ["minimal", "paddle-cpu"] {
        assert!(
            shipped.contains(&("paddlecloud".to_owned(), name.to_owned(), true)),
            "{list}"
        );
    }
    let paddle = get(
        &site,
        &key,
        "/api/v1/environments/paddle-cpu?owner=paddlecloud",
    )
    .await
    .json();
    let requirements = paddle["environment"]["requirements"].to_string();
    assert!(
        requirements.contains("paddlepaddle==") && requirements.contains("visualdl=="),
        "{paddle}"
    );
    let templates = get(&site, &key, "/api/v1/templates").await.body;
    assert!(templates.contains(r#""name":"fit-a-line""#), "{templates}");
}

/// Where the paddle-cpu build is kept between test runs: building it takes
/// a minute or more even from pip's cache, and a build is the same on
/// every run (it is named by its requirements' hash).
pub(crate) fn shared_environments() -> std::path::PathBuf {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/tmp".into());
    std::path::PathBuf::from(home).join(".cache/paddlecloud/environments")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_fit_a_line_template_trains_with_two_trainers_and_evaluate_a_line_measures_its_model(
) {
    if std::env::var_os("PADDLECLOUD_REQUIRE_PADDLE").is_none()
        && common::metric_logs::python().is_none()
    {
        eprintln!("skipping: no PaddlePaddle test setup (scripts/setup.sh test)");
        return;
    }
    let (site, _) = common::site::on_socket(|mut config, _, _| {
        config.environments_dir = shared_environments();
        // Without PaddlePaddle: an instance that serves the line can only
        // have run in its environment.
        config.serving_python = Some("/usr/bin/python3".into());
        config
    })
    .await;
    let (key, _) = key_and_cookie(&site, "lines").await;
    let run = post(
        &site,
        &key,
        "/api/v1/templates/fit-a-line/jobs",
        json!({"owner": "paddlecloud", "name": "line", "values": {"epochs": 6}}),
    )
    .await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.body);
    let spec = &run.json()["spec"];
    assert_eq!(spec["num_trainers"], 2);
    assert!(
        spec["environment"]
            .as_str()
            .unwrap()
            .starts_with("paddlecloud/paddle-cpu:"),
        "{spec}"
    );
    let done = ended(&site, &key, "line", Duration::from_secs(900)).await;
    let log = trainer_log(&site, &key, "line").await;
    assert_eq!(done["status"], "succeeded", "{done}\n{log}");
    assert!(log.contains("trainer 0/2 epoch 6"), "{log}");
    let other = get(&site, &key, "/api/v1/jobs/line/pods/trainer-1/log")
        .await
        .body;
    assert!(other.contains("trainer 1/2 epoch 6"), "{other}");
    // The loss, as VisualDL scalars, in PaddleBoard.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let tags = get(&site, &key, "/api/v1/jobs/line/metrics").await.body;
        // Named by the folder the program writes to (`vdl`) and the tag.
        if tags.contains(r#""tag":"vdl/train/loss""#) && tags.contains(r#""points":6"#) {
            break;
        }
        assert!(Instant::now() < deadline, "no loss curve: {tags}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // It registered the fitted line as a model version, made by that job…
    assert!(log.contains("registered fit-a-line version 1"), "{log}");
    let versions = get(&site, &key, "/api/v1/models/lines/fit-a-line/versions")
        .await
        .json();
    assert_eq!(versions[0]["job"], "line", "{versions}");
    assert_eq!(versions[0]["state"], "ready", "{versions}");
    // …which the shipped evaluate-a-line template reads and measures.
    let run = post(
        &site,
        &key,
        "/api/v1/templates/evaluate-a-line/jobs",
        json!({"owner": "paddlecloud", "name": "line-eval", "values": {"samples": 500}}),
    )
    .await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.body);
    assert_eq!(run.json()["spec"]["models"], json!(["lines/fit-a-line:1"]));
    let done = ended(&site, &key, "line-eval", Duration::from_secs(300)).await;
    let log = trainer_log(&site, &key, "line-eval").await;
    assert_eq!(done["status"], "succeeded", "{done}\n{log}");
    let mse: f64 = log
        .split("mse ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no mse in {log}"));
    // Six epochs fit the line closely; an unfitted one is off by several.
    assert!(mse < 0.5, "{log}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let tags = get(&site, &key, "/api/v1/jobs/line-eval/metrics")
            .await
            .body;
        if tags.contains(r#""tag":"vdl/eval/mse""#) {
            break;
        }
        assert!(Instant::now() < deadline, "no mse metric: {tags}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The exported line, served by the default predict server in paddle-cpu.
    let launched = post(
        &site,
        &key,
        "/api/v1/serving",
        json!({
            "name": "line-api", "model": "fit-a-line", "replicas": 1,
            "resources": {"cpu": "1", "memory": "1Gi"},
            "environment": "paddlecloud/paddle-cpu",
        }),
    )
    .await;
    assert_eq!(launched.status, StatusCode::CREATED, "{}", launched.body);
    let pinned = launched.json()["spec"]["environment"].clone();
    assert!(
        pinned
            .as_str()
            .unwrap()
            .starts_with("paddlecloud/paddle-cpu:"),
        "{pinned}"
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let instance = get(&site, &key, "/api/v1/serving/line-api").await.json();
        if instance["status"] == "ready" {
            break;
        }
        assert!(
            Instant::now() < deadline && instance["status"] != "failed",
            "{instance}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let answer = post(
        &site,
        &key,
        "/serve/lines/line-api/predict",
        json!({"inputs": {"x": [[1.0, 1.0]]}}),
    )
    .await;
    let y = answer.first_prediction();
    // 2·1 − 3.4·1 + 4.2
    assert!((y - 2.8).abs() < 0.3, "{}", answer.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_environments_pages_list_them_show_a_version_and_save_one_from_the_form() {
    let site = common::site::site().await;
    let (key, cookie) = key_and_cookie(&site, "pager").await;
    let list = common::site::text(site.get("/environments", Some(&cookie)).await).await;
    assert!(
        list.contains(r#"data-environment="paddlecloud/paddle-cpu""#),
        "{list}"
    );
    assert!(
        list.contains(r#"href="/environments/minimal?owner=paddlecloud""#),
        "{list}"
    );
    assert!(list.contains(r#"name="form[requirements]""#), "{list}");

    // The form's post saves version 1; a bad line is refused, naming it.
    let refused = site
        .fetch_post(
            "/api/save_environment",
            "form[name]=tools&form[requirements]=numpy%0A--index-url+http%3A%2F%2Fevil",
            Some(&cookie),
        )
        .await;
    let refused = common::site::text(refused).await;
    assert!(refused.contains("requirements[1]"), "{refused}");
    let saved = site
        .fetch_post(
            "/api/save_environment",
            "form[name]=tools&form[description]=TOML&form[requirements]=tomli-w%3D%3D1.0.0%0A&form[image]=python%3A3.11",
            Some(&cookie),
        )
        .await;
    assert!(
        saved.status().is_success() || saved.status().is_redirection(),
        "{}",
        saved.status()
    );
    let detail = get(&site, &key, "/api/v1/environments/tools").await.json();
    assert_eq!(
        detail["environment"]["requirements"],
        json!(["tomli-w==1.0.0"])
    );

    let page = common::site::text(site.get("/environments/tools", Some(&cookie)).await).await;
    assert!(page.contains("pager/tools"), "{page}");
    assert!(
        page.contains("&quot;environment&quot;: &quot;pager/tools:1&quot;")
            || page.contains(r#""environment": "pager/tools:1""#),
        "{page}"
    );
    assert!(page.contains(r#"data-testid="build-log""#), "{page}");
    assert!(page.contains("Save a new version"), "{page}");
    // Another account's is not found; a published one shows, without the editor.
    let (_, stranger) = key_and_cookie(&site, "stranger").await;
    let hidden = common::site::text(
        site.get("/environments/tools?owner=pager", Some(&stranger))
            .await,
    )
    .await;
    assert!(hidden.contains("not found"), "{hidden}");
    let shipped = common::site::text(
        site.get(
            "/environments/paddle-cpu?owner=paddlecloud",
            Some(&stranger),
        )
        .await,
    )
    .await;
    assert!(shipped.contains("paddlepaddle=="), "{shipped}");
    assert!(!shipped.contains("Save a new version"), "{shipped}");
}
