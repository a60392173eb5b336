//! Comparing runs: the page's state (all of it in the URL), what the server
//! gives it (each run's parameters and final metric values, the chosen
//! tags' curves of every run) and the comparison as CSV. A run is any job:
//! a template run (an experiment's trial is one), a local run, an MLflow
//! run, a job submitted by hand.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::board::{BoardChart, JsonF64};
use super::csv::{field, number};
use super::jobs::{JobSource, JobStatus};
use super::url::encode;
use crate::error::AppError;

/// Runs one comparison takes at most.
pub const MAX_COMPARED: usize = 100;
/// Tags whose curves are overlaid at once at most.
pub const MAX_OVERLAID: usize = 4;

/// Everything the page shows, as the URL says it:
/// `?jobs=a,b,c&diff=1&tag=loss&tag=acc` (`jobs` may also repeat, as the job
/// table's check boxes send it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompareView {
    /// The runs, in the order given, each once.
    pub jobs: Vec<String>,
    /// Show only the rows whose values are not all the same.
    pub only_differences: bool,
    /// The tags whose curves are overlaid (empty: the server picks one).
    pub tags: Vec<String>,
}

impl CompareView {
    /// Reads the URL's parameters (`all` gives every value of a repeated one).
    pub fn from_params(all: impl Fn(&str) -> Vec<String>) -> Self {
        let mut jobs: Vec<String> = Vec::new();
        for name in all("jobs").iter().flat_map(|v| v.split(',')) {
            let name = name.trim();
            if !name.is_empty() && !jobs.iter().any(|j| j == name) {
                jobs.push(name.to_owned());
            }
        }
        let mut tags: Vec<String> = Vec::new();
        for tag in all("tag") {
            if !tag.is_empty() && !tags.contains(&tag) && tags.len() < MAX_OVERLAID {
                tags.push(tag);
            }
        }
        Self {
            jobs,
            only_differences: all("diff")
                .last()
                .is_some_and(|v| v == "1" || v == "on" || v == "true"),
            tags,
        }
    }

    /// Refuses a view with no runs or too many, naming `jobs`.
    pub fn check(&self) -> Result<(), AppError> {
        check_jobs(&self.jobs)
    }

    /// The URL's query string for this view (defaults left out).
    pub fn to_query(&self) -> String {
        let mut q = format!("jobs={}", encode(&self.jobs.join(",")).replace("%2C", ","));
        if self.only_differences {
            q.push_str("&diff=1");
        }
        for tag in &self.tags {
            q.push_str("&tag=");
            q.push_str(&encode(tag));
        }
        q
    }

    /// `/jobs/compare?…`.
    pub fn href(&self) -> String {
        format!("/jobs/compare?{}", self.to_query())
    }

    /// The comparison as CSV: the REST route, with this view's runs and
    /// its "only differences".
    pub fn csv_href(&self) -> String {
        let mut href = format!(
            "/api/v1/jobs/compare.csv?jobs={}",
            encode(&self.jobs.join(",")).replace("%2C", ",")
        );
        if self.only_differences {
            href.push_str("&diff=1");
        }
        href
    }

    /// What the server needs to fetch.
    pub fn query(&self) -> CompareQuery {
        CompareQuery {
            jobs: self.jobs.clone(),
            tags: self.tags.clone(),
        }
    }
}

/// Refuses no runs or more than [`MAX_COMPARED`], naming `jobs`.
pub fn check_jobs(jobs: &[String]) -> Result<(), AppError> {
    if jobs.is_empty() {
        return Err(AppError::invalid(
            "jobs",
            "Say which runs to compare: ?jobs=a,b (job names, comma-separated).",
        ));
    }
    if jobs.len() > MAX_COMPARED {
        return Err(AppError::invalid(
            "jobs",
            format!(
                "A comparison takes at most {MAX_COMPARED} runs; {} were asked for.",
                jobs.len()
            ),
        ));
    }
    Ok(())
}

/// What the page asks the server for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompareQuery {
    /// The runs.
    #[serde(default)]
    pub jobs: Vec<String>,
    /// The tags to overlay (empty: the one most runs have).
    #[serde(default)]
    pub tags: Vec<String>,
}

