//! Schedules: a template, a pipeline or a notebook file run on a cron
//! schedule, in a timezone, with what to do when the previous run is still
//! going and which missed ticks to catch up after the console was down.
//! The console's schedule controller starts each run as the schedule's
//! creator; each tick is claimed in the database once, so a run starts once
//! across replicas and restarts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AppError;
use crate::models::names::validate_job_name;
use crate::models::{NotebookRunSpec, PipelineSpec};

/// The longest schedule name: a run's job is `<schedule>-<yyyymmddhhmmss>`
/// (15 characters more) within a job name's 50; a pipeline's run is named
/// after the pipeline, not the schedule.
pub const MAX_SCHEDULE_NAME: usize = 35;
/// The most missed ticks `catch_up: all` starts at once.
pub const MAX_CATCH_UP: usize = 10;
/// How many runs a schedule's page lists (the newest).
pub const RUNS_SHOWN: usize = 50;

/// What a schedule runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum ScheduleTarget {
    /// A template (the account's own, or `owner`'s published one), with
    /// values; its newest version at each tick unless `version`.
    Template {
        /// Whose template (default: the schedule's account).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
        /// The template.
        name: String,
        /// A version to keep to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u32>,
        /// Values for its parameters.
        #[serde(default)]
        #[cfg_attr(feature = "ssr", schema(value_type = Object))]
        values: BTreeMap<String, Value>,
    },
    /// A pipeline, with values for its parameters.
    Pipeline {
        /// The pipeline.
        pipeline: PipelineSpec,
        /// Values for its parameters.
        #[serde(default)]
        #[cfg_attr(feature = "ssr", schema(value_type = Object))]
        values: BTreeMap<String, Value>,
    },
    /// A file of one of the creator's notebooks, run with papermill: its
    /// newest version at each tick unless `run.version`.
    Notebook {
        /// The notebook.
        notebook: String,
        /// The run (its `name` is ignored: each run is named by its tick).
        run: NotebookRunSpec,
    },
}

impl ScheduleTarget {
    /// "template fit-a-line", "pipeline nightly", "notebook lab · train.ipynb".
    pub fn label(&self) -> String {
        match self {
            Self::Template { owner, name, .. } => match owner {
                Some(o) if !o.is_empty() => format!("template {o}/{name}"),
                _ => format!("template {name}"),
            },
            Self::Pipeline { pipeline, .. } => format!("pipeline {}", pipeline.name),
            Self::Notebook { notebook, run } => format!("notebook {notebook} · {}", run.path),
        }
    }
}

/// When the previous run is still going at a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum Overlap {
    /// Skip this tick (the run records why).
    #[default]
    Forbid,
    /// Start it anyway, beside the previous.
    Allow,
    /// Stop the previous run, then start this one.
    Replace,
}

impl Overlap {
    /// Its name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forbid => "forbid",
            Self::Allow => "allow",
            Self::Replace => "replace",
        }
    }

    /// From its name.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Forbid, Self::Allow, Self::Replace]
            .into_iter()
            .find(|o| o.as_str() == text)
    }
}

/// Which ticks missed while the console was down (or the schedule paused
/// and resumed) run when it is back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum CatchUp {
    /// The latest missed tick runs; older ones are recorded as missed.
    #[default]
    Latest,
    /// Every missed tick runs, oldest first (at most [`MAX_CATCH_UP`]; the
    /// older are recorded as missed).
    All,
    /// None runs: missed ticks are recorded as missed.
    None,
}

impl CatchUp {
    /// Its name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Latest => "latest",
            Self::All => "all",
            Self::None => "none",
        }
    }

    /// From its name.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Latest, Self::All, Self::None]
            .into_iter()
            .find(|c| c.as_str() == text)
    }
}

/// What a user saves: `POST /api/v1/schedules`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ScheduleSpec {
    /// Lower-case letters, digits and '-', at most 35 characters; unique in
    /// the account.
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^[a-z]([a-z0-9-]{0,33}[a-z0-9])?$")
    )]
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// Five fields (minute hour day-of-month month day-of-week), or six with
    /// seconds first, e.g. `0 3 * * 1-5` (03:00 on weekdays); `@daily` and
    /// the like too.
    #[cfg_attr(feature = "ssr", schema(max_length = 200))]
    pub cron: String,
    /// The IANA timezone the cron is read in (default `UTC`), e.g.
    /// `Europe/Berlin`: 03:00 stays 03:00 across daylight saving.
    #[serde(default = "utc")]
    #[cfg_attr(feature = "ssr", schema(max_length = 64))]
    pub timezone: String,
    /// When the previous run is still going.
    #[serde(default)]
    pub overlap: Overlap,
    /// Which missed ticks run.
    #[serde(default)]
    pub catch_up: CatchUp,
    /// What it runs.
    pub target: ScheduleTarget,
}

