//! A blocking client of the console's `/api/v1`, for the `paddlecloud`
//! commands that talk to a running console (`submit`, `jobs`, `logs`, `stop`,
//! `delete`). It reads the same credentials file as the Python SDK.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use app::models::{Credentials, Job, JobPage, JobSpec, Pod};

pub mod alerts;
pub mod aliases;
pub mod assets;
pub mod catalog;
pub mod experiments;
pub mod local_runs;
pub mod notebooks;
pub mod notifications;
pub mod pipelines;
pub mod schedules;
pub mod scorings;
pub mod secrets;
pub mod serving;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use ureq::http::Response;
use ureq::Body;

/// Environment variable naming the credentials file.
pub const CREDENTIALS_ENV: &str = "PADDLECLOUD_CREDENTIALS";
/// Environment variable overriding the file's server address.
pub const SERVER_ENV: &str = "PADDLECLOUD_SERVER";
/// Environment variable naming the account to act in (its credentials file).
pub const ACCOUNT_ENV: &str = "PADDLECLOUD_ACCOUNT";

const HOW_TO_GET_A_KEY: &str = "Download credentials.json from the Account page of the console, \
     or ask an administrator to run `paddlecloud admin create-key --account ACCOUNT --user EMAIL`.";

/// Characters a path segment keeps as they are (RFC 3986 unreserved).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// What went wrong talking to the console, in words to act on.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The credentials file is missing or unreadable.
    #[error("{0}")]
    Credentials(String),
    /// The console answered with an error.
    #[error("{}{message}", field.as_ref().map(|f| format!("{f}: ")).unwrap_or_default())]
    Api {
        /// HTTP status.
        status: u16,
        /// The server's error code (`invalid`, `not_found`, ...).
        code: String,
        /// The server's message.
        message: String,
        /// The field at fault, if any.
        field: Option<String>,
    },
    /// No answer: the server is down, the address is wrong, or the network failed.
    #[error("Could not reach the PaddleCloud Console at {server}: {reason}")]
    Connection {
        /// The address tried.
        server: String,
        /// What failed.
        reason: String,
    },
}

/// `{"error": {"code", "message", "field"}}`.
#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Debug, Deserialize)]
struct ErrorDetail {
    code: String,
    message: String,
    field: Option<String>,
}

