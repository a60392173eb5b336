//! An experiment as the console keeps it: what the user asked for (the
//! template searched, its fixed values, the search settings and the
//! limits), its status, and its trials, each an ordinary job made from the
//! template. The rules that decide from the trials alone (the best trial,
//! when the experiment ends, a trial's job name) live here, so the
//! controller, the pages and the tests read them the same way.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Algorithm, Direction, EarlyStopping, Objective, SearchSpace, TrialValues};
use crate::error::AppError;
use crate::models::names::{validate_job_name, MAX_JOB_NAME_LEN};

/// The most trials one experiment may run in all.
pub const MAX_TRIALS: u32 = 1000;
/// The most trials one experiment may run at once.
pub const MAX_PARALLEL_TRIALS: u32 = 32;
/// `-t` and a trial number of up to four digits: what a trial's job name
/// adds to its experiment's.
const TRIAL_SUFFIX_LEN: usize = 6;

/// What a user writes to start an experiment (the form, the REST body,
/// `paddlecloud experiment create -f exp.yaml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ExperimentSpec {
    /// Unique in the account; its trials' jobs are named after it
    /// (`<name>-t<number>`), so it follows job names' rules, shorter.
    pub name: String,
    /// The template searched: `name` or `owner/name`.
    pub template: String,
    /// The template's version (its latest when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_version: Option<u32>,
    /// Values of the template's parameters that are not searched, the
    /// same for every trial.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub values: BTreeMap<String, Value>,
    /// The parameters searched and their ranges.
    #[serde(flatten)]
    pub space: SearchSpace,
    /// What the search optimises.
    pub objective: Objective,
    /// How the next values are chosen (TPE by default).
    #[serde(default)]
    pub algorithm: Algorithm,
    /// When a poor trial is stopped before its end (never by default).
    #[serde(default)]
    pub early_stopping: EarlyStopping,
    /// Trials in all (default 20).
    #[serde(default = "default_max_trials")]
    pub max_trials: u32,
    /// Trials at once (default 2); the account's quota and the member's
    /// caps may hold more of them waiting.
    #[serde(default = "default_parallel_trials")]
    pub parallel_trials: u32,
    /// Failed trials tolerated before the experiment fails (default 3). An
    /// experiment none of whose trials succeeded fails however many it
    /// tolerates.
    #[serde(default = "default_max_failed_trials")]
    pub max_failed_trials: u32,
    /// The search's seed: the same seed and results give the same values.
    /// Drawn when the experiment is created unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

fn default_max_trials() -> u32 {
    20
}
fn default_parallel_trials() -> u32 {
    2
}
fn default_max_failed_trials() -> u32 {
    3
}

impl ExperimentSpec {
    /// Checks every field but the template's own (the service checks the
    /// space against the template it reads); the error names the field.
    pub fn validate(&self) -> Result<(), AppError> {
        validate_job_name(&self.name)?;
        if self.name.len() + TRIAL_SUFFIX_LEN > MAX_JOB_NAME_LEN {
            return Err(AppError::invalid(
                "name",
                format!(
                    "An experiment's name has at most {} characters: its trials' jobs add \
                     “-t” and their number.",
                    MAX_JOB_NAME_LEN - TRIAL_SUFFIX_LEN
                ),
            ));
        }
        if self.template.trim().is_empty() {
            return Err(AppError::invalid(
                "template",
                "Name the template to search.",
            ));
        }
        self.space.validate()?;
        self.objective.validate()?;
        self.algorithm.validate()?;
        self.early_stopping.validate()?;
        if let Some(name) = self
            .space
            .parameters
            .iter()
            .find(|p| self.values.contains_key(&p.name))
        {
            return Err(AppError::invalid(
                format!("values.{}", name.name),
                format!(
                    "“{}” is searched: give it a range, not a fixed value.",
                    name.name
                ),
            ));
        }
        if !(1..=MAX_TRIALS).contains(&self.max_trials) {
            return Err(AppError::invalid(
                "max_trials",
                format!("Run 1 to {MAX_TRIALS} trials."),
            ));
        }
        if !(1..=MAX_PARALLEL_TRIALS).contains(&self.parallel_trials) {
            return Err(AppError::invalid(
                "parallel_trials",
                format!("Run 1 to {MAX_PARALLEL_TRIALS} trials at once."),
            ));
        }
        Ok(())
    }
}

