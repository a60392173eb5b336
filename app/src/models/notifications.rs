//! Notifications: a user subscribes to a job, a pipeline run, an
//! experiment or a serving instance (or to everything of the account) for
//! chosen events, and is told by email or by a signed webhook. Each telling
//! is a delivery, retried with backoff and kept in a log its user reads.
//!
//! What happened is a [`Notice`]; the console's notifier matches notices
//! against subscriptions ([`Subscription::wants`]) and sends each match once.

use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::url::encode;

/// How many times a delivery is tried before it is marked failed.
pub const MAX_ATTEMPTS: u32 = 6;
/// How many deliveries a page of the log shows.
pub const DELIVERIES_SHOWN: usize = 50;
/// The longest name a subscription follows.
pub const MAX_SUBJECT_NAME: usize = 200;
/// The longest webhook URL accepted.
pub const MAX_URL: usize = 2000;

/// Something that happened that a user may be told of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum NotifyEvent {
    /// A job, pipeline run or experiment failed; a serving instance cannot run.
    Failed,
    /// A job, pipeline run or experiment succeeded.
    Succeeded,
    /// A pipeline run or an experiment waits because the account's quota
    /// is full.
    OverQuota,
    /// A metric alert rule fired for a job.
    Alert,
    /// A running job wrote no log line, took no metric point and used no
    /// CPU for a while (see [`crate::models::stalls`]).
    Stalled,
    /// A running job's GPUs stayed under 5% utilisation for a while.
    IdleGpus,
    /// Sent on request from the notifications page, to check a channel.
    Test,
}

impl NotifyEvent {
    /// The events a subscription may ask for, in the form's order.
    pub const SUBSCRIBABLE: [NotifyEvent; 6] = [
        Self::Failed,
        Self::Succeeded,
        Self::OverQuota,
        Self::Alert,
        Self::Stalled,
        Self::IdleGpus,
    ];

    /// The stored and wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Failed => "failed",
            Self::Succeeded => "succeeded",
            Self::OverQuota => "over_quota",
            Self::Alert => "alert",
            Self::Stalled => "stalled",
            Self::IdleGpus => "idle_gpus",
            Self::Test => "test",
        }
    }

    /// The event spelled `s`.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Failed,
            Self::Succeeded,
            Self::OverQuota,
            Self::Alert,
            Self::Stalled,
            Self::IdleGpus,
            Self::Test,
        ]
        .into_iter()
        .find(|e| e.as_str() == s)
    }

    /// In words, after the subject: "failed", "waits for quota".
    pub fn words(self) -> &'static str {
        match self {
            Self::Failed => "failed",
            Self::Succeeded => "succeeded",
            Self::OverQuota => "waits for quota",
            Self::Alert => "raised an alert",
            Self::Stalled => "stalled",
            Self::IdleGpus => "holds idle GPUs",
            Self::Test => "is followed (a test)",
        }
    }
}

/// What a subscription follows, and what a notice is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum NotifySubject {
    /// One job.
    Job {
        /// The job's name.
        name: String,
    },
    /// One pipeline run.
    Pipeline {
        /// The run's name.
        name: String,
    },
    /// One experiment.
    Experiment {
        /// The experiment's name.
        name: String,
    },
    /// One serving instance.
    Serving {
        /// The instance's name.
        name: String,
    },
    /// Everything of the account (a subscription only).
    Account,
}

