//! [`app::ports::Accounts`] on the SQL database: argon2id password hashes,
//! sessions stored as SHA-256 hashes of random tokens, and the mailed links
//! that confirm an address ([`email`]) or reset a password ([`passwords`]).
//! The rules and the words are here; the tables are the stores'
//! ([`crate::storage::accounts`], `sessions`, `members`, `invitations` and
//! `user_links`), which take what these decided.

mod email;
mod invitations;
pub mod ldap;
mod members;
pub mod oidc;
mod passwords;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use app::error::AppError;
use app::models::{
    namespace_for, AuditCursor, AuditFilter, AuditLog, Me, PasswordChange, ResetRequest, Role,
    SessionInfo, SignInForm, SignUpForm,
};
use app::ports::{Accounts, Credential, Mailer, NewSession, Principal};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use async_trait::async_trait;

use crate::storage::accounts::{self as store, NameTaken, NewAccount, User};
use crate::storage::db::Pool;
use crate::storage::tokens::random_token;
use crate::storage::{audit, sessions, users};
use crate::time::now_ms;

/// How long a session lives without being used.
pub const SESSION_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// A session's `last_seen_at` (and expiry) is refreshed at most this often,
/// so that reading pages does not write to the database on every request.
const TOUCH_EVERY_MS: i64 = 5 * 60 * 1000;

/// How the accounts reach their users by mail.
#[derive(Clone)]
pub struct AccountMail {
    /// Where mail goes.
    pub mailer: Arc<dyn Mailer>,
    /// The console's URL as a browser reaches it, at the start of links.
    pub public_url: String,
    /// Refuse sign-in until the address is confirmed
    /// (`--require-email-confirmation`); otherwise the account works at
    /// once and says "confirm your email" until it is.
    pub require_confirmation: bool,
}

impl AccountMail {
    /// Mail into the outbox folder of `data_dir`, links to nowhere: for
    /// what creates accounts without a console to link to (admin commands,
    /// benchmarks, tests).
    pub fn outbox_of(data_dir: &std::path::Path) -> anyhow::Result<Self> {
        let from = crate::mail::sender(crate::mail::DEFAULT_FROM)?;
        let outbox = crate::mail::Outbox::new(data_dir.join("outbox"), from)?;
        Ok(Self {
            mailer: Arc::new(outbox),
            public_url: String::new(),
            require_confirmation: false,
        })
    }
}

/// Accounts, users and sessions in the console's database.
pub struct SqlAccounts {
    pool: Pool,
    mail: AccountMail,
}

impl SqlAccounts {
    /// Wraps a migrated pool; mail goes as `mail` says.
    pub fn new(pool: Pool, mail: AccountMail) -> Arc<Self> {
        Arc::new(Self { pool, mail })
    }

    /// Creates an account whose owner's address is taken as confirmed (a
    /// site admin vouches for it: `paddlecloud admin create-account`),
    /// making the owner a site admin if `site_admin`. A `generated`
    /// password must be changed at first sign-in.
    pub async fn create_confirmed(
        &self,
        form: SignUpForm,
        site_admin: bool,
        generated: bool,
    ) -> Result<Me, AppError> {
        let (me, new_user) = self.insert_account(form, true, site_admin).await?;
        // A user who already exists keeps the password they chose.
        if generated && new_user {
            store::require_password_change(&self.pool, me.user_id).await?;
            return Ok(Me {
                must_change_password: true,
                ..me
            });
        }
        Ok(me)
    }

    /// The user with `email` that a sign-up joins its new account to: none
    /// (a new user), the one whose password this is, or (`vouched`, a site
    /// admin's command) the first.
    async fn existing_user(
        &self,
        email: &str,
        password: &str,
        vouched: bool,
    ) -> Result<Option<i64>, AppError> {
        let password = (!vouched).then_some(password);
        match holder(&self.pool, email, password).await? {
            Holder::Nobody => Ok(None),
            Holder::Matching(id) => Ok(Some(id)),
            Holder::Other(_) if !vouched => Err(AppError::conflict(
                "email",
                format!(
                    "{email} already has a PaddleCloud user: give its password to add this \
                     account to it (forgot it? reset it from the sign-in page)."
                ),
            )),
            Holder::Other(first) => Ok(Some(first)),
        }
    }

