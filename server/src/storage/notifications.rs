//! SQL for notifications: subscriptions (`notify_subscriptions`), the
//! notices the console raises itself (`notices`), what the notifier reads
//! of jobs, pipeline runs, experiments and serving instances, the queue and
//! log of deliveries (`notify_deliveries`) and the notifier's cursor.

use app::error::AppError;
use app::models::{
    Channel, Delivery, DeliveryStatus, Me, Notice, NotifyEvent, NotifySubject, Subscription,
    SubscriptionSpec,
};
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};

use super::{internal, to_json};
use crate::storage::db::WriteTx;

const SUBSCRIPTION_COLUMNS: &str =
    "s.id, s.subject_kind, s.subject_name, s.events, s.channel, s.secret, s.created_at";

const DELIVERY_COLUMNS: &str = "d.id, d.subscription_id, d.notice, d.status, d.attempts, \
     d.next_at, d.last_error, d.response_code, d.created_at, d.delivered_at, s.channel";

fn corrupt(what: &'static str) -> impl Fn(serde_json::Error) -> AppError {
    move |err| {
        tracing::error!(error = %err, "a stored {what} does not read back");
        AppError::Internal
    }
}

fn subscription_from(row: &AnyRow) -> Result<Subscription, AppError> {
    let get = |e: sqlx::Error| internal("read a subscription")(e);
    let kind: String = row.try_get("subject_kind").map_err(get)?;
    let name: String = row.try_get("subject_name").map_err(get)?;
    let events: String = row.try_get("events").map_err(get)?;
    let channel: String = row.try_get("channel").map_err(get)?;
    Ok(Subscription {
        id: row.try_get("id").map_err(get)?,
        spec: SubscriptionSpec {
            subject: NotifySubject::from_parts(&kind, &name)?,
            events: serde_json::from_str(&events).map_err(corrupt("subscription"))?,
            channel: serde_json::from_str(&channel).map_err(corrupt("subscription"))?,
        },
        secret: row.try_get("secret").map_err(get)?,
        created_at: row.try_get("created_at").map_err(get)?,
    })
}

fn delivery_from(row: &AnyRow) -> Result<Delivery, AppError> {
    let get = |e: sqlx::Error| internal("read a delivery")(e);
    let notice: String = row.try_get("notice").map_err(get)?;
    let status: String = row.try_get("status").map_err(get)?;
    let channel: String = row.try_get("channel").map_err(get)?;
    let channel: Channel = serde_json::from_str(&channel).map_err(corrupt("subscription"))?;
    let attempts: i64 = row.try_get("attempts").map_err(get)?;
    let code: Option<i64> = row.try_get("response_code").map_err(get)?;
    Ok(Delivery {
        id: row.try_get("id").map_err(get)?,
        subscription: row.try_get("subscription_id").map_err(get)?,
        channel: channel.label(),
        notice: serde_json::from_str(&notice).map_err(corrupt("delivery"))?,
        status: DeliveryStatus::parse(&status).unwrap_or(DeliveryStatus::Failed),
        attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        next_at: row.try_get("next_at").map_err(get)?,
        last_error: row.try_get("last_error").map_err(get)?,
        response_code: code.and_then(|c| u16::try_from(c).ok()),
        created_at: row.try_get("created_at").map_err(get)?,
        delivered_at: row.try_get("delivered_at").map_err(get)?,
    })
}

/// A subscription with whom and where it tells.
#[derive(Debug, Clone)]
pub struct Subscriber {
    /// The subscription.
    pub subscription: Subscription,
    /// Its user's address.
    pub email: String,
}

/// A delivery due to be tried, with what trying it needs.
#[derive(Debug, Clone)]
pub struct Due {
    /// The delivery's id.
    pub id: i64,
    /// The subscription's account's id.
    pub account_id: i64,
    /// Tries so far.
    pub attempts: u32,
    /// What it tells.
    pub notice: Notice,
    /// How.
    pub channel: Channel,
    /// A webhook's signing secret.
    pub secret: Option<String>,
    /// The subscriber's address (email).
    pub email: String,
}

/// A notice with the account it belongs to and its unique key.
#[derive(Debug, Clone)]
pub struct Keyed {
    /// The account's id.
    pub account_id: i64,
    /// What makes it one notice: `job:<id>:failed`, a raised notice's key.
    pub key: String,
    /// The notice.
    pub notice: Notice,
}

/// How one try went.
#[derive(Debug, Clone)]
pub struct Tried {
    /// Delivered (true), or why not.
    pub error: Option<String>,
    /// The receiver's HTTP status.
    pub code: Option<u16>,
    /// The next try, when it failed and tries are left.
    pub next_at: Option<i64>,
}

