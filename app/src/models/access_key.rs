//! Access keys: how the CLI, the SDK and scripts authenticate to `/api/v1`.

use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::Me;

/// Every key starts with this, so a leaked one is easy to recognise (and to
/// search for in code and logs).
pub const ACCESS_KEY_PREFIX: &str = "pck_";
/// How many leading characters of a key are stored in the clear, to tell keys apart.
pub const SHOWN_PREFIX_LEN: usize = 12;
/// Longest key name.
pub const MAX_KEY_NAME_LEN: usize = 64;

/// The MLflow tracking API's prefix (its reads that search are POSTs).
const MLFLOW: &str = "/api/2.0/mlflow/";

/// What an access key may do. A key never does more than its user's role
/// allows; a scope narrows it further.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum KeyScope {
    /// Everything its user may do (keys made before scopes existed).
    #[default]
    Full,
    /// Reading only: `GET` anywhere, MLflow's searches, calling served models.
    Read,
    /// Reading, and writing metrics: PaddleBoard points and metric files,
    /// local runs' reports, MLflow runs' metrics, parameters and tags.
    Metrics,
    /// Reading, and submitting and stopping jobs (directly or from a template).
    Submit,
}

impl KeyScope {
    /// Every scope, in the order the form offers them.
    pub const ALL: [KeyScope; 4] = [Self::Full, Self::Read, Self::Metrics, Self::Submit];

    /// As stored and sent: `full`, `read`, `metrics`, `submit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Read => "read",
            Self::Metrics => "metrics",
            Self::Submit => "submit",
        }
    }

    /// What it allows, in a user's words.
    pub fn label(self) -> &'static str {
        match self {
            Self::Full => "everything you may do",
            Self::Read => "read only",
            Self::Metrics => "read and write metrics",
            Self::Submit => "read, submit and stop jobs",
        }
    }

    /// The scope named `word`, or a 400 on `scope` naming the four.
    pub fn parse(word: &str) -> Result<Self, AppError> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == word.trim())
            .ok_or_else(|| {
                AppError::invalid(
                    "scope",
                    format!("“{word}” is not a key scope: use full, read, metrics or submit."),
                )
            })
    }

    /// Whether a key of this scope may make a `method` request to `path`
    /// (the API's, MLflow's or a served model's).
    pub fn allows(self, method: &str, path: &str) -> bool {
        let reads = matches!(method, "GET" | "HEAD")
            // MLflow's searches are POSTs that change nothing.
            || (method == "POST" && path.starts_with(MLFLOW) && path.ends_with("/search"))
            // Calling a served model changes nothing either.
            || path.starts_with("/serve/");
        match self {
            Self::Full => true,
            Self::Read => reads,
            Self::Metrics => reads || (method != "DELETE" && writes_metrics(path)),
            Self::Submit => reads || (method == "POST" && submits(path)),
        }
    }
}

/// Paths that write metrics: a job's points and metric files, a local
/// run's reports, an MLflow run's metrics, parameters and tags.
fn writes_metrics(path: &str) -> bool {
    let job_metrics = path.strip_prefix("/api/v1/jobs/").is_some_and(|rest| {
        rest.split_once('/').is_some_and(|(_, tail)| {
            tail == "metrics" || tail.starts_with("metrics/") || tail.starts_with("metric-files/")
        })
    });
    let mlflow_runs = path.strip_prefix(MLFLOW).is_some_and(|rest| {
        matches!(
            rest,
            "runs/create"
                | "runs/update"
                | "runs/log-metric"
                | "runs/log-batch"
                | "runs/log-parameter"
                | "runs/set-tag"
                | "experiments/create"
        )
    });
    job_metrics
        || mlflow_runs
        || path == "/api/v1/local-runs"
        || path.starts_with("/api/v1/local-runs/")
}