fn utc() -> String {
    "UTC".to_owned()
}

impl ScheduleSpec {
    /// Checks what can be checked without the clock's rules (the cron and
    /// the timezone are the server's: see `schedule_clock`): the name, the
    /// target's own fields.
    pub fn validate(&self) -> Result<(), AppError> {
        validate_job_name(&self.name)?;
        if self.name.len() > MAX_SCHEDULE_NAME {
            return Err(AppError::invalid(
                "name",
                format!("A schedule name has at most {MAX_SCHEDULE_NAME} characters."),
            ));
        }
        if self.cron.trim().is_empty() {
            return Err(AppError::invalid(
                "cron",
                "Give the schedule as cron: minute hour day month weekday, e.g. 0 3 * * *.",
            ));
        }
        if self.description.len() > 2000 {
            return Err(AppError::invalid(
                "description",
                "At most 2,000 characters.",
            ));
        }
        match &self.target {
            ScheduleTarget::Template { name, .. } if name.trim().is_empty() => {
                Err(AppError::invalid("target.name", "Name the template."))
            }
            ScheduleTarget::Pipeline { pipeline, .. } => pipeline
                .validate()
                .map_err(|e| prefixed("target.pipeline", e)),
            ScheduleTarget::Notebook { notebook, run } => {
                if notebook.trim().is_empty() {
                    return Err(AppError::invalid("target.notebook", "Name the notebook."));
                }
                crate::models::check_versioned_path(&run.path)
                    .map_err(|e| prefixed("target.run", e))
            }
            _ => Ok(()),
        }
    }
}

/// The "New schedule" form, as posted (text): a template or a notebook
/// file (pipelines come through the API, the CLI and the SDK).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ScheduleForm {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// The cron pattern.
    #[serde(default)]
    pub cron: String,
    /// The timezone (empty: UTC).
    #[serde(default)]
    pub timezone: String,
    /// `forbid`, `allow` or `replace`.
    #[serde(default)]
    pub overlap: String,
    /// `latest`, `all` or `none`.
    #[serde(default)]
    pub catch_up: String,
    /// `template` or `notebook`.
    #[serde(default)]
    pub kind: String,
    /// For a template: `name` or `owner/name`.
    #[serde(default)]
    pub template: String,
    /// For a notebook file: the notebook.
    #[serde(default)]
    pub notebook: String,
    /// And the file.
    #[serde(default)]
    pub path: String,
    /// Values, one `name=value` a line.
    #[serde(default)]
    pub values: String,
}

impl ScheduleForm {
    /// The spec, or which field is wrong.
    pub fn to_spec(&self) -> Result<ScheduleSpec, AppError> {
        let mut values = BTreeMap::new();
        for line in self.values.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let Some((name, value)) = line.split_once('=') else {
                return Err(AppError::invalid(
                    "values",
                    format!("“{line}” is not name=value."),
                ));
            };
            values.insert(
                name.trim().to_owned(),
                Value::String(value.trim().to_owned()),
            );
        }
        let overlap = match self.overlap.trim() {
            "" => Overlap::default(),
            text => Overlap::parse(text)
                .ok_or_else(|| AppError::invalid("overlap", "forbid, allow or replace."))?,
        };
        let catch_up = match self.catch_up.trim() {
            "" => CatchUp::default(),
            text => CatchUp::parse(text)
                .ok_or_else(|| AppError::invalid("catch_up", "latest, all or none."))?,
        };
        let target = match self.kind.trim() {
            "notebook" => ScheduleTarget::Notebook {
                notebook: self.notebook.trim().to_owned(),
                run: NotebookRunSpec {
                    path: self.path.trim().to_owned(),
                    values,
                    ..Default::default()
                },
            },
            _ => {
                let (owner, name) = match self.template.trim().split_once('/') {
                    Some((owner, name)) => (Some(owner.to_owned()), name.to_owned()),
                    None => (None, self.template.trim().to_owned()),
                };
                ScheduleTarget::Template {
                    owner,
                    name,
                    version: None,
                    values,
                }
            }
        };
        Ok(ScheduleSpec {
            name: self.name.trim().to_owned(),
            description: String::new(),
            cron: self.cron.trim().to_owned(),
            timezone: match self.timezone.trim() {
                "" => utc(),
                tz => tz.to_owned(),
            },
            overlap,
            catch_up,
            target,
        })
    }
}