    /// The account and its owner, in one transaction; answers the owner and
    /// whether they are a new user. An address that already has a user
    /// adds the account to that user (one person, several accounts). The
    /// first user of an empty database is a site admin: someone must be
    /// able to set quotas.
    async fn insert_account(
        &self,
        form: SignUpForm,
        confirmed: bool,
        site_admin: bool,
    ) -> Result<(Me, bool), AppError> {
        let form = form.validated()?;
        let existing = self
            .existing_user(&form.email, &form.password, confirmed)
            .await?;
        let password_hash = match existing {
            Some(_) => String::new(),
            None => hash_password(form.password).await?,
        };
        let created = store::create(
            &self.pool,
            &NewAccount {
                name: &form.account,
                namespace: &namespace_for(&form.account),
                email: &form.email,
                owner: match existing {
                    Some(id) => User::Existing(id),
                    None => User::New {
                        password_hash: &password_hash,
                    },
                },
                confirmed,
                site_admin,
            },
        )
        .await?;
        let store::Created {
            user_id,
            account_id,
            site_admin,
        } = created.map_err(|NameTaken| {
            AppError::conflict(
                "account",
                format!(
                    "The account name “{}” is taken. Choose another.",
                    form.account
                ),
            )
        })?;
        tracing::info!(account = %form.account, user_id, site_admin, "account created");
        let me = users::member(&self.pool, user_id, account_id)
            .await?
            .ok_or(AppError::Internal)?;
        Ok((me, existing.is_none()))
    }
}

/// Who holds an address: one address is one user, except for users from
/// before one user could belong to several accounts.
pub(super) enum Holder {
    /// No user has it.
    Nobody,
    /// The user whose password was given.
    Matching(i64),
    /// Users have it, but the password (if one was given) is none of theirs:
    /// the first of them.
    Other(i64),
}

/// Which user holds `email`, checking `password` (if given) against each.
pub(super) async fn holder(
    pool: &Pool,
    email: &str,
    password: Option<&str>,
) -> Result<Holder, AppError> {
    let users = store::passwords_of(pool, email).await?;
    let Some(first) = users.first().map(|u| u.user_id) else {
        return Ok(Holder::Nobody);
    };
    if let Some(password) = password {
        for user in users {
            if verify_password(password.to_owned(), user.hash).await {
                return Ok(Holder::Matching(user.user_id));
            }
        }
    }
    Ok(Holder::Other(first))
}

async fn hash_password(password: String) -> Result<String, AppError> {
    tokio::task::spawn_blocking(move || {
        let mut salt = [0u8; 16];
        getrandom::fill(&mut salt).expect("the operating system's random source failed");
        let salt = SaltString::encode_b64(&salt)?;
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
    })
    .await
    .map_err(|err| {
        tracing::error!(error = %err, "password hashing task failed");
        AppError::Internal
    })?
    .map_err(|err| {
        tracing::error!(error = %err, "hashing a password");
        AppError::Internal
    })
}

/// Verifies off the async threads; a malformed stored hash counts as a mismatch.
async fn verify_password(password: String, stored: String) -> bool {
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&stored)
            .map(|hash| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &hash)
                    .is_ok()
            })
            .unwrap_or(false)
    })
    .await
    .unwrap_or(false)
}

/// A real hash of a random password: checked against when the user does not
/// exist, so a wrong account name takes as long as a wrong password.
async fn decoy_hash() -> String {
    static DECOY: OnceLock<String> = OnceLock::new();
    if let Some(hash) = DECOY.get() {
        return hash.clone();
    }
    let hash = hash_password(random_token()).await.unwrap_or_default();
    DECOY.get_or_init(|| hash).clone()
}

#[async_trait]
impl Accounts for SqlAccounts {
    async fn create_account(&self, form: SignUpForm) -> Result<Me, AppError> {
        let (me, new_user) = self.insert_account(form, false, false).await?;
        if !new_user && me.email_confirmed {
            return Ok(me);
        }
        // The account works without it; a mail server that is away must
        // not cost the user their sign-up (they can ask for another link).
        if let Err(err) = self.send_confirmation(&me).await {
            tracing::warn!(error = %err, user = %me.email, "the confirmation mail was not sent");
        }
        Ok(me)
    }

    fn confirmation_required(&self) -> bool {
        self.mail.require_confirmation
    }

    async fn sign_in_external(
        &self,
        who: &app::models::sign_in::ExternalIdentity,
        memberships: &app::models::sign_in::Memberships,
    ) -> Result<Me, AppError> {
        let (user_id, account_id) =
            crate::storage::identities::sign_in(&self.pool, who, memberships).await?;
        crate::storage::users::member(&self.pool, user_id, account_id)
            .await?
            .ok_or(AppError::Internal)
    }

    async fn authenticate(&self, form: SignInForm) -> Result<Me, AppError> {
        let form = form.normalized();
        let row = store::sign_in(&self.pool, &form.account, &form.email).await?;
        let stored = match &row {
            Some((_, hash)) => hash.clone(),
            None => decoy_hash().await,
        };
        let matches = verify_password(form.password, stored).await;
        let me = match row {
            Some((me, _)) if matches => me,
            _ => return Err(AppError::BadCredentials),
        };
        if self.mail.require_confirmation && !me.email_confirmed {
            // The password was right, so saying why is no leak; a fresh link
            // saves a trip to "resend".
            let sent = self.send_another_confirmation(&me).await.is_ok();
            return Err(AppError::forbidden(format!(
                "Confirm your email address first: follow the link we {} to {}.",
                if sent { "just sent" } else { "sent" },
                me.email
            )));
        }
        Ok(me)
    }