/// Where an experiment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum ExperimentStatus {
    /// Its trials run and new ones start as room and limits allow.
    Running,
    /// No new trial starts; those running go on.
    Paused,
    /// It ended as asked: every trial ran, the goal was reached, or a grid
    /// was run through.
    Succeeded,
    /// More trials failed than it tolerates.
    Failed,
    /// Stopped by a user; its running trials were stopped.
    Stopped,
}

impl ExperimentStatus {
    /// Its name in the database and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }

    /// The status named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Running,
            Self::Paused,
            Self::Succeeded,
            Self::Failed,
            Self::Stopped,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }

    /// Whether it may still run trials (running or paused).
    pub fn is_active(self) -> bool {
        matches!(self, Self::Running | Self::Paused)
    }
}

/// Where one trial is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum TrialStatus {
    /// Its values are chosen and its job's name claimed; the job is being
    /// submitted, or waits for the quota (the message says).
    Waiting,
    /// Its job runs (or waits for room on the cluster, as any job).
    Running,
    /// Its job succeeded.
    Succeeded,
    /// Its job failed, or ended without a value of the objective.
    Failed,
    /// Stopped early: its points were poor.
    Pruned,
    /// Stopped with its experiment.
    Stopped,
}

impl TrialStatus {
    /// Its name in the database and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Waiting => "waiting",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Pruned => "pruned",
            Self::Stopped => "stopped",
        }
    }

    /// The status named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Waiting,
            Self::Running,
            Self::Succeeded,
            Self::Failed,
            Self::Pruned,
            Self::Stopped,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }

    /// Whether it has not ended yet.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Waiting | Self::Running)
    }
}

/// One trial: a job of the template with the values the search chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Trial {
    /// Its number in the experiment, from 1.
    pub number: u32,
    /// Its job's name.
    pub job: String,
    /// The searched parameters' values.
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub values: TrialValues,
    /// Where it is.
    pub status: TrialStatus,
    /// Its objective's value (last or best, as the objective says), once
    /// it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<f64>,
    /// The step of its newest objective point (where a pruned trial got
    /// to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
    /// Why it waits, failed or was stopped.
    #[serde(default)]
    pub message: String,
    /// When its values were chosen (Unix ms).
    pub created_at: i64,
    /// When it ended (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<i64>,
}

/// The name of trial `number`'s job in experiment `experiment`.
pub fn trial_job_name(experiment: &str, number: u32) -> String {
    format!("{experiment}-t{number}")
}

/// An experiment with its trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Experiment {
    /// Its name.
    pub name: String,
    /// Who created it (e-mail).
    pub owner: String,
    /// What was asked for, with its seed.
    pub spec: ExperimentSpec,
    /// Where it is.
    pub status: ExperimentStatus,
    /// Why it ended, or what it waits for.
    #[serde(default)]
    pub message: String,
    /// When it was created (Unix ms).
    pub created_at: i64,
    /// When it ended (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<i64>,
    /// Its trials, by number.
    pub trials: Vec<Trial>,
}

impl Experiment {
    /// The trial with the best objective so far (the earliest of equals).
    pub fn best(&self) -> Option<&Trial> {
        best_of(&self.spec.objective, &self.trials)
    }

