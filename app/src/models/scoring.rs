//! Batch scoring: a model version (or alias) over a saved dataset version,
//! as a job of N replicas that share the input files, writing its
//! predictions as a new version of an output dataset. The job runs the
//! SDK's scorer (`python3 -m paddlecloud.score`, see
//! `sdk/python/paddlecloud/score.py`): replica *i* of *N* takes input files
//! *i*, *i + N*, … (sorted by path), writes `F.predictions.jsonl` for each
//! input `F`, and skips the outputs already in the version, so that a retry
//! redoes only what a failed try left undone.

use serde::{Deserialize, Serialize};

use super::assets::validate_asset_name;
use super::job_origin::ScoringUse;
use super::jobs::{EnvVar, JobSpec, JobStatus, ReplicaResources, MAX_REPLICAS};
use crate::error::AppError;

/// The module of the SDK each replica starts.
pub const SCORER_MODULE: &str = "paddlecloud.score";
/// The environment a scoring job takes when nothing names one: PaddlePaddle
/// (the inference API) with the SDK.
pub const DEFAULT_SCORING_ENVIRONMENT: &str = "paddlecloud/paddle-cpu";
/// The suffix of an output next to its input's path.
pub const PREDICTIONS_SUFFIX: &str = ".predictions.jsonl";
/// The input files the scorer reads; others are listed as skipped.
pub const SCORED_SUFFIXES: [&str; 2] = [".jsonl", ".csv"];
/// The variables that tell each replica where to write.
pub const OUTPUT_VARIABLE: &str = "PADDLECLOUD_SCORE_OUTPUT";
/// See [`OUTPUT_VARIABLE`].
pub const VERSION_VARIABLE: &str = "PADDLECLOUD_SCORE_VERSION";
/// The variable that carries a form's hooks to each replica (the scorer
/// writes them to a file and loads them as serving does).
pub const SCRIPT_VARIABLE: &str = "PADDLECLOUD_SCORE_SCRIPT";
/// The longest hooks script, bytes: it travels as an environment variable,
/// and Linux takes at most 128 KiB in one (serving's file may be 256 KiB).
pub const MAX_SCORING_SCRIPT_BYTES: usize = 64 * 1024;

/// What a user asks for: `POST /api/v1/scorings`, the "Score a dataset"
/// page, `paddlecloud score`, the SDK's `score_dataset`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ScoringForm {
    /// The job's name; empty: `score-<model>` and a random suffix.
    #[serde(default)]
    pub name: String,
    /// The model: `name`, `owner/name`, with `:N` for a version or `@alias`
    /// (none: its newest ready version). The job records the version taken.
    pub model: String,
    /// The input: a dataset's saved version, `name:N` or `owner/name:N`
    /// (without `:N`: its newest saved version).
    pub dataset: String,
    /// The output dataset of this account (made if it does not exist); the
    /// predictions become its next version.
    pub output: String,
    /// Replicas sharing the files (default 1).
    #[serde(default)]
    pub replicas: Option<u32>,
    /// CPU per replica (default 1).
    #[serde(default)]
    pub cpu: String,
    /// Memory per replica (default 2Gi: the model and a batch of rows).
    #[serde(default)]
    pub memory: String,
    /// The environment it runs in; default `paddlecloud/paddle-cpu`.
    #[serde(default)]
    pub environment: String,
    /// Optional Python hooks, as a serving instance takes them:
    /// `load(model_dir)` returns the state (instead of loading a paddle
    /// model) and `predict(state, inputs)` answers one request. With them a
    /// model need not be a PaddlePaddle inference model (numpy is still
    /// needed, as for serving).
    #[serde(default)]
    pub script: String,
}

/// The memory a replica asks for when the form says none.
const DEFAULT_MEMORY: &str = "2Gi";

