//! MLflow's JSON: request and response shapes as the `mlflow` Python client
//! (mlflow-skinny 3.x) sends and reads them, and its error body.
//!
//! int64 fields arrive as JSON numbers (the client converts them) but strings
//! are accepted too, as protobuf's JSON mapping allows; ids are strings;
//! NaN and ±Infinity are the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.

use app::error::AppError;
use app::models::json_float;
use http::StatusCode;
use serde::{Deserialize, Deserializer, Serialize};

/// An MLflow error: `{"error_code", "message"}` with the status MLflow uses.
#[derive(Debug)]
pub struct MlflowError {
    /// HTTP status.
    pub status: StatusCode,
    /// MLflow's code, e.g. `RESOURCE_DOES_NOT_EXIST`.
    pub code: &'static str,
    /// What went wrong.
    pub message: String,
}

impl MlflowError {
    /// `INVALID_PARAMETER_VALUE` (400).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "INVALID_PARAMETER_VALUE",
            message: message.into(),
        }
    }

    /// `RESOURCE_DOES_NOT_EXIST` (404).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            code: "RESOURCE_DOES_NOT_EXIST",
            message: message.into(),
        }
    }

    /// `RESOURCE_ALREADY_EXISTS` (400, as MLflow answers it).
    pub fn exists(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "RESOURCE_ALREADY_EXISTS",
            message: message.into(),
        }
    }
}

impl From<AppError> for MlflowError {
    fn from(err: AppError) -> Self {
        let (status, code) = match &err {
            AppError::Invalid { .. } => (StatusCode::BAD_REQUEST, "INVALID_PARAMETER_VALUE"),
            AppError::Unauthenticated | AppError::BadCredentials => {
                (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED")
            }
            AppError::Forbidden { .. } => (StatusCode::FORBIDDEN, "PERMISSION_DENIED"),
            AppError::NotFound { .. } => (StatusCode::NOT_FOUND, "RESOURCE_DOES_NOT_EXIST"),
            AppError::Conflict { .. } => (StatusCode::BAD_REQUEST, "RESOURCE_ALREADY_EXISTS"),
            AppError::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "INVALID_PARAMETER_VALUE"),
            AppError::TooMany { .. } => (StatusCode::TOO_MANY_REQUESTS, "REQUEST_LIMIT_EXCEEDED"),
            AppError::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR"),
            AppError::Unavailable { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "TEMPORARILY_UNAVAILABLE")
            }
        };
        Self {
            status,
            code,
            message: err.to_string(),
        }
    }
}

/// An int64 as a JSON number or a decimal string.
pub fn int64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Number(i64),
        Text(String),
    }
    match Option::<Raw>::deserialize(d)? {
        None => Ok(None),
        Some(Raw::Number(n)) => Ok(Some(n)),
        Some(Raw::Text(t)) => t
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("“{t}” is not an integer"))),
    }
}

/// A key and a value (tags, params).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// The value.
    #[serde(default)]
    pub value: String,
}

/// One metric point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// The metric's name.
    pub key: String,
    /// Its value.
    #[serde(with = "json_float")]
    pub value: f64,
    /// Unix milliseconds.
    #[serde(default, deserialize_with = "int64")]
    pub timestamp: Option<i64>,
    /// Training step (default 0).
    #[serde(default, deserialize_with = "int64")]
    pub step: Option<i64>,
}

/// A metric as responses carry it (every field present).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricOut {
    /// The metric's name.
    pub key: String,
    /// Its value.
    #[serde(with = "json_float")]
    pub value: f64,
    /// Unix milliseconds.
    pub timestamp: i64,
    /// Training step.
    pub step: i64,
}

/// An experiment.
#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    /// Its id (`"0"` is the account's Default experiment).
    pub experiment_id: String,
    /// Its name.
    pub name: String,
    /// Where artifacts would go (the console keeps none).
    pub artifact_location: String,
    /// `active` or `deleted`.
    pub lifecycle_stage: String,
    /// Unix ms.
    pub creation_time: i64,
    /// Unix ms.
    pub last_update_time: i64,
    /// Its tags.
    pub tags: Vec<KeyValue>,
}

/// What identifies a run and where it stands.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    /// The run's id (32 hex digits).
    pub run_id: String,
    /// The same, under its old name.
    pub run_uuid: String,
    /// Its name.
    pub run_name: String,
    /// Its experiment.
    pub experiment_id: String,
    /// Who started it, as the client says.
    pub user_id: String,
    /// `RUNNING`, `SCHEDULED`, `FINISHED`, `FAILED` or `KILLED`.
    pub status: String,
    /// Unix ms.
    pub start_time: i64,
    /// Unix ms, once it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<i64>,
    /// Where artifacts would go.
    pub artifact_uri: String,
    /// `active` or `deleted`.
    pub lifecycle_stage: String,
}

/// A run's logged data.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunData {
    /// The latest point of each metric.
    pub metrics: Vec<MetricOut>,
    /// Its parameters.
    pub params: Vec<KeyValue>,
    /// Its tags.
    pub tags: Vec<KeyValue>,
}

/// A run.
#[derive(Debug, Clone, Serialize)]
pub struct MlflowRun {
    /// Identity and state.
    pub info: RunInfo,
    /// What it logged.
    pub data: RunData,
}

/// MlflowRun states MLflow knows.
pub const RUN_STATUSES: &[&str] = &["RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED"];

/// MLflow's key rules: at most 250 characters of letters, digits, `_ - . / :`
/// and spaces, not a path that escapes.
pub fn validate_key(what: &str, key: &str) -> Result<(), MlflowError> {
    let ok = !key.is_empty()
        && key.len() <= 250
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || "_-./: ".contains(c))
        && !key.starts_with('/')
        && !key.split('/').any(|part| part == "..");
    if ok {
        Ok(())
    } else {
        Err(MlflowError::invalid(format!(
            "Invalid {what} name: '{key}'. Names may only contain alphanumerics, underscores \
             (_), dashes (-), periods (.), spaces ( ), colon(:) and slashes (/), at most 250."
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int64_fields_are_numbers_or_strings() {
        let m: Metric =
            serde_json::from_str(r#"{"key":"loss","value":"NaN","timestamp":"17","step":3}"#)
                .unwrap();
        assert_eq!((m.timestamp, m.step), (Some(17), Some(3)));
        assert!(m.value.is_nan());
        let out = serde_json::to_string(&MetricOut {
            key: "k".into(),
            value: f64::NEG_INFINITY,
            timestamp: 1,
            step: 2,
        })
        .unwrap();
        assert_eq!(
            out,
            r#"{"key":"k","value":"-Infinity","timestamp":1,"step":2}"#
        );
    }

    #[test]
    fn keys_follow_mlflows_rules() {
        assert!(validate_key("metric", "train/loss 1:a.b-c").is_ok());
        for bad in ["", "/abs", "a/../b", "semi;colon", &"k".repeat(251)] {
            assert!(validate_key("metric", bad).is_err(), "{bad}");
        }
    }
}
