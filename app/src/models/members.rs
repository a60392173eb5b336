//! An account's members and invitations, and the accounts a user belongs to.

use serde::{Deserialize, Serialize};

use super::account::{validate_mail_address, Role};
use super::quota::Quota;
use crate::error::AppError;

/// A member of an account, as listed on the Account page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Member {
    /// Database id of the user.
    pub user_id: i64,
    /// Their email.
    pub email: String,
    /// Their role.
    pub role: Role,
    /// When they joined, Unix milliseconds.
    pub created_at: i64,
    /// What they may hold at once inside the account's quota (no limit
    /// where unset; `max_jobs` counts their jobs).
    #[serde(default)]
    pub caps: Quota,
    /// Whether they may submit high-priority jobs (owners always may).
    #[serde(default)]
    pub high_priority: bool,
}

/// What an owner's "high priority" switch for a member sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PriorityAllowance {
    /// Whether the member may submit high-priority jobs.
    pub high: bool,
}

/// How long an invitation's link works.
pub const INVITATION_DAYS: i64 = 7;

/// What an owner's "Invite" form sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct InviteForm {
    /// Where the invitation goes; the invitee joins as this address (one
    /// mail takes: see `validate_mail_address`).
    #[cfg_attr(
        feature = "ssr",
        schema(
            format = Email,
            pattern = r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$",
            max_length = 254
        )
    )]
    pub email: String,
    /// `owner`, `member` or `viewer`.
    #[cfg_attr(feature = "ssr", schema(value_type = crate::models::Role))]
    pub role: String,
}

impl InviteForm {
    /// The normalised address and the role, or the first bad field.
    pub fn validated(&self) -> Result<(String, Role), AppError> {
        let email = validate_mail_address(&self.email)?;
        Ok((email, parse_role(&self.role)?))
    }
}

/// Reads a role a form or a request names, or says which words are roles.
pub fn parse_role(raw: &str) -> Result<Role, AppError> {
    Role::parse(raw.trim())
        .ok_or_else(|| AppError::invalid("role", "Role must be one of owner, member or viewer."))
}

/// An invitation not yet accepted, as its account's owners see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PendingInvitation {
    /// Database id, to cancel it.
    pub id: i64,
    /// Where it was mailed.
    pub email: String,
    /// The role it gives.
    pub role: Role,
    /// Who sent it.
    pub invited_by: String,
    /// When it stops working, Unix milliseconds.
    pub expires_at: i64,
}

/// The Account page's members section: who is in, who is invited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct MemberList {
    /// Members, oldest first.
    pub members: Vec<Member>,
    /// Invitations still open (owners only; empty for the others).
    pub invitations: Vec<PendingInvitation>,
}

/// What the link of an invitation shows before it is accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvitationView {
    /// The account it joins.
    pub account: String,
    /// The invited address.
    pub email: String,
    /// The role it gives.
    pub role: Role,
    /// Who sent it.
    pub invited_by: String,
    /// Whether a user with this address exists (they give their password;
    /// otherwise they choose one).
    pub user_exists: bool,
    /// Whether the caller is signed in as the invited address (one click).
    pub signed_in_as_invitee: bool,
}

/// One account the user belongs to, for the header's switcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Membership {
    /// The account's name.
    pub account: String,
    /// The user's role there.
    pub role: Role,
}

/// What an owner sends to change a member's role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RoleChange {
    /// `owner`, `member` or `viewer`.
    #[cfg_attr(feature = "ssr", schema(value_type = crate::models::Role))]
    pub role: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invitation_names_its_bad_field() {
        let bad_role = InviteForm {
            email: "ann@example.com".into(),
            role: "admin".into(),
        };
        assert_eq!(bad_role.validated().unwrap_err().field(), Some("role"));
        let bad_email = InviteForm {
            email: "ann".into(),
            role: "viewer".into(),
        };
        assert_eq!(bad_email.validated().unwrap_err().field(), Some("email"));
        let ok = InviteForm {
            email: " Ann@Example.com ".into(),
            role: "viewer".into(),
        };
        assert_eq!(
            ok.validated().unwrap(),
            ("ann@example.com".to_owned(), Role::Viewer)
        );
    }

    #[test]
    fn only_viewers_are_refused_changes() {
        assert!(Role::Owner.require_change().is_ok());
        assert!(Role::Member.require_change().is_ok());
        let err = Role::Viewer.require_change().unwrap_err();
        assert!(matches!(err, AppError::Forbidden { .. }), "{err:?}");
        assert!(Role::Member.require_owner("invite members").is_err());
    }
}
