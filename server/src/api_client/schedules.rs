//! Schedules through `/api/v1/schedules`: what `paddlecloud schedule` calls.

use app::models::{Schedule, ScheduleSpec};

use super::{ApiClient, ClientError};

impl ApiClient {
    /// The account's schedules.
    pub fn schedules(&self) -> Result<Vec<Schedule>, ClientError> {
        self.json(self.get(&self.url(&["schedules"])).call())
    }

    /// One schedule with its newest runs.
    pub fn schedule(&self, name: &str) -> Result<Schedule, ClientError> {
        self.json(self.get(&self.url(&["schedules", name])).call())
    }

    /// Saves a schedule.
    pub fn create_schedule(&self, spec: &ScheduleSpec) -> Result<Schedule, ClientError> {
        self.json(self.post(&self.url(&["schedules"])).send_json(spec))
    }

    /// Pauses (`pause`) or resumes (`resume`) one.
    pub fn schedule_action(&self, name: &str, action: &str) -> Result<Schedule, ClientError> {
        self.json(
            self.post(&self.url(&["schedules", name, action]))
                .send_empty(),
        )
    }

    /// Deletes one.
    pub fn delete_schedule(&self, name: &str) -> Result<(), ClientError> {
        let url = self.url(&["schedules", name]);
        self.check(self.signed(self.agent.delete(&url)).call())
            .map(drop)
    }
}
