//! Metric alerts: rules and alerts in the database ([`SqlAlerts`], the
//! port), and [`AlertController`], one more controller on the backbone
//! (`controller.rs`), in the replica holding its lease.
//!
//! A pass reads every rule, the jobs each watches (running ones, and any
//! whose series of the tag took points in the last minute, so a job that
//! ended between passes is judged once) with one row of their series each
//! (`metric_series`: newest step and value, when its last point arrived,
//! its newest non-finite step), judges each with the model's [`judge`],
//! raises an alert and a notice (event `alert`, for the notifier) where a
//! rule fires and none is open, and resolves open alerts that no longer
//! hold or whose job is no longer watched.

use std::collections::HashMap;
use std::time::Duration;

use app::error::AppError;
use app::models::{
    alert_message, judge, Account, Alert, AlertRule, AlertRuleSpec, Me, Notice, NotifyEvent,
    NotifySubject, SeriesNow, Verdict, ALERTS_SHOWN,
};
use app::ports::{Alerts, Services};
use async_trait::async_trait;

use crate::controller::Controller;
use crate::storage::alerts::{AlertStore, StoredRule, Watched};
use crate::storage::notifications::NotifyStore;
use crate::time::now_ms;

/// A pass runs at least this often.
pub const TICK: Duration = Duration::from_secs(2);
/// Jobs whose series took points this recently are judged even if ended.
const RECENT_MS: i64 = 60_000;

/// Rules and alerts in the console's database.
pub struct SqlAlerts {
    store: AlertStore,
    notices: NotifyStore,
}

impl SqlAlerts {
    /// Alerts in `pool`.
    pub fn new(pool: crate::storage::db::Pool) -> Self {
        Self {
            store: AlertStore::new(pool.clone()),
            notices: NotifyStore::new(pool),
        }
    }

    /// The controller of these rules.
    pub fn controller(&self) -> AlertController {
        AlertController {
            store: self.store.clone(),
            notices: self.notices.clone(),
        }
    }
}

#[async_trait]
impl Alerts for SqlAlerts {
    async fn create_rule(&self, me: &Me, spec: AlertRuleSpec) -> Result<AlertRule, AppError> {
        me.role.require_change()?;
        spec.validate()?;
        let now = now_ms();
        self.store.insert(me, &spec, now).await?;
        tracing::info!(account = %me.account.name, rule = %spec.name, what = %spec.summary(), user = %me.email, "alert rule saved");
        Ok(AlertRule {
            spec,
            created_by: me.email.clone(),
            created_at: now,
            open: 0,
        })
    }

    async fn rules(&self, account: &Account) -> Result<Vec<AlertRule>, AppError> {
        Ok(self
            .store
            .rules(account.id)
            .await?
            .into_iter()
            .map(|r| r.rule)
            .collect())
    }

    async fn delete_rule(&self, me: &Me, name: &str) -> Result<(), AppError> {
        me.role.require_change()?;
        self.store.delete(me.account.id, name).await?;
        tracing::info!(account = %me.account.name, rule = name, user = %me.email, "alert rule deleted");
        Ok(())
    }

    async fn alerts(&self, account: &Account, job: Option<&str>) -> Result<Vec<Alert>, AppError> {
        self.store.alerts(account.id, job, ALERTS_SHOWN).await
    }

    async fn chart_alerts(
        &self,
        account: &Account,
        jobs: &[String],
        tags: &[String],
    ) -> Result<Vec<Alert>, AppError> {
        self.store.of_series(account.id, jobs, tags).await
    }
}

/// Checks the rules (see the module's comment).
pub struct AlertController {
    store: AlertStore,
    notices: NotifyStore,
}

impl AlertController {
    /// Runs until the process ends: a pass every [`TICK`] and on job events.
    pub async fn run(self, services: Services, pulse: crate::telemetry::Pulse) {
        let wake = std::sync::Arc::new(tokio::sync::Notify::new());
        crate::controller::drive(self, services, wake, TICK, pulse).await;
    }

    async fn check(&self, rule: &StoredRule, now: i64) -> Result<(), AppError> {
        let watched = self.store.watched(rule, now - RECENT_MS).await?;
        let mut open: HashMap<i64, (i64, Option<i64>)> = self
            .store
            .open(rule.id)
            .await?
            .into_iter()
            .map(|o| (o.job_id, (o.id, o.step)))
            .collect();
        for w in &watched {
            let series = SeriesNow {
                running: w.running,
                started_at: w.started_at,
                last_step: w.last_step,
                last_value: w.last_value,
                updated_at: w.updated_at,
                bad_step: w.bad_step,
            };
            let is_open = open.remove(&w.job_id);
            let verdict = judge(
                rule.rule.spec.condition,
                &series,
                now,
                is_open.map(|(_, step)| step),
                w.last_alert_step,
            );
            match (verdict, is_open) {
                (Verdict::Fire { step, value }, None) => {
                    self.raise(rule, w, step, value, now).await?;
                }
                (Verdict::Clear, Some((id, _))) => self.store.resolve(id, now).await?,
                _ => {}
            }
        }
        // Open alerts of jobs no longer watched: the job ended or is gone.
        for (id, _) in open.into_values() {
            self.store.resolve(id, now).await?;
        }
        Ok(())
    }

    async fn raise(
        &self,
        rule: &StoredRule,
        w: &Watched,
        step: Option<i64>,
        value: Option<f64>,
        now: i64,
    ) -> Result<(), AppError> {
        let spec = &rule.rule.spec;
        let message = alert_message(spec, step, value);
        let Some(id) = self
            .store
            .raise(rule, w, step, value, &message, now)
            .await?
        else {
            return Ok(());
        };
        tracing::info!(account = %rule.account, job = %w.job, rule = %spec.name, %message, "alert raised");
        let notice = Notice {
            account: rule.account.clone(),
            subject: NotifySubject::Job {
                name: w.job.clone(),
            },
            event: NotifyEvent::Alert,
            message: format!("alert {}: {message}", spec.name),
            at: now,
        };
        self.notices
            .raise(rule.account_id, &format!("alert:{id}"), &notice)
            .await
    }
}

impl AlertController {
    /// One pass as if it were `now` (ms): the controller's own passes use
    /// the clock; a test judges a silence a minute ahead.
    pub async fn pass_at(&self, now: i64) {
        let rules = match self.store.all_rules().await {
            Ok(rules) => rules,
            Err(err) => {
                tracing::warn!(error = %err, "reading the alert rules");
                return;
            }
        };
        for rule in &rules {
            if let Err(err) = self.check(rule, now).await {
                tracing::warn!(error = %err, rule = %rule.rule.spec.name, "checking an alert rule");
            }
        }
    }
}

#[async_trait]
impl Controller for AlertController {
    async fn pass(&self, _services: &Services) {
        self.pass_at(now_ms()).await;
    }
}
