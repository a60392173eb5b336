//! Notifications: subscriptions and their log in the database
//! ([`SqlNotifications`], the port), and [`Notifier`], one more controller
//! on the backbone (`controller.rs`), in the replica holding its lease.
//!
//! A pass reads what happened since its cursor (less [`LOOKBACK_MS`], for
//! rows whose time was set just before their commit): jobs, pipeline runs
//! and experiments that ended, serving instances that failed, and the
//! notices the console raised (a pipeline run waiting for quota). Each is
//! matched against the account's subscriptions and queued once per
//! subscription (the delivery's key is unique, so overlapping passes and a
//! replica taking over queue nothing twice). Then it tries the deliveries
//! that are due, and a failed try is tried again later, four times longer
//! each time, up to [`MAX_ATTEMPTS`](app::models::MAX_ATTEMPTS).

pub mod send;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use app::error::AppError;
use app::models::{
    retry_at, Delivery, DeliveryQuery, Me, Notice, NotifyEvent, Subscription, SubscriptionSpec,
    DELIVERIES_SHOWN,
};
use app::ports::{Mailer, Notifications, Services};
use async_trait::async_trait;
use futures_util::future::join_all;
use tokio::sync::Notify;

use self::send::{new_secret, Sender};
use crate::controller::Controller;
use crate::secrets::seal::Sealer;
use crate::storage::notifications::{Keyed, NotifyStore, Tried};
use crate::time::now_ms;

/// How far below its cursor a pass reads again.
pub const LOOKBACK_MS: i64 = 60_000;
/// A pass runs at least this often (a retry's time comes).
pub const TICK: Duration = Duration::from_secs(2);
/// How many deliveries one pass tries (at once).
const BATCH: usize = 20;
/// How long ended deliveries (and raised notices) are kept.
const KEEP_MS: i64 = 30 * 24 * 3600 * 1000;
/// How often old ones are deleted.
const PRUNE_EVERY_MS: i64 = 3600 * 1000;

/// Subscriptions and deliveries in the console's database.
pub struct SqlNotifications {
    store: NotifyStore,
    wake: Arc<Notify>,
    /// Seals webhook signing secrets at rest.
    sealer: Arc<Sealer>,
}

/// What a sealed webhook secret starts with in the database (as
/// `NotifyStore::unsealed_secrets` knows).
const SEALED: &str = "sealed:";

/// A webhook secret as it is stored: sealed for its account.
fn seal_secret(sealer: &Sealer, account_id: i64, secret: &str) -> String {
    format!(
        "{SEALED}{}",
        sealer.seal(account_id, "webhook-secret", secret.as_bytes())
    )
}

/// A stored webhook secret, opened (one from before sealing is as it was).
fn open_secret(sealer: &Sealer, account_id: i64, stored: Option<String>) -> Option<String> {
    let stored = stored?;
    match stored.strip_prefix(SEALED) {
        Some(sealed) => sealer
            .open(account_id, "webhook-secret", sealed)
            .and_then(|b| String::from_utf8(b).ok())
            .or_else(|| {
                tracing::error!(account_id, "a webhook secret did not open (another key?)");
                None
            }),
        None => Some(stored),
    }
}

impl SqlNotifications {
    /// Notifications in `pool`, their webhook secrets sealed by `sealer`.
    pub fn new(pool: crate::storage::db::Pool, sealer: Arc<Sealer>) -> Self {
        Self {
            store: NotifyStore::new(pool),
            wake: Arc::new(Notify::new()),
            sealer,
        }
    }

    /// Seals the webhook secrets stored before they were sealed; how many.
    pub async fn seal_stored_secrets(&self) -> Result<usize, AppError> {
        let plain = self.store.unsealed_secrets().await?;
        for (id, account_id, secret) in &plain {
            let sealed = seal_secret(&self.sealer, *account_id, secret);
            self.store.set_secret(*id, &sealed).await?;
        }
        Ok(plain.len())
    }

    fn opened(&self, mut subscription: Subscription, account_id: i64) -> Subscription {
        subscription.secret = open_secret(&self.sealer, account_id, subscription.secret.take());
        subscription
    }

    /// The notifier that sends these subscriptions' deliveries through
    /// `mailer` and webhooks, linking to `console_url`, a failed try again
    /// after `retry_base` (then four times longer each time).
    pub fn notifier(
        &self,
        mailer: Arc<dyn Mailer>,
        console_url: String,
        retry_base: Duration,
    ) -> Notifier {
        Notifier {
            store: self.store.clone(),
            wake: self.wake.clone(),
            sealer: self.sealer.clone(),
            sender: Sender::new(mailer, console_url),
            retry_base_ms: i64::try_from(retry_base.as_millis()).unwrap_or(i64::MAX),
            pruned_at: std::sync::Mutex::new(0),
        }
    }
}

#[async_trait]
impl Notifications for SqlNotifications {
    async fn subscribe(&self, me: &Me, spec: SubscriptionSpec) -> Result<Subscription, AppError> {
        spec.validate()?;
        let secret = matches!(spec.channel, app::models::Channel::Webhook { .. })
            .then(new_secret)
            .map(|s| seal_secret(&self.sealer, me.account.id, &s));
        let id = self
            .store
            .insert(me, &spec, secret.as_deref(), now_ms())
            .await?;
        tracing::info!(account = %me.account.name, user = %me.email, subject = %spec.subject.label(), channel = %spec.channel.label(), "subscribed");
        Ok(self.opened(self.store.get(me, id).await?, me.account.id))
    }

