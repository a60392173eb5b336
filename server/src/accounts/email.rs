//! Confirming a user's address: the mail, its link, and the resend.

use app::error::AppError;
use app::models::{Me, CONFIRM_LINK_DAYS};
use app::ports::{Mail, Principal};

use super::SqlAccounts;
use crate::storage::accounts::{self as store, LinkUse};
use crate::storage::throttle::Limit;
use crate::storage::user_links::{self, Purpose};

/// One confirmation mail per user per minute, five per day.
const RESEND_BURST: Limit = Limit {
    kind: "confirm-user-minute",
    max: 1,
    window_ms: 60_000,
};
const RESEND_DAY: Limit = Limit {
    kind: "confirm-user-day",
    max: 5,
    window_ms: 86_400_000,
};

/// A mail with one link: a greeting, what the link does, and what to do if
/// the reader did not ask for it. Plain text and the same words in HTML.
pub(super) fn mail_with_link(
    to: &str,
    subject: &str,
    lines: &[&str],
    action: &str,
    link: String,
    after: &str,
) -> Mail {
    let esc = |s: &str| html_escape::encode_text(s).into_owned();
    let mut text = String::from("Hello,\n\n");
    let mut html = String::from("<p>Hello,</p>\n");
    for line in lines {
        text.push_str(line);
        text.push_str("\n\n");
        html.push_str(&format!("<p>{}</p>\n", esc(line)));
    }
    text.push_str(&format!("{action}:\n{link}\n\n{after}\n\n— PaddleCloud\n"));
    html.push_str(&format!(
        "<p><a href=\"{href}\">{action}</a></p>\n<p>Or open this address: {text_link}</p>\n<p>{after}</p>\n<p>— PaddleCloud</p>\n",
        href = html_escape::encode_double_quoted_attribute(&link),
        action = esc(action),
        text_link = esc(&link),
        after = esc(after),
    ));
    Mail {
        to: to.to_owned(),
        subject: subject.to_owned(),
        text,
        html,
        link: Some(link),
    }
}

impl SqlAccounts {
    /// Mails `me` a link that confirms their address.
    pub(super) async fn send_confirmation(&self, me: &Me) -> Result<(), AppError> {
        let token = user_links::issue(&self.pool, me.user_id, Purpose::Confirm).await?;
        let link = format!("{}/confirm?token={token}", self.mail.public_url);
        let account = format!(
            "You (or someone with your address) signed up for the PaddleCloud account “{}” as {}.",
            me.account.name, me.email
        );
        let days = format!("The link works for {CONFIRM_LINK_DAYS} days.");
        self.mail
            .mailer
            .send(mail_with_link(
                &me.email,
                "Confirm your email address for PaddleCloud",
                &[&account, &days],
                "Confirm my email address",
                link,
                "If this was not you, ignore this mail: nothing more will be sent.",
            ))
            .await
    }

    pub(super) async fn confirm(&self, token: &str) -> Result<(), AppError> {
        let used = store::confirm_email(&self.pool, token, "email.confirmed", |email| {
            format!("{email} confirmed their address")
        })
        .await?;
        match used {
            LinkUse::Used(_) => Ok(()),
            LinkUse::NoUser => Err(AppError::not_found("User")),
            LinkUse::Invalid => Err(AppError::invalid(
                "token",
                "This confirmation link is not valid: it was used, it expired, or it was \
                 copied incompletely. Ask for a new one on the Account page.",
            )),
        }
    }

    pub(super) async fn resend(&self, who: &Principal) -> Result<(), AppError> {
        if who.me.email_confirmed {
            return Err(AppError::conflict(
                "email",
                "Your address is already confirmed.",
            ));
        }
        self.send_another_confirmation(&who.me).await
    }

    /// Mails `me` another confirmation link, within the limits that keep
    /// the console from mailing one address over and over (whatever asks:
    /// the Account page, or a sign-in refused for want of one).
    pub(super) async fn send_another_confirmation(&self, me: &Me) -> Result<(), AppError> {
        let user = me.user_id.to_string();
        if !RESEND_BURST.take(&self.pool, &user).await? {
            return Err(AppError::TooMany {
                message: "A confirmation mail went out less than a minute ago; check your inbox \
                          (and spam) before asking again."
                    .to_owned(),
            });
        }
        if !RESEND_DAY.take(&self.pool, &user).await? {
            return Err(AppError::TooMany {
                message: "Five confirmation mails went out today; try again tomorrow.".to_owned(),
            });
        }
        self.send_confirmation(me).await
    }
}
