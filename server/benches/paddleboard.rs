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

mod support;

use std::time::Instant;

use server::storage::jobs::JobStore;
use support::{ms, percentile};

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

fn main() -> anyhow::Result<()> {
    let many: u64 = std::env::var("PADDLEBOARD_BENCH_SERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir()?;
    let url = std::env::var("BENCH_DATABASE_URL")
        .unwrap_or_else(|_| server::storage::db::default_url(dir.path()));
    let runtime = tokio::runtime::Runtime::new()?;
    let bench = runtime.block_on(async {
        // The console as `paddlecloud serve` runs it, 50M points cached.
        let setup = support::console(dir.path(), &url, 50_000_000).await?;
        for job in ["one-million", "hundred"] {
            let spec = app::models::JobSpec {
                priority: Default::default(),
                max_runtime: None,
                secrets: vec![],
                notebook: None,
                template: None,
                pipeline: None,
                experiment: None,
                notebook_run: None,
                scoring: None,
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
            JobStore::new(setup.console.pool.clone())
                .insert(&setup.me, &spec, "local")
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        setup.serve().await
    })?;
    let engine = support::engine(&url);
    println!("PaddleBoard over HTTP ({engine}, batches of 10,000 points, each durable)");

    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let seconds = bench.ingest("one-million", "loss", 1_000_000, |s| {
        value(0, s, &mut state)
    })?;
    let rate = 1_000_000.0 / seconds;
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
        let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ (s + 1);
        let tag = format!("series-{s:03}");
        bench.ingest("hundred", &tag, 100_000, |step| {
            value(s + 1, step, &mut state)
        })?;
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
