//! "New pipeline" from templates: a form of node rows (a name, a template,
//! its values as `NAME=VALUE` lines, what it waits for, retries) that posts
//! with or without JavaScript, and its conversion into a pipeline.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::pipelines::{NodeTemplate, PipelineNode, PipelineSpec, PipelineSubmit};
use crate::error::AppError;

/// Node rows the form shows unless asked for more.
pub const FORM_ROWS: usize = 4;
/// The most rows the form shows.
pub const MAX_FORM_ROWS: usize = 20;

/// One node row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRow {
    /// The node's name; a row without one is left out.
    #[serde(default)]
    pub name: String,
    /// The template, `owner/name`.
    #[serde(default)]
    pub template: String,
    /// Its values, `NAME=VALUE` per line.
    #[serde(default)]
    pub values: String,
    /// What it waits for, separated by commas or spaces (`train`,
    /// `train.failed`).
    #[serde(default)]
    pub after: String,
    /// Times it is tried again after it fails.
    #[serde(default)]
    pub retries: String,
}

/// What the "New pipeline" dialog posts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineForm {
    /// The pipeline's name.
    pub name: String,
    /// The run's name (empty: the pipeline's and a suffix).
    #[serde(default)]
    pub run: String,
    /// `on` to stop starting nodes after one fails.
    #[serde(default)]
    pub fail_fast: String,
    /// The node rows.
    #[serde(default)]
    pub nodes: Vec<NodeRow>,
}

/// A value as typed text: a number or `true`/`false` stays one, anything
/// else is text (as `--set` on the command line reads it).
pub fn typed_value(text: &str) -> Value {
    serde_json::from_str::<Value>(text.trim())
        .ok()
        .filter(|v| v.is_number() || v.is_boolean())
        .unwrap_or_else(|| Value::String(text.to_owned()))
}

impl PipelineForm {
    /// The form as a GET of it left it in the URL (`form[name]`,
    /// `form[nodes][i][name]`, …; `rows` rows), so a preview keeps what was
    /// typed. With nothing there, an empty form that fails fast.
    pub fn from_query(get: impl Fn(&str) -> Option<String>, rows: usize) -> Self {
        let field = |k: &str| get(k).unwrap_or_default();
        let sent = get("form[name]").is_some();
        Self {
            name: field("form[name]"),
            run: field("form[run]"),
            fail_fast: if sent {
                field("form[fail_fast]")
            } else {
                "on".to_owned()
            },
            nodes: (0..rows)
                .map(|i| {
                    let f = |what: &str| field(&format!("form[nodes][{i}][{what}]"));
                    NodeRow {
                        name: f("name"),
                        template: f("template"),
                        values: f("values"),
                        after: f("after"),
                        retries: f("retries"),
                    }
                })
                .collect(),
        }
    }

