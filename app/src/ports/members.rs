//! Who belongs to an account, in what role, and how people join.

use async_trait::async_trait;

use super::Principal;
use crate::error::AppError;
use crate::models::{
    InvitationView, InviteForm, Me, MemberList, Membership, PendingInvitation, Quota, Role,
};

/// Members, roles and invitations of accounts, and the accounts a user is in.
#[async_trait]
pub trait Members: Send + Sync {
    /// The caller's account's members; its owners also see open invitations.
    async fn members(&self, who: &Principal) -> Result<MemberList, AppError>;
    /// An owner mails an invitation to join the account with a role.
    /// Refused (409) for an address that is already a member.
    async fn invite(
        &self,
        who: &Principal,
        form: InviteForm,
    ) -> Result<PendingInvitation, AppError>;
    /// An owner withdraws an invitation not yet accepted.
    async fn cancel_invitation(&self, who: &Principal, id: i64) -> Result<(), AppError>;
    /// What an invitation's link offers, for its page; `who` is whoever is
    /// signed in (perhaps nobody).
    async fn invitation(
        &self,
        token: &str,
        who: Option<&Principal>,
    ) -> Result<InvitationView, AppError>;
    /// Accepts an invitation, once: the caller signed in as the invited
    /// address joins at once; otherwise `password` is the invitee's password
    /// (an existing user) or their new one (a new user, whose address the
    /// mailed link confirms). Answers who joined, acting in that account.
    async fn accept_invitation(
        &self,
        token: &str,
        password: Option<String>,
        who: Option<&Principal>,
    ) -> Result<Me, AppError>;
    /// An owner changes a member's role; the last owner stays an owner.
    async fn change_role(&self, who: &Principal, user_id: i64, role: Role) -> Result<(), AppError>;
    /// An owner sets what a member may hold at once inside the account's
    /// quota (`Quota::default()`: only the account's quota applies).
    async fn set_caps(&self, who: &Principal, user_id: i64, caps: Quota) -> Result<(), AppError>;
    /// An owner lets a member submit high-priority jobs, or stops them.
    async fn allow_high_priority(
        &self,
        who: &Principal,
        user_id: i64,
        allowed: bool,
    ) -> Result<(), AppError>;
    /// Whether `me` may submit high-priority jobs in their account: an
    /// owner, or a member an owner allowed.
    async fn may_use_high_priority(&self, me: &Me) -> Result<bool, AppError>;
    /// An owner removes a member, or a member leaves (`user_id` is their
    /// own); the last owner stays. Their sessions and keys in the account end.
    async fn remove_member(&self, who: &Principal, user_id: i64) -> Result<(), AppError>;
    /// The accounts the caller belongs to, by name.
    async fn memberships(&self, who: &Principal) -> Result<Vec<Membership>, AppError>;
    /// Moves the caller's session to another account they belong to;
    /// answers who they are there. Access keys stay in their account.
    async fn switch_account(&self, who: &Principal, account: &str) -> Result<Me, AppError>;
}
