//! Metric alerts for the pages: the account's rules and alerts, a new
//! rule from the form, deleting one.

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::{Alert, AlertRule, AlertRuleForm};

#[cfg(feature = "ssr")]
use super::context::{member, principal, services};

/// The account's rules and its newest alerts (open first).
#[server(prefix = "/api", endpoint = "read_alerts")]
pub async fn read_alerts() -> Result<(Vec<AlertRule>, Vec<Alert>), AppError> {
    let who = principal()?;
    let alerts = services()?.alerts;
    let rules = alerts.rules(&who.me.account).await?;
    let raised = alerts.alerts(&who.me.account, None).await?;
    Ok((rules, raised))
}

/// Saves a rule from the form, back to the alerts page.
#[server(prefix = "/api", endpoint = "create_alert_rule")]
pub async fn create_alert_rule(form: AlertRuleForm) -> Result<AlertRule, AppError> {
    let who = member()?;
    let spec = form.to_spec()?;
    let made = services()?.alerts.create_rule(&who.me, spec).await?;
    leptos_axum::redirect("/alerts");
    Ok(made)
}

/// Deletes rule `name` and its alerts, back to the alerts page.
#[server(prefix = "/api", endpoint = "delete_alert_rule")]
pub async fn delete_alert_rule(name: String) -> Result<(), AppError> {
    let who = member()?;
    services()?.alerts.delete_rule(&who.me, &name).await?;
    leptos_axum::redirect("/alerts");
    Ok(())
}
