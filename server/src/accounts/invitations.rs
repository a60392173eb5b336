//! Invitations: an owner mails a link; whoever follows it joins the account
//! as the invited address, once, within [`INVITATION_DAYS`].

use app::error::AppError;
use app::models::{
    validate_password, InvitationView, InviteForm, Me, PendingInvitation, Role, INVITATION_DAYS,
};
use app::ports::Principal;

use super::email::mail_with_link;
use super::{hash_password, holder, Holder, SqlAccounts};
use crate::storage::accounts::User;
use crate::storage::invitations::{self as store, Accepted, Invitation, NewInvitation};
use crate::storage::throttle::Limit;
use crate::storage::{audit, users};
use crate::time::now_ms;

/// An account mails at most this many invitations an hour: enough for a
/// team's first day, too few to make the console a spam relay.
const INVITES_PER_HOUR: Limit = Limit {
    kind: "invite-account-hour",
    max: 50,
    window_ms: 3_600_000,
};

fn not_valid() -> AppError {
    AppError::invalid(
        "token",
        format!(
            "This invitation is not valid: invitations work once, for {INVITATION_DAYS} days, \
             and not after the owner withdrew them. Ask the account's owner for a new one."
        ),
    )
}

impl SqlAccounts {
    pub(super) async fn pending_invitations(
        &self,
        account_id: i64,
    ) -> Result<Vec<PendingInvitation>, AppError> {
        store::pending(&self.pool, account_id, now_ms()).await
    }

    pub(super) async fn send_invitation(
        &self,
        who: &Principal,
        form: InviteForm,
    ) -> Result<PendingInvitation, AppError> {
        who.me.role.require_owner("invite members")?;
        let (email, role) = form.validated()?;
        let account = &who.me.account;
        if users::find(&self.pool, &account.name, &email)
            .await?
            .is_some()
        {
            return Err(AppError::conflict(
                "email",
                format!("{email} is already a member of {}.", account.name),
            ));
        }
        if !INVITES_PER_HOUR
            .take(&self.pool, &account.id.to_string())
            .await?
        {
            return Err(AppError::TooMany {
                message: format!(
                    "{} invitations went out from this account in the last hour; try again later.",
                    INVITES_PER_HOUR.max
                ),
            });
        }
        let now = now_ms();
        let expires_at = now + INVITATION_DAYS * 86_400_000;
        let (id, token) = store::create(
            &self.pool,
            &NewInvitation {
                account_id: account.id,
                email: &email,
                role,
                invited_by: &who.me.email,
                created_at: now,
                expires_at,
            },
            audit::Entry {
                account_id: account.id,
                actor: &who.me.email,
                action: "member.invited",
                detail: &format!("{email} as {}", role.as_str()),
            },
        )
        .await?;
        let link = format!("{}/join?token={token}", self.mail.public_url);
        let what = format!(
            "{} invited you to the PaddleCloud account “{}” as {} ({}).",
            who.me.email,
            account.name,
            role.as_str(),
            match role {
                Role::Owner => "runs work and manages members and settings",
                Role::Member => "submits and watches jobs, uses datasets and models",
                Role::Viewer => "sees everything, changes nothing",
            }
        );
        let days = format!("The link works once, for {INVITATION_DAYS} days.");
        let sent = self
            .mail
            .mailer
            .send(mail_with_link(
                &email,
                &format!("Invitation to join {} on PaddleCloud", account.name),
                &[&what, &days],
                "Accept the invitation",
                link,
                "If you do not know why you got this, ignore it: nothing happens unless the link is followed.",
            ))
            .await;
        if let Err(err) = sent {
            // A link nobody received must not stay open.
            store::delete(&self.pool, id).await?;
            return Err(err);
        }
        tracing::info!(account = %account.name, invitee = %email, role = role.as_str(), "invitation sent");
        Ok(PendingInvitation {
            id,
            email,
            role,
            invited_by: who.me.email.clone(),
            expires_at,
        })
    }

    pub(super) async fn withdraw_invitation(
        &self,
        who: &Principal,
        id: i64,
    ) -> Result<(), AppError> {
        who.me.role.require_owner("withdraw invitations")?;
        store::withdraw(
            &self.pool,
            id,
            who.me.account.id,
            &who.me.email,
            "member.invitation_withdrawn",
        )
        .await?
        .ok_or_else(|| AppError::not_found("Invitation"))?;
        Ok(())
    }

    /// The open invitation behind `token`.
    async fn open_invitation(&self, token: &str) -> Result<Invitation, AppError> {
        if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(not_valid());
        }
        store::open(&self.pool, token, now_ms())
            .await?
            .ok_or_else(not_valid)
    }

    pub(super) async fn show_invitation(
        &self,
        token: &str,
        who: Option<&Principal>,
    ) -> Result<InvitationView, AppError> {
        let open = self.open_invitation(token).await?;
        let user_exists = !matches!(holder(&self.pool, &open.email, None).await?, Holder::Nobody);
        Ok(InvitationView {
            signed_in_as_invitee: who.is_some_and(|w| w.me.email == open.email),
            account: open.account,
            email: open.email,
            role: open.role,
            invited_by: open.invited_by,
            user_exists,
        })
    }

    pub(super) async fn accept(
        &self,
        token: &str,
        password: Option<String>,
        who: Option<&Principal>,
    ) -> Result<Me, AppError> {
        let password = password.unwrap_or_default();
        // Who joins is decided (and a new user's password hashed) before
        // the transaction that uses the invitation up, so that no lock is
        // held while a password is checked or hashed; should the address
        // get a user in between, it is decided again, for that user (users
        // are never deleted, so this happens at most once).
        loop {
            let open = self.open_invitation(token).await?;
            let hash;
            let user = match who.filter(|w| w.me.email == open.email) {
                Some(w) => User::Existing(w.me.user_id),
                None => match holder(&self.pool, &open.email, Some(&password)).await? {
                    Holder::Matching(id) => User::Existing(id),
                    Holder::Other(_) => {
                        return Err(AppError::invalid(
                            "password",
                            format!(
                                "That is not the password of {}. Forgot it? Reset it from the \
                                 sign-in page, then follow this link again.",
                                open.email
                            ),
                        ))
                    }
                    Holder::Nobody => {
                        validate_password(&password)?;
                        hash = hash_password(password.clone()).await?;
                        User::New {
                            password_hash: &hash,
                        }
                    }
                },
            };
            let detail = format!(
                "{} as {} (invited by {})",
                open.email,
                open.role.as_str(),
                open.invited_by
            );
            let entry = audit::Entry {
                account_id: open.account_id,
                actor: &open.email,
                action: "member.joined",
                detail: &detail,
            };
            let (user_id, joined) =
                match store::accept(&self.pool, token, user, now_ms(), entry).await? {
                    Accepted::Joined {
                        user_id,
                        invitation,
                    } => (user_id, invitation),
                    Accepted::AddressTaken => continue,
                    Accepted::NotOpen => return Err(not_valid()),
                    Accepted::AlreadyMember(invitation) => {
                        return Err(AppError::conflict(
                            "token",
                            format!("You are already a member of {}.", invitation.account),
                        ))
                    }
                };
            tracing::info!(account = %joined.account, member = %joined.email, role = joined.role.as_str(), "invitation accepted");
            return users::member(&self.pool, user_id, joined.account_id)
                .await?
                .ok_or(AppError::Internal);
        }
    }
}
