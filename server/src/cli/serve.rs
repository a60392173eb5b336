//! `paddlecloud serve`: the console on a socket until SIGINT or SIGTERM,
//! then a clean stop (see `console/shutdown.rs`).

use std::net::SocketAddr;

use anyhow::{bail, Context};

use super::serve_args::ServeArgs;
use crate::console::Console;

fn init_logging(format: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,sqlx=warn".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        "json" => builder.json().init(),
        "text" => builder.init(),
        other => bail!("unknown log format {other:?}: use text or json"),
    }
    Ok(())
}

pub(super) async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    init_logging(&args.log_format)?;
    // One TLS crypto provider for every client (S3, Kubernetes): ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let site = site_options(&args.leptos_config, args.addr)?;
    let addr = site.site_addr;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    let local = listener.local_addr()?;
    let public_url = args
        .public_url
        .clone()
        .unwrap_or_else(|| reachable_url(local));
    let console = Console::build(args.config(site, public_url)?).await?;
    let app = console.router();
    tracing::info!(url = %format!("http://{local}"), "PaddleCloud Console is up");
    println!("PaddleCloud Console: http://{local}  (sign up at http://{local}/signup)");
    // Once the loops' first rounds have run, the code only starting ran
    // need not stay mapped (startup_pages.rs).
    tokio::spawn(async {
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        let dropped = tokio::task::spawn_blocking(super::startup_pages::drop_startup_pages)
            .await
            .unwrap_or(0);
        tracing::debug!(bytes = dropped, "unmapped the pages starting touched");
    });
    // Small writes go out at once: a kernel's WebSocket messages through the
    // notebook proxy would otherwise wait on delayed ACKs (40 ms each).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(error = %err, "TCP_NODELAY on a connection");
        }
    });
    // The peer's address reaches handlers (rate limits of password resets).
    let (stopping, stopped) = tokio::sync::watch::channel(false);
    let server = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        let mut stopped = stopped;
        let _ = stopped.wait_for(|s| *s).await;
    });
    let mut server = tokio::spawn(async move { server.await });
    tokio::select! {
        ended = &mut server => {
            return match ended {
                Ok(result) => result.map_err(Into::into),
                Err(err) => Err(err.into()),
            };
        }
        _ = shutdown_signal() => {}
    }
    // New connections stop at once; what runs here is stopped meanwhile
    // (console/shutdown.rs), then requests still in flight get a moment.
    // Event streams and notebook sockets never end by themselves, so the
    // server is not waited for past that.
    let _ = stopping.send(true);
    console.shut_down().await;
    match tokio::time::timeout(DRAIN, &mut server).await {
        Ok(Ok(Err(err))) => return Err(err.into()),
        Ok(_) => {}
        Err(_) => tracing::info!("closing the connections still open"),
    }
    tracing::info!("stopped");
    Ok(())
}

/// How long requests still in flight get once what runs here has stopped.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// The site settings of `Leptos.toml` at `path`, listening on `addr` if given.
pub fn site_options(
    path: &std::path::Path,
    addr: Option<SocketAddr>,
) -> anyhow::Result<leptos::prelude::LeptosOptions> {
    if !path.exists() {
        bail!(
            "site configuration {} not found: run from the repository root or pass --leptos-config",
            path.display()
        );
    }
    let config =
        leptos_config::get_configuration(Some(path.to_str().context("config path is not UTF-8")?))
            .context("reading the site configuration")?;
    let mut site = config.leptos_options;
    if let Some(addr) = addr {
        site.site_addr = addr;
    }
    Ok(site)
}

/// The address jobs on this machine reach the console at: a wildcard
/// listen address is reached through loopback.
fn reachable_url(local: SocketAddr) -> String {
    let ip = match local.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_owned(),
        ip if ip.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    format!("http://{ip}:{}", local.port())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}
