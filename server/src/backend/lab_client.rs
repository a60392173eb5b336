//! How the console reaches notebook servers: one HTTP client for the proxy,
//! the readiness probe and the idle clock, made by the backend. Directly
//! over TCP (a local process, a pod whose IP the console can reach), or
//! through a [`Tunnel`] (the Kubernetes API server's port-forward, for a
//! console outside the cluster). HTTP and its upgrades (kernels' and
//! terminals' WebSockets) go over either alike.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use axum::body::Body;
use futures_util::future::BoxFuture;
use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};

/// A byte stream to a notebook server.
pub trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// Opens a stream to the server an address names, without a route to it.
#[async_trait]
pub trait Tunnel: Send + Sync {
    /// A stream to `host:port` of an upstream address the backend gave.
    async fn open(&self, host: &str, port: u16) -> io::Result<Box<dyn Stream>>;
}

/// The client every notebook request is sent with.
pub type LabClient = Client<LabConnector, Body>;

/// A client that connects directly over TCP.
pub fn direct() -> LabClient {
    client(None)
}

/// A client whose connections go through `tunnel`.
pub fn through(tunnel: Arc<dyn Tunnel>) -> LabClient {
    client(Some(tunnel))
}

fn client(tunnel: Option<Arc<dyn Tunnel>>) -> LabClient {
    // Kernel messages are small: send them at once, not after an ACK.
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    Client::builder(TokioExecutor::new()).build(LabConnector { tcp, tunnel })
}

/// Connects as its client was made to.
#[derive(Clone)]
pub struct LabConnector {
    tcp: HttpConnector,
    tunnel: Option<Arc<dyn Tunnel>>,
}

impl tower::Service<Uri> for LabConnector {
    type Response = LabIo;
    type Error = io::Error;
    type Future = BoxFuture<'static, io::Result<LabIo>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.tunnel {
            Some(_) => Poll::Ready(Ok(())),
            None => self.tcp.poll_ready(cx).map_err(io::Error::other),
        }
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        match self.tunnel.clone() {
            Some(tunnel) => Box::pin(async move {
                let host = uri.host().unwrap_or_default().to_owned();
                let port = uri.port_u16().unwrap_or(80);
                Ok(LabIo(TokioIo::new(tunnel.open(&host, port).await?)))
            }),
            None => {
                let connecting = self.tcp.call(uri);
                Box::pin(async move {
                    let tcp = connecting.await.map_err(io::Error::other)?.into_inner();
                    Ok(LabIo(TokioIo::new(Box::new(tcp) as Box<dyn Stream>)))
                })
            }
        }
    }
}

/// A connection to a notebook server, as hyper drives it.
pub struct LabIo(TokioIo<Box<dyn Stream>>);

impl Connection for LabIo {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for LabIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for LabIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// `GET url` as the holder of the server's `token`, answered within
/// `limit`: the status (or why there is none) and the body.
pub async fn get(
    client: &LabClient,
    url: &str,
    token: &str,
    limit: std::time::Duration,
) -> Result<(u16, Vec<u8>), String> {
    send(client, http::Method::GET, url, token, None, limit).await
}

/// `method url` as the holder of the server's `token`, with a JSON `body`
/// if one is given, answered within `limit`: the status (or why there is
/// none) and the body.
pub async fn send(
    client: &LabClient,
    method: http::Method,
    url: &str,
    token: &str,
    body: Option<Vec<u8>>,
    limit: std::time::Duration,
) -> Result<(u16, Vec<u8>), String> {
    use http_body_util::BodyExt;
    let request = http::Request::builder()
        .method(method)
        .uri(url)
        .header(http::header::AUTHORIZATION, format!("token {token}"));
    let request = match body {
        Some(body) => request
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Body::from(body)),
        None => request.body(Body::empty()),
    }
    .map_err(|e| e.to_string())?;
    let answered = async {
        let answer = client.request(request).await.map_err(|e| e.to_string())?;
        let status = answer.status().as_u16();
        let body = answer
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?;
        Ok((status, body.to_bytes().to_vec()))
    };
    tokio::time::timeout(limit, answered)
        .await
        .map_err(|_| format!("no answer in {} s", limit.as_secs()))?
}
