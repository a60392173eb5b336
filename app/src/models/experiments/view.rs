//! What an experiment's page shows of its trials, all from its URL: the
//! table's order (`?sort=`, `&desc=1`), its status filter (`?status=`), its
//! page (`?page=`) and which parameter's scatter is drawn (`?scatter=`).
//! Pure, so the page, its tests and the benchmark read them alike.

use std::cmp::Ordering;

use serde_json::Value;

use super::{Objective, Trial, TrialStatus};
use crate::models::url::encode;

/// Rows the trials table shows on one page.
pub const TRIALS_PER_PAGE: usize = 100;

/// A column the trials table sorts by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrialColumn {
    /// The trial's number (the default).
    Number,
    /// Its status.
    Status,
    /// Its objective (trials without one last, either way).
    Objective,
    /// The step it got to.
    Step,
    /// A searched parameter's value.
    Param(String),
    /// Another tag's final value (trials without one last, either way).
    Tag(String),
}

impl TrialColumn {
    /// Its name in `?sort=`: `number`, `status`, `objective`, `step`,
    /// `p.<parameter>`, `t.<tag>`.
    pub fn key(&self) -> String {
        match self {
            Self::Number => "number".into(),
            Self::Status => "status".into(),
            Self::Objective => "objective".into(),
            Self::Step => "step".into(),
            Self::Param(p) => format!("p.{p}"),
            Self::Tag(t) => format!("t.{t}"),
        }
    }

    /// The column `?sort=` names (the number for anything else).
    pub fn parse(s: &str) -> Self {
        match s {
            "status" => Self::Status,
            "objective" => Self::Objective,
            "step" => Self::Step,
            _ => match (s.strip_prefix("p."), s.strip_prefix("t.")) {
                (Some(p), _) if !p.is_empty() => Self::Param(p.to_owned()),
                (_, Some(t)) if !t.is_empty() => Self::Tag(t.to_owned()),
                _ => Self::Number,
            },
        }
    }
}

/// The page's state, as its URL holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialQuery {
    /// The column sorted by.
    pub sort: TrialColumn,
    /// Descending.
    pub desc: bool,
    /// Only trials in this status.
    pub status: Option<TrialStatus>,
    /// The table's page, from 1.
    pub page: usize,
    /// The parameter whose scatter is drawn (the first one's by default).
    pub scatter: Option<String>,
}

impl Default for TrialQuery {
    fn default() -> Self {
        Self {
            sort: TrialColumn::Number,
            desc: false,
            status: None,
            page: 1,
            scatter: None,
        }
    }
}

impl TrialQuery {
    /// The state the query parameters `get` returns describe.
    pub fn from_query(get: impl Fn(&str) -> Option<String>) -> Self {
        Self {
            sort: get("sort").map_or(TrialColumn::Number, |s| TrialColumn::parse(&s)),
            desc: get("desc").is_some_and(|d| d == "1"),
            status: get("status").and_then(|s| TrialStatus::parse(&s)),
            page: get("page").and_then(|p| p.parse().ok()).unwrap_or(1).max(1),
            scatter: get("scatter").filter(|s| !s.is_empty()),
        }
    }

    /// The page's URL under `base` with this state (defaults left out).
    pub fn href(&self, base: &str) -> String {
        let mut pairs = Vec::new();
        if self.sort != TrialColumn::Number {
            pairs.push(format!("sort={}", encode(&self.sort.key())));
        }
        if self.desc {
            pairs.push("desc=1".to_owned());
        }
        if let Some(s) = self.status {
            pairs.push(format!("status={}", s.as_str()));
        }
        if self.page > 1 {
            pairs.push(format!("page={}", self.page));
        }
        if let Some(p) = &self.scatter {
            pairs.push(format!("scatter={}", encode(p)));
        }
        if pairs.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", pairs.join("&"))
        }
    }

    /// The link of a column's heading: sorted by it, ascending, or the
    /// other way when it is sorted by it already; back to the first page.
    pub fn sorted_by(&self, column: TrialColumn) -> Self {
        let desc = self.sort == column && !self.desc;
        Self {
            sort: column,
            desc,
            page: 1,
            ..self.clone()
        }
    }
}

