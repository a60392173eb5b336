//! How fast the job table renders on the server with 10,000 jobs in the
//! account: latency (p50/p90/p99) of a full server-rendered `GET /jobs`
//! page, and requests per second with several clients at once.
//!
//! The whole app runs in-process on a loopback port with a real SQLite file
//! (or `BENCH_DATABASE_URL=postgres://…`), the way `paddlecloud serve` runs
//! it; clients are blocking HTTP clients on their own threads.
//! Run with `cargo bench -p server --bench job_list`;
//! `JOB_LIST_BENCH_JOBS`, `JOB_LIST_BENCH_CLIENTS`, `JOB_LIST_BENCH_SECONDS` change the load.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use app::models::{JobSpec, JobStatus, ReplicaResources, SignUpForm};
use app::ports::Accounts;
use server::accounts::{AccountMail, SqlAccounts};
use server::console::{Config, Console};
use server::storage::jobs::JobStore;

/// The allocator of the `paddlecloud` binary, so the bench measures what it runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn spec(i: usize) -> JobSpec {
    JobSpec {
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
        name: format!("resnet-{i:05}"),
        image: "paddlepaddle/paddle:2.6.1".into(),
        command: vec!["python".into(), "train.py".into()],
        args: vec![],
        working_dir: String::new(),
        env: vec![],
        num_ps: 2,
        num_trainers: 4,
        ps: ReplicaResources {
            cpu: "1".into(),
            memory: "2Gi".into(),
            gpu: 0,
        },
        trainer: ReplicaResources {
            cpu: "4".into(),
            memory: "8Gi".into(),
            gpu: 1,
        },
        datasets: vec![],
        models: vec![],
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Latency percentiles and size of 300 answers of `fetch` (after 20 to
/// warm up), printed on one line.
fn measure(what: &str, fetch: &dyn Fn() -> anyhow::Result<usize>) -> anyhow::Result<()> {
    for _ in 0..20 {
        fetch()?;
    }
    let mut times = Vec::with_capacity(300);
    let mut bytes = 0;
    for _ in 0..300 {
        let t = Instant::now();
        bytes = fetch()?;
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "  {what:<38} p50 {:>6.2} ms  p90 {:>6.2} ms  p99 {:>6.2} ms  ({} KB of HTML)",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.9).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
        bytes / 1024
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let jobs: usize = env_or("JOB_LIST_BENCH_JOBS", 10_000);
    let clients: usize = env_or("JOB_LIST_BENCH_CLIENTS", 8);
    let seconds: u64 = env_or("JOB_LIST_BENCH_SECONDS", 10);
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

        // The log console's pod (a 2,000-line log), so `?log=` renders the
        // tail a user watching it sees.
        let log = server::storage::logfile::log_path(
            &dir.path()
                .join("jobs")
                .join(&me.account.name)
                .join("resnet-00042"),
            "trainer-0",
        );
        std::fs::create_dir_all(log.parent().unwrap())?;
        let lines: String = (0..2000)
            .map(|i| {
                format!(
                    "[2026-11-28 12:00:{:02}] epoch {i}: loss 0.{i:04} lr 0.001\n",
                    i % 60
                )
            })
            .collect();
        std::fs::write(&log, lines)?;

        let store = JobStore::new(pool.clone());
        let started = Instant::now();
        let statuses = [
            JobStatus::Succeeded,
            JobStatus::Failed,
            JobStatus::Stopped,
            JobStatus::Succeeded,
            JobStatus::Running,
        ];
        for i in 0..jobs {
            let (job, _token) = store
                .insert(&me, &spec(i), "local")
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            store
                .set_status(job.id, statuses[i % statuses.len()], "")
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        eprintln!(
            "seeded {jobs} jobs ({} pods) in {:.1} s",
            jobs * 6,
            started.elapsed().as_secs_f64()
        );

        // The console on its embedded defaults, as `paddlecloud serve` runs
        // it. No job of its own runs: the rows above are records only.
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

    let pages = [
        ("first page (newest 25)", "/jobs".to_owned()),
        (
            "filtered: failed, name contains 42",
            "/jobs?status=failed&q=42".to_owned(),
        ),
        (
            "page 200, sorted by name",
            "/jobs?sort=name&page=200".to_owned(),
        ),
    ];
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let get_region =
        |agent: &ureq::Agent, path: &str, region: Option<&str>| -> anyhow::Result<usize> {
            let mut req = agent
                .get(&format!("http://{addr}{path}"))
                .header("Cookie", &cookie)
                .header("Accept", "text/html");
            if let Some(region) = region {
                req = req.header(app::components::live::REGION_HEADER, region);
            }
            let mut res = req.call()?;
            anyhow::ensure!(res.status() == 200, "{path} answered {}", res.status());
            let html = res.body_mut().read_to_string()?;
            anyhow::ensure!(html.contains("resnet-"), "{path} shows no jobs");
            Ok(html.len())
        };
    let get = |agent: &ureq::Agent, path: &str| get_region(agent, path, None);

    // Where to look at the page by hand while the bench runs.
    eprintln!("console on http://{addr}, {cookie}");
    println!(
        "job table SSR, {jobs} jobs in the account ({url_kind})",
        url_kind = if url.starts_with("postgres") {
            "PostgreSQL"
        } else {
            "SQLite"
        }
    );
    for (what, path) in &pages {
        measure(what, &|| get(&agent, path))?;
    }

    // What one job event costs while the log console is open: the live
    // region's refresh, as the page asked for it before (the whole page,
    // with the log tail) and as it asks now (the table alone).
    let watching = "/jobs?log=resnet-00042&pod=trainer-0";
    for (what, region) in [
        ("job event, whole page (?log= open)", None),
        ("job event, the table region alone", Some("jobs-table")),
    ] {
        measure(what, &|| get_region(&agent, watching, region))?;
    }

    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let threads: Vec<_> = (0..clients)
            .map(|_| {
                let agent = agent.clone();
                let (done, stop, get) = (&done, &stop, &get);
                scope.spawn(move || -> anyhow::Result<()> {
                    while !stop.load(Ordering::Relaxed) {
                        get(&agent, "/jobs")?;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs(seconds));
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().expect("client thread")?;
        }
        Ok(())
    })?;
    let n = done.load(Ordering::Relaxed);
    println!(
        "  throughput, {clients} clients for {seconds} s: {:.0} req/s ({n} pages)",
        n as f64 / started.elapsed().as_secs_f64()
    );
    Ok(())
}
