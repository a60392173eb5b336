//! Serving instances through `/api/v1/serving`: what `paddlecloud serving`
//! calls.

use app::models::{Scale, ServingInstance, ServingList, ServingSpec};

use super::{ApiClient, ClientError};

impl ApiClient {
    /// Launches a serving instance.
    pub fn launch_serving(&self, spec: &ServingSpec) -> Result<ServingInstance, ClientError> {
        self.json(self.post(&self.url(&["serving"])).send_json(spec))
    }

    /// The account's serving instances.
    pub fn serving_list(&self) -> Result<ServingList, ClientError> {
        self.json(self.get(&self.url(&["serving"])).call())
    }

    /// One serving instance.
    pub fn serving(&self, name: &str) -> Result<ServingInstance, ClientError> {
        self.json(self.get(&self.url(&["serving", name])).call())
    }

    /// Scales a serving instance.
    pub fn scale_serving(&self, name: &str, scale: &Scale) -> Result<ServingInstance, ClientError> {
        self.json(
            self.post(&self.url(&["serving", name, "scale"]))
                .send_json(scale),
        )
    }

    /// Stops a serving instance, keeping its record.
    pub fn stop_serving(&self, name: &str) -> Result<ServingInstance, ClientError> {
        self.json(
            self.post(&self.url(&["serving", name, "stop"]))
                .send_empty(),
        )
    }

    /// Deletes a serving instance's record.
    pub fn delete_serving(&self, name: &str) -> Result<(), ClientError> {
        let request = self.signed(self.agent.delete(&self.url(&["serving", name])));
        self.check(request.call()).map(drop)
    }
}
