//! Signing in through an identity provider (OpenID Connect, LDAP): who the
//! provider says a person is ([`ExternalIdentity`]), and the rule that
//! turns that into memberships ([`SignInMapping::memberships`]): which
//! accounts they belong to, with which role. The provider is the source
//! of truth for the accounts its mapping names; other memberships (an
//! owner's invitation) are left as they are.

use serde::{Deserialize, Serialize};

use super::account::{validate_account_name, validate_email, Role};
use crate::error::AppError;

/// Who an identity provider says signed in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalIdentity {
    /// Which provider: the OpenID issuer URL, or `ldap://host`.
    pub provider: String,
    /// Its stable id of the person (OpenID `sub`, an LDAP DN).
    pub subject: String,
    /// Their address.
    pub email: String,
    /// Their name, if the provider says.
    pub name: Option<String>,
    /// The provider's groups they are in.
    pub groups: Vec<String>,
    /// The account the provider names for them (the account claim), if any.
    pub account: Option<String>,
    /// The role the provider names for them (the role claim), if any.
    pub role: Option<String>,
}

/// How people may sign in here, as the sign-in page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignInOptions {
    /// Whether an account, address and password sign in (and sign up).
    pub password: bool,
    /// The OpenID Connect provider's name on its button, when one is set up.
    pub single_sign_on: Option<String>,
    /// The LDAP directory's name on its form, when one is set up.
    #[serde(default)]
    pub directory: Option<String>,
}

impl Default for SignInOptions {
    fn default() -> Self {
        Self {
            password: true,
            single_sign_on: None,
            directory: None,
        }
    }
}

impl SignInOptions {
    /// Refuses a password sign-in or sign-up where they are switched off,
    /// saying how to sign in instead.
    pub fn require_password(&self) -> Result<(), AppError> {
        if self.password {
            return Ok(());
        }
        Err(AppError::forbidden(match &self.single_sign_on {
            Some(name) => {
                format!("Signing in with a password is switched off here: sign in with {name}.")
            }
            None => "Signing in with a password is switched off here.".to_owned(),
        }))
    }
}

/// One group of the provider mapped to an account and a role:
/// `--oidc-group ml-team=vision:member`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupMapping {
    /// The provider's group.
    pub group: String,
    /// The console's account its people join.
    pub account: String,
    /// With this role.
    pub role: Role,
}

impl GroupMapping {
    /// Reads `GROUP=ACCOUNT:ROLE` (the role may be left out: member).
    pub fn parse(text: &str) -> Result<Self, AppError> {
        let bad = || {
            AppError::invalid(
                "group",
                format!("“{text}” is not a group mapping: write GROUP=ACCOUNT:ROLE, e.g. ml-team=vision:member."),
            )
        };
        let (group, target) = text.rsplit_once('=').ok_or_else(bad)?;
        let (account, role) = target.split_once(':').unwrap_or((target, "member"));
        let group = group.trim();
        if group.is_empty() {
            return Err(bad());
        }
        Ok(Self {
            group: group.to_owned(),
            account: validate_account_name(account.trim())?,
            role: Role::parse(role.trim()).ok_or_else(bad)?,
        })
    }
}

/// How a provider's people become the console's members.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignInMapping {
    /// Groups mapped to accounts and roles.
    pub groups: Vec<GroupMapping>,
    /// Whether the account the provider names (its account claim) is
    /// joined, with the role it names (default member).
    pub account_claim: bool,
    /// The provider's group whose people are the site's admins.
    pub admin_group: Option<String>,
}

/// What signing in makes of an identity: the accounts, each with the
/// role, in the order they were found; and whether they are a site admin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memberships {
    /// `(account, role)`, one per account (the strongest role of every
    /// mapping that names it).
    pub accounts: Vec<(String, Role)>,
    /// Whether they administer the site.
    pub site_admin: bool,
}

