//! SQL for schedules (`schedules`) and their ticks (`schedule_runs`). A
//! tick's row is its claim: inserted before its job is submitted, by the
//! one pass whose insert went in, so a tick starts once whatever replica
//! or restart looks at it.

use app::error::AppError;
use app::models::{Me, Schedule, ScheduleRun, ScheduleSpec, TickOutcome};
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};

use super::users::{me_from, user_columns, UserRow};
use super::{internal, to_json};

/// The columns [`schedule_from`] reads.
const COLUMNS: &str = "s.id, s.account_id, s.name, s.spec, s.paused, s.next_at, s.last_tick, \
     s.created_at, a.name AS owner, u.email AS created_by";
const FROM: &str =
    "schedules s JOIN accounts a ON a.id = s.account_id JOIN users u ON u.id = s.user_id";

/// A schedule with its ids.
#[derive(Debug, Clone)]
pub struct StoredSchedule {
    /// Its id.
    pub id: i64,
    /// Its account's id.
    pub account_id: i64,
    /// The schedule (without runs).
    pub schedule: Schedule,
}

fn schedule_from(row: &AnyRow) -> Result<StoredSchedule, AppError> {
    let get = |e: sqlx::Error| internal("read a schedule")(e);
    let text: String = row.try_get("spec").map_err(get)?;
    let spec: ScheduleSpec = serde_json::from_str(&text).map_err(|err| {
        tracing::error!(error = %err, "a stored schedule is not a schedule");
        AppError::Internal
    })?;
    Ok(StoredSchedule {
        id: row.try_get("id").map_err(get)?,
        account_id: row.try_get("account_id").map_err(get)?,
        schedule: Schedule {
            spec,
            owner: row.try_get("owner").map_err(get)?,
            created_by: row.try_get("created_by").map_err(get)?,
            created_at: row.try_get("created_at").map_err(get)?,
            paused: row.try_get::<i64, _>("paused").map_err(get)? != 0,
            next_at: row.try_get("next_at").map_err(get)?,
            last_tick: row.try_get("last_tick").map_err(get)?,
            runs: vec![],
        },
    })
}

/// Schedules in the console's database.
#[derive(Clone)]
pub struct ScheduleStore {
    pool: AnyPool,
}

impl ScheduleStore {
    /// Over `pool`.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }

    /// Records `spec` as `me`'s, its first tick `next_at`; a taken name is
    /// a conflict.
    pub async fn insert(
        &self,
        me: &Me,
        spec: &ScheduleSpec,
        next_at: Option<i64>,
        now: i64,
    ) -> Result<(), AppError> {
        let inserted = sqlx::query(
            "INSERT INTO schedules (account_id, user_id, name, spec, paused, next_at, last_tick, \
             created_at) VALUES ($1, $2, $3, $4, 0, $5, $6, $6)",
        )
        .bind(me.account.id)
        .bind(me.user_id)
        .bind(&spec.name)
        .bind(to_json(spec)?)
        .bind(next_at)
        .bind(now)
        .execute(&self.pool)
        .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => Err(AppError::conflict(
                "name",
                format!("This account has a schedule “{}” already.", spec.name),
            )),
            Err(err) => Err(internal("insert a schedule")(err)),
        }
    }

    /// The account's schedules by name.
    pub async fn list(&self, account_id: i64) -> Result<Vec<StoredSchedule>, AppError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM {FROM} WHERE s.account_id = $1 ORDER BY s.name"
        )))
        .bind(account_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list schedules"))?;
        rows.iter().map(schedule_from).collect()
    }

    /// The account's schedule `name`.
    pub async fn get(&self, account_id: i64, name: &str) -> Result<StoredSchedule, AppError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM {FROM} WHERE s.account_id = $1 AND s.name = $2"
        )))
        .bind(account_id)
        .bind(name)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a schedule"))?;
        match row {
            Some(row) => schedule_from(&row),
            None => Err(AppError::not_found(format!("Schedule “{name}”"))),
        }
    }

    /// Schedules not paused whose next tick is at or before `now`.
    pub async fn due(&self, now: i64) -> Result<Vec<StoredSchedule>, AppError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM {FROM} WHERE s.paused = 0 AND s.next_at <= $1 ORDER BY s.next_at"
        )))
        .bind(now)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read the schedules due"))?;
        rows.iter().map(schedule_from).collect()
    }

    /// Its newest `limit` ticks, newest first.
    pub async fn runs(&self, schedule_id: i64, limit: usize) -> Result<Vec<ScheduleRun>, AppError> {
        let rows = sqlx::query(
            "SELECT tick, at, outcome, started, started_kind, message FROM schedule_runs \
             WHERE schedule_id = $1 ORDER BY tick DESC LIMIT $2",
        )
        .bind(schedule_id)
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("read a schedule's runs"))?;
        rows.iter()
            .map(|row| {
                let get = |e: sqlx::Error| internal("read a schedule's run")(e);
                let outcome: String = row.try_get("outcome").map_err(get)?;
                Ok(ScheduleRun {
                    tick: row.try_get("tick").map_err(get)?,
                    at: row.try_get("at").map_err(get)?,
                    outcome: TickOutcome::parse(&outcome).unwrap_or(TickOutcome::Failed),
                    started: row.try_get("started").map_err(get)?,
                    started_kind: row.try_get("started_kind").map_err(get)?,
                    message: row.try_get("message").map_err(get)?,
                    status: None,
                })
            })
            .collect()
    }

    /// Claims `tick` with `outcome`: whether this call's row went in (a
    /// tick another pass claimed first is not this one's to start).
    pub async fn claim(
        &self,
        schedule_id: i64,
        tick: i64,
        at: i64,
        outcome: TickOutcome,
        message: &str,
    ) -> Result<bool, AppError> {
        let done = sqlx::query(
            "INSERT INTO schedule_runs (schedule_id, tick, at, outcome, message) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (schedule_id, tick) DO NOTHING",
        )
        .bind(schedule_id)
        .bind(tick)
        .bind(at)
        .bind(outcome.as_str())
        .bind(message)
        .execute(&self.pool)
        .await
        .map_err(internal("claim a schedule's tick"))?;
        Ok(done.rows_affected() == 1)
    }

    /// What became of a claimed tick.
    pub async fn finish(
        &self,
        schedule_id: i64,
        tick: i64,
        outcome: TickOutcome,
        started: Option<(&str, &str)>,
        message: &str,
    ) -> Result<(), AppError> {
        sqlx::query(
            "UPDATE schedule_runs SET outcome = $3, started = $4, started_kind = $5, \
             message = $6 WHERE schedule_id = $1 AND tick = $2",
        )
        .bind(schedule_id)
        .bind(tick)
        .bind(outcome.as_str())
        .bind(started.map(|s| s.0))
        .bind(started.map(|s| s.1))
        .bind(message)
        .execute(&self.pool)
        .await
        .map_err(internal("record a schedule's run"))?;
        Ok(())
    }

    /// The newest run started before `tick`: its name and kind.
    pub async fn previous_started(
        &self,
        schedule_id: i64,
        tick: i64,
    ) -> Result<Option<(String, String)>, AppError> {
        let row = sqlx::query(
            "SELECT started, started_kind FROM schedule_runs WHERE schedule_id = $1 \
             AND tick < $2 AND outcome = 'started' AND started IS NOT NULL \
             ORDER BY tick DESC LIMIT 1",
        )
        .bind(schedule_id)
        .bind(tick)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a schedule's last run"))?;
        row.map(|r| {
            let get = |e: sqlx::Error| internal("read a schedule's last run")(e);
            Ok((
                r.try_get("started").map_err(get)?,
                r.try_get::<Option<String>, _>("started_kind")
                    .map_err(get)?
                    .unwrap_or_else(|| "job".to_owned()),
            ))
        })
        .transpose()
    }

    /// Moves the schedule on: `last_tick` dealt with, `next_at` next. Only
    /// forward: a slower pass that read it before does not move it back.
    pub async fn advance(
        &self,
        schedule_id: i64,
        last_tick: i64,
        next_at: Option<i64>,
    ) -> Result<(), AppError> {
        sqlx::query(
            "UPDATE schedules SET last_tick = $2, next_at = $3 WHERE id = $1 \
             AND (last_tick IS NULL OR last_tick <= $2)",
        )
        .bind(schedule_id)
        .bind(last_tick)
        .bind(next_at)
        .execute(&self.pool)
        .await
        .map_err(internal("move a schedule on"))?;
        Ok(())
    }

    /// Pauses (no next tick) or resumes it (ticks from `now` on: those
    /// missed while it was paused are not caught up).
    pub async fn set_paused(
        &self,
        schedule_id: i64,
        paused: bool,
        next_at: Option<i64>,
        now: i64,
    ) -> Result<(), AppError> {
        let query = if paused {
            sqlx::query("UPDATE schedules SET paused = 1, next_at = NULL WHERE id = $1")
                .bind(schedule_id)
        } else {
            sqlx::query(
                "UPDATE schedules SET paused = 0, next_at = $2, last_tick = $3 WHERE id = $1",
            )
            .bind(schedule_id)
            .bind(next_at)
            .bind(now)
        };
        query
            .execute(&self.pool)
            .await
            .map_err(internal("pause or resume a schedule"))?;
        Ok(())
    }

    /// Deletes it with its runs' records (what they started stays).
    pub async fn delete(&self, schedule_id: i64) -> Result<(), AppError> {
        sqlx::query("DELETE FROM schedule_runs WHERE schedule_id = $1")
            .bind(schedule_id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete a schedule's runs"))?;
        sqlx::query("DELETE FROM schedules WHERE id = $1")
            .bind(schedule_id)
            .execute(&self.pool)
            .await
            .map_err(internal("delete a schedule"))?;
        Ok(())
    }

    /// Who made it, as a member of its account (`None`: no longer one).
    pub async fn creator(&self, schedule_id: i64) -> Result<Option<Me>, AppError> {
        let row: Option<UserRow> = sqlx::query_as(concat!(
            "SELECT ",
            user_columns!(),
            " FROM schedules s JOIN users u ON u.id = s.user_id \
             JOIN memberships m ON m.user_id = u.id AND m.account_id = s.account_id \
             JOIN accounts a ON a.id = s.account_id WHERE s.id = $1"
        ))
        .bind(schedule_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(internal("read a schedule's creator"))?;
        Ok(row.map(me_from))
    }
}
