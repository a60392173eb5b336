//! Pipelines: a graph of jobs run as one (the design's "DAG of
//! experiments"). A pipeline names its nodes, each a job spec or a template
//! with values, and what each waits for (`after`); a run of it submits each
//! node as an ordinary job once what it waits for has happened, retries a
//! failed node as many times as it says, and is succeeded only if every
//! node that had to run succeeded.
//!
//! Placeholders in a node (`{{params.lr}}`, `{{nodes.train.model}}`,
//! `{{nodes.train.metrics.loss}}`) are filled when the node starts, the
//! same way a template's are: a whole-string placeholder keeps its type.

mod engine;
pub mod layout;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AppError;
use crate::models::names::validate_job_name;

pub use engine::{next_steps, Step};

/// The most nodes a pipeline may have.
pub const MAX_NODES: usize = 2000;
/// The longest pipeline name: a run is named `<pipeline>-<6 characters>`
/// and its nodes' jobs `<run>-<node>[-rN]`, within a job name's 50.
pub const MAX_PIPELINE_NAME: usize = 20;
/// The longest node name (see [`MAX_PIPELINE_NAME`]).
pub const MAX_NODE_NAME: usize = 18;
/// The most times a node is tried again after it fails.
pub const MAX_RETRIES: u32 = 9;
/// The longest first wait before a retry, seconds (it doubles each time).
pub const MAX_BACKOFF_SECS: u32 = 3600;

/// A pipeline: nodes and what each waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PipelineSpec {
    /// Lower-case letters, digits and '-', at most 20 characters; runs are
    /// named after it.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The pipeline's parameters and their defaults; a run may give other
    /// values. Nodes read them as `{{params.<name>}}`.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub parameters: BTreeMap<String, Value>,
    /// Its nodes.
    pub nodes: Vec<PipelineNode>,
    /// After a node fails (its retries spent), start no other node: the
    /// rest are skipped, and nodes already running finish. Default on.
    #[serde(default = "yes")]
    pub fail_fast: bool,
}

fn yes() -> bool {
    true
}

fn default_backoff() -> u32 {
    10
}

/// One node: a job, and when it may start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PipelineNode {
    /// Unique in the pipeline, a job-name part (at most 18 characters).
    pub name: String,
    /// The job, as a job spec without its name (the console names it
    /// `<run>-<node>`); placeholders allowed anywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ssr", schema(value_type = Option<Object>))]
    pub job: Option<Value>,
    /// Or a template with values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<NodeTemplate>,
    /// What it waits for: `a` (a succeeded), `a.succeeded`, `a.failed`
    /// or `a.finished` (either). It starts once every one holds, and is
    /// skipped once one cannot hold any more.
    #[serde(default)]
    pub after: Vec<String>,
    /// Times it is tried again after it fails.
    #[serde(default)]
    pub retries: u32,
    /// Seconds before the first retry; each next one waits twice as long.
    #[serde(default = "default_backoff")]
    pub backoff_secs: u32,
}

/// A node made from a template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NodeTemplate {
    /// The template's name.
    pub name: String,
    /// Its owner when another account published it (`paddlecloud`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// A version (none: the newest when the run starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// Values of its parameters; placeholders allowed.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub values: BTreeMap<String, Value>,
}

/// What a dependency needs of the node it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// It succeeded.
    Succeeded,
    /// It failed (its retries spent).
    Failed,
    /// It ended either way.
    Finished,
}

/// One entry of a node's `after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// The node it names.
    pub node: String,
    /// What it needs of it.
    pub need: Need,
}

impl Dependency {
    /// Reads `a`, `a.succeeded`, `a.failed` or `a.finished`.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (node, need) = match text.split_once('.') {
            None => (text, Need::Succeeded),
            Some((node, "succeeded")) => (node, Need::Succeeded),
            Some((node, "failed")) => (node, Need::Failed),
            Some((node, "finished")) => (node, Need::Finished),
            Some(_) => return None,
        };
        (!node.is_empty()).then(|| Self {
            node: node.to_owned(),
            need,
        })
    }
}

