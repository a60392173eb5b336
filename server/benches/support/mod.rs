//! What the HTTP benches of PaddleBoard share: a client of the console on a
//! loopback port (an access key, and a session cookie for pages), batches
//! of points sent as writers send them, and percentiles.

use std::time::{Duration, Instant};

/// The `p` quantile of `sorted`.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A client of the console under test.
pub struct Client {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// An access key of the bench's account.
    pub key: String,
    /// `pc_session=…`, for pages (the API takes the key).
    pub cookie: String,
    /// One keep-alive connection.
    pub agent: ureq::Agent,
}

impl Client {
    /// A client of the console at `base`.
    pub fn new(base: String, key: String, cookie: String) -> Self {
        Self {
            base,
            key,
            cookie,
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into(),
        }
    }

    /// GET `path`, which must answer 200; its body.
    pub fn get(&self, path: &str) -> anyhow::Result<String> {
        let mut res = self
            .agent
            .get(&format!("{}{path}", self.base))
            .header("Authorization", &format!("Bearer {}", self.key))
            .header("Cookie", &self.cookie)
            .header("Accept", "text/html")
            .call()?;
        anyhow::ensure!(res.status() == 200, "{path} answered {}", res.status());
        Ok(res
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()?)
    }

    /// p50/p90 of `runs` GETs of `path`, after one to warm up, and its body.
    pub fn time(&self, path: &str, runs: usize) -> anyhow::Result<(Duration, Duration, String)> {
        let body = self.get(path)?;
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            self.get(path)?;
            times.push(t.elapsed());
        }
        times.sort();
        Ok((percentile(&times, 0.5), percentile(&times, 0.9), body))
    }

    /// Sends `points` points of `tag` (steps 0.., `value(step)`, a wall time
    /// 10 ms apart) to `job` in batches of 10,000, each durable when
    /// answered; returns the seconds taken. The bodies are written first,
    /// so the time is the server's, not this client's formatting numbers.
    pub fn ingest(
        &self,
        job: &str,
        tag: &str,
        points: i64,
        mut value: impl FnMut(i64) -> f64,
    ) -> anyhow::Result<f64> {
        let mut bodies = Vec::new();
        let mut step = 0;
        while step < points {
            let end = (step + 10_000).min(points);
            let mut body = String::with_capacity(10_000 * 70);
            body.push('[');
            for s in step..end {
                if s > step {
                    body.push(',');
                }
                body.push_str(&format!(
                    r#"{{"tag":"{tag}","step":{s},"value":{},"wall_time":{}}}"#,
                    value(s),
                    1.7e9 + s as f64 * 0.01
                ));
            }
            body.push(']');
            bodies.push(body);
            step = end;
        }
        let started = Instant::now();
        for body in &bodies {
            let res = self
                .agent
                .post(&format!("{}/api/v1/jobs/{job}/metrics", self.base))
                .header("Authorization", &format!("Bearer {}", self.key))
                .header("Content-Type", "application/json")
                .send(body)?;
            anyhow::ensure!(res.status() == 200, "batch answered {}", res.status());
        }
        Ok(started.elapsed().as_secs_f64())
    }
}

/// A console as `paddlecloud serve` builds it, with an account to bench as.
pub struct Setup {
    /// The console.
    pub console: server::console::Console,
    /// The account's owner.
    pub me: app::models::Me,
    /// An access key of hers.
    pub key: String,
    /// A session cookie of hers, `pc_session=…`.
    pub cookie: String,
}

/// The console on the database at `url` (its files in `dir`), keeping
/// `cache_points` metric points in memory, with a fresh account.
pub async fn console(
    dir: &std::path::Path,
    url: &str,
    cache_points: usize,
) -> anyhow::Result<Setup> {
    let site = server::cli::site_options(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../Leptos.toml")),
        None,
    )?;
    let config = server::console::Config {
        metrics_cache_points: cache_points,
        ..server::console::Config::embedded(site, dir.to_owned(), url.to_owned())
    };
    let console = server::console::Console::build(config).await?;
    let accounts = console.services.accounts.clone();
    let name = format!("bench{}", std::process::id());
    let me = accounts
        .create_account(app::models::SignUpForm {
            account: name.clone(),
            email: "bench@example.com".into(),
            password: "a long password".into(),
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let session = accounts
        .create_session(&me, "bench")
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let key = server::access_keys::SqlAccessKeys::new(console.pool.clone())
        .create_for(&name, "bench@example.com", "bench", Default::default())
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .key;
    Ok(Setup {
        console,
        me,
        key,
        cookie: format!("pc_session={}", session.token),
    })
}

impl Setup {
    /// Serves the console on a loopback port: a client of it.
    pub async fn serve(self) -> anyhow::Result<Client> {
        let app = self.console.router();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Client::new(format!("http://{addr}"), self.key, self.cookie))
    }
}

/// The database `url` names, in words.
pub fn engine(url: &str) -> &'static str {
    if url.starts_with("postgres") {
        "PostgreSQL"
    } else {
        "SQLite"
    }
}