/// Notifications in the console's database.
#[derive(Clone)]
pub struct NotifyStore {
    pool: AnyPool,
}

impl NotifyStore {
    /// Over `pool`.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    /// Keeps `spec` as `me`'s subscription; its id.
    pub async fn insert(
        &self,
        me: &Me,
        spec: &SubscriptionSpec,
        secret: Option<&str>,
        now: i64,
    ) -> Result<i64, AppError> {
        let (id,): (i64,) = sqlx::query_as(
            "INSERT INTO notify_subscriptions (account_id, user_id, subject_kind, subject_name, \
             events, channel, secret, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             RETURNING id",
        )
        .bind(me.account.id)
        .bind(me.user_id)
        .bind(spec.subject.kind())
        .bind(spec.subject.name())
        .bind(to_json(&spec.events)?)
        .bind(to_json(&spec.channel)?)
        .bind(secret)
        .bind(now)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("insert a subscription"))?;
        Ok(id)
    }

    /// Webhook secrets stored before they were sealed (sealed ones start
    /// with `sealed:`): `(id, account id, secret)`.
    pub async fn unsealed_secrets(&self) -> Result<Vec<(i64, i64, String)>, AppError> {
        sqlx::query_as(
            "SELECT id, account_id, secret FROM notify_subscriptions \
             WHERE secret IS NOT NULL AND secret NOT LIKE 'sealed:%'",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read webhook secrets"))
    }

    /// Replaces subscription `id`'s stored secret (with its sealed form).
    pub async fn set_secret(&self, id: i64, secret: &str) -> Result<(), AppError> {
        sqlx::query("UPDATE notify_subscriptions SET secret = $1 WHERE id = $2")
            .bind(secret)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(internal("seal a webhook secret"))?;
        Ok(())
    }

    /// `me`'s subscriptions in their account, newest first.
    pub async fn list(&self, me: &Me) -> Result<Vec<Subscription>, AppError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM notify_subscriptions s \
             WHERE s.account_id = $1 AND s.user_id = $2 ORDER BY s.id DESC"
        )))
        .bind(me.account.id)
        .bind(me.user_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list subscriptions"))?;
        rows.iter().map(subscription_from).collect()
    }

    /// `me`'s subscription `id` (a 404 if it is someone else's).
    pub async fn get(&self, me: &Me, id: i64) -> Result<Subscription, AppError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM notify_subscriptions s \
             WHERE s.account_id = $1 AND s.user_id = $2 AND s.id = $3"
        )))
        .bind(me.account.id)
        .bind(me.user_id)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a subscription"))?;
        match row {
            Some(row) => subscription_from(&row),
            None => Err(AppError::not_found(format!("Subscription {id}"))),
        }
    }

    /// Deletes `me`'s subscription `id` and its deliveries.
    pub async fn delete(&self, me: &Me, id: i64) -> Result<(), AppError> {
        let mut tx = self.pool.begin_write().await.map_err(internal("begin"))?;
        let gone = sqlx::query(
            "DELETE FROM notify_subscriptions WHERE account_id = $1 AND user_id = $2 AND id = $3",
        )
        .bind(me.account.id)
        .bind(me.user_id)
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(internal("delete a subscription"))?;
        if gone.rows_affected() == 0 {
            return Err(AppError::not_found(format!("Subscription {id}")));
        }
        // Not left to the foreign key: SQLite enforces it only with the
        // pragma on.
        sqlx::query("DELETE FROM notify_deliveries WHERE subscription_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(internal("delete a subscription's deliveries"))?;
        tx.commit().await.map_err(internal("commit"))?;
        Ok(())
    }

    /// A page of `me`'s deliveries, newest first.
    pub async fn deliveries(
        &self,
        me: &Me,
        status: Option<DeliveryStatus>,
        subscription: Option<i64>,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Delivery>, AppError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {DELIVERY_COLUMNS} FROM notify_deliveries d \
             JOIN notify_subscriptions s ON s.id = d.subscription_id \
             WHERE s.account_id = $1 AND s.user_id = $2 \
             AND ($3 IS NULL OR d.status = $3) AND ($4 IS NULL OR d.subscription_id = $4) \
             AND ($5 IS NULL OR d.id < $5) ORDER BY d.id DESC LIMIT $6"
        )))
        .bind(me.account.id)
        .bind(me.user_id)
        .bind(status.map(DeliveryStatus::as_str))
        .bind(subscription)
        .bind(before)
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list deliveries"))?;
        rows.iter().map(delivery_from).collect()
    }

    /// Delivery `id`.
    pub async fn delivery(&self, id: i64) -> Result<Delivery, AppError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {DELIVERY_COLUMNS} FROM notify_deliveries d \
             JOIN notify_subscriptions s ON s.id = d.subscription_id WHERE d.id = $1"
        )))
        .bind(id)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("read a delivery"))?;
        delivery_from(&row)
    }

    /// Records a notice the console raises (once per `key`).
    pub async fn raise(&self, account_id: i64, key: &str, notice: &Notice) -> Result<(), AppError> {
        sqlx::query(
            "INSERT INTO notices (account_id, notice_key, subject_kind, subject_name, event, \
             message, at) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (notice_key) DO NOTHING",
        )
        .bind(account_id)
        .bind(key)
        .bind(notice.subject.kind())
        .bind(notice.subject.name())
        .bind(notice.event.as_str())
        .bind(&notice.message)
        .bind(notice.at)
        .execute(&self.pool)
        .await
        .map_err(internal("raise a notice"))?;
        Ok(())
    }

    /// Where the notifier read up to (`None` before its first pass).
    pub async fn cursor(&self) -> Result<Option<i64>, AppError> {
        let at: Option<(i64,)> =
            sqlx::query_as("SELECT at FROM notify_cursor WHERE source = 'notices'")
                .fetch_optional(&self.pool)
                .await
                .map_err(internal("read the notifier's cursor"))?;
        Ok(at.map(|(at,)| at))
    }

    /// Moves the notifier's cursor to `at`.
    pub async fn set_cursor(&self, at: i64) -> Result<(), AppError> {
        sqlx::query(
            "INSERT INTO notify_cursor (source, at) VALUES ('notices', $1) \
             ON CONFLICT (source) DO UPDATE SET at = excluded.at",
        )
        .bind(at)
        .execute(&self.pool)
        .await
        .map_err(internal("move the notifier's cursor"))?;
        Ok(())
    }

    /// Everything that happened at or after `since`: jobs, pipeline runs and
    /// experiments that failed or succeeded, serving instances that failed,
    /// and the notices the console raised.
    pub async fn notices_since(&self, since: i64) -> Result<Vec<Keyed>, AppError> {
        // (key, account id, account, kind, name, event, message, at)
        let sources = [
            "SELECT 'job:' || CAST(j.id AS TEXT) || ':' || h.state, j.account_id, a.name, 'job', \
             j.name, h.state, h.message, h.at FROM job_history h JOIN jobs j ON j.id = h.job_id \
             JOIN accounts a ON a.id = j.account_id WHERE h.at >= $1 AND h.pod IS NULL \
             AND h.state IN ('failed', 'succeeded')",
            "SELECT 'pipeline:' || CAST(p.id AS TEXT) || ':' || p.status, p.account_id, a.name, \
             'pipeline', p.name, p.status, p.message, p.finished_at FROM pipeline_runs p \
             JOIN accounts a ON a.id = p.account_id WHERE p.finished_at >= $1 \
             AND p.status IN ('failed', 'succeeded')",
            "SELECT 'experiment:' || CAST(e.id AS TEXT) || ':' || e.status, e.account_id, a.name, \
             'experiment', e.name, e.status, e.message, e.ended_at FROM experiments e \
             JOIN accounts a ON a.id = e.account_id WHERE e.ended_at >= $1 \
             AND e.status IN ('failed', 'succeeded')",
            "SELECT 'serving:' || CAST(s.id AS TEXT) || ':failed', s.account_id, a.name, \
             'serving', s.name, s.status, s.message, s.ended_at FROM serving s \
             JOIN accounts a ON a.id = s.account_id WHERE s.ended_at >= $1 AND s.status = 'failed'",
            "SELECT n.notice_key, n.account_id, a.name, n.subject_kind, n.subject_name, n.event, \
             n.message, n.at FROM notices n JOIN accounts a ON a.id = n.account_id \
             WHERE n.at >= $1",
        ];
        let mut found = Vec::new();
        for sql in sources {
            let rows = sqlx::query(sql)
                .bind(since)
                .fetch_all(&self.pool)
                .await
                .map_err(internal("read what happened"))?;
            for row in &rows {
                let get = |e: sqlx::Error| internal("read what happened")(e);
                let kind: String = row.try_get(3).map_err(get)?;
                let name: String = row.try_get(4).map_err(get)?;
                let event: String = row.try_get(5).map_err(get)?;
                let Some(event) = NotifyEvent::parse(&event) else {
                    continue;
                };
                let Ok(subject) = NotifySubject::from_parts(&kind, &name) else {
                    continue;
                };
                found.push(Keyed {
                    key: row.try_get(0).map_err(get)?,
                    account_id: row.try_get(1).map_err(get)?,
                    notice: Notice {
                        account: row.try_get(2).map_err(get)?,
                        subject,
                        event,
                        message: row.try_get(6).map_err(get)?,
                        at: row.try_get(7).map_err(get)?,
                    },
                });
            }
        }
        Ok(found)
    }

    /// The account's subscriptions whose users are still its members, with
    /// their addresses.
    pub async fn subscribers(&self, account_id: i64) -> Result<Vec<Subscriber>, AppError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SUBSCRIPTION_COLUMNS}, u.email FROM notify_subscriptions s \
             JOIN users u ON u.id = s.user_id \
             JOIN memberships m ON m.account_id = s.account_id AND m.user_id = s.user_id \
             WHERE s.account_id = $1"
        )))
        .bind(account_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read an account's subscribers"))?;
        rows.iter()
            .map(|row| {
                Ok(Subscriber {
                    subscription: subscription_from(row)?,
                    email: row
                        .try_get("email")
                        .map_err(internal("read a subscriber"))?,
                })
            })
            .collect()
    }

    /// Queues `notice` (keyed `key`) through subscription `subscription`,
    /// unless it is queued already; the new delivery's id.
    pub async fn enqueue(
        &self,
        subscription: i64,
        key: &str,
        notice: &Notice,
        now: i64,
    ) -> Result<Option<i64>, AppError> {
        let row: Option<(i64,)> = sqlx::query_as(
            "INSERT INTO notify_deliveries (subscription_id, notice_key, notice, status, \
             attempts, next_at, created_at) VALUES ($1, $2, $3, 'pending', 0, $4, $4) \
             ON CONFLICT (subscription_id, notice_key) DO NOTHING RETURNING id",
        )
        .bind(subscription)
        .bind(key)
        .bind(to_json(notice)?)
        .bind(now)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("queue a delivery"))?;
        Ok(row.map(|(id,)| id))
    }

    /// Up to `limit` pending deliveries whose try is due at `now`, oldest
    /// first.
    pub async fn due(&self, now: i64, limit: usize) -> Result<Vec<Due>, AppError> {
        let rows = sqlx::query(
            "SELECT d.id, d.attempts, d.notice, s.account_id, s.channel, s.secret, u.email \
             FROM notify_deliveries d JOIN notify_subscriptions s ON s.id = d.subscription_id \
             JOIN users u ON u.id = s.user_id \
             WHERE d.status = 'pending' AND d.next_at <= $1 ORDER BY d.next_at, d.id LIMIT $2",
        )
        .bind(now)
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read the deliveries due"))?;
        rows.iter()
            .map(|row| {
                let get = |e: sqlx::Error| internal("read a delivery due")(e);
                let notice: String = row.try_get("notice").map_err(get)?;
                let channel: String = row.try_get("channel").map_err(get)?;
                let attempts: i64 = row.try_get("attempts").map_err(get)?;
                Ok(Due {
                    id: row.try_get("id").map_err(get)?,
                    account_id: row.try_get("account_id").map_err(get)?,
                    attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                    notice: serde_json::from_str(&notice).map_err(corrupt("delivery"))?,
                    channel: serde_json::from_str(&channel).map_err(corrupt("subscription"))?,
                    secret: row.try_get("secret").map_err(get)?,
                    email: row.try_get("email").map_err(get)?,
                })
            })
            .collect()
    }

    /// Records try `attempt` of delivery `id`, made at `now`.
    pub async fn record(
        &self,
        id: i64,
        attempt: u32,
        tried: &Tried,
        now: i64,
    ) -> Result<(), AppError> {
        let status = match (&tried.error, tried.next_at) {
            (None, _) => DeliveryStatus::Delivered,
            (Some(_), Some(_)) => DeliveryStatus::Pending,
            (Some(_), None) => DeliveryStatus::Failed,
        };
        sqlx::query(
            "UPDATE notify_deliveries SET status = $2, attempts = $3, next_at = $4, \
             last_error = $5, response_code = $6, delivered_at = $7 WHERE id = $1",
        )
        .bind(id)
        .bind(status.as_str())
        .bind(i64::from(attempt))
        .bind(tried.next_at)
        .bind(tried.error.as_deref())
        .bind(tried.code.map(i64::from))
        .bind(tried.error.is_none().then_some(now))
        .execute(&self.pool)
        .await
        .map_err(internal("record a delivery's try"))?;
        Ok(())
    }

    /// Forgets deliveries that ended and notices older than `before`.
    pub async fn prune(&self, before: i64) -> Result<(), AppError> {
        sqlx::query("DELETE FROM notify_deliveries WHERE status <> 'pending' AND created_at < $1")
            .bind(before)
            .execute(&self.pool)
            .await
            .map_err(internal("prune deliveries"))?;
        sqlx::query("DELETE FROM notices WHERE at < $1")
            .bind(before)
            .execute(&self.pool)
            .await
            .map_err(internal("prune notices"))?;
        Ok(())
    }
}
