//! Accounts (tenants), their users and sign-in sessions.

use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// Shortest password accepted.
pub const MIN_PASSWORD_LEN: usize = 8;
/// Longest password accepted; argon2 is fed the whole string, so bound it.
pub const MAX_PASSWORD_LEN: usize = 1024;
/// Longest account name: `pc-` + name must stay a valid 63-character namespace.
pub const MAX_ACCOUNT_NAME_LEN: usize = 40;
/// Prefix of every namespace the console manages, so an account can never be
/// called `kube-system` on the cluster.
pub const NAMESPACE_PREFIX: &str = "pc-";

/// What a user may do in an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Role {
    /// Created the account; manages members, quota and settings.
    Owner,
    /// Runs and watches work in the account: submits and stops jobs (its
    /// own and others'), uses datasets and models, serves them.
    Member,
    /// Reads everything in the account and changes nothing.
    Viewer,
}

impl Role {
    /// The word stored in the database and shown in the UI.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Member => "member",
            Role::Viewer => "viewer",
        }
    }

    /// Reads the stored word back.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "owner" => Some(Role::Owner),
            "member" => Some(Role::Member),
            "viewer" => Some(Role::Viewer),
            _ => None,
        }
    }

    /// Every role, most powerful first (the order of the role pickers).
    pub const ALL: [Role; 3] = [Role::Owner, Role::Member, Role::Viewer];

    /// Whether this role may change things in the account (submit, stop,
    /// upload, launch), not only look.
    pub fn may_change(self) -> bool {
        self != Role::Viewer
    }

    /// Refuses a viewer, with what to do about it.
    pub fn require_change(self) -> Result<(), AppError> {
        if self.may_change() {
            Ok(())
        } else {
            Err(AppError::forbidden(
                "Viewers can look but not change anything in this account; ask an owner for the member role.",
            ))
        }
    }

    /// Refuses anyone but an owner, naming what needs one.
    pub fn require_owner(self, what: &str) -> Result<(), AppError> {
        if self == Role::Owner {
            Ok(())
        } else {
            Err(AppError::forbidden(format!(
                "Only the account's owners {what}."
            )))
        }
    }
}

/// A tenant: owns one cluster namespace, has users.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Account {
    /// Database id.
    pub id: i64,
    /// Unique name users sign in with (a DNS-1123 label).
    pub name: String,
    /// The cluster namespace this account owns.
    pub namespace: String,
    /// Creation time, Unix milliseconds.
    pub created_at: i64,
}

/// The signed-in user as the UI sees them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Me {
    /// Database id of the user.
    pub user_id: i64,
    /// The user's email, lower case.
    pub email: String,
    /// Their role in `account`.
    pub role: Role,
    /// The account they are signed in to.
    pub account: Account,
    /// Whether they followed the link mailed to confirm their address.
    #[serde(default)]
    pub email_confirmed: bool,
    /// Created with a generated password: pages ask for a new one first.
    #[serde(default)]
    pub must_change_password: bool,
    /// Sets every account's quota and sees every account.
    #[serde(default)]
    pub site_admin: bool,
}

/// One signed-in browser or client of the current user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Database id, used to revoke it.
    pub id: i64,
    /// When it signed in, Unix milliseconds.
    pub created_at: i64,
    /// When it was last used, Unix milliseconds (updated at most every few minutes).
    pub last_seen_at: i64,
    /// When it stops working unless used, Unix milliseconds.
    pub expires_at: i64,
    /// The browser's User-Agent at sign-in, to tell sessions apart.
    pub user_agent: String,
    /// Whether this is the session making the request.
    pub current: bool,
}

/// What the sign-up form sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignUpForm {
    /// The new account's name.
    pub account: String,
    /// The owner's email.
    pub email: String,
    /// The owner's password.
    pub password: String,
}

/// What the sign-in form sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignInForm {
    /// Account name.
    pub account: String,
    /// User email within that account.
    pub email: String,
    /// Password.
    pub password: String,
}