/// Orders two JSON values of one parameter: numbers by value, then
/// booleans, then text; a missing value last.
fn compare_values(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x.total_cmp(&y)
        }
        (Some(Value::Bool(x)), Some(Value::Bool(y))) => x.cmp(y),
        (Some(Value::String(x)), Some(Value::String(y))) => x.cmp(y),
        (Some(x), Some(y)) => x.to_string().cmp(&y.to_string()),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// The trials' other tags (beside the objective) as the table shows them:
/// the tags, and each trial's final value of each (`None`: it has none).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrialTags {
    /// The tags shown, the ones most trials have first.
    pub tags: Vec<String>,
    /// By trial number: a value per tag, in `tags`' order.
    pub values: std::collections::BTreeMap<u32, Vec<Option<f64>>>,
}

/// How many other tags the trials table shows.
pub const TRIAL_TAGS_SHOWN: usize = 4;

impl TrialTags {
    /// The final values of every trial's tags (`finals[i]`: trial `i`'s
    /// tags and last values), keeping the [`TRIAL_TAGS_SHOWN`] tags most
    /// trials have other than `objective`, ties by name.
    pub fn pick(trials: &[Trial], finals: &[Vec<(String, Option<f64>)>], objective: &str) -> Self {
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for tags in finals {
            for (tag, _) in tags.iter().filter(|(t, _)| t != objective) {
                *counts.entry(tag).or_default() += 1;
            }
        }
        let mut ranked: Vec<(&str, usize)> = counts.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let tags: Vec<String> = ranked
            .into_iter()
            .take(TRIAL_TAGS_SHOWN)
            .map(|(t, _)| t.to_owned())
            .collect();
        let values = trials
            .iter()
            .zip(finals)
            .map(|(trial, have)| {
                let row = tags
                    .iter()
                    .map(|t| have.iter().find(|(h, _)| h == t).and_then(|(_, v)| *v))
                    .collect();
                (trial.number, row)
            })
            .collect();
        Self { tags, values }
    }

    /// Trial `number`'s final value of `tag`, if finite.
    pub fn value(&self, number: u32, tag: &str) -> Option<f64> {
        let i = self.tags.iter().position(|t| t == tag)?;
        self.values
            .get(&number)?
            .get(i)
            .copied()
            .flatten()
            .filter(|v| v.is_finite())
    }
}

/// The trials the table shows for `query`: filtered, sorted (the trial's
/// number breaking ties), the query's page of them; and how many matched.
/// Trials without an objective (or the tag sorted by) come last when sorted
/// by it, either way.
pub fn table_rows<'a>(
    trials: &'a [Trial],
    query: &TrialQuery,
    tags: &TrialTags,
) -> (Vec<&'a Trial>, usize) {
    let mut rows: Vec<&Trial> = trials
        .iter()
        .filter(|t| query.status.is_none_or(|s| t.status == s))
        .collect();
    let finite = |t: &Trial| t.objective.filter(|v| v.is_finite());
    rows.sort_by(|a, b| {
        let (x, y) = match &query.sort {
            TrialColumn::Objective => (finite(a), finite(b)),
            TrialColumn::Tag(tag) => (tags.value(a.number, tag), tags.value(b.number, tag)),
            _ => (None, None),
        };
        let by = match &query.sort {
            TrialColumn::Number => Ordering::Equal,
            TrialColumn::Status => a.status.as_str().cmp(b.status.as_str()),
            TrialColumn::Step => a.step.cmp(&b.step),
            TrialColumn::Objective | TrialColumn::Tag(_) => match (x, y) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                // Without a value: last whichever way (undone below).
                (Some(_), None) => return Ordering::Less,
                (None, Some(_)) => return Ordering::Greater,
                (None, None) => Ordering::Equal,
            },
            TrialColumn::Param(p) => compare_values(a.values.get(p), b.values.get(p)),
        };
        let by = by.then(a.number.cmp(&b.number));
        if query.desc {
            by.reverse()
        } else {
            by
        }
    });
    let total = rows.len();
    let start = (query.page - 1).saturating_mul(TRIALS_PER_PAGE).min(total);
    let end = (start + TRIALS_PER_PAGE).min(total);
    (rows[start..end].to_vec(), total)
}

