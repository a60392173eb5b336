//! Accounts and their users' credentials: a sign-up's account, owner and
//! membership in one transaction, the password hashes signing in checks,
//! and what a password change, a reset link or a confirmation link change.
//! The rules (hashing, who may, the words) are the service's
//! (`crate::accounts`); these functions take what it decided.

use app::error::AppError;
use app::models::{Me, Role};
use sqlx::AnyPool;

use super::user_links::{self, Purpose};
use super::users::{me_from, member_of, user_columns, UserRow};
use super::{audit, internal};
use crate::storage::db::WriteTx;
use crate::time::now_ms;

/// Who a new membership is for: a user who exists, or a new one with the
/// hash of the password they chose (hashed before the transaction, so no
/// lock is held while it is).
#[derive(Debug, Clone, Copy)]
pub enum User<'a> {
    /// The user with this id.
    Existing(i64),
    /// A new user with this password hash.
    New {
        /// The argon2 hash of their password.
        password_hash: &'a str,
    },
}

/// A new account and its owner, as the service checked them.
pub struct NewAccount<'a> {
    /// The account's name (validated).
    pub name: &'a str,
    /// Its Kubernetes namespace.
    pub namespace: &'a str,
    /// The owner's address (normalized).
    pub email: &'a str,
    /// The owner.
    pub owner: User<'a>,
    /// Whether a new owner's address counts as confirmed.
    pub confirmed: bool,
    /// Whether the owner becomes a site admin (the first user of an empty
    /// database becomes one anyway).
    pub site_admin: bool,
}

/// What a sign-up created.
#[derive(Debug, Clone, Copy)]
pub struct Created {
    /// The owner.
    pub user_id: i64,
    /// The new account.
    pub account_id: i64,
    /// Whether the owner is a site admin now.
    pub site_admin: bool,
}

/// The account name is someone else's.
#[derive(Debug, Clone, Copy)]
pub struct NameTaken;

