//! Invitations: an owner mails a link; whoever follows it joins the account
//! as the invited address, once, within [`INVITATION_DAYS`].

use app::error::AppError;
use app::models::{
    validate_password, InvitationView, InviteForm, Me, PendingInvitation, Role, INVITATION_DAYS,
};
use app::ports::Principal;

use super::email::mail_with_link;
use super::members::lock_account;
use super::{hash_password, holder, is_unique_violation, Holder, SqlAccounts};
use crate::storage::throttle::Limit;
use crate::storage::tokens::{random_token, token_hash};
use crate::storage::{audit, internal, users};
use crate::time::now_ms;

/// An account mails at most this many invitations an hour: enough for a
/// team's first day, too few to make the console a spam relay.
const INVITES_PER_HOUR: Limit = Limit {
    kind: "invite-account-hour",
    max: 50,
    window_ms: 3_600_000,
};

/// What the link of an open invitation leads to.
struct Open {
    account_id: i64,
    account: String,
    email: String,
    role: Role,
    invited_by: String,
}

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
        let rows: Vec<(i64, String, String, String, i64)> = sqlx::query_as(
            "SELECT id, email, role, invited_by, expires_at FROM invitations \
             WHERE account_id = $1 AND accepted_at IS NULL AND expires_at > $2 \
             ORDER BY created_at, id",
        )
        .bind(account_id)
        .bind(now_ms())
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list invitations"))?;
        Ok(rows
            .into_iter()
            .map(
                |(id, email, role, invited_by, expires_at)| PendingInvitation {
                    id,
                    email,
                    role: Role::parse(&role).unwrap_or(Role::Viewer),
                    invited_by,
                    expires_at,
                },
            )
            .collect())
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
        let token = random_token();
        let now = now_ms();
        let expires_at = now + INVITATION_DAYS * 86_400_000;
        let mut tx = self.pool.begin().await.map_err(internal("invite"))?;
        // Only the newest invitation of an address works.
        sqlx::query(
            "DELETE FROM invitations WHERE account_id = $1 AND email = $2 AND accepted_at IS NULL",
        )
        .bind(account.id)
        .bind(&email)
        .execute(&mut *tx)
        .await
        .map_err(internal("invite"))?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO invitations (token_hash, account_id, email, role, invited_by, \
             created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(token_hash(&token))
        .bind(account.id)
        .bind(&email)
        .bind(role.as_str())
        .bind(&who.me.email)
        .bind(now)
        .bind(expires_at)
        .fetch_one(&mut *tx)
        .await
        .map_err(internal("invite"))?;
        audit::record(
            &mut *tx,
            audit::Entry {
                account_id: account.id,
                actor: &who.me.email,
                action: "member.invited",
                detail: &format!("{email} as {}", role.as_str()),
            },
        )
        .await?;
        tx.commit().await.map_err(internal("invite"))?;
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
            sqlx::query("DELETE FROM invitations WHERE id = $1")
                .bind(id)
                .execute(&self.pool)
                .await
                .map_err(internal("withdraw an unsent invitation"))?;
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
        let mut tx = self.pool.begin().await.map_err(internal("withdraw"))?;
        let gone: Option<(String,)> = sqlx::query_as(
            "DELETE FROM invitations WHERE id = $1 AND account_id = $2 AND accepted_at IS NULL \
             RETURNING email",
        )
        .bind(id)
        .bind(who.me.account.id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(internal("withdraw"))?;
        let (email,) = gone.ok_or_else(|| AppError::not_found("Invitation"))?;
        audit::record(
            &mut *tx,
            audit::Entry {
                account_id: who.me.account.id,
                actor: &who.me.email,
                action: "member.invitation_withdrawn",
                detail: &email,
            },
        )
        .await?;
        tx.commit().await.map_err(internal("withdraw"))?;
        Ok(())
    }

    /// The open invitation behind `token`, used up if `take` (one
    /// statement, so two uses at once cannot both win; in `accept` it is
    /// also the transaction's first write).
    async fn open_invitation<'e, E>(&self, db: E, token: &str, take: bool) -> Result<Open, AppError>
    where
        E: sqlx::Executor<'e, Database = sqlx::Any>,
    {
        if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(not_valid());
        }
        let sql = if take {
            "UPDATE invitations SET accepted_at = $2 WHERE token_hash = $1 \
             AND accepted_at IS NULL AND expires_at > $2 \
             RETURNING account_id, email, role, invited_by, \
             (SELECT name FROM accounts a WHERE a.id = invitations.account_id)"
        } else {
            "SELECT account_id, email, role, invited_by, \
             (SELECT name FROM accounts a WHERE a.id = invitations.account_id) \
             FROM invitations WHERE token_hash = $1 AND accepted_at IS NULL AND expires_at > $2"
        };
        let row: Option<(i64, String, String, String, String)> = sqlx::query_as(sql)
            .bind(token_hash(token))
            .bind(now_ms())
            .fetch_optional(db)
            .await
            .map_err(internal("read an invitation"))?;
        let (account_id, email, role, invited_by, account) = row.ok_or_else(not_valid)?;
        Ok(Open {
            account_id,
            account,
            email,
            role: Role::parse(&role).unwrap_or(Role::Viewer),
            invited_by,
        })
    }

    pub(super) async fn show_invitation(
        &self,
        token: &str,
        who: Option<&Principal>,
    ) -> Result<InvitationView, AppError> {
        let open = self.open_invitation(&self.pool, token, false).await?;
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
        let now = now_ms();
        let mut tx = self.pool.begin().await.map_err(internal("accept"))?;
        // Anything refused below rolls the use back.
        let open = self.open_invitation(&mut *tx, token, true).await?;
        lock_account(&mut tx, open.account_id).await?;
        let user_id = match who.filter(|w| w.me.email == open.email) {
            Some(w) => w.me.user_id,
            None => {
                let password = password.unwrap_or_default();
                match holder(&mut *tx, &open.email, Some(&password)).await? {
                    Holder::Matching(id) => id,
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
                        let hash = hash_password(password).await?;
                        // The mailed link proves the address.
                        sqlx::query_scalar(
                            "INSERT INTO users (account_id, email, password_hash, role, \
                             created_at, site_admin, email_confirmed_at) \
                             VALUES ($1, $2, $3, $4, $5, 0, $5) RETURNING id",
                        )
                        .bind(open.account_id)
                        .bind(&open.email)
                        .bind(&hash)
                        .bind(Role::Member.as_str())
                        .bind(now)
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(internal("create the invited user"))?
                    }
                }
            }
        };
        let joined = sqlx::query(
            "INSERT INTO memberships (account_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(open.account_id)
        .bind(user_id)
        .bind(open.role.as_str())
        .bind(now)
        .execute(&mut *tx)
        .await;
        match joined {
            Ok(_) => {}
            Err(err) if is_unique_violation(&err) => {
                return Err(AppError::conflict(
                    "token",
                    format!("You are already a member of {}.", open.account),
                ))
            }
            Err(err) => return Err(internal("join")(err)),
        }
        audit::record(
            &mut *tx,
            audit::Entry {
                account_id: open.account_id,
                actor: &open.email,
                action: "member.joined",
                detail: &format!(
                    "{} as {} (invited by {})",
                    open.email,
                    open.role.as_str(),
                    open.invited_by
                ),
            },
        )
        .await?;
        tx.commit().await.map_err(internal("accept"))?;
        tracing::info!(account = %open.account, member = %open.email, role = open.role.as_str(), "invitation accepted");
        users::member(&self.pool, user_id, open.account_id)
            .await?
            .ok_or(AppError::Internal)
    }
}
