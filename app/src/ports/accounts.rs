//! Accounts, users and sessions.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{
    AuditFilter, AuditLog, Me, Membership, PasswordChange, ResetRequest, SessionInfo, SignInForm,
    SignUpForm,
};

/// Who is asking: resolved once per request from the session cookie (or, for
/// the REST API, an access key) and stored in the request's extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The user and the account they act in.
    pub me: Me,
    /// What authenticated this request.
    pub credential: Credential,
    /// The user's accounts, where the credential's lookup read them with
    /// it: a browser session's does, since every page's account switcher
    /// lists them (a query of their own was a tenth of a page's cost).
    pub memberships: Option<Vec<Membership>>,
    /// What the credential may do: an access key's scope (every other
    /// credential is [`KeyScope::Full`] here, and narrowed by its own rule).
    pub scope: crate::models::KeyScope,
}

/// How a request proved who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A browser's session cookie (the session's id).
    Session(i64),
    /// An access key in `Authorization: Bearer` (the key's id).
    AccessKey(i64),
    /// A job's own token (`PADDLECLOUD_JOB_TOKEN`), held by its replicas: it
    /// acts as the job's submitter, for that job's metrics only.
    JobToken {
        /// The job's database id.
        job_id: i64,
        /// The job's name.
        job: String,
    },
    /// A serving instance's own token, held by its Kubernetes pods: it acts
    /// as the instance's launcher, to read the model it serves and no more.
    ServingToken {
        /// The instance's database id.
        serving_id: i64,
        /// The model it serves, `owner/name`.
        model: String,
    },
    /// A notebook's own key (`PADDLECLOUD_KEY` in its kernels): it acts as
    /// the notebook's owner, like an access key, until the notebook stops.
    NotebookKey {
        /// The notebook's database id.
        notebook_id: i64,
        /// The notebook's name.
        notebook: String,
    },
    /// The console's scheduler starting a pipeline run's node, as the
    /// run's submitter.
    Pipeline {
        /// The run's name.
        run: String,
    },
    /// The console's experiment controller starting a trial, as the
    /// experiment's creator.
    Experiment {
        /// The experiment's name.
        name: String,
    },
    /// The console's schedule controller starting a tick's run, as the
    /// schedule's creator.
    Schedule {
        /// The schedule's name.
        name: String,
    },
}

impl Principal {
    /// `me` acting through `credential`, their accounts not read yet.
    pub fn new(me: Me, credential: Credential) -> Self {
        Self {
            me,
            credential,
            memberships: None,
            scope: crate::models::KeyScope::Full,
        }
    }

    /// The same, narrowed to `scope` (an access key's).
    pub fn scoped(mut self, scope: crate::models::KeyScope) -> Self {
        self.scope = scope;
        self
    }

    /// Refuses a viewer anything that changes the account. A job's or a
    /// serving instance's own token acts for work already let in, so it
    /// passes.
    pub fn require_change(&self) -> Result<(), AppError> {
        match self.credential {
            Credential::Session(_)
            | Credential::AccessKey(_)
            | Credential::NotebookKey { .. }
            | Credential::Pipeline { .. }
            | Credential::Experiment { .. }
            | Credential::Schedule { .. } => self.me.role.require_change(),
            Credential::JobToken { .. } | Credential::ServingToken { .. } => Ok(()),
        }
    }

    /// Whether `session_id` is the session making this request.
    pub fn is_session(&self, session_id: i64) -> bool {
        self.credential == Credential::Session(session_id)
    }

    /// The job whose token this is, if a job's token made the request.
    pub fn job_scope(&self) -> Option<&str> {
        match &self.credential {
            Credential::JobToken { job, .. } => Some(job),
            _ => None,
        }
    }

    /// The notebook whose key made the request, if one did: jobs it
    /// submits say so.
    pub fn notebook_scope(&self) -> Option<&str> {
        match &self.credential {
            Credential::NotebookKey { notebook, .. } => Some(notebook),
            _ => None,
        }
    }