impl SignInMapping {
    /// The memberships `who` gets, or why they may not sign in (a 403 that
    /// says what to ask for).
    pub fn memberships(&self, who: &ExternalIdentity) -> Result<Memberships, AppError> {
        validate_email(&who.email).map_err(|_| {
            AppError::forbidden(format!(
                "The identity provider gave no usable email address for {}: the console needs one.",
                who.subject
            ))
        })?;
        let mut accounts: Vec<(String, Role)> = Vec::new();
        let mut add =
            |account: String, role: Role| match accounts.iter_mut().find(|(a, _)| *a == account) {
                Some((_, held)) => *held = stronger(*held, role),
                None => accounts.push((account, role)),
            };
        if self.account_claim {
            if let Some(account) = &who.account {
                let account = validate_account_name(account).map_err(|_| {
                    AppError::forbidden(format!(
                        "The identity provider names the account “{account}”, which is not an account name."
                    ))
                })?;
                let role = match &who.role {
                    Some(r) => Role::parse(r).ok_or_else(|| {
                        AppError::forbidden(format!(
                            "The identity provider names the role “{r}”: say owner, member or viewer."
                        ))
                    })?,
                    None => Role::Member,
                };
                add(account, role);
            }
        }
        for m in &self.groups {
            if who.groups.contains(&m.group) {
                add(m.account.clone(), m.role);
            }
        }
        let site_admin = self
            .admin_group
            .as_ref()
            .is_some_and(|g| who.groups.iter().any(|h| h == g));
        if accounts.is_empty() {
            return Err(AppError::forbidden(
                "You signed in with the identity provider, but none of your groups gives you an \
                 account here: ask the console's administrator to map one of your groups.",
            ));
        }
        Ok(Memberships {
            accounts,
            site_admin,
        })
    }
}

fn stronger(a: Role, b: Role) -> Role {
    let rank = |r: Role| Role::ALL.iter().position(|x| *x == r).unwrap_or(usize::MAX);
    if rank(a) <= rank(b) {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice(groups: &[&str]) -> ExternalIdentity {
        ExternalIdentity {
            provider: "http://idp".into(),
            subject: "alice".into(),
            email: "alice@example.org".into(),
            name: Some("Alice".into()),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            account: None,
            role: None,
        }
    }

    fn mapping() -> SignInMapping {
        SignInMapping {
            groups: [
                "ml-team=vision:member",
                "ml-team-owners=vision:owner",
                "readers=speech:viewer",
            ]
            .iter()
            .map(|m| GroupMapping::parse(m).unwrap())
            .collect(),
            account_claim: false,
            admin_group: Some("admins".into()),
        }
    }

    #[test]
    fn each_account_gets_the_strongest_role_its_groups_map_to() {
        let got = mapping()
            .memberships(&alice(&["ml-team", "ml-team-owners", "readers", "other"]))
            .unwrap();
        assert_eq!(
            got.accounts,
            vec![
                ("vision".to_owned(), Role::Owner),
                ("speech".to_owned(), Role::Viewer)
            ]
        );
        assert!(!got.site_admin);
        assert!(
            mapping()
                .memberships(&alice(&["ml-team", "admins"]))
                .unwrap()
                .site_admin
        );
    }

    #[test]
    fn someone_in_no_mapped_group_is_refused_saying_what_to_ask_for() {
        let err = mapping()
            .memberships(&alice(&["other"]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("none of your groups gives you an account"),
            "{err}"
        );
        let mut nobody = alice(&["ml-team"]);
        nobody.email = "not an address".into();
        assert!(mapping().memberships(&nobody).is_err());
    }

    #[test]
    fn the_account_claim_names_an_account_and_the_role_claim_its_role() {
        let mut m = mapping();
        m.account_claim = true;
        let mut who = alice(&[]);
        who.account = Some("nlp".into());
        assert_eq!(
            m.memberships(&who).unwrap().accounts,
            vec![("nlp".to_owned(), Role::Member)]
        );
        who.role = Some("owner".into());
        assert_eq!(m.memberships(&who).unwrap().accounts[0].1, Role::Owner);
        who.role = Some("king".into());
        assert!(m
            .memberships(&who)
            .unwrap_err()
            .to_string()
            .contains("owner, member or viewer"));
    }

    #[test]
    fn a_group_mapping_reads_group_account_and_role() {
        let m = GroupMapping::parse("cn=ml,ou=groups=vision:owner").unwrap();
        assert_eq!(
            (m.group.as_str(), m.account.as_str(), m.role),
            ("cn=ml,ou=groups", "vision", Role::Owner)
        );
        assert_eq!(GroupMapping::parse("ml=vision").unwrap().role, Role::Member);
        assert!(GroupMapping::parse("ml").is_err());
        assert!(GroupMapping::parse("ml=vision:king").is_err());
    }
}
