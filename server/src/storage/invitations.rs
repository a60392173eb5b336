//! Invitations to join an account: stored as the hash of the mailed link's
//! token, open until used, withdrawn or expired.

use app::error::AppError;
use app::models::{PendingInvitation, Role};
use sqlx::AnyPool;

use super::accounts::User;
use super::members::lock_account;
use super::tokens::{random_token, token_hash};
use super::{audit, internal};
use crate::storage::db::WriteTx;

/// An open invitation, as its link finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invitation {
    /// The account it is to.
    pub account_id: i64,
    /// That account's name.
    pub account: String,
    /// The invited address.
    pub email: String,
    /// The role it gives.
    pub role: Role,
    /// Who sent it.
    pub invited_by: String,
}

/// The account's invitations still open at `now`, oldest first.
pub async fn pending(
    pool: &AnyPool,
    account_id: i64,
    now: i64,
) -> Result<Vec<PendingInvitation>, AppError> {
    let rows: Vec<(i64, String, String, String, i64)> = sqlx::query_as(
        "SELECT id, email, role, invited_by, expires_at FROM invitations \
         WHERE account_id = $1 AND accepted_at IS NULL AND expires_at > $2 \
         ORDER BY created_at, id",
    )
    .bind(account_id)
    .bind(now)
    .fetch_all(pool)
    .await
    .map_err(internal("list invitations"))?;
    Ok(rows
        .into_iter()
        .map(
            |(id, email, role, invited_by, expires_at)| PendingInvitation {
                id,
                email,
                role: Role::parse(&role).unwrap_or(Role::Viewer),
                invited_by,
                expires_at,
            },
        )
        .collect())
}

/// A new invitation, as the service checked it.
pub struct NewInvitation<'a> {
    /// The account it is to.
    pub account_id: i64,
    /// The invited address (normalized).
    pub email: &'a str,
    /// The role it gives.
    pub role: Role,
    /// Who sends it.
    pub invited_by: &'a str,
    /// When.
    pub created_at: i64,
    /// When it stops working.
    pub expires_at: i64,
}

/// Stores `new` in place of any open invitation of the same address to the
/// account (only the newest works) and records `entry`, in one transaction;
/// answers its id and the token for the link (returned once; only its hash
/// is kept).
pub async fn create(
    pool: &AnyPool,
    new: &NewInvitation<'_>,
    entry: audit::Entry<'_>,
) -> Result<(i64, String), AppError> {
    let token = random_token();
    let mut tx = pool.begin_write().await.map_err(internal("invite"))?;
    sqlx::query(
        "DELETE FROM invitations WHERE account_id = $1 AND email = $2 AND accepted_at IS NULL",
    )
    .bind(new.account_id)
    .bind(new.email)
    .execute(&mut *tx)
    .await
    .map_err(internal("invite"))?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO invitations (token_hash, account_id, email, role, invited_by, \
         created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
    )
    .bind(token_hash(&token))
    .bind(new.account_id)
    .bind(new.email)
    .bind(new.role.as_str())
    .bind(new.invited_by)
    .bind(new.created_at)
    .bind(new.expires_at)
    .fetch_one(&mut *tx)
    .await
    .map_err(internal("invite"))?;
    audit::record(&mut *tx, entry).await?;
    tx.commit().await.map_err(internal("invite"))?;
    Ok((id, token))
}

/// Deletes invitation `id` (one whose mail did not go out).
pub async fn delete(pool: &AnyPool, id: i64) -> Result<(), AppError> {
    sqlx::query("DELETE FROM invitations WHERE id = $1")
        .bind(id)
        .execute(pool)
        .await
        .map_err(internal("withdraw an unsent invitation"))?;
    Ok(())
}

/// Withdraws the account's open invitation `id`, recording `action` by
/// `actor` with the invited address as its detail, in one transaction; the
/// address, or `None` if there was no such invitation.
pub async fn withdraw(
    pool: &AnyPool,
    id: i64,
    account_id: i64,
    actor: &str,
    action: &str,
) -> Result<Option<String>, AppError> {
    let mut tx = pool.begin_write().await.map_err(internal("withdraw"))?;
    let gone: Option<(String,)> = sqlx::query_as(
        "DELETE FROM invitations WHERE id = $1 AND account_id = $2 AND accepted_at IS NULL \
         RETURNING email",
    )
    .bind(id)
    .bind(account_id)
    .fetch_optional(&mut *tx)
    .await
    .map_err(internal("withdraw"))?;
    let Some((email,)) = gone else {
        return Ok(None);
    };
    audit::record(
        &mut *tx,
        audit::Entry {
            account_id,
            actor,
            action,
            detail: &email,
        },
    )
    .await?;
    tx.commit().await.map_err(internal("withdraw"))?;
    Ok(Some(email))
}

