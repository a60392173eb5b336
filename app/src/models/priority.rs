//! A job's priority: how urgent it is among its account's own waiting work
//! (see `models::queue` for the order it gives).

use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// How urgent a job is inside its account's share.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Taken after the account's normal and high work.
    Low,
    /// The default.
    #[default]
    Normal,
    /// Taken before the account's other work; owners, and members an
    /// owner allowed, may ask for it.
    High,
}

impl Priority {
    /// Every priority, lowest first.
    pub const ALL: [Priority; 3] = [Priority::Low, Priority::Normal, Priority::High];

    /// Its name in specs, forms and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Normal => "normal",
            Self::High => "high",
        }
    }

    /// The priority a spec or form names, or which words are priorities.
    pub fn parse(raw: &str) -> Result<Self, AppError> {
        match raw.trim() {
            "low" => Ok(Self::Low),
            "" | "normal" => Ok(Self::Normal),
            "high" => Ok(Self::High),
            other => Err(AppError::invalid(
                "priority",
                format!("“{other}” is not a priority: say low, normal or high."),
            )),
        }
    }

    /// Whether it is the default (left out of specs that do not say it).
    pub fn is_normal(&self) -> bool {
        *self == Self::Normal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_read_as_written_and_refuse_other_words() {
        assert_eq!(Priority::parse("high").unwrap(), Priority::High);
        assert_eq!(Priority::parse("").unwrap(), Priority::Normal);
        let err = Priority::parse("urgent").unwrap_err().to_string();
        assert!(err.contains("low, normal or high"), "{err}");
        assert_eq!(
            serde_json::to_string(&Priority::Low).unwrap(),
            "\"low\"".to_owned()
        );
    }
}
