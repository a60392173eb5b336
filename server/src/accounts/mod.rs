//! [`app::ports::Accounts`] on the SQL database: argon2id password hashes,
//! sessions stored as SHA-256 hashes of random tokens.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use app::error::AppError;
use app::models::{namespace_for, Account, Me, Member, Role, SessionInfo, SignInForm, SignUpForm};
use app::ports::{Accounts, Credential, NewSession, Principal};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use async_trait::async_trait;
use sqlx::AnyPool;

use crate::storage::internal;
use crate::storage::tokens::{random_token, token_hash};
use crate::storage::users::{me_from, user_columns, UserRow};
use crate::time::now_ms;

/// How long a session lives without being used.
pub const SESSION_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// A session's `last_seen_at` (and expiry) is refreshed at most this often,
/// so that reading pages does not write to the database on every request.
const TOUCH_EVERY_MS: i64 = 5 * 60 * 1000;

/// Accounts, users and sessions in the console's database.
pub struct SqlAccounts {
    pool: AnyPool,
}

impl SqlAccounts {
    /// Wraps a migrated pool.
    pub fn new(pool: AnyPool) -> Arc<Self> {
        Arc::new(Self { pool })
    }
}

fn is_unique_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_unique_violation())
}

async fn hash_password(password: String) -> Result<String, AppError> {
    tokio::task::spawn_blocking(move || {
        let mut salt = [0u8; 16];
        getrandom::fill(&mut salt).expect("the operating system's random source failed");
        let salt = SaltString::encode_b64(&salt)?;
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
    })
    .await
    .map_err(|err| {
        tracing::error!(error = %err, "password hashing task failed");
        AppError::Internal
    })?
    .map_err(|err| {
        tracing::error!(error = %err, "hashing a password");
        AppError::Internal
    })
}

/// Verifies off the async threads; a malformed stored hash counts as a mismatch.
async fn verify_password(password: String, stored: String) -> bool {
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&stored)
            .map(|hash| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &hash)
                    .is_ok()
            })
            .unwrap_or(false)
    })
    .await
    .unwrap_or(false)
}

/// A real hash of a random password: checked against when the user does not
/// exist, so a wrong account name takes as long as a wrong password.
async fn decoy_hash() -> String {
    static DECOY: OnceLock<String> = OnceLock::new();
    if let Some(hash) = DECOY.get() {
        return hash.clone();
    }
    let hash = hash_password(random_token()).await.unwrap_or_default();
    DECOY.get_or_init(|| hash).clone()
}

#[async_trait]
impl Accounts for SqlAccounts {
    async fn create_account(&self, form: SignUpForm) -> Result<Me, AppError> {
        let form = form.validated()?;
        let password_hash = hash_password(form.password).await?;
        let now = now_ms();
        let namespace = namespace_for(&form.account);
        let mut tx = self.pool.begin().await.map_err(internal("begin sign-up"))?;
        let account_id: i64 = match sqlx::query_scalar(
            "INSERT INTO accounts (name, namespace, created_at) VALUES ($1, $2, $3) RETURNING id",
        )
        .bind(&form.account)
        .bind(&namespace)
        .bind(now)
        .fetch_one(&mut *tx)
        .await
        {
            Ok(id) => id,
            Err(err) if is_unique_violation(&err) => {
                return Err(AppError::conflict(
                    "account",
                    format!(
                        "The account name “{}” is taken. Choose another.",
                        form.account
                    ),
                ))
            }
            Err(err) => return Err(internal("insert account")(err)),
        };
        let user_id: i64 = sqlx::query_scalar(
            "INSERT INTO users (account_id, email, password_hash, role, created_at) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(account_id)
        .bind(&form.email)
        .bind(&password_hash)
        .bind(Role::Owner.as_str())
        .bind(now)
        .fetch_one(&mut *tx)
        .await
        .map_err(internal("insert owner"))?;
        tx.commit().await.map_err(internal("commit sign-up"))?;
        tracing::info!(account = %form.account, user_id, "account created");
        Ok(Me {
            user_id,
            email: form.email,
            role: Role::Owner,
            account: Account {
                id: account_id,
                name: form.account,
                namespace,
                created_at: now,
            },
        })
    }

    async fn authenticate(&self, form: SignInForm) -> Result<Me, AppError> {
        let form = form.normalized();
        let row: Option<(UserRow, String)> =
            sqlx::query_as::<_, (i64, String, String, i64, String, String, i64, String)>(concat!(
                "SELECT ",
                user_columns!(),
                ", u.password_hash FROM users u \
                 JOIN accounts a ON a.id = u.account_id WHERE a.name = $1 AND u.email = $2"
            ))
            .bind(&form.account)
            .bind(&form.email)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("look up user"))?
            .map(|(a, b, c, d, e, f, g, hash)| ((a, b, c, d, e, f, g), hash));
        let stored = match &row {
            Some((_, hash)) => hash.clone(),
            None => decoy_hash().await,
        };
        let matches = verify_password(form.password, stored).await;
        match row {
            Some((user, _)) if matches => Ok(me_from(user)),
            _ => Err(AppError::BadCredentials),
        }
    }

