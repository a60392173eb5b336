//! Sending one delivery: a mail through the console's Mailer, or a signed
//! POST to a webhook (the Standard Webhooks headers: `webhook-id` is
//! `ntf_<delivery>`, the same on every try so a receiver can drop
//! duplicates; `webhook-timestamp` in Unix seconds; `webhook-signature`
//! `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under the
//! subscription's secret).

use std::time::Duration;

use app::models::{Channel, Notice, WebhookFormat};
use app::ports::{Mail, Mailer};
use standardwebhooks::Webhook;

use crate::storage::notifications::Due;

/// How long a webhook receiver has to answer.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a refusing receiver's body the log keeps.
const BODY_KEPT: usize = 200;

/// What sending needs beyond the delivery.
pub struct Sender {
    /// The console's mail.
    pub mailer: std::sync::Arc<dyn Mailer>,
    /// The console's address, for links.
    pub console_url: String,
    /// For webhooks: no redirects followed, a timeout.
    pub client: reqwest::Client,
}

/// How a try went: `Ok(())`, or why not and the receiver's status.
pub type Sent = Result<(), (String, Option<u16>)>;

impl Sender {
    /// A sender over `mailer`, linking to `console_url`.
    pub fn new(mailer: std::sync::Arc<dyn Mailer>, console_url: String) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(WEBHOOK_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("PaddleCloud-Webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("a webhook client builds");
        Self {
            mailer,
            console_url,
            client,
        }
    }

    /// Tries `due` once.
    pub async fn send(&self, due: &Due) -> Sent {
        match &due.channel {
            Channel::Email => self.mail(due).await,
            Channel::Webhook { url, format } => {
                let secret = due.secret.as_deref().unwrap_or_default();
                self.post(due.id, &due.notice, url, *format, secret).await
            }
        }
    }

    async fn mail(&self, due: &Due) -> Sent {
        let notice = &due.notice;
        let link = format!("{}{}", self.console_url, notice.subject.href());
        let settings = format!("{}/notifications", self.console_url);
        let text = format!(
            "{}.\n\nOpen it: {link}\n\nYou are told because you subscribed to this; \
             change what you are told at {settings}\n",
            notice.headline()
        );
        let escape = |s: &str| html_escape::encode_text(s).into_owned();
        let html = format!(
            "<p>{}.</p><p><a href=\"{}\">Open it</a></p><p>You are told because you subscribed \
             to this; <a href=\"{}\">change what you are told</a>.</p>",
            escape(&notice.headline()),
            html_escape::encode_double_quoted_attribute(&link),
            html_escape::encode_double_quoted_attribute(&settings),
        );
        let mail = Mail {
            to: due.email.clone(),
            subject: notice.mail_subject(),
            text,
            html,
            link: Some(link),
        };
        self.mailer
            .send(mail)
            .await
            .map_err(|err| (err.to_string(), None))
    }

    async fn post(
        &self,
        delivery: i64,
        notice: &Notice,
        url: &str,
        format: WebhookFormat,
        secret: &str,
    ) -> Sent {
        let body = match format {
            WebhookFormat::Json => notice.webhook_json(&self.console_url),
            WebhookFormat::Slack => notice.slack_json(&self.console_url),
        };
        let body = body.to_string();
        let id = format!("ntf_{delivery}");
        let timestamp = time::OffsetDateTime::now_utc().unix_timestamp();
        let signature = Webhook::new(secret)
            .and_then(|hook| hook.sign(&id, timestamp, body.as_bytes()))
            .map_err(|err| {
                (
                    format!("the subscription's secret does not sign: {err}"),
                    None,
                )
            })?;
        let answer = self
            .client
            .post(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body)
            .send()
            .await
            .map_err(|err| (describe(&err), None))?;
        let status = answer.status();
        if status.is_success() {
            return Ok(());
        }
        let text = answer.text().await.unwrap_or_default();
        let kept: String = text.chars().take(BODY_KEPT).collect();
        let why = if kept.trim().is_empty() {
            format!("the receiver answered {status}")
        } else {
            format!("the receiver answered {status}: {}", kept.trim())
        };
        Err((why, Some(status.as_u16())))
    }
}

/// A failed request in words: refused, timed out, or reqwest's reason.
fn describe(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        format!(
            "the receiver did not answer within {} s",
            WEBHOOK_TIMEOUT.as_secs()
        )
    } else if err.is_connect() {
        "the receiver could not be reached (connection refused or no route)".to_owned()
    } else {
        let mut why = err.to_string();
        let mut source = std::error::Error::source(err);
        while let Some(inner) = source {
            why.push_str(&format!(": {inner}"));
            source = inner.source();
        }
        why
    }
}

/// A fresh Standard Webhooks secret: `whsec_` and 32 random bytes in base64.
pub fn new_secret() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}
