//! Schedules: kept, read, paused, resumed and deleted. Their ticks are
//! started by the console's schedule controller (in the replica holding
//! its lease), as the schedule's creator.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{Account, Me, Schedule, ScheduleSpec};

/// Something about a schedule changed: live views refresh.
pub type ScheduleEvent = super::WorkloadEvent;

/// Where schedules are kept.
#[async_trait]
pub trait Schedules: Send + Sync {
    /// Keeps `spec` (its target checked already) as `me`'s schedule; its
    /// cron and timezone are checked here. Its first tick is the first
    /// after now.
    async fn create(&self, me: &Me, spec: ScheduleSpec) -> Result<Schedule, AppError>;
    /// The account's schedules by name (without their runs).
    async fn list(&self, account: &Account) -> Result<Vec<Schedule>, AppError>;
    /// One schedule with its newest runs (their statuses not filled in).
    async fn get(&self, account: &Account, name: &str) -> Result<Schedule, AppError>;
    /// Pauses it (`true`: no tick runs) or resumes it (ticks from now on;
    /// those missed while paused are not caught up).
    async fn set_paused(&self, me: &Me, name: &str, paused: bool) -> Result<Schedule, AppError>;
    /// Deletes it and the record of its runs; what they started stays.
    async fn delete(&self, me: &Me, name: &str) -> Result<(), AppError>;
    /// Changes to schedules (a run started, a pause), from this console.
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<ScheduleEvent>;
}