/// Paths that submit or stop a job.
fn submits(path: &str) -> bool {
    let one = |prefix: &str, suffix: &str| {
        path.strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(suffix))
            .is_some_and(|name| !name.is_empty() && !name.contains('/'))
    };
    path == "/api/v1/jobs" || one("/api/v1/jobs/", "/stop") || one("/api/v1/templates/", "/jobs")
}

/// An access key as the Account page lists it; the secret itself is never stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessKeyInfo {
    /// Database id, used to revoke it.
    pub id: i64,
    /// What the user called it (`laptop`, `ci`).
    pub name: String,
    /// The key's first characters, e.g. `pck_3fa9c01b`.
    pub prefix: String,
    /// When it was created, Unix milliseconds.
    pub created_at: i64,
    /// When it last authenticated a request (updated at most once a minute).
    pub last_used_at: Option<i64>,
    /// What it may do.
    #[serde(default)]
    pub scope: KeyScope,
    /// When it stops working, Unix milliseconds (`None`: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Whether it had expired when it was listed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
}

impl AccessKeyInfo {
    /// Whether it has expired at `now` (Unix ms).
    pub fn is_expired_at(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }
}

/// Longest life a key may be given, in days (ten years).
pub const MAX_KEY_DAYS: u32 = 3650;

/// What a new key is made with, besides its name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyTerms {
    /// What it may do.
    #[serde(default)]
    pub scope: KeyScope,
    /// Days until it expires (`None`: never).
    #[serde(default)]
    pub expires_in_days: Option<u32>,
}

impl KeyTerms {
    /// The terms, checked: a key lives 1 to [`MAX_KEY_DAYS`] days, or forever.
    pub fn validated(self) -> Result<Self, AppError> {
        match self.expires_in_days {
            Some(days) if days == 0 || days > MAX_KEY_DAYS => Err(AppError::invalid(
                "expires_in_days",
                format!("A key expires after 1 to {MAX_KEY_DAYS} days, or never."),
            )),
            _ => Ok(self),
        }
    }

    /// When a key made at `now` (Unix ms) expires.
    pub fn expires_at(self, now: i64) -> Option<i64> {
        self.expires_in_days
            .map(|days| now.saturating_add(i64::from(days) * 86_400_000))
    }
}

/// A key just created: the only time its secret is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewAccessKey {
    /// The secret, for the `Authorization: Bearer` header.
    pub key: String,
    /// What the list shows from now on.
    pub info: AccessKeyInfo,
}

/// The credentials file the CLI and the SDK read
/// (`~/.config/paddlecloud/credentials.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The console's URL, e.g. `http://127.0.0.1:3000`.
    pub server: String,
    /// The account the key acts in.
    pub account: String,
    /// The user the key belongs to.
    pub user: String,
    /// The access key.
    pub key: String,
}

/// The file name the console offers the credentials under.
pub const CREDENTIALS_FILE: &str = "credentials.json";

impl Credentials {
    /// The credentials of `key`, which belongs to `me`, for the console at `server`.
    pub fn new(server: String, me: &Me, key: String) -> Self {
        Self {
            server,
            account: me.account.name.clone(),
            user: me.email.clone(),
            key,
        }
    }

    /// The file's text: pretty JSON, so a user can read what it holds.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// The file as a `data:` URL, for a download link that needs no second
    /// request (the secret exists only in this one answer).
    pub fn data_url(&self) -> String {
        let mut url = String::from("data:application/json;charset=utf-8,");
        for byte in self.to_json().bytes() {
            if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
                url.push(char::from(byte));
            } else {
                url.push_str(&format!("%{byte:02X}"));
            }
        }
        url
    }
}

