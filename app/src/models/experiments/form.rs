//! "New experiment": a form made from a template's parameters (each fixed
//! or searched over a range or choices), the objective, the algorithm,
//! early stopping and the limits. It posts with or without JavaScript, as
//! text; [`ExperimentForm::to_spec`] reads it into an [`ExperimentSpec`],
//! and an error names the form's field (`params.lr.min`, `goal`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Algorithm, Direction, Domain, EarlyStopping, ExperimentSpec, Objective, ObjectiveValue,
    SearchParam, SearchSpace,
};
use crate::error::AppError;
use crate::models::pipeline_form::typed_value;
use crate::models::templates::{ParamType, Template};

/// One template parameter's row: fixed to a value, or searched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamForm {
    /// `search`, or anything else (fixed).
    #[serde(default)]
    pub mode: String,
    /// `int`, `float`, `enum`, `bool` (searchable), or `text`.
    #[serde(default)]
    pub kind: String,
    /// The fixed value (empty: the template's default).
    #[serde(default)]
    pub value: String,
    /// A searched range's smallest value.
    #[serde(default)]
    pub min: String,
    /// A searched range's largest value.
    #[serde(default)]
    pub max: String,
    /// `on`: the range is searched on a log scale.
    #[serde(default)]
    pub log: String,
    /// An enum's choices searched, separated by commas.
    #[serde(default)]
    pub choices: String,
}

/// What the "New experiment" form posts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExperimentForm {
    /// The experiment's name.
    #[serde(default)]
    pub name: String,
    /// The template searched, `owner/name`.
    #[serde(default)]
    pub template: String,
    /// A row per template parameter, by name.
    #[serde(default)]
    pub params: BTreeMap<String, ParamForm>,
    /// The objective's tag.
    #[serde(default)]
    pub metric: String,
    /// `minimize` or `maximize`.
    #[serde(default)]
    pub direction: String,
    /// `last` or `best`.
    #[serde(default)]
    pub value: String,
    /// A goal that ends the search (empty: none).
    #[serde(default)]
    pub goal: String,
    /// `tpe`, `random` or `grid`.
    #[serde(default)]
    pub algorithm: String,
    /// A grid's values per range.
    #[serde(default)]
    pub grid_points: String,
    /// `none`, `median` or `asha`.
    #[serde(default)]
    pub early_stopping: String,
    /// Trials in all.
    #[serde(default)]
    pub max_trials: String,
    /// Trials at once.
    #[serde(default)]
    pub parallel_trials: String,
    /// Failed trials tolerated.
    #[serde(default)]
    pub max_failed_trials: String,
}

/// A template parameter's kind as the form names it.
fn kind_of(kind: &ParamType) -> &'static str {
    match kind {
        ParamType::Int { .. } => "int",
        ParamType::Float { .. } => "float",
        ParamType::Enum { .. } => "enum",
        ParamType::Bool => "bool",
        _ => "text",
    }
}

/// A JSON value as a field shows it.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The name an experiment of `template` is offered: `<template>-search`,
/// short enough for its trials' job names.
fn name_for(template: &str) -> String {
    let mut name = format!("{template}-search");
    name.truncate(40);
    name.trim_end_matches('-').to_owned()
}

