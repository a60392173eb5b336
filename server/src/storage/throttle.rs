//! Rate limits that hold across console replicas: each request that sends
//! mail is noted in the database, and counted before the next one.

use app::error::AppError;
use sqlx::AnyPool;

use super::db::Engine;
use super::internal;
use crate::storage::db::WriteTx;
use crate::time::now_ms;

/// How many requests of `kind` by `subject` are allowed per window.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// What is limited, e.g. `reset-address`.
    pub kind: &'static str,
    /// Requests allowed in one window.
    pub max: i64,
    /// The window, in milliseconds.
    pub window_ms: i64,
}

impl Limit {
    /// Whether `subject` may make one more request now; if so, it is noted.
    /// Counting and noting are one statement in one transaction (on
    /// PostgreSQL under a lock for the subject), so requests at the same
    /// moment, to this console or another, cannot both take the last one.
    pub async fn take(&self, pool: &AnyPool, subject: &str) -> Result<bool, AppError> {
        let now = now_ms();
        let mut tx = pool.begin_write().await.map_err(internal("rate limit"))?;
        let options = pool.connect_options();
        if Engine::of_url(options.database_url.as_str()).ok() == Some(Engine::Postgres) {
            sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
                .bind(format!("{}/{subject}", self.kind))
                .execute(&mut *tx)
                .await
                .map_err(internal("rate limit lock"))?;
        }
        // Old notes are of no use to any limit.
        sqlx::query("DELETE FROM mail_requests WHERE kind = $1 AND at < $2")
            .bind(self.kind)
            .bind(now - self.window_ms)
            .execute(&mut *tx)
            .await
            .map_err(internal("prune rate limit notes"))?;
        let noted = sqlx::query(
            "INSERT INTO mail_requests (kind, subject, at) \
             SELECT CAST($1 AS TEXT), CAST($2 AS TEXT), CAST($3 AS BIGINT) \
             WHERE (SELECT COUNT(*) FROM mail_requests WHERE kind = $1 AND subject = $2) < $4",
        )
        .bind(self.kind)
        .bind(subject)
        .bind(now)
        .bind(self.max)
        .execute(&mut *tx)
        .await
        .map_err(internal("note a rate-limited request"))?;
        tx.commit().await.map_err(internal("rate limit"))?;
        Ok(noted.rows_affected() == 1)
    }
}
