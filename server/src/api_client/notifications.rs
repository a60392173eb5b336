//! Notifications through `/api/v1/notifications`: what `paddlecloud
//! notify` calls.

use app::models::{Delivery, Subscription, SubscriptionSpec};

use super::{ApiClient, ClientError};

impl ApiClient {
    /// The caller's subscriptions.
    pub fn subscriptions(&self) -> Result<Vec<Subscription>, ClientError> {
        self.json(
            self.get(&self.url(&["notifications", "subscriptions"]))
                .call(),
        )
    }

    /// Subscribes the caller.
    pub fn subscribe(&self, spec: &SubscriptionSpec) -> Result<Subscription, ClientError> {
        self.json(
            self.post(&self.url(&["notifications", "subscriptions"]))
                .send_json(spec),
        )
    }

    /// Ends subscription `id`.
    pub fn unsubscribe(&self, id: i64) -> Result<(), ClientError> {
        let url = self.url(&["notifications", "subscriptions", &id.to_string()]);
        self.check(self.signed(self.agent.delete(&url)).call())
            .map(drop)
    }

    /// Queues a test through subscription `id`.
    pub fn test_subscription(&self, id: i64) -> Result<Delivery, ClientError> {
        let url = self.url(&["notifications", "subscriptions", &id.to_string(), "test"]);
        self.json(self.post(&url).send_empty())
    }

    /// A page of the caller's deliveries: only `status`, only through
    /// `subscription`, older than `before`.
    pub fn deliveries(
        &self,
        status: Option<&str>,
        subscription: Option<i64>,
        before: Option<i64>,
    ) -> Result<Vec<Delivery>, ClientError> {
        let mut request = self.get(&self.url(&["notifications", "deliveries"]));
        if let Some(status) = status {
            request = request.query("status", status);
        }
        if let Some(id) = subscription {
            request = request.query("subscription", id.to_string());
        }
        if let Some(id) = before {
            request = request.query("before", id.to_string());
        }
        self.json(request.call())
    }
}
