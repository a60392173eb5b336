//! Local runs (the Atlas design): a program run on someone's machine,
//! outside the console, recorded as a job (`source: local`) with the same
//! table row, log console, PaddleBoard and parameters as a cluster job, and
//! the facts of where and how it ran. The SDK (`paddlecloud.run()`) and the
//! CLI (`paddlecloud run -- …`) report it: a start, log lines, metrics,
//! heartbeats and an end. Every report may arrive twice (a client replays
//! its spool after being offline), so each is idempotent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AppError;

/// Longest diff of uncommitted changes kept (bytes); longer ones are cut
/// and say so.
pub const MAX_DIFF: usize = 512 * 1024;
/// Most parameters a run records.
pub const MAX_RUN_PARAMS: usize = 500;
/// Longest log chunk one report carries (bytes).
pub const MAX_LOG_CHUNK: usize = 4 * 1024 * 1024;
/// Seconds between a client's heartbeats.
pub const HEARTBEAT_SECS: u64 = 10;

/// The repository a run's program came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct GitState {
    /// The commit checked out.
    pub commit: String,
    /// The branch, when not detached.
    #[serde(default)]
    pub branch: String,
    /// Whether there were uncommitted changes.
    #[serde(default)]
    pub dirty: bool,
    /// Those changes (`git diff HEAD`), cut at [`MAX_DIFF`].
    #[serde(default)]
    pub diff: String,
}

/// Where and how a local run ran, as its client saw it at the start.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RunFacts {
    /// The machine's host name.
    #[serde(default)]
    pub host: String,
    /// The user name on that machine.
    #[serde(default)]
    pub user: String,
    /// The command line.
    #[serde(default)]
    pub command: Vec<String>,
    /// The working directory.
    #[serde(default)]
    pub working_dir: String,
    /// The Python version, for Python programs.
    #[serde(default)]
    pub python: String,
    /// Versions of the packages that matter (paddlepaddle, numpy, …).
    #[serde(default)]
    pub packages: BTreeMap<String, String>,
    /// The repository state, when it ran from one.
    #[serde(default)]
    pub git: Option<GitState>,
    /// What reported it: `python` (the SDK) or `cli`.
    #[serde(default)]
    pub client: String,
}

/// `POST /api/v1/local-runs`: a run starts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct LocalRunStart {
    /// The client's id of the run (random, made before the first report):
    /// a start sent twice records one run.
    #[cfg_attr(feature = "ssr", schema(pattern = r"^[A-Za-z0-9-]{1,64}$"))]
    pub client_id: String,
    /// The job's name; made from the program's when absent (unique in the
    /// account).
    #[serde(default)]
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^[a-z]([a-z0-9-]{0,48}[a-z0-9])?$")
    )]
    pub name: Option<String>,
    /// The run's parameters.
    #[serde(default)]
    pub params: BTreeMap<String, Value>,
    /// Where and how it runs.
    #[serde(default)]
    pub facts: RunFacts,
    /// When it started (Unix ms, the client's clock; now when absent). A
    /// start replayed from a spool keeps its real time.
    #[serde(default)]
    pub started_at: Option<i64>,
}

/// How a local run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum RunOutcome {
    /// It ended normally (exit status 0).
    Succeeded,
    /// An exception, or a non-zero exit.
    Failed,
    /// Interrupted: Ctrl-C, SIGTERM.
    Stopped,
}

/// `POST /api/v1/local-runs/{name}/end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct LocalRunEnd {
    /// How it ended.
    pub outcome: RunOutcome,
    /// Its exit status, when it had one.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Why, in a line ("ValueError: …", "exited with code 3").
    #[serde(default)]
    pub message: String,
    /// When (Unix ms, the client's clock; now when absent).
    #[serde(default)]
    pub finished_at: Option<i64>,
}

/// `POST /api/v1/local-runs/{name}/log`: output from byte `offset` of the
/// run's output on (as the client counts it). A chunk that repeats what
/// arrived is taken once; one that leaves a gap is refused (409) with the
/// offset expected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct LogChunk {
    /// Where this chunk starts in the run's output.
    pub offset: u64,
    /// The output, whole lines.
    pub text: String,
    /// When it was printed (Unix ms; now when absent): its lines' stamps.
    #[serde(default)]
    pub at: Option<i64>,
}

/// What the console has of a run's output after a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct LogAck {
    /// Bytes of output recorded: the next chunk's offset.
    pub length: u64,
}