    async fn create_session(&self, me: &Me, user_agent: &str) -> Result<NewSession, AppError> {
        let token = random_token();
        let now = now_ms();
        let ttl = SESSION_TTL.as_millis() as i64;
        sqlx::query(
            "INSERT INTO sessions (token_hash, user_id, user_agent, created_at, last_seen_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(token_hash(&token))
        .bind(me.user_id)
        .bind(user_agent)
        .bind(now)
        .bind(now)
        .bind(now + ttl)
        .execute(&self.pool)
        .await
        .map_err(internal("insert session"))?;
        Ok(NewSession {
            token,
            max_age_secs: SESSION_TTL.as_secs() as i64,
            me: me.clone(),
        })
    }

    async fn resolve_session(&self, token: &str) -> Result<Option<Principal>, AppError> {
        if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let now = now_ms();
        let row: Option<(i64, i64, String, String, i64, String, String, i64, i64)> =
            sqlx::query_as(concat!(
                "SELECT s.id, ",
                user_columns!(),
                ", s.last_seen_at FROM sessions s \
             JOIN users u ON u.id = s.user_id JOIN accounts a ON a.id = u.account_id \
             WHERE s.token_hash = $1 AND s.expires_at > $2"
            ))
            .bind(token_hash(token))
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("look up session"))?;
        let Some((session_id, u, e, r, ai, an, ans, ac, last_seen)) = row else {
            return Ok(None);
        };
        if now - last_seen > TOUCH_EVERY_MS {
            // Sliding expiry: a session in use does not run out.
            sqlx::query("UPDATE sessions SET last_seen_at = $1, expires_at = $2 WHERE id = $3")
                .bind(now)
                .bind(now + SESSION_TTL.as_millis() as i64)
                .bind(session_id)
                .execute(&self.pool)
                .await
                .map_err(internal("touch session"))?;
        }
        Ok(Some(Principal {
            me: me_from((u, e, r, ai, an, ans, ac)),
            credential: Credential::Session(session_id),
        }))
    }

    async fn end_session(&self, token: &str) -> Result<(), AppError> {
        sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
            .bind(token_hash(token))
            .execute(&self.pool)
            .await
            .map_err(internal("delete session"))?;
        Ok(())
    }

    async fn sessions(&self, who: &Principal) -> Result<Vec<SessionInfo>, AppError> {
        let rows: Vec<(i64, i64, i64, i64, String)> = sqlx::query_as(
            "SELECT id, created_at, last_seen_at, expires_at, user_agent FROM sessions \
             WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at DESC, id DESC",
        )
        .bind(who.me.user_id)
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list sessions"))?;
        Ok(rows
            .into_iter()
            .map(
                |(id, created_at, last_seen_at, expires_at, user_agent)| SessionInfo {
                    id,
                    created_at,
                    last_seen_at,
                    expires_at,
                    user_agent,
                    current: who.is_session(id),
                },
            )
            .collect())
    }

    async fn revoke_session(&self, who: &Principal, session_id: i64) -> Result<(), AppError> {
        let done = sqlx::query("DELETE FROM sessions WHERE id = $1 AND user_id = $2")
            .bind(session_id)
            .bind(who.me.user_id)
            .execute(&self.pool)
            .await
            .map_err(internal("revoke session"))?;
        if done.rows_affected() == 0 {
            return Err(AppError::not_found("Session"));
        }
        Ok(())
    }

    async fn members(&self, who: &Principal) -> Result<Vec<Member>, AppError> {
        let rows: Vec<(i64, String, String, i64)> = sqlx::query_as(
            "SELECT id, email, role, created_at FROM users WHERE account_id = $1 ORDER BY created_at, id",
        )
        .bind(who.me.account.id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list members"))?;
        Ok(rows
            .into_iter()
            .map(|(user_id, email, role, created_at)| Member {
                user_id,
                email,
                role: Role::parse(&role).unwrap_or(Role::Member),
                created_at,
            })
            .collect())
    }
}
