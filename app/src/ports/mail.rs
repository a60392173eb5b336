//! Mail the console sends: confirmation, password reset and invitation links.

use async_trait::async_trait;

use crate::error::AppError;

/// One message to one address, in plain text and HTML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    /// The recipient's address.
    pub to: String,
    /// The subject line.
    pub subject: String,
    /// The plain-text body.
    pub text: String,
    /// The HTML body (the same words, with the link clickable).
    pub html: String,
    /// The link the message carries, for an outbox to log (never logged
    /// by a real mail server's adapter: it is a secret).
    pub link: Option<String>,
}

/// Sends mail.
#[async_trait]
pub trait Mailer: Send + Sync {
    /// Sends `mail`, or says why it could not (a bad address is a 400, a
    /// mail server that is away a 503).
    async fn send(&self, mail: Mail) -> Result<(), AppError>;
}
