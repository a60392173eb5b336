//! [`Members`] on the SQL database: who is in an account and in what role.
//! Invitations are in [`super::invitations`].
//!
//! Every change to an account's members locks the account's row first, so
//! two owners demoting each other at once cannot both win (on PostgreSQL as
//! on SQLite), and on SQLite the transaction's first statement is a write.

use app::error::AppError;
use app::models::{
    InvitationView, InviteForm, Me, Member, MemberList, Membership, PendingInvitation, Quota,
    QuotaForm, Role,
};
use app::ports::{Credential, Members, Principal};
use async_trait::async_trait;
use sqlx::{Any, Transaction};

use super::SqlAccounts;
use crate::quota::{to_i64, to_u64};
use crate::storage::{audit, internal, users};

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

/// The member `user_id` of `account_id`: their address and role.
async fn member_row(
    tx: &mut Transaction<'static, Any>,
    account_id: i64,
    user_id: i64,
) -> Result<(String, Role), AppError> {
    let row: Option<(String, String)> = sqlx::query_as(
        "SELECT u.email, m.role FROM memberships m JOIN users u ON u.id = m.user_id \
         WHERE m.account_id = $1 AND m.user_id = $2",
    )
    .bind(account_id)
    .bind(user_id)
    .fetch_optional(&mut **tx)
    .await
    .map_err(internal("read a member"))?;
    let (email, role) = row.ok_or_else(|| AppError::not_found("Member"))?;
    Ok((email, Role::parse(&role).unwrap_or(Role::Viewer)))
}

