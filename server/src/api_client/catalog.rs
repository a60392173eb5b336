//! Templates and environments through `/api/v1/templates` and
//! `/api/v1/environments`: what `paddlecloud template` and `paddlecloud
//! env` call.

use app::models::{
    Environment, EnvironmentDetail, EnvironmentList, EnvironmentSpec, Job, Template, TemplateList,
    TemplateRun, TemplateSpec,
};

use super::{ApiClient, ClientError};

/// `?owner=&version=` for the ones given.
fn which(owner: Option<&str>, version: Option<u32>) -> Vec<(&'static str, String)> {
    let mut query = Vec::new();
    if let Some(owner) = owner {
        query.push(("owner", owner.to_owned()));
    }
    if let Some(version) = version {
        query.push(("version", version.to_string()));
    }
    query
}

impl ApiClient {
    /// The account's templates and published ones.
    pub fn templates(&self) -> Result<TemplateList, ClientError> {
        self.json(self.get(&self.url(&["templates"])).call())
    }

    /// One template (`owner`'s published one; `version`, else the newest).
    pub fn template(
        &self,
        name: &str,
        owner: Option<&str>,
        version: Option<u32>,
    ) -> Result<Template, ClientError> {
        let mut request = self.get(&self.url(&["templates", name]));
        for (key, value) in which(owner, version) {
            request = request.query(key, value);
        }
        self.json(request.call())
    }

    /// Saves a template as the next version of its name.
    pub fn save_template(&self, spec: &TemplateSpec) -> Result<Template, ClientError> {
        self.json(self.post(&self.url(&["templates"])).send_json(spec))
    }

    /// Runs a template: the job it made.
    pub fn run_template(&self, name: &str, run: &TemplateRun) -> Result<Job, ClientError> {
        self.json(
            self.post(&self.url(&["templates", name, "jobs"]))
                .send_json(run),
        )
    }

    /// The environments the account can use.
    pub fn environments(&self) -> Result<EnvironmentList, ClientError> {
        self.json(self.get(&self.url(&["environments"])).call())
    }

    /// One environment with its versions and local build.
    pub fn environment(
        &self,
        name: &str,
        owner: Option<&str>,
        version: Option<u32>,
    ) -> Result<EnvironmentDetail, ClientError> {
        let mut request = self.get(&self.url(&["environments", name]));
        for (key, value) in which(owner, version) {
            request = request.query(key, value);
        }
        self.json(request.call())
    }

    /// Saves an environment as the next version of its name.
    pub fn save_environment(&self, spec: &EnvironmentSpec) -> Result<Environment, ClientError> {
        self.json(self.post(&self.url(&["environments"])).send_json(spec))
    }
}
