//! What a job was made from, recorded in its spec by the console: the
//! template and the values it ran with, or the pipeline node it was. Apart
//! from templates and pipelines, which make jobs, so that a job's spec can
//! name them without depending on what makes it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a job was made from: recorded in its spec by the console.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TemplateUse {
    /// The account whose template it is.
    #[serde(default)]
    pub owner: String,
    /// The template's name.
    pub name: String,
    /// The version run.
    pub version: u32,
    /// Every parameter's value, as checked (defaults included).
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub values: BTreeMap<String, TemplateValue>,
}

impl TemplateUse {
    /// `steps=8, lr=0.25`: the values as the job table's tooltip shows them.
    pub fn values_text(&self) -> String {
        self.values
            .iter()
            .map(|(k, v)| format!("{k}={}", v.to_text()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A checked value: what a parameter took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TemplateValue {
    /// `bool`.
    Bool(bool),
    /// `int`.
    Int(i64),
    /// `float`, as written (so that it compares and hashes).
    Float(FloatText),
    /// Everything else.
    Text(String),
}

/// A finite float kept as its JSON number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FloatText(pub serde_json::Number);

impl TemplateValue {
    /// A JSON value as the value a placeholder takes: numbers and booleans
    /// keep their type, anything else is its text.
    pub fn from_json(value: &Value) -> Self {
        match value {
            Value::Bool(b) => Self::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Self::Int(i),
                None => Self::Float(FloatText(n.clone())),
            },
            Value::String(s) => Self::Text(s.clone()),
            other => Self::Text(other.to_string()),
        }
    }

    /// As JSON, typed.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Bool(b) => Value::Bool(*b),
            Self::Int(i) => Value::from(*i),
            Self::Float(f) => Value::Number(f.0.clone()),
            Self::Text(t) => Value::String(t.clone()),
        }
    }

    /// As text inside a longer string.
    pub fn to_text(&self) -> String {
        match self {
            Self::Bool(b) => b.to_string(),
            Self::Int(i) => i.to_string(),
            Self::Float(f) => f.0.to_string(),
            Self::Text(t) => t.clone(),
        }
    }
}

/// A job's record of the pipeline run it belongs to. Set by the console,
/// never from what a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PipelineUse {
    /// The run.
    pub run: String,
    /// The node.
    pub node: String,
    /// Which try (1 for the first).
    pub attempt: u32,
}

/// A job's record of the experiment trial it is. Set by the console's
/// experiment controller, never from what a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ExperimentUse {
    /// The experiment.
    pub name: String,
    /// The trial's number, from 1.
    pub trial: u32,
}

/// What a notebook run's Python needs besides its environment: papermill
/// (pinned: the version the tests run) and a kernel for it to start. Here,
/// beside the run's record, because a job's spec says what it needs.
pub const NOTEBOOK_RUN_EXTRAS: &[&str] = &["papermill==2.7.0", "ipykernel"];

/// The environment a notebook run takes when nothing names one: the
/// console's shipped Python with the SDK.
pub const DEFAULT_RUN_ENVIRONMENT: &str = "paddlecloud/minimal";
/// The module of the SDK a notebook run's replica starts (see
/// `notebook_run.py`).
pub const RUNNER_MODULE: &str = "paddlecloud.notebook_run";

/// A job's record of the notebook file it runs (papermill): which version
/// of which file of which notebook, the values it was given, and the key of
/// its files (the input as taken, the executed output). Set by the console
/// when it runs a notebook, never from what a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookRunUse {
    /// The notebook (workspace) the file is in.
    pub notebook: String,
    /// The file's path in the workspace.
    pub path: String,
    /// The version run (its id on the notebook's history).
    pub version: i64,
    /// The run's own key: where its input and output notebooks are kept
    /// (32 hex digits), so that they outlive the notebook's versions.
    pub run: String,
    /// The values given, as checked; parameters left out keep what the
    /// notebook's parameters cell says.
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub values: BTreeMap<String, TemplateValue>,
}

impl NotebookRunUse {
    /// The values as the JSON object the runner injects (typed).
    pub fn values_json(&self) -> Value {
        Value::Object(
            self.values
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect(),
        )
    }

    /// The command of the run's one replica: the SDK's runner, which
    /// fetches the input, runs papermill and sends the output back.
    pub fn runner_command(&self) -> Vec<String> {
        vec!["python3".into(), "-m".into(), RUNNER_MODULE.into()]
    }

    /// The runner's arguments: the values to inject, as JSON.
    pub fn runner_args(&self) -> Vec<String> {
        vec!["--parameters".into(), self.values_json().to_string()]
    }

    /// `lr=0.1, epochs=3` (empty when none were given).
    pub fn values_text(&self) -> String {
        self.values
            .iter()
            .map(|(k, v)| format!("{k}={}", v.to_text()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A job's record of the batch scoring it is a try of: what it scores and
/// where its predictions go. Set by the console when it starts a scoring
/// job (see `models::scoring`), never from what a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ScoringUse {
    /// The input: a dataset's saved version, `owner/name:N`.
    pub dataset: String,
    /// The output dataset, `owner/name`.
    pub output: String,
    /// The output's version this scoring writes (every try the same).
    pub version: u32,
    /// The first try's job (the one the output version records).
    pub first: String,
    /// Which try (1 for the first).
    pub attempt: u32,
}