    /// The model (`owner/name`) a serving instance's token may read, if
    /// such a token made the request.
    pub fn serving_scope(&self) -> Option<&str> {
        match &self.credential {
            Credential::ServingToken { model, .. } => Some(model),
            _ => None,
        }
    }
}

/// The address a request came from (its TCP peer), put in the request's
/// extensions for rate limits; absent when there is no socket (tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAddress(pub String);

/// A freshly created session: the secret goes into the cookie once and is
/// stored only as a hash.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// The cookie value.
    pub token: String,
    /// How long the cookie lives, in seconds.
    pub max_age_secs: i64,
    /// Who it signs in.
    pub me: Me,
}

/// Accounts, users and sessions.
#[async_trait]
pub trait Accounts: Send + Sync {
    /// Creates an account with `form.email` as its owner. Validates the form.
    async fn create_account(&self, form: SignUpForm) -> Result<Me, AppError>;
    /// Whether sign-in waits for the user to confirm their address.
    fn confirmation_required(&self) -> bool;
    /// Checks a password; a wrong account, email or password all give the same error.
    async fn authenticate(&self, form: SignInForm) -> Result<Me, AppError>;
    /// Starts a session for `me`, remembering the client's User-Agent.
    async fn create_session(&self, me: &Me, user_agent: &str) -> Result<NewSession, AppError>;
    /// Signs in someone an identity provider vouches for (`who`): their
    /// user, found by the provider's id of them or by address, or made on
    /// their first sign-in (with no password), now a member of each of
    /// `memberships`' accounts (made if missing) with its role. The result
    /// is them in the first of those accounts.
    async fn sign_in_external(
        &self,
        who: &crate::models::sign_in::ExternalIdentity,
        memberships: &crate::models::sign_in::Memberships,
    ) -> Result<Me, AppError>;
    /// The principal behind a session token, if the session exists and has not expired.
    async fn resolve_session(&self, token: &str) -> Result<Option<Principal>, AppError>;
    /// Ends the session holding `token` (sign out).
    async fn end_session(&self, token: &str) -> Result<(), AppError>;
    /// The caller's own sessions, newest first.
    async fn sessions(&self, who: &Principal) -> Result<Vec<SessionInfo>, AppError>;
    /// Revokes one of the caller's own sessions; another user's is "not found".
    async fn revoke_session(&self, who: &Principal, session_id: i64) -> Result<(), AppError>;

    /// Changes the caller's password (the current one is required), ends
    /// every other session and every reset link, and (if asked) revokes the
    /// caller's access keys.
    async fn change_password(
        &self,
        who: &Principal,
        change: PasswordChange,
    ) -> Result<(), AppError>;
    /// Mails a single-use reset link if the account has a user with that
    /// email; answers the same either way. `client` (the caller's address)
    /// is rate-limited, as is the address asked about (silently).
    async fn request_password_reset(
        &self,
        request: ResetRequest,
        client: &str,
    ) -> Result<(), AppError>;
    /// Sets a new password with a reset link's token, once, within its
    /// lifetime; ends every session of the user.
    async fn reset_password(&self, token: &str, password: &str) -> Result<(), AppError>;
    /// A site admin mails a reset link to a user of any account.
    async fn send_reset_link(
        &self,
        who: &Principal,
        account: &str,
        email: &str,
    ) -> Result<(), AppError>;
    /// Confirms the address a confirmation link was mailed to.
    async fn confirm_email(&self, token: &str) -> Result<(), AppError>;
    /// Mails the caller a new confirmation link (rate-limited).
    async fn resend_confirmation(&self, who: &Principal) -> Result<(), AppError>;
    /// One page of the audit log of the caller's account (its owners) or
    /// of the account `account` names (site admins): the events `filter`
    /// asks for, newest first.
    async fn audit_log(
        &self,
        who: &Principal,
        account: Option<&str>,
        filter: &AuditFilter,
    ) -> Result<AuditLog, AppError>;
}