impl NotifySubject {
    /// The kind's spelling: `job`, `pipeline`, `experiment`, `serving`, `account`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Job { .. } => "job",
            Self::Pipeline { .. } => "pipeline",
            Self::Experiment { .. } => "experiment",
            Self::Serving { .. } => "serving",
            Self::Account => "account",
        }
    }

    /// Its name (empty for the account).
    pub fn name(&self) -> &str {
        match self {
            Self::Job { name }
            | Self::Pipeline { name }
            | Self::Experiment { name }
            | Self::Serving { name } => name,
            Self::Account => "",
        }
    }

    /// The subject of `kind` named `name`, or a 400 on `subject.kind`.
    pub fn from_parts(kind: &str, name: &str) -> Result<Self, AppError> {
        let name = name.trim().to_owned();
        let subject = match kind {
            "job" => Self::Job { name },
            "pipeline" => Self::Pipeline { name },
            "experiment" => Self::Experiment { name },
            "serving" => Self::Serving { name },
            "account" => return Ok(Self::Account),
            other => {
                return Err(AppError::invalid(
                    "subject.kind",
                    format!(
                        "“{other}” is not something to follow: job, pipeline, experiment, serving or account."
                    ),
                ))
            }
        };
        if subject.name().is_empty() {
            return Err(AppError::invalid(
                "subject.name",
                format!("Name the {} to follow.", subject.kind()),
            ));
        }
        Ok(subject)
    }

    /// "job train-1", "everything in the account".
    pub fn label(&self) -> String {
        match self {
            Self::Account => "everything in the account".to_owned(),
            other => format!("{} {}", other.kind(), other.name()),
        }
    }

    /// Its page in the console (the account's notifications page for the
    /// account).
    pub fn href(&self) -> String {
        let name = encode(self.name());
        match self {
            Self::Job { .. } => format!("/jobs/{name}"),
            Self::Pipeline { .. } => format!("/pipelines/{name}"),
            Self::Experiment { .. } => format!("/experiments/{name}"),
            Self::Serving { .. } => format!("/serving/{name}"),
            Self::Account => "/notifications".to_owned(),
        }
    }

    /// The notifications page with the "Subscribe" form set to follow it.
    pub fn follow_href(&self) -> String {
        format!(
            "/notifications?kind={}&name={}#new-subscription",
            self.kind(),
            encode(self.name())
        )
    }

    /// The events that can happen to it.
    pub fn events(&self) -> &'static [NotifyEvent] {
        match self {
            Self::Job { .. } => &[
                NotifyEvent::Failed,
                NotifyEvent::Succeeded,
                NotifyEvent::Alert,
                NotifyEvent::Stalled,
                NotifyEvent::IdleGpus,
            ],
            Self::Pipeline { .. } | Self::Experiment { .. } => &[
                NotifyEvent::Failed,
                NotifyEvent::Succeeded,
                NotifyEvent::OverQuota,
            ],
            Self::Account => &NotifyEvent::SUBSCRIBABLE,
            Self::Serving { .. } => &[NotifyEvent::Failed],
        }
    }

    /// Whether a subscription to this covers a notice about `other`.
    pub fn covers(&self, other: &NotifySubject) -> bool {
        matches!(self, Self::Account) || self == other
    }
}

/// The body a webhook receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum WebhookFormat {
    /// `{"type", "timestamp", "data"}` as the Standard Webhooks
    /// specification shapes it.
    #[default]
    Json,
    /// `{"text"}`, what Slack's (and Mattermost's, Rocket.Chat's) incoming
    /// webhooks take.
    Slack,
}

/// How a subscription's user is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Channel {
    /// A mail to the user's address.
    Email,
    /// A signed POST to `url`.
    Webhook {
        /// Where to POST (http or https).
        url: String,
        /// The body's shape.
        #[serde(default)]
        format: WebhookFormat,
    },
}

impl Channel {
    /// "email", "webhook https://…", "Slack https://…".
    pub fn label(&self) -> String {
        match self {
            Self::Email => "email".to_owned(),
            Self::Webhook {
                url,
                format: WebhookFormat::Json,
            } => format!("webhook {url}"),
            Self::Webhook {
                url,
                format: WebhookFormat::Slack,
            } => format!("Slack {url}"),
        }
    }

    /// A 400 on `channel.url` unless a webhook's URL is an absolute http(s)
    /// URL with a host, without spaces or control characters.
    pub fn validate(&self) -> Result<(), AppError> {
        let Self::Webhook { url, .. } = self else {
            return Ok(());
        };
        let bad = |why: &str| Err(AppError::invalid("channel.url", why.to_owned()));
        if url.len() > MAX_URL {
            return bad("The URL is longer than 2,000 characters.");
        }
        if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return bad("The URL has spaces or control characters.");
        }
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"));
        let Some(rest) = rest else {
            return bad("The URL must start with http:// or https://.");
        };
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let host = host.rsplit('@').next().unwrap_or_default();
        if host.is_empty() || host.starts_with(':') {
            return bad("The URL has no host.");
        }
        Ok(())
    }
}

/// What a user asks to be told of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SubscriptionSpec {
    /// What to follow.
    pub subject: NotifySubject,
    /// Which of its events (`failed`, `succeeded`, `over_quota`, `alert`).
    pub events: Vec<NotifyEvent>,
    /// How to be told.
    pub channel: Channel,
}

impl SubscriptionSpec {
    /// A 400 naming the field at fault: no event, an event the subject
    /// cannot have, a bad webhook URL.
    pub fn validate(&self) -> Result<(), AppError> {
        let name = self.subject.name();
        if self.subject != NotifySubject::Account && name.trim().is_empty() {
            return Err(AppError::invalid(
                "subject.name",
                format!("Name the {} to follow.", self.subject.kind()),
            ));
        }
        if name.len() > MAX_SUBJECT_NAME || name.chars().any(char::is_control) {
            return Err(AppError::invalid(
                "subject.name",
                "A name is at most 200 characters, without control characters.",
            ));
        }
        if self.events.is_empty() {
            return Err(AppError::invalid("events", "Choose at least one event."));
        }
        let possible = self.subject.events();
        if let Some(bad) = self.events.iter().find(|e| !possible.contains(e)) {
            let names: Vec<&str> = possible.iter().map(|e| e.as_str()).collect();
            return Err(AppError::invalid(
                "events",
                format!(
                    "A {} has no “{}” event; it has {}.",
                    self.subject.kind(),
                    bad.as_str(),
                    names.join(", ")
                ),
            ));
        }
        self.channel.validate()
    }
}

