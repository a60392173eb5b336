//! Mail through an SMTP server.

use app::error::AppError;
use app::ports::{Mail, Mailer};
use async_trait::async_trait;
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

/// Sends through the server of an `smtp://` or `smtps://` URL.
pub struct Smtp {
    from: Mailbox,
    transport: AsyncSmtpTransport<Tokio1Executor>,
}

impl Smtp {
    /// A sender through `url` (lettre's form: `smtp://host:587?tls=required`,
    /// `smtps://user:password@host`), as `from`.
    pub fn new(url: &str, from: Mailbox) -> anyhow::Result<Self> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|err| anyhow::anyhow!("--smtp-url: {err}"))?
            .build();
        Ok(Self { from, transport })
    }
}

#[async_trait]
impl Mailer for Smtp {
    async fn send(&self, mail: Mail) -> Result<(), AppError> {
        let message = super::message(&self.from, &mail)?;
        self.transport.send(message).await.map_err(|err| {
            // Credentials and hosts stay in the log.
            tracing::error!(error = %err, to = %mail.to, "sending a mail over SMTP");
            AppError::Unavailable {
                message: "The mail server did not take the message; try again shortly.".to_owned(),
            }
        })?;
        tracing::info!(to = %mail.to, subject = %mail.subject, "mail sent");
        Ok(())
    }
}
