//! What the console's notebook proxy adds to a kernel round trip: an
//! `execute_request` of `1` sent over the kernel's WebSocket until its
//! `execute_reply` arrives, through the console (`/notebooks/…`, session
//! cookie) and straight to the JupyterLab server (its port and token), one
//! after the other on the same kernel; then a plain HTTP GET of the kernel's
//! model both ways; p50/p90/p99 of each.
//!
//! A real `jupyter lab` of `NOTEBOOK_BENCH_PYTHON` (default: the test venv,
//! `~/.cache/paddlecloud/pyvenv/bin/python`) behind the console on a
//! loopback port. Run with `cargo bench -p server --bench notebook_proxy`;
//! `NOTEBOOK_BENCH_ROUNDS` (default 300) changes the count.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use app::models::{NotebookSpec, ReplicaResources, SignUpForm};
use app::ports::{Accounts, Credential, Notebooks, Principal};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use server::accounts::{AccountMail, SqlAccounts};
use server::console::{Config, Console};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Opens kernel `kernel`'s channels at `base` (`http://…/notebooks/a/n/`)
/// with `header: value` as its credential.
async fn channels(
    base: &str,
    kernel: &str,
    header: (&'static str, &str),
) -> anyhow::Result<Socket> {
    let url = format!(
        "{}api/kernels/{kernel}/channels",
        base.replacen("http://", "ws://", 1)
    );
    let mut request = url.into_client_request()?;
    request.headers_mut().insert(header.0, header.1.parse()?);
    // TCP_NODELAY, as a browser's sockets: else each small message may wait
    // for a delayed ACK and both ways measure that instead.
    Ok(
        tokio_tungstenite::connect_async_with_config(request, None, true)
            .await?
            .0,
    )
}

/// One `execute_request` of `1` until its `execute_reply`: how long it took.
async fn round_trip(socket: &mut Socket, msg_id: String) -> anyhow::Result<Duration> {
    let execute = json!({
        "header": {"msg_id": msg_id, "username": "bench", "session": "bench",
                   "msg_type": "execute_request", "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "buffers": [], "channel": "shell",
        "content": {"code": "1", "silent": true, "store_history": false,
                    "user_expressions": {}, "allow_stdin": false, "stop_on_error": true}
    });
    let started = Instant::now();
    socket.send(Message::text(execute.to_string())).await?;
    while let Some(next) = socket.next().await {
        let Message::Text(text) = next? else { continue };
        let msg: Value = serde_json::from_str(&text)?;
        if msg["msg_type"] == "execute_reply" && msg["parent_header"]["msg_id"] == msg_id.as_str() {
            return Ok(started.elapsed());
        }
    }
    anyhow::bail!("the kernel's socket closed")
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what:<38} p50 {:>6.2} ms  p90 {:>6.2} ms  p99 {:>6.2} ms  ({} round trips)",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.9)),
        ms(percentile(&times, 0.99)),
        times.len()
    );
}

fn main() -> anyhow::Result<()> {
    let rounds: usize = std::env::var("NOTEBOOK_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let python = std::env::var_os("NOTEBOOK_BENCH_PYTHON")
        .map(PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(PathBuf::from(home).join(".cache/paddlecloud/pyvenv/bin/python"))
        })
        .filter(|p| p.exists())
        .ok_or_else(|| anyhow::anyhow!("no Python with jupyterlab: set NOTEBOOK_BENCH_PYTHON"))?;
    let dir = tempfile::tempdir()?;
    let db_url = server::storage::db::default_url(dir.path());
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let console_url = format!("http://{}", listener.local_addr()?);
        let site = server::cli::site_options(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../Leptos.toml")),
            None,
        )?;
        let config = Config {
            public_url: Some(console_url.clone()),
            notebook_python: Some(python.display().to_string()),
            notebook_probe_secs: 3600,
            ..Config::embedded(site, dir.path().to_owned(), db_url.clone())
        };
        let console = Console::build(config).await?;
        let accounts = SqlAccounts::new(console.pool.clone(), AccountMail::outbox_of(dir.path())?);
        let me = accounts
            .create_confirmed(
                SignUpForm {
                    account: "bench".into(),
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
        let app = console.router();
        // As `paddlecloud serve` listens (TCP_NODELAY on every connection).
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move { axum::serve(listener, app).await });

        let notebooks = console.notebooks().clone();
        let spec = NotebookSpec {
            name: "bench".into(),
            resources: ReplicaResources::default(),
            idle_minutes: None,
            image: String::new(),
            environment: None,
            environment_use: None,
            secrets: vec![],
        };
        notebooks
            .create(&me, spec)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let who = Principal::new(me.clone(), Credential::Session(0));
        let started = Instant::now();
        let route = loop {
            match notebooks.route(&who, "bench", "bench").await {
                Ok(route) => break route,
                Err(_) if started.elapsed() < Duration::from_secs(120) => {
                    tokio::time::sleep(Duration::from_millis(200)).await
                }
                Err(err) => anyhow::bail!("the notebook did not start: {err}"),
            }
        };
        eprintln!(
            "JupyterLab answered after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let base = "/notebooks/bench/bench/";
        let cookie = format!("pc_session={}", session.token);
        let client = server::backend::serving::http_client(Duration::from_secs(60))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let made = client
            .post(format!("{console_url}{base}api/kernels"))
            .header("cookie", &cookie)
            .body(r#"{"name": "python3"}"#)
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
        let kernel: Value = serde_json::from_slice(&made)?;
        let kernel = kernel["id"].as_str().unwrap_or_default().to_owned();
        let token = format!("token {}", route.jupyter_token);
        let mut proxied = channels(
            &format!("{console_url}{base}"),
            &kernel,
            ("cookie", &cookie),
        )
        .await?;
        let mut direct = channels(
            &format!("{}{base}", route.upstream),
            &kernel,
            ("authorization", &token),
        )
        .await?;
        // Warm up both ways (the kernel's first execution is slower).
        for n in 0..20 {
            round_trip(&mut proxied, format!("warm-proxied-{n}")).await?;
            round_trip(&mut direct, format!("warm-direct-{n}")).await?;
        }
        let (mut through, mut straight) = (Vec::new(), Vec::new());
        for n in 0..rounds {
            through.push(round_trip(&mut proxied, format!("proxied-{n}")).await?);
            straight.push(round_trip(&mut direct, format!("direct-{n}")).await?);
        }
        report("kernel: direct to JupyterLab", straight);
        report("kernel: through the console's proxy", through);
        // Plain HTTP (a kernel's model, as JupyterLab polls it) both ways.
        let (mut through, mut straight) = (Vec::new(), Vec::new());
        let get = |url: String, header: (&'static str, String)| {
            let client = client.clone();
            async move {
                let started = Instant::now();
                client
                    .get(url)
                    .header(header.0, header.1)
                    .send()
                    .await?
                    .error_for_status()?
                    .bytes()
                    .await?;
                anyhow::Ok(started.elapsed())
            }
        };
        for _ in 0..rounds {
            through.push(
                get(
                    format!("{console_url}{base}api/kernels/{kernel}"),
                    ("cookie", cookie.clone()),
                )
                .await?,
            );
            straight.push(
                get(
                    format!("{}{base}api/kernels/{kernel}", route.upstream),
                    ("authorization", token.clone()),
                )
                .await?,
            );
        }
        report("HTTP GET: direct to JupyterLab", straight);
        report("HTTP GET: through the proxy", through);
        notebooks
            .stop(&me, "bench")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        anyhow::Ok(())
    })
}
