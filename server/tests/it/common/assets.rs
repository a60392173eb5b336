//! Datasets and models under test: the whole app on any database and file
//! storage, and a real S3-compatible server (moto's, from the Python test
//! venv) started and stopped by the test that needs it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use server::assets::objects::Objects;
use server::console::{Config, Storage};

use super::site::{config, site_from, Site};
use super::TestDb;

/// Set to make a missing Python venv (here: moto's server) a failure, not a skip.
pub const REQUIRE_ENV: &str = "PADDLECLOUD_REQUIRE_PYTHON_WRITERS";

/// The whole app on `db`, its dataset and model files in `storage`.
pub async fn site_on(db: TestDb, storage: Storage) -> Site {
    let config = Config {
        storage,
        ..config(&db)
    };
    site_from(db, config).await
}

/// The whole app on `db` with its files in a local folder of the test's
/// data directory (`objects/`), accepting files up to `max_file_bytes`.
pub async fn local_site(db: TestDb, max_file_bytes: u64) -> Site {
    let config = Config {
        max_upload_bytes: max_file_bytes,
        ..config(&db)
    };
    site_from(db, config).await
}

/// moto's S3 server, running until dropped.
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The `moto_server` of the Python test venv, if it is there.
pub fn moto_server() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let p = std::path::Path::new(&home).join(".cache/paddlecloud/pyvenv/bin/moto_server");
    p.exists().then_some(p)
}

/// Starts moto's S3 server on a free port and waits until it answers; `None`
/// (said on stderr) when the venv lacks it, unless [`REQUIRE_ENV`] is set,
/// which makes that a failure.
pub async fn moto() -> Option<Moto> {
    let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    let Some(bin) = moto_server() else {
        assert!(
            !required,
            "{REQUIRE_ENV} is set but ~/.cache/paddlecloud/pyvenv/bin/moto_server is missing: \
             run scripts/setup.sh test (moto[server] is in scripts/python-requirements.txt)"
        );
        // Straight to stderr, so that a skip does not pass silently.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: no moto_server in ~/.cache/paddlecloud/pyvenv; the S3 storage tests did not \
             run (set {REQUIRE_ENV}=1 to fail instead)"
        );
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(bin)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("moto_server starts");
    let moto = Moto {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
    };
    let started = Instant::now();
    let client = http_client();
    loop {
        if client
            .get(format!("{}/", moto.endpoint))
            .send()
            .await
            .is_ok()
        {
            return Some(moto);
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "moto_server did not answer on {} within 30 s",
            moto.endpoint
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A plain HTTP client (reqwest needs a crypto provider chosen, even for http).
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

impl Moto {
    /// Stops the server (the storage "goes away").
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Creates `bucket` (moto accepts unsigned requests).
    pub async fn create_bucket(&self, bucket: &str) {
        let res = http_client()
            .put(format!("{}/{bucket}", self.endpoint))
            .send()
            .await
            .unwrap();
        assert!(
            res.status().is_success(),
            "creating bucket {bucket}: {}",
            res.status()
        );
    }

    /// The storage of `s3://bucket/prefix` on this server, credentials and
    /// endpoint passed explicitly (not through the process environment).
    pub fn objects(&self, bucket: &str, prefix: &str, max_file_bytes: u64) -> Objects {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let builder = object_store::aws::AmazonS3Builder::new()
            .with_access_key_id("testing")
            .with_secret_access_key("testing")
            .with_region("us-east-1")
            // A stopped server fails fast instead of after minutes of retries.
            .with_retry(object_store::RetryConfig {
                backoff: object_store::BackoffConfig {
                    init_backoff: Duration::from_millis(20),
                    max_backoff: Duration::from_millis(100),
                    base: 2.0,
                },
                max_retries: 2,
                retry_timeout: Duration::from_secs(5),
            });
        Objects::s3(
            builder,
            bucket,
            prefix,
            Some(self.endpoint.clone()),
            max_file_bytes,
        )
        .unwrap()
    }

    /// The `AWS_*` variables a console on this server is started with.
    pub fn vars(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT", self.endpoint.as_str()),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
            ("HOME", "/nowhere"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// The keys under `prefix` in `bucket`, straight from the server.
    pub async fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let body = http_client()
            .get(format!(
                "{}/{bucket}?list-type=2&prefix={prefix}",
                self.endpoint
            ))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        body.split("<Key>")
            .skip(1)
            .filter_map(|s| s.split_once("</Key>").map(|(k, _)| k.to_owned()))
            .collect()
    }

    /// Multipart uploads begun in `bucket` and neither completed nor aborted.
    pub async fn open_uploads(&self, bucket: &str) -> usize {
        let body = http_client()
            .get(format!("{}/{bucket}?uploads", self.endpoint))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        body.matches("<Upload>").count()
    }
}