/// Trims a key name and checks it is 1 to 64 printable characters.
pub fn validate_key_name(name: &str) -> Result<String, AppError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(AppError::invalid(
            "name",
            "Give the key a name, e.g. the machine or script that will use it.",
        ));
    }
    if name.chars().count() > MAX_KEY_NAME_LEN {
        return Err(AppError::invalid(
            "name",
            format!("A key name is at most {MAX_KEY_NAME_LEN} characters."),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "name",
            "A key name cannot contain control characters.",
        ));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_are_trimmed_and_bounded() {
        assert_eq!(validate_key_name("  laptop ").unwrap(), "laptop");
        assert_eq!(validate_key_name("   ").unwrap_err().field(), Some("name"));
        assert!(validate_key_name(&"k".repeat(65)).is_err());
        assert!(validate_key_name("a\nb").is_err());
    }

    #[test]
    fn a_keys_scope_allows_what_it_names_and_nothing_more() {
        use KeyScope::*;
        let cases = [
            ("GET", "/api/v1/jobs", [true, true, true, true]),
            ("POST", "/api/v1/jobs", [true, false, false, true]),
            (
                "POST",
                "/api/v1/jobs/train/stop",
                [true, false, false, true],
            ),
            (
                "POST",
                "/api/v1/templates/mnist/jobs",
                [true, false, false, true],
            ),
            ("DELETE", "/api/v1/jobs/train", [true, false, false, false]),
            (
                "POST",
                "/api/v1/jobs/train/metrics",
                [true, false, true, false],
            ),
            (
                "PUT",
                "/api/v1/jobs/train/metric-files/loss.csv",
                [true, false, true, false],
            ),
            (
                "DELETE",
                "/api/v1/jobs/train/metrics/loss",
                [true, false, false, false],
            ),
            (
                "POST",
                "/api/v1/local-runs/r1/log",
                [true, false, true, false],
            ),
            (
                "POST",
                "/api/2.0/mlflow/runs/log-batch",
                [true, false, true, false],
            ),
            (
                "POST",
                "/api/2.0/mlflow/runs/search",
                [true, true, true, true],
            ),
            (
                "POST",
                "/api/2.0/mlflow/registered-models/create",
                [true, false, false, false],
            ),
            ("POST", "/api/v1/datasets", [true, false, false, false]),
            (
                "POST",
                "/serve/acme/mnist/predict",
                [true, true, true, true],
            ),
            ("POST", "/api/v1/jobs/a/b/stop", [true, false, false, false]),
        ];
        for (method, path, want) in cases {
            let got = [Full, Read, Metrics, Submit].map(|s| s.allows(method, path));
            assert_eq!(got, want, "{method} {path}");
        }
        assert_eq!(KeyScope::parse(" submit").unwrap(), Submit);
        assert_eq!(KeyScope::parse("admin").unwrap_err().field(), Some("scope"));
    }

    #[test]
    fn a_key_lives_one_day_to_ten_years_or_forever() {
        let terms = |days| KeyTerms {
            scope: KeyScope::Read,
            expires_in_days: days,
        };
        assert_eq!(
            terms(Some(30)).validated().unwrap().expires_at(0),
            Some(30 * 86_400_000)
        );
        assert_eq!(terms(None).validated().unwrap().expires_at(5), None);
        for bad in [0, MAX_KEY_DAYS + 1] {
            let err = terms(Some(bad)).validated().unwrap_err();
            assert_eq!(err.field(), Some("expires_in_days"));
        }
        let info = AccessKeyInfo {
            id: 1,
            name: "ci".into(),
            prefix: "pck_0".into(),
            created_at: 0,
            last_used_at: None,
            scope: KeyScope::Read,
            expires_at: Some(10),
            expired: false,
        };
        assert!(!info.is_expired_at(9) && info.is_expired_at(10));
    }

    #[test]
    fn credentials_files_are_json_with_the_four_keys() {
        let c = Credentials {
            server: "http://127.0.0.1:3000".into(),
            account: "acme".into(),
            user: "ada@example.com".into(),
            key: "pck_x".into(),
        };
        let back: Credentials = serde_json::from_str(&c.to_json()).unwrap();
        assert_eq!(back, c);
        let url = c.data_url();
        assert!(
            url.starts_with("data:application/json;charset=utf-8,%7B%0A"),
            "{url}"
        );
        assert!(url.contains("pck_x") && !url.contains('"') && !url.contains(' '));
    }
}