/// A subscription as its user sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Subscription {
    /// Its id.
    pub id: i64,
    /// What it follows, which events, how.
    #[serde(flatten)]
    pub spec: SubscriptionSpec,
    /// The webhook's signing secret (`whsec_…`, Standard Webhooks), shown
    /// to its user only; none for email.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// When it was made (ms since the epoch): nothing before is sent.
    pub created_at: i64,
}

impl Subscription {
    /// Whether `notice` is one this subscription asks for.
    pub fn wants(&self, notice: &Notice) -> bool {
        notice.at >= self.created_at
            && self.spec.events.contains(&notice.event)
            && self.spec.subject.covers(&notice.subject)
    }

    /// "failed, succeeded".
    pub fn events_label(&self) -> String {
        let names: Vec<&str> = self.spec.events.iter().map(|e| e.words()).collect();
        names.join(", ")
    }
}

/// Something that happened, as it is sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Notice {
    /// The account it happened in.
    pub account: String,
    /// What it happened to.
    pub subject: NotifySubject,
    /// What happened.
    pub event: NotifyEvent,
    /// Why, in the console's words (a failed job's reason).
    pub message: String,
    /// When (ms since the epoch).
    pub at: i64,
}

impl Notice {
    /// The event's type in a webhook: `job.failed`, `pipeline.over_quota`.
    pub fn kind(&self) -> String {
        format!("{}.{}", self.subject.kind(), self.event.as_str())
    }

    /// One line: "job train-1 in ann failed: exit code 1"; a test says
    /// what it tests.
    pub fn headline(&self) -> String {
        if self.event == NotifyEvent::Test {
            return format!(
                "A test of following {} in {} ({})",
                self.subject.label(),
                self.account,
                self.message
            );
        }
        let base = format!(
            "{} in {} {}",
            self.subject.label(),
            self.account,
            self.event.words()
        );
        if self.message.is_empty() {
            base
        } else {
            format!("{base}: {}", self.message)
        }
    }

    /// The JSON body of a webhook (the Standard Webhooks shape): `type`,
    /// `timestamp` (RFC 3339) and `data`, with `url` the subject's page.
    pub fn webhook_json(&self, console_url: &str) -> serde_json::Value {
        serde_json::json!({
            "type": self.kind(),
            "timestamp": crate::models::time::format_rfc3339(self.at),
            "data": {
                "account": self.account,
                "kind": self.subject.kind(),
                "name": self.subject.name(),
                "event": self.event.as_str(),
                "message": self.message,
                "at": self.at,
                "url": format!("{}{}", console_url.trim_end_matches('/'), self.subject.href()),
            }
        })
    }

    /// The body of a Slack-compatible webhook: one `text`, with the
    /// subject linked in Slack's `<url|text>` markup.
    pub fn slack_json(&self, console_url: &str) -> serde_json::Value {
        let url = format!(
            "{}{}",
            console_url.trim_end_matches('/'),
            self.subject.href()
        );
        let escape = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        };
        let mut text = format!(
            "PaddleCloud: <{url}|{}> in {} {}",
            escape(&self.subject.label()),
            escape(&self.account),
            self.event.words()
        );
        if !self.message.is_empty() {
            text.push_str(&format!(": {}", escape(&self.message)));
        }
        serde_json::json!({ "text": text })
    }

    /// The mail's subject line.
    pub fn mail_subject(&self) -> String {
        format!(
            "PaddleCloud: {} {}",
            self.subject.label(),
            self.event.words()
        )
    }
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum DeliveryStatus {
    /// Not sent yet, or to be tried again at `next_at`.
    Pending,
    /// The receiver took it (a 2xx, or the mail server queued it).
    Delivered,
    /// Every attempt failed.
    Failed,
}

impl DeliveryStatus {
    /// Every status, in the filter's order.
    pub const ALL: [DeliveryStatus; 3] = [Self::Pending, Self::Delivered, Self::Failed];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }

    /// The status spelled `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.as_str() == s)
    }
}

