//! How fast an experiment's page renders on the server for 1,000 finished
//! trials: latency (p50/p95/p99) of the full server-rendered
//! `GET /experiments/<name>` (the best trial, three charts drawn as SVG,
//! the first 100 rows of the trials table), sorted by the objective, and
//! filtered to the failed trials.
//!
//! The experiment is recorded straight into a real SQLite file (or
//! `BENCH_DATABASE_URL=postgres://…`) as ended, before the console starts,
//! so its controller leaves it alone (its trials' jobs have no records, so
//! the best trial's metrics read as none). Run with `cargo bench -p server --bench
//! experiment_page`; `EXPERIMENT_BENCH_TRIALS` changes the count (at most
//! 1,000, the limit of an experiment).

use std::time::{Duration, Instant};

use app::models::{
    trial_job_name, ExperimentSpec, ExperimentStatus, MetricPoint, SignUpForm, TrialStatus,
    TrialValues,
};
use app::ports::Accounts;
use server::accounts::{AccountMail, SqlAccounts};
use server::console::{Config, Console};
use server::storage::experiments::{ExperimentStore, TrialUpdate};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() -> anyhow::Result<()> {
    let trials: u32 = std::env::var("EXPERIMENT_BENCH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let dir = tempfile::tempdir()?;
    let url = std::env::var("BENCH_DATABASE_URL")
        .unwrap_or_else(|_| server::storage::db::default_url(dir.path()));
    let runtime = tokio::runtime::Runtime::new()?;
    let (addr, cookie) = runtime.block_on(async {
        let pool = server::storage::db::connect(&url).await?;
        let accounts = SqlAccounts::new(pool.clone(), AccountMail::outbox_of(dir.path())?);
        let me = accounts
            .create_confirmed(
                SignUpForm {
                    account: format!("bench{}", std::process::id()),
                    email: "bench@example.com".into(),
                    password: "a long password".into(),
                },
                false,
                false,
            )
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let session = accounts
            .create_session(&me, "bench")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let spec: ExperimentSpec = serde_json::from_value(serde_json::json!({
            "name": "big-search",
            "template": "paddlecloud/fit-a-line",
            "values": {"trainers": 1, "epochs": 10},
            "parameters": [
                {"name": "lr", "type": "float", "min": 0.001, "max": 0.5, "log": true},
                {"name": "batch_size", "type": "int", "min": 8, "max": 256, "log": true},
                {"name": "optimizer", "type": "enum", "choices": ["sgd", "adam", "rmsprop"]},
            ],
            "objective": {"metric": "train/loss", "direction": "minimize"},
            "max_trials": 1000,
            "parallel_trials": 8,
            "max_failed_trials": 100,
        }))?;
        spec.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
        let store = ExperimentStore::new(pool.clone());
        let started = Instant::now();
        let id = store
            .insert(&me, &spec)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        store
            .set_status(id, ExperimentStatus::Succeeded, "All 1000 trials ran.")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        // A fixed pseudo-random sequence: the same experiment every run.
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for n in 1..=trials {
            let lr = 0.001 * 500f64.powf(next());
            let batch = (8.0 * 32f64.powf(next())).round() as i64;
            let opt = ["sgd", "adam", "rmsprop"][(next() * 3.0) as usize % 3];
            let values: TrialValues = [
                ("lr".to_owned(), serde_json::json!(lr)),
                ("batch_size".to_owned(), serde_json::json!(batch)),
                ("optimizer".to_owned(), serde_json::json!(opt)),
            ]
            .into();
            store
                .claim_trial(id, n, &trial_job_name("big-search", n), &values)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let loss = (lr.ln() - 0.05f64.ln()).powi(2) / 10.0 + next() / 5.0;
            let update = match n % 25 {
                3 => TrialUpdate {
                    status: Some(TrialStatus::Failed),
                    message: Some("its job exited with code 1".into()),
                    ..Default::default()
                },
                7 | 11 | 19 => TrialUpdate {
                    status: Some(TrialStatus::Pruned),
                    objective: Some(loss + 1.0),
                    step: Some(3),
                    message: Some("worse than the median at step 3".into()),
                },
                _ => TrialUpdate {
                    status: Some(TrialStatus::Succeeded),
                    objective: Some(loss),
                    step: Some(9),
                    message: Some(String::new()),
                },
            };
            store
                .update_trial(id, n, &update)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        eprintln!(
            "seeded an experiment of {trials} trials in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let site = server::cli::site_options(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../Leptos.toml")),
            None,
        )?;
        let config = Config {
            metrics_cache_points: 1_000_000,
            ..Config::embedded(site, dir.path().to_owned(), url.clone())
        };
        let console = Console::build(config).await?;
        // The best trial's curves: the page reads its tags' last values.
        let best = console
            .services
            .experiments
            .get(&me.account, "big-search")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .best()
            .map(|t| t.job.clone())
            .ok_or_else(|| anyhow::anyhow!("no best trial"))?;
        let points: Vec<MetricPoint> = ["train/loss", "train/acc", "eval/loss", "lr"]
            .iter()
            .flat_map(|tag| {
                (0..10).map(move |step| {
                    serde_json::from_value(serde_json::json!({
                        "tag": tag, "step": step, "value": 1.0 / f64::from(step + 1), "wall_time": 1.7e9
                    }))
                    .unwrap()
                })
            })
            .collect();
        // Without its job's record (the trials here never ran) PaddleBoard
        // refuses them: the page then reads the tags and finds none.
        if let Err(err) = console.services.metrics.append(&me.account, &best, points).await {
            eprintln!("the best trial's metrics: none ({err})");
        }
        let app = console.router();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, app).await });
        anyhow::Ok((addr, format!("pc_session={}", session.token)))
    })?;

    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let get = |path: &str| -> anyhow::Result<usize> {
        let mut res = agent
            .get(&format!("http://{addr}{path}"))
            .header("Cookie", &cookie)
            .header("Accept", "text/html")
            .call()?;
        anyhow::ensure!(res.status() == 200, "{path} answered {}", res.status());
        let html = res.body_mut().read_to_string()?;
        anyhow::ensure!(
            html.contains("data-testid=\"parallel-chart\"") && html.contains("data-trial="),
            "{path} has no chart or no trials"
        );
        Ok(html.len())
    };
    println!("experiment page SSR, {trials} finished trials");
    for (what, path) in [
        (
            "whole page (3 charts + 100 rows)",
            "/experiments/big-search",
        ),
        (
            "sorted by the objective, worst first",
            "/experiments/big-search?sort=objective&desc=1",
        ),
        (
            "filtered to the failed trials",
            "/experiments/big-search?status=failed",
        ),
    ] {
        for _ in 0..5 {
            get(path)?;
        }
        let mut times = Vec::with_capacity(100);
        let mut bytes = 0;
        for _ in 0..100 {
            let t = Instant::now();
            bytes = get(path)?;
            times.push(t.elapsed());
        }
        times.sort();
        println!(
            "  {what:<38} p50 {:>7.2} ms  p95 {:>7.2} ms  p99 {:>7.2} ms  ({} KB of HTML)",
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.95).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
            bytes / 1024
        );
    }
    Ok(())
}
