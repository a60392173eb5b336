//! Who a user is, as every "who is this" query reads it: the same columns
//! in the same order, mapped into [`Me`] in one place.

use app::models::{Account, Me, Role};

/// The columns every "who is this" query selects (`u` the user, `a` the
/// account), in this order.
pub type UserRow = (i64, String, String, i64, String, String, i64);
macro_rules! user_columns {
    () => {
        "u.id, u.email, u.role, a.id, a.name, a.namespace, a.created_at"
    };
}
pub(crate) use user_columns;

/// The user and account of a [`UserRow`].
pub fn me_from(row: UserRow) -> Me {
    let (user_id, email, role, account_id, name, namespace, created_at) = row;
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
    }
}
