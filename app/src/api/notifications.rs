//! Notifications for the pages: the caller's subscriptions, subscribing
//! from the form, a test, ending one, and the log of deliveries.

use leptos::prelude::*;

use crate::error::AppError;
use crate::models::{Delivery, DeliveryQuery, Subscription, SubscriptionForm};

#[cfg(feature = "ssr")]
use super::context::{principal, services};

/// The caller's subscriptions and a page of their deliveries.
#[server(prefix = "/api", endpoint = "read_notifications")]
pub async fn read_notifications(
    query: DeliveryQuery,
) -> Result<(Vec<Subscription>, Vec<Delivery>), AppError> {
    let who = principal()?;
    let notifications = services()?.notifications;
    let subscriptions = notifications.subscriptions(&who.me).await?;
    let deliveries = notifications.deliveries(&who.me, &query).await?;
    Ok((subscriptions, deliveries))
}

/// Subscribes from the form, back to the notifications page.
#[server(prefix = "/api", endpoint = "subscribe")]
pub async fn subscribe(form: SubscriptionForm) -> Result<Subscription, AppError> {
    let who = principal()?;
    let spec = form.to_spec()?;
    let made = crate::use_cases::notifications::subscribe(&services()?, &who, spec).await?;
    leptos_axum::redirect("/notifications");
    Ok(made)
}

/// Queues a test through subscription `id`, back to the page.
#[server(prefix = "/api", endpoint = "test_subscription")]
pub async fn test_subscription(id: i64) -> Result<Delivery, AppError> {
    let who = principal()?;
    let queued = services()?.notifications.send_test(&who.me, id).await?;
    leptos_axum::redirect("/notifications");
    Ok(queued)
}

/// Ends subscription `id`, back to the page.
#[server(prefix = "/api", endpoint = "unsubscribe")]
pub async fn unsubscribe(id: i64) -> Result<(), AppError> {
    let who = principal()?;
    services()?.notifications.unsubscribe(&who.me, id).await?;
    leptos_axum::redirect("/notifications");
    Ok(())
}
