//! Serving instances through `/api/v1/serving`: what `paddlecloud serving`
//! calls.

use app::models::{
    Release, Scale, ServingInstance, ServingList, ServingSpec, ServingTraffic, ShadowCall,
};

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

    /// Starts, changes, promotes or rolls back a canary or shadow.
    pub fn release_serving(
        &self,
        name: &str,
        release: &Release,
    ) -> Result<ServingInstance, ClientError> {
        self.json(
            self.post(&self.url(&["serving", name, "release"]))
                .send_json(release),
        )
    }

    /// The newest `limit` calls mirrored to the instance's shadow.
    pub fn shadow_calls(&self, name: &str, limit: u32) -> Result<Vec<ShadowCall>, ClientError> {
        self.json(
            self.get(&self.url(&["serving", name, "shadow-calls"]))
                .query("limit", limit.to_string())
                .call(),
        )
    }

    /// The instance's calls over the last hour, in all and by version.
    pub fn serving_traffic(&self, name: &str) -> Result<ServingTraffic, ClientError> {
        self.json(self.get(&self.url(&["serving", name, "traffic"])).call())
    }
}