    async fn subscriptions(&self, me: &Me) -> Result<Vec<Subscription>, AppError> {
        let list = self.store.list(me).await?;
        Ok(list
            .into_iter()
            .map(|s| self.opened(s, me.account.id))
            .collect())
    }

    async fn unsubscribe(&self, me: &Me, id: i64) -> Result<(), AppError> {
        self.store.delete(me, id).await?;
        tracing::info!(account = %me.account.name, user = %me.email, subscription = id, "unsubscribed");
        Ok(())
    }

    async fn send_test(&self, me: &Me, id: i64) -> Result<Delivery, AppError> {
        let subscription = self.store.get(me, id).await?;
        let now = now_ms();
        let notice = Notice {
            account: me.account.name.clone(),
            subject: subscription.spec.subject.clone(),
            event: NotifyEvent::Test,
            message: format!("a test {} asked for", me.email),
            at: now,
        };
        let key = format!(
            "test:{now}:{}",
            &crate::storage::tokens::random_token()[..16]
        );
        let delivery = self
            .store
            .enqueue(id, &key, &notice, now)
            .await?
            .ok_or(AppError::Internal)?;
        self.wake.notify_one();
        self.store.delivery(delivery).await
    }

    async fn deliveries(&self, me: &Me, query: &DeliveryQuery) -> Result<Vec<Delivery>, AppError> {
        let status = query.status()?;
        self.store
            .deliveries(
                me,
                status,
                query.subscription,
                query.before,
                DELIVERIES_SHOWN,
            )
            .await
    }
}

/// Turns what happens into deliveries and sends them (see the module's
/// comment).
pub struct Notifier {
    store: NotifyStore,
    wake: Arc<Notify>,
    sealer: Arc<Sealer>,
    sender: Sender,
    retry_base_ms: i64,
    pruned_at: std::sync::Mutex<i64>,
}

impl Notifier {
    /// Runs until the process ends: a pass on each job event, on a new
    /// subscription's test or a raised notice, and every [`TICK`].
    pub async fn run(self, services: Services, pulse: crate::telemetry::Pulse) {
        let wake = self.wake.clone();
        crate::controller::drive(self, services, wake, TICK, pulse).await;
    }

    /// Queues what happened since the cursor for its subscribers.
    async fn gather(&self, now: i64) -> Result<usize, AppError> {
        let since = self.store.cursor().await?.unwrap_or(now) - LOOKBACK_MS;
        let found = self.store.notices_since(since).await?;
        let mut by_account: BTreeMap<i64, Vec<Keyed>> = BTreeMap::new();
        for keyed in found {
            by_account.entry(keyed.account_id).or_default().push(keyed);
        }
        let mut queued = 0;
        for (account, notices) in by_account {
            let subscribers = self.store.subscribers(account).await?;
            for keyed in &notices {
                for sub in subscribers
                    .iter()
                    .filter(|s| s.subscription.wants(&keyed.notice))
                {
                    let id = sub.subscription.id;
                    if self
                        .store
                        .enqueue(id, &keyed.key, &keyed.notice, now)
                        .await?
                        .is_some()
                    {
                        queued += 1;
                    }
                }
            }
        }
        self.store.set_cursor(now).await?;
        Ok(queued)
    }

    /// Tries the deliveries that are due.
    async fn deliver(&self) -> Result<(), AppError> {
        let mut due = self.store.due(now_ms(), BATCH).await?;
        for d in &mut due {
            d.secret = open_secret(&self.sealer, d.account_id, d.secret.take());
        }
        let tries = due.iter().map(|d| async move {
            let sent = self.sender.send(d).await;
            let now = now_ms();
            let attempt = d.attempts.saturating_add(1);
            let tried = match sent {
                Ok(()) => Tried {
                    error: None,
                    code: None,
                    next_at: None,
                },
                Err((why, code)) => {
                    tracing::info!(delivery = d.id, attempt, error = %why, "a notification was not delivered");
                    Tried {
                        next_at: retry_at(now, attempt, self.retry_base_ms),
                        error: Some(why),
                        code,
                    }
                }
            };
            if let Err(err) = self.store.record(d.id, attempt, &tried, now).await {
                tracing::warn!(error = %err, delivery = d.id, "a delivery's try was not recorded");
            }
        });
        join_all(tries).await;
        Ok(())
    }

    fn prune_due(&self, now: i64) -> bool {
        let mut at = self.pruned_at.lock().unwrap_or_else(|e| e.into_inner());
        if now - *at < PRUNE_EVERY_MS {
            return false;
        }
        *at = now;
        true
    }
}

#[async_trait]
impl Controller for Notifier {
    async fn pass(&self, _services: &Services) {
        let now = now_ms();
        if let Err(err) = self.gather(now).await {
            tracing::warn!(error = %err, "the notifier could not read what happened");
        }
        if let Err(err) = self.deliver().await {
            tracing::warn!(error = %err, "the notifier could not send");
        }
        if self.prune_due(now) {
            if let Err(err) = self.store.prune(now - KEEP_MS).await {
                tracing::warn!(error = %err, "old deliveries were not pruned");
            }
        }
    }
}
