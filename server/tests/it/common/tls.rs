//! HTTPS for servers the API server calls (the metrics API's stand-in):
//! a self-signed certificate, and axum over it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

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
struct TlsListener {
    conns: mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        SocketAddr,
    )>,
    addr: SocketAddr,
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
