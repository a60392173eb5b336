//! The console's own database: SQLite by default, PostgreSQL for a console
//! that scales out. Queries are written once against `sqlx::Any` in the SQL
//! both understand; only the migrations differ.

use std::path::Path;

use anyhow::Context;
use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;
use sqlx::AnyPool;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/postgres");

/// Which SQL engine is behind the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// An embedded SQLite file (the default).
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

impl Engine {
    /// Tells the engine from a connection URL.
    pub fn of_url(url: &str) -> anyhow::Result<Self> {
        if url.starts_with("sqlite:") {
            Ok(Engine::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Engine::Postgres)
        } else {
            anyhow::bail!("unsupported database URL {url:?}: use sqlite://PATH or postgres://…")
        }
    }
}

/// How long a query waits for a free connection (or for the database to
/// take one) before it fails as unavailable.
pub const ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The default database: a SQLite file in the data directory.
pub fn default_url(data_dir: &Path) -> String {
    format!(
        "sqlite://{}?mode=rwc",
        data_dir.join("paddlecloud.db").display()
    )
}

/// The console's database pool. Everything outside `storage` holds it by
/// this name and hands it to a store: only stores speak SQL.
pub type Pool = AnyPool;

/// Connects, prepares the engine, and applies every pending migration.
pub async fn connect(url: &str) -> anyhow::Result<AnyPool> {
    sqlx::any::install_default_drivers();
    let engine = Engine::of_url(url)?;
    if engine == Engine::Sqlite {
        if !super::sqlite_memory::configure() {
            tracing::debug!("SQLite was initialised before its allocator could be set");
        }
        if let Some(dir) = sqlite_path(url).and_then(|p| p.parent().map(Path::to_path_buf)) {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating data directory {}", dir.display()))?;
            }
        }
    }
    let pool = AnyPoolOptions::new()
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if engine == Engine::Sqlite {
                    // Pages are read from the OS's cache in place instead of
                    // copied by a read() each: each of the 16 connections
                    // has its own page cache, and every write empties them all.
                    sqlx::query("PRAGMA mmap_size = 268435456")
                        .execute(&mut *conn)
                        .await?;
                }
                Ok(())
            })
        })
        .max_connections(16)
        // An idle SQLite connection holds its own parsed schema, page cache
        // and worker thread (with its allocator's pages): a few hundred KB
        // each. Those a burst opened close after 30 s unused; one the
        // background loops use every few seconds stays.
        .idle_timeout(match engine {
            Engine::Sqlite => std::time::Duration::from_secs(30),
            Engine::Postgres => std::time::Duration::from_secs(600),
        })
        // A pooled PostgreSQL connection may have died with its server, so
        // it is pinged before use; a SQLite connection is a file handle
        // behind a worker thread, and pinging it was one more trip to that
        // thread for every query.
        .test_before_acquire(engine == Engine::Postgres)
        // A request waits this long for a connection, then gets a 503:
        // while PostgreSQL is away, callers hear so in seconds (and the
        // pool reconnects by itself once it is back).
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect(url)
        .await
        .with_context(|| format!("connecting to {}", redact(url)))?;
    let migrator = match engine {
        Engine::Sqlite => {
            // WAL lets page renders read while a job writes; it is a property
            // of the file, so setting it once per start is enough.
            sqlx::query("PRAGMA journal_mode=WAL")
                .execute(&pool)
                .await
                .context("enabling SQLite WAL")?;
            &SQLITE_MIGRATIONS
        }
        Engine::Postgres => &POSTGRES_MIGRATIONS,
    };
    migrator.run(&pool).await.context("applying migrations")?;
    Ok(pool)
}

fn sqlite_path(url: &str) -> Option<&Path> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next()?;
    (path != ":memory:" && !path.is_empty()).then(|| Path::new(path))
}

/// Beginning a transaction that writes.
pub trait WriteTx {
    /// A transaction that will write. On SQLite it takes the write lock at
    /// once (`BEGIN IMMEDIATE`), waiting for it as long as the busy timeout
    /// allows: a deferred transaction that reads first and then writes after
    /// another connection has committed cannot move its snapshot forward
    /// and fails at once with `SQLITE_BUSY` (the busy timeout does not apply
    /// to that), which surfaced as a rare 500 while a background loop
    /// renewed its lease. On PostgreSQL, a plain `BEGIN`.
    fn begin_write(
        &self,
    ) -> impl std::future::Future<Output = Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error>>
           + Send;
}

impl WriteTx for AnyPool {
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        if self
            .connect_options()
            .database_url
            .scheme()
            .starts_with("sqlite")
        {
            self.begin_with("BEGIN IMMEDIATE").await
        } else {
            self.begin().await
        }
    }
}

/// The URL without its password, for logs and errors.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let creds = &url[scheme_end + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads in a transaction, lets another connection commit a write, then
    /// writes: what a read-then-write transaction meets when a background
    /// loop writes beside it. Returns the second write's outcome and the
    /// rows there in the end.
    async fn read_then_write_beside_a_commit(
        pool: &AnyPool,
        begin: impl std::future::Future<
            Output = Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error>,
        >,
    ) -> (Result<(), sqlx::Error>, i64) {
        let mut tx = begin.await.unwrap();
        let _: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        let beside = {
            let pool = pool.clone();
            tokio::spawn(
                async move { sqlx::query("INSERT INTO t VALUES (1)").execute(&pool).await },
            )
        };
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let second = sqlx::query("INSERT INTO t VALUES (2)")
            .execute(&mut *tx)
            .await
            .map(|_| ());
        match &second {
            Ok(()) => tx.commit().await.unwrap(),
            Err(_) => tx.rollback().await.unwrap(),
        }
        beside.await.unwrap().unwrap();
        let rows = sqlx::query_scalar("SELECT COUNT(*) FROM t")
            .fetch_one(pool)
            .await
            .unwrap();
        (second, rows)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_transaction_that_reads_first_survives_a_commit_beside_it_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let pool = connect(&default_url(dir.path())).await.unwrap();
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&pool)
            .await
            .unwrap();
        // The defect: a deferred transaction cannot write after the commit.
        let (second, rows) = read_then_write_beside_a_commit(&pool, pool.begin()).await;
        assert!(
            second.is_err(),
            "a deferred transaction wrote after a commit beside it"
        );
        assert_eq!(rows, 1);
        // A write transaction holds the lock: the other write waits its turn.
        let (second, rows) = read_then_write_beside_a_commit(&pool, pool.begin_write()).await;
        assert!(second.is_ok(), "{second:?}");
        assert_eq!(rows, 3);
    }

    #[test]
    fn urls_name_their_engine_or_are_refused() {
        assert_eq!(Engine::of_url("sqlite://x.db").unwrap(), Engine::Sqlite);
        assert_eq!(
            Engine::of_url("postgres://u@h/db").unwrap(),
            Engine::Postgres
        );
        assert!(Engine::of_url("mysql://h/db").is_err());
    }

    #[test]
    fn passwords_never_reach_the_log() {
        assert_eq!(
            redact("postgres://ann:s3cret@db:5432/pc"),
            "postgres://ann:***@db:5432/pc"
        );
        assert_eq!(redact("sqlite://data/pc.db"), "sqlite://data/pc.db");
    }

    #[test]
    fn the_sqlite_file_path_is_read_from_the_url() {
        assert_eq!(
            sqlite_path("sqlite://data/pc.db?mode=rwc"),
            Some(Path::new("data/pc.db"))
        );
        assert_eq!(sqlite_path("sqlite::memory:"), None);
    }
}
