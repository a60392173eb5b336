//! The one error type that crosses the wire between browser and server.
//!
//! Every server function and every REST route returns [`AppError`]. Each
//! variant carries the HTTP status it is answered with; internal failures are
//! logged on the server and reach the user only as [`AppError::Internal`].

use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

/// What went wrong, in words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum AppError {
    /// A field of the request is malformed (400).
    #[error("{message}")]
    Invalid {
        /// The form field or JSON key at fault, when there is one.
        field: Option<String>,
        /// What is wrong with it.
        message: String,
    },
    /// No valid session or access key (401).
    #[error("Please sign in.")]
    Unauthenticated,
    /// Sign-in failed; deliberately silent about which part was wrong (401).
    #[error("The account, email or password is incorrect.")]
    BadCredentials,
    /// Signed in, but not allowed to do this (403).
    #[error("{message}")]
    Forbidden {
        /// Why it is not allowed.
        message: String,
    },
    /// The thing does not exist, or belongs to another account (404).
    #[error("{what} not found.")]
    NotFound {
        /// What was looked for, e.g. "Session".
        what: String,
    },
    /// The request clashes with what exists, e.g. a taken name (409).
    #[error("{message}")]
    Conflict {
        /// The field at fault, when there is one.
        field: Option<String>,
        /// What it clashes with.
        message: String,
    },
    /// The request's body is larger than the route takes (413).
    #[error("{message}")]
    TooLarge {
        /// The limit, in a user's words.
        message: String,
    },
    /// Too many requests of this kind from this caller; try later (429).
    #[error("{message}")]
    TooMany {
        /// What to wait for.
        message: String,
    },
    /// Something failed on the server; the details are in its log (500).
    #[error("Something went wrong on the server. It has been logged; please try again.")]
    Internal,
    /// The server is up but a dependency (database, cluster) is not (503).
    #[error("{message}")]
    Unavailable {
        /// Which dependency, in a user's words.
        message: String,
    },
}

impl AppError {
    /// A 400 for `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// A 409 for `field`.
    pub fn conflict(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Conflict {
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// Whether this is admission's refusal for want of quota or a
    /// member's cap ("Over …"): work made by the console (a pipeline's
    /// node, an experiment's trial) waits and tries again.
    pub fn is_over_quota(&self) -> bool {
        matches!(self, Self::Forbidden { message } if message.starts_with("Over"))
    }

    /// A 404 for `what`.
    pub fn not_found(what: impl Into<String>) -> Self {
        Self::NotFound { what: what.into() }
    }

    /// A 403 with a reason.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::Forbidden {
            message: message.into(),
        }
    }

    /// The HTTP status this error is answered with.
    pub fn status(&self) -> u16 {
        match self {
            Self::Invalid { .. } => 400,
            Self::Unauthenticated | Self::BadCredentials => 401,
            Self::Forbidden { .. } => 403,
            Self::NotFound { .. } => 404,
            Self::Conflict { .. } => 409,
            Self::TooLarge { .. } => 413,
            Self::TooMany { .. } => 429,
            Self::Internal => 500,
            Self::Unavailable { .. } => 503,
        }
    }

    /// The field this error is about, so a form can show it next to that input.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Invalid { field, .. } | Self::Conflict { field, .. } => field.as_deref(),
            _ => None,
        }
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            // The request could not be read: the caller's fault, say what failed.
            ServerFnErrorErr::Args(message)
            | ServerFnErrorErr::Deserialization(message)
            | ServerFnErrorErr::MissingArg(message) => Self::Invalid {
                field: None,
                message: format!("The request could not be read: {message}"),
            },
            ServerFnErrorErr::Request(message) => Self::Unavailable {
                message: format!("The server could not be reached: {message}"),
            },
            _ => Self::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_maps_to_the_status_a_client_expects() {
        assert_eq!(AppError::invalid("name", "bad").status(), 400);
        assert_eq!(AppError::Unauthenticated.status(), 401);
        assert_eq!(AppError::BadCredentials.status(), 401);
        assert_eq!(AppError::forbidden("no").status(), 403);
        assert_eq!(AppError::not_found("Job").status(), 404);
        assert_eq!(AppError::conflict("name", "taken").status(), 409);
        assert_eq!(AppError::Internal.status(), 500);
    }

    #[test]
    fn errors_round_trip_through_json_with_a_code_tag() {
        let err = AppError::conflict("account", "That account name is taken.");
        let json = serde_json::to_string(&err).unwrap();
        assert!(json.contains(r#""code":"conflict""#), "{json}");
        assert_eq!(serde_json::from_str::<AppError>(&json).unwrap(), err);
    }

    #[test]
    fn internal_errors_never_show_details() {
        let shown = AppError::Internal.to_string();
        assert!(!shown.contains("sqlx") && shown.contains("logged"));
    }
}