/// One telling of one notice through one subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Delivery {
    /// Its id (a webhook's `webhook-id` is `ntf_<id>`, the same on each try).
    pub id: i64,
    /// The subscription it went through.
    pub subscription: i64,
    /// How it was sent ("email", "webhook …").
    pub channel: String,
    /// What it told.
    pub notice: Notice,
    /// Where it stands.
    pub status: DeliveryStatus,
    /// Tries so far.
    pub attempts: u32,
    /// The next try (pending only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_at: Option<i64>,
    /// Why the last try failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The receiver's HTTP status on the last try (webhooks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_code: Option<u16>,
    /// When it was queued.
    pub created_at: i64,
    /// When it was delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<i64>,
}

/// Which deliveries a page of the log shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "ssr", into_params(parameter_in = Query))]
pub struct DeliveryQuery {
    /// Only this status (checked by [`DeliveryQuery::status`], so a page
    /// link with a bad one is a clear 400).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ssr", param(value_type = Option<DeliveryStatus>))]
    pub status: Option<String>,
    /// Only through this subscription.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<i64>,
    /// Only older than this delivery id (the next page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
}

impl DeliveryQuery {
    /// The status asked for, or a 400 on `status`.
    pub fn status(&self) -> Result<Option<DeliveryStatus>, AppError> {
        match self.status.as_deref().filter(|s| !s.is_empty()) {
            None => Ok(None),
            Some(s) => DeliveryStatus::parse(s).map(Some).ok_or_else(|| {
                AppError::invalid(
                    "status",
                    format!("“{s}” is not a delivery status: pending, delivered or failed."),
                )
            }),
        }
    }
}

/// When try `attempts + 1` of a delivery goes, `attempts` having failed at
/// `now`: after `base_ms`, then four times longer each time (30 s, 2 min,
/// 8 min, 32 min, ~2 h with the default base); `None` once
/// [`MAX_ATTEMPTS`] have failed.
pub fn retry_at(now: i64, attempts: u32, base_ms: i64) -> Option<i64> {
    if attempts >= MAX_ATTEMPTS {
        return None;
    }
    let factor = 4_i64.saturating_pow(attempts.saturating_sub(1));
    Some(now.saturating_add(base_ms.saturating_mul(factor)))
}

/// The flat "New subscription" form, as a browser posts it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscriptionForm {
    /// `job`, `pipeline`, `experiment`, `serving` or `account`.
    pub kind: String,
    /// The subject's name.
    #[serde(default)]
    pub name: String,
    /// "on" when `failed` is ticked.
    #[serde(default)]
    pub on_failed: Option<String>,
    /// "on" when `succeeded` is ticked.
    #[serde(default)]
    pub on_succeeded: Option<String>,
    /// "on" when `over_quota` is ticked.
    #[serde(default)]
    pub on_over_quota: Option<String>,
    /// "on" when `alert` is ticked.
    #[serde(default)]
    pub on_alert: Option<String>,
    /// "on" when `stalled` is ticked.
    #[serde(default)]
    pub on_stalled: Option<String>,
    /// "on" when `idle_gpus` is ticked.
    #[serde(default)]
    pub on_idle_gpus: Option<String>,
    /// `email`, `webhook` or `slack`.
    pub channel: String,
    /// The webhook's URL.
    #[serde(default)]
    pub url: String,
}

impl SubscriptionForm {
    /// The spec the form asks for (checked by [`SubscriptionSpec::validate`]).
    pub fn to_spec(&self) -> Result<SubscriptionSpec, AppError> {
        let subject = NotifySubject::from_parts(&self.kind, &self.name)?;
        let ticked = |v: &Option<String>| v.as_deref().is_some_and(|v| !v.is_empty());
        let events = [
            (NotifyEvent::Failed, &self.on_failed),
            (NotifyEvent::Succeeded, &self.on_succeeded),
            (NotifyEvent::OverQuota, &self.on_over_quota),
            (NotifyEvent::Alert, &self.on_alert),
            (NotifyEvent::Stalled, &self.on_stalled),
            (NotifyEvent::IdleGpus, &self.on_idle_gpus),
        ]
        .into_iter()
        .filter(|(_, v)| ticked(v))
        .map(|(e, _)| e)
        .collect();
        let url = self.url.trim().to_owned();
        let channel = match self.channel.as_str() {
            "email" => Channel::Email,
            "webhook" => Channel::Webhook {
                url,
                format: WebhookFormat::Json,
            },
            "slack" => Channel::Webhook {
                url,
                format: WebhookFormat::Slack,
            },
            other => {
                return Err(AppError::invalid(
                    "channel",
                    format!("“{other}” is not a channel: email, webhook or slack."),
                ))
            }
        };
        let spec = SubscriptionSpec {
            subject,
            events,
            channel,
        };
        spec.validate()?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests;
