//! Real databases for tests: a SQLite file in a temp dir, and a fresh database
//! on the PostgreSQL server named by `PADDLECLOUD_TEST_DATABASE_URL`
//! (`scripts/with-postgres.sh` starts one; `make test` always does).

pub mod assets;
pub mod cli;
pub mod kubernetes;
pub mod metric_logs;
pub mod metrics_server;
pub mod node;
pub mod rest;
pub mod site;
pub mod smtp;
pub mod tls;

use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::AnyPool;

/// A migrated database and whatever keeps it alive.
pub struct TestDb {
    /// The pool the code under test uses.
    pub pool: AnyPool,
    /// Its URL, for a second process.
    pub url: String,
    dir: tempfile::TempDir,
}

impl TestDb {
    /// A throwaway data directory beside the database.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

/// A fresh SQLite database file.
pub async fn sqlite() -> TestDb {
    let dir = tempfile::tempdir().unwrap();
    let url = server::storage::db::default_url(dir.path());
    let pool = server::storage::db::connect(&url).await.unwrap();
    TestDb { pool, url, dir }
}

/// A fresh database on the test PostgreSQL server, or `None` (with a note)
/// when none is configured. Under `PADDLECLOUD_REQUIRE_POSTGRES=1` a missing
/// server fails the test instead, so CI cannot pass by skipping.
pub async fn postgres() -> Option<TestDb> {
    let Ok(admin_url) = std::env::var("PADDLECLOUD_TEST_DATABASE_URL") else {
        assert!(
            std::env::var("PADDLECLOUD_REQUIRE_POSTGRES").is_err(),
            "PADDLECLOUD_TEST_DATABASE_URL is not set but PostgreSQL tests are required"
        );
        eprintln!(
            "skipping: no PADDLECLOUD_TEST_DATABASE_URL (run through scripts/with-postgres.sh)"
        );
        return None;
    };
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "t_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        server::time::now_ms()
    );
    sqlx::any::install_default_drivers();
    let admin = AnyPool::connect(&admin_url).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    let (base, _) = admin_url.rsplit_once('/').unwrap();
    let url = format!("{base}/{name}");
    let pool = server::storage::db::connect(&url).await.unwrap();
    Some(TestDb {
        pool,
        url,
        dir: tempfile::tempdir().unwrap(),
    })
}

/// Runs one async test body on SQLite and on PostgreSQL, as two tests.
#[macro_export]
macro_rules! on_both_databases {
    ($name:ident, $body:path) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread")]
            async fn on_sqlite() {
                $body($crate::common::sqlite().await).await;
            }

            #[tokio::test(flavor = "multi_thread")]
            async fn on_postgres() {
                if let Some(db) = $crate::common::postgres().await {
                    $body(db).await;
                }
            }
        }
    };
}

/// The local executor alone on `db` (1 s grace and sampling), with the
/// ports it writes to (metrics, datasets, samples) on the same database:
/// for tests of the adapter itself; a whole console is `site::config` +
/// `Console::build`.
pub async fn local_cluster(db: &TestDb) -> server::local::LocalCluster {
    use std::sync::Arc;
    let pool = &db.pool;
    let objects =
        server::assets::objects::Objects::local(db.dir().join("objects"), 1 << 30).unwrap();
    server::local::LocalCluster::start(server::local::LocalParts {
        store: server::storage::jobs::JobStore::new(pool.clone()),
        data_dir: db.dir().to_owned(),
        grace: std::time::Duration::from_secs(1),
        console_url: None,
        metrics: Arc::new(server::paddleboard::SqlMetrics::new(
            pool.clone(),
            1_000_000,
        )),
        assets: Arc::new(server::assets::SqlAssets::new(
            pool.clone(),
            objects,
            db.dir().join("dataset-cache"),
        )),
        secrets: server::secrets::SqlSecrets::new(
            pool.clone(),
            std::sync::Arc::new(server::secrets::seal::Sealer::from_bytes(&[1; 32])),
        ),
        samples: Arc::new(server::storage::samples::ResourceStore::new(pool.clone())),
        sample_every: std::time::Duration::from_secs(1),
        inherited_env: server::cli::inherited_env().into(),
        machine: server::local::machine::Machine::new(
            server::local::capacity::detect(&site::roomy(), "/nonexistent/nvidia-smi"),
            server::local::limits::Limits::sampler(server::local::limits::CHECK_EVERY),
        ),
        venvs: server::local::venvs::Venvs::new(
            db.dir().join("environments"),
            "python3".to_owned(),
        ),
    })
    .await
    .unwrap()
}

