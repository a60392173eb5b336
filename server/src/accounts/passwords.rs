//! Changing a password (the current one required) and resetting a
//! forgotten one through a mailed, single-use, short-lived link.

use app::error::AppError;
use app::models::{validate_password, Me, PasswordChange, ResetRequest, RESET_LINK_MINUTES};
use app::ports::{Credential, Principal};

use super::email::mail_with_link;
use super::{hash_password, verify_password, AccountMail, SqlAccounts};
use crate::storage::accounts::{self as store, LinkUse};
use crate::storage::db::Pool;
use crate::storage::throttle::Limit;
use crate::storage::user_links::{self, Purpose};
use crate::storage::{audit, users};

/// Reset requests from one client address: generous enough for an office
/// behind one address, small enough to stop a mail cannon.
const RESET_PER_CLIENT: Limit = Limit {
    kind: "reset-client",
    max: 20,
    window_ms: 3_600_000,
};
/// Reset mails to one address: beyond this, requests are dropped silently
/// (saying so would tell who has an account). Signing in is never limited
/// by these, so the real user is not locked out.
const RESET_PER_ADDRESS: Limit = Limit {
    kind: "reset-address",
    max: 3,
    window_ms: 3_600_000,
};

impl SqlAccounts {
    pub(super) async fn change(
        &self,
        who: &Principal,
        change: PasswordChange,
    ) -> Result<(), AppError> {
        validate_password(&change.password)?;
        let stored = store::password_hash(&self.pool, who.me.user_id)
            .await?
            .unwrap_or_default();
        if !verify_password(change.current, stored).await {
            return Err(AppError::invalid(
                "current",
                "Your current password is not right.",
            ));
        }
        let hash = hash_password(change.password).await?;
        // The session making the change stays; every other one ends.
        let keep = match who.credential {
            Credential::Session(id) => id,
            _ => 0,
        };
        let ended = store::change_password(
            &self.pool,
            &store::PasswordChange {
                user_id: who.me.user_id,
                account_id: who.me.account.id,
                actor: &who.me.email,
                hash: &hash,
                keep_session: keep,
                revoke_keys: change.revoke_keys,
            },
            "password.changed",
            |ended| {
                let mut detail = format!(
                    "{} changed their password; {} other sessions ended",
                    who.me.email, ended.sessions
                );
                if let Some(keys) = ended.keys {
                    detail.push_str(&format!("; {keys} access keys revoked"));
                }
                detail
            },
        )
        .await?
        .sessions;
        tracing::info!(user = %who.me.email, account = %who.me.account.name, ended, "password changed");
        Ok(())
    }

    pub(super) async fn request_reset(
        &self,
        request: ResetRequest,
        client: &str,
    ) -> Result<(), AppError> {
        if !RESET_PER_CLIENT.take(&self.pool, client).await? {
            return Err(AppError::TooMany {
                message: "Too many password resets were asked for from your network; try again \
                          within the hour."
                    .to_owned(),
            });
        }
        let account = request.account.trim().to_ascii_lowercase();
        let email = request.email.trim().to_lowercase();
        // Looked up and mailed apart from the answer, so that neither its
        // words nor its timing tell whether the address has an account.
        let (pool, mail) = (self.pool.clone(), self.mail.clone());
        tokio::spawn(async move {
            let address = format!("{account}/{email}");
            match RESET_PER_ADDRESS.take(&pool, &address).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::info!(%address, "password reset dropped: too many for this address");
                    return;
                }
                Err(_) => return,
            }
            match users::find(&pool, &account, &email).await {
                Ok(Some(me)) => {
                    if let Err(err) = send_reset(&pool, &mail, &me, None).await {
                        tracing::warn!(error = %err, %address, "the reset mail was not sent");
                    }
                }
                Ok(None) => tracing::info!(%address, "password reset for no such user"),
                Err(_) => {}
            }
        });
        Ok(())
    }

    pub(super) async fn reset(&self, token: &str, password: &str) -> Result<(), AppError> {
        // A bad new password must not use the link up.
        validate_password(password)?;
        let hash = hash_password(password.to_owned()).await?;
        let used = store::reset_password(&self.pool, token, &hash, "password.reset", |reset| {
            format!(
                "{} set a new password with a reset link; {} sessions ended",
                reset.email, reset.ended
            )
        })
        .await?;
        let store::Reset { email, ended } = match used {
            LinkUse::Used(reset) => reset,
            LinkUse::NoUser => return Err(AppError::not_found("User")),
            LinkUse::Invalid => {
                return Err(AppError::invalid(
                    "token",
                    format!(
                        "This reset link is not valid: links work once, for {RESET_LINK_MINUTES} \
                         minutes, and not after a password change. Ask for a new one."
                    ),
                ))
            }
        };
        tracing::info!(user = %email, ended, "password reset");
        Ok(())
    }

    pub(super) async fn admin_reset_link(
        &self,
        who: &Principal,
        account: &str,
        email: &str,
    ) -> Result<(), AppError> {
        if !users::is_site_admin(&self.pool, who.me.user_id).await? {
            return Err(AppError::forbidden(
                "Only a site admin sends reset links for others.",
            ));
        }
        let user = users::find(&self.pool, account, email)
            .await?
            .ok_or_else(|| AppError::not_found(format!("User “{email}” in account “{account}”")))?;
        send_reset(&self.pool, &self.mail, &user, Some(&who.me.email)).await?;
        audit::record(
            &self.pool,
            audit::Entry {
                account_id: user.account.id,
                actor: &who.me.email,
                action: "password.reset_link_sent",
                detail: &format!("a site admin mailed {} a reset link", user.email),
            },
        )
        .await
    }
}

/// Mails `user` a reset link (`by`: the site admin who sent it, if one did).
async fn send_reset(
    pool: &Pool,
    mail: &AccountMail,
    user: &Me,
    by: Option<&str>,
) -> Result<(), AppError> {
    let token = user_links::issue(pool, user.user_id, Purpose::Reset).await?;
    let link = format!("{}/reset?token={token}", mail.public_url);
    let asked = match by {
        Some(admin) => format!(
            "{admin}, a site admin, sent you a link to set a new password for {} in the PaddleCloud account “{}”.",
            user.email, user.account.name
        ),
        None => format!(
            "Someone asked to reset the password of {} in the PaddleCloud account “{}”.",
            user.email, user.account.name
        ),
    };
    let works = format!(
        "The link works once, for {RESET_LINK_MINUTES} minutes. Setting a new password signs you out everywhere."
    );
    mail.mailer
        .send(mail_with_link(
            &user.email,
            "Reset your PaddleCloud password",
            &[&asked, &works],
            "Set a new password",
            link,
            "If you did not ask for this, ignore this mail: your password stays as it is.",
        ))
        .await
}