impl ScoringForm {
    /// Checks what can be checked without looking anything up; the error
    /// names the field at fault.
    pub fn validate(&self) -> Result<(), AppError> {
        if self.model.trim().is_empty() {
            return Err(AppError::invalid("model", "Name the model to score with."));
        }
        if self.dataset.trim().is_empty() {
            return Err(AppError::invalid(
                "dataset",
                "Name the dataset version to score, as in rows:1.",
            ));
        }
        validate_asset_name(&self.output).map_err(|err| match err {
            AppError::Invalid { message, .. } => AppError::invalid("output", message),
            other => other,
        })?;
        if self.script.len() > MAX_SCORING_SCRIPT_BYTES {
            return Err(AppError::invalid(
                "script",
                "The hooks script is at most 64 KiB (it travels in the job's environment).",
            ));
        }
        if self.script.contains('\0') {
            return Err(AppError::invalid(
                "script",
                "The hooks script is text: it has a NUL character.",
            ));
        }
        let replicas = self.replicas();
        if replicas == 0 || replicas > MAX_REPLICAS {
            return Err(AppError::invalid(
                "replicas",
                format!("Replicas are from 1 to {MAX_REPLICAS}."),
            ));
        }
        Ok(())
    }

    /// How many replicas share the files.
    pub fn replicas(&self) -> u32 {
        self.replicas.unwrap_or(1)
    }

    /// The job that scores `dataset` (pinned: `owner/name:N`) with `model`
    /// into version `version` of `output` (`owner/name`), named `name`.
    pub fn job(&self, name: &str, dataset: &str, output: &str, version: u32) -> JobSpec {
        let defaults = ReplicaResources::default();
        let given = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
        let mut spec = JobSpec::recorded(name, scorer_command(), String::new(), self.replicas());
        spec.trainer = ReplicaResources {
            cpu: given(&self.cpu).unwrap_or(defaults.cpu),
            memory: given(&self.memory).unwrap_or_else(|| DEFAULT_MEMORY.to_owned()),
            gpu: 0,
        };
        spec.datasets = vec![dataset.to_owned()];
        spec.models = vec![self.model.trim().to_owned()];
        spec.environment = Some(
            given(&self.environment).unwrap_or_else(|| DEFAULT_SCORING_ENVIRONMENT.to_owned()),
        );
        spec.scoring = Some(ScoringUse {
            dataset: dataset.to_owned(),
            output: output.to_owned(),
            version,
            first: name.to_owned(),
            attempt: 1,
        });
        spec.env = scoring_env(output, version);
        if !self.script.trim().is_empty() {
            spec.env.push(EnvVar {
                name: SCRIPT_VARIABLE.into(),
                value: self.script.clone(),
            });
        }
        spec
    }
}

/// The "Score a dataset" page's fields, as posted (text).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ScoringFields {
    /// See [`ScoringForm::name`].
    #[serde(default)]
    pub name: String,
    /// See [`ScoringForm::model`].
    #[serde(default)]
    pub model: String,
    /// See [`ScoringForm::dataset`].
    #[serde(default)]
    pub dataset: String,
    /// See [`ScoringForm::output`].
    #[serde(default)]
    pub output: String,
    /// Replicas, a whole number; empty: 1.
    #[serde(default)]
    pub replicas: String,
    /// See [`ScoringForm::cpu`].
    #[serde(default)]
    pub cpu: String,
    /// See [`ScoringForm::memory`].
    #[serde(default)]
    pub memory: String,
    /// See [`ScoringForm::environment`].
    #[serde(default)]
    pub environment: String,
    /// See [`ScoringForm::script`].
    #[serde(default)]
    pub script: String,
}

impl ScoringFields {
    /// The form they say, or which field is not a number.
    pub fn to_form(&self) -> Result<ScoringForm, AppError> {
        let replicas = match self.replicas.trim() {
            "" => None,
            n => Some(n.parse().map_err(|_| {
                AppError::invalid("replicas", "Replicas are a whole number, e.g. 2.")
            })?),
        };
        Ok(ScoringForm {
            name: self.name.clone(),
            model: self.model.clone(),
            dataset: self.dataset.clone(),
            output: self.output.clone(),
            replicas,
            cpu: self.cpu.clone(),
            memory: self.memory.clone(),
            environment: self.environment.clone(),
            script: self.script.clone(),
        })
    }
}

/// `python3 -m paddlecloud.score`.
pub fn scorer_command() -> Vec<String> {
    vec!["python3".into(), "-m".into(), SCORER_MODULE.into()]
}

