//! `paddlecloud serve`'s sign-in flags: single sign-on through an OpenID
//! Connect provider, and whether passwords still sign in.

use anyhow::{bail, Context};
use app::models::sign_in::{GroupMapping, SignInMapping};
use clap::{Args, ValueEnum};

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
    /// Whether accounts' passwords sign in (and sign up) besides single
    /// sign-on; `off` needs `--oidc-issuer`.
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
            if self.password_sign_in == Switch::Off {
                bail!("--password-sign-in off leaves no way to sign in: set up --oidc-issuer too");
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
        let groups = self
            .oidc_groups
            .iter()
            .filter(|g| !g.trim().is_empty())
            .map(|g| GroupMapping::parse(g).map_err(|e| anyhow::anyhow!("--oidc-group: {e}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
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
