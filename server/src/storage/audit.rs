//! The audit log: who changed membership, roles, quotas, keys and
//! passwords, and when. Written in the same transaction as the change where
//! there is one, so the log never claims what did not happen.

use app::error::AppError;
use app::models::{AuditCursor, AuditEvent, AuditFilter};
use sqlx::{Any, AnyPool, AssertSqlSafe, Executor};

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

/// One page of the account's events that match `filter`, newest first,
/// with the cursors of the pages beside it (`older`, `newer`): keyset
/// pages on `(at, id)`, so an event written while someone reads never
/// moves a row from one page to the next.
pub async fn page(
    pool: &AnyPool,
    account_id: i64,
    filter: &AuditFilter,
) -> Result<(Vec<AuditEvent>, Option<AuditCursor>, Option<AuditCursor>), AppError> {
    // Only the shape of the SQL varies; every value is bound.
    let mut sql =
        String::from("SELECT id, at, actor, action, detail FROM audit_log WHERE account_id = $1");
    let mut n = 1;
    let mut next = || {
        n += 1;
        format!("${n}")
    };
    let like = |text: &str| {
        text.replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    };
    let actor = filter.actor.as_deref().map(|a| format!("%{}%", like(a)));
    if actor.is_some() {
        sql += &format!(" AND LOWER(actor) LIKE {} ESCAPE '\\'", next());
    }
    let kind = filter.action.as_deref().map(|a| format!("{}.%", like(a)));
    if filter.action.is_some() {
        let (exact, prefix) = (next(), next());
        sql += &format!(" AND (action = {exact} OR action LIKE {prefix} ESCAPE '\\')");
    }
    if filter.from_ms.is_some() {
        sql += &format!(" AND at >= {}", next());
    }
    if filter.until_ms.is_some() {
        sql += &format!(" AND at < {}", next());
    }
    if filter.before.is_some() {
        let (at, again, id) = (next(), next(), next());
        sql += &format!(" AND (at < {at} OR (at = {again} AND id < {id}))");
    }
    if filter.after.is_some() {
        let (at, again, id) = (next(), next(), next());
        sql += &format!(" AND (at > {at} OR (at = {again} AND id > {id}))");
    }
    // With `after` alone the page is the one just after it: read upwards.
    let newer_first = !(filter.after.is_some() && filter.before.is_none());
    // One more than the page: whether there is a page beyond it.
    sql += &format!(
        " ORDER BY {} LIMIT {}",
        if newer_first {
            "at DESC, id DESC"
        } else {
            "at ASC, id ASC"
        },
        i64::from(filter.limit) + 1
    );
    let mut query = sqlx::query_as::<_, (i64, i64, String, String, String)>(AssertSqlSafe(sql))
        .bind(account_id);
    if let Some(actor) = actor {
        query = query.bind(actor);
    }
    if let (Some(action), Some(kind)) = (&filter.action, kind) {
        query = query.bind(action.clone()).bind(kind);
    }
    if let Some(from) = filter.from_ms {
        query = query.bind(from);
    }
    if let Some(until) = filter.until_ms {
        query = query.bind(until);
    }
    for c in [filter.before, filter.after].into_iter().flatten() {
        query = query.bind(c.at).bind(c.at).bind(c.id);
    }
    let rows = query
        .fetch_all(pool)
        .await
        .map_err(internal("read the audit log"))?;
    let beyond = rows.len() > filter.limit as usize;
    let mut events: Vec<AuditEvent> = rows
        .into_iter()
        .take(filter.limit as usize)
        .map(|(id, at, actor, action, detail)| AuditEvent {
            id,
            at,
            actor,
            action,
            detail,
        })
        .collect();
    if !newer_first {
        events.reverse();
    }
    let (first, last) = (
        events.first().map(AuditCursor::of),
        events.last().map(AuditCursor::of),
    );
    // Past a cursor there is at least the event it names, so the page on
    // the cursor's side exists whenever this one shows anything.
    let (older, newer) = if newer_first {
        (
            last.filter(|_| beyond),
            first.filter(|_| filter.before.is_some()),
        )
    } else {
        (last, first.filter(|_| beyond))
    };
    Ok((events, older, newer))
}

/// The actions the account's log holds, for the page's filter.
pub async fn actions(pool: &AnyPool, account_id: i64) -> Result<Vec<String>, AppError> {
    sqlx::query_scalar(
        "SELECT DISTINCT action FROM audit_log WHERE account_id = $1 ORDER BY action",
    )
    .bind(account_id)
    .fetch_all(pool)
    .await
    .map_err(internal("read the audit log's actions"))
}