    /// The run it describes; a row's bad field is a 400 on `nodes[i]…`.
    pub fn to_submit(&self) -> Result<PipelineSubmit, AppError> {
        let mut nodes = Vec::new();
        for (i, row) in self.nodes.iter().enumerate() {
            if row.name.trim().is_empty() {
                continue;
            }
            let (owner, name) = match row.template.trim().split_once('/') {
                Some((owner, name)) if !name.is_empty() => {
                    (Some(owner.to_owned()), name.to_owned())
                }
                _ => {
                    return Err(AppError::invalid(
                        format!("nodes[{i}].template"),
                        "Pick the template this node runs.",
                    ))
                }
            };
            let mut values = BTreeMap::new();
            for line in row.values.lines().map(str::trim).filter(|l| !l.is_empty()) {
                let Some((k, v)) = line.split_once('=') else {
                    return Err(AppError::invalid(
                        format!("nodes[{i}].values"),
                        format!("“{line}” is not NAME=VALUE."),
                    ));
                };
                values.insert(k.trim().to_owned(), typed_value(v.trim()));
            }
            let retries = match row.retries.trim() {
                "" => 0,
                r => r.parse().map_err(|_| {
                    AppError::invalid(format!("nodes[{i}].retries"), "Retries are a whole number.")
                })?,
            };
            nodes.push(PipelineNode {
                name: row.name.trim().to_owned(),
                job: None,
                template: Some(NodeTemplate {
                    name,
                    owner,
                    version: None,
                    values,
                }),
                after: row
                    .after
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|a| !a.is_empty())
                    .map(str::to_owned)
                    .collect(),
                retries,
                backoff_secs: 10,
            });
        }
        Ok(PipelineSubmit {
            pipeline: PipelineSpec {
                name: self.name.trim().to_owned(),
                description: String::new(),
                parameters: BTreeMap::new(),
                nodes,
                fail_fast: self.fail_fast == "on",
            },
            name: Some(self.run.trim().to_owned()).filter(|r| !r.is_empty()),
            values: BTreeMap::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_left_in_the_url_is_read_back_row_by_row() {
        let query = [
            ("form[name]", "fit-and-check"),
            ("form[nodes][1][name]", "check"),
            ("form[nodes][1][after]", "fit"),
            ("form[nodes][1][values]", "model={{nodes.fit.model}}"),
        ];
        let get = |k: &str| {
            query
                .iter()
                .find(|(q, _)| *q == k)
                .map(|(_, v)| v.to_string())
        };
        let form = PipelineForm::from_query(get, 3);
        assert_eq!(form.name, "fit-and-check");
        // Sent without the box ticked: fail fast is off.
        assert_eq!(form.fail_fast, "");
        assert_eq!(form.nodes.len(), 3);
        assert_eq!(form.nodes[1].name, "check");
        assert_eq!(form.nodes[1].values, "model={{nodes.fit.model}}");
        assert_eq!(form.nodes[2], NodeRow::default());
        // Nothing sent yet: a fresh form fails fast.
        assert_eq!(PipelineForm::from_query(|_| None, 1).fail_fast, "on");
    }

    #[test]
    fn rows_become_template_nodes_with_typed_values_and_bad_rows_are_named() {
        let form = PipelineForm {
            name: "fit-and-check".into(),
            run: String::new(),
            fail_fast: "on".into(),
            nodes: vec![
                NodeRow {
                    name: "fit".into(),
                    template: "paddlecloud/fit-a-line".into(),
                    values: "epochs=6\nlr = 0.1\nmodel=line\n".into(),
                    ..Default::default()
                },
                NodeRow::default(),
                NodeRow {
                    name: "check".into(),
                    template: "paddlecloud/evaluate-a-line".into(),
                    values: "model={{nodes.fit.model}}".into(),
                    after: "fit, other.failed".into(),
                    retries: "2".into(),
                },
            ],
        };
        let submit = form.to_submit().unwrap();
        let p = &submit.pipeline;
        assert!(p.fail_fast);
        assert_eq!(p.nodes.len(), 2);
        let fit = p.nodes[0].template.as_ref().unwrap();
        assert_eq!(fit.owner.as_deref(), Some("paddlecloud"));
        assert_eq!(fit.values["epochs"], Value::from(6));
        assert_eq!(fit.values["lr"], Value::from(0.1));
        assert_eq!(fit.values["model"], Value::from("line"));
        assert_eq!(p.nodes[1].after, ["fit", "other.failed"]);
        assert_eq!(p.nodes[1].retries, 2);
        assert_eq!(submit.name, None);

        let mut bad = form.clone();
        bad.nodes[2].template = String::new();
        let err = bad.to_submit().unwrap_err();
        assert!(
            matches!(err, AppError::Invalid { field: Some(f), .. } if f == "nodes[2].template")
        );
        let mut bad = form;
        bad.nodes[0].values = "epochs".into();
        let err = bad.to_submit().unwrap_err();
        assert!(matches!(err, AppError::Invalid { field: Some(f), .. } if f == "nodes[0].values"));
    }
}