impl ExperimentForm {
    /// The form for `template`: every parameter fixed at its default (a
    /// range's row offers the template's limits), the objective `loss`,
    /// TPE, 20 trials, 2 at once.
    pub fn for_template(template: &Template) -> Self {
        let params = template
            .spec
            .parameters
            .iter()
            .map(|p| {
                let (min, max, choices) = match &p.kind {
                    ParamType::Int { min, max } => (
                        min.map(|m| m.to_string()).unwrap_or_default(),
                        max.map(|m| m.to_string()).unwrap_or_default(),
                        String::new(),
                    ),
                    ParamType::Float { min, max } => (
                        min.map(|m| m.to_string()).unwrap_or_default(),
                        max.map(|m| m.to_string()).unwrap_or_default(),
                        String::new(),
                    ),
                    ParamType::Enum { choices } => {
                        (String::new(), String::new(), choices.join(","))
                    }
                    _ => Default::default(),
                };
                let row = ParamForm {
                    mode: "fixed".into(),
                    kind: kind_of(&p.kind).into(),
                    value: p.default.as_ref().map(text_of).unwrap_or_default(),
                    min,
                    max,
                    log: String::new(),
                    choices,
                };
                (p.name.clone(), row)
            })
            .collect();
        Self {
            name: name_for(&template.spec.name),
            template: if template.owner.is_empty() {
                template.spec.name.clone()
            } else {
                format!("{}/{}", template.owner, template.spec.name)
            },
            params,
            metric: "loss".into(),
            direction: "minimize".into(),
            value: "last".into(),
            goal: String::new(),
            algorithm: "tpe".into(),
            grid_points: "5".into(),
            early_stopping: "none".into(),
            max_trials: "20".into(),
            parallel_trials: "2".into(),
            max_failed_trials: "3".into(),
        }
    }

    /// The form holding `spec` (the library's example) over `template`.
    pub fn from_spec(spec: &ExperimentSpec, template: &Template) -> Self {
        let mut form = Self::for_template(template);
        form.name = spec.name.clone();
        for (name, value) in &spec.values {
            if let Some(row) = form.params.get_mut(name) {
                row.value = text_of(value);
            }
        }
        for p in &spec.space.parameters {
            let Some(row) = form.params.get_mut(&p.name) else {
                continue;
            };
            row.mode = "search".into();
            let on = |log: bool| if log { "on".to_owned() } else { String::new() };
            match &p.domain {
                Domain::Int { min, max, log } => {
                    (row.min, row.max, row.log) = (min.to_string(), max.to_string(), on(*log));
                }
                Domain::Float { min, max, log } => {
                    (row.min, row.max, row.log) = (min.to_string(), max.to_string(), on(*log));
                }
                Domain::Enum { choices } => row.choices = choices.join(","),
                Domain::Bool => {}
            }
        }
        let o = &spec.objective;
        form.metric = o.metric.clone();
        form.direction = match o.direction {
            Direction::Minimize => "minimize",
            Direction::Maximize => "maximize",
        }
        .into();
        form.value = match o.value {
            ObjectiveValue::Last => "last",
            ObjectiveValue::Best => "best",
        }
        .into();
        form.goal = o.goal.map(|g| g.to_string()).unwrap_or_default();
        (form.algorithm, form.grid_points) = match &spec.algorithm {
            Algorithm::Grid { points } => ("grid".into(), points.to_string()),
            Algorithm::Random => ("random".into(), "5".into()),
            Algorithm::Tpe { .. } => ("tpe".into(), "5".into()),
        };
        form.early_stopping = match spec.early_stopping {
            EarlyStopping::None => "none",
            EarlyStopping::Median { .. } => "median",
            EarlyStopping::Asha { .. } => "asha",
        }
        .into();
        form.max_trials = spec.max_trials.to_string();
        form.parallel_trials = spec.parallel_trials.to_string();
        form.max_failed_trials = spec.max_failed_trials.to_string();
        form
    }

    /// The names of the searched parameters, in the form's order (that of
    /// the spec's `parameters`).
    fn searched(&self) -> Vec<&str> {
        self.params
            .iter()
            .filter(|(_, row)| row.mode == "search")
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// The form's field an error about the spec's `field` belongs under:
    /// `parameters[i].min` → `params.<name>.min`, `values.<name>` →
    /// `params.<name>.value`, `objective.goal` → `goal`, …
    pub fn field_of(&self, field: &str) -> String {
        if let Some(rest) = field.strip_prefix("parameters[") {
            if let Some((i, tail)) = rest.split_once(']') {
                if let Some(name) = i
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| self.searched().get(i).copied())
                {
                    return format!("params.{name}{tail}");
                }
            }
        }
        if let Some(name) = field.strip_prefix("values.") {
            return format!("params.{name}.value");
        }
        if let Some(rest) = field.strip_prefix("objective.") {
            return rest.to_owned();
        }
        if field == "algorithm.points" {
            return "grid_points".into();
        }
        if field.starts_with("early_stopping.") {
            return "early_stopping".into();
        }
        field.to_owned()
    }

