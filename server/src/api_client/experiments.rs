//! Experiments through `/api/v1/experiments`: what `paddlecloud
//! experiment` calls.

use app::models::{Experiment, ExperimentSpec, ExperimentSummary};
use serde::Deserialize;
use serde_json::json;

use super::{ApiClient, ClientError};

#[derive(Deserialize)]
struct ExperimentList {
    experiments: Vec<ExperimentSummary>,
}

impl ApiClient {
    /// Starts an experiment.
    pub fn create_experiment(&self, spec: &ExperimentSpec) -> Result<Experiment, ClientError> {
        self.json(self.post(&self.url(&["experiments"])).send_json(spec))
    }

    /// The account's experiments, newest first.
    pub fn experiments(&self) -> Result<Vec<ExperimentSummary>, ClientError> {
        self.json::<ExperimentList>(self.get(&self.url(&["experiments"])).call())
            .map(|l| l.experiments)
    }

    /// One experiment with its trials.
    pub fn experiment(&self, name: &str) -> Result<Experiment, ClientError> {
        self.json(self.get(&self.url(&["experiments", name])).call())
    }

    /// Pauses, resumes, stops an experiment or runs its failed trials again
    /// (`pause`, `resume`, `stop`, `retry`).
    pub fn experiment_action(&self, name: &str, action: &str) -> Result<Experiment, ClientError> {
        self.json(
            self.post(&self.url(&["experiments", name, action]))
                .send_empty(),
        )
    }

    /// Adds `more` trials to an experiment.
    pub fn extend_experiment(&self, name: &str, more: u32) -> Result<Experiment, ClientError> {
        self.json(
            self.post(&self.url(&["experiments", name, "extend"]))
                .send_json(json!({ "more": more })),
        )
    }
}