    async fn create_session(&self, me: &Me, user_agent: &str) -> Result<NewSession, AppError> {
        let token = sessions::create(
            &self.pool,
            me.user_id,
            me.account.id,
            user_agent,
            SESSION_TTL.as_millis() as i64,
        )
        .await?;
        Ok(NewSession {
            token,
            max_age_secs: SESSION_TTL.as_secs() as i64,
            me: me.clone(),
        })
    }

    async fn resolve_session(&self, token: &str) -> Result<Option<Principal>, AppError> {
        if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let now = now_ms();
        let Some(session) = sessions::find(&self.pool, token, now).await? else {
            return Ok(None);
        };
        if now - session.last_seen_at > TOUCH_EVERY_MS {
            // Sliding expiry: a session in use does not run out. Best
            // effort: the only write on a page's way in, it must not turn a
            // busy database (a burst of metric writes on SQLite) into an
            // error page; the next request touches it again.
            let expires_at = now + SESSION_TTL.as_millis() as i64;
            if let Err(err) = sessions::touch(&self.pool, session.id, now, expires_at).await {
                tracing::warn!(error = %err, "extending a session's expiry; kept as it was");
            }
        }
        Ok(Some(Principal {
            memberships: Some(session.memberships),
            ..Principal::new(session.me, Credential::Session(session.id))
        }))
    }

    async fn end_session(&self, token: &str) -> Result<(), AppError> {
        sessions::end(&self.pool, token).await
    }

    async fn sessions(&self, who: &Principal) -> Result<Vec<SessionInfo>, AppError> {
        let stored = sessions::of_user(&self.pool, who.me.user_id, now_ms()).await?;
        Ok(stored
            .into_iter()
            .map(|s| SessionInfo {
                current: who.is_session(s.id),
                id: s.id,
                created_at: s.created_at,
                last_seen_at: s.last_seen_at,
                expires_at: s.expires_at,
                user_agent: s.user_agent,
            })
            .collect())
    }

    async fn revoke_session(&self, who: &Principal, session_id: i64) -> Result<(), AppError> {
        if !sessions::revoke(&self.pool, session_id, who.me.user_id).await? {
            return Err(AppError::not_found("Session"));
        }
        Ok(())
    }

    async fn change_password(
        &self,
        who: &Principal,
        change: PasswordChange,
    ) -> Result<(), AppError> {
        self.change(who, change).await
    }

    async fn request_password_reset(
        &self,
        request: ResetRequest,
        client: &str,
    ) -> Result<(), AppError> {
        self.request_reset(request, client).await
    }

    async fn reset_password(&self, token: &str, password: &str) -> Result<(), AppError> {
        self.reset(token, password).await
    }

    async fn send_reset_link(
        &self,
        who: &Principal,
        account: &str,
        email: &str,
    ) -> Result<(), AppError> {
        self.admin_reset_link(who, account, email).await
    }

    async fn confirm_email(&self, token: &str) -> Result<(), AppError> {
        self.confirm(token).await
    }

    async fn resend_confirmation(&self, who: &Principal) -> Result<(), AppError> {
        self.resend(who).await
    }

    async fn audit_log(
        &self,
        who: &Principal,
        account: Option<&str>,
        filter: &AuditFilter,
    ) -> Result<AuditLog, AppError> {
        let admin = users::is_site_admin(&self.pool, who.me.user_id).await?;
        let own = account.is_none_or(|a| a == who.me.account.name);
        let target = if own {
            if who.me.role != Role::Owner && !admin {
                return Err(AppError::forbidden(
                    "Only the account's owners and site admins read its audit log.",
                ));
            }
            who.me.account.clone()
        } else if admin {
            let name = account.unwrap_or_default();
            users::account_named(&self.pool, name)
                .await?
                .ok_or_else(|| AppError::not_found(format!("Account “{name}”")))?
        } else {
            // Another account is not there, as far as its outsiders know.
            return Err(AppError::not_found(format!(
                "Account “{}”",
                account.unwrap_or_default()
            )));
        };
        let (events, older, newer) = audit::page(&self.pool, target.id, filter).await?;
        Ok(AuditLog {
            events,
            older: older.map(AuditCursor::to_param),
            newer: newer.map(AuditCursor::to_param),
            actions: audit::actions(&self.pool, target.id).await?,
            account: target.name,
        })
    }
}