impl PipelineNode {
    /// Its dependencies, read (call after [`PipelineSpec::validate`]).
    pub fn dependencies(&self) -> Vec<Dependency> {
        self.after
            .iter()
            .filter_map(|a| Dependency::parse(a))
            .collect()
    }

    /// Every placeholder in its job or template values.
    pub fn placeholders(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(job) = &self.job {
            collect(job, &mut out);
        }
        if let Some(t) = &self.template {
            t.values.values().for_each(|v| collect(v, &mut out));
        }
        out
    }
}

fn collect(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.extend(
            crate::models::templates::placeholders(s)
                .into_iter()
                .map(str::to_owned),
        ),
        Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect(v, out)),
        _ => {}
    }
}

/// What a node placeholder reads of an earlier node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// The model version its job registered last (`owner/name:version`).
    Model,
    /// The last value of one of its job's metrics.
    Metric(String),
}

/// What a placeholder names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placeholder {
    /// `params.<name>`.
    Param(String),
    /// `nodes.<node>.model` or `nodes.<node>.metrics.<tag>`.
    Node(String, Output),
}

impl Placeholder {
    /// Reads a placeholder's name; `None` when it is none of the above.
    pub fn parse(text: &str) -> Option<Self> {
        if let Some(name) = text.strip_prefix("params.") {
            return (!name.is_empty()).then(|| Self::Param(name.to_owned()));
        }
        let rest = text.strip_prefix("nodes.")?;
        let (node, what) = rest.split_once('.')?;
        let output = match what {
            "model" => Output::Model,
            _ => Output::Metric(
                what.strip_prefix("metrics.")
                    .filter(|t| !t.is_empty())?
                    .to_owned(),
            ),
        };
        Some(Self::Node(node.to_owned(), output))
    }
}