    /// `error` with its field renamed to the form's (see [`Self::field_of`]).
    pub fn error_for_form(&self, error: AppError) -> AppError {
        match error {
            AppError::Invalid {
                field: Some(f),
                message,
            } => AppError::Invalid {
                field: Some(self.field_of(&f)),
                message,
            },
            other => other,
        }
    }

    /// The spec the form describes, checked (its own fields; the template
    /// is checked when it is created). An error names the form's field.
    pub fn to_spec(&self) -> Result<ExperimentSpec, AppError> {
        let spec = self.read()?;
        spec.validate().map_err(|e| self.error_for_form(e))?;
        Ok(spec)
    }

    fn read(&self) -> Result<ExperimentSpec, AppError> {
        let mut values = BTreeMap::new();
        let mut parameters = Vec::new();
        for (name, row) in &self.params {
            if row.mode != "search" {
                if !row.value.trim().is_empty() {
                    values.insert(name.clone(), typed_value(&row.value));
                }
                continue;
            }
            let field = |f: &str| format!("params.{name}.{f}");
            let log = row.log == "on";
            let domain = match row.kind.as_str() {
                "int" => Domain::Int {
                    min: number(&row.min, &field("min"))?,
                    max: number(&row.max, &field("max"))?,
                    log,
                },
                "float" => Domain::Float {
                    min: number(&row.min, &field("min"))?,
                    max: number(&row.max, &field("max"))?,
                    log,
                },
                "enum" => Domain::Enum {
                    choices: row
                        .choices
                        .split(',')
                        .map(str::trim)
                        .filter(|c| !c.is_empty())
                        .map(str::to_owned)
                        .collect(),
                },
                "bool" => Domain::Bool,
                _ => {
                    return Err(AppError::invalid(
                        field("mode"),
                        format!("{name} cannot be searched: give it a fixed value."),
                    ))
                }
            };
            parameters.push(SearchParam {
                name: name.clone(),
                domain,
            });
        }
        let goal = match self.goal.trim() {
            "" => None,
            g => Some(number::<f64>(g, "goal")?),
        };
        let objective = Objective {
            metric: self.metric.trim().to_owned(),
            direction: if self.direction == "maximize" {
                Direction::Maximize
            } else {
                Direction::Minimize
            },
            value: if self.value == "best" {
                ObjectiveValue::Best
            } else {
                ObjectiveValue::Last
            },
            goal,
        };
        let algorithm = match self.algorithm.as_str() {
            "grid" => Algorithm::Grid {
                points: number(&self.grid_points, "grid_points")?,
            },
            "random" => Algorithm::Random,
            _ => Algorithm::default(),
        };
        let early_stopping = match self.early_stopping.as_str() {
            "median" => EarlyStopping::median(),
            "asha" => EarlyStopping::asha(),
            _ => EarlyStopping::None,
        };
        Ok(ExperimentSpec {
            name: self.name.trim().to_owned(),
            template: self.template.trim().to_owned(),
            template_version: None,
            values,
            space: SearchSpace { parameters },
            objective,
            algorithm,
            early_stopping,
            max_trials: number(&self.max_trials, "max_trials")?,
            parallel_trials: number(&self.parallel_trials, "parallel_trials")?,
            max_failed_trials: number(&self.max_failed_trials, "max_failed_trials")?,
            seed: None,
        })
    }
}

