//! Who is in an account and in what role (`memberships`), with each
//! member's caps. Invitations are in [`super::invitations`].
//!
//! Every change to an account's members locks the account's row first, so
//! two owners demoting each other at once cannot both win (on PostgreSQL as
//! on SQLite), and on SQLite the transaction's first statement is a write.

use app::error::AppError;
use app::models::{Membership, Role};
use sqlx::{Any, AnyPool, Transaction};

use super::{audit, internal};
use crate::storage::db::WriteTx;

/// Holds the account's row until the transaction ends: membership changes
/// of one account happen one after another.
pub(super) async fn lock_account(
    tx: &mut Transaction<'static, Any>,
    account_id: i64,
) -> Result<(), AppError> {
    sqlx::query("UPDATE accounts SET name = name WHERE id = $1")
        .bind(account_id)
        .execute(&mut **tx)
        .await
        .map_err(internal("lock the account"))?;
    Ok(())
}

/// A member's caps as stored: `None` is no cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps {
    /// CPU, in thousandths of a core.
    pub cpu_millis: Option<i64>,
    /// Memory, in bytes.
    pub memory_bytes: Option<i64>,
    /// GPUs.
    pub gpus: Option<i64>,
    /// Jobs at once.
    pub jobs: Option<i64>,
}

/// One member of an account.
#[derive(Debug, Clone)]
pub struct MemberRecord {
    /// The user.
    pub user_id: i64,
    /// Their address.
    pub email: String,
    /// Their role in the account.
    pub role: Role,
    /// When they joined.
    pub created_at: i64,
    /// Their caps there.
    pub caps: Caps,
    /// Whether they may submit high-priority jobs there.
    pub high_priority: bool,
}

/// The account's members, in the order they joined.
pub async fn list(pool: &AnyPool, account_id: i64) -> Result<Vec<MemberRecord>, AppError> {
    type MemberRow = (
        i64,
        String,
        String,
        i64,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        i64,
    );
    let rows: Vec<MemberRow> = sqlx::query_as(
        "SELECT u.id, u.email, m.role, m.created_at, m.max_cpu_millis, m.max_memory_bytes, \
         m.max_gpus, m.max_jobs, m.high_priority FROM memberships m \
         JOIN users u ON u.id = m.user_id WHERE m.account_id = $1 \
         ORDER BY m.created_at, u.id",
    )
    .bind(account_id)
    .fetch_all(pool)
    .await
    .map_err(internal("list members"))?;
    Ok(rows
        .into_iter()
        .map(
            |(user_id, email, role, created_at, cpu_millis, memory_bytes, gpus, jobs, high)| {
                MemberRecord {
                    user_id,
                    email,
                    role: Role::parse(&role).unwrap_or(Role::Viewer),
                    created_at,
                    caps: Caps {
                        cpu_millis,
                        memory_bytes,
                        gpus,
                        jobs,
                    },
                    high_priority: high != 0,
                }
            },
        )
        .collect())
}

/// A member as a change read them, before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Their address.
    pub email: String,
    /// Their role before the change.
    pub role: Role,
}

/// What a change to a member came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The user is not a member of the account.
    NotMember,
    /// The member is the account's last owner, and the change would leave
    /// it without one: nothing changed.
    LastOwner(Member),
    /// The member already was as asked: nothing changed.
    Unchanged,
    /// Changed, and recorded.
    Done(Member),
}

/// An audit entry of a change to a member: who made it and what it is
/// called, and its detail worded from the member as the change read them.
pub struct Note<'a, F: FnOnce(&Member) -> String> {
    /// Who made the change.
    pub actor: &'a str,
    /// What the log calls it.
    pub action: &'a str,
    /// The detail.
    pub detail: F,
}

/// The member `user_id` of `account_id`: their address and role.
async fn member_row(
    tx: &mut Transaction<'static, Any>,
    account_id: i64,
    user_id: i64,
) -> Result<Option<Member>, AppError> {
    let row: Option<(String, String)> = sqlx::query_as(
        "SELECT u.email, m.role FROM memberships m JOIN users u ON u.id = m.user_id \
         WHERE m.account_id = $1 AND m.user_id = $2",
    )
    .bind(account_id)
    .bind(user_id)
    .fetch_optional(&mut **tx)
    .await
    .map_err(internal("read a member"))?;
    Ok(row.map(|(email, role)| Member {
        email,
        role: Role::parse(&role).unwrap_or(Role::Viewer),
    }))
}