impl PipelineSpec {
    /// Checks the pipeline as a whole: names, dependencies (unknown ones,
    /// cycles, naming the cycle), retries, placeholders (parameters that
    /// exist, outputs of nodes that come before). A node's job itself is
    /// checked when a run is made ([`crate::use_cases`]). The error names
    /// the field (`nodes[2].after`).
    pub fn validate(&self) -> Result<(), AppError> {
        validate_job_name(&self.name)?;
        if self.name.len() > MAX_PIPELINE_NAME {
            return Err(AppError::invalid(
                "name",
                format!("A pipeline name has at most {MAX_PIPELINE_NAME} characters (its runs' jobs add to it)."),
            ));
        }
        if self.nodes.is_empty() {
            return Err(AppError::invalid(
                "nodes",
                "A pipeline needs at least one node.",
            ));
        }
        if self.nodes.len() > MAX_NODES {
            return Err(AppError::invalid(
                "nodes",
                format!("A pipeline has at most {MAX_NODES} nodes."),
            ));
        }
        for name in self.parameters.keys() {
            if name.is_empty() || name.contains(['{', '}', '.']) {
                return Err(AppError::invalid(
                    format!("parameters.{name}"),
                    "A parameter name has no '.', '{' or '}'.",
                ));
            }
        }
        let mut seen = BTreeSet::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let field = |f: &str| format!("nodes[{i}].{f}");
            validate_job_name(&node.name).map_err(|_| {
                AppError::invalid(
                    field("name"),
                    "A node name has lower-case letters, digits and '-' and starts with a letter.",
                )
            })?;
            if node.name.len() > MAX_NODE_NAME {
                return Err(AppError::invalid(
                    field("name"),
                    format!("A node name has at most {MAX_NODE_NAME} characters."),
                ));
            }
            if !seen.insert(node.name.as_str()) {
                return Err(AppError::invalid(
                    field("name"),
                    format!("Two nodes are named “{}”.", node.name),
                ));
            }
            match (&node.job, &node.template) {
                (Some(Value::Object(_)), None) | (None, Some(_)) => {}
                (Some(_), None) => {
                    return Err(AppError::invalid(
                        field("job"),
                        "A node's job is a job spec (an object).",
                    ))
                }
                _ => {
                    return Err(AppError::invalid(
                        format!("nodes[{i}]"),
                        "A node has either a job or a template.",
                    ))
                }
            }
            if node.retries > MAX_RETRIES {
                return Err(AppError::invalid(
                    field("retries"),
                    format!("A node is retried at most {MAX_RETRIES} times."),
                ));
            }
            if node.backoff_secs > MAX_BACKOFF_SECS {
                return Err(AppError::invalid(
                    field("backoff_secs"),
                    format!("The first retry waits at most {MAX_BACKOFF_SECS} seconds."),
                ));
            }
        }
        for (i, node) in self.nodes.iter().enumerate() {
            for text in &node.after {
                let dep = Dependency::parse(text).ok_or_else(|| {
                    AppError::invalid(
                        format!("nodes[{i}].after"),
                        format!("“{text}” is not a dependency: write a node's name, optionally with .succeeded, .failed or .finished."),
                    )
                })?;
                if !seen.contains(dep.node.as_str()) {
                    return Err(AppError::invalid(
                        format!("nodes[{i}].after"),
                        format!("There is no node “{}”.", dep.node),
                    ));
                }
            }
        }
        if let Some(cycle) = self.cycle() {
            return Err(AppError::invalid(
                "nodes",
                format!(
                    "The nodes wait for each other in a cycle: {}.",
                    cycle.join(" → ")
                ),
            ));
        }
        let index = self.index();
        for (i, node) in self.nodes.iter().enumerate() {
            let placeholders = node.placeholders();
            // Only a node that reads earlier nodes needs its ancestors.
            let reads_nodes = placeholders.iter().any(|p| p.starts_with("nodes."));
            let before = if reads_nodes {
                self.ancestors(i, &index)
            } else {
                BTreeSet::new()
            };
            for text in placeholders {
                let bad = |why: String| Err(AppError::invalid(format!("nodes[{i}]"), why));
                match Placeholder::parse(&text) {
                    Some(Placeholder::Param(p)) if !self.parameters.contains_key(&p) => {
                        return bad(format!("{{{{{text}}}}}: the pipeline has no parameter “{p}”."))
                    }
                    Some(Placeholder::Node(n, _)) if !before.contains(n.as_str()) => {
                        return bad(format!(
                            "{{{{{text}}}}}: “{n}” is not a node that “{}” waits for.",
                            node.name
                        ))
                    }
                    None => {
                        return bad(format!(
                            "{{{{{text}}}}} is not a placeholder here: use params.<name>, nodes.<node>.model or nodes.<node>.metrics.<tag>."
                        ))
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The index of each node by name.
    pub fn index(&self) -> BTreeMap<&str, usize> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect()
    }

    /// A cycle of `after`s, as node names from one back to itself.
    fn cycle(&self) -> Option<Vec<String>> {
        let index = self.index();
        // 0: unvisited, 1: on the path, 2: done.
        let mut mark = vec![0u8; self.nodes.len()];
        for start in 0..self.nodes.len() {
            if mark[start] != 0 {
                continue;
            }
            // An explicit stack: a 2,000-node chain would overflow recursion.
            let mut path: Vec<(usize, usize)> = vec![(start, 0)];
            mark[start] = 1;
            while let Some(&mut (node, ref mut next)) = path.last_mut() {
                let deps = &self.nodes[node].after;
                if *next < deps.len() {
                    let dep = Dependency::parse(&deps[*next]).map(|d| index[d.node.as_str()]);
                    *next += 1;
                    let Some(dep) = dep else { continue };
                    match mark[dep] {
                        0 => {
                            mark[dep] = 1;
                            path.push((dep, 0));
                        }
                        1 => {
                            let from = path.iter().position(|(n, _)| *n == dep).unwrap_or(0);
                            let mut names: Vec<String> = path[from..]
                                .iter()
                                .map(|(n, _)| self.nodes[*n].name.clone())
                                .collect();
                            names.push(self.nodes[dep].name.clone());
                            // Read as "waits for": a → b means a waits for b.
                            return Some(names);
                        }
                        _ => {}
                    }
                } else {
                    mark[node] = 2;
                    path.pop();
                }
            }
        }
        None
    }

    /// The names of every node node `i` waits for, directly or not.
    fn ancestors(&self, i: usize, index: &BTreeMap<&str, usize>) -> BTreeSet<&str> {
        let mut out = BTreeSet::new();
        let mut todo = vec![i];
        while let Some(n) = todo.pop() {
            for dep in self.nodes[n].dependencies() {
                if out.insert(self.nodes[index[dep.node.as_str()]].name.as_str()) {
                    todo.push(index[dep.node.as_str()]);
                }
            }
        }
        out
    }
}

/// Where a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum NodeStatus {
    /// Waiting for what it depends on, for a retry's backoff, or for its
    /// job to start (the message says which).
    Pending,
    /// Its job runs.
    Running,
    /// Its job succeeded.
    Succeeded,
    /// Its job failed and no retry is left.
    Failed,
    /// It will not run (the message says why).
    Skipped,
    /// The run was stopped before it ended.
    Stopped,
}

impl NodeStatus {
    /// Every status, in the filter's order.
    pub const ALL: [NodeStatus; 6] = [
        Self::Pending,
        Self::Running,
        Self::Succeeded,
        Self::Failed,
        Self::Skipped,
        Self::Stopped,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::Stopped => "stopped",
        }
    }

    /// Reads the stored spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether nothing more will happen to it.
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Pending | Self::Running)
    }
}

