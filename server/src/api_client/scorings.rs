//! Batch scoring through `/api/v1/scorings`: what `paddlecloud score`
//! calls.

use app::models::{Job, ScoringForm, ScoringProgress};

use super::{ApiClient, ClientError};

impl ApiClient {
    /// Starts a batch scoring; its job.
    pub fn start_scoring(&self, form: &ScoringForm) -> Result<Job, ClientError> {
        self.json(self.post(&self.url(&["scorings"])).send_json(form))
    }

    /// How far scoring job `name` got.
    pub fn scoring(&self, name: &str) -> Result<ScoringProgress, ClientError> {
        self.json(self.get(&self.url(&["scorings", name])).call())
    }

    /// Tries scoring job `name` again; the new try's job.
    pub fn retry_scoring(&self, name: &str) -> Result<Job, ClientError> {
        self.json(
            self.post(&self.url(&["scorings", name, "retry"]))
                .send_empty(),
        )
    }
}
