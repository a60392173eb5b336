//! The audit log: who changed membership, roles, quotas, keys and
//! passwords, and when. Written in the same transaction as the change where
//! there is one, so the log never claims what did not happen.

use app::error::AppError;
use app::models::AuditEvent;
use sqlx::{Any, AnyPool, Executor};

use super::internal;
use crate::time::now_ms;

/// What the log keeps of one event.
pub struct Entry<'a> {
    /// The account it happened in.
    pub account_id: i64,
    /// Who did it (an email, or "console" for what the console did itself).
    pub actor: &'a str,
    /// What happened, e.g. `password.changed` (see [`AuditEvent::action`]).
    pub action: &'a str,
    /// What it happened to, in words.
    pub detail: &'a str,
}

/// Appends `entry` to the log.
pub async fn record<'e, E>(db: E, entry: Entry<'_>) -> Result<(), AppError>
where
    E: Executor<'e, Database = Any>,
{
    sqlx::query(
        "INSERT INTO audit_log (account_id, at, actor, action, detail) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(entry.account_id)
    .bind(now_ms())
    .bind(entry.actor)
    .bind(entry.action)
    .bind(entry.detail)
    .execute(db)
    .await
    .map_err(internal("write the audit log"))?;
    Ok(())
}

/// The account's events, newest first, at most `limit`.
pub async fn list(
    pool: &AnyPool,
    account_id: i64,
    limit: i64,
) -> Result<Vec<AuditEvent>, AppError> {
    let rows: Vec<(i64, i64, String, String, String)> = sqlx::query_as(
        "SELECT id, at, actor, action, detail FROM audit_log WHERE account_id = $1 \
         ORDER BY at DESC, id DESC LIMIT $2",
    )
    .bind(account_id)
    .bind(limit)
    .fetch_all(pool)
    .await
    .map_err(internal("read the audit log"))?;
    Ok(rows
        .into_iter()
        .map(|(id, at, actor, action, detail)| AuditEvent {
            id,
            at,
            actor,
            action,
            detail,
        })
        .collect())
}
