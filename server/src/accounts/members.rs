//! [`Members`]: who is in an account and in what role; the rules (only
//! owners change members, an account keeps an owner) and the words, over
//! [`crate::storage::members`]. Invitations are in [`super::invitations`].

use app::error::AppError;
use app::models::{
    InvitationView, InviteForm, Me, Member, MemberList, Membership, PendingInvitation, Quota,
    QuotaForm, Role,
};
use app::ports::{Credential, Members, Principal};
use async_trait::async_trait;

use super::SqlAccounts;
use crate::quota::{to_i64, to_u64};
use crate::storage::members::{self as store, Caps, Change, Note};
use crate::storage::{sessions, users};

/// What a change to a member came to, as the caller sees it: an error for
/// a user who is not a member or an account left without an owner (`why`:
/// what the last owner cannot do), `None` when nothing was to change.
fn settled(change: Change, why: &str) -> Result<Option<store::Member>, AppError> {
    match change {
        Change::NotMember => Err(AppError::not_found("Member")),
        Change::LastOwner(member) => Err(AppError::conflict(
            "member",
            format!(
                "{} is the account's last owner and cannot {why}: make another member an \
                 owner first.",
                member.email
            ),
        )),
        Change::Unchanged => Ok(None),
        Change::Done(member) => Ok(Some(member)),
    }
}

#[async_trait]
impl Members for SqlAccounts {
    async fn members(&self, who: &Principal) -> Result<MemberList, AppError> {
        let members = store::list(&self.pool, who.me.account.id)
            .await?
            .into_iter()
            .map(|m| Member {
                user_id: m.user_id,
                email: m.email,
                role: m.role,
                created_at: m.created_at,
                caps: Quota {
                    cpu_millis: to_u64(m.caps.cpu_millis),
                    memory_bytes: to_u64(m.caps.memory_bytes),
                    gpu: to_u64(m.caps.gpus),
                    max_jobs: to_u64(m.caps.jobs),
                },
                high_priority: m.high_priority || m.role == Role::Owner,
            })
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
        let change = store::change_role(
            &self.pool,
            who.me.account.id,
            user_id,
            role,
            Note {
                actor: &who.me.email,
                action: "member.role_changed",
                detail: |before: &store::Member| {
                    format!(
                        "{}: {} → {}",
                        before.email,
                        before.role.as_str(),
                        role.as_str()
                    )
                },
            },
        )
        .await?;
        if let Some(member) = settled(change, "stop being one")? {
            tracing::info!(account = %who.me.account.name, member = %member.email, role = role.as_str(), "role changed");
        }
        Ok(())
    }

    async fn set_caps(&self, who: &Principal, user_id: i64, caps: Quota) -> Result<(), AppError> {
        who.me.role.require_owner("set members' caps")?;
        let stored = Caps {
            cpu_millis: to_i64(caps.cpu_millis),
            memory_bytes: to_i64(caps.memory_bytes),
            gpus: to_i64(caps.gpu),
            jobs: to_i64(caps.max_jobs),
        };
        let change = store::set_caps(
            &self.pool,
            who.me.account.id,
            user_id,
            &stored,
            Note {
                actor: &who.me.email,
                action: "member.caps_set",
                detail: |member: &store::Member| {
                    format!("{}: {}", member.email, QuotaForm::of(&caps).words())
                },
            },
        )
        .await?;
        settled(change, "have caps set")?;
        Ok(())
    }

    async fn allow_high_priority(
        &self,
        who: &Principal,
        user_id: i64,
        allowed: bool,
    ) -> Result<(), AppError> {
        who.me.role.require_owner("let members use high priority")?;
        let change = store::set_high_priority(
            &self.pool,
            who.me.account.id,
            user_id,
            allowed,
            Note {
                actor: &who.me.email,
                action: "member.high_priority_set",
                detail: |member: &store::Member| {
                    let may = if allowed { "may" } else { "may not" };
                    format!("{}: {may} submit high-priority jobs", member.email)
                },
            },
        )
        .await?;
        settled(change, "be allowed high priority")?;
        Ok(())
    }

    async fn may_use_high_priority(&self, me: &Me) -> Result<bool, AppError> {
        store::may_use_high_priority(&self.pool, me.account.id, me.user_id).await
    }

    async fn remove_member(&self, who: &Principal, user_id: i64) -> Result<(), AppError> {
        let leaving = user_id == who.me.user_id;
        if !leaving {
            who.me.role.require_owner("remove members")?;
        }
        let change = store::remove(
            &self.pool,
            who.me.account.id,
            user_id,
            Note {
                actor: &who.me.email,
                action: if leaving {
                    "member.left"
                } else {
                    "member.removed"
                },
                detail: |member: &store::Member| {
                    format!("{} ({})", member.email, member.role.as_str())
                },
            },
        )
        .await?;
        let why = if leaving { "leave" } else { "be removed" };
        if let Some(member) = settled(change, why)? {
            tracing::info!(account = %who.me.account.name, member = %member.email, leaving, "member removed");
        }
        Ok(())
    }

    async fn memberships(&self, who: &Principal) -> Result<Vec<Membership>, AppError> {
        if let Some(known) = &who.memberships {
            return Ok(known.clone());
        }
        store::of_user(&self.pool, who.me.user_id).await
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
        sessions::switch_account(&self.pool, session_id, who.me.user_id, target.id).await?;
        Ok(me)
    }
}
