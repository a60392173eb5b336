//! Experiment templates through the REST API: saved in immutable versions,
//! run with values that are checked against their parameters (a bad one
//! names the parameter and makes nothing), typed where the job takes a
//! number, recorded in the job; another account's are not found; a run on
//! the local executor really trains and writes its metrics.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common;
use crate::common::rest::{call, key_and_cookie, Answer};
use crate::common::site::Site;

/// A template whose job runs `python` with a loss curve of `steps` points
/// drawn with the SDK, `lr` apart.
fn curve_template(python: &str, default_steps: i64) -> Value {
    let sdk = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk/python");
    json!({
        "name": "curve",
        "description": "Draws a loss curve",
        "parameters": [
            {"name": "steps", "type": "int", "min": 1, "max": 50, "default": default_steps,
             "description": "Points to draw"},
            {"name": "lr", "type": "float", "min": 0.0, "max": 1.0, "default": 0.1},
            {"name": "trainers", "type": "int", "min": 1, "max": 2, "default": 1},
            {"name": "optimizer", "type": "enum", "choices": ["sgd", "adam"], "default": "sgd"},
            {"name": "verbose", "type": "bool", "default": false},
            {"name": "tag", "type": "string", "pattern": "[a-z]+", "default": "loss"},
        ],
        "job": {
            "command": [python, "-c",
                "import paddlecloud\n\
                 for i in range({{steps}}):\n    paddlecloud.draw_board({{lr}} * i, '{{tag}}', step=i)\n\
                 assert paddlecloud.flush_board()\n"],
            "args": ["--optimizer", "{{optimizer}}", "--verbose={{verbose}}"],
            "num_trainers": "{{trainers}}",
            "trainer": {"cpu": "500m", "memory": "256Mi"},
            "env": [{"name": "PYTHONPATH", "value": sdk}, {"name": "LR", "value": "{{lr}}"}],
        }
    })
}

async fn post(site: &Site, key: &str, path: &str, body: Value) -> Answer {
    call(site, Method::POST, path, Some(key), Some(body)).await
}

/// Saves `template`, which must be accepted.
async fn save(site: &Site, key: &str, template: Value) -> Answer {
    let saved = post(site, key, "/api/v1/templates", template).await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
    saved
}

