//! A notebook file shared read-only: with the owner's account's members,
//! with another account, or by a revocable link. What a recipient sees is
//! the file's newest version (see [`super::notebook_versions`]), rendered,
//! never run; they may copy it into a workspace of their own.

use serde::{Deserialize, Serialize};

use super::notebook_versions::{check_versioned_path, NotebookVersion};
use crate::error::AppError;

/// How a share link starts (the token after it is random).
pub const NOTEBOOK_LINK_PREFIX: &str = "pcf_";

/// Who a file is shared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ShareAudience {
    /// Every member of the owner's account (viewers too).
    Members,
    /// Every member of another account.
    Account,
    /// Anyone holding the link, signed in or not.
    Link,
}

impl ShareAudience {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Members => "members",
            Self::Account => "account",
            Self::Link => "link",
        }
    }

    /// From [`Self::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "members" => Self::Members,
            "account" => Self::Account,
            "link" => Self::Link,
            _ => return None,
        })
    }
}

/// What to share, and with whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookShareSpec {
    /// The file's path in the workspace; it needs a version already.
    #[cfg_attr(
        feature = "ssr",
        schema(max_length = 1024, pattern = r"^([^/.][^/]*/)*[^/.][^/]*\.ipynb$")
    )]
    pub path: String,
    /// With whom.
    pub with: ShareAudience,
    /// For `account`: the account's name.
    #[serde(default)]
    pub account: Option<String>,
    /// For `link`: days until it stops working (1 to 3,650); none: until
    /// revoked.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 3650))]
    pub expires_days: Option<u32>,
}

impl NotebookShareSpec {
    /// The path a notebook file's, an account named when it is shared with
    /// one (and only then), an expiry only on a link and within bounds.
    pub fn validate(&self) -> Result<(), AppError> {
        check_versioned_path(&self.path)?;
        let account = self
            .account
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty());
        match (self.with, account) {
            (ShareAudience::Account, None) => {
                return Err(AppError::invalid(
                    "account",
                    "Name the account to share it with.",
                ))
            }
            (ShareAudience::Members | ShareAudience::Link, Some(_)) => {
                return Err(AppError::invalid(
                    "account",
                    "An account is named only when sharing with one.",
                ))
            }
            _ => {}
        }
        match (self.with, self.expires_days) {
            (ShareAudience::Link, Some(d)) if d == 0 || d > 3650 => Err(AppError::invalid(
                "expires_days",
                "A link lasts 1 to 3,650 days, or until revoked.",
            )),
            (ShareAudience::Members | ShareAudience::Account, Some(_)) => Err(AppError::invalid(
                "expires_days",
                "Only a link expires; revoke a share to end it.",
            )),
            _ => Ok(()),
        }
    }
}

/// The share form's fields as typed (the page posts them as text).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotebookShareForm {
    /// The file.
    pub path: String,
    /// `members`, `account` or `link`.
    pub with: String,
    /// For `account`.
    #[serde(default)]
    pub account: String,
    /// For `link`: days, or empty.
    #[serde(default)]
    pub expires_days: String,
}

impl NotebookShareForm {
    /// The spec, or which field is wrong.
    pub fn to_spec(&self) -> Result<NotebookShareSpec, AppError> {
        let with = ShareAudience::parse(self.with.trim()).ok_or_else(|| {
            AppError::invalid("with", "Share with members, an account or a link.")
        })?;
        let expires_days = match self.expires_days.trim() {
            "" => None,
            days => Some(days.parse::<u32>().map_err(|_| {
                AppError::invalid("expires_days", "Days are a whole number, 1 to 3,650.")
            })?),
        };
        let account = Some(self.account.trim().to_owned()).filter(|a| !a.is_empty());
        let spec = NotebookShareSpec {
            path: self.path.clone(),
            with,
            account: account.filter(|_| with == ShareAudience::Account),
            expires_days: expires_days.filter(|_| with == ShareAudience::Link),
        };
        spec.validate()?;
        Ok(spec)
    }
}

/// One share of a notebook file, as its owner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookShare {
    /// Id, to revoke it.
    pub id: i64,
    /// The notebook.
    pub notebook: String,
    /// The file.
    pub path: String,
    /// With whom.
    pub with: ShareAudience,
    /// The account, when shared with one.
    pub account: Option<String>,
    /// A link's first characters, to tell links apart.
    pub link_prefix: Option<String>,
    /// When a link stops working, Unix ms.
    pub expires_at: Option<i64>,
    /// Who shared it.
    pub created_by: String,
    /// Unix ms.
    pub created_at: i64,
}

