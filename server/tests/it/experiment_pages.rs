//! The experiment pages through the router, as a browser without
//! JavaScript sees them: the list, an experiment's page with its charts
//! (server-drawn SVG) and its trials table sorted and filtered by the URL,
//! "New experiment" posting a form (and showing a refused field), the
//! actions posted as forms, a trial's job in the job table, and another
//! account's experiment not found.

use std::time::{Duration, Instant};

use app::models::{trial_job_name, ExperimentSpec, ExperimentStatus, TrialStatus, TrialValues};
use axum::body::Body;
use http::{Method, Response, StatusCode};
use serde_json::json;
use server::storage::experiments::{ExperimentStore, TrialUpdate};

use crate::common;
use crate::common::rest::{call, key_and_cookie};
use crate::common::site::{location, text, Site};

/// A form posted by a browser without JavaScript, signed in.
async fn form_post(
    site: &Site,
    path: &str,
    body: &str,
    referer: &str,
    cookie: &str,
) -> Response<Body> {
    site.form_post_as(cookie, path, body, referer).await
}

async fn page(site: &Site, path: &str, cookie: &str) -> String {
    let res = site.get(path, Some(cookie)).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    text(res).await
}

/// The experiment's status as its page's badge shows it.
fn status(html: &str) -> &str {
    let at = html
        .find(r#"data-testid="experiment-status""#)
        .expect("a status badge");
    let text = &html[at..];
    let text = &text[text.find('>').unwrap() + 1..];
    &text[..text.find('<').unwrap()]
}

/// The trials' numbers in the order the table shows them.
fn rows(html: &str) -> Vec<u32> {
    html.split("data-trial=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next()?.parse().ok())
        .collect()
}

/// Records ended experiment `name` of `account` with twelve trials: lr
/// from 10⁻⁴ up, `opt` alternating, the loss lowest at trial 7; trial 5
/// failed, trial 9 stopped early.
async fn seeded(site: &Site, account: &str, name: &str) {
    let me = site.owner(account).await;
    let spec: ExperimentSpec = serde_json::from_value(json!({
        "name": name,
        "template": "fit-a-line",
        "parameters": [
            {"name": "lr", "type": "float", "min": 0.0001, "max": 1.0, "log": true},
            {"name": "opt", "type": "enum", "choices": ["adam", "sgd"]},
        ],
        "objective": {"metric": "loss", "direction": "minimize"},
        "max_trials": 12,
    }))
    .unwrap();
    let store = ExperimentStore::new(site.db.pool.clone());
    let id = store.insert(&me, &spec).await.unwrap();
    store
        .set_status(id, ExperimentStatus::Succeeded, "All 12 trials ran.")
        .await
        .unwrap();
    for n in 1..=12u32 {
        let values: TrialValues = [
            ("lr".to_owned(), json!(1e-4 * 2f64.powi(n as i32))),
            (
                "opt".to_owned(),
                json!(if n % 2 == 0 { "adam" } else { "sgd" }),
            ),
        ]
        .into();
        assert!(store
            .claim_trial(id, n, &trial_job_name(name, n), &values)
            .await
            .unwrap());
        let (status, objective, message) = match n {
            5 => (TrialStatus::Failed, None, "its job exited with code 1"),
            9 => (
                TrialStatus::Pruned,
                Some(3.0),
                "worse than the median at step 2",
            ),
            _ => (
                TrialStatus::Succeeded,
                Some(1.0 + (f64::from(n) - 7.0).abs() / 10.0),
                "",
            ),
        };
        let update = TrialUpdate {
            status: Some(status),
            objective,
            step: Some(10),
            message: Some(message.to_owned()),
        };
        store.update_trial(id, n, &update).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_experiments_page_draws_its_charts_and_sorts_and_filters_its_trials_by_the_url() {
    let site = common::site::site().await;
    let (key, cookie) = key_and_cookie(&site, "tuner").await;
    seeded(&site, "tuner", "grid-lr").await;
    // Two trials' jobs logged another tag beside the objective.
    for (n, acc) in [(7, 0.9), (8, 0.95)] {
        let job = trial_job_name("grid-lr", n);
        crate::common::rest::post_ok(
            &site,
            &key,
            "/api/v1/jobs",
            json!({"name": job, "command": ["true"], "num_trainers": 1,
                   "trainer": {"cpu": "100m", "memory": "64Mi"}}),
        )
        .await;
        crate::common::rest::post_ok(
            &site,
            &key,
            &format!("/api/v1/jobs/{job}/metrics"),
            json!([{"tag": "acc", "step": 1, "value": acc, "wall_time": 1.7e9},
                   {"tag": "loss", "step": 1, "value": 1.0, "wall_time": 1.7e9}]),
        )
        .await;
    }

    let list = page(&site, "/experiments", &cookie).await;
    assert!(list.contains(r#"href="/experiments/grid-lr""#), "{list}");
    assert!(list.contains(r#"href="/experiments/new""#), "{list}");
    assert!(list.contains("12/12"), "{list}");
    assert!(list.contains("loss = 1 (trial 7)"), "{list}");

    let whole = page(&site, "/experiments/grid-lr", &cookie).await;
    for chart in ["best-chart", "parallel-chart", "scatter-chart"] {
        let at = whole
            .find(&format!(r#"data-testid="{chart}""#))
            .unwrap_or_else(|| panic!("no {chart}: {whole}"));
        assert!(whole[at..].contains("<svg"), "{chart}");
    }
    assert!(whole.contains("Best trial: 7 with loss = 1"), "{whole}");
    assert!(whole.contains(r#"href="/jobs/grid-lr-t7""#), "{whole}");
    // The other tag is a column (the objective is not repeated), sortable.
    assert!(whole.contains(r#"data-testid="sort-t.acc""#), "{whole}");
    assert!(!whole.contains(r#"data-testid="sort-t.loss""#), "{whole}");
    assert!(
        whole.contains(r#"<td data-tag="acc" class="num">0.95<"#),
        "{whole}"
    );
    let by_acc = page(&site, "/experiments/grid-lr?sort=t.acc&desc=1", &cookie).await;
    assert_eq!(rows(&by_acc)[..2], [8, 7], "trials without the tag last");
    assert_eq!(rows(&whole), (1..=12).collect::<Vec<_>>());
    assert!(whole.contains("its job exited with code 1"));
    // The parallel coordinates name each parameter and the objective.
    let parallel = &whole[whole.find(r#"data-testid="parallel-chart""#).unwrap()..];
    for axis in ["lr", "opt", "loss", "adam"] {
        assert!(parallel.contains(&format!(">\n{axis}\n<")), "{axis}");
    }
    // An ended experiment offers more trials and running its failed one
    // again, not pause or stop.
    assert!(whole.contains(r#"data-testid="extend-experiment""#));
    assert!(whole.contains(r#"data-testid="retry-experiment""#));
    assert!(!whole.contains(r#"data-testid="pause-experiment""#));

    let best_first = page(&site, "/experiments/grid-lr?sort=objective", &cookie).await;
    assert_eq!(rows(&best_first)[..3], [7, 6, 8]);
    assert_eq!(*rows(&best_first).last().unwrap(), 5, "no value: last");
    let worst_first = page(&site, "/experiments/grid-lr?sort=objective&desc=1", &cookie).await;
    assert_eq!(rows(&worst_first)[0], 9);
    let by_lr = page(&site, "/experiments/grid-lr?sort=p.lr&desc=1", &cookie).await;
    assert_eq!(rows(&by_lr)[0], 12);
    // A heading's link sorts the other way, keeping the filter.
    let failed = page(
        &site,
        "/experiments/grid-lr?status=failed&sort=objective",
        &cookie,
    )
    .await;
    assert_eq!(rows(&failed), [5]);
    assert!(
        failed
            .contains(r#"href="/experiments/grid-lr?sort=objective&amp;desc=1&amp;status=failed""#),
        "{failed}"
    );
    let scatter = page(&site, "/experiments/grid-lr?scatter=opt", &cookie).await;
    let chart = &scatter[scatter.find(r#"data-testid="scatter-chart""#).unwrap()
        ..scatter.find(r#"data-testid="parallel-chart""#).unwrap()];
    assert!(chart.contains("loss against opt"), "{chart}");
    assert!(chart.contains(">\nsgd\n<"), "{chart}");

    // Another account's experiment is not there.
    let (_, other) = key_and_cookie(&site, "rival").await;
    let hidden = site.get("/experiments/grid-lr", Some(&other)).await;
    assert_eq!(hidden.status(), StatusCode::NOT_FOUND);
    assert!(rows(&text(hidden).await).is_empty());
}

/// A template of `sleep 30`: its trials run until stopped, reporting nothing.
fn sleeper() -> serde_json::Value {
    json!({
        "name": "sleeper",
        "parameters": [
            {"name": "x", "type": "float", "min": 0.0, "max": 1.0, "default": 0.5},
            {"name": "opt", "type": "enum", "choices": ["adam", "sgd"], "default": "sgd"},
        ],
        "job": {"command": ["sh", "-c", "sleep 30 # {{x}} {{opt}}"], "num_trainers": 1,
                "trainer": {"cpu": "100m", "memory": "64Mi"}},
    })
}

fn create_form(name: &str, min: &str, max: &str) -> String {
    format!(
        "form%5Bname%5D={name}&form%5Btemplate%5D=steer%2Fsleeper\
         &form%5Bparams%5D%5Bx%5D%5Bmode%5D=search&form%5Bparams%5D%5Bx%5D%5Bkind%5D=float\
         &form%5Bparams%5D%5Bx%5D%5Bmin%5D={min}&form%5Bparams%5D%5Bx%5D%5Bmax%5D={max}\
         &form%5Bparams%5D%5Bopt%5D%5Bmode%5D=fixed&form%5Bparams%5D%5Bopt%5D%5Bkind%5D=enum\
         &form%5Bparams%5D%5Bopt%5D%5Bvalue%5D=adam&form%5Bmetric%5D=loss&form%5Bdirection%5D=minimize\
         &form%5Bvalue%5D=last&form%5Bgoal%5D=&form%5Balgorithm%5D=random&form%5Bgrid_points%5D=5\
         &form%5Bearly_stopping%5D=none&form%5Bmax_trials%5D=2&form%5Bparallel_trials%5D=1\
         &form%5Bmax_failed_trials%5D=2"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_made_from_the_form_is_paused_resumed_extended_and_stopped_without_javascript(
) {
    let site = common::site::site().await;
    let (key, cookie) = key_and_cookie(&site, "steer").await;
    let saved = call(
        &site,
        Method::POST,
        "/api/v1/templates",
        Some(&key),
        Some(sleeper()),
    )
    .await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.body);

    // The template's page offers to search it; the form lists its parameters.
    let run = page(&site, "/templates/sleeper?owner=steer", &cookie).await;
    assert!(
        run.contains(r#"href="/experiments/new?template=steer%2Fsleeper""#),
        "{run}"
    );
    let new = "/experiments/new?template=steer%2Fsleeper";
    let form = page(&site, new, &cookie).await;
    assert!(form.contains(r#"name="form[params][x][mode]""#), "{form}");
    assert!(form.contains(r#"value="sleeper-search""#), "{form}");
    let library = page(&site, "/experiments/new?library=1", &cookie).await;
    assert!(
        library.contains(r#"value="fit-a-line-search""#),
        "{library}"
    );
    assert!(
        library.contains(r#"name="form[params][lr][mode]""#),
        "{library}"
    );

    // A bad range comes back to the form, the error under its parameter.
    let refused = form_post(
        &site,
        "/api/create_experiment_form",
        &create_form("held", "0.9", "0.1"),
        new,
        &cookie,
    )
    .await;
    let back = location(&refused);
    assert!(back.contains("/experiments/new?template="), "{back}");
    let shown = page(&site, back.trim_start_matches("http://localhost"), &cookie).await;
    assert!(shown.contains(r#"id="params.x-error""#), "{shown}");
    assert!(
        shown.contains("min (0.9) must be below max (0.1)"),
        "{shown}"
    );

    let made = form_post(
        &site,
        "/api/create_experiment_form",
        &create_form("held", "0.1", "0.9"),
        new,
        &cookie,
    )
    .await;
    assert_eq!(made.status(), StatusCode::FOUND);
    assert_eq!(location(&made), "/experiments/held");

    // Its first trial's job, in the job table, names the experiment.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let jobs = page(&site, "/jobs", &cookie).await;
        if jobs.contains(r#"href="/experiments/held""#) {
            assert!(jobs.contains("experiment held #1"), "{jobs}");
            break;
        }
        assert!(Instant::now() < deadline, "no trial job: {jobs}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let act = |action: &'static str, body: &'static str| {
        let (site, cookie) = (&site, &cookie);
        async move {
            let res = form_post(
                site,
                &format!("/api/{action}"),
                body,
                "/experiments/held",
                cookie,
            )
            .await;
            assert!(res.status().is_redirection(), "{action}: {}", res.status());
            // Back to the page (leptos leaves an empty query on it).
            let back = location(&res);
            assert!(
                back.trim_end_matches('?').ends_with("/experiments/held"),
                "{action}: {back}"
            );
            page(site, "/experiments/held", cookie).await
        }
    };
    let paused = act("pause_experiment", "name=held").await;
    assert_eq!(status(&paused), "paused");
    assert!(paused.contains(r#"data-testid="resume-experiment""#));
    let resumed = act("resume_experiment", "name=held").await;
    assert_eq!(status(&resumed), "running");
    assert!(resumed.contains(r#"data-testid="pause-experiment""#));
    act("extend_experiment", "name=held&more=3").await;
    let e = call(
        &site,
        Method::GET,
        "/api/v1/experiments/held",
        Some(&key),
        None,
    )
    .await
    .json();
    assert_eq!(e["spec"]["max_trials"], 5, "{e:#}");
    let stopped = act("stop_experiment", "name=held").await;
    assert_eq!(status(&stopped), "stopped");
    assert!(!stopped.contains(r#"data-testid="stop-experiment""#));
    assert!(stopped.contains(r#"data-testid="extend-experiment""#));

    // Resuming what is not paused is refused, shown on the page.
    let refused = form_post(
        &site,
        "/api/resume_experiment",
        "name=held",
        "/experiments/held",
        &cookie,
    )
    .await;
    let back = location(&refused);
    assert!(back.contains("/experiments/held?"), "{back}");
    let shown = page(&site, back.trim_start_matches("http://localhost"), &cookie).await;
    assert!(shown.contains(r#"class="banner error""#), "{shown}");
}
