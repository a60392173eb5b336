//! Notifications: a user's subscriptions and the log of what was sent
//! through them. The console's notifier (in the replica holding its lease)
//! turns what happens into deliveries and sends them.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::{Delivery, DeliveryQuery, Me, Subscription, SubscriptionSpec};

/// Where subscriptions and deliveries are kept. Each user sees and changes
/// only their own, in the account they act in.
#[async_trait]
pub trait Notifications: Send + Sync {
    /// Keeps `spec` (checked, its subject known to exist) as `me`'s
    /// subscription; a webhook gets a fresh signing secret.
    async fn subscribe(&self, me: &Me, spec: SubscriptionSpec) -> Result<Subscription, AppError>;
    /// `me`'s subscriptions in their account, newest first.
    async fn subscriptions(&self, me: &Me) -> Result<Vec<Subscription>, AppError>;
    /// Ends subscription `id` of `me`'s; its deliveries go with it (404 if
    /// it is not theirs).
    async fn unsubscribe(&self, me: &Me, id: i64) -> Result<(), AppError>;
    /// Queues a test notice through subscription `id` now; returns its
    /// delivery (pending).
    async fn send_test(&self, me: &Me, id: i64) -> Result<Delivery, AppError>;
    /// A page of `me`'s deliveries, newest first.
    async fn deliveries(&self, me: &Me, query: &DeliveryQuery) -> Result<Vec<Delivery>, AppError>;
}
