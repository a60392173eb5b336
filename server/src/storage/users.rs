//! Who a user is, as every "who is this" query reads it: the same columns
//! in the same order, mapped into [`Me`] in one place.

use app::error::AppError;
use app::models::{Account, Me, Role};
use sqlx::AnyPool;

use super::internal;

/// The columns every "who is this" query selects (`u` the user, `a` the
/// account), in this order.
pub type UserRow = (i64, String, String, i64, String, String, i64, i64);
macro_rules! user_columns {
    () => {
        "u.id, u.email, u.role, a.id, a.name, a.namespace, a.created_at, \
         COALESCE(u.email_confirmed_at, 0)"
    };
}
pub(crate) use user_columns;

/// The user and account of a [`UserRow`].
pub fn me_from(row: UserRow) -> Me {
    let (user_id, email, role, account_id, name, namespace, created_at, confirmed_at) = row;
    Me {
        user_id,
        email,
        role: Role::parse(&role).unwrap_or(Role::Member),
        account: Account {
            id: account_id,
            name,
            namespace,
            created_at,
        },
        email_confirmed: confirmed_at > 0,
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

/// The user `email` of account `account`, if there is one.
pub async fn find(pool: &AnyPool, account: &str, email: &str) -> Result<Option<Me>, AppError> {
    let row: Option<UserRow> = sqlx::query_as(concat!(
        "SELECT ",
        user_columns!(),
        " FROM users u JOIN accounts a ON a.id = u.account_id \
         WHERE a.name = $1 AND u.email = $2"
    ))
    .bind(account.trim().to_ascii_lowercase())
    .bind(email.trim().to_lowercase())
    .fetch_optional(pool)
    .await
    .map_err(internal("look up user"))?;
    Ok(row.map(me_from))
}

/// The user with id `user_id`.
pub async fn by_id(pool: &AnyPool, user_id: i64) -> Result<Option<Me>, AppError> {
    let row: Option<UserRow> = sqlx::query_as(concat!(
        "SELECT ",
        user_columns!(),
        " FROM users u JOIN accounts a ON a.id = u.account_id WHERE u.id = $1"
    ))
    .bind(user_id)
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