/// A schedule's page.
pub fn schedule_href(name: &str) -> String {
    format!("/schedules/{}", crate::models::url::encode(name))
}

/// `err` with its field under `prefix` (`values.lr` → `target.values.lr`).
pub fn prefixed(prefix: &str, err: AppError) -> AppError {
    match err {
        AppError::Invalid { field, message } => AppError::Invalid {
            field: Some(match field {
                Some(f) => format!("{prefix}.{f}"),
                None => prefix.to_owned(),
            }),
            message,
        },
        other => other,
    }
}

/// A saved schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Schedule {
    /// What was saved.
    #[serde(flatten)]
    pub spec: ScheduleSpec,
    /// Its account.
    pub owner: String,
    /// Who made it (its runs start as them).
    pub created_by: String,
    /// When, Unix ms.
    pub created_at: i64,
    /// Paused: no tick runs until it is resumed (missed ones then follow
    /// `catch_up`).
    pub paused: bool,
    /// The next tick, Unix ms (`None` while paused).
    pub next_at: Option<i64>,
    /// The last tick the console dealt with, Unix ms.
    pub last_tick: Option<i64>,
    /// Its newest runs, newest first (at most [`RUNS_SHOWN`]; empty in
    /// lists).
    #[serde(default)]
    pub runs: Vec<ScheduleRun>,
}

/// What became of one tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum TickOutcome {
    /// Its job (or pipeline run) was submitted.
    Started,
    /// Not run: the previous run was still going (`overlap: forbid`).
    Skipped,
    /// Not run: missed while the console was down, and not caught up.
    Missed,
    /// Submitting it failed (the message says why: a quota, a template
    /// gone).
    Failed,
}

impl TickOutcome {
    /// Its name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Skipped => "skipped",
            Self::Missed => "missed",
            Self::Failed => "failed",
        }
    }

    /// From its name.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Started, Self::Skipped, Self::Missed, Self::Failed]
            .into_iter()
            .find(|o| o.as_str() == text)
    }
}

/// One tick of a schedule and what it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ScheduleRun {
    /// The tick, Unix ms.
    pub tick: i64,
    /// When the console dealt with it, Unix ms.
    pub at: i64,
    /// What became of it.
    pub outcome: TickOutcome,
    /// The job (or pipeline run) it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// `job` or `pipeline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_kind: Option<String>,
    /// Why (for skipped, missed and failed ticks), or a note.
    #[serde(default)]
    pub message: String,
    /// The started job's or run's status now (`running`, `succeeded`…),
    /// when it is still known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl ScheduleRun {
    /// Where what it started is shown.
    pub fn href(&self) -> Option<String> {
        let name = crate::models::url::encode(self.started.as_deref()?);
        match self.started_kind.as_deref() {
            Some("pipeline") => Some(format!("/pipelines/{name}")),
            _ => Some(format!("/jobs/{name}")),
        }
    }
}

/// `<schedule>-<yyyymmddhhmmss>` of a tick (UTC): the name of the job it
/// starts, the same whichever replica starts it, so a second start of one
/// tick is refused as a taken name.
pub fn tick_name(schedule: &str, tick_ms: i64) -> String {
    let stamp = crate::models::time::format_utc_seconds(tick_ms)
        .chars()
        .filter(char::is_ascii_digit)
        .take(14)
        .collect::<String>();
    format!("{schedule}-{stamp}")
}

