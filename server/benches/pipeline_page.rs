//! How fast a pipeline run's page renders on the server for a 1,000-node
//! fan-out (root → 1,000 leaves → join): latency (p50/p90/p99) of the full
//! server-rendered `GET /pipelines/<run>` (graph and node table), and of
//! the table filtered to the failed nodes.
//!
//! The run is recorded straight into a real SQLite file (or
//! `BENCH_DATABASE_URL=postgres://…`) as ended, with its nodes in a mix of
//! states, so the scheduler leaves it alone; the console serves it as
//! `paddlecloud serve` would. Run with
//! `cargo bench -p server --bench pipeline_page`; `PIPELINE_BENCH_LEAVES`
//! changes the fan-out.

use std::time::{Duration, Instant};

use app::models::{NodeStatus, PipelineSpec, RunStatus, SignUpForm};
use app::ports::Accounts;
use server::accounts::{AccountMail, SqlAccounts};
use server::console::{Config, Console};
use server::storage::pipelines::{NodeUpdate, PipelineStore};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() -> anyhow::Result<()> {
    let leaves: usize = std::env::var("PIPELINE_BENCH_LEAVES")
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
        let job = serde_json::json!({"command": ["true"], "num_trainers": 1});
        let mut nodes = vec![serde_json::json!({"name": "root", "job": job})];
        let names: Vec<String> = (0..leaves).map(|i| format!("leaf{i}")).collect();
        nodes.extend(
            names
                .iter()
                .map(|n| serde_json::json!({"name": n, "job": job, "after": ["root"]})),
        );
        nodes.push(serde_json::json!({"name": "join", "job": job, "after": names}));
        let spec: PipelineSpec =
            serde_json::from_value(serde_json::json!({"name": "fan", "nodes": nodes}))?;
        spec.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
        let store = PipelineStore::new(pool.clone());
        let started = Instant::now();
        store
            .insert(&me, "fan-bench", &spec, &Default::default())
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let id: i64 = sqlx::query_scalar("SELECT id FROM pipeline_runs WHERE name = 'fan-bench'")
            .fetch_one(&pool)
            .await?;
        store
            .end(id, RunStatus::Failed, "Failed: “leaf7”.")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        // Most leaves succeeded, some failed, the join skipped.
        for i in 0..spec.nodes.len() {
            let status = match i {
                0 => NodeStatus::Succeeded,
                i if i == spec.nodes.len() - 1 => NodeStatus::Skipped,
                i if i % 50 == 7 => NodeStatus::Failed,
                _ => NodeStatus::Succeeded,
            };
            let update = NodeUpdate {
                status: Some(status),
                message: Some(if status == NodeStatus::Failed {
                    "its job exited with code 1".into()
                } else {
                    String::new()
                }),
                ..Default::default()
            };
            store
                .update_node(id, i, update)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        eprintln!(
            "seeded a run of {} nodes in {:.1} s",
            spec.nodes.len(),
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
        let app = Console::build(config).await?.router();
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
            html.contains("data-testid=\"graph\""),
            "{path} has no graph"
        );
        Ok(html.len())
    };
    println!("pipeline run page SSR, root → {leaves} leaves → join");
    for (what, path) in [
        ("whole page (graph + 500 rows)", "/pipelines/fan-bench"),
        (
            "filtered to the failed nodes",
            "/pipelines/fan-bench?status=failed",
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
            "  {what:<32} p50 {:>7.2} ms  p90 {:>7.2} ms  p99 {:>7.2} ms  ({} KB of HTML)",
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.9).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
            bytes / 1024
        );
    }
    Ok(())
}
