//! Pipelines on the local executor, through the REST API: a diamond whose
//! middle fails, with fail_fast on and off; retries with backoff; "retry
//! from failed" reusing what succeeded; a console restart mid-run; bad
//! graphs refused naming what is wrong.

use std::path::Path;
use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::{json, Value};
use server::console::Console;

use crate::common;
use crate::common::rest::{call, key_for, Answer};
use crate::common::site::Site;

fn sh(script: &str) -> Value {
    json!({"command": ["sh", "-c", script], "num_trainers": 1,
           "trainer": {"cpu": "100m", "memory": "64Mi"}})
}

async fn submit(site: &Site, key: &str, body: Value) -> Answer {
    call(
        site,
        Method::POST,
        "/api/v1/pipelines",
        Some(key),
        Some(body),
    )
    .await
}

/// Waits for run `name` to end (at most `secs`); the run.
async fn ended(site: &Site, key: &str, name: &str, secs: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let run = call(
            site,
            Method::GET,
            &format!("/api/v1/pipelines/{name}"),
            Some(key),
            None,
        )
        .await
        .json();
        if run["status"] != "running" {
            return run;
        }
        assert!(Instant::now() < deadline, "{name} never ended: {run:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Each node's status by name.
fn statuses(run: &Value) -> Vec<(String, String)> {
    run["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().to_owned(),
                n["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn node<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap()
}

/// prep → train (fails) and check (slower) → report; `late` after check.
fn diamond(name: &str, fail_fast: bool) -> Value {
    json!({"name": name, "pipeline": {
        "name": "diamond",
        "fail_fast": fail_fast,
        "nodes": [
            {"name": "prep", "job": sh("echo prepared")},
            {"name": "train", "job": sh("echo training; exit 3"), "after": ["prep"]},
            {"name": "check", "job": sh("sleep 2; echo checked"), "after": ["prep"]},
            {"name": "late", "job": sh("echo late"), "after": ["check"]},
            {"name": "report", "job": sh("echo report"), "after": ["train", "check"]},
        ]
    }})
}

on_both_databases!(
    a_failing_node_fails_the_run_and_fail_fast_decides_what_else_runs,
    super::a_failing_node_fails_the_run_and_fail_fast_decides_what_else_runs
);
async fn a_failing_node_fails_the_run_and_fail_fast_decides_what_else_runs(db: common::TestDb) {
    let config = common::site::config(&db);
    let site = common::site::site_from(db, config).await;
    let key = key_for(&site, "flows").await;
    for fail_fast in [true, false] {
        let name = if fail_fast { "fast" } else { "slow" };
        let made = submit(&site, &key, diamond(name, fail_fast)).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
        assert_eq!(made.json()["status"], "running");
        let run = ended(&site, &key, name, 120).await;
        assert_eq!(run["status"], "failed", "{run:#}");
        assert!(
            run["message"].as_str().unwrap().contains("“train”"),
            "{run:#}"
        );
        let late = if fail_fast { "skipped" } else { "succeeded" };
        let want: Vec<(String, String)> = [
            ("prep", "succeeded"),
            ("train", "failed"),
            // Already running when train failed: it ends either way.
            ("check", "succeeded"),
            ("late", late),
            ("report", "skipped"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(statuses(&run), want, "fail_fast {fail_fast}: {run:#}");
        let train = node(&run, "train");
        assert_eq!(train["job"], format!("{name}-train"));
        assert!(
            train["message"]
                .as_str()
                .unwrap()
                .contains("exited with code 3"),
            "{train}"
        );
        let why = node(&run, "report")["message"].as_str().unwrap().to_owned();
        if fail_fast {
            assert!(why.contains("fails fast"), "{why}");
            assert!(node(&run, "late")["message"]
                .as_str()
                .unwrap()
                .contains("fails fast"));
        } else {
            assert_eq!(why, "It waited for “train” to succeed, which failed.");
        }
        // Its nodes are ordinary jobs, each recording the run.
        let job = call(
            &site,
            Method::GET,
            &format!("/api/v1/jobs/{name}-prep"),
            Some(&key),
            None,
        )
        .await
        .json();
        assert_eq!(job["status"], "succeeded");
        assert_eq!(
            job["spec"]["pipeline"],
            json!({"run": name, "node": "prep", "attempt": 1})
        );
        let log = call(
            &site,
            Method::GET,
            &format!("/api/v1/jobs/{name}-prep/pods/trainer-0/log"),
            Some(&key),
            None,
        )
        .await;
        assert_eq!(log.body, "prepared\n");
    }
}

async fn a_node_is_retried_after_its_backoff_and_retry_from_failed_reuses_what_succeeded(
    db: common::TestDb,
) {
    let config = common::site::config(&db);
    let site = common::site::site_from(db, config).await;
    let key = key_for(&site, "retries").await;
    let dir = tempfile::tempdir().unwrap();
    let once = dir.path().join("once");
    let gate = dir.path().join("gate");
    // `flaky` fails its first try only; `gated` fails until the test opens the gate.
    let flaky = format!(
        "if [ -f {0} ]; then echo second; else touch {0}; exit 1; fi",
        once.display()
    );
    let gated = format!("test -f {}", gate.display());
    let made = submit(&site, &key, json!({"name": "again", "pipeline": {
        "name": "again",
        "fail_fast": false,
        "nodes": [
            {"name": "prep", "job": sh("echo once")},
            {"name": "flaky", "job": sh(&flaky), "after": ["prep"], "retries": 2, "backoff_secs": 1},
            {"name": "gated", "job": sh(&gated), "after": ["prep"]},
            {"name": "last", "job": sh("echo done"), "after": ["flaky", "gated"]},
        ]
    }})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let run = ended(&site, &key, "again", 120).await;
    assert_eq!(run["status"], "failed", "{run:#}");
    let flaky_node = node(&run, "flaky");
    assert_eq!(flaky_node["status"], "succeeded", "{run:#}");
    assert_eq!(flaky_node["attempt"], 2);
    assert_eq!(flaky_node["job"], "again-flaky-r2");
    assert_eq!(node(&run, "gated")["status"], "failed");
    assert_eq!(node(&run, "last")["status"], "skipped");

    // A run still running is not retried; a failed one is, from what failed.
    std::fs::write(&gate, "").unwrap();
    let retried = call(
        &site,
        Method::POST,
        "/api/v1/pipelines/again/retry",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(retried.status, StatusCode::OK, "{}", retried.body);
    let again = call(
        &site,
        Method::POST,
        "/api/v1/pipelines/again/retry",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
    let run = ended(&site, &key, "again", 120).await;
    assert_eq!(run["status"], "succeeded", "{run:#}");
    assert_eq!(
        node(&run, "prep")["job"],
        "again-prep",
        "prep was not run again"
    );
    assert_eq!(node(&run, "prep")["attempt"], 1);
    assert_eq!(
        node(&run, "flaky")["job"],
        "again-flaky-r2",
        "nor was flaky"
    );
    assert_eq!(node(&run, "gated")["job"], "again-gated-r2");
    assert_eq!(node(&run, "last")["job"], "again-last");
    let jobs = call(&site, Method::GET, "/api/v1/jobs", Some(&key), None)
        .await
        .json();
    let mut names: Vec<&str> = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "again-flaky",
            "again-flaky-r2",
            "again-gated",
            "again-gated-r2",
            "again-last",
            "again-prep"
        ],
        "one job per try, none for what was reused"
    );
}

on_both_databases!(
    a_node_is_retried_after_its_backoff_and_retry_from_failed_reuses_what_succeeded,
    super::a_node_is_retried_after_its_backoff_and_retry_from_failed_reuses_what_succeeded
);

#[tokio::test(flavor = "multi_thread")]
async fn bad_pipelines_are_refused_naming_what_is_wrong_and_nothing_runs() {
    let site = common::site::site().await;
    let key = key_for(&site, "badflows").await;
    let job = sh("true");
    for (pipeline, field, says) in [
        (
            json!({"name": "p", "nodes": [
                {"name": "a", "job": job, "after": ["c"]},
                {"name": "b", "job": job, "after": ["a"]},
                {"name": "c", "job": job, "after": ["b"]}]}),
            "nodes",
            "a → c → b → a",
        ),
        (
            json!({"name": "p", "nodes": [{"name": "a", "job": job, "after": ["x"]}]}),
            "nodes[0].after",
            "There is no node “x”.",
        ),
        (
            json!({"name": "p", "nodes": [{"name": "a", "job": job}, {"name": "a", "job": job}]}),
            "nodes[1].name",
            "Two nodes",
        ),
        (
            json!({"name": "p", "nodes": [{"name": "a", "job": {"command": [], "num_trainers": 1}}]}),
            "nodes[0].job.command",
            "Give the program",
        ),
        (
            json!({"name": "p", "nodes": [{"name": "a", "template": {"name": "nope"}}]}),
            "nodes[0].template",
            "not found",
        ),
        (
            json!({"name": "p", "parameters": {"lr": 0.1}, "nodes": [{"name": "a", "job": job}]}),
            "values.nope",
            "no parameter",
        ),
    ] {
        let body = json!({"pipeline": pipeline, "values": if field == "values.nope" { json!({"nope": 1}) } else { json!({}) }});
        let refused = submit(&site, &key, body).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{field}: {}",
            refused.body
        );
        let (_, got) = refused.error();
        let message = refused.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert_eq!(got.as_deref(), Some(field), "{message}");
        assert!(message.contains(says), "{field}: {message}");
    }
    let runs = call(&site, Method::GET, "/api/v1/pipelines", Some(&key), None).await;
    assert_eq!(runs.json()["runs"], json!([]));
    let jobs = call(&site, Method::GET, "/api/v1/jobs", Some(&key), None).await;
    assert_eq!(jobs.json()["jobs"], json!([]), "{}", jobs.body);
    // Another account does not see a run.
    let made = submit(
        &site,
        &key,
        json!({"name": "mine", "pipeline": {"name": "p", "nodes": [{"name": "a", "job": job}]}}),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let other = key_for(&site, "strangers").await;
    let hidden = call(
        &site,
        Method::GET,
        "/api/v1/pipelines/mine",
        Some(&other),
        None,
    )
    .await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    let stop = call(
        &site,
        Method::POST,
        "/api/v1/pipelines/mine/stop",
        Some(&other),
        None,
    )
    .await;
    assert_eq!(stop.status, StatusCode::NOT_FOUND);
}

on_both_databases!(
    stopping_a_run_stops_its_running_jobs_and_skips_the_rest,
    super::stopping_a_run_stops_its_running_jobs_and_skips_the_rest
);
async fn stopping_a_run_stops_its_running_jobs_and_skips_the_rest(db: common::TestDb) {
    let config = common::site::config(&db);
    let site = common::site::site_from(db, config).await;
    let key = key_for(&site, "stopper").await;
    let made = submit(
        &site,
        &key,
        json!({"name": "long", "pipeline": {"name": "long", "nodes": [
            {"name": "sleeper", "job": sh("sleep 60")},
            {"name": "after", "job": sh("true"), "after": ["sleeper"]},
        ]}}),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = call(
            &site,
            Method::GET,
            "/api/v1/pipelines/long",
            Some(&key),
            None,
        )
        .await
        .json();
        if node(&run, "sleeper")["status"] == "running" {
            break;
        }
        assert!(Instant::now() < deadline, "{run:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stopped = call(
        &site,
        Method::POST,
        "/api/v1/pipelines/long/stop",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.body);
    let run = stopped.json();
    assert_eq!(run["status"], "stopped");
    assert_eq!(
        statuses(&run),
        [
            ("sleeper".to_owned(), "stopped".to_owned()),
            ("after".to_owned(), "stopped".to_owned())
        ]
    );
    common::rest::wait_for(&site, &key, "long-sleeper", "stopped").await;
}

/// A console that stops mid-run (its runtime torn down, as a crash would)
/// and starts again on the same database carries the run on: the retry it
/// had scheduled happens, and the rest of the graph runs.
#[test]
fn a_restarted_console_carries_a_run_on_from_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let once = dir.path().join("once");
    let first = tokio::runtime::Runtime::new().unwrap();
    let db = first.block_on(common::sqlite());
    let flaky = format!(
        "if [ -f {0} ]; then echo second; else touch {0}; exit 1; fi",
        once.display()
    );
    let (account, me) = first.block_on(async {
        let console = Console::build(common::site::config(&db)).await.unwrap();
        let (account, me) = owner(&db).await;
        let submit = serde_json::from_value(
            json!({"name": "resume", "pipeline": {"name": "resume", "nodes": [
                {"name": "flaky", "job": sh(&flaky), "retries": 1, "backoff_secs": 4},
                {"name": "next", "job": sh("echo next"), "after": ["flaky"]},
            ]}}),
        )
        .unwrap();
        let who = app::ports::Principal::new(me.clone(), app::ports::Credential::AccessKey(0));
        app::use_cases::pipelines::submit_pipeline(&console.services, &who, submit)
            .await
            .unwrap();
        // Its first try failed; the second waits for its backoff.
        wait_node(&console.services, &account, "flaky", |n| {
            n["not_before"].is_i64()
        })
        .await;
        (account, me)
    });
    first.shutdown_background();
    assert!(Path::new(&once).exists());

    let second = tokio::runtime::Runtime::new().unwrap();
    second.block_on(async {
        let console = Console::build(common::site::config(&db)).await.unwrap();
        let run = wait_node(&console.services, &account, "next", |n| {
            n["status"] == "succeeded"
        })
        .await;
        assert_eq!(node(&run, "flaky")["job"], "resume-flaky-r2", "{run:#}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let run = console
                .services
                .pipelines
                .get(&me.account, "resume")
                .await
                .unwrap();
            if run.status == app::models::RunStatus::Succeeded {
                break;
            }
            assert!(Instant::now() < deadline, "{run:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

async fn owner(db: &common::TestDb) -> (app::models::Account, app::models::Me) {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO accounts (name, namespace, created_at) VALUES ('resumer', 'pc-resumer', 0) RETURNING id",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let account = app::models::Account {
        id,
        name: "resumer".into(),
        namespace: "pc-resumer".into(),
        created_at: 0,
    };
    let me = common::user_in(&db.pool, &account).await;
    (account, me)
}

/// Waits (at most 60 s) until node `name` of run "resume" passes `done`;
/// the run as JSON.
async fn wait_node(
    services: &app::ports::Services,
    account: &app::models::Account,
    name: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run =
            serde_json::to_value(services.pipelines.get(account, "resume").await.unwrap()).unwrap();
        if done(node(&run, name)) {
            return run;
        }
        assert!(Instant::now() < deadline, "{run:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The run's page as the server renders it: the graph (a wide fan-out as
/// one box with counts), the node table and its status filter, the
/// actions; the list page links it. Both are plain HTML.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_draw_the_graph_and_filter_the_node_table() {
    let site = common::site::site().await;
    let (key, cookie) = common::rest::key_and_cookie(&site, "drawn").await;
    let mut nodes = vec![json!({"name": "root", "job": sh("exit 1")})];
    nodes.extend(
        (0..40).map(|i| json!({"name": format!("leaf{i}"), "job": sh("true"), "after": ["root"]})),
    );
    let made = submit(
        &site,
        &key,
        json!({"name": "wide", "pipeline": {"name": "wide", "nodes": nodes}}),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let run = ended(&site, &key, "wide", 60).await;
    assert_eq!(run["status"], "failed");

    let page = common::site::text(site.get("/pipelines/wide", Some(&cookie)).await).await;
    assert!(page.contains(r#"data-testid="graph""#), "{page}");
    // Two boxes: root, and the 40 leaves as one.
    assert_eq!(
        page.matches(r#"data-testid="graph-node""#).count(),
        2,
        "{page}"
    );
    assert!(page.contains("leaf0 … leaf39 (40)"), "{page}");
    assert!(page.contains("40 skipped"), "{page}");
    // A node's box docks its job under the run.
    assert!(
        page.contains(r#"href="/pipelines/wide?log=wide-root""#),
        "{page}"
    );
    assert_eq!(page.matches("data-node=").count(), 41);
    assert!(page.contains(r#"data-testid="retry-run""#), "{page}");
    let failed = common::site::text(
        site.get("/pipelines/wide?status=failed", Some(&cookie))
            .await,
    )
    .await;
    assert_eq!(failed.matches("data-node=").count(), 1, "{failed}");
    assert!(failed.contains(r#"data-node="root""#));
    let list = common::site::text(site.get("/pipelines", Some(&cookie)).await).await;
    assert!(list.contains(r#"href="/pipelines/wide""#), "{list}");
    // The job table says which run and node a job is.
    let jobs = common::site::text(site.get("/jobs", Some(&cookie)).await).await;
    assert!(jobs.contains("pipeline wide · root"), "{jobs}");
}

/// "New pipeline" from templates: the dialog lists the templates the
/// account can run, its post makes the run (without JavaScript too), and a
/// row without a template is refused naming that row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_made_from_templates_in_the_dialog_runs() {
    let site = common::site::site().await;
    let (key, cookie) = common::rest::key_and_cookie(&site, "former").await;
    let template = json!({"name": "say", "parameters": [{"name": "word", "type": "string", "default": "hi"}],
                          "job": sh("echo {{word}}")});
    let saved = call(
        &site,
        Method::POST,
        "/api/v1/templates",
        Some(&key),
        Some(template),
    )
    .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);
    let dialog = common::site::text(site.get("/pipelines?new=1", Some(&cookie)).await).await;
    assert!(
        dialog.contains(r#"<option value="former/say">"#),
        "{dialog}"
    );
    assert!(
        dialog.contains(r#"<option value="paddlecloud/fit-a-line">"#),
        "{dialog}"
    );
    assert_eq!(dialog.matches(r#"data-testid="node-row""#).count(), 4);

    let row = |i: usize, name: &str, template: &str, values: &str, after: &str| {
        format!(
            "&form[nodes][{i}][name]={name}&form[nodes][{i}][template]={template}\
             &form[nodes][{i}][values]={values}&form[nodes][{i}][after]={after}&form[nodes][{i}][retries]="
        )
    };
    let refused = site
        .fetch_post(
            "/api/create_pipeline",
            &format!(
                "form[name]=talk&form[run]=&form[fail_fast]=on{}{}",
                row(0, "first", "former%2Fsay", "word%3Dhello", ""),
                row(1, "second", "", "", "first")
            ),
            Some(&cookie),
        )
        .await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let text = common::site::text(refused).await;
    assert!(text.contains("nodes[1].template"), "{text}");
    let made = site
        .fetch_post(
            "/api/create_pipeline",
            &format!(
                "form[name]=talk&form[run]=talk-1&form[fail_fast]=on{}{}{}",
                row(0, "first", "former%2Fsay", "word%3Dhello", ""),
                row(1, "second", "former%2Fsay", "word%3Dbye", "first"),
                row(2, "", "", "", "")
            ),
            Some(&cookie),
        )
        .await;
    assert!(
        made.status().is_success() || made.status().is_redirection(),
        "{}",
        made.status()
    );
    let run = ended(&site, &key, "talk-1", 60).await;
    assert_eq!(run["status"], "succeeded", "{run:#}");
    let log = call(
        &site,
        Method::GET,
        "/api/v1/jobs/talk-1-second/pods/trainer-0/log",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(log.body, "bye\n");
    let job = call(
        &site,
        Method::GET,
        "/api/v1/jobs/talk-1-second",
        Some(&key),
        None,
    )
    .await
    .json();
    assert_eq!(job["spec"]["template"]["name"], "say");

    // "Preview the graph" is a GET of the same form: the graph is drawn,
    // every node pending, and what was typed stays in the fields.
    let preview = |rows: &str| {
        format!(
            "/pipelines?new=1&rows=3&preview=1&form%5Bname%5D=talk&form%5Bfail_fast%5D=on{rows}"
        )
    };
    let row = |i: usize, name: &str, after: &str| {
        format!(
            "&form%5Bnodes%5D%5B{i}%5D%5Bname%5D={name}&form%5Bnodes%5D%5B{i}%5D%5Btemplate%5D=former%2Fsay\
             &form%5Bnodes%5D%5B{i}%5D%5Bafter%5D={after}"
        )
    };
    let drawn = common::site::text(
        site.get(
            &preview(&format!(
                "{}{}",
                row(0, "first", ""),
                row(1, "second", "first")
            )),
            Some(&cookie),
        )
        .await,
    )
    .await;
    assert!(drawn.contains(r#"data-testid="preview-graph""#), "{drawn}");
    assert_eq!(
        drawn.matches(r#"data-testid="graph-node""#).count(),
        2,
        "{drawn}"
    );
    assert!(drawn.contains(r#"value="second""#), "{drawn}");
    assert!(
        drawn.contains(r#"<option value="former/say" selected"#),
        "{drawn}"
    );
    let cycle = common::site::text(
        site.get(
            &preview(&format!(
                "{}{}",
                row(0, "first", "second"),
                row(1, "second", "first")
            )),
            Some(&cookie),
        )
        .await,
    )
    .await;
    assert!(cycle.contains(r#"data-testid="preview-error""#), "{cycle}");
    assert!(
        cycle.contains("first → second → first") || cycle.contains("second → first → second"),
        "{cycle}"
    );
    assert!(!cycle.contains(r#"data-testid="preview-graph""#));
}

/// Clicking a node docks its job under the run: which node and try, its
/// status, its resource charts and its log console (the log's lines as
/// the server read them); a job of another run is refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nodes_job_opens_docked_under_its_run_with_its_log_and_charts() {
    let site = common::site::site().await;
    let (key, cookie) = common::rest::key_and_cookie(&site, "docked").await;
    let pipeline = |name: &str| {
        json!({"name": name, "pipeline": {"name": "say", "nodes": [
            {"name": "hello", "job": sh("echo hello from the first node")},
            {"name": "bye", "job": sh("echo bye"), "after": ["hello"]},
        ]}})
    };
    for name in ["dock", "other"] {
        let made = submit(&site, &key, pipeline(name)).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    }
    assert_eq!(ended(&site, &key, "dock", 60).await["status"], "succeeded");

    let page = common::site::text(
        site.get("/pipelines/dock?log=dock-hello", Some(&cookie))
            .await,
    )
    .await;
    assert!(page.contains(r#"data-testid="node-dock""#), "{page}");
    assert!(page.contains("Node hello · try 1"), "{page}");
    assert!(
        page.contains(r#"data-testid="dock-status" class="status succeeded">succeeded"#),
        "{page}"
    );
    assert!(page.contains(r#"data-testid="log-console""#), "{page}");
    assert!(page.contains("hello from the first node"), "{page}");
    assert!(page.contains(r#"data-testid="metrics-source""#), "{page}");
    // The console's links and its toolbar stay on the run's page.
    assert!(page.contains(r#"action="/pipelines/dock""#), "{page}");
    assert!(!page.contains(r#"href="/jobs?log="#), "{page}");
    // The graph and the table are still there above it.
    assert!(page.contains(r#"data-testid="graph""#), "{page}");

    ended(&site, &key, "other", 60).await;
    let wrong = common::site::text(
        site.get("/pipelines/dock?log=other-hello", Some(&cookie))
            .await,
    )
    .await;
    assert!(
        wrong.contains("other-hello is not a node of dock."),
        "{wrong}"
    );
}

/// `/events/pipelines?run=` speaks when the run moves on (it is what the
/// run's page refreshes on), and only of that run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_event_stream_speaks_as_its_nodes_move_on() {
    use futures_util::StreamExt;
    let site = common::site::site().await;
    let (key, cookie) = common::rest::key_and_cookie(&site, "evented").await;
    let stream = site
        .get("/events/pipelines?run=watched", Some(&cookie))
        .await;
    assert_eq!(stream.status(), StatusCode::OK);
    let mut body = stream.into_body().into_data_stream();
    for name in ["watched", "unwatched"] {
        let body = json!({"name": name, "pipeline": {"name": "two", "nodes": [
            {"name": "a", "job": sh("true")},
            {"name": "b", "job": sh("true"), "after": ["a"]},
        ]}});
        assert_eq!(submit(&site, &key, body).await.status, StatusCode::CREATED);
    }
    let mut said = String::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = tokio::time::timeout(left, body.next()).await;
        let Ok(Some(Ok(bytes))) = frame else {
            panic!("the stream went quiet; it said: {said}");
        };
        said.push_str(&String::from_utf8_lossy(&bytes));
        let run = call(
            &site,
            Method::GET,
            "/api/v1/pipelines/watched",
            Some(&key),
            None,
        )
        .await;
        if run.json()["status"] == "succeeded" && said.matches("data: watched").count() >= 3 {
            break;
        }
    }
    // Submitted, the nodes moved on and the run ended: several messages,
    // none of them about the other run.
    assert!(!said.contains("unwatched"), "{said}");
}

/// The same scheduler on the Kubernetes backend (the real node of
/// `scripts/kube-test-cluster.sh`, nodes' replicas in containers): nodes become the
/// cluster's jobs, their pods labelled with their run and node, and a
/// failing branch fails the run while the other branch runs on. Skipped
/// without the node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_runs_on_kubernetes_with_its_pods_labelled_by_run_and_node_on_a_real_node() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, ListParams};
    let Some((node, client)) = common::node::client().await else {
        return;
    };
    let site = common::site::site_configured(|config, _| server::console::Config {
        cluster: common::kubernetes::kube_choice(&client, None),
        ..config
    })
    .await;
    let account = format!("kp{:08x}", getrandom::u32().unwrap());
    let key = key_for(&site, &account).await;
    let on_kube = |script: &str| {
        let mut job = sh(script);
        job["image"] = json!(node.shell_image);
        job
    };
    let made = submit(
        &site,
        &key,
        json!({"name": "kdiamond", "pipeline": {
            "name": "kdiamond",
            "fail_fast": false,
            "nodes": [
                {"name": "prep", "job": on_kube("sleep 1; echo prepared")},
                {"name": "train", "job": on_kube("sleep 1; exit 2"), "after": ["prep"]},
                {"name": "check", "job": on_kube("sleep 2; echo checked"), "after": ["prep"]},
                {"name": "report", "job": on_kube("true"), "after": ["train", "check"]},
            ]
        }}),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    // The pods, while they live (a finished job's workloads are deleted).
    let pods = Api::<Pod>::all(client.clone());
    let by_run = ListParams::default().labels("paddlecloud.org/pipeline-run=kdiamond");
    let mut seen = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let run = loop {
        for pod in pods.list(&by_run).await.unwrap().items {
            seen.insert(pod.metadata.labels.unwrap()["paddlecloud.org/pipeline-node"].clone());
        }
        let run = call(
            &site,
            Method::GET,
            "/api/v1/pipelines/kdiamond",
            Some(&key),
            None,
        )
        .await
        .json();
        if run["status"] != "running" {
            break run;
        }
        assert!(Instant::now() < deadline, "it never ended: {run:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(run["status"], "failed", "{run:#}");
    assert_eq!(
        statuses(&run),
        [
            ("prep".to_owned(), "succeeded".to_owned()),
            ("train".to_owned(), "failed".to_owned()),
            ("check".to_owned(), "succeeded".to_owned()),
            ("report".to_owned(), "skipped".to_owned()),
        ]
    );
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["check", "prep", "train"]
    );
    let log = call(
        &site,
        Method::GET,
        "/api/v1/jobs/kdiamond-check/pods/trainer-0/log",
        Some(&key),
        None,
    )
    .await;
    assert_eq!(log.body, "checked\n");
}