/// The variables that name the output version to each replica.
pub fn scoring_env(output: &str, version: u32) -> Vec<EnvVar> {
    vec![
        EnvVar {
            name: OUTPUT_VARIABLE.into(),
            value: output.to_owned(),
        },
        EnvVar {
            name: VERSION_VARIABLE.into(),
            value: version.to_string(),
        },
    ]
}

impl ScoringUse {
    /// The spec of the next try of `spec` (a scoring job that ended without
    /// finishing its output), named `name`: the same model version, input
    /// and output version, so that its replicas skip what is done.
    pub fn retry(spec: &JobSpec, name: &str) -> Option<JobSpec> {
        let used = spec.scoring.as_ref()?;
        let mut next = spec.clone();
        next.name = name.to_owned();
        next.notebook = None;
        next.scoring = Some(ScoringUse {
            attempt: used.attempt + 1,
            ..used.clone()
        });
        Some(next)
    }

    /// The output version as a job names a dataset: `owner/name:N`.
    pub fn output_version(&self) -> String {
        format!("{}:{}", self.output, self.version)
    }
}

/// Where a scoring job is: how many of its input's files have their
/// predictions in the output version, and whether that version is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ScoringProgress {
    /// The job.
    pub job: String,
    /// Its status.
    pub status: JobStatus,
    /// The model version it scores with (`owner/name:N`).
    pub model: String,
    /// What it scores (`owner/name:N`) and where (`owner/name`, version).
    #[serde(flatten)]
    pub used: ScoringUse,
    /// The input files it scores (`.jsonl` and `.csv`).
    pub inputs: u32,
    /// Those whose predictions are in the output version.
    pub scored: u32,
    /// Input files it leaves alone (not `.jsonl` or `.csv`).
    pub skipped: u32,
    /// The output version's state: `uploading` until every input's
    /// predictions are in, then `ready`.
    pub output_state: String,
}

impl ScoringProgress {
    /// Counts `outputs` (the output version's paths) against `inputs` (the
    /// input version's paths), as the scorer pairs them.
    pub fn count(inputs: &[String], outputs: &[String]) -> (u32, u32, u32) {
        let done: std::collections::HashSet<&str> = outputs.iter().map(String::as_str).collect();
        let (scored, skipped): (Vec<&String>, Vec<&String>) =
            inputs.iter().partition(|p| is_scored(p));
        let finished = scored
            .iter()
            .filter(|p| done.contains(format!("{p}{PREDICTIONS_SUFFIX}").as_str()))
            .count();
        (scored.len() as u32, finished as u32, skipped.len() as u32)
    }

    /// Whether the output is complete.
    pub fn is_done(&self) -> bool {
        self.output_state == "ready"
    }

    /// Whether a new try makes sense: the job ended and the output is not
    /// complete.
    pub fn may_retry(&self) -> bool {
        !self.status.is_active() && !self.is_done()
    }

    /// `2 of 3 files scored`.
    pub fn headline(&self) -> String {
        let files = if self.inputs == 1 { "file" } else { "files" };
        format!("{} of {} {files} scored", self.scored, self.inputs)
    }
}

/// Whether the scorer reads `path` (a visible `.jsonl` or `.csv` file).
pub fn is_scored(path: &str) -> bool {
    let hidden = path.split('/').any(|part| part.starts_with('.'));
    !hidden && SCORED_SUFFIXES.iter().any(|s| path.ends_with(s))
}