/// One run's column head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComparedRun {
    /// The job's name.
    pub name: String,
    /// Its status.
    pub status: JobStatus,
    /// Who ran it.
    pub source: JobSource,
    /// What it was made from, in words (`template fit-a-line v2`,
    /// `local run on gpu-box`, `pipeline nightly · train`), or empty.
    pub origin: String,
    /// When it was submitted, Unix ms.
    pub created_at: i64,
}

/// A run's final value of a tag: the value at its last step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FinalValue {
    /// The last step.
    pub step: i64,
    /// The value there (NaN/±Infinity kept).
    pub value: JsonF64,
}

/// One row of the side-by-side table: a name and one cell per run (in the
/// runs' order), empty where a run has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow<T> {
    /// The parameter's name or the metric's tag.
    pub name: String,
    /// Per run.
    pub values: Vec<Option<T>>,
}

impl<T: PartialEq> CompareRow<T> {
    /// Whether the runs do not all have the same value (a run without one
    /// differs from a run with one).
    pub fn differs(&self) -> bool {
        self.values.windows(2).any(|w| w[0] != w[1])
    }
}

impl CompareRow<FinalValue> {
    /// As [`CompareRow::differs`], with NaN equal to NaN and steps ignored.
    pub fn values_differ(&self) -> bool {
        let bits = |v: &Option<FinalValue>| v.map(|f| f.value.0.to_bits());
        self.values.windows(2).any(|w| bits(&w[0]) != bits(&w[1]))
    }
}

/// The comparison the page draws.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The runs, in the order asked.
    pub runs: Vec<ComparedRun>,
    /// Parameters (template values, then what the program recorded), by name.
    pub params: Vec<CompareRow<String>>,
    /// Final metric values, by tag.
    pub metrics: Vec<CompareRow<FinalValue>>,
    /// The tags overlaid, each one chart with a series per run that has it.
    pub charts: Vec<BoardChart>,
}

impl Comparison {
    /// Every tag any run has (the chart picker's choices).
    pub fn tags(&self) -> impl Iterator<Item = &str> {
        self.metrics.iter().map(|m| m.name.as_str())
    }

    /// Parameter rows and metric rows as the table shows them: all, or only
    /// those that differ.
    pub fn shown(
        &self,
        only_differences: bool,
    ) -> (Vec<&CompareRow<String>>, Vec<&CompareRow<FinalValue>>) {
        (
            self.params
                .iter()
                .filter(|r| !only_differences || r.differs())
                .collect(),
            self.metrics
                .iter()
                .filter(|r| !only_differences || r.values_differ())
                .collect(),
        )
    }

    /// The comparison as CSV, a run a row as MLflow's runs export has it:
    /// `job,status,source,origin,created_at_ms,params.<name>…,metrics.<tag>…`
    /// (final values; empty where a run has none).
    pub fn to_csv(&self, only_differences: bool) -> String {
        let (params, metrics) = self.shown(only_differences);
        let mut head = vec![
            "job".to_owned(),
            "status".into(),
            "source".into(),
            "origin".into(),
            "created_at_ms".into(),
        ];
        head.extend(params.iter().map(|r| field(&format!("params.{}", r.name))));
        head.extend(
            metrics
                .iter()
                .map(|r| field(&format!("metrics.{}", r.name))),
        );
        let mut csv = head.join(",");
        csv.push('\n');
        for (i, run) in self.runs.iter().enumerate() {
            let mut row = vec![
                field(&run.name),
                run.status.as_str().to_owned(),
                run.source.as_str().to_owned(),
                field(&run.origin),
                run.created_at.to_string(),
            ];
            row.extend(
                params
                    .iter()
                    .map(|r| r.values[i].as_deref().map(field).unwrap_or_default()),
            );
            row.extend(
                metrics
                    .iter()
                    .map(|r| r.values[i].map(|v| number(v.value.0)).unwrap_or_default()),
            );
            csv.push_str(&row.join(","));
            csv.push('\n');
        }
        csv
    }
}

