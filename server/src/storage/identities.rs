//! People who sign in through an identity provider (OpenID Connect, LDAP):
//! which user each provider's subject is, made on their first sign-in,
//! and their memberships set as the provider's mapping says, in one
//! transaction with the audit log.

use app::error::AppError;
use app::models::sign_in::{ExternalIdentity, Memberships};
use app::models::{namespace_for, Role};
use sqlx::AnyPool;

use super::{audit, internal};
use crate::storage::db::WriteTx;
use crate::time::now_ms;

/// The user `who` is (found by the provider's subject, else by address,
/// else made), now a member of each of `memberships`' accounts (made if
/// missing) with its role; the id of the user and of the first account.
pub async fn sign_in(
    pool: &AnyPool,
    who: &ExternalIdentity,
    memberships: &Memberships,
) -> Result<(i64, i64), AppError> {
    let now = now_ms();
    let actor = format!("{} (via {})", who.email, who.provider);
    let mut tx = pool
        .begin_write()
        .await
        .map_err(internal("begin an external sign-in"))?;
    // The accounts first: a new user row needs one.
    let mut accounts = Vec::new();
    for (name, role) in &memberships.accounts {
        let found: Option<i64> = sqlx::query_scalar("SELECT id FROM accounts WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await
            .map_err(internal("find an account"))?;
        let id = match found {
            Some(id) => id,
            None => {
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO accounts (name, namespace, created_at) VALUES ($1, $2, $3) RETURNING id",
                )
                .bind(name)
                .bind(namespace_for(name))
                .bind(now)
                .fetch_one(&mut *tx)
                .await
                .map_err(internal("make an account"))?;
                audit::record(
                    &mut *tx,
                    audit::Entry {
                        account_id: id,
                        actor: &actor,
                        action: "account.created",
                        detail: &format!("account {name}, mapped by the identity provider"),
                    },
                )
                .await?;
                id
            }
        };
        accounts.push((id, *role));
    }
    let (first_account, _) = *accounts.first().ok_or(AppError::Internal)?;
    let linked: Option<i64> = sqlx::query_scalar(
        "SELECT user_id FROM external_identities WHERE provider = $1 AND subject = $2",
    )
    .bind(&who.provider)
    .bind(&who.subject)
    .fetch_optional(&mut *tx)
    .await
    .map_err(internal("find an external identity"))?;
    let user_id = match linked {
        Some(id) => id,
        None => {
            // Someone with a password here already: the provider vouches
            // for the same address, so it is the same person.
            let existing: Option<i64> =
                sqlx::query_scalar("SELECT id FROM users WHERE email = $1 ORDER BY id LIMIT 1")
                    .bind(&who.email)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(internal("find a user by address"))?;
            let id = match existing {
                Some(id) => id,
                // No password: one cannot sign in with an empty hash.
                None => sqlx::query_scalar(
                    "INSERT INTO users (account_id, email, password_hash, role, created_at, \
                     site_admin, email_confirmed_at) VALUES ($1, $2, '', 'member', $3, 0, $3) \
                     RETURNING id",
                )
                // `users.role` is from before memberships: roles are read
                // from `memberships` only.
                .bind(first_account)
                .bind(&who.email)
                .bind(now)
                .fetch_one(&mut *tx)
                .await
                .map_err(internal("make a user"))?,
            };
            sqlx::query(
                "INSERT INTO external_identities (provider, subject, user_id, created_at, \
                 last_sign_in_at) VALUES ($1, $2, $3, $4, $4)",
            )
            .bind(&who.provider)
            .bind(&who.subject)
            .bind(id)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(internal("link an external identity"))?;
            id
        }
    };
    for (account_id, role) in &accounts {
        let held: Option<String> = sqlx::query_scalar(
            "SELECT role FROM memberships WHERE account_id = $1 AND user_id = $2",
        )
        .bind(account_id)
        .bind(user_id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(internal("read a membership"))?;
        let (action, detail) = match held.as_deref().and_then(Role::parse) {
            Some(r) if r == *role => continue,
            Some(r) => {
                sqlx::query(
                    "UPDATE memberships SET role = $1 WHERE account_id = $2 AND user_id = $3",
                )
                .bind(role.as_str())
                .bind(account_id)
                .bind(user_id)
                .execute(&mut *tx)
                .await
                .map_err(internal("change a membership"))?;
                (
                    "member.role_changed",
                    format!(
                        "{}: {} → {}, as the identity provider's groups say",
                        who.email,
                        r.as_str(),
                        role.as_str()
                    ),
                )
            }
            None => {
                sqlx::query(
                    "INSERT INTO memberships (account_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)",
                )
                .bind(account_id)
                .bind(user_id)
                .bind(role.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(internal("add a membership"))?;
                (
                    "member.joined",
                    format!(
                        "{} as {}, through the identity provider",
                        who.email,
                        role.as_str()
                    ),
                )
            }
        };
        audit::record(
            &mut *tx,
            audit::Entry {
                account_id: *account_id,
                actor: &actor,
                action,
                detail: &detail,
            },
        )
        .await?;
    }
    if memberships.site_admin {
        sqlx::query("UPDATE users SET site_admin = 1 WHERE id = $1")
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .map_err(internal("make a site admin"))?;
    }
    sqlx::query(
        "UPDATE external_identities SET last_sign_in_at = $1 WHERE provider = $2 AND subject = $3",
    )
    .bind(now)
    .bind(&who.provider)
    .bind(&who.subject)
    .execute(&mut *tx)
    .await
    .map_err(internal("note an external sign-in"))?;
    tx.commit()
        .await
        .map_err(internal("commit an external sign-in"))?;
    Ok((user_id, first_account))
}