/// Creates the account, its owner (unless they exist) and the owner's
/// membership, all or nothing.
pub async fn create(
    pool: &AnyPool,
    new: &NewAccount<'_>,
) -> Result<Result<Created, NameTaken>, AppError> {
    let now = now_ms();
    // The transaction writes first: on SQLite one that read first fails
    // at once ("database is locked") when another connection wrote since,
    // instead of waiting for the lock.
    let mut tx = pool
        .begin_write()
        .await
        .map_err(internal("begin sign-up"))?;
    let account_id: i64 = match sqlx::query_scalar(
        "INSERT INTO accounts (name, namespace, created_at) VALUES ($1, $2, $3) RETURNING id",
    )
    .bind(new.name)
    .bind(new.namespace)
    .bind(now)
    .fetch_one(&mut *tx)
    .await
    {
        Ok(id) => id,
        Err(sqlx::Error::Database(db)) if db.is_unique_violation() => return Ok(Err(NameTaken)),
        Err(err) => return Err(internal("insert account")(err)),
    };
    // The owner is not in yet: this counts the users from before.
    let (users_before,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM users")
        .fetch_one(&mut *tx)
        .await
        .map_err(internal("count users"))?;
    let site_admin = new.site_admin || users_before == 0;
    let user_id: i64 = match new.owner {
        User::Existing(id) => {
            if site_admin {
                sqlx::query("UPDATE users SET site_admin = 1 WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(internal("make a site admin"))?;
            }
            id
        }
        User::New { password_hash } => sqlx::query_scalar(
            "INSERT INTO users (account_id, email, password_hash, role, created_at, \
             site_admin, email_confirmed_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(account_id)
        .bind(new.email)
        .bind(password_hash)
        .bind(Role::Owner.as_str())
        .bind(now)
        .bind(i64::from(site_admin))
        .bind(new.confirmed.then_some(now))
        .fetch_one(&mut *tx)
        .await
        .map_err(internal("insert owner"))?,
    };
    sqlx::query(
        "INSERT INTO memberships (account_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(account_id)
    .bind(user_id)
    .bind(Role::Owner.as_str())
    .bind(now)
    .execute(&mut *tx)
    .await
    .map_err(internal("insert owner's membership"))?;
    tx.commit().await.map_err(internal("commit sign-up"))?;
    Ok(Ok(Created {
        user_id,
        account_id,
        site_admin,
    }))
}

/// Makes the user change their password at their next sign-in (a password
/// someone generated for them).
pub async fn require_password_change(pool: &AnyPool, user_id: i64) -> Result<(), AppError> {
    sqlx::query("UPDATE users SET must_change_password = 1 WHERE id = $1")
        .bind(user_id)
        .execute(pool)
        .await
        .map_err(internal("mark a generated password"))?;
    Ok(())
}

/// One user's password hash.
#[derive(Debug, Clone)]
pub struct StoredPassword {
    /// The user.
    pub user_id: i64,
    /// Their argon2 hash.
    pub hash: String,
}

/// The users with address `email`, oldest first, and their password hashes
/// (one address is one user, except for users from before one user could
/// belong to several accounts).
pub async fn passwords_of(pool: &AnyPool, email: &str) -> Result<Vec<StoredPassword>, AppError> {
    let users: Vec<(i64, String)> =
        sqlx::query_as("SELECT id, password_hash FROM users WHERE email = $1 ORDER BY id")
            .bind(email)
            .fetch_all(pool)
            .await
            .map_err(internal("look up users"))?;
    Ok(users
        .into_iter()
        .map(|(user_id, hash)| StoredPassword { user_id, hash })
        .collect())
}

/// The member `email` of account `account` (both as given) and their
/// password hash, for signing in.
pub async fn sign_in(
    pool: &AnyPool,
    account: &str,
    email: &str,
) -> Result<Option<(Me, String)>, AppError> {
    /// The user, then their password's hash.
    #[derive(sqlx::FromRow)]
    struct Candidate {
        #[sqlx(flatten)]
        user: UserRow,
        password_hash: String,
    }
    let row: Option<Candidate> = sqlx::query_as(concat!(
        "SELECT ",
        user_columns!(),
        ", u.password_hash AS password_hash FROM users u",
        member_of!(),
        "WHERE a.name = $1 AND u.email = $2"
    ))
    .bind(account)
    .bind(email)
    .fetch_optional(pool)
    .await
    .map_err(internal("look up user"))?;
    Ok(row.map(|c| (me_from(c.user), c.password_hash)))
}

/// The password hash of user `user_id`, if there is such a user.
pub async fn password_hash(pool: &AnyPool, user_id: i64) -> Result<Option<String>, AppError> {
    let stored: Option<(String,)> = sqlx::query_as("SELECT password_hash FROM users WHERE id = $1")
        .bind(user_id)
        .fetch_optional(pool)
        .await
        .map_err(internal("read password"))?;
    Ok(stored.map(|(h,)| h))
}

/// A password change the service checked (the current password verified,
/// the new one hashed).
pub struct PasswordChange<'a> {
    /// Whose password.
    pub user_id: i64,
    /// The account the audit entry goes to.
    pub account_id: i64,
    /// Who changed it, for the audit log.
    pub actor: &'a str,
    /// The new password's hash.
    pub hash: &'a str,
    /// The session that stays (0: none); every other one of the user ends.
    pub keep_session: i64,
    /// Whether the user's access keys are revoked too.
    pub revoke_keys: bool,
}

/// What a password change ended.
#[derive(Debug, Clone, Copy)]
pub struct Ended {
    /// Sessions ended.
    pub sessions: u64,
    /// Access keys revoked, if they were asked to be.
    pub keys: Option<u64>,
}

/// Sets the new password, ends the user's other sessions and unused reset
/// links (and access keys if asked), and records `action` with the detail
/// `detail` words from what ended, all in one transaction.
pub async fn change_password(
    pool: &AnyPool,
    change: &PasswordChange<'_>,
    action: &str,
    detail: impl FnOnce(&Ended) -> String,
) -> Result<Ended, AppError> {
    let mut tx = pool
        .begin_write()
        .await
        .map_err(internal("change password"))?;
    sqlx::query("UPDATE users SET password_hash = $1, must_change_password = 0 WHERE id = $2")
        .bind(change.hash)
        .bind(change.user_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("change password"))?;
    let sessions = sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND id <> $2")
        .bind(change.user_id)
        .bind(change.keep_session)
        .execute(&mut *tx)
        .await
        .map_err(internal("end sessions"))?
        .rows_affected();
    user_links::forget(&mut *tx, change.user_id, Purpose::Reset).await?;
    let keys = if change.revoke_keys {
        let revoked = sqlx::query("DELETE FROM access_keys WHERE user_id = $1")
            .bind(change.user_id)
            .execute(&mut *tx)
            .await
            .map_err(internal("revoke keys"))?
            .rows_affected();
        Some(revoked)
    } else {
        None
    };
    let ended = Ended { sessions, keys };
    audit::record(
        &mut *tx,
        audit::Entry {
            account_id: change.account_id,
            actor: change.actor,
            action,
            detail: &detail(&ended),
        },
    )
    .await?;
    tx.commit().await.map_err(internal("change password"))?;
    Ok(ended)
}

/// What following a mailed link came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkUse<T> {
    /// No unused, unexpired link of its purpose has this token.
    Invalid,
    /// The link's user is gone.
    NoUser,
    /// Done, for the user with this address.
    Used(T),
}

/// A password set with a reset link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reset {
    /// The user's address.
    pub email: String,
    /// How many of their sessions ended.
    pub ended: u64,
}

/// Uses the reset link `token` up and sets the password with hash `hash`;
/// the address counts as confirmed (the link was mailed to it), every
/// session and unused reset link of the user ends, and `action` is recorded
/// as the user's with the detail `detail` words. All in one transaction:
/// anything refused leaves the link unused.
pub async fn reset_password(
    pool: &AnyPool,
    token: &str,
    hash: &str,
    action: &str,
    detail: impl FnOnce(&Reset) -> String,
) -> Result<LinkUse<Reset>, AppError> {
    let mut tx = pool
        .begin_write()
        .await
        .map_err(internal("reset password"))?;
    let Some(user_id) = user_links::take(&mut *tx, token, Purpose::Reset).await? else {
        return Ok(LinkUse::Invalid);
    };
    let row: Option<(i64, String)> = sqlx::query_as(
        "UPDATE users SET password_hash = $1, must_change_password = 0, \
         email_confirmed_at = COALESCE(email_confirmed_at, $2) \
         WHERE id = $3 RETURNING account_id, email",
    )
    .bind(hash)
    .bind(now_ms())
    .bind(user_id)
    .fetch_optional(&mut *tx)
    .await
    .map_err(internal("reset password"))?;
    let Some((account_id, email)) = row else {
        return Ok(LinkUse::NoUser);
    };
    let ended = sqlx::query("DELETE FROM sessions WHERE user_id = $1")
        .bind(user_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("end sessions"))?
        .rows_affected();
    user_links::forget(&mut *tx, user_id, Purpose::Reset).await?;
    let reset = Reset { email, ended };
    audit::record(
        &mut *tx,
        audit::Entry {
            account_id,
            actor: &reset.email,
            action,
            detail: &detail(&reset),
        },
    )
    .await?;
    tx.commit().await.map_err(internal("reset password"))?;
    Ok(LinkUse::Used(reset))
}

/// Uses the confirmation link `token` up and marks the user's address
/// confirmed (if it was not), recording `action` as the user's with the
/// detail `detail` words from their address; one transaction.
pub async fn confirm_email(
    pool: &AnyPool,
    token: &str,
    action: &str,
    detail: impl FnOnce(&str) -> String,
) -> Result<LinkUse<String>, AppError> {
    let mut tx = pool
        .begin_write()
        .await
        .map_err(internal("confirm email"))?;
    let Some(user_id) = user_links::take(&mut *tx, token, Purpose::Confirm).await? else {
        return Ok(LinkUse::Invalid);
    };
    let row: Option<(i64, String)> = sqlx::query_as(
        "UPDATE users SET email_confirmed_at = COALESCE(email_confirmed_at, $1) \
         WHERE id = $2 RETURNING account_id, email",
    )
    .bind(now_ms())
    .bind(user_id)
    .fetch_optional(&mut *tx)
    .await
    .map_err(internal("confirm email"))?;
    let Some((account_id, email)) = row else {
        return Ok(LinkUse::NoUser);
    };
    audit::record(
        &mut *tx,
        audit::Entry {
            account_id,
            actor: &email,
            action,
            detail: &detail(&email),
        },
    )
    .await?;
    tx.commit().await.map_err(internal("confirm email"))?;
    Ok(LinkUse::Used(email))
}
