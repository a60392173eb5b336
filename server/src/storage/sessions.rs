//! Sign-in sessions: each a user in one of their accounts, stored as the
//! hash of a random token, with a sliding expiry the service keeps.

use app::error::AppError;
use app::models::{Me, Membership};
use sqlx::AnyPool;

use super::internal;
use super::members::parse_memberships;
use super::tokens::{random_token, token_hash};
use super::users::{me_from, user_columns, UserRow};
use crate::time::now_ms;

/// A live session as a request's token finds it.
#[derive(Debug, Clone)]
pub struct Session {
    /// The session's id.
    pub id: i64,
    /// When it was last refreshed.
    pub last_seen_at: i64,
    /// Its user, as a member of its account.
    pub me: Me,
    /// Every account of the user, with their role there, by name.
    pub memberships: Vec<Membership>,
}

/// A session as its user's list shows it.
#[derive(Debug, Clone)]
pub struct StoredSession {
    /// The session's id.
    pub id: i64,
    /// When it began.
    pub created_at: i64,
    /// When it was last refreshed.
    pub last_seen_at: i64,
    /// When it ends unless used.
    pub expires_at: i64,
    /// The browser it began in.
    pub user_agent: String,
}

/// Begins a session of `user_id` in `account_id` that lasts `ttl_ms`
/// unless refreshed; the token is returned once, for the cookie.
pub async fn create(
    pool: &AnyPool,
    user_id: i64,
    account_id: i64,
    user_agent: &str,
    ttl_ms: i64,
) -> Result<String, AppError> {
    let token = random_token();
    let now = now_ms();
    sqlx::query(
        "INSERT INTO sessions (token_hash, user_id, account_id, user_agent, created_at, \
         last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(token_hash(&token))
    .bind(user_id)
    .bind(account_id)
    .bind(user_agent)
    .bind(now)
    .bind(now)
    .bind(now + ttl_ms)
    .execute(pool)
    .await
    .map_err(internal("insert session"))?;
    Ok(token)
}

/// The session of `token` unexpired at `now`, if its account still has
/// its user as a member: a removed member's sessions stop working there at
/// once.
pub async fn find(pool: &AnyPool, token: &str, now: i64) -> Result<Option<Session>, AppError> {
    /// The session, then its user.
    #[derive(sqlx::FromRow)]
    struct SessionRow {
        session_id: i64,
        last_seen_at: i64,
        /// Every account of the user, `name:role` joined by commas
        /// (neither can hold either): what the account switcher lists.
        accounts: Option<String>,
        #[sqlx(flatten)]
        user: UserRow,
    }
    let row: Option<SessionRow> = sqlx::query_as(concat!(
        "SELECT s.id AS session_id, s.last_seen_at AS last_seen_at, \
         (SELECT string_agg(oa.name || ':' || om.role, ',') FROM memberships om \
          JOIN accounts oa ON oa.id = om.account_id WHERE om.user_id = u.id) AS accounts, ",
        user_columns!(),
        " FROM sessions s JOIN users u ON u.id = s.user_id \
         JOIN memberships m ON m.user_id = u.id AND m.account_id = s.account_id \
         JOIN accounts a ON a.id = m.account_id \
         WHERE s.token_hash = $1 AND s.expires_at > $2"
    ))
    .bind(token_hash(token))
    .bind(now)
    .fetch_optional(pool)
    .await
    .map_err(internal("look up session"))?;
    Ok(row.map(|row| Session {
        id: row.session_id,
        last_seen_at: row.last_seen_at,
        memberships: parse_memberships(row.accounts.as_deref()),
        me: me_from(row.user),
    }))
}

/// Marks session `id` seen at `now`, to last until `expires_at`.
pub async fn touch(pool: &AnyPool, id: i64, now: i64, expires_at: i64) -> Result<(), AppError> {
    sqlx::query("UPDATE sessions SET last_seen_at = $1, expires_at = $2 WHERE id = $3")
        .bind(now)
        .bind(expires_at)
        .bind(id)
        .execute(pool)
        .await
        .map_err(internal("touch session"))?;
    Ok(())
}

/// Ends the session of `token`, if there is one.
pub async fn end(pool: &AnyPool, token: &str) -> Result<(), AppError> {
    sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
        .bind(token_hash(token))
        .execute(pool)
        .await
        .map_err(internal("delete session"))?;
    Ok(())
}

/// The user's sessions unexpired at `now`, newest first.
pub async fn of_user(
    pool: &AnyPool,
    user_id: i64,
    now: i64,
) -> Result<Vec<StoredSession>, AppError> {
    let rows: Vec<(i64, i64, i64, i64, String)> = sqlx::query_as(
        "SELECT id, created_at, last_seen_at, expires_at, user_agent FROM sessions \
         WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at DESC, id DESC",
    )
    .bind(user_id)
    .bind(now)
    .fetch_all(pool)
    .await
    .map_err(internal("list sessions"))?;
    Ok(rows
        .into_iter()
        .map(
            |(id, created_at, last_seen_at, expires_at, user_agent)| StoredSession {
                id,
                created_at,
                last_seen_at,
                expires_at,
                user_agent,
            },
        )
        .collect())
}

/// Ends session `id` if it is the user's; whether it was.
pub async fn revoke(pool: &AnyPool, id: i64, user_id: i64) -> Result<bool, AppError> {
    let done = sqlx::query("DELETE FROM sessions WHERE id = $1 AND user_id = $2")
        .bind(id)
        .bind(user_id)
        .execute(pool)
        .await
        .map_err(internal("revoke session"))?;
    Ok(done.rows_affected() > 0)
}

/// Moves the user's session `id` to `account_id` (the service checked
/// they are a member there).
pub async fn switch_account(
    pool: &AnyPool,
    id: i64,
    user_id: i64,
    account_id: i64,
) -> Result<(), AppError> {
    sqlx::query("UPDATE sessions SET account_id = $1 WHERE id = $2 AND user_id = $3")
        .bind(account_id)
        .bind(id)
        .bind(user_id)
        .execute(pool)
        .await
        .map_err(internal("switch account"))?;
    Ok(())
}
