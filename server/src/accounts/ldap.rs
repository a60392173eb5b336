//! LDAP sign-in ([`app::ports::Directory`]): a simple bind as the user
//! (their DN from a template, the username escaped), then a read of their
//! own entry (address, name) and a search for the groups that list them
//! as a member, each bound as the user. No service account is needed; the
//! directory's own access rules decide what a user may read.

use std::time::Duration;

use app::error::AppError;
use app::models::sign_in::{ExternalIdentity, SignInMapping};
use app::ports::Directory;
use async_trait::async_trait;
use ldap3::{
    dn_escape, ldap_escape, LdapConnAsync, LdapConnSettings, LdapError, Scope, SearchEntry,
};

/// LDAP's result code for a wrong DN or password.
const INVALID_CREDENTIALS: u32 = 49;

/// The LDAP settings (`--ldap-*`).
#[derive(Debug, Clone)]
pub struct LdapSettings {
    /// `ldap://host:389` or `ldaps://host:636`.
    pub url: String,
    /// Upgrade `ldap://` with StartTLS before binding.
    pub start_tls: bool,
    /// A user's DN, `{username}` standing for the username (escaped),
    /// e.g. `uid={username},ou=people,dc=example,dc=org`.
    pub user_dn: String,
    /// Where groups are searched for.
    pub group_base: String,
    /// The filter of a user's groups, `{dn}` standing for their DN.
    pub group_filter: String,
    /// The attribute that names a group in the mapping (e.g. `cn`).
    pub group_name: String,
    /// The attribute holding a user's address.
    pub mail: String,
    /// What the sign-in form says after "Sign in with".
    pub label: String,
    /// How groups become memberships.
    pub mapping: SignInMapping,
}

/// Sign-in against one LDAP directory.
pub struct Ldap {
    settings: LdapSettings,
}

impl Ldap {
    /// With `settings`.
    pub fn new(settings: LdapSettings) -> Self {
        // The TLS stack's one provider, for ldaps:// and StartTLS.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self { settings }
    }

    /// What the sign-in form says after "Sign in with".
    pub fn label(&self) -> &str {
        &self.settings.label
    }
}

fn unreachable(err: impl std::fmt::Display) -> AppError {
    tracing::warn!(error = %err, "LDAP");
    AppError::invalid(
        "username",
        "The directory could not be reached: try again in a moment, or tell the console's administrator.",
    )
}

fn is_invalid_credentials(err: &LdapError) -> bool {
    matches!(err, LdapError::LdapResult { result } if result.rc == INVALID_CREDENTIALS)
}

#[async_trait]
impl Directory for Ldap {
    async fn authenticate(
        &self,
        username: &str,
        password: &str,
    ) -> Result<ExternalIdentity, AppError> {
        let username = username.trim();
        // An empty password is an unauthenticated bind, which a directory
        // accepts for any DN: never a sign-in.
        if username.is_empty() || password.is_empty() || username.len() > 256 {
            return Err(AppError::BadCredentials);
        }
        let s = &self.settings;
        let dn = s.user_dn.replace("{username}", &dn_escape(username));
        let settings = LdapConnSettings::new()
            .set_conn_timeout(Duration::from_secs(10))
            .set_starttls(s.start_tls);
        let (conn, mut ldap) = LdapConnAsync::with_settings(settings, &s.url)
            .await
            .map_err(unreachable)?;
        ldap3::drive!(conn);
        ldap.with_timeout(Duration::from_secs(10));
        match ldap
            .simple_bind(&dn, password)
            .await
            .and_then(|r| r.success())
        {
            Ok(_) => {}
            Err(err) if is_invalid_credentials(&err) => return Err(AppError::BadCredentials),
            Err(err) => return Err(unreachable(err)),
        }
        let (entries, _) = ldap
            .search(
                &dn,
                Scope::Base,
                "(objectClass=*)",
                vec![s.mail.as_str(), "cn", "displayName"],
            )
            .await
            .and_then(|r| r.success())
            .map_err(unreachable)?;
        let Some(entry) = entries.into_iter().next().map(SearchEntry::construct) else {
            return Err(AppError::BadCredentials);
        };
        let first = |attr: &str| entry.attrs.get(attr).and_then(|v| v.first()).cloned();
        let filter = s.group_filter.replace("{dn}", &ldap_escape(&dn));
        ldap.with_timeout(Duration::from_secs(10));
        let (groups, _) = ldap
            .search(
                &s.group_base,
                Scope::Subtree,
                &filter,
                vec![s.group_name.as_str()],
            )
            .await
            .and_then(|r| r.success())
            .map_err(unreachable)?;
        let groups = groups
            .into_iter()
            .map(SearchEntry::construct)
            .filter_map(|g| g.attrs.get(&s.group_name).and_then(|v| v.first()).cloned())
            .collect();
        let _ = ldap.unbind().await;
        Ok(ExternalIdentity {
            provider: s.url.clone(),
            subject: dn,
            email: first(&s.mail).unwrap_or_default().to_lowercase(),
            name: first("displayName").or_else(|| first("cn")),
            groups,
            account: None,
            role: None,
        })
    }

    fn mapping(&self) -> &SignInMapping {
        &self.settings.mapping
    }
}