/// The best objective so far after each trial that ran to its end with a
/// value, by trial number: (trial number, its value, the best up to it).
pub fn best_over_time(objective: &Objective, trials: &[Trial]) -> Vec<(u32, f64, f64)> {
    let mut sorted: Vec<&Trial> = trials
        .iter()
        .filter(|t| t.status == TrialStatus::Succeeded)
        .filter(|t| t.objective.is_some_and(f64::is_finite))
        .collect();
    sorted.sort_by_key(|t| t.number);
    let mut best: Option<f64> = None;
    sorted
        .into_iter()
        .map(|t| {
            let v = t.objective.unwrap_or(f64::NAN);
            let b = match best {
                Some(b) if !objective.better(v, b) => b,
                _ => v,
            };
            best = Some(b);
            (t.number, v, b)
        })
        .collect()
}

/// A value as the table and the charts' labels show it.
pub fn value_text(value: Option<&Value>) -> String {
    match value {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f != 0.0 && !(1e-3..1e6).contains(&f.abs()) {
                    format!("{f:.3e}")
                } else {
                    let s = format!("{f:.5}");
                    s.trim_end_matches('0').trim_end_matches('.').to_owned()
                }
            }
        },
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::models::{trial_job_name, TrialValues};

    fn trial(number: u32, status: TrialStatus, objective: Option<f64>, lr: f64) -> Trial {
        let mut values = TrialValues::new();
        values.insert("lr".into(), json!(lr));
        Trial {
            number,
            job: trial_job_name("e", number),
            values,
            status,
            objective,
            step: Some(i64::from(number)),
            message: String::new(),
            created_at: 0,
            ended_at: None,
        }
    }

    fn trials() -> Vec<Trial> {
        vec![
            trial(1, TrialStatus::Succeeded, Some(0.5), 0.01),
            trial(2, TrialStatus::Failed, None, 0.2),
            trial(3, TrialStatus::Succeeded, Some(0.2), 0.001),
            trial(4, TrialStatus::Succeeded, Some(0.7), 0.1),
            trial(5, TrialStatus::Running, Some(0.1), 0.05),
        ]
    }

    fn numbers(rows: &[&Trial]) -> Vec<u32> {
        rows.iter().map(|t| t.number).collect()
    }

    #[test]
    fn the_query_reads_back_from_the_url_it_writes() {
        let q = TrialQuery {
            sort: TrialColumn::Param("lr".into()),
            desc: true,
            status: Some(TrialStatus::Failed),
            page: 3,
            scatter: Some("batch_size".into()),
        };
        let href = q.href("/experiments/e");
        assert_eq!(
            href,
            "/experiments/e?sort=p.lr&desc=1&status=failed&page=3&scatter=batch_size"
        );
        let query: Vec<(String, String)> = href
            .split_once('?')
            .unwrap()
            .1
            .split('&')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_owned(), v.to_owned())
            })
            .collect();
        let back = TrialQuery::from_query(|k| {
            query
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        });
        assert_eq!(back, q);
        assert_eq!(TrialQuery::default().href("/x"), "/x");
        assert_eq!(TrialQuery::from_query(|_| Some("junk".into())).page, 1);
    }

    #[test]
    fn a_heading_sorts_by_its_column_then_the_other_way_from_the_first_page() {
        let q = TrialQuery {
            page: 4,
            ..Default::default()
        };
        let by = q.sorted_by(TrialColumn::Objective);
        assert_eq!(
            (by.sort.clone(), by.desc, by.page),
            (TrialColumn::Objective, false, 1)
        );
        assert!(by.sorted_by(TrialColumn::Objective).desc);
        assert!(!by.sorted_by(TrialColumn::Status).desc);
    }

    #[test]
    fn the_table_sorts_by_any_column_with_trials_without_a_value_last_and_filters_by_status() {
        let all = trials();
        let rows = |q: TrialQuery| numbers(&table_rows(&all, &q, &TrialTags::default()).0);
        assert_eq!(rows(TrialQuery::default()), [1, 2, 3, 4, 5]);
        let by_objective = TrialQuery::default().sorted_by(TrialColumn::Objective);
        assert_eq!(rows(by_objective.clone()), [5, 3, 1, 4, 2]);
        assert_eq!(
            rows(by_objective.sorted_by(TrialColumn::Objective)),
            [4, 1, 3, 5, 2]
        );
        let by_lr = TrialQuery::default().sorted_by(TrialColumn::Param("lr".into()));
        assert_eq!(rows(by_lr), [3, 1, 5, 4, 2]);
        let failed = TrialQuery {
            status: Some(TrialStatus::Failed),
            ..Default::default()
        };
        assert_eq!(
            table_rows(&all, &failed, &TrialTags::default()),
            (vec![&all[1]], 1)
        );
    }

    #[test]
    fn the_table_shows_the_tags_most_trials_have_and_sorts_by_them_without_values_last() {
        let all = trials();
        let finals: Vec<Vec<(String, Option<f64>)>> = all
            .iter()
            .map(|t| {
                let mut tags = vec![("loss".to_owned(), Some(1.0))];
                if t.number != 2 {
                    tags.push(("acc".to_owned(), Some(f64::from(10 - t.number))));
                }
                if t.number == 1 {
                    tags.push(("rare".to_owned(), Some(0.5)));
                }
                tags
            })
            .collect();
        let tags = TrialTags::pick(&all, &finals, "loss");
        assert_eq!(tags.tags, ["acc", "rare"]);
        assert_eq!(tags.value(3, "acc"), Some(7.0));
        assert_eq!(tags.value(2, "acc"), None);
        let by_acc = TrialQuery::default().sorted_by(TrialColumn::Tag("acc".into()));
        assert_eq!(by_acc.href("/e"), "/e?sort=t.acc");
        assert_eq!(TrialColumn::parse("t.acc"), TrialColumn::Tag("acc".into()));
        let rows = |q: TrialQuery| numbers(&table_rows(&all, &q, &tags).0);
        assert_eq!(rows(by_acc.clone()), [5, 4, 3, 1, 2]);
        assert_eq!(
            rows(by_acc.sorted_by(TrialColumn::Tag("acc".into()))),
            [1, 3, 4, 5, 2]
        );
    }

    #[test]
    fn the_table_shows_one_page_of_many_trials() {
        let many: Vec<Trial> = (1..=250)
            .map(|n| trial(n, TrialStatus::Succeeded, Some(f64::from(n)), 0.1))
            .collect();
        let page = |p: usize| {
            table_rows(
                &many,
                &TrialQuery {
                    page: p,
                    ..Default::default()
                },
                &TrialTags::default(),
            )
        };
        let (rows, total) = page(3);
        assert_eq!((rows.len(), total, rows[0].number), (50, 250, 201));
        assert!(page(9).0.is_empty());
    }

    #[test]
    fn the_best_so_far_only_ever_improves_and_counts_finished_trials_only() {
        let objective: Objective =
            serde_json::from_value(json!({"metric": "loss", "direction": "minimize"})).unwrap();
        assert_eq!(
            best_over_time(&objective, &trials()),
            [(1, 0.5, 0.5), (3, 0.2, 0.2), (4, 0.7, 0.2)]
        );
    }

    #[test]
    fn values_read_as_written_short() {
        assert_eq!(value_text(Some(&json!(0.0012345678))), "0.00123");
        assert_eq!(value_text(Some(&json!(1.0e-5))), "1.000e-5");
        assert_eq!(value_text(Some(&json!(64))), "64");
        assert_eq!(value_text(Some(&json!("adam"))), "adam");
        assert_eq!(value_text(Some(&json!(true))), "true");
        assert_eq!(value_text(None), "");
    }
}