/// The page that asks for a scoring job, its model (or dataset) filled in.
pub fn scoring_href(model: Option<&str>, dataset: Option<&str>) -> String {
    use crate::models::url::encode;
    let mut query = vec![];
    if let Some(m) = model {
        query.push(format!("model={}", encode(m)));
    }
    if let Some(d) = dataset {
        query.push(format!("dataset={}", encode(d)));
    }
    if query.is_empty() {
        "/scorings/new".into()
    } else {
        format!("/scorings/new?{}", query.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(all: &[&str]) -> Vec<String> {
        all.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn progress_counts_the_inputs_whose_predictions_are_in_the_output() {
        let inputs = paths(&["a.jsonl", "b/c.csv", "notes.txt", ".hidden.csv", "d.csv"]);
        let outputs = paths(&["a.jsonl.predictions.jsonl", "d.csv.predictions.jsonl", "x"]);
        assert_eq!(ScoringProgress::count(&inputs, &outputs), (3, 2, 2));
        assert_eq!(ScoringProgress::count(&inputs, &[]), (3, 0, 2));
    }

    #[test]
    fn a_form_names_its_fields_at_fault() {
        let ok = ScoringForm {
            model: "tiny@production".into(),
            dataset: "rows:1".into(),
            output: "scores".into(),
            ..ScoringForm::default()
        };
        assert!(ok.validate().is_ok());
        let field = |f: ScoringForm| f.validate().unwrap_err().field().map(str::to_owned);
        let bad = |change: fn(&mut ScoringForm)| {
            let mut f = ok.clone();
            change(&mut f);
            field(f)
        };
        assert_eq!(bad(|f| f.model = " ".into()).as_deref(), Some("model"));
        assert_eq!(
            bad(|f| f.dataset = String::new()).as_deref(),
            Some("dataset")
        );
        assert_eq!(bad(|f| f.output = "a b".into()).as_deref(), Some("output"));
        assert_eq!(bad(|f| f.replicas = Some(0)).as_deref(), Some("replicas"));
        assert_eq!(
            bad(|f| f.script = "#".repeat(MAX_SCORING_SCRIPT_BYTES + 1)).as_deref(),
            Some("script")
        );
        assert_eq!(
            bad(|f| f.replicas = Some(100_000)).as_deref(),
            Some("replicas")
        );
    }

    #[test]
    fn the_job_runs_the_scorer_on_n_replicas_and_a_retry_keeps_the_output_version() {
        let form = ScoringForm {
            model: "tiny@production".into(),
            dataset: "rows".into(),
            output: "scores".into(),
            replicas: Some(3),
            ..ScoringForm::default()
        };
        let spec = form.job("score-tiny", "ann/rows:2", "ann/scores", 4);
        spec.validate().unwrap();
        assert_eq!(spec.num_trainers, 3);
        assert_eq!(spec.command, ["python3", "-m", "paddlecloud.score"]);
        assert_eq!(spec.datasets, ["ann/rows:2"]);
        assert_eq!(spec.models, ["tiny@production"]);
        assert_eq!(spec.trainer.memory, "2Gi");
        assert_eq!(
            spec.environment.as_deref(),
            Some(DEFAULT_SCORING_ENVIRONMENT)
        );
        assert!(spec
            .env
            .iter()
            .any(|e| e.name == VERSION_VARIABLE && e.value == "4"));
        let again = ScoringUse::retry(&spec, "score-tiny-retry").unwrap();
        let used = again.scoring.as_ref().unwrap();
        assert_eq!((used.attempt, used.version), (2, 4));
        assert_eq!(used.first, "score-tiny");
        assert_eq!(again.name, "score-tiny-retry");
        assert_eq!(used.output_version(), "ann/scores:4");
    }

    #[test]
    fn hooks_reach_every_replica_in_one_variable_and_a_retry_keeps_them() {
        let hooks = "def load(d):\n    return 2\n\ndef predict(s, x):\n    return x\n";
        let form = ScoringForm {
            model: "echo".into(),
            dataset: "rows".into(),
            output: "scores".into(),
            script: hooks.into(),
            ..ScoringForm::default()
        };
        form.validate().unwrap();
        let spec = form.job("score-echo", "ann/rows:1", "ann/scores", 1);
        spec.validate().unwrap();
        let carried = |spec: &JobSpec| {
            spec.env
                .iter()
                .find(|e| e.name == SCRIPT_VARIABLE)
                .map(|e| e.value.clone())
        };
        assert_eq!(carried(&spec).as_deref(), Some(hooks));
        let again = ScoringUse::retry(&spec, "score-echo-try2").unwrap();
        assert_eq!(carried(&again).as_deref(), Some(hooks));
        let plain = ScoringForm {
            script: " \n".into(),
            ..form
        };
        assert_eq!(
            carried(&plain.job("s", "ann/rows:1", "ann/scores", 1)),
            None
        );
    }
}
