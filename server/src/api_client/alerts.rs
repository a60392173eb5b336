//! Metric alerts through `/api/v1/alert-rules` and `/api/v1/alerts`: what
//! `paddlecloud alert` calls.

use app::models::{Alert, AlertRule, AlertRuleSpec};

use super::{ApiClient, ClientError};

impl ApiClient {
    /// The account's alert rules.
    pub fn alert_rules(&self) -> Result<Vec<AlertRule>, ClientError> {
        self.json(self.get(&self.url(&["alert-rules"])).call())
    }

    /// Saves an alert rule.
    pub fn create_alert_rule(&self, spec: &AlertRuleSpec) -> Result<AlertRule, ClientError> {
        self.json(self.post(&self.url(&["alert-rules"])).send_json(spec))
    }

    /// Deletes one.
    pub fn delete_alert_rule(&self, name: &str) -> Result<(), ClientError> {
        let url = self.url(&["alert-rules", name]);
        self.check(self.signed(self.agent.delete(&url)).call())
            .map(drop)
    }

    /// The account's newest alerts (of `job` only, when given).
    pub fn alerts(&self, job: Option<&str>) -> Result<Vec<Alert>, ClientError> {
        let mut request = self.get(&self.url(&["alerts"]));
        if let Some(job) = job {
            request = request.query("job", job);
        }
        self.json(request.call())
    }
}