/// The accounts port on `db` as the console builds it, its mail going to
/// the outbox in the test's data directory.
pub fn accounts(db: &TestDb) -> std::sync::Arc<server::accounts::SqlAccounts> {
    let mail = server::accounts::AccountMail {
        public_url: "http://console.test".to_owned(),
        ..server::accounts::AccountMail::outbox_of(db.dir()).unwrap()
    };
    server::accounts::SqlAccounts::new(db.pool.clone(), mail)
}

/// A new account `name` whose namespace is `namespace`, straight in the database.
pub async fn account(pool: &AnyPool, name: &str, namespace: &str) -> app::models::Account {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO accounts (name, namespace, created_at) VALUES ($1, $2, 0) RETURNING id",
    )
    .bind(name)
    .bind(namespace)
    .fetch_one(pool)
    .await
    .unwrap();
    app::models::Account {
        id,
        name: name.into(),
        namespace: namespace.into(),
        created_at: 0,
    }
}

/// A user (the owner) in `account`, for calls that record who acted.
pub async fn user_in(pool: &AnyPool, account: &app::models::Account) -> app::models::Me {
    user_with_role(pool, account, app::models::Role::Owner).await
}

/// A user of `account` with `role` (`<role>@<account>.example`).
pub async fn user_with_role(
    pool: &AnyPool,
    account: &app::models::Account,
    role: app::models::Role,
) -> app::models::Me {
    let email = format!("{}@{}.example", role.as_str(), account.name);
    let user_id: i64 = sqlx::query_scalar(
        "INSERT INTO users (account_id, email, password_hash, role, created_at) \
         VALUES ($1, $2, 'not a hash', $3, 0) RETURNING id",
    )
    .bind(account.id)
    .bind(&email)
    .bind(role.as_str())
    .fetch_one(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO memberships (account_id, user_id, role, created_at) VALUES ($1, $2, $3, 0)",
    )
    .bind(account.id)
    .bind(user_id)
    .bind(role.as_str())
    .execute(pool)
    .await
    .unwrap();
    app::models::Me {
        user_id,
        email,
        role,
        account: account.clone(),
        email_confirmed: true,
        must_change_password: false,
        site_admin: false,
    }
}

/// Whether a process runs (or sleeps); a zombie has exited and does not count.
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// A pod's whole log as text, read through the `Cluster` port.
pub async fn log_text(
    cluster: &dyn app::ports::Cluster,
    account: &app::models::Account,
    job: &str,
    pod: &str,
    request: app::models::LogRequest,
) -> String {
    use futures_util::StreamExt;
    let mut stream = cluster.log(account, job, pod, request).await.unwrap();
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.unwrap());
    }
    String::from_utf8(out).unwrap()
}

/// Waits (up to 10 s) for a pod to print `child PID`, the pid of a
/// background process its script started, and returns that pid.
pub async fn printed_child(
    cluster: &dyn app::ports::Cluster,
    account: &app::models::Account,
    job: &str,
    pod: &str,
) -> i32 {
    let start = std::time::Instant::now();
    loop {
        let request = app::models::LogRequest {
            tail: None,
            follow: false,
            timestamps: false,
        };
        let log = log_text(cluster, account, job, pod, request).await;
        if let Some(pid) = log.lines().find_map(|l| l.strip_prefix("child ")) {
            return pid.trim().parse().unwrap();
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{pod} printed no child"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
