//! `paddlecloud serve`'s sign-in flags: single sign-on through an OpenID
//! Connect provider, and whether passwords still sign in.

use anyhow::{bail, Context};
use app::models::sign_in::{GroupMapping, SignInMapping};
use clap::{Args, ValueEnum};

use crate::accounts::ldap::LdapSettings;
use crate::accounts::oidc::OidcSettings;

/// On or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    /// Allowed.
    On,
    /// Refused.
    Off,
}

/// How people sign in.
#[derive(Debug, Clone, Args)]
pub struct SignInArgs {
    /// Sign-in through this OpenID Connect provider (its issuer URL; its
    /// discovery document is read from `<issuer>/.well-known/openid-configuration`).
    /// Register `<public URL>/auth/oidc/callback` as the client's redirect URI.
    #[arg(long, env = "PADDLECLOUD_OIDC_ISSUER")]
    pub oidc_issuer: Option<String>,
    /// The console's client id at the provider.
    #[arg(long, env = "PADDLECLOUD_OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,
    /// Its client secret.
    #[arg(long, env = "PADDLECLOUD_OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub oidc_client_secret: Option<String>,
    /// The provider's name on the sign-in button ("Sign in with NAME";
    /// default: the issuer's host).
    #[arg(long, env = "PADDLECLOUD_OIDC_NAME")]
    pub oidc_name: Option<String>,
    /// The claim that lists a person's groups.
    #[arg(long, env = "PADDLECLOUD_OIDC_GROUPS_CLAIM", default_value = "groups")]
    pub oidc_groups_claim: String,
    /// A group mapped to an account and a role, `GROUP=ACCOUNT:ROLE`
    /// (`ml-team=vision:member`; the role `owner`, `member` or `viewer`,
    /// default member). Repeatable; in the variable, comma-separated.
    /// Accounts named are made on the first sign-in that needs them.
    #[arg(
        long = "oidc-group",
        env = "PADDLECLOUD_OIDC_GROUPS",
        value_delimiter = ','
    )]
    pub oidc_groups: Vec<String>,
    /// The claim that names a person's account (joined, made if missing).
    #[arg(long, env = "PADDLECLOUD_OIDC_ACCOUNT_CLAIM")]
    pub oidc_account_claim: Option<String>,
    /// The claim that names their role in it (default member).
    #[arg(long, env = "PADDLECLOUD_OIDC_ROLE_CLAIM")]
    pub oidc_role_claim: Option<String>,
    /// The provider's group whose people administer the site.
    #[arg(long, env = "PADDLECLOUD_OIDC_ADMIN_GROUP")]
    pub oidc_admin_group: Option<String>,
    /// Sign-in against this LDAP directory (`ldap://host:389`,
    /// `ldaps://host:636`) with a username and password.
    #[arg(long, env = "PADDLECLOUD_LDAP_URL")]
    pub ldap_url: Option<String>,
    /// Upgrade `ldap://` with StartTLS before sending the password.
    #[arg(long, env = "PADDLECLOUD_LDAP_START_TLS")]
    pub ldap_start_tls: bool,
    /// A user's DN, `{username}` standing for what they type, e.g.
    /// `uid={username},ou=people,dc=example,dc=org`.
    #[arg(long, env = "PADDLECLOUD_LDAP_USER_DN")]
    pub ldap_user_dn: Option<String>,
    /// Where groups are searched for, e.g. `ou=groups,dc=example,dc=org`.
    #[arg(long, env = "PADDLECLOUD_LDAP_GROUP_BASE")]
    pub ldap_group_base: Option<String>,
    /// The filter of a user's groups, `{dn}` standing for their DN.
    #[arg(
        long,
        env = "PADDLECLOUD_LDAP_GROUP_FILTER",
        default_value = "(&(objectClass=groupOfNames)(member={dn}))"
    )]
    pub ldap_group_filter: String,
    /// The attribute that names a group in `--ldap-group`.
    #[arg(long, env = "PADDLECLOUD_LDAP_GROUP_ATTRIBUTE", default_value = "cn")]
    pub ldap_group_attribute: String,
    /// The attribute holding a user's address.
    #[arg(long, env = "PADDLECLOUD_LDAP_MAIL_ATTRIBUTE", default_value = "mail")]
    pub ldap_mail_attribute: String,
    /// The directory's name on the sign-in form (default: its host).
    #[arg(long, env = "PADDLECLOUD_LDAP_NAME")]
    pub ldap_name: Option<String>,
    /// A directory group mapped to an account and a role,
    /// `GROUP=ACCOUNT:ROLE`. Repeatable; in the variable, comma-separated.
    #[arg(
        long = "ldap-group",
        env = "PADDLECLOUD_LDAP_GROUPS",
        value_delimiter = ','
    )]
    pub ldap_groups: Vec<String>,
    /// The directory group whose people administer the site.
    #[arg(long, env = "PADDLECLOUD_LDAP_ADMIN_GROUP")]
    pub ldap_admin_group: Option<String>,
    /// Whether accounts' passwords sign in (and sign up) besides single
    /// sign-on; `off` needs `--oidc-issuer` or `--ldap-url`.
    #[arg(
        long,
        env = "PADDLECLOUD_PASSWORD_SIGN_IN",
        value_enum,
        default_value = "on"
    )]
    pub password_sign_in: Switch,
}