impl NotebookShare {
    /// "the account's members", "account acme", "link pcf_1a2b…".
    pub fn audience(&self) -> String {
        match self.with {
            ShareAudience::Members => "the account's members".to_owned(),
            ShareAudience::Account => {
                format!("account {}", self.account.clone().unwrap_or_default())
            }
            ShareAudience::Link => {
                format!("link {}…", self.link_prefix.clone().unwrap_or_default())
            }
        }
    }
}

/// A share just made; a link's path is shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NewNotebookShare {
    /// The share.
    pub share: NotebookShare,
    /// For a link: the page it opens, `/shared/notebooks/<token>`.
    pub link: Option<String>,
}

/// A notebook file shared with the caller (or through a link), as they see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SharedNotebookFile {
    /// The share's id (through a link: 0; the token names it).
    pub share: i64,
    /// The account whose notebook it is.
    pub owner_account: String,
    /// Its owner's address.
    pub owner: String,
    /// The notebook.
    pub notebook: String,
    /// The file.
    pub path: String,
    /// With whom it is shared.
    pub with: ShareAudience,
    /// The version shown: the file's newest.
    pub version: NotebookVersion,
}

impl SharedNotebookFile {
    /// The file's name, without its folders.
    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// Where a copy goes: one of the caller's running notebooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct CopyTarget {
    /// The caller's notebook to copy into (it must be running).
    pub notebook: String,
}

/// The file name a copy gets among `taken` names: the same name, else
/// `name-copy.ipynb`, `name-copy-2.ipynb`, …
pub fn copy_name(file: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(file) {
        return file.to_owned();
    }
    let stem = file.strip_suffix(".ipynb").unwrap_or(file);
    (1..)
        .map(|n| match n {
            1 => format!("{stem}-copy.ipynb"),
            n => format!("{stem}-copy-{n}.ipynb"),
        })
        .find(|name| !taken(name))
        .unwrap_or_else(|| format!("{stem}-copy.ipynb"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(with: &str, account: &str, days: &str) -> NotebookShareForm {
        NotebookShareForm {
            path: "sweep.ipynb".into(),
            with: with.into(),
            account: account.into(),
            expires_days: days.into(),
        }
    }

    #[test]
    fn a_share_names_an_account_only_for_an_account_and_expires_only_as_a_link() {
        assert_eq!(
            form("members", "", "").to_spec().unwrap().with,
            ShareAudience::Members
        );
        let acme = form("account", "acme", "").to_spec().unwrap();
        assert_eq!(acme.account.as_deref(), Some("acme"));
        assert_eq!(
            form("link", "", "7").to_spec().unwrap().expires_days,
            Some(7)
        );
        // What the form's other fields hold is left out, as the page hides them.
        assert_eq!(
            form("members", "acme", "3").to_spec().unwrap().account,
            None
        );
        assert_eq!(
            form("account", "", "").to_spec().unwrap_err().field(),
            Some("account")
        );
        assert_eq!(
            form("link", "", "0").to_spec().unwrap_err().field(),
            Some("expires_days")
        );
        assert_eq!(
            form("link", "", "x").to_spec().unwrap_err().field(),
            Some("expires_days")
        );
        assert_eq!(
            form("everyone", "", "").to_spec().unwrap_err().field(),
            Some("with")
        );
        let mut bad = form("members", "", "");
        bad.path = "../etc.ipynb".into();
        assert_eq!(bad.to_spec().unwrap_err().field(), Some("path"));
        let spec = NotebookShareSpec {
            path: "a.ipynb".into(),
            with: ShareAudience::Members,
            account: None,
            expires_days: Some(3),
        };
        assert_eq!(spec.validate().unwrap_err().field(), Some("expires_days"));
    }

    #[test]
    fn a_copy_takes_a_name_no_file_has() {
        let taken = ["sweep.ipynb", "sweep-copy.ipynb"];
        assert_eq!(copy_name("new.ipynb", |n| taken.contains(&n)), "new.ipynb");
        assert_eq!(
            copy_name("sweep.ipynb", |n| taken.contains(&n)),
            "sweep-copy-2.ipynb"
        );
    }
}
