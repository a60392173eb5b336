//! Model aliases: `owner/model@alias` names a version of a model (one per
//! alias and model), as MLflow's aliases replaced its stages. Setting,
//! moving and deleting one keeps a history (who, when, from which version
//! to which); a protected alias is moved or deleted by the model's
//! account's owners only. An alias is usable wherever a version is.

use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// Longest alias.
pub const MAX_ALIAS_LEN: usize = 40;

/// One alias of a model: the version it points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ModelAlias {
    /// `production`, `champion`, `candidate`…
    pub alias: String,
    /// The version it names.
    pub version: u32,
    /// Only the account's owners move or delete it.
    pub protected: bool,
    /// Who set it last (email).
    pub updated_by: String,
    /// When, Unix ms.
    pub updated_at: i64,
}

/// One change of an alias: set (`from` `None`), moved, or deleted (`to`
/// `None`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AliasChange {
    /// The alias.
    pub alias: String,
    /// The version it named before (`None`: it was new).
    pub from: Option<u32>,
    /// The version it names since (`None`: it was deleted).
    pub to: Option<u32>,
    /// Whether it is protected since.
    pub protected: bool,
    /// Who (email).
    pub by: String,
    /// When, Unix ms.
    pub at: i64,
}

impl AliasChange {
    /// "moved from v2 to v3", "set to v1", "deleted (was v3)".
    pub fn describe(&self) -> String {
        match (self.from, self.to) {
            (None, Some(to)) => format!("set to v{to}"),
            (Some(from), Some(to)) if from == to => format!("kept at v{to}"),
            (Some(from), Some(to)) => format!("moved from v{from} to v{to}"),
            (Some(from), None) => format!("deleted (was v{from})"),
            (None, None) => "deleted".to_owned(),
        }
    }
}

/// What setting an alias takes: the version, and whether it is protected
/// (`None`: as it was; a new alias is not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AliasForm {
    /// The version to point at (it must exist and be ready).
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 4294967295u32))]
    pub version: u32,
    /// Protect it (only owners move or delete it), or stop.
    #[serde(default)]
    pub protected: Option<bool>,
}

/// Checks an alias: 1 to 40 of `a-z 0-9 - _`, starting with a letter (so it
/// never reads as a version number).
pub fn validate_alias(raw: &str) -> Result<String, AppError> {
    let alias = raw.trim();
    let ok = !alias.is_empty()
        && alias.len() <= MAX_ALIAS_LEN
        && alias.starts_with(|c: char| c.is_ascii_lowercase())
        && alias
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(alias.to_owned())
    } else {
        Err(AppError::invalid(
            "alias",
            format!(
                "“{alias}” is not an alias: 1 to {MAX_ALIAS_LEN} of a-z, 0-9, '-' and '_', starting with a letter."
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_short_lowercase_words_that_never_read_as_a_version() {
        for good in ["production", "champion-2", "a_b", "x"] {
            assert_eq!(validate_alias(good).unwrap(), good);
        }
        for bad in [
            "",
            "3",
            "Prod",
            "prod uction",
            "-x",
            &"a".repeat(41),
            "a@b",
            "a:1",
        ] {
            let err = validate_alias(bad).unwrap_err();
            assert_eq!(err.field(), Some("alias"), "{bad}");
        }
    }

    #[test]
    fn a_change_reads_as_what_it_did() {
        let change = |from, to| AliasChange {
            alias: "production".into(),
            from,
            to,
            protected: false,
            by: "ann@example.com".into(),
            at: 0,
        };
        assert_eq!(change(None, Some(1)).describe(), "set to v1");
        assert_eq!(change(Some(1), Some(3)).describe(), "moved from v1 to v3");
        assert_eq!(change(Some(3), None).describe(), "deleted (was v3)");
    }
}
