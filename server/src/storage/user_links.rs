//! The single-use tokens behind mailed links (`user_tokens`): stored as
//! hashes, each for one purpose, with an expiry, used at most once. What a
//! link changes when it is followed is in [`super::accounts`].

use app::error::AppError;
use app::models::{CONFIRM_LINK_DAYS, RESET_LINK_MINUTES};
use sqlx::{Any, AnyPool, Executor};

use super::internal;
use super::tokens::{random_token, token_hash};
use crate::time::now_ms;

/// What a link does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Confirms the address it was mailed to.
    Confirm,
    /// Sets a new password.
    Reset,
}

impl Purpose {
    fn as_str(self) -> &'static str {
        match self {
            Purpose::Confirm => "confirm",
            Purpose::Reset => "reset",
        }
    }

    fn lifetime_ms(self) -> i64 {
        match self {
            Purpose::Confirm => CONFIRM_LINK_DAYS * 86_400_000,
            Purpose::Reset => RESET_LINK_MINUTES * 60_000,
        }
    }
}

/// A new token for `user_id`; the secret is returned once, for the link.
pub async fn issue(pool: &AnyPool, user_id: i64, purpose: Purpose) -> Result<String, AppError> {
    let token = random_token();
    let now = now_ms();
    sqlx::query(
        "INSERT INTO user_tokens (token_hash, user_id, purpose, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_hash(&token))
    .bind(user_id)
    .bind(purpose.as_str())
    .bind(now)
    .bind(now + purpose.lifetime_ms())
    .execute(pool)
    .await
    .map_err(internal("store a link token"))?;
    Ok(token)
}

/// Uses `token` up: the user it was for, if it is one of `purpose`, unused
/// and unexpired. One statement, so two uses at once cannot both win.
pub(super) async fn take<'e, E>(
    db: E,
    token: &str,
    purpose: Purpose,
) -> Result<Option<i64>, AppError>
where
    E: Executor<'e, Database = Any>,
{
    if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let now = now_ms();
    let user: Option<(i64,)> = sqlx::query_as(
        "UPDATE user_tokens SET used_at = $1 WHERE token_hash = $2 AND purpose = $3 \
         AND used_at IS NULL AND expires_at > $1 RETURNING user_id",
    )
    .bind(now)
    .bind(token_hash(token))
    .bind(purpose.as_str())
    .fetch_optional(db)
    .await
    .map_err(internal("use a link token"))?;
    Ok(user.map(|(u,)| u))
}

/// Ends every unused link of `purpose` the user has (a password change
/// ends all reset links).
pub(super) async fn forget<'e, E>(db: E, user_id: i64, purpose: Purpose) -> Result<(), AppError>
where
    E: Executor<'e, Database = Any>,
{
    sqlx::query("DELETE FROM user_tokens WHERE user_id = $1 AND purpose = $2 AND used_at IS NULL")
        .bind(user_id)
        .bind(purpose.as_str())
        .execute(db)
        .await
        .map_err(internal("end link tokens"))?;
    Ok(())
}