async fn get(site: &Site, key: &str, path: &str) -> Answer {
    call(site, Method::GET, path, Some(key), None).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_template_saved_again_is_a_new_version_and_a_run_records_the_one_it_used() {
    let site = common::site::site().await;
    let (key, cookie) = key_and_cookie(&site, "tmpl").await;
    let saved = save(&site, &key, curve_template("python3", 5)).await;
    assert_eq!(saved.json()["version"], 1);
    assert_eq!(
        saved.headers["location"],
        "/api/v1/templates/curve?version=1"
    );
    let again = post(
        &site,
        &key,
        "/api/v1/templates",
        curve_template("python3", 7),
    )
    .await;
    assert_eq!(again.json()["version"], 2, "{}", again.body);
    // Version 1 is as it was; the list shows the newest.
    let v1 = get(&site, &key, "/api/v1/templates/curve?version=1").await;
    assert_eq!(v1.json()["parameters"][0]["default"], 5, "{}", v1.body);
    let newest = get(&site, &key, "/api/v1/templates/curve").await;
    assert_eq!(newest.json()["version"], 2);
    let list = get(&site, &key, "/api/v1/templates").await;
    // The account's own first; the library the console ships after it.
    let names: Vec<(String, u64)> = list.json()["templates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["owner"] == "tmpl")
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["version"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("curve".to_owned(), 2)]);

    // A run of version 1: numbers stay numbers where the job takes them,
    // text where it takes text; the job says what it came from.
    let run = post(
        &site,
        &key,
        "/api/v1/templates/curve/jobs",
        json!({"name": "curve-a", "version": 1, "values": {"trainers": "2", "lr": 0.5, "verbose": true}}),
    )
    .await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.body);
    assert_eq!(run.headers["location"], "/api/v1/jobs/curve-a");
    let spec = &run.json()["spec"];
    assert_eq!(spec["num_trainers"], 2);
    assert_eq!(
        spec["args"],
        json!(["--optimizer", "sgd", "--verbose=true"])
    );
    assert!(spec["command"][2].as_str().unwrap().contains("range(5)"));
    assert_eq!(spec["env"][1]["value"], "0.5");
    assert_eq!(
        spec["template"],
        json!({"owner": "tmpl", "name": "curve", "version": 1, "values": {
            "steps": 5, "lr": 0.5, "trainers": 2, "optimizer": "sgd", "verbose": true, "tag": "loss"}})
    );
    let job = get(&site, &key, "/api/v1/jobs/curve-a").await;
    assert_eq!(job.json()["spec"]["template"]["version"], 1);
    // The job table says so, the values in its tooltip.
    let table = common::site::text(site.get("/jobs", Some(&cookie)).await).await;
    assert!(table.contains("from template curve v1"), "{table}");
    assert!(
        table.contains("lr=0.5, optimizer=sgd, steps=5, tag=loss, trainers=2, verbose=true"),
        "{table}"
    );
    // Without a name, the job is named after the template.
    let unnamed = post(&site, &key, "/api/v1/templates/curve/jobs", json!({})).await;
    assert_eq!(unnamed.status, StatusCode::CREATED, "{}", unnamed.body);
    let name = unnamed.json()["name"].as_str().unwrap().to_owned();
    assert!(
        name.starts_with("curve-") && name.len() == "curve-".len() + 6,
        "{name}"
    );
    assert_eq!(unnamed.json()["spec"]["template"]["version"], 2);
    // A client cannot say a job came from a template.
    let mut claimed = common::rest::spec("claims", "true");
    claimed["template"] = json!({"name": "curve", "version": 1, "values": {}});
    let plain = post(&site, &key, "/api/v1/jobs", claimed).await;
    assert_eq!(plain.status, StatusCode::CREATED, "{}", plain.body);
    assert!(plain.json()["spec"]["template"].is_null(), "{}", plain.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_values_and_bad_templates_are_refused_naming_what_is_wrong_and_make_nothing() {
    let site = common::site::site().await;
    let (key, _) = key_and_cookie(&site, "strict").await;
    save(&site, &key, curve_template("python3", 5)).await;
    for (values, field) in [
        (json!({"steps": 0}), "values.steps"),
        (json!({"steps": 2.5}), "values.steps"),
        (json!({"lr": "fast"}), "values.lr"),
        (json!({"lr": 3}), "values.lr"),
        (json!({"optimizer": "rmsprop"}), "values.optimizer"),
        (json!({"verbose": "perhaps"}), "values.verbose"),
        (json!({"tag": "Not Lower"}), "values.tag"),
        (json!({"nonsense": 1}), "values.nonsense"),
    ] {
        let run = post(
            &site,
            &key,
            "/api/v1/templates/curve/jobs",
            json!({"values": values}),
        )
        .await;
        assert_eq!(
            run.status,
            StatusCode::BAD_REQUEST,
            "{values}: {}",
            run.body
        );
        assert_eq!(run.error().1.as_deref(), Some(field), "{}", run.body);
        assert!(run.body.contains(&field["values.".len()..]), "{}", run.body);
    }
    let jobs = get(&site, &key, "/api/v1/jobs").await;
    assert_eq!(jobs.json()["total"], 0, "nothing was made: {}", jobs.body);

    // A template that cannot be: named at the field at fault.
    let mut bad = curve_template("python3", 5);
    bad["job"]["args"] = json!(["{{missing}}"]);
    let refused = post(&site, &key, "/api/v1/templates", bad).await;
    assert_eq!(
        refused.error().1.as_deref(),
        Some("job"),
        "{}",
        refused.body
    );
    let mut bad = curve_template("python3", 5);
    bad["parameters"][1]["default"] = json!(7);
    let refused = post(&site, &key, "/api/v1/templates", bad).await;
    assert_eq!(
        refused.error().1.as_deref(),
        Some("parameters[1].default"),
        "{}",
        refused.body
    );
    let mut bad = curve_template("python3", 5);
    bad["parameters"][5]["pattern"] = json!("[unclosed");
    let refused = post(&site, &key, "/api/v1/templates", bad).await;
    assert_eq!(
        refused.error().1.as_deref(),
        Some("parameters[5].pattern"),
        "{}",
        refused.body
    );
    // A dataset parameter must name a dataset the caller can read.
    let mut with_data = curve_template("python3", 5);
    with_data["name"] = json!("reads");
    with_data["parameters"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "data", "type": "dataset", "required": true}));
    with_data["job"]["datasets"] = json!(["{{data}}"]);
    save(&site, &key, with_data).await;
    let run = post(&site, &key, "/api/v1/templates/reads/jobs", json!({})).await;
    assert_eq!(
        run.error().1.as_deref(),
        Some("values.data"),
        "{}",
        run.body
    );
    let run = post(
        &site,
        &key,
        "/api/v1/templates/reads/jobs",
        json!({"values": {"data": "nowhere"}}),
    )
    .await;
    assert_eq!(run.status, StatusCode::BAD_REQUEST, "{}", run.body);
    assert_eq!(
        run.error().1.as_deref(),
        Some("values.data"),
        "{}",
        run.body
    );
    assert!(run.body.contains("no dataset nowhere"), "{}", run.body);

    // Another account sees none of it.
    let (other, _) = key_and_cookie(&site, "elsewhere").await;
    let hidden = get(&site, &other, "/api/v1/templates/curve").await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND, "{}", hidden.body);
    let run = post(&site, &other, "/api/v1/templates/curve/jobs", json!({})).await;
    assert_eq!(run.status, StatusCode::NOT_FOUND, "{}", run.body);
    // Only what is published for everyone: the library.
    let list = get(&site, &other, "/api/v1/templates").await.json();
    let templates = list["templates"].as_array().unwrap();
    assert!(
        !templates.is_empty() && templates.iter().all(|t| t["owner"] == "paddlecloud"),
        "{list}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_run_on_the_local_executor_trains_and_writes_its_metrics() {
    let Some(python) = common::metric_logs::python() else {
        eprintln!("skipping: no test venv (run scripts/setup.sh test)");
        return;
    };
    // The console on a socket: the job's SDK posts its metrics back.
    let (site, _) = common::site::on_socket(|config, _, _| config).await;
    let (key, _) = key_and_cookie(&site, "trains").await;
    let template = curve_template(&python.display().to_string(), 5);
    save(&site, &key, template).await;
    let run = post(
        &site,
        &key,
        "/api/v1/templates/curve/jobs",
        json!({"name": "curve-run", "values": {"steps": 8, "lr": 0.25, "tag": "loss"}}),
    )
    .await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.body);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let job = get(&site, &key, "/api/v1/jobs/curve-run").await.json();
        match job["status"].as_str().unwrap() {
            "succeeded" => break,
            "failed" => panic!("the run failed: {job}"),
            _ => {}
        }
        assert!(Instant::now() < deadline, "never finished: {job}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let tags = get(&site, &key, "/api/v1/jobs/curve-run/metrics").await;
    assert!(
        tags.body.contains(r#""tag":"loss""#) && tags.body.contains(r#""points":8"#),
        "{}",
        tags.body
    );
    assert!(tags.body.contains(r#""last_step":7"#), "{}", tags.body);
}

/// The tag of the form field named `name` in `html`.
fn field<'a>(html: &'a str, name: &str) -> &'a str {
    let at = html
        .find(&format!("name=\"{name}\""))
        .unwrap_or_else(|| panic!("no field {name} in {html}"));
    let start = html[..at].rfind('<').unwrap();
    let end = at + html[at..].find('>').unwrap();
    &html[start..=end]
}

// Multi-threaded: the job it runs is supervised on the same runtime while
// the test renders pages (on one thread, a render could wait on the
// supervisor's timer and stall the test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_templates_page_lists_them_and_the_run_form_is_made_from_the_parameters() {
    let site = common::site::site().await;
    let (key, cookie) = key_and_cookie(&site, "pages").await;
    save(&site, &key, curve_template("python3", 5)).await;
    let list = common::site::text(site.get("/templates", Some(&cookie)).await).await;
    assert!(list.contains(r#"data-template="curve""#), "{list}");
    assert!(list.contains("Draws a loss curve"), "{list}");
    assert!(
        list.contains(r#"href="/templates/curve?owner=pages""#),
        "{list}"
    );

    let form = common::site::text(site.get("/templates/curve", Some(&cookie)).await).await;
    assert!(form.contains("Run curve"), "{form}");
    let steps = field(&form, "values[steps]");
    for part in [
        r#"type="number""#,
        r#"step="1""#,
        r#"value="5""#,
        r#"min="1""#,
        r#"max="50""#,
    ] {
        assert!(steps.contains(part), "{steps}");
    }
    let lr = field(&form, "values[lr]");
    assert!(
        lr.contains(r#"step="any""#) && lr.contains(r#"value="0.1""#),
        "{lr}"
    );
    let tag = field(&form, "values[tag]");
    assert!(tag.contains(r#"pattern="[a-z]+""#), "{tag}");
    assert!(field(&form, "values[optimizer]").starts_with("<select"));
    assert!(form.contains(r#"<option value="sgd" selected"#), "{form}");
    assert!(form.contains(r#"<option value="adam">"#), "{form}");
    assert!(field(&form, "values[verbose]").starts_with("<select"));
    assert!(form.contains(r#"name="version" value="1""#), "{form}");
    assert!(form.contains("Your account has no quota limits"), "{form}");

    // "Run again with changes": the form of the job's version, with its values.
    save(&site, &key, curve_template("python3", 9)).await;
    let run = post(
        &site,
        &key,
        "/api/v1/templates/curve/jobs",
        json!({"name": "earlier", "version": 1, "values": {"lr": 0.5, "optimizer": "adam"}}),
    )
    .await;
    assert_eq!(run.status, StatusCode::CREATED, "{}", run.body);
    let again = common::site::text(
        site.get("/templates/curve?owner=pages&from=earlier", Some(&cookie))
            .await,
    )
    .await;
    assert!(again.contains("The values of job earlier"), "{again}");
    assert!(again.contains(r#"name="version" value="1""#), "{again}");
    assert!(
        field(&again, "values[lr]").contains(r#"value="0.5""#),
        "{again}"
    );
    assert!(
        field(&again, "values[steps]").contains(r#"value="5""#),
        "{again}"
    );
    assert!(
        again.contains(r#"<option value="adam" selected"#),
        "{again}"
    );
    let table = common::site::text(site.get("/jobs", Some(&cookie)).await).await;
    assert!(
        table.contains(r#"href="/templates/curve?owner=pages&amp;from=earlier""#)
            || table.contains(r#"href="/templates/curve?owner=pages&from=earlier""#),
        "{table}"
    );
    // The job's page says what it was made from.
    let page = common::site::text(site.get("/jobs/earlier/resources", Some(&cookie)).await).await;
    assert!(page.contains("pages/curve v1"), "{page}");
    assert!(
        page.contains("lr=0.5, optimizer=adam, steps=5, tag=loss, trainers=1, verbose=false"),
        "{page}"
    );
    // The submit dialog offers the templates.
    let dialog = common::site::text(site.get("/jobs?submit=1", Some(&cookie)).await).await;
    assert!(
        dialog.contains(r#"data-testid="from-template""#),
        "{dialog}"
    );
    assert!(
        dialog.contains(r#"href="/templates/fit-a-line?owner=paddlecloud""#),
        "{dialog}"
    );

    // "Save as template": the job's spec as the template's job, saved from the form.
    let page = common::site::text(site.get("/jobs/earlier/template", Some(&cookie)).await).await;
    assert!(page.contains("Save earlier as a template"), "{page}");
    assert!(page.contains("range(5)"), "{page}");
    assert!(!page.contains("&quot;template&quot;"), "{page}");
    let job = json!({"command": ["echo", "{{word}}"], "num_trainers": 1,
                     "trainer": {"cpu": "250m", "memory": "128Mi"}});
    let parameters = json!([{"name": "word", "type": "string", "default": "hi"}]);
    let body = format!(
        "form[name]=echoes&form[description]=&form[parameters]={}&form[job]={}",
        percent_encoding::utf8_percent_encode(
            &parameters.to_string(),
            percent_encoding::NON_ALPHANUMERIC
        ),
        percent_encoding::utf8_percent_encode(&job.to_string(), percent_encoding::NON_ALPHANUMERIC)
    );
    let saved = site
        .fetch_post("/api/save_template", &body, Some(&cookie))
        .await;
    assert!(
        saved.status().is_success() || saved.status().is_redirection(),
        "{}",
        saved.status()
    );
    let echoes = get(&site, &key, "/api/v1/templates/echoes").await;
    assert_eq!(
        echoes.json()["parameters"][0]["name"],
        "word",
        "{}",
        echoes.body
    );
    let bad = site
        .fetch_post(
            "/api/save_template",
            "form[name]=broken&form[job]=%7Bnope",
            Some(&cookie),
        )
        .await;
    let bad = common::site::text(bad).await;
    assert!(bad.contains("The job is not JSON"), "{bad}");

    // Another account's template is not found on its page either.
    let (_, stranger) = key_and_cookie(&site, "strangers").await;
    let hidden = common::site::text(site.get("/templates/curve", Some(&stranger)).await).await;
    assert!(
        hidden.contains("not found") || hidden.contains("Not found"),
        "{hidden}"
    );
    assert!(!hidden.contains("values[steps]"), "{hidden}");
}
