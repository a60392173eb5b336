//! Local runs through `/api/v1/local-runs`: what `paddlecloud run --` and
//! `paddlecloud sync` send. Reports are plain JSON values, as the spool
//! keeps them (the Python SDK writes the same files).

use serde_json::Value;

use super::{ApiClient, ClientError};

impl ApiClient {
    /// Sends one spooled report of run `name` (`None` before its start is
    /// delivered); a start answers with the job, whose name is returned.
    pub fn local_run_report(
        &self,
        name: Option<&str>,
        kind: &str,
        body: &Value,
    ) -> Result<Option<String>, ClientError> {
        let Some(name) = name else {
            let job: Value = self.json(self.post(&self.url(&["local-runs"])).send_json(body))?;
            return Ok(job["name"].as_str().map(str::to_owned));
        };
        let url = match kind {
            "points" => self.url(&["jobs", name, "metrics"]),
            "log" | "params" | "end" => self.url(&["local-runs", name, kind]),
            other => {
                return Err(ClientError::Api {
                    status: 400,
                    code: "invalid".into(),
                    message: format!("a spooled report of an unknown kind “{other}”"),
                    field: None,
                })
            }
        };
        self.check(self.post(&url).send_json(body))?;
        Ok(None)
    }

    /// Tells the console run `name` is alive; whether someone pressed Stop.
    pub fn local_run_heartbeat(&self, name: &str) -> Result<bool, ClientError> {
        let beat: app::models::Beat = self.json(
            self.post(&self.url(&["local-runs", name, "heartbeat"]))
                .send_empty(),
        )?;
        Ok(beat.stop)
    }
}
