//! PaddleBoard over HTTP, as writers and charts use it, on the same data as
//! `scripts/bench_compare.py` runs TensorBoard and MLflow on:
//!
//! - ingestion: `POST /api/v1/jobs/{job}/metrics` batches of 10,000 points,
//!   each durable when answered (SQLite in WAL mode with `synchronous=FULL`),
//!   1 series of 1,000,000 points, then 100 series of 100,000;
//! - a chart: the envelope of the 1M-point series at width 1,000 (p50 of 200
//!   requests after the first loads it), whether the single spike is in it,
//!   and the same for the 100 × 100k series;
//! - history: all 100,000 points of a series, as the MLflow client's
//!   `get_metric_history` fetches them (4 pages of 25,000) and as CSV.
//!
//! The whole app runs in-process on a loopback port with a real SQLite file
//! (`BENCH_DATABASE_URL=postgres://…` for PostgreSQL). Run with
//! `cargo bench -p server --bench paddleboard`; `PADDLEBOARD_BENCH_SERIES`
//! (default 100) changes the number of 100k series.

use std::time::{Duration, Instant};

use app::models::SignUpForm;
use server::access_keys::SqlAccessKeys;
use server::console::{Config, Console};
use server::storage::jobs::JobStore;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The same curve as the comparison script: a noisy decay, one spike.
fn value(series: u64, step: i64, state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    let noise = (*state % 10_000) as f64 / 10_000.0 - 0.5;
    let base = 2.0 * (-(step as f64) / 200_000.0).exp() + 0.3 + 0.05 * noise + series as f64 * 1e-3;
    if series == 0 && step == 654_321 {
        base * 100.0
    } else {
        base
    }
}

struct Bench {
    base: String,
    key: String,
    agent: ureq::Agent,
}

impl Bench {
    fn post(&self, job: &str, body: &str) -> anyhow::Result<()> {
        let res = self
            .agent
            .post(&format!("{}/api/v1/jobs/{job}/metrics", self.base))
            .header("Authorization", &format!("Bearer {}", self.key))
            .header("Content-Type", "application/json")
            .send(body)?;
        anyhow::ensure!(res.status() == 200, "batch answered {}", res.status());
        Ok(())
    }

    fn get(&self, path: &str) -> anyhow::Result<String> {
        let mut res = self
            .agent
            .get(&format!("{}{path}", self.base))
            .header("Authorization", &format!("Bearer {}", self.key))
            .call()?;
        anyhow::ensure!(res.status() == 200, "{path} answered {}", res.status());
        Ok(res
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()?)
    }

    /// Sends `points` points of `tag` in batches of 10,000; returns points/s.
    /// The bodies are written first, so the time is the server's, not the
    /// time this client spends formatting numbers.
    fn ingest(&self, job: &str, series: u64, tag: &str, points: i64) -> anyhow::Result<f64> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ series;
        let mut bodies = Vec::new();
        let mut step = 0;
        while step < points {
            let end = (step + 10_000).min(points);
            let mut body = String::with_capacity(10_000 * 70);
            body.push('[');
            for s in step..end {
                if s > step {
                    body.push(',');
                }
                body.push_str(&format!(
                    r#"{{"tag":"{tag}","step":{s},"value":{},"wall_time":{}}}"#,
                    value(series, s, &mut state),
                    1.7e9 + s as f64 * 0.01
                ));
            }
            body.push(']');
            bodies.push(body);
            step = end;
        }
        let started = Instant::now();
        for body in &bodies {
            self.post(job, body)?;
        }
        Ok(points as f64 / started.elapsed().as_secs_f64())
    }

    /// p50/p90 of `runs` GETs of `path`, after one to warm up.
    fn time(&self, path: &str, runs: usize) -> anyhow::Result<(Duration, Duration, String)> {
        let body = self.get(path)?;
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            self.get(path)?;
            times.push(t.elapsed());
        }
        times.sort();
        Ok((percentile(&times, 0.5), percentile(&times, 0.9), body))
    }
}

