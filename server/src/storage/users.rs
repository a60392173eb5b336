//! Who a user is, as every "who is this" query reads it: the same columns
//! in the same order, mapped into [`Me`] in one place.

use app::error::AppError;
use app::models::{Account, Me, Role};
use sqlx::AnyPool;

use super::internal;

/// The columns every "who is this" query selects (`u` the user, `m` their
/// membership, `a` the account it is in), named as [`UserRow`] reads them.
macro_rules! user_columns {
    () => {
        "u.id AS user_id, u.email AS email, m.role AS role, a.id AS account_id, \
         a.name AS account_name, a.namespace AS namespace, a.created_at AS account_created_at, \
         COALESCE(u.email_confirmed_at, 0) AS confirmed_at, \
         u.must_change_password AS must_change_password, u.site_admin AS site_admin"
    };
}
pub(crate) use user_columns;

/// A user as [`user_columns!`] selects them; queries that select more
/// read it with `#[sqlx(flatten)]` beside their own columns.
#[derive(Debug, sqlx::FromRow)]
pub struct UserRow {
    user_id: i64,
    email: String,
    role: String,
    account_id: i64,
    account_name: String,
    namespace: String,
    account_created_at: i64,
    confirmed_at: i64,
    must_change_password: i64,
    site_admin: i64,
}

/// Joins a user `u` to their membership `m` and its account `a`: what a
/// user may do is read from the membership, never from the user row.
macro_rules! member_of {
    () => {
        " JOIN memberships m ON m.user_id = u.id JOIN accounts a ON a.id = m.account_id "
    };
}
pub(crate) use member_of;

/// The user and account of a [`UserRow`].
pub fn me_from(row: UserRow) -> Me {
    Me {
        user_id: row.user_id,
        email: row.email,
        role: Role::parse(&row.role).unwrap_or(Role::Viewer),
        account: Account {
            id: row.account_id,
            name: row.account_name,
            namespace: row.namespace,
            created_at: row.account_created_at,
        },
        email_confirmed: row.confirmed_at > 0,
        must_change_password: row.must_change_password != 0,
        site_admin: row.site_admin != 0,
    }
}

/// Whether the user is a site admin.
pub async fn is_site_admin(pool: &AnyPool, user_id: i64) -> Result<bool, AppError> {
    let admin: Option<(i64,)> = sqlx::query_as("SELECT site_admin FROM users WHERE id = $1")
        .bind(user_id)
        .fetch_optional(pool)
        .await
        .map_err(internal("read site admin"))?;
    Ok(admin.is_some_and(|(a,)| a != 0))
}

/// The member `email` of account `account`, if there is one.
pub async fn find(pool: &AnyPool, account: &str, email: &str) -> Result<Option<Me>, AppError> {
    let row: Option<UserRow> = sqlx::query_as(concat!(
        "SELECT ",
        user_columns!(),
        " FROM users u",
        member_of!(),
        "WHERE a.name = $1 AND u.email = $2"
    ))
    .bind(account.trim().to_ascii_lowercase())
    .bind(email.trim().to_lowercase())
    .fetch_optional(pool)
    .await
    .map_err(internal("look up user"))?;
    Ok(row.map(me_from))
}

/// The user with id `user_id` as a member of `account_id`, if they are one.
pub async fn member(pool: &AnyPool, user_id: i64, account_id: i64) -> Result<Option<Me>, AppError> {
    let row: Option<UserRow> = sqlx::query_as(concat!(
        "SELECT ",
        user_columns!(),
        " FROM users u",
        member_of!(),
        "WHERE u.id = $1 AND a.id = $2"
    ))
    .bind(user_id)
    .bind(account_id)
    .fetch_optional(pool)
    .await
    .map_err(internal("look up user"))?;
    Ok(row.map(me_from))
}

/// The account called `name`, if there is one.
pub async fn account_named(pool: &AnyPool, name: &str) -> Result<Option<Account>, AppError> {
    let row: Option<(i64, String, String, i64)> =
        sqlx::query_as("SELECT id, name, namespace, created_at FROM accounts WHERE name = $1")
            .bind(name)
            .fetch_optional(pool)
            .await
            .map_err(internal("read account"))?;
    Ok(row.map(|(id, name, namespace, created_at)| Account {
        id,
        name,
        namespace,
        created_at,
    }))
}

/// Makes every user with `email` (trimmed, lower-cased) a site admin, or no
/// longer one; how many users that was.
pub async fn grant_site_admin(pool: &AnyPool, email: &str, admin: bool) -> Result<u64, AppError> {
    let done = sqlx::query("UPDATE users SET site_admin = $1 WHERE email = $2")
        .bind(i64::from(admin))
        .bind(email.trim().to_lowercase())
        .execute(pool)
        .await
        .map_err(internal("grant site admin"))?;
    Ok(done.rows_affected())
}
