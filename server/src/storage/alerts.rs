//! SQL for metric alerts: rules (`alert_rules`), what the controller reads
//! of the jobs and series a rule watches, and the alerts raised
//! (`alerts`).

use app::error::AppError;
use app::models::{Alert, AlertRule, AlertRuleSpec, Me};
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};

use super::{internal, numbered_list, to_json};
use crate::storage::db::WriteTx;

/// A rule with its ids.
#[derive(Debug, Clone)]
pub struct StoredRule {
    /// Its id.
    pub id: i64,
    /// Its account's id.
    pub account_id: i64,
    /// Its account's name.
    pub account: String,
    /// The rule.
    pub rule: AlertRule,
}

/// One job a rule watches, and its series of the rule's tag.
#[derive(Debug, Clone)]
pub struct Watched {
    /// The job's id.
    pub job_id: i64,
    /// Its name.
    pub job: String,
    /// Whether it runs.
    pub running: bool,
    /// When it started (or was created).
    pub started_at: i64,
    /// Its series' newest step (none: no point yet).
    pub last_step: Option<i64>,
    /// Its newest value (NaN when the newest point is NaN).
    pub last_value: Option<f64>,
    /// When its newest point arrived.
    pub updated_at: Option<i64>,
    /// The newest step whose value was NaN or infinite.
    pub bad_step: Option<i64>,
    /// The step of the rule's newest alert for this job, open or not.
    pub last_alert_step: Option<i64>,
}

/// An alert still open.
#[derive(Debug, Clone)]
pub struct Open {
    /// Its id.
    pub id: i64,
    /// Its job's id.
    pub job_id: i64,
    /// The step it fired at.
    pub step: Option<i64>,
}

fn rule_from(row: &AnyRow) -> Result<StoredRule, AppError> {
    let get = |e: sqlx::Error| internal("read an alert rule")(e);
    let spec: String = row.try_get("spec").map_err(get)?;
    let spec: AlertRuleSpec = serde_json::from_str(&spec).map_err(|err| {
        tracing::error!(error = %err, "a stored alert rule does not read back");
        AppError::Internal
    })?;
    let open: i64 = row.try_get("open").map_err(get)?;
    Ok(StoredRule {
        id: row.try_get("id").map_err(get)?,
        account_id: row.try_get("account_id").map_err(get)?,
        account: row.try_get("account").map_err(get)?,
        rule: AlertRule {
            spec,
            created_by: row.try_get("created_by").map_err(get)?,
            created_at: row.try_get("created_at").map_err(get)?,
            open: u32::try_from(open).unwrap_or(u32::MAX),
        },
    })
}

const RULE_SELECT: &str = "SELECT r.id, r.account_id, a.name AS account, r.spec, r.created_by, \
     r.created_at, (SELECT COUNT(*) FROM alerts x WHERE x.rule_id = r.id \
     AND x.resolved_at IS NULL) AS open FROM alert_rules r JOIN accounts a ON a.id = r.account_id";

fn alert_from(row: &AnyRow) -> Result<Alert, AppError> {
    let get = |e: sqlx::Error| internal("read an alert")(e);
    Ok(Alert {
        id: row.try_get("id").map_err(get)?,
        rule: row.try_get("rule").map_err(get)?,
        job: row.try_get("job").map_err(get)?,
        tag: row.try_get("tag").map_err(get)?,
        step: row.try_get("step").map_err(get)?,
        value: row.try_get("value").map_err(get)?,
        message: row.try_get("message").map_err(get)?,
        raised_at: row.try_get("raised_at").map_err(get)?,
        resolved_at: row.try_get("resolved_at").map_err(get)?,
    })
}

const ALERT_SELECT: &str = "SELECT x.id, r.name AS rule, x.job, x.tag, x.step, x.value, \
     x.message, x.raised_at, x.resolved_at FROM alerts x JOIN alert_rules r ON r.id = x.rule_id";

/// Alert rules and alerts in the console's database.
#[derive(Clone)]
pub struct AlertStore {
    pool: AnyPool,
}