/// The credentials file to read: `explicit`, else `$PADDLECLOUD_CREDENTIALS`,
/// else `~/.config/paddlecloud/credentials.json`; with an `account` (a key
/// acts in one account, so a user of several keeps one file each),
/// `credentials-ACCOUNT.json` beside it.
pub fn credentials_path(explicit: Option<&Path>, account: Option<&str>) -> PathBuf {
    if let Some(path) = explicit {
        return path.to_owned();
    }
    if let Some(path) = std::env::var_os(CREDENTIALS_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    let dir = home.join(".config/paddlecloud");
    match account.map(str::trim).filter(|a| !a.is_empty()) {
        Some(account) => dir.join(format!("credentials-{account}.json")),
        None => dir.join("credentials.json"),
    }
}

/// A console and an access key.
pub struct ApiClient {
    server: String,
    key: String,
    pub(crate) agent: ureq::Agent,
}

impl ApiClient {
    /// A client for `server` with `key`.
    pub fn new(server: &str, key: &str) -> Result<Self, ClientError> {
        if !(server.starts_with("http://") || server.starts_with("https://")) {
            return Err(ClientError::Credentials(format!(
                "The server address {server:?} is not a URL: give it like http://127.0.0.1:3000."
            )));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // The API never redirects; a redirect means this is not its address.
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(10)))
            .build()
            .into();
        Ok(Self {
            server: server.trim_end_matches('/').to_owned(),
            key: key.trim().to_owned(),
            agent,
        })
    }

    /// A client from a credentials file; `server` (or `$PADDLECLOUD_SERVER`) overrides its address.
    pub fn from_credentials(path: &Path, server: Option<&str>) -> Result<Self, ClientError> {
        let text = std::fs::read_to_string(path).map_err(|err| {
            ClientError::Credentials(if err.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "No credentials file at {}. {HOW_TO_GET_A_KEY} Save it there, or point \
                     --credentials or {CREDENTIALS_ENV} at it.",
                    path.display()
                )
            } else {
                format!(
                    "The credentials file {} could not be read: {err}.",
                    path.display()
                )
            })
        })?;
        let credentials: Credentials = serde_json::from_str(&text).map_err(|err| {
            ClientError::Credentials(format!(
                "The credentials file {} is not valid ({err}). {HOW_TO_GET_A_KEY}",
                path.display()
            ))
        })?;
        let env_server = std::env::var(SERVER_ENV).ok().filter(|s| !s.is_empty());
        let server = server
            .map(str::to_owned)
            .or(env_server)
            .unwrap_or(credentials.server);
        Self::new(&server, &credentials.key)
    }

    /// The console's address.
    pub fn server(&self) -> &str {
        &self.server
    }

    pub(crate) fn url(&self, segments: &[&str]) -> String {
        let mut url = format!("{}/api/v1", self.server);
        for segment in segments {
            url.push('/');
            url.extend(utf8_percent_encode(segment, SEGMENT));
        }
        url
    }

    pub(crate) fn connection(&self, err: ureq::Error) -> ClientError {
        ClientError::Connection {
            server: self.server.clone(),
            reason: err.to_string(),
        }
    }

    /// The answer if it is a success, else the server's error.
    pub(crate) fn check(
        &self,
        result: Result<Response<Body>, ureq::Error>,
    ) -> Result<Body, ClientError> {
        let response = result.map_err(|err| self.connection(err))?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response.into_body());
        }
        if (300..400).contains(&status) {
            let to = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("?")
                .to_owned();
            return Err(ClientError::Api {
                status,
                code: "invalid".into(),
                message: format!(
                    "The server redirected to {to}: is {} the PaddleCloud Console's address?",
                    self.server
                ),
                field: None,
            });
        }
        let text = response.into_body().read_to_string().unwrap_or_default();
        let (code, mut message, field) = match serde_json::from_str::<ErrorBody>(&text) {
            Ok(body) => (body.error.code, body.error.message, body.error.field),
            Err(_) => (
                "internal".into(),
                format!(
                    "HTTP {status}: {}",
                    text.chars().take(300).collect::<String>()
                ),
                None,
            ),
        };
        if status == 401 {
            message = format!("{message} The access key was refused. {HOW_TO_GET_A_KEY}");
        }
        Err(ClientError::Api {
            status,
            code,
            message,
            field,
        })
    }

    pub(crate) fn json<T: DeserializeOwned>(
        &self,
        result: Result<Response<Body>, ureq::Error>,
    ) -> Result<T, ClientError> {
        self.check(result)?
            .read_json()
            .map_err(|err| self.connection(err))
    }

    /// Every request carries the key and says who sends it.
    pub(crate) fn signed<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        request
            .header("Authorization", &format!("Bearer {}", self.key))
            .header(
                "User-Agent",
                concat!("paddlecloud-cli/", env!("CARGO_PKG_VERSION")),
            )
    }

    pub(crate) fn get(&self, url: &str) -> ureq::RequestBuilder<ureq::typestate::WithoutBody> {
        self.signed(self.agent.get(url))
    }

    pub(crate) fn post(&self, url: &str) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
        self.signed(self.agent.post(url))
    }

    /// Who the key acts as, and in which account.
    pub fn me(&self) -> Result<app::models::Me, ClientError> {
        self.json(self.get(&self.url(&["me"])).call())
    }

    /// The accounts the key's user belongs to.
    pub fn my_accounts(&self) -> Result<Vec<app::models::Membership>, ClientError> {
        self.json(self.get(&self.url(&["me", "accounts"])).call())
    }

    /// Submits a job.
    pub fn submit(&self, spec: &JobSpec) -> Result<Job, ClientError> {
        self.json(self.post(&self.url(&["jobs"])).send_json(spec))
    }

    /// One page of jobs; `filters` are the list route's query parameters.
    pub fn jobs(&self, filters: &[(&str, String)]) -> Result<JobPage, ClientError> {
        let mut request = self.get(&self.url(&["jobs"]));
        for (key, value) in filters {
            request = request.query(*key, value);
        }
        self.json(request.call())
    }

    /// One job.
    pub fn job(&self, name: &str) -> Result<Job, ClientError> {
        self.json(self.get(&self.url(&["jobs", name])).call())
    }

    /// A job with its replicas, its history and what it registered.
    pub fn job_detail(&self, name: &str) -> Result<app::models::JobDetail, ClientError> {
        self.json(self.get(&self.url(&["jobs", name, "detail"])).call())
    }

    /// The lineage graph around `node` (`kind:owner/name[:version]`).
    pub fn lineage(&self, node: &str) -> Result<app::models::Lineage, ClientError> {
        self.json(self.get(&self.url(&["lineage"])).query("node", node).call())
    }

    /// Stops a job.
    pub fn stop(&self, name: &str) -> Result<Job, ClientError> {
        self.json(self.post(&self.url(&["jobs", name, "stop"])).send_empty())
    }

    /// A stack dump of each running replica of job `name` (py-spy).
    pub fn stack_dump(&self, name: &str) -> Result<Vec<app::models::StackDump>, ClientError> {
        self.json(
            self.post(&self.url(&["jobs", name, "stack-dump"]))
                .send_empty(),
        )
    }

    /// The running jobs of every account holding idle GPUs (site admins).
    pub fn idle_gpu_jobs(&self) -> Result<Vec<app::models::IdleGpuJob>, ClientError> {
        self.json(self.get(&self.url(&["admin", "idle-gpus"])).call())
    }

    /// Deletes a job and its logs.
    pub fn delete(&self, name: &str) -> Result<(), ClientError> {
        let request = self.signed(self.agent.delete(&self.url(&["jobs", name])));
        self.check(request.call()).map(drop)
    }

    /// Where jobs run: its room, what is held and what waits.
    pub fn cluster(&self) -> Result<app::models::ClusterCapacity, ClientError> {
        self.json(self.get(&self.url(&["cluster"])).call())
    }

    /// The queue where the caller's jobs run, in order, explained.
    pub fn queue(&self) -> Result<app::models::QueueView, ClientError> {
        self.json(self.get(&self.url(&["queue"])).call())
    }

    /// A job's pods.
    pub fn pods(&self, name: &str) -> Result<Vec<Pod>, ClientError> {
        self.json(self.get(&self.url(&["jobs", name, "pods"])).call())
    }

    /// A pod's log as a stream of bytes (followed: until the pod ends).
    pub fn log(
        &self,
        job: &str,
        pod: &str,
        tail: Option<usize>,
        follow: bool,
        timestamps: bool,
    ) -> Result<impl Read, ClientError> {
        let mut request = self.get(&self.url(&["jobs", job, "pods", pod, "log"]));
        if let Some(tail) = tail {
            request = request.query("tail", tail.to_string());
        }
        if follow {
            request = request.query("follow", "true");
        }
        if timestamps {
            request = request.query("timestamps", "true");
        }
        Ok(self.check(request.call())?.into_reader())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_escaped_so_a_name_cannot_reach_another_route() {
        let client = ApiClient::new("http://127.0.0.1:3000/", "pck_x").unwrap();
        assert_eq!(
            client.url(&["jobs", "../me", "pods"]),
            "http://127.0.0.1:3000/api/v1/jobs/..%2Fme/pods"
        );
    }

    #[test]
    fn a_server_that_is_not_a_url_is_refused_with_an_example() {
        let err = ApiClient::new("127.0.0.1:3000", "k").err().unwrap();
        assert!(err.to_string().contains("http://127.0.0.1:3000"), "{err}");
    }

    #[test]
    fn a_missing_credentials_file_says_where_to_get_one() {
        let err = ApiClient::from_credentials(Path::new("/nonexistent/credentials.json"), None)
            .err()
            .unwrap();
        let text = err.to_string();
        assert!(text.contains("/nonexistent/credentials.json"), "{text}");
        assert!(text.contains("Account page"), "{text}");
    }
}
