//! [`app::ports::Mailer`]: mail leaves the console through SMTP
//! (`--smtp-url`), or, by default, lands as `.eml` files in an outbox folder
//! so that a laptop needs no mail server. lettre builds and sends every
//! message (plain text and HTML).

mod outbox;
mod smtp;

pub use outbox::Outbox;
pub use smtp::Smtp;

use app::error::AppError;
use app::ports::Mail;
use lettre::message::{Mailbox, MultiPart};
use lettre::Message;

/// Who account mail is from unless `--mail-from` says otherwise.
pub const DEFAULT_FROM: &str = "PaddleCloud <paddlecloud@localhost>";

/// Where the console's mail goes.
#[derive(Clone, Debug)]
pub enum MailChoice {
    /// `.eml` files in this folder (the embedded default:
    /// `<data-dir>/outbox`), each link logged.
    Outbox(std::path::PathBuf),
    /// An SMTP server: `smtp://host:587?tls=required`, `smtps://user:pass@host`
    /// (lettre's URL form: TLS, STARTTLS and credentials in one setting).
    Smtp(String),
}

/// The message `mail` is, from `from`: a plain-text and an HTML body.
fn message(from: &Mailbox, mail: &Mail) -> Result<Message, AppError> {
    let to: Mailbox = mail.to.parse().map_err(|err| {
        AppError::invalid(
            "email",
            format!("“{}” is not an address mail can go to: {err}", mail.to),
        )
    })?;
    Message::builder()
        .from(from.clone())
        .to(to)
        .subject(mail.subject.clone())
        .multipart(MultiPart::alternative_plain_html(
            mail.text.clone(),
            mail.html.clone(),
        ))
        .map_err(|err| {
            tracing::error!(error = %err, "building a mail");
            AppError::Internal
        })
}

/// The sender every message carries (`--mail-from`).
pub fn sender(from: &str) -> anyhow::Result<Mailbox> {
    from.parse()
        .map_err(|err| anyhow::anyhow!("--mail-from “{from}” is not a mail address: {err}"))
}
