//! Schedules for the pages: the list, one schedule with its runs, the
//! "New schedule" form, pause, resume and delete.

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::{Schedule, ScheduleForm};

#[cfg(feature = "ssr")]
use super::context::{member, principal, services};

/// The account's schedules.
#[server(prefix = "/api", endpoint = "list_schedules")]
pub async fn list_schedules() -> Result<Vec<Schedule>, AppError> {
    let who = principal()?;
    services()?.schedules.list(&who.me.account).await
}

/// One schedule with its newest runs and what became of them.
#[server(prefix = "/api", endpoint = "read_schedule")]
pub async fn read_schedule(name: String) -> Result<Schedule, AppError> {
    let who = principal()?;
    crate::use_cases::schedules::schedule_page(&services()?, &who.me.account, &name).await
}

/// Saves a schedule from the form, then opens its page.
#[server(prefix = "/api", endpoint = "create_schedule")]
pub async fn create_schedule(form: ScheduleForm) -> Result<Schedule, AppError> {
    let who = member()?;
    let spec = form.to_spec()?;
    let made = crate::use_cases::schedules::create_schedule(&services()?, &who, spec).await?;
    leptos_axum::redirect(&crate::models::schedule_href(&made.spec.name));
    Ok(made)
}

/// Pauses (`paused`) or resumes a schedule, back to its page.
#[server(prefix = "/api", endpoint = "pause_schedule")]
pub async fn pause_schedule(name: String, paused: bool) -> Result<Schedule, AppError> {
    let who = member()?;
    let done = services()?
        .schedules
        .set_paused(&who.me, &name, paused)
        .await?;
    leptos_axum::redirect(&crate::models::schedule_href(&name));
    Ok(done)
}

/// Deletes a schedule, back to the list.
#[server(prefix = "/api", endpoint = "delete_schedule")]
pub async fn delete_schedule(name: String) -> Result<(), AppError> {
    let who = member()?;
    services()?.schedules.delete(&who.me, &name).await?;
    leptos_axum::redirect("/schedules");
    Ok(())
}