/// A node of a run as it is now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NodeState {
    /// The node's name.
    pub name: String,
    /// Where it is.
    pub status: NodeStatus,
    /// Why it waits, was skipped or failed.
    pub message: String,
    /// Tries so far (0 before its first job).
    pub attempt: u32,
    /// Its current (or last) job's name.
    pub job: Option<String>,
    /// Not before this (Unix ms): the next try's backoff.
    pub not_before: Option<i64>,
    /// Unix ms.
    pub started_at: Option<i64>,
    /// Unix ms.
    pub finished_at: Option<i64>,
}

impl NodeState {
    /// A node before its first try (as a preview draws it).
    pub fn pending(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            status: NodeStatus::Pending,
            message: String::new(),
            attempt: 0,
            job: None,
            not_before: None,
            started_at: None,
            finished_at: None,
        }
    }
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum RunStatus {
    /// Some node may still run.
    Running,
    /// Every node that had to run succeeded.
    Succeeded,
    /// A node failed (the others ended or were skipped).
    Failed,
    /// Stopped by a user.
    Stopped,
}

impl RunStatus {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }

    /// Reads the stored spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Running, Self::Succeeded, Self::Failed, Self::Stopped]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// A run of a pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PipelineRun {
    /// `<pipeline>-<6 characters>`, unless the run was named.
    pub name: String,
    /// The pipeline as it was submitted.
    pub spec: PipelineSpec,
    /// The parameters' values (defaults filled in).
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub values: BTreeMap<String, Value>,
    /// Where it is.
    pub status: RunStatus,
    /// Why it failed or stopped.
    pub message: String,
    /// Who submitted it (email).
    pub created_by: String,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub finished_at: Option<i64>,
    /// Its nodes, in the spec's order.
    pub nodes: Vec<NodeState>,
}

/// What submitting a pipeline takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PipelineSubmit {
    /// The pipeline.
    pub pipeline: PipelineSpec,
    /// The run's name (none: `<pipeline>-<6 characters>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Values for its parameters (the rest take their defaults).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub values: BTreeMap<String, Value>,
}

/// The job of try `attempt` of `node` in `run`: `<run>-<node>`, with
/// `-r<attempt>` from the second try on.
pub fn node_job_name(run: &str, node: &str, attempt: u32) -> String {
    if attempt <= 1 {
        format!("{run}-{node}")
    } else {
        format!("{run}-{node}-r{attempt}")
    }
}

#[cfg(test)]
mod tests;