/// Refuses to leave `account_id` without an owner when `email`, now an
/// owner, stops being one.
async fn keep_an_owner(
    tx: &mut Transaction<'static, Any>,
    account_id: i64,
    email: &str,
    why: &str,
) -> Result<(), AppError> {
    let (owners,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM memberships WHERE account_id = $1 AND role = 'owner'")
            .bind(account_id)
            .fetch_one(&mut **tx)
            .await
            .map_err(internal("count owners"))?;
    if owners <= 1 {
        return Err(AppError::conflict(
            "member",
            format!(
                "{email} is the account's last owner and cannot {why}: make another member an \
                 owner first."
            ),
        ));
    }
    Ok(())
}

#[async_trait]
impl Members for SqlAccounts {
    async fn members(&self, who: &Principal) -> Result<MemberList, AppError> {
        type MemberRow = (
            i64,
            String,
            String,
            i64,
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
        );
        let rows: Vec<MemberRow> = sqlx::query_as(
            "SELECT u.id, u.email, m.role, m.created_at, m.max_cpu_millis, m.max_memory_bytes, \
             m.max_gpus, m.max_jobs FROM memberships m \
             JOIN users u ON u.id = m.user_id WHERE m.account_id = $1 \
             ORDER BY m.created_at, u.id",
        )
        .bind(who.me.account.id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list members"))?;
        let members = rows
            .into_iter()
            .map(
                |(user_id, email, role, created_at, cpu, memory, gpu, jobs)| Member {
                    user_id,
                    email,
                    role: Role::parse(&role).unwrap_or(Role::Viewer),
                    created_at,
                    caps: Quota {
                        cpu_millis: to_u64(cpu),
                        memory_bytes: to_u64(memory),
                        gpu: to_u64(gpu),
                        max_jobs: to_u64(jobs),
                    },
                },
            )
            .collect();
        let invitations = if who.me.role == Role::Owner {
            self.pending_invitations(who.me.account.id).await?
        } else {
            Vec::new()
        };
        Ok(MemberList {
            members,
            invitations,
        })
    }

    async fn invite(
        &self,
        who: &Principal,
        form: InviteForm,
    ) -> Result<PendingInvitation, AppError> {
        self.send_invitation(who, form).await
    }

    async fn cancel_invitation(&self, who: &Principal, id: i64) -> Result<(), AppError> {
        self.withdraw_invitation(who, id).await
    }

    async fn invitation(
        &self,
        token: &str,
        who: Option<&Principal>,
    ) -> Result<InvitationView, AppError> {
        self.show_invitation(token, who).await
    }

    async fn accept_invitation(
        &self,
        token: &str,
        password: Option<String>,
        who: Option<&Principal>,
    ) -> Result<Me, AppError> {
        self.accept(token, password, who).await
    }

    async fn change_role(&self, who: &Principal, user_id: i64, role: Role) -> Result<(), AppError> {
        who.me.role.require_owner("change members' roles")?;
        let account_id = who.me.account.id;
        let mut tx = self.pool.begin().await.map_err(internal("change a role"))?;
        lock_account(&mut tx, account_id).await?;
        let (email, before) = member_row(&mut tx, account_id, user_id).await?;
        if before == role {
            return Ok(());
        }
        if before == Role::Owner {
            keep_an_owner(&mut tx, account_id, &email, "stop being one").await?;
        }
        sqlx::query("UPDATE memberships SET role = $1 WHERE account_id = $2 AND user_id = $3")
            .bind(role.as_str())
            .bind(account_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .map_err(internal("change a role"))?;
        audit::record(
            &mut *tx,
            audit::Entry {
                account_id,
                actor: &who.me.email,
                action: "member.role_changed",
                detail: &format!("{email}: {} → {}", before.as_str(), role.as_str()),
            },
        )
        .await?;
        tx.commit().await.map_err(internal("change a role"))?;
        tracing::info!(account = %who.me.account.name, member = %email, role = role.as_str(), "role changed");
        Ok(())
    }

    async fn set_caps(&self, who: &Principal, user_id: i64, caps: Quota) -> Result<(), AppError> {
        who.me.role.require_owner("set members' caps")?;
        let account_id = who.me.account.id;
        let mut tx = self.pool.begin().await.map_err(internal("set caps"))?;
        // A write first: on SQLite a transaction that reads and then writes
        // can fail when another connection wrote in between.
        lock_account(&mut tx, account_id).await?;
        let (email, _) = member_row(&mut tx, account_id, user_id).await?;
        sqlx::query(
            "UPDATE memberships SET max_cpu_millis = $1, max_memory_bytes = $2, max_gpus = $3, \
             max_jobs = $4 WHERE account_id = $5 AND user_id = $6",
        )
        .bind(to_i64(caps.cpu_millis))
        .bind(to_i64(caps.memory_bytes))
        .bind(to_i64(caps.gpu))
        .bind(to_i64(caps.max_jobs))
        .bind(account_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("set caps"))?;
        audit::record(
            &mut *tx,
            audit::Entry {
                account_id,
                actor: &who.me.email,
                action: "member.caps_set",
                detail: &format!("{email}: {}", QuotaForm::of(&caps).words()),
            },
        )
        .await?;
        tx.commit().await.map_err(internal("set caps"))?;
        Ok(())
    }

    async fn remove_member(&self, who: &Principal, user_id: i64) -> Result<(), AppError> {
        let leaving = user_id == who.me.user_id;
        if !leaving {
            who.me.role.require_owner("remove members")?;
        }
        let account_id = who.me.account.id;
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(internal("remove a member"))?;
        lock_account(&mut tx, account_id).await?;
        let (email, role) = member_row(&mut tx, account_id, user_id).await?;
        if role == Role::Owner {
            let why = if leaving { "leave" } else { "be removed" };
            keep_an_owner(&mut tx, account_id, &email, why).await?;
        }
        // Their sessions and keys there end with the membership (the
        // lookups join on it too, so nothing slips through in between).
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
        audit::record(
            &mut *tx,
            audit::Entry {
                account_id,
                actor: &who.me.email,
                action: if leaving {
                    "member.left"
                } else {
                    "member.removed"
                },
                detail: &format!("{email} ({})", role.as_str()),
            },
        )
        .await?;
        tx.commit().await.map_err(internal("remove a member"))?;
        tracing::info!(account = %who.me.account.name, member = %email, leaving, "member removed");
        Ok(())
    }

    async fn memberships(&self, who: &Principal) -> Result<Vec<Membership>, AppError> {
        if let Some(known) = &who.memberships {
            return Ok(known.clone());
        }
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT a.name, m.role FROM memberships m JOIN accounts a ON a.id = m.account_id \
             WHERE m.user_id = $1 ORDER BY a.name",
        )
        .bind(who.me.user_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list memberships"))?;
        Ok(rows
            .into_iter()
            .map(|(account, role)| membership(account, &role))
            .collect())
    }

    async fn switch_account(&self, who: &Principal, account: &str) -> Result<Me, AppError> {
        let Credential::Session(session_id) = who.credential else {
            return Err(AppError::forbidden(
                "An access key acts in the account it was made in: make a key in the other \
                 account to work there.",
            ));
        };
        let target = users::account_named(&self.pool, account.trim())
            .await?
            .ok_or_else(|| AppError::not_found(format!("Account “{account}”")))?;
        let me = users::member(&self.pool, who.me.user_id, target.id)
            .await?
            // Not a member: as far as they know, there is no such account.
            .ok_or_else(|| AppError::not_found(format!("Account “{account}”")))?;
        sqlx::query("UPDATE sessions SET account_id = $1 WHERE id = $2 AND user_id = $3")
            .bind(target.id)
            .bind(session_id)
            .bind(who.me.user_id)
            .execute(&self.pool)
            .await
            .map_err(internal("switch account"))?;
        Ok(me)
    }
}

fn membership(account: String, role: &str) -> Membership {
    Membership {
        account,
        role: Role::parse(role).unwrap_or(Role::Viewer),
    }
}

/// The memberships a session lookup read as `name:role,name:role` (account
/// names are DNS labels, so neither separator is in one), sorted by name
/// like the memberships query.
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