/// The columns of an [`Invitation`], in [`read`]'s order.
macro_rules! invitation_columns {
    () => {
        "account_id, email, role, invited_by, \
         (SELECT name FROM accounts a WHERE a.id = invitations.account_id)"
    };
}

type InvitationRow = (i64, String, String, String, String);

fn read(row: InvitationRow) -> Invitation {
    let (account_id, email, role, invited_by, account) = row;
    Invitation {
        account_id,
        account,
        email,
        role: Role::parse(&role).unwrap_or(Role::Viewer),
        invited_by,
    }
}

/// The invitation behind `token`, if it is open at `now`.
pub async fn open(pool: &AnyPool, token: &str, now: i64) -> Result<Option<Invitation>, AppError> {
    let row: Option<InvitationRow> = sqlx::query_as(concat!(
        "SELECT ",
        invitation_columns!(),
        " FROM invitations WHERE token_hash = $1 AND accepted_at IS NULL AND expires_at > $2"
    ))
    .bind(token_hash(token))
    .bind(now)
    .fetch_optional(pool)
    .await
    .map_err(internal("read an invitation"))?;
    Ok(row.map(read))
}

/// What accepting an invitation came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accepted {
    /// The invitation is not open (any more): used, withdrawn or expired.
    NotOpen,
    /// A new user was to be made, but the address has a user by now:
    /// decide again. Nothing changed.
    AddressTaken,
    /// The user already is a member of the account. Nothing changed.
    AlreadyMember(Invitation),
    /// The user joined, and `entry` was recorded.
    Joined {
        /// The user who joined.
        user_id: i64,
        /// The invitation they followed.
        invitation: Invitation,
    },
}

/// Uses the invitation behind `token` up and makes `user` a member of its
/// account in its role (a new user gets its address, confirmed: the mailed
/// link proves it), recording `entry`; all in one transaction, so anything
/// refused leaves the invitation open.
pub async fn accept(
    pool: &AnyPool,
    token: &str,
    user: User<'_>,
    now: i64,
    entry: audit::Entry<'_>,
) -> Result<Accepted, AppError> {
    let mut tx = pool.begin_write().await.map_err(internal("accept"))?;
    // One statement, so two uses at once cannot both win; it is also the
    // transaction's first write.
    let row: Option<InvitationRow> = sqlx::query_as(concat!(
        "UPDATE invitations SET accepted_at = $2 WHERE token_hash = $1 \
         AND accepted_at IS NULL AND expires_at > $2 RETURNING ",
        invitation_columns!()
    ))
    .bind(token_hash(token))
    .bind(now)
    .fetch_optional(&mut *tx)
    .await
    .map_err(internal("read an invitation"))?;
    let Some(invitation) = row.map(read) else {
        return Ok(Accepted::NotOpen);
    };
    lock_account(&mut tx, invitation.account_id).await?;
    let user_id = match user {
        User::Existing(id) => id,
        User::New { password_hash } => {
            let (users,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM users WHERE email = $1")
                .bind(&invitation.email)
                .fetch_one(&mut *tx)
                .await
                .map_err(internal("look up users"))?;
            if users > 0 {
                return Ok(Accepted::AddressTaken);
            }
            sqlx::query_scalar(
                "INSERT INTO users (account_id, email, password_hash, role, \
                 created_at, site_admin, email_confirmed_at) \
                 VALUES ($1, $2, $3, $4, $5, 0, $5) RETURNING id",
            )
            .bind(invitation.account_id)
            .bind(&invitation.email)
            .bind(password_hash)
            .bind(Role::Member.as_str())
            .bind(now)
            .fetch_one(&mut *tx)
            .await
            .map_err(internal("create the invited user"))?
        }
    };
    let joined = sqlx::query(
        "INSERT INTO memberships (account_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(invitation.account_id)
    .bind(user_id)
    .bind(invitation.role.as_str())
    .bind(now)
    .execute(&mut *tx)
    .await;
    match joined {
        Ok(_) => {}
        Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
            return Ok(Accepted::AlreadyMember(invitation))
        }
        Err(err) => return Err(internal("join")(err)),
    }
    audit::record(&mut *tx, entry).await?;
    tx.commit().await.map_err(internal("accept"))?;
    Ok(Accepted::Joined {
        user_id,
        invitation,
    })
}
