//! A job's history (`job_history`): each change of its status or reason and
//! each change of a replica's phase or reason, written by the statements
//! that make the change, in their transactions, so no path (the local
//! executor, the Kubernetes watch, local and MLflow runs) can leave a gap.
//! The jobs and pods rows keep only the latest; the job page's timeline
//! reads this.

use app::error::AppError;
use app::models::{JobHistoryEntry, HISTORY_SHOWN};
use sqlx::{Any, Executor};

use super::internal;

/// Records that job `job_id` moves to `status` with `message` (`None`:
/// keeps its message) at `at`, unless the row already says both. Run it
/// before the UPDATE that makes the move, in the same transaction.
pub(super) async fn job_moves<'e, E>(
    db: E,
    job_id: i64,
    at: i64,
    status: &str,
    message: Option<&str>,
) -> Result<(), AppError>
where
    E: Executor<'e, Database = Any>,
{
    sqlx::query(
        "INSERT INTO job_history (job_id, at, state, message) \
         SELECT id, $2, $3, COALESCE($4, message) FROM jobs \
         WHERE id = $1 AND (status <> $3 OR message <> COALESCE($4, message))",
    )
    .bind(job_id)
    .bind(at)
    .bind(status)
    .bind(message)
    .execute(db)
    .await
    .map_err(internal("record a job's move"))?;
    Ok(())
}

/// Records that job `job_id` is in `status` with `message`: its first
/// state as it is inserted, or a move its UPDATE's own condition has
/// already checked.
pub(super) async fn job_entry<'e, E>(
    db: E,
    job_id: i64,
    at: i64,
    status: &str,
    message: &str,
) -> Result<(), AppError>
where
    E: Executor<'e, Database = Any>,
{
    sqlx::query("INSERT INTO job_history (job_id, at, state, message) VALUES ($1, $2, $3, $4)")
        .bind(job_id)
        .bind(at)
        .bind(status)
        .bind(message)
        .execute(db)
        .await
        .map_err(internal("record a job's state"))?;
    Ok(())
}

/// What a replica's update changes that the timeline shows.
pub(super) struct PodMove<'a> {
    /// The replica.
    pub pod: &'a str,
    /// Its new phase (`None`: keeps it).
    pub phase: Option<&'a str>,
    /// Its new reason (`None`: keeps it).
    pub message: Option<&'a str>,
    /// Its exit code, once known.
    pub exit_code: Option<i64>,
}

/// Records that replica `change.pod` of job `job_id` moves to a new phase
/// or gives a new reason, unless its row already says both. Run it before
/// the UPDATE, in the same transaction.
pub(super) async fn pod_moves<'e, E>(
    db: E,
    job_id: i64,
    at: i64,
    change: PodMove<'_>,
) -> Result<(), AppError>
where
    E: Executor<'e, Database = Any>,
{
    if change.phase.is_none() && change.message.is_none() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO job_history (job_id, at, pod, state, message, exit_code) \
         SELECT job_id, $3, name, COALESCE($4, phase), COALESCE($5, message), \
         COALESCE($6, exit_code) FROM pods \
         WHERE job_id = $1 AND name = $2 \
         AND (phase <> COALESCE($4, phase) OR message <> COALESCE($5, message))",
    )
    .bind(job_id)
    .bind(change.pod)
    .bind(at)
    .bind(change.phase)
    .bind(change.message)
    .bind(change.exit_code)
    .execute(db)
    .await
    .map_err(internal("record a replica's move"))?;
    Ok(())
}

/// A `job_history` row: at, pod, state, message, exit code.
type HistoryRow = (i64, Option<String>, String, String, Option<i64>);

/// What happened to job `job_id`, oldest first: the newest
/// [`HISTORY_SHOWN`] entries.
pub(super) async fn read<'e, E>(db: E, job_id: i64) -> Result<Vec<JobHistoryEntry>, AppError>
where
    E: Executor<'e, Database = Any>,
{
    let rows: Vec<HistoryRow> = sqlx::query_as(
        "SELECT at, pod, state, message, exit_code FROM job_history \
         WHERE job_id = $1 ORDER BY id DESC LIMIT $2",
    )
    .bind(job_id)
    .bind(HISTORY_SHOWN as i64)
    .fetch_all(db)
    .await
    .map_err(internal("read a job's history"))?;
    Ok(rows
        .into_iter()
        .rev()
        .map(|(at, pod, state, message, exit_code)| JobHistoryEntry {
            at,
            pod,
            state,
            message,
            exit_code: exit_code.map(|c| c as i32),
        })
        .collect())
}