/// What a heartbeat answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Beat {
    /// `running`, or how it ended (a lost run comes back to `running`).
    pub status: crate::models::JobStatus,
    /// Someone pressed Stop: the client interrupts the program.
    pub stop: bool,
}

/// A local run as `GET /api/v1/local-runs/{name}` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct LocalRun {
    /// Its job's name.
    pub name: String,
    /// Its parameters.
    pub params: BTreeMap<String, Value>,
    /// Where and how it ran.
    pub facts: RunFacts,
    /// Its last heartbeat (Unix ms).
    pub heartbeat_at: i64,
    /// Bytes of output recorded.
    pub log_length: u64,
}

impl LocalRunStart {
    /// Checks sizes and shapes before anything is recorded.
    pub fn validate(&self) -> Result<(), AppError> {
        let id = self.client_id.trim();
        if id.is_empty()
            || id.len() > 64
            || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(AppError::invalid(
                "client_id",
                "A run's client id is 1 to 64 letters, digits or dashes.",
            ));
        }
        if self.params.len() > MAX_RUN_PARAMS {
            return Err(AppError::invalid(
                "params",
                format!("A run records at most {MAX_RUN_PARAMS} parameters."),
            ));
        }
        if let Some(long) = self.params.keys().find(|k| k.is_empty() || k.len() > 250) {
            return Err(AppError::invalid(
                "params",
                format!("“{long}”: a parameter's name has 1 to 250 characters."),
            ));
        }
        let f = &self.facts;
        let command = f.command.iter().map(String::len).sum::<usize>();
        if f.command.len() > 1000 || command > 64 * 1024 {
            return Err(AppError::invalid(
                "facts.command",
                "The command line is longer than 64 KiB.",
            ));
        }
        if f.git
            .as_ref()
            .is_some_and(|g| g.diff.len() > MAX_DIFF + 1024)
        {
            return Err(AppError::invalid(
                "facts.git.diff",
                format!("Send at most {} KiB of diff.", MAX_DIFF / 1024),
            ));
        }
        Ok(())
    }
}

/// A job name made from a program's command line: `train` for
/// `python train.py --lr 0.1`, `sh` for `sh -c …`; `local-run` when nothing
/// fits. Lower-case letters, digits and dashes, at most 40 characters.
pub fn name_from_command(command: &[String]) -> String {
    let program = command
        .iter()
        .find(|a| {
            let base = a.rsplit('/').next().unwrap_or(a);
            !a.starts_with('-') && !base.starts_with("python") && !base.is_empty()
        })
        .map(|a| a.rsplit('/').next().unwrap_or(a).to_owned())
        .unwrap_or_default();
    let stem = program
        .rsplit_once('.')
        .map(|(s, _)| s.to_owned())
        .unwrap_or(program);
    let mut name = String::new();
    for c in stem.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.ends_with('-') && !name.is_empty() {
            name.push('-');
        }
    }
    let name = name.trim_matches('-');
    let name = if name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.to_owned()
    } else {
        format!("run-{name}").trim_end_matches('-').to_owned()
    };
    let mut name: String = name.chars().take(40).collect();
    while name.ends_with('-') {
        name.pop();
    }
    if name.is_empty() || name == "run" {
        "local-run".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn a_runs_name_comes_from_its_program() {
        assert_eq!(
            name_from_command(&words("python train.py --lr 0.1")),
            "train"
        );
        assert_eq!(
            name_from_command(&words("/usr/bin/python3 -u src/Fit_Line.py")),
            "fit-line"
        );
        assert_eq!(name_from_command(&words("sh -c true")), "sh");
        assert_eq!(name_from_command(&words("./2stage")), "run-2stage");
        assert_eq!(name_from_command(&[]), "local-run");
        assert_eq!(name_from_command(&words("python")), "local-run");
    }

    #[test]
    fn a_start_with_a_bad_client_id_or_too_many_params_is_refused() {
        let mut start = LocalRunStart {
            client_id: "0f3a-9b".into(),
            ..Default::default()
        };
        assert!(start.validate().is_ok());
        start.client_id = "no spaces".into();
        assert!(start.validate().is_err());
        start.client_id = "ok".into();
        start.params = (0..=MAX_RUN_PARAMS)
            .map(|i| (format!("p{i}"), Value::from(i)))
            .collect();
        let err = start.validate().unwrap_err();
        assert!(err.to_string().contains("parameters"), "{err}");
    }
}