/// What the Account page's password form sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PasswordChange {
    /// The password now (a stolen session alone cannot change it).
    pub current: String,
    /// The new password.
    #[cfg_attr(feature = "ssr", schema(min_length = 8, max_length = 1024))]
    pub password: String,
    /// Also revoke every access key of the user.
    #[serde(default)]
    pub revoke_keys: bool,
}

/// What "Forgot password?" sends (and what a site admin sends a reset
/// link for).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ResetRequest {
    /// Account name.
    pub account: String,
    /// The user's email in that account: an address mail takes (see
    /// [`validate_mail_address`]).
    #[cfg_attr(
        feature = "ssr",
        schema(
            format = Email,
            pattern = r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$",
            max_length = 254
        )
    )]
    pub email: String,
}

/// A mailed link's token, and a new password where the link sets one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct LinkToken {
    /// The `token` of the link.
    pub token: String,
    /// The new password (reset links only).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(min_length = 8, max_length = 1024))]
    pub password: Option<String>,
}

/// How long a password-reset link works.
pub const RESET_LINK_MINUTES: i64 = 30;
/// How long a confirmation link works.
pub const CONFIRM_LINK_DAYS: i64 = 7;

impl SignUpForm {
    /// Checks every field, normalising name and email; the first bad field wins.
    pub fn validated(self) -> Result<Self, AppError> {
        let account = validate_account_name(&self.account)?;
        let email = validate_email(&self.email)?;
        validate_password(&self.password)?;
        Ok(Self {
            account,
            email,
            password: self.password,
        })
    }
}

impl SignInForm {
    /// Normalises name and email the way sign-up stored them.
    pub fn normalized(self) -> Self {
        Self {
            account: self.account.trim().to_ascii_lowercase(),
            email: self.email.trim().to_lowercase(),
            password: self.password,
        }
    }
}

/// Account names become namespaces, so they follow DNS-1123 label rules.
pub fn validate_account_name(raw: &str) -> Result<String, AppError> {
    let name = raw.trim().to_ascii_lowercase();
    let bad = |msg: &str| Err(AppError::invalid("account", msg));
    if name.len() < 3 {
        return bad("Account name must be at least 3 characters.");
    }
    if name.len() > MAX_ACCOUNT_NAME_LEN {
        return bad("Account name must be at most 40 characters.");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return bad("Account name may contain only letters, digits and '-'.");
    }
    if !name.as_bytes()[0].is_ascii_lowercase() {
        return bad("Account name must start with a letter.");
    }
    if name.ends_with('-') {
        return bad("Account name must not end with '-'.");
    }
    Ok(name)
}

/// A light check: one `@`, something on each side, a dot in the domain.
pub fn validate_email(raw: &str) -> Result<String, AppError> {
    let email = raw.trim().to_lowercase();
    let ok = email.len() <= 254
        && !email.chars().any(char::is_whitespace)
        && match email.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty()
                    && !domain.contains('@')
                    && domain.contains('.')
                    && !domain.starts_with('.')
                    && !domain.ends_with('.')
            }
            None => false,
        };
    if ok {
        Ok(email)
    } else {
        Err(AppError::invalid(
            "email",
            "Enter an email address like name@example.com.",
        ))
    }
}

/// An address mail takes, the one the console sends links to: what the
/// OpenAPI document states for an address (`format: email`, at most 254
/// characters, [`MAIL_ADDRESS_PATTERN`]). Surrounding spaces are trimmed and
/// the address is lower-cased (as [`validate_email`]); then an ASCII
/// `local@domain` (RFC 5321): the local part 1–64 characters of dot-separated
/// atoms (letters, digits, ``!#$%&'*+/=?^_`{|}~-``), the domain two or more
/// labels of letters, digits and inner hyphens, each at most 63, 253 in all.
pub fn validate_mail_address(raw: &str) -> Result<String, AppError> {
    let email = validate_email(raw)?;
    let atext = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c);
    let label = |l: &str| {
        (1..=63).contains(&l.len())
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let ok = email.split_once('@').is_some_and(|(local, domain)| {
        local.len() <= 64
            && local
                .split('.')
                .all(|atom| !atom.is_empty() && atom.chars().all(atext))
            && domain.len() <= 253
            && domain.split('.').count() >= 2
            && domain.split('.').all(label)
    });
    if ok {
        Ok(email)
    } else {
        Err(AppError::invalid(
            "email",
            "Enter an address mail takes, like name@example.com (letters, digits and . _ + - in ASCII).",
        ))
    }
}