/// Rows from per-run maps: one row per name any run has, by name.
pub fn rows<T: Clone>(per_run: &[BTreeMap<String, T>]) -> Vec<CompareRow<T>> {
    let names: BTreeSet<&String> = per_run.iter().flat_map(|m| m.keys()).collect();
    names
        .into_iter()
        .map(|name| CompareRow {
            name: name.clone(),
            values: per_run.iter().map(|m| m.get(name).cloned()).collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(q: &str) -> CompareView {
        let pairs: Vec<(String, String)> = q
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.replace("%2C", ",")))
            .collect();
        CompareView::from_params(|k| {
            pairs
                .iter()
                .filter(|(a, _)| a == k)
                .map(|(_, v)| v.clone())
                .collect()
        })
    }

    fn final_value(v: f64) -> Option<FinalValue> {
        Some(FinalValue {
            step: 9,
            value: JsonF64(v),
        })
    }

    #[test]
    fn the_url_holds_the_runs_the_toggle_and_the_tags_and_round_trips() {
        let v = view("jobs=a,b&jobs=c&jobs=a&diff=1&tag=loss&tag=acc");
        assert_eq!(v.jobs, ["a", "b", "c"]);
        assert!(v.only_differences);
        assert_eq!(v.tags, ["loss", "acc"]);
        assert_eq!(v.to_query(), "jobs=a,b,c&diff=1&tag=loss&tag=acc");
        assert_eq!(view(&v.to_query()), v);
        assert_eq!(v.csv_href(), "/api/v1/jobs/compare.csv?jobs=a,b,c&diff=1");
        assert!(!view("jobs=a&diff=0").only_differences);
    }

    #[test]
    fn no_runs_or_too_many_are_refused_naming_the_field() {
        let err = view("diff=1").check().unwrap_err();
        assert!(matches!(&err, AppError::Invalid { field: Some(f), .. } if f == "jobs"));
        assert!(err.to_string().contains("?jobs=a,b"), "{err}");
        let many: Vec<String> = (0..=MAX_COMPARED).map(|i| format!("j{i}")).collect();
        let err = view(&format!("jobs={}", many.join(",")))
            .check()
            .unwrap_err();
        assert!(err.to_string().contains("at most 100 runs"), "{err}");
        assert!(view("jobs=a").check().is_ok());
    }

    #[test]
    fn a_row_differs_when_a_value_or_its_presence_differs() {
        let same = CompareRow {
            name: "lr".into(),
            values: vec![Some("0.1".to_owned()), Some("0.1".to_owned())],
        };
        assert!(!same.differs());
        let missing = CompareRow {
            name: "lr".into(),
            values: vec![Some("0.1".to_owned()), None],
        };
        assert!(missing.differs());
        let nans = CompareRow {
            name: "loss".into(),
            values: vec![final_value(f64::NAN), final_value(f64::NAN)],
        };
        assert!(
            !nans.values_differ(),
            "NaN and NaN are the same final value"
        );
    }

    #[test]
    fn the_csv_has_a_row_per_run_and_leaves_out_equal_columns_when_asked() {
        let run = |name: &str| ComparedRun {
            name: name.into(),
            status: JobStatus::Succeeded,
            source: JobSource::Local,
            origin: "local run on a, b".into(),
            created_at: 5,
        };
        let per_run = vec![
            BTreeMap::from([
                ("lr".to_owned(), "0.1".to_owned()),
                ("opt".to_owned(), "adam".to_owned()),
            ]),
            BTreeMap::from([
                ("lr".to_owned(), "0.2".to_owned()),
                ("opt".to_owned(), "adam".to_owned()),
            ]),
        ];
        let c = Comparison {
            runs: vec![run("a"), run("b")],
            params: rows(&per_run),
            metrics: vec![CompareRow {
                name: "loss".into(),
                values: vec![final_value(0.5), final_value(f64::INFINITY)],
            }],
            charts: vec![],
        };
        assert_eq!(
            c.to_csv(false),
            "job,status,source,origin,created_at_ms,params.lr,params.opt,metrics.loss\n\
             a,succeeded,local,\"local run on a, b\",5,0.1,adam,0.5\n\
             b,succeeded,local,\"local run on a, b\",5,0.2,adam,Infinity\n"
        );
        let diff = c.to_csv(true);
        assert!(diff.starts_with("job,status,source,origin,created_at_ms,params.lr,metrics.loss\n"));
        assert!(!diff.contains("adam"), "{diff}");
    }
}