impl SignInArgs {
    /// The OpenID Connect settings, if `--oidc-issuer` is given, or what is
    /// missing or wrong (naming the flag).
    pub fn oidc(&self) -> anyhow::Result<Option<OidcSettings>> {
        let Some(issuer) = self.oidc_issuer.clone() else {
            if self.password_sign_in == Switch::Off && self.ldap_url.is_none() {
                bail!("--password-sign-in off leaves no way to sign in: set up --oidc-issuer or --ldap-url too");
            }
            return Ok(None);
        };
        let url = reqwest::Url::parse(&issuer).context("--oidc-issuer is not a URL")?;
        let client_id = self
            .oidc_client_id
            .clone()
            .context("--oidc-issuer needs --oidc-client-id")?;
        let client_secret = self.oidc_client_secret.clone().context(
            "--oidc-issuer needs --oidc-client-secret (or PADDLECLOUD_OIDC_CLIENT_SECRET)",
        )?;
        let groups = mappings(&self.oidc_groups, "--oidc-group")?;
        if groups.is_empty() && self.oidc_account_claim.is_none() {
            bail!("--oidc-issuer needs --oidc-group GROUP=ACCOUNT:ROLE or --oidc-account-claim: otherwise nobody who signs in has an account");
        }
        Ok(Some(OidcSettings {
            label: self
                .oidc_name
                .clone()
                .unwrap_or_else(|| url.host_str().unwrap_or("single sign-on").to_owned()),
            issuer,
            client_id,
            client_secret,
            groups_claim: self.oidc_groups_claim.clone(),
            account_claim: self.oidc_account_claim.clone(),
            role_claim: self.oidc_role_claim.clone(),
            mapping: SignInMapping {
                groups,
                account_claim: self.oidc_account_claim.is_some(),
                admin_group: self.oidc_admin_group.clone(),
            },
        }))
    }
}

/// `GROUP=ACCOUNT:ROLE` flags, read (`flag` names them in an error).
fn mappings(raw: &[String], flag: &str) -> anyhow::Result<Vec<GroupMapping>> {
    raw.iter()
        .filter(|g| !g.trim().is_empty())
        .map(|g| GroupMapping::parse(g).map_err(|e| anyhow::anyhow!("{flag}: {e}")))
        .collect()
}

impl SignInArgs {
    /// The LDAP settings, if `--ldap-url` is given, or what is missing.
    pub fn ldap(&self) -> anyhow::Result<Option<LdapSettings>> {
        let Some(url) = self.ldap_url.clone() else {
            return Ok(None);
        };
        let parsed = reqwest::Url::parse(&url).context("--ldap-url is not a URL")?;
        if !matches!(parsed.scheme(), "ldap" | "ldaps") {
            bail!(
                "--ldap-url wants ldap:// or ldaps://, not {}",
                parsed.scheme()
            );
        }
        let user_dn = self.ldap_user_dn.clone().context(
            "--ldap-url needs --ldap-user-dn, e.g. uid={username},ou=people,dc=example,dc=org",
        )?;
        if !user_dn.contains("{username}") {
            bail!("--ldap-user-dn must say where the username goes: {{username}}");
        }
        let group_base = self
            .ldap_group_base
            .clone()
            .context("--ldap-url needs --ldap-group-base, e.g. ou=groups,dc=example,dc=org")?;
        let groups = mappings(&self.ldap_groups, "--ldap-group")?;
        if groups.is_empty() {
            bail!("--ldap-url needs --ldap-group GROUP=ACCOUNT:ROLE: otherwise nobody who signs in has an account");
        }
        Ok(Some(LdapSettings {
            label: self
                .ldap_name
                .clone()
                .unwrap_or_else(|| parsed.host_str().unwrap_or("the directory").to_owned()),
            url,
            start_tls: self.ldap_start_tls,
            user_dn,
            group_base,
            group_filter: self.ldap_group_filter.clone(),
            group_name: self.ldap_group_attribute.clone(),
            mail: self.ldap_mail_attribute.clone(),
            mapping: SignInMapping {
                groups,
                account_claim: false,
                admin_group: self.ldap_admin_group.clone(),
            },
        }))
    }
}