/// [`validate_mail_address`] as a pattern, for the OpenAPI document (the
/// lengths are its `maxLength` and `format: email`'s).
pub const MAIL_ADDRESS_PATTERN: &str = r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$";

/// Length bounds only: long passphrases beat composition rules.
pub fn validate_password(password: &str) -> Result<(), AppError> {
    let len = password.chars().count();
    if len < MIN_PASSWORD_LEN {
        return Err(AppError::invalid(
            "password",
            format!("Password must be at least {MIN_PASSWORD_LEN} characters."),
        ));
    }
    if len > MAX_PASSWORD_LEN {
        return Err(AppError::invalid(
            "password",
            format!("Password must be at most {MAX_PASSWORD_LEN} characters."),
        ));
    }
    Ok(())
}

/// The namespace an account owns on the cluster.
pub fn namespace_for(account_name: &str) -> String {
    format!("{NAMESPACE_PREFIX}{account_name}")
}

/// Where to go after signing in: only a path on this site, never another host.
pub fn safe_next(next: Option<&str>) -> &str {
    match next {
        Some(p) if p.starts_with('/') && !p.starts_with("//") && !p.contains('\\') => p,
        _ => "/jobs",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(r: Result<String, AppError>) -> Option<String> {
        r.err().and_then(|e| e.field().map(str::to_owned))
    }

    #[test]
    fn account_names_are_lowercased_dns_labels() {
        assert_eq!(
            validate_account_name(" Vision-Team ").unwrap(),
            "vision-team"
        );
        for bad in [
            "ab",
            "9lives",
            "team_a",
            "team-",
            "t\u{e9}am",
            &"a".repeat(41),
        ] {
            assert_eq!(
                field_of(validate_account_name(bad)).as_deref(),
                Some("account"),
                "{bad}"
            );
        }
    }

    #[test]
    fn emails_need_a_local_part_and_a_dotted_domain() {
        assert_eq!(
            validate_email(" Ann@Example.COM").unwrap(),
            "ann@example.com"
        );
        for bad in [
            "ann",
            "@example.com",
            "ann@example",
            "ann@@x.com",
            "a b@x.com",
            "ann@.com",
        ] {
            assert!(validate_email(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_short_password_is_refused_with_the_minimum_in_the_message() {
        let err = validate_password("short").unwrap_err();
        assert_eq!(err.field(), Some("password"));
        assert!(err.to_string().contains('8'));
        assert!(validate_password("long enough").is_ok());
    }

    #[test]
    fn sign_up_reports_the_first_bad_field() {
        let form = SignUpForm {
            account: "ok-name".into(),
            email: "nope".into(),
            password: "x".into(),
        };
        assert_eq!(form.validated().unwrap_err().field(), Some("email"));
    }

    #[test]
    fn next_never_leaves_the_site() {
        assert_eq!(safe_next(Some("/serving?x=1")), "/serving?x=1");
        assert_eq!(safe_next(Some("//evil.example")), "/jobs");
        assert_eq!(safe_next(Some("https://evil.example")), "/jobs");
        assert_eq!(safe_next(Some("/\\evil.example")), "/jobs");
        assert_eq!(safe_next(None), "/jobs");
    }

    #[test]
    fn namespaces_carry_the_console_prefix() {
        assert_eq!(namespace_for("vision"), "pc-vision");
    }
}
