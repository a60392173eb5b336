//! The kubelet API the apiserver proxies `pods/log` to (HTTPS with a
//! self-signed certificate), and the times it writes.

use super::*;

/// A self-signed certificate for 127.0.0.1 and `localhost` (the apiserver
/// checks none).
pub fn tls_acceptor(node: &str) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (key, cert) = (dir.path().join("key.pem"), dir.path().join("cert.pem"));
    let out = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ])
        .args(["-days", "7", "-subj", &format!("/CN={node}")])
        .args([
            "-addext",
            &format!("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:{node}"),
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("running openssl: {e}"))?;
    if !out.status.success() {
        return Err(format!("openssl: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let certs = CertificateDer::pem_file_iter(&cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(&key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Accepted TLS connections, handshakes done apart so a slow one stalls none.
pub(super) struct TlsListener {
    pub(super) conns: mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        SocketAddr,
    )>,
    pub(super) addr: SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.conns.recv().await {
            Some(conn) => conn,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

pub(super) async fn serve(
    kubelet: Arc<Kubelet>,
    listener: tokio::net::TcpListener,
    tls: tokio_rustls::TlsAcceptor,
) {
    let app = axum::Router::new()
        .route(
            "/containerLogs/{namespace}/{pod}/{container}",
            axum::routing::get(container_logs),
        )
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                "the test kubelet serves only containerLogs\n",
            )
        })
        .with_state(kubelet.clone());
    if let Err(err) = serve_tls(listener, tls, app).await {
        kubelet.say(format_args!("server: {err}"));
    }
}

/// Serves `app` over TLS on `listener` until the runtime ends.
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    tls: tokio_rustls::TlsAcceptor,
    app: axum::Router,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    let (tx, conns) = mpsc::channel(16);
    let accepting = tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(conn) => conn,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let (tls, tx) = (tls.clone(), tx.clone());
            tokio::spawn(async move {
                if let Ok(Ok(stream)) =
                    tokio::time::timeout(Duration::from_secs(10), tls.accept(tcp)).await
                {
                    let _ = tx.send((stream, peer)).await;
                }
            });
        }
    });
    let served = axum::serve(TlsListener { conns, addr }, app).await;
    accepting.abort();
    served
}

/// `GET /containerLogs/{namespace}/{pod}/{container}`, as the kubelet serves it.
pub(super) async fn container_logs(
    State(kubelet): State<Arc<Kubelet>>,
    UrlPath((namespace, pod, container)): UrlPath<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let flag = |k: &str| query.get(k).is_some_and(|v| v == "true" || v == "1");
    let number = |k: &str| query.get(k).and_then(|v| v.parse::<i64>().ok());
    let Some(log) = kubelet.log(&namespace, &pod, &container) else {
        let known = lock(&kubelet.pods)
            .values()
            .any(|s| s.namespace == namespace && s.name == pod);
        return if known {
            let msg = format!(
                "container {container:?} in pod {pod:?} is waiting to start: ContainerCreating\n"
            );
            (StatusCode::BAD_REQUEST, msg).into_response()
        } else {
            (
                StatusCode::NOT_FOUND,
                format!("pod {pod:?} does not exist\n"),
            )
                .into_response()
        };
    };
    if flag("previous") {
        let msg = format!("previous terminated container {container:?} in pod {pod:?} not found\n");
        return (StatusCode::BAD_REQUEST, msg).into_response();
    }
    let since = match (number("sinceSeconds"), query.get("sinceTime")) {
        (Some(secs), _) => SystemTime::now().checked_sub(Duration::from_secs(secs.max(0) as u64)),
        (None, Some(t)) => {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
                .ok()
                .map(SystemTime::from)
        }
        (None, None) => None,
    };
    let rx = log.state.subscribe();
    let next = {
        let state = rx.borrow();
        let mut first = since.map_or(0, |t| state.lines.partition_point(|l| l.at < t));
        if let Some(n) = number("tailLines").filter(|n| *n >= 0) {
            first = first.max(state.lines.len().saturating_sub(n as usize));
        }
        first
    };
    let reading = Reading {
        rx,
        next,
        left: number("limitBytes").filter(|n| *n > 0).map(|n| n as usize),
        timestamps: flag("timestamps"),
        follow: flag("follow"),
    };
    let body = futures_util::stream::unfold(reading, |mut r| async move {
        let chunk = r.next_chunk().await?;
        Some((Ok::<_, Infallible>(chunk), r))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// A log request's progress through a container's output.
pub(super) struct Reading {
    pub(super) rx: watch::Receiver<LogState>,
    /// The next line to send.
    pub(super) next: usize,
    /// limitBytes still allowed.
    pub(super) left: Option<usize>,
    pub(super) timestamps: bool,
    pub(super) follow: bool,
}

impl Reading {
    /// The next lines there are, waiting for them when following; None at the end.
    pub(super) async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            if self.left == Some(0) {
                return None;
            }
            let (mut chunk, done) = {
                let state = self.rx.borrow_and_update();
                let mut chunk = Vec::new();
                while self.next < state.lines.len() && chunk.len() < 64 * 1024 {
                    let line = &state.lines[self.next];
                    if self.timestamps {
                        chunk.extend_from_slice(rfc3339_nano(line.at).as_bytes());
                        chunk.push(b' ');
                    }
                    chunk.extend_from_slice(&line.bytes);
                    self.next += 1;
                }
                (chunk, state.done)
            };
            if !chunk.is_empty() {
                if let Some(left) = &mut self.left {
                    chunk.truncate(*left);
                    *left -= chunk.len();
                }
                return Some(Bytes::from(chunk));
            }
            if done || !self.follow {
                return None;
            }
            if self.rx.changed().await.is_err() {
                return None;
            }
        }
    }
}

// ----- times ------------------------------------------------------------------

/// `2006-01-02T15:04:05Z` (metav1.Time: seconds, UTC).
/// `t` as Kubernetes writes a time (seconds, UTC).
pub fn rfc3339(t: SystemTime) -> String {
    let t = time::OffsetDateTime::from(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// `2006-01-02T15:04:05.000000000Z`, the kubelet's log timestamps (RFC3339NanoFixed).
pub(super) fn rfc3339_nano(t: SystemTime) -> String {
    let nanos = time::OffsetDateTime::from(t).nanosecond();
    let secs = rfc3339(t);
    format!("{}.{nanos:09}Z", &secs[..secs.len() - 1])
}