/// The ticks due at `now` of a schedule whose last dealt-with tick was
/// `last`, given the ticks after `last` up to `now` (oldest first): which
/// to run and which to record as missed, by `catch_up`. A tick less than
/// `grace_ms` old is never "missed": it is the one due now.
pub fn due_ticks(
    ticks: &[i64],
    now: i64,
    grace_ms: i64,
    catch_up: CatchUp,
) -> (Vec<i64>, Vec<i64>) {
    let (mut run, mut missed) = (vec![], vec![]);
    let Some((&newest, older)) = ticks.split_last() else {
        return (run, missed);
    };
    match catch_up {
        CatchUp::Latest => {
            missed.extend_from_slice(older);
            run.push(newest);
        }
        CatchUp::All => {
            let keep = ticks.len().min(MAX_CATCH_UP);
            missed.extend_from_slice(&ticks[..ticks.len() - keep]);
            run.extend_from_slice(&ticks[ticks.len() - keep..]);
        }
        CatchUp::None => {
            missed.extend_from_slice(older);
            if now - newest <= grace_ms {
                run.push(newest);
            } else {
                missed.push(newest);
            }
        }
    }
    (run, missed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missed_ticks_run_as_catch_up_says() {
        let ticks = [60_000, 120_000, 180_000];
        assert_eq!(
            due_ticks(&ticks, 180_500, 30_000, CatchUp::Latest),
            (vec![180_000], vec![60_000, 120_000])
        );
        assert_eq!(
            due_ticks(&ticks, 180_500, 30_000, CatchUp::All),
            (vec![60_000, 120_000, 180_000], vec![])
        );
        // The one due now runs whatever the policy; one missed long ago not.
        assert_eq!(
            due_ticks(&ticks, 180_500, 30_000, CatchUp::None),
            (vec![180_000], vec![60_000, 120_000])
        );
        assert_eq!(
            due_ticks(&ticks, 500_000, 30_000, CatchUp::None),
            (vec![], vec![60_000, 120_000, 180_000])
        );
        let many: Vec<i64> = (1..=25).map(|i| i * 60_000).collect();
        let (run, missed) = due_ticks(&many, 25 * 60_000, 30_000, CatchUp::All);
        assert_eq!((run.len(), missed.len()), (MAX_CATCH_UP, 15));
        assert_eq!(run[0], 16 * 60_000);
        assert_eq!(due_ticks(&[], 0, 0, CatchUp::All), (vec![], vec![]));
    }

    #[test]
    fn a_ticks_job_is_named_by_its_second_in_utc() {
        // 2026-11-30 03:00:05 UTC.
        assert_eq!(
            tick_name("nightly", 1_796_007_605_000),
            "nightly-20261130030005"
        );
        assert!(validate_job_name(&tick_name(&"a".repeat(MAX_SCHEDULE_NAME), 0)).is_ok());
    }

    #[test]
    fn a_schedules_fields_are_checked_naming_the_one_at_fault() {
        let spec = |target: ScheduleTarget| ScheduleSpec {
            name: "nightly".into(),
            description: String::new(),
            cron: "0 3 * * *".into(),
            timezone: "UTC".into(),
            overlap: Overlap::Forbid,
            catch_up: CatchUp::Latest,
            target,
        };
        let template = ScheduleTarget::Template {
            owner: None,
            name: "fit".into(),
            version: None,
            values: BTreeMap::new(),
        };
        assert!(spec(template.clone()).validate().is_ok());
        let long = ScheduleSpec {
            name: "a".repeat(MAX_SCHEDULE_NAME + 1),
            ..spec(template.clone())
        };
        assert!(
            matches!(long.validate(), Err(AppError::Invalid { field: Some(f), .. }) if f == "name")
        );
        let notebook = ScheduleTarget::Notebook {
            notebook: "lab".into(),
            run: NotebookRunSpec {
                path: "../x.ipynb".into(),
                ..Default::default()
            },
        };
        let err = spec(notebook).validate().unwrap_err();
        assert!(
            matches!(&err, AppError::Invalid { field: Some(f), .. } if f.starts_with("target.run")),
            "{err:?}"
        );
        let json: ScheduleSpec = serde_json::from_value(serde_json::json!({
            "name": "n", "cron": "@daily",
            "target": {"kind": "template", "name": "fit", "values": {"lr": 0.1}},
        }))
        .unwrap();
        assert_eq!(
            (json.timezone.as_str(), json.overlap, json.catch_up),
            ("UTC", Overlap::Forbid, CatchUp::Latest)
        );
        assert_eq!(json.target.label(), "template fit");
    }
}