/// `text` as a number, or a 400 naming `field`.
fn number<T: std::str::FromStr>(text: &str, field: &str) -> Result<T, AppError> {
    text.trim()
        .parse()
        .map_err(|_| AppError::invalid(field, format!("“{}” is not a number here.", text.trim())))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn template() -> Template {
        serde_json::from_value(json!({
            "name": "bowl",
            "owner": "team",
            "version": 2,
            "created_by": "ann@example.com",
            "created_at": 0,
            "parameters": [
                {"name": "x", "type": "float", "min": 0.0, "max": 1.0, "default": 0.5},
                {"name": "opt", "type": "enum", "choices": ["adam", "sgd"], "default": "sgd"},
                {"name": "steps", "type": "int", "min": 1, "max": 50, "default": 3},
                {"name": "tag", "type": "string", "default": "a"},
            ],
            "job": {"command": ["true"]},
        }))
        .unwrap()
    }

    #[test]
    fn a_templates_form_offers_each_parameter_fixed_at_its_default_with_its_limits() {
        let form = ExperimentForm::for_template(&template());
        assert_eq!(form.template, "team/bowl");
        assert_eq!(form.name, "bowl-search");
        let x = &form.params["x"];
        assert_eq!(
            (
                x.kind.as_str(),
                x.value.as_str(),
                x.min.as_str(),
                x.max.as_str()
            ),
            ("float", "0.5", "0", "1")
        );
        assert_eq!(form.params["opt"].choices, "adam,sgd");
        assert_eq!(form.params["tag"].kind, "text");
        // Nothing searched yet: the spec says so, naming the field.
        assert_eq!(form.to_spec().unwrap_err().field(), Some("parameters"));
    }

    #[test]
    fn searched_rows_become_the_space_and_fixed_ones_the_values() {
        let mut form = ExperimentForm::for_template(&template());
        let x = form.params.get_mut("x").unwrap();
        (x.mode, x.min, x.max, x.log) = ("search".into(), "0.01".into(), "1".into(), "on".into());
        let opt = form.params.get_mut("opt").unwrap();
        (opt.mode, opt.choices) = ("search".into(), "adam, sgd".into());
        form.goal = "0.1".into();
        form.algorithm = "grid".into();
        form.early_stopping = "median".into();
        let spec = form.to_spec().unwrap();
        assert_eq!(spec.values["steps"], json!(3));
        assert_eq!(spec.values["tag"], json!("a"));
        assert_eq!(spec.space.parameters.len(), 2);
        assert_eq!(
            spec.space.parameters[1].domain,
            Domain::Float {
                min: 0.01,
                max: 1.0,
                log: true
            }
        );
        assert_eq!(
            spec.space.parameters[0].domain,
            Domain::Enum {
                choices: vec!["adam".into(), "sgd".into()]
            }
        );
        assert_eq!(spec.objective.goal, Some(0.1));
        assert_eq!(spec.algorithm, Algorithm::Grid { points: 5 });
        assert_eq!(spec.early_stopping, EarlyStopping::median());
        // And the form reads back from the spec.
        let back = ExperimentForm::from_spec(&spec, &template());
        assert_eq!(back.to_spec().unwrap(), spec);
    }

    #[test]
    fn bad_input_names_the_forms_field() {
        let mut form = ExperimentForm::for_template(&template());
        let x = form.params.get_mut("x").unwrap();
        (x.mode, x.min, x.max) = ("search".into(), "0.9".into(), "0.1".into());
        assert_eq!(form.to_spec().unwrap_err().field(), Some("params.x.min"));
        form.params.get_mut("x").unwrap().max = "lots".into();
        assert_eq!(form.to_spec().unwrap_err().field(), Some("params.x.max"));
        form.params.get_mut("x").unwrap().max = "1".into();
        form.goal = "soon".into();
        assert_eq!(form.to_spec().unwrap_err().field(), Some("goal"));
        form.goal.clear();
        form.metric = " ".into();
        assert_eq!(form.to_spec().unwrap_err().field(), Some("metric"));
        form.metric = "loss".into();
        form.params.get_mut("tag").unwrap().mode = "search".into();
        assert_eq!(form.to_spec().unwrap_err().field(), Some("params.tag.mode"));
        assert_eq!(form.field_of("values.steps"), "params.steps.value");
        assert_eq!(
            form.field_of("early_stopping.n_warmup_steps"),
            "early_stopping"
        );
    }
}
