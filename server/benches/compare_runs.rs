//! Comparing runs over HTTP: 100 runs (jobs), each with a `loss` curve of
//! 100,000 points, compared on one page: `GET /jobs/compare?jobs=…` draws
//! the 100 curves overlaid in one chart on the server (each an envelope
//! that keeps every bucket's minimum and maximum) beside the runs'
//! parameters and final values. `scripts/bench_compare_runs.py` times
//! TensorBoard showing the same 100 runs' curves in one card.
//!
//! Prints: the ingestion, the first page (the series read from the
//! database into memory), then p50/p90 of the page, its size, and the CSV
//! of the same comparison (no curves), all over a loopback socket with the
//! whole app in-process on a real SQLite file (`BENCH_DATABASE_URL=postgres://…`
//! for PostgreSQL). Run with `cargo bench -p server --bench compare_runs`;
//! `COMPARE_BENCH_RUNS` (100) and `COMPARE_BENCH_POINTS` (100,000) change
//! the sizes. Not part of `make test`.

mod support;

use std::collections::BTreeMap;
use std::time::Instant;

use app::models::{LocalRunStart, RunFacts};
use support::ms;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Run `run`'s curve, as `scripts/bench_compare_runs.py` writes it: a noisy
/// decay, a little higher per run.
fn value(run: u64, step: i64, state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    let noise = (*state % 10_000) as f64 / 10_000.0 - 0.5;
    2.0 * (-(step as f64) / 20_000.0).exp() + 0.3 + 0.05 * noise + run as f64 * 1e-3
}

fn main() -> anyhow::Result<()> {
    let runs = env("COMPARE_BENCH_RUNS", 100);
    let points = env("COMPARE_BENCH_POINTS", 100_000) as i64;
    let dir = tempfile::tempdir()?;
    let url = std::env::var("BENCH_DATABASE_URL")
        .unwrap_or_else(|_| server::storage::db::default_url(dir.path()));
    let runtime = tokio::runtime::Runtime::new()?;
    let names: Vec<String> = (0..runs).map(|r| format!("run-{r:03}")).collect();
    let bench = runtime.block_on(async {
        // Room for every point in memory, as a console sized for it runs.
        let cache = (runs * points as usize).max(20_000_000);
        let setup = support::console(dir.path(), &url, cache).await?;
        // Each run a local run with two parameters, one the same for all.
        for (r, job) in names.iter().enumerate() {
            let start = LocalRunStart {
                client_id: format!("bench-{r}"),
                name: Some(job.clone()),
                params: BTreeMap::from([
                    ("lr".to_owned(), serde_json::json!(0.001 * (r + 1) as f64)),
                    ("batch_size".to_owned(), serde_json::json!(64)),
                ]),
                facts: RunFacts::default(),
                started_at: None,
            };
            let local_runs = &setup.console.services.local_runs;
            local_runs
                .start(&setup.me, start)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        setup.serve().await
    })?;
    let engine = support::engine(&url);
    println!("Comparing {runs} runs of {points} points each ({engine})");
    let mut seconds = 0.0;
    for (r, job) in names.iter().enumerate() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ (r as u64 + 1);
        seconds += bench.ingest(job, "loss", points, |s| value(r as u64, s, &mut state))?;
    }
    let total = runs as f64 * points as f64;
    println!(
        "  ingest {runs} x {points} points:                {:>10.0} points/s",
        total / seconds
    );
    let jobs = names.join(",");
    let page = format!("/jobs/compare?jobs={jobs}");
    let t = Instant::now();
    let first = bench.get(&page)?;
    println!(
        "  first page (series read into memory):     {:>9.1} ms",
        ms(t.elapsed())
    );
    anyhow::ensure!(
        first.matches("data-testid=\"compare-chart\"").count() == 1,
        "one chart"
    );
    let (p50, p90, body) = bench.time(&page, 50)?;
    let lines = body.matches("class=\"legend-item\"").count();
    println!(
        "  the page, {lines} curves in one chart:        p50 {:>6.2} ms  p90 {:>6.2} ms  ({} KB of HTML)",
        ms(p50),
        ms(p90),
        body.len() / 1024
    );
    let (p50, p90, csv) = bench.time(&format!("/api/v1/jobs/compare.csv?jobs={jobs}"), 50)?;
    anyhow::ensure!(csv.lines().count() == runs + 1, "a CSV row per run");
    println!(
        "  the CSV (parameters, final values):       p50 {:>6.2} ms  p90 {:>6.2} ms",
        ms(p50),
        ms(p90)
    );
    Ok(())
}