/// Whether `account_id` has more than one owner.
async fn another_owner(
    tx: &mut Transaction<'static, Any>,
    account_id: i64,
) -> Result<bool, AppError> {
    let (owners,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM memberships WHERE account_id = $1 AND role = 'owner'")
            .bind(account_id)
            .fetch_one(&mut **tx)
            .await
            .map_err(internal("count owners"))?;
    Ok(owners > 1)
}

/// Writes `note` about `member` into `account_id`'s log and commits.
async fn record_and_commit<F: FnOnce(&Member) -> String>(
    mut tx: Transaction<'static, Any>,
    account_id: i64,
    member: &Member,
    note: Note<'_, F>,
    context: &'static str,
) -> Result<(), AppError> {
    audit::record(
        &mut *tx,
        audit::Entry {
            account_id,
            actor: note.actor,
            action: note.action,
            detail: &(note.detail)(member),
        },
    )
    .await?;
    tx.commit().await.map_err(internal(context))
}

/// Gives the member `user_id` of `account_id` the role `role`, unless that
/// leaves the account without an owner.
pub async fn change_role<F: FnOnce(&Member) -> String>(
    pool: &AnyPool,
    account_id: i64,
    user_id: i64,
    role: Role,
    note: Note<'_, F>,
) -> Result<Change, AppError> {
    let mut tx = pool
        .begin_write()
        .await
        .map_err(internal("change a role"))?;
    lock_account(&mut tx, account_id).await?;
    let Some(member) = member_row(&mut tx, account_id, user_id).await? else {
        return Ok(Change::NotMember);
    };
    if member.role == role {
        return Ok(Change::Unchanged);
    }
    if member.role == Role::Owner && !another_owner(&mut tx, account_id).await? {
        return Ok(Change::LastOwner(member));
    }
    sqlx::query("UPDATE memberships SET role = $1 WHERE account_id = $2 AND user_id = $3")
        .bind(role.as_str())
        .bind(account_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("change a role"))?;
    record_and_commit(tx, account_id, &member, note, "change a role").await?;
    Ok(Change::Done(member))
}

/// Sets the caps of the member `user_id` of `account_id`.
pub async fn set_caps<F: FnOnce(&Member) -> String>(
    pool: &AnyPool,
    account_id: i64,
    user_id: i64,
    caps: &Caps,
    note: Note<'_, F>,
) -> Result<Change, AppError> {
    let mut tx = pool.begin_write().await.map_err(internal("set caps"))?;
    // A write first: on SQLite a transaction that reads and then writes
    // can fail when another connection wrote in between.
    lock_account(&mut tx, account_id).await?;
    let Some(member) = member_row(&mut tx, account_id, user_id).await? else {
        return Ok(Change::NotMember);
    };
    sqlx::query(
        "UPDATE memberships SET max_cpu_millis = $1, max_memory_bytes = $2, max_gpus = $3, \
         max_jobs = $4 WHERE account_id = $5 AND user_id = $6",
    )
    .bind(caps.cpu_millis)
    .bind(caps.memory_bytes)
    .bind(caps.gpus)
    .bind(caps.jobs)
    .bind(account_id)
    .bind(user_id)
    .execute(&mut *tx)
    .await
    .map_err(internal("set caps"))?;
    record_and_commit(tx, account_id, &member, note, "set caps").await?;
    Ok(Change::Done(member))
}

/// Sets whether the member `user_id` of `account_id` may submit
/// high-priority jobs.
pub async fn set_high_priority<F: FnOnce(&Member) -> String>(
    pool: &AnyPool,
    account_id: i64,
    user_id: i64,
    allowed: bool,
    note: Note<'_, F>,
) -> Result<Change, AppError> {
    let what = "allow high priority";
    let mut tx = pool.begin_write().await.map_err(internal(what))?;
    lock_account(&mut tx, account_id).await?;
    let Some(member) = member_row(&mut tx, account_id, user_id).await? else {
        return Ok(Change::NotMember);
    };
    sqlx::query("UPDATE memberships SET high_priority = $1 WHERE account_id = $2 AND user_id = $3")
        .bind(i64::from(allowed))
        .bind(account_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await
        .map_err(internal(what))?;
    record_and_commit(tx, account_id, &member, note, what).await?;
    Ok(Change::Done(member))
}

/// Whether the member `user_id` of `account_id` may submit high-priority
/// jobs (an owner's setting; owners themselves always may).
pub async fn may_use_high_priority(
    pool: &AnyPool,
    account_id: i64,
    user_id: i64,
) -> Result<bool, AppError> {
    let row: Option<(String, i64)> = sqlx::query_as(
        "SELECT role, high_priority FROM memberships WHERE account_id = $1 AND user_id = $2",
    )
    .bind(account_id)
    .bind(user_id)
    .fetch_optional(pool)
    .await
    .map_err(internal("read a member's priority"))?;
    Ok(row.is_some_and(|(role, high)| role == Role::Owner.as_str() || high != 0))
}

/// Takes the member `user_id` out of `account_id`, unless they are its
/// last owner. Their sessions and access keys there end with the
/// membership (the lookups join on it too, so nothing slips through in
/// between).
pub async fn remove<F: FnOnce(&Member) -> String>(
    pool: &AnyPool,
    account_id: i64,
    user_id: i64,
    note: Note<'_, F>,
) -> Result<Change, AppError> {
    let mut tx = pool
        .begin_write()
        .await
        .map_err(internal("remove a member"))?;
    lock_account(&mut tx, account_id).await?;
    let Some(member) = member_row(&mut tx, account_id, user_id).await? else {
        return Ok(Change::NotMember);
    };
    if member.role == Role::Owner && !another_owner(&mut tx, account_id).await? {
        return Ok(Change::LastOwner(member));
    }
    for statement in [
        "DELETE FROM memberships WHERE account_id = $1 AND user_id = $2",
        "DELETE FROM sessions WHERE account_id = $1 AND user_id = $2",
        "DELETE FROM access_keys WHERE account_id = $1 AND user_id = $2",
    ] {
        sqlx::query(statement)
            .bind(account_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .map_err(internal("remove a member"))?;
    }
    record_and_commit(tx, account_id, &member, note, "remove a member").await?;
    Ok(Change::Done(member))
}

/// Every account the user is in, with their role there, by name.
pub async fn of_user(pool: &AnyPool, user_id: i64) -> Result<Vec<Membership>, AppError> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT a.name, m.role FROM memberships m JOIN accounts a ON a.id = m.account_id \
         WHERE m.user_id = $1 ORDER BY a.name",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await
    .map_err(internal("list memberships"))?;
    Ok(rows
        .into_iter()
        .map(|(account, role)| membership(account, &role))
        .collect())
}

fn membership(account: String, role: &str) -> Membership {
    Membership {
        account,
        role: Role::parse(role).unwrap_or(Role::Viewer),
    }
}

/// The memberships a session lookup read as `name:role,name:role` (account
/// names are DNS labels, so neither separator is in one), sorted by name
/// like [`of_user`].
pub(super) fn parse_memberships(joined: Option<&str>) -> Vec<Membership> {
    let mut list: Vec<Membership> = joined
        .unwrap_or_default()
        .split(',')
        .filter_map(|pair| pair.rsplit_once(':'))
        .map(|(account, role)| membership(account.to_owned(), role))
        .collect();
    list.sort_by(|a, b| a.account.cmp(&b.account));
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memberships_read_with_the_session_come_back_sorted_with_their_roles() {
        let list = parse_memberships(Some("vision:viewer,nlp:owner,ads:member"));
        let pairs: Vec<_> = list.iter().map(|m| (m.account.as_str(), m.role)).collect();
        assert_eq!(
            pairs,
            [
                ("ads", Role::Member),
                ("nlp", Role::Owner),
                ("vision", Role::Viewer)
            ]
        );
        assert!(parse_memberships(None).is_empty());
    }
}