impl AlertStore {
    /// Over `pool`.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    /// Keeps `spec` as a rule of `me`'s account; a taken name is a 409.
    pub async fn insert(&self, me: &Me, spec: &AlertRuleSpec, now: i64) -> Result<(), AppError> {
        let done = sqlx::query(
            "INSERT INTO alert_rules (account_id, user_id, name, spec, created_by, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(me.account.id)
        .bind(me.user_id)
        .bind(&spec.name)
        .bind(to_json(spec)?)
        .bind(&me.email)
        .bind(now)
        .execute(&self.pool)
        .await;
        match done {
            Ok(_) => Ok(()),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Err(AppError::conflict(
                "name",
                format!("This account has an alert rule “{}” already.", spec.name),
            )),
            Err(err) => Err(internal("insert an alert rule")(err)),
        }
    }

    /// The account's rules by name.
    pub async fn rules(&self, account_id: i64) -> Result<Vec<StoredRule>, AppError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{RULE_SELECT} WHERE r.account_id = $1 ORDER BY r.name"
        )))
        .bind(account_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list alert rules"))?;
        rows.iter().map(rule_from).collect()
    }

    /// Every account's rules (the controller's pass).
    pub async fn all_rules(&self) -> Result<Vec<StoredRule>, AppError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("{RULE_SELECT} ORDER BY r.id")))
            .fetch_all(&self.pool)
            .await
            .map_err(internal("list every alert rule"))?;
        rows.iter().map(rule_from).collect()
    }

    /// Deletes the account's rule `name` and its alerts.
    pub async fn delete(&self, account_id: i64, name: &str) -> Result<(), AppError> {
        let mut tx = self.pool.begin_write().await.map_err(internal("begin"))?;
        let id: Option<(i64,)> =
            sqlx::query_as("SELECT id FROM alert_rules WHERE account_id = $1 AND name = $2")
                .bind(account_id)
                .bind(name)
                .fetch_optional(&mut *tx)
                .await
                .map_err(internal("find an alert rule"))?;
        let Some((id,)) = id else {
            return Err(AppError::not_found(format!("Alert rule “{name}”")));
        };
        // Children first: SQLite enforces ON DELETE CASCADE only where
        // foreign keys are switched on.
        for sql in [
            "DELETE FROM alerts WHERE rule_id = $1",
            "DELETE FROM alert_rules WHERE id = $1",
        ] {
            sqlx::query(sql)
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(internal("delete an alert rule"))?;
        }
        tx.commit().await.map_err(internal("commit"))?;
        Ok(())
    }

    /// The jobs rule `rule` watches now: running ones (or its one job while
    /// it runs), and any whose series of the tag took points since `since`
    /// (a job that ended between passes is still judged once).
    pub async fn watched(&self, rule: &StoredRule, since: i64) -> Result<Vec<Watched>, AppError> {
        let spec = &rule.rule.spec;
        let rows = sqlx::query(
            "SELECT j.id, j.name, j.status, COALESCE(j.started_at, j.created_at) AS started, \
             s.last_step, s.last_value, s.updated_at, s.bad_step, \
             (SELECT x.step FROM alerts x WHERE x.rule_id = $5 AND x.job_id = j.id \
              ORDER BY x.id DESC LIMIT 1) AS last_alert_step FROM jobs j \
             LEFT JOIN metric_series s ON s.job_id = j.id AND s.tag = $2 \
             WHERE j.account_id = $1 AND ($3 IS NULL OR j.name = $3) \
             AND (j.status = 'running' OR s.updated_at >= $4)",
        )
        .bind(rule.account_id)
        .bind(&spec.tag)
        .bind(spec.job.as_deref())
        .bind(since)
        .bind(rule.id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read what an alert rule watches"))?;
        rows.iter()
            .map(|row| {
                let get = |e: sqlx::Error| internal("read a watched job")(e);
                let status: String = row.try_get("status").map_err(get)?;
                let last_step: Option<i64> = row.try_get("last_step").map_err(get)?;
                let last_value: Option<f64> = row.try_get("last_value").map_err(get)?;
                Ok(Watched {
                    job_id: row.try_get("id").map_err(get)?,
                    job: row.try_get("name").map_err(get)?,
                    running: status == "running",
                    started_at: row.try_get("started").map_err(get)?,
                    // NULL with a step is NaN (storage/metrics keeps it so).
                    last_value: last_step.map(|_| last_value.unwrap_or(f64::NAN)),
                    last_step,
                    updated_at: row.try_get("updated_at").map_err(get)?,
                    bad_step: row.try_get("bad_step").map_err(get)?,
                    last_alert_step: row.try_get("last_alert_step").map_err(get)?,
                })
            })
            .collect()
    }

    /// Rule `rule_id`'s open alerts.
    pub async fn open(&self, rule_id: i64) -> Result<Vec<Open>, AppError> {
        let rows: Vec<(i64, i64, Option<i64>)> = sqlx::query_as(
            "SELECT id, job_id, step FROM alerts WHERE rule_id = $1 AND resolved_at IS NULL",
        )
        .bind(rule_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read open alerts"))?;
        Ok(rows
            .into_iter()
            .map(|(id, job_id, step)| Open { id, job_id, step })
            .collect())
    }

    /// Records an alert; its id, or `None` where its rule or its job was
    /// deleted since the controller read them (SQLite does not enforce the
    /// foreign keys, and an orphan would be told to subscribers).
    pub async fn raise(
        &self,
        rule: &StoredRule,
        watched: &Watched,
        step: Option<i64>,
        value: Option<f64>,
        message: &str,
        now: i64,
    ) -> Result<Option<i64>, AppError> {
        let id: Option<(i64,)> = sqlx::query_as(
            "INSERT INTO alerts (rule_id, account_id, job_id, job, tag, step, value, message, \
             raised_at) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 \
             WHERE EXISTS (SELECT 1 FROM alert_rules WHERE id = $1) \
             AND EXISTS (SELECT 1 FROM jobs WHERE id = $3) RETURNING id",
        )
        .bind(rule.id)
        .bind(rule.account_id)
        .bind(watched.job_id)
        .bind(&watched.job)
        .bind(&rule.rule.spec.tag)
        .bind(step)
        .bind(value.filter(|v| !v.is_nan()))
        .bind(message)
        .bind(now)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("raise an alert"))?;
        Ok(id.map(|(id,)| id))
    }

    /// Marks alert `id` resolved at `now`.
    pub async fn resolve(&self, id: i64, now: i64) -> Result<(), AppError> {
        sqlx::query("UPDATE alerts SET resolved_at = $2 WHERE id = $1 AND resolved_at IS NULL")
            .bind(id)
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(internal("resolve an alert"))?;
        Ok(())
    }

    /// The account's newest alerts (of `job` only, when given), open first.
    pub async fn alerts(
        &self,
        account_id: i64,
        job: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Alert>, AppError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{ALERT_SELECT} WHERE x.account_id = $1 AND ($2 IS NULL OR x.job = $2) \
             ORDER BY CASE WHEN x.resolved_at IS NULL THEN 0 ELSE 1 END, x.id DESC LIMIT $3"
        )))
        .bind(account_id)
        .bind(job)
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list alerts"))?;
        rows.iter().map(alert_from).collect()
    }

    /// The alerts of the account's `jobs` on `tags` (for a chart's marks).
    pub async fn of_series(
        &self,
        account_id: i64,
        jobs: &[String],
        tags: &[String],
    ) -> Result<Vec<Alert>, AppError> {
        if jobs.is_empty() || tags.is_empty() {
            return Ok(vec![]);
        }
        let sql = format!(
            "{ALERT_SELECT} WHERE x.account_id = $1 AND x.job IN ({}) AND x.tag IN ({}) \
             ORDER BY x.id DESC LIMIT 1000",
            numbered_list(2, jobs.len()),
            numbered_list(2 + jobs.len(), tags.len())
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(account_id);
        for value in jobs.iter().chain(tags) {
            query = query.bind(value);
        }
        let rows = query
            .fetch_all(&self.pool)
            .await
            .map_err(internal("list a chart's alerts"))?;
        rows.iter().map(alert_from).collect()
    }
}