fn main() -> anyhow::Result<()> {
    let many: u64 = std::env::var("PADDLEBOARD_BENCH_SERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir()?;
    let url = std::env::var("BENCH_DATABASE_URL")
        .unwrap_or_else(|_| server::storage::db::default_url(dir.path()));
    let runtime = tokio::runtime::Runtime::new()?;
    let (base, key) = runtime.block_on(async {
        // The console as `paddlecloud serve` runs it, 50M points cached.
        let site = server::cli::site_options(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../Leptos.toml")),
            None,
        )?;
        let config = Config {
            metrics_cache_points: 50_000_000,
            ..Config::embedded(site, dir.path().to_owned(), url.clone())
        };
        let console = Console::build(config).await?;
        let pool = console.pool.clone();
        let accounts = console.services.accounts.clone();
        let name = format!("bench{}", std::process::id());
        let me = accounts
            .create_account(SignUpForm {
                account: name.clone(),
                email: "bench@example.com".into(),
                password: "a long password".into(),
            })
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let keys = SqlAccessKeys::new(pool.clone());
        let key = keys
            .create_for(&name, "bench@example.com", "bench")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .key;
        for job in ["one-million", "hundred"] {
            let spec = app::models::JobSpec {
                notebook: None,
                template: None,
                pipeline: None,
                experiment: None,
                environment: None,
                environment_use: None,
                name: job.into(),
                image: String::new(),
                command: vec!["true".into()],
                args: vec![],
                working_dir: String::new(),
                env: vec![],
                num_ps: 0,
                num_trainers: 1,
                ps: Default::default(),
                trainer: Default::default(),
                datasets: vec![],
                models: vec![],
            };
            JobStore::new(pool.clone())
                .insert(&me, &spec, "local")
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        let app = console.router();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, app).await });
        anyhow::Ok((format!("http://{addr}"), key))
    })?;
    let bench = Bench {
        base,
        key,
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into(),
    };
    let engine = if url.starts_with("postgres") {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    println!("PaddleBoard over HTTP ({engine}, batches of 10,000 points, each durable)");

    let rate = bench.ingest("one-million", 0, "loss", 1_000_000)?;
    println!("  ingest 1 series x 1,000,000 points:        {rate:>10.0} points/s");

    let (p50, p90, body) = bench.time("/api/v1/jobs/one-million/metrics/loss?width=1000", 200)?;
    let envelope: serde_json::Value = serde_json::from_str(&body)?;
    let points = envelope["points"].as_array().map_or(0, Vec::len);
    let spike = envelope["points"]
        .as_array()
        .is_some_and(|p| p.iter().any(|p| p["step"] == 654_321));
    println!(
        "  chart of 1M points at width 1,000:          p50 {:>6.2} ms  p90 {:>6.2} ms  ({points} points, spike at 654321 {})",
        ms(p50),
        ms(p90),
        if spike { "kept" } else { "LOST" }
    );
    let (p50, _, _) = bench.time(
        "/api/v1/jobs/one-million/metrics/loss?from=600000&to=610000&width=1000",
        100,
    )?;
    println!(
        "  zoom to 10,000 of them at width 1,000:      p50 {:>6.2} ms",
        ms(p50)
    );

    let started = Instant::now();
    for s in 0..many {
        bench.ingest("hundred", s + 1, &format!("series-{s:03}"), 100_000)?;
    }
    let total = many as f64 * 100_000.0;
    println!(
        "  ingest {many} series x 100,000 points:         {:>10.0} points/s",
        total / started.elapsed().as_secs_f64()
    );
    let mut times = Vec::new();
    for s in 0..many {
        let path = format!("/api/v1/jobs/hundred/metrics/series-{s:03}?width=1000");
        bench.get(&path)?; // loads it into memory
        let t = Instant::now();
        bench.get(&path)?;
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "  chart of each 100k series at width 1,000:   p50 {:>6.2} ms  p90 {:>6.2} ms",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.9))
    );

    // History of 100k points through the MLflow route, 4 pages of 25,000
    // as the mlflow client asks, after logging them as it does (1,000 a call).
    let mlflow = |path: &str, body: serde_json::Value| -> anyhow::Result<serde_json::Value> {
        let mut res = bench
            .agent
            .post(&format!("{}/api/2.0/mlflow/{path}", bench.base))
            .header("Authorization", &format!("Bearer {}", bench.key))
            .send_json(&body)?;
        anyhow::ensure!(res.status() == 200, "{path} answered {}", res.status());
        Ok(res.body_mut().read_json()?)
    };
    let run = mlflow(
        "runs/create",
        serde_json::json!({"experiment_id": "0", "run_name": "history"}),
    )?;
    let run_id = run["run"]["info"]["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let started = Instant::now();
    let mut state = 7u64;
    for chunk in 0..100i64 {
        let metrics: Vec<serde_json::Value> = (chunk * 1000..(chunk + 1) * 1000)
            .map(|s| serde_json::json!({"key": "loss", "value": value(1, s, &mut state), "timestamp": 1_700_000_000_000i64 + s, "step": s}))
            .collect();
        mlflow(
            "runs/log-batch",
            serde_json::json!({"run_id": run_id, "metrics": metrics}),
        )?;
    }
    println!(
        "  MLflow log-batch, 100 x 1,000 points:       {:>10.0} points/s",
        100_000.0 / started.elapsed().as_secs_f64()
    );
    let mut runs = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let mut token = String::new();
        let mut got = 0;
        loop {
            let page = bench.get(&format!(
                "/api/2.0/mlflow/metrics/get-history?run_id={run_id}&metric_key=loss&max_results=25000&page_token={token}"
            ))?;
            let page: serde_json::Value = serde_json::from_str(&page)?;
            got += page["metrics"].as_array().map_or(0, Vec::len);
            match page["next_page_token"].as_str() {
                Some(t) => token = t.to_owned(),
                None => break,
            }
        }
        anyhow::ensure!(got == 100_000, "history had {got} points");
        runs.push(t.elapsed());
    }
    runs.sort();
    println!(
        "  MLflow get-history of 100,000 points:       p50 {:>6.2} ms (4 pages)",
        ms(percentile(&runs, 0.5))
    );

    let mut runs = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let csv = bench.get("/api/v1/jobs/hundred/metrics/series-000?format=csv")?;
        anyhow::ensure!(csv.lines().count() == 100_001, "CSV rows");
        runs.push(t.elapsed());
    }
    runs.sort();
    println!(
        "  history of 100,000 points as CSV:           p50 {:>6.2} ms",
        ms(percentile(&runs, 0.5))
    );
    Ok(())
}