    /// What the list of experiments shows of it.
    pub fn summary(&self) -> ExperimentSummary {
        let mut counts = TrialCounts::default();
        for t in &self.trials {
            *match t.status {
                TrialStatus::Waiting => &mut counts.waiting,
                TrialStatus::Running => &mut counts.running,
                TrialStatus::Succeeded => &mut counts.succeeded,
                TrialStatus::Failed => &mut counts.failed,
                TrialStatus::Pruned => &mut counts.pruned,
                TrialStatus::Stopped => &mut counts.stopped,
            } += 1;
        }
        ExperimentSummary {
            name: self.name.clone(),
            owner: self.owner.clone(),
            template: self.spec.template.clone(),
            objective: self.spec.objective.clone(),
            max_trials: self.spec.max_trials,
            status: self.status,
            message: self.message.clone(),
            created_at: self.created_at,
            ended_at: self.ended_at,
            trials: counts,
            best: self.best().cloned(),
        }
    }
}

/// How many of an experiment's trials are where.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TrialCounts {
    /// Claimed, its job not running yet (the quota may hold it).
    pub waiting: u32,
    /// Its job runs.
    pub running: u32,
    /// Ran to the end.
    pub succeeded: u32,
    /// Failed.
    pub failed: u32,
    /// Stopped early: its points were poor.
    pub pruned: u32,
    /// Stopped with the experiment, or by hand.
    pub stopped: u32,
}

/// An experiment as the list shows it: without its trials, with their
/// counts and the best one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ExperimentSummary {
    /// Its name.
    pub name: String,
    /// Who created it (e-mail).
    pub owner: String,
    /// The template searched.
    pub template: String,
    /// What it optimises.
    pub objective: Objective,
    /// Trials in all.
    pub max_trials: u32,
    /// Where it is.
    pub status: ExperimentStatus,
    /// Why it ended, or what it waits for.
    #[serde(default)]
    pub message: String,
    /// When it was created (Unix ms).
    pub created_at: i64,
    /// When it ended (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<i64>,
    /// Its trials, by where they are.
    pub trials: TrialCounts,
    /// The best trial so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<Trial>,
}

/// The trial of `trials` whose objective is best, the earliest of equals.
/// Only trials that ran to their end count: a stopped trial's value is of
/// an earlier step than the others'.
pub fn best_of<'a>(objective: &Objective, trials: &'a [Trial]) -> Option<&'a Trial> {
    let mut best: Option<&Trial> = None;
    for t in trials.iter().filter(|t| t.status == TrialStatus::Succeeded) {
        let Some(v) = t.objective.filter(|v| v.is_finite()) else {
            continue;
        };
        let better = match best.and_then(|b| b.objective) {
            None => true,
            Some(b) => objective.better(v, b),
        };
        if better {
            best = Some(t);
        }
    }
    best
}

/// Whether trial `i` failed and a later trial ran its values again ("run
/// the failed trials again"): it then neither counts as a failure nor
/// against the experiment's trials.
pub fn was_retried(trials: &[Trial], i: usize) -> bool {
    trials[i].status == TrialStatus::Failed
        && trials[i + 1..]
            .iter()
            .any(|later| later.values == trials[i].values)
}

/// The trials that count against `max_trials`: all but failed ones run
/// again.
pub fn counted(trials: &[Trial]) -> u32 {
    (0..trials.len())
        .filter(|&i| !was_retried(trials, i))
        .count() as u32
}

