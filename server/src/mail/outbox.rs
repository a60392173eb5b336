//! Mail as `.eml` files in a folder: the console works on a laptop with no
//! mail server, and the links it sends are in its log.

use std::path::PathBuf;

use app::error::AppError;
use app::ports::{Mail, Mailer};
use async_trait::async_trait;
use lettre::message::Mailbox;
use lettre::{AsyncFileTransport, AsyncTransport, Tokio1Executor};

/// Writes each message to `<folder>/<uuid>.eml`.
pub struct Outbox {
    folder: PathBuf,
    from: Mailbox,
    transport: AsyncFileTransport<Tokio1Executor>,
}

impl Outbox {
    /// An outbox in `folder` (made if missing), sending as `from`.
    pub fn new(folder: PathBuf, from: Mailbox) -> std::io::Result<Self> {
        std::fs::create_dir_all(&folder)?;
        Ok(Self {
            transport: AsyncFileTransport::new(&folder),
            folder,
            from,
        })
    }
}

#[async_trait]
impl Mailer for Outbox {
    async fn send(&self, mail: Mail) -> Result<(), AppError> {
        let message = super::message(&self.from, &mail)?;
        let id = self.transport.send(message).await.map_err(|err| {
            tracing::error!(error = %err, folder = %self.folder.display(), "writing a mail to the outbox");
            AppError::Unavailable {
                message: "The mail could not be written; try again shortly.".to_owned(),
            }
        })?;
        // No mail server: whoever runs the console follows the link from here.
        tracing::info!(
            to = %mail.to,
            subject = %mail.subject,
            link = mail.link.as_deref().unwrap_or("-"),
            file = %self.folder.join(format!("{id}.eml")).display(),
            "mail written to the outbox"
        );
        Ok(())
    }
}
