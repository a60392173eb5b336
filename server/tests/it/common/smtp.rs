//! A small SMTP server the tests start: it speaks enough of RFC 5321 for
//! lettre (EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT), keeps every message
//! it receives, and decodes what a test reads (quoted-printable bodies).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// One message as it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    /// `RCPT TO` addresses.
    pub to: Vec<String>,
    /// The message (headers and body) as sent, dot-unstuffed.
    pub raw: String,
}

impl Received {
    /// The message with quoted-printable soft breaks and escapes undone:
    /// what a mail reader shows.
    pub fn readable(&self) -> String {
        let bytes =
            quoted_printable::decode(self.raw.as_bytes(), quoted_printable::ParseMode::Robust)
                .unwrap_or_else(|_| self.raw.as_bytes().to_vec());
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The header `name`'s value.
    pub fn header(&self, name: &str) -> Option<String> {
        let prefix = format!("{}:", name.to_ascii_lowercase());
        self.raw
            .lines()
            .take_while(|l| !l.is_empty())
            .find(|l| l.to_ascii_lowercase().starts_with(&prefix))
            .map(|l| l[prefix.len()..].trim().to_owned())
    }

    /// The first link to `path` (`/reset`, `/confirm`) with its token.
    pub fn link(&self, path: &str) -> Option<String> {
        let text = self.readable();
        let at = text.find(&format!("{path}?token="))?;
        let start = text[..at].rfind("http")?;
        let end = at + path.len() + "?token=".len() + 64;
        text.get(start..end).map(str::to_owned)
    }

    /// The token of the first link to `path`.
    pub fn token(&self, path: &str) -> Option<String> {
        self.link(path)
            .and_then(|l| l.split_once("?token=").map(|(_, t)| t.to_owned()))
    }
}

/// The server: its URL for `--smtp-url`, and what it received.
#[derive(Clone)]
pub struct SmtpServer {
    /// `smtp://127.0.0.1:PORT` (plain: a local relay).
    pub url: String,
    inbox: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
}

impl SmtpServer {
    /// Starts listening on a free loopback port.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("smtp://{}", listener.local_addr().unwrap());
        let server = Self {
            url,
            inbox: Arc::default(),
            arrived: Arc::default(),
        };
        let this = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let this = this.clone();
                tokio::spawn(async move { this.session(stream).await });
            }
        });
        server
    }

    async fn session(&self, stream: tokio::net::TcpStream) {
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        let _ = write.write_all(b"220 test-smtp ESMTP\r\n").await;
        let mut to = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            let upper = line.to_ascii_uppercase();
            let reply: &[u8] = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
                b"250-test-smtp\r\n250 8BITMIME\r\n"
            } else if upper.starts_with("MAIL FROM") {
                to.clear();
                b"250 OK\r\n"
            } else if upper.starts_with("RCPT TO:") {
                let addr = line[8..].trim().trim_start_matches('<');
                to.push(addr.split('>').next().unwrap_or_default().to_owned());
                b"250 OK\r\n"
            } else if upper == "DATA" {
                let _ = write.write_all(b"354 go ahead\r\n").await;
                let mut raw = String::new();
                while let Ok(Some(l)) = lines.next_line().await {
                    if l == "." {
                        break;
                    }
                    raw.push_str(
                        l.strip_prefix('.')
                            .filter(|_| l.starts_with(".."))
                            .unwrap_or(&l),
                    );
                    raw.push_str("\r\n");
                }
                self.inbox.lock().unwrap().push(Received {
                    to: std::mem::take(&mut to),
                    raw,
                });
                self.arrived.notify_waiters();
                b"250 queued\r\n"
            } else if upper == "QUIT" {
                let _ = write.write_all(b"221 bye\r\n").await;
                return;
            } else {
                b"250 OK\r\n"
            };
            if write.write_all(reply).await.is_err() {
                return;
            }
        }
    }

    /// Every message received so far to `address`.
    pub fn mail_to(&self, address: &str) -> Vec<Received> {
        self.inbox
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m.to.iter().any(|t| t == address))
            .cloned()
            .collect()
    }

    /// Waits (up to 10 s) until `address` has received `count` messages;
    /// returns them, oldest first.
    pub async fn wait_for(&self, address: &str, count: usize) -> Vec<Received> {
        self.wait_for_link(address, "", count).await
    }

    /// Like [`SmtpServer::wait_for`], counting only messages with a link
    /// to `path` (all messages if it is empty).
    pub async fn wait_for_link(&self, address: &str, path: &str, count: usize) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let arrived = self.arrived.notified();
            let mut got = self.mail_to(address);
            got.retain(|m| path.is_empty() || m.link(path).is_some());
            if got.len() >= count {
                return got;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!("{address} received {} of {count} messages", got.len());
            }
        }
    }
}