/// Whether `spec`'s experiment ends now, with `trials` as they are: its
/// status and why, or `None` while it goes on. `exhausted`: the search has
/// nothing new to try (a grid was run through).
pub fn ending(
    spec: &ExperimentSpec,
    trials: &[Trial],
    exhausted: bool,
) -> Option<(ExperimentStatus, String)> {
    let running = trials.iter().filter(|t| t.status.is_active()).count();
    let failed = (0..trials.len())
        .filter(|&i| trials[i].status == TrialStatus::Failed && !was_retried(trials, i))
        .count() as u32;
    if failed > spec.max_failed_trials {
        return Some((
            ExperimentStatus::Failed,
            format!(
                "{failed} trials failed, more than the {} it tolerates.",
                spec.max_failed_trials
            ),
        ));
    }
    if let (Some(goal), Some(best)) = (spec.objective.goal, best_of(&spec.objective, trials)) {
        let value = best.objective.unwrap_or(f64::NAN);
        if spec.objective.reached(value) {
            let word = match spec.objective.direction {
                Direction::Minimize => "at or below",
                Direction::Maximize => "at or above",
            };
            return Some((
                ExperimentStatus::Succeeded,
                format!(
                    "Trial {} reached the goal: {} = {value} ({word} {goal}).",
                    best.number, spec.objective.metric
                ),
            ));
        }
    }
    if running > 0 {
        return None;
    }
    let spent = counted(trials);
    let why = if spent >= spec.max_trials {
        format!("All {spent} trials ran.")
    } else if exhausted {
        format!(
            "Every combination of the grid was tried ({} trials).",
            trials.len()
        )
    } else {
        return None;
    };
    if trials.iter().any(|t| t.status == TrialStatus::Succeeded) {
        Some((ExperimentStatus::Succeeded, why))
    } else {
        Some((ExperimentStatus::Failed, format!("{why} None succeeded.")))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec() -> ExperimentSpec {
        serde_json::from_value(json!({
            "name": "lr-search",
            "template": "fit-a-line",
            "values": {"epochs": 2},
            "parameters": [
                {"name": "lr", "type": "float", "min": 0.001, "max": 0.1, "log": true},
                {"name": "batch_size", "type": "enum", "choices": ["16", "32"]},
            ],
            "objective": {"metric": "loss", "direction": "minimise", "goal": 0.05},
        }))
        .unwrap()
    }

    fn trial(number: u32, status: TrialStatus, objective: Option<f64>) -> Trial {
        Trial {
            number,
            job: trial_job_name("lr-search", number),
            values: TrialValues::new(),
            status,
            objective,
            step: None,
            message: String::new(),
            created_at: 0,
            ended_at: None,
        }
    }

    #[test]
    fn a_spec_takes_the_searchs_defaults_and_reads_back_as_written() {
        let s = spec();
        s.validate().unwrap();
        assert_eq!(
            (s.max_trials, s.parallel_trials, s.max_failed_trials),
            (20, 2, 3)
        );
        assert_eq!(s.algorithm, Algorithm::default());
        assert_eq!(s.early_stopping, EarlyStopping::None);
        let back: ExperimentSpec =
            serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn a_bad_spec_is_refused_naming_the_field() {
        let field = |s: ExperimentSpec| s.validate().unwrap_err().field().map(str::to_owned);
        let mut s = spec();
        s.name = "a-name-long-enough-that-its-trials-overflow-x".into();
        assert_eq!(field(s).as_deref(), Some("name"));
        let mut s = spec();
        s.values.insert("lr".into(), json!(0.1));
        assert_eq!(field(s).as_deref(), Some("values.lr"));
        let mut s = spec();
        s.parallel_trials = 0;
        assert_eq!(field(s).as_deref(), Some("parallel_trials"));
        let mut s = spec();
        s.max_trials = 0;
        assert_eq!(field(s).as_deref(), Some("max_trials"));
        let mut s = spec();
        s.template = " ".into();
        assert_eq!(field(s).as_deref(), Some("template"));
    }

    #[test]
    fn the_best_trial_is_the_lowest_or_highest_finished_objective_the_earliest_of_equals() {
        let mut s = spec();
        let trials = vec![
            trial(1, TrialStatus::Succeeded, Some(0.3)),
            trial(2, TrialStatus::Pruned, Some(0.1)),
            trial(3, TrialStatus::Succeeded, Some(0.2)),
            trial(4, TrialStatus::Succeeded, Some(0.2)),
            trial(5, TrialStatus::Failed, None),
            trial(6, TrialStatus::Succeeded, Some(f64::NAN)),
        ];
        assert_eq!(best_of(&s.objective, &trials).unwrap().number, 3);
        s.objective.direction = Direction::Maximize;
        assert_eq!(best_of(&s.objective, &trials).unwrap().number, 1);
    }

    #[test]
    fn an_experiment_ends_at_its_goal_its_budget_its_failures_or_an_exhausted_grid() {
        let s = spec();
        let mut trials = vec![
            trial(1, TrialStatus::Succeeded, Some(0.3)),
            trial(2, TrialStatus::Running, Some(0.2)),
        ];
        assert_eq!(ending(&s, &trials, false), None);
        assert_eq!(ending(&s, &trials, true), None, "a trial still runs");
        trials[1].status = TrialStatus::Succeeded;
        let (status, why) = ending(&s, &trials, true).unwrap();
        assert_eq!(status, ExperimentStatus::Succeeded);
        assert!(why.starts_with("Every combination"), "{why}");
        trials.push(trial(3, TrialStatus::Succeeded, Some(0.04)));
        let (status, why) = ending(&s, &trials, false).unwrap();
        assert_eq!(status, ExperimentStatus::Succeeded);
        assert!(why.starts_with("Trial 3 reached the goal"), "{why}");
        let failures: Vec<Trial> = (1..=4)
            .map(|n| {
                let mut t = trial(n, TrialStatus::Failed, None);
                t.values.insert("lr".into(), json!(n));
                t
            })
            .collect();
        assert_eq!(
            ending(&s, &failures, false).unwrap().0,
            ExperimentStatus::Failed
        );
        let mut budget = s.clone();
        budget.objective.goal = None;
        budget.max_trials = 3;
        assert!(ending(&budget, &trials, false)
            .unwrap()
            .1
            .starts_with("All 3 trials ran"));
        // However many failures it tolerates, one without a success fails.
        budget.max_failed_trials = 10;
        let (status, why) = ending(&budget, &failures, false).unwrap();
        assert_eq!(status, ExperimentStatus::Failed);
        assert_eq!(why, "All 4 trials ran. None succeeded.");
    }

    #[test]
    fn a_failed_trial_run_again_counts_neither_as_a_failure_nor_against_the_budget() {
        let mut s = spec();
        s.objective.goal = None;
        s.max_trials = 4;
        s.max_failed_trials = 1;
        let with_lr = |n, status, lr: f64| {
            let mut t = trial(n, status, Some(lr));
            t.values.insert("lr".into(), json!(lr));
            t
        };
        let mut trials = vec![
            with_lr(1, TrialStatus::Failed, 0.1),
            with_lr(2, TrialStatus::Failed, 0.2),
            with_lr(3, TrialStatus::Succeeded, 0.3),
        ];
        assert_eq!(
            ending(&s, &trials, false).unwrap().0,
            ExperimentStatus::Failed
        );
        trials.push(with_lr(4, TrialStatus::Succeeded, 0.1));
        trials.push(with_lr(5, TrialStatus::Succeeded, 0.2));
        assert!(was_retried(&trials, 0) && was_retried(&trials, 1));
        assert!(!was_retried(&trials, 3));
        assert_eq!(counted(&trials), 3);
        assert_eq!(ending(&s, &trials, false), None, "one trial is left to run");
    }

    #[test]
    fn statuses_read_back_from_their_names() {
        for s in ["running", "paused", "succeeded", "failed", "stopped"] {
            assert_eq!(ExperimentStatus::parse(s).unwrap().as_str(), s);
        }
        for s in [
            "waiting",
            "running",
            "succeeded",
            "failed",
            "pruned",
            "stopped",
        ] {
            assert_eq!(TrialStatus::parse(s).unwrap().as_str(), s);
        }
        assert_eq!(trial_job_name("lr-search", 12), "lr-search-t12");
    }
}
