//! Pipeline runs through `/api/v1/pipelines`: what `paddlecloud pipeline`
//! calls.

use app::models::{PipelineRun, PipelineSubmit};
use serde::Deserialize;

use super::{ApiClient, ClientError};

#[derive(Deserialize)]
struct RunList {
    runs: Vec<PipelineRun>,
}

impl ApiClient {
    /// Submits a run.
    pub fn run_pipeline(&self, submit: &PipelineSubmit) -> Result<PipelineRun, ClientError> {
        self.json(self.post(&self.url(&["pipelines"])).send_json(submit))
    }

    /// The account's runs, newest first.
    pub fn pipelines(&self) -> Result<Vec<PipelineRun>, ClientError> {
        self.json::<RunList>(self.get(&self.url(&["pipelines"])).call())
            .map(|l| l.runs)
    }

    /// One run with its nodes.
    pub fn pipeline(&self, name: &str) -> Result<PipelineRun, ClientError> {
        self.json(self.get(&self.url(&["pipelines", name])).call())
    }

    /// Stops a run (`stop`) or retries it from what failed (`retry`).
    pub fn pipeline_action(&self, name: &str, action: &str) -> Result<PipelineRun, ClientError> {
        self.json(
            self.post(&self.url(&["pipelines", name, action]))
                .send_empty(),
        )
    }
}
