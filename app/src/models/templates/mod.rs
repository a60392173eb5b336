//! Experiment templates (Submarine's "predefined experiment library"): a
//! job spec with typed parameters. A run fills in the parameters; the
//! console checks every value against its type before anything is made and
//! names the parameter at fault, then puts each value where the spec says
//! `{{name}}`. A whole-string placeholder takes the value with its type (a
//! number stays a number, so `"num_trainers": "{{trainers}}"` is `2`, not
//! `"2"`); one inside a longer string takes its text. Versions are
//! immutable: saving a template again makes the next version, and a job
//! records the version and the values it was made from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AppError;
use crate::models::job_origin::{TemplateUse, TemplateValue};
use crate::models::jobs::JobSpec;
use crate::models::names::validate_job_name;

mod fill;
mod notebook;
mod param;
pub use notebook::TemplateNotebook;
use param::matches_whole;

use fill::{all_placeholders, as_text_where_text, fill};
pub use fill::{fill as fill_placeholders, placeholders};

/// Parameters a template may have.
pub const MAX_PARAMS: usize = 50;

/// What a parameter takes, with its limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum ParamType {
    /// A whole number, within `min`..=`max` where given.
    Int {
        /// The smallest value allowed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<i64>,
        /// The largest value allowed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<i64>,
    },
    /// A number, within `min`..=`max` where given.
    Float {
        /// The smallest value allowed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<f64>,
        /// The largest value allowed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<f64>,
    },
    /// `true` or `false`.
    Bool,
    /// One of `choices`.
    Enum {
        /// What may be chosen.
        choices: Vec<String>,
    },
    /// Text, matching `pattern` (a regular expression, whole) where given.
    String {
        /// The pattern the whole value must match.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pattern: Option<String>,
    },
    /// A dataset the account can read: its name, or `owner/name`.
    Dataset,
    /// A model the account can read: its name, or `owner/name`.
    Model,
    /// An environment the account can use: `name`, `owner/name`, either
    /// with `:version`. Put it in the job's `environment`.
    Environment,
}

/// One parameter of a template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TemplateParam {
    /// Its name in placeholders (`{{name}}`): a lower-case letter, then
    /// lower-case letters, digits and `_`.
    #[cfg_attr(feature = "ssr", schema(pattern = r"^[a-z][a-z0-9_]{0,39}$"))]
    pub name: String,
    /// What it takes.
    #[serde(flatten)]
    pub kind: ParamType,
    /// The value a run that gives none gets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// What it means, for the form.
    #[serde(default)]
    pub description: String,
    /// Whether a run must give it (a default does not stand in).
    #[serde(default)]
    pub required: bool,
}

/// What a user saves: a name, parameters and the job they fill in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TemplateSpec {
    /// The rules of job names; unique in the account (with its versions).
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^[a-z]([a-z0-9-]{0,48}[a-z0-9])?$")
    )]
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Its parameters, in the form's order.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(max_items = 50))]
    pub parameters: Vec<TemplateParam>,
    /// A job spec (without `name`: each run names its job) whose strings
    /// may hold `{{parameter}}` placeholders.
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub job: Value,
    /// The notebook file it runs (papermill) instead of a command: the
    /// parameters the job's placeholders do not use are the notebook's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notebook: Option<TemplateNotebook>,
}

/// A saved version of a template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Template {
    /// What was saved.
    #[serde(flatten)]
    pub spec: TemplateSpec,
    /// The account it belongs to.
    #[serde(default)]
    pub owner: String,
    /// Published for every account (by a site admin).
    #[serde(default)]
    pub public: bool,
    /// 1, 2, …: each save of the name makes the next.
    pub version: u32,
    /// Who saved this version.
    pub created_by: String,
    /// When (Unix ms).
    pub created_at: i64,
}

/// The account's templates, then published ones, each at its newest version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TemplateList {
    /// By name.
    pub templates: Vec<Template>,
}

/// A run of a template: what `POST /api/v1/templates/<name>/jobs` takes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TemplateRun {
    /// The account whose template it is (default: the caller's); another
    /// account's must be published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The job's name (default: the template's name and a random suffix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The version to run (default: the newest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// A value per parameter; those left out take their default.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub values: BTreeMap<String, Value>,
}

/// Whether `name` may name a parameter.
fn is_param_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() <= 40
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl TemplateSpec {
    /// Checks the template itself: its name, each parameter (name, limits,
    /// default), that every placeholder names a parameter, and, when every
    /// parameter has a default, that the defaults make a valid job.
    pub fn validate(&self) -> Result<(), AppError> {
        validate_job_name(&self.name)
            .map_err(|_| AppError::invalid("name", "A template name has lower-case letters, digits and '-', starts with a letter and has at most 50 characters."))?;
        if self.parameters.len() > MAX_PARAMS {
            return Err(AppError::invalid(
                "parameters",
                format!("At most {MAX_PARAMS} parameters."),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, p) in self.parameters.iter().enumerate() {
            let field = format!("parameters[{i}]");
            if !is_param_name(&p.name) {
                return Err(AppError::invalid(
                    format!("{field}.name"),
                    "A parameter name has lower-case letters, digits and '_' and starts with a letter.",
                ));
            }
            if !seen.insert(p.name.as_str()) {
                return Err(AppError::invalid(
                    format!("{field}.name"),
                    format!("Two parameters are named {}.", p.name),
                ));
            }
            match &p.kind {
                ParamType::Int {
                    min: Some(a),
                    max: Some(b),
                } if a > b => {
                    return Err(AppError::invalid(
                        format!("{field}.min"),
                        "min is above max.",
                    ))
                }
                ParamType::Float {
                    min: Some(a),
                    max: Some(b),
                } if a > b => {
                    return Err(AppError::invalid(
                        format!("{field}.min"),
                        "min is above max.",
                    ))
                }
                ParamType::Enum { choices } if choices.is_empty() => {
                    return Err(AppError::invalid(
                        format!("{field}.choices"),
                        "An enum needs at least one choice.",
                    ))
                }
                ParamType::String {
                    pattern: Some(pattern),
                } => {
                    matches_whole(pattern, "").map_err(|e| {
                        AppError::invalid(format!("{field}.pattern"), e.to_string())
                    })?;
                }
                _ => {}
            }
            if let Some(default) = &p.default {
                p.check(default).map_err(|e| {
                    AppError::invalid(
                        format!("{field}.default"),
                        format!("The default does not fit: {e}"),
                    )
                })?;
            }
        }
        if !self.job.is_object() {
            return Err(AppError::invalid(
                "job",
                "Give the job as an object, as POST /api/v1/jobs takes it.",
            ));
        }
        if let Some(notebook) = &self.notebook {
            notebook.job_value(&self.job)?;
        }
        let mut used = Vec::new();
        all_placeholders(&self.job, &mut used);
        if let Some(unknown) = used.iter().find(|u| !seen.contains(u.as_str())) {
            return Err(AppError::invalid(
                "job",
                format!("{{{{{unknown}}}}} names no parameter."),
            ));
        }
        let defaults: BTreeMap<String, Value> = self
            .parameters
            .iter()
            .filter_map(|p| Some((p.name.clone(), p.default.clone()?)))
            .collect();
        if defaults.len() == self.parameters.len() {
            let run = TemplateRun {
                owner: None,
                name: Some(self.name.clone()),
                version: None,
                values: defaults,
            };
            self.render(1, &run, &self.name).map_err(|e| match e {
                AppError::Invalid { field, message } => AppError::invalid(
                    format!("job.{}", field.unwrap_or_default()),
                    format!("With the defaults: {message}"),
                ),
                other => other,
            })?;
        }
        Ok(())
    }

    /// The values of `run` checked against the parameters (defaults for
    /// those left out); a bad one is a 400 naming `values.<parameter>`.
    pub fn values(&self, run: &TemplateRun) -> Result<BTreeMap<String, TemplateValue>, AppError> {
        if let Some(unknown) = run
            .values
            .keys()
            .find(|k| !self.parameters.iter().any(|p| &p.name == *k))
        {
            return Err(AppError::invalid(
                format!("values.{unknown}"),
                format!("The template has no parameter {unknown}."),
            ));
        }
        let mut checked = BTreeMap::new();
        for p in &self.parameters {
            let given = run.values.get(&p.name).filter(|v| !v.is_null());
            let raw = match (given, &p.default) {
                (Some(v), _) => v,
                (None, Some(d)) if !p.required => d,
                _ => {
                    return Err(AppError::invalid(
                        p.field(),
                        format!("Give a value for {}.", p.name),
                    ))
                }
            };
            checked.insert(p.name.clone(), p.check(raw)?);
        }
        Ok(checked)
    }

    /// The job a run makes: version `version` of this template with the
    /// run's values, named `default_name` unless the run names it. Every
    /// value is checked first; the job is then checked as any job is.
    pub fn render(
        &self,
        version: u32,
        run: &TemplateRun,
        default_name: &str,
    ) -> Result<JobSpec, AppError> {
        let values = self.values(run)?;
        let name = run
            .name
            .clone()
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| default_name.to_owned());
        let mut spec = match &self.notebook {
            None => fill_job(&self.job, &values, &name)?,
            Some(notebook) => {
                let mut spec = fill_job(&notebook.job_value(&self.job)?, &values, &name)?;
                let for_notebook = self.notebook_values(&values);
                notebook.attach(&mut spec, &for_notebook);
                spec
            }
        };
        spec.template = Some(TemplateUse {
            owner: String::new(),
            name: self.name.clone(),
            version,
            values,
        });
        Ok(spec)
    }
}

impl TemplateSpec {
    /// The parameters a notebook template passes to its notebook: those its
    /// job's placeholders do not use (those set the job, e.g. its memory).
    pub fn notebook_parameters(&self) -> Vec<&TemplateParam> {
        let mut used = Vec::new();
        all_placeholders(&self.job, &mut used);
        self.parameters
            .iter()
            .filter(|p| !used.contains(&p.name))
            .collect()
    }

    fn notebook_values(
        &self,
        values: &BTreeMap<String, TemplateValue>,
    ) -> BTreeMap<String, TemplateValue> {
        let names: Vec<&str> = self
            .notebook_parameters()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        values
            .iter()
            .filter(|(k, _)| names.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// The job `job` (a job spec without its name, with placeholders) makes
/// with `values`, named `name`: filled as a template's, what only the
/// console sets removed, and checked. The error names the job's field.
pub fn fill_job(
    job: &Value,
    values: &BTreeMap<String, TemplateValue>,
    name: &str,
) -> Result<JobSpec, AppError> {
    let mut job = fill(job, values);
    if let Some(map) = job.as_object_mut() {
        map.insert("name".to_owned(), Value::String(name.trim().to_owned()));
        // Set by the console alone.
        for key in [
            "notebook",
            "template",
            "pipeline",
            "experiment",
            "notebook_run",
            "environment_use",
        ] {
            map.remove(key);
        }
    }
    as_text_where_text(&mut job);
    let spec: JobSpec = serde_json::from_value(job)
        .map_err(|e| AppError::invalid("job", format!("It is not a job: {e}")))?;
    spec.validate()?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn template() -> TemplateSpec {
        serde_json::from_value(json!({
            "name": "fit-a-line",
            "parameters": [
                {"name": "trainers", "type": "int", "min": 1, "max": 8, "default": 2},
                {"name": "lr", "type": "float", "min": 0.0, "max": 1.0, "default": 0.01},
                {"name": "amp", "type": "bool", "default": false},
                {"name": "optimizer", "type": "enum", "choices": ["sgd", "adam"], "default": "sgd"},
                {"name": "tag", "type": "string", "pattern": "[a-z]+", "default": "base"},
                {"name": "data", "type": "dataset", "default": "housing"},
                {"name": "base", "type": "model", "default": "vision/resnet:2"},
                {"name": "env", "type": "environment", "default": "paddlecloud/paddle-cpu"},
            ],
            "job": {
                "command": ["python", "train.py", "--lr", "{{lr}}", "--opt={{optimizer}}"],
                "num_trainers": "{{trainers}}",
                "trainer": {"cpu": "1", "memory": "1Gi"},
                "env": [{"name": "AMP", "value": "{{amp}}"}, {"name": "TAG", "value": "run-{{ tag }}"}],
                "datasets": ["{{data}}"],
                "models": ["{{base}}"],
                "environment": "{{env}}",
            }
        }))
        .unwrap()
    }

    fn run(values: Value) -> TemplateRun {
        TemplateRun {
            owner: None,
            name: Some("fit-1".into()),
            version: None,
            values: serde_json::from_value(values).unwrap(),
        }
    }

    fn field_of(err: AppError) -> String {
        match err {
            AppError::Invalid { field, .. } => field.unwrap_or_default(),
            other => panic!("not a 400: {other:?}"),
        }
    }

    #[test]
    fn a_whole_placeholder_keeps_its_type_and_a_partial_one_becomes_text() {
        let t = template();
        t.validate().unwrap();
        let job = t
            .render(3, &run(json!({"trainers": 4, "lr": 0.5})), "x")
            .unwrap();
        assert_eq!(job.num_trainers, 4);
        assert_eq!(job.name, "fit-1");
        assert_eq!(
            job.command,
            ["python", "train.py", "--lr", "0.5", "--opt=sgd"]
        );
        assert_eq!(job.env[0].value, "false");
        assert_eq!(job.env[1].value, "run-base");
        assert_eq!(job.datasets, ["housing"]);
        assert_eq!(job.models, ["vision/resnet:2"]);
        assert_eq!(job.environment.as_deref(), Some("paddlecloud/paddle-cpu"));
        let used = job.template.unwrap();
        assert_eq!(used.version, 3);
        assert_eq!(used.values["trainers"], TemplateValue::Int(4));
        assert_eq!(used.values["optimizer"], TemplateValue::Text("sgd".into()));
        // The filled job as JSON: the count is a number.
        let filled = fill(&t.job, &t.values(&run(json!({"trainers": 4}))).unwrap());
        assert_eq!(filled["num_trainers"], json!(4));
    }

    #[test]
    fn what_only_the_console_records_is_dropped_from_a_templates_job() {
        let job = json!({
            "command": ["true"], "num_trainers": 1,
            "notebook": "lab", "experiment": {"name": "e", "trial": 1},
            "notebook_run": {"notebook": "lab", "path": "a.ipynb", "version": 1,
                             "run": "ab".repeat(16), "values": {}},
        });
        let spec = fill_job(&job, &BTreeMap::new(), "x").unwrap();
        assert_eq!(
            (spec.notebook, spec.experiment, spec.notebook_run),
            (None, None, None)
        );
    }

    #[test]
    fn every_type_refuses_a_bad_value_naming_the_parameter() {
        let t = template();
        for (values, field) in [
            (json!({"trainers": 9}), "values.trainers"),
            (json!({"trainers": 1.5}), "values.trainers"),
            (json!({"trainers": "two"}), "values.trainers"),
            (json!({"lr": 2.0}), "values.lr"),
            (json!({"lr": "fast"}), "values.lr"),
            (json!({"amp": "maybe"}), "values.amp"),
            (json!({"optimizer": "rmsprop"}), "values.optimizer"),
            (json!({"tag": "Has Spaces"}), "values.tag"),
            (json!({"tag": 7}), "values.tag"),
            (json!({"data": ""}), "values.data"),
            (json!({"base": ""}), "values.base"),
            (json!({"base": "resnet:latest"}), "values.base"),
            (json!({"base": "a/b/c"}), "values.base"),
            (json!({"base": 3}), "values.base"),
            (json!({"env": "Paddle CPU"}), "values.env"),
            (json!({"nope": 1}), "values.nope"),
        ] {
            let err = t.render(1, &run(values.clone()), "x").unwrap_err();
            assert_eq!(field_of(err), field, "{values}");
        }
    }

    #[test]
    fn form_text_is_read_as_the_parameters_type() {
        let t = template();
        let job = t
            .render(
                1,
                &run(json!({"trainers": "3", "lr": "0.25", "amp": "on"})),
                "x",
            )
            .unwrap();
        assert_eq!(job.num_trainers, 3);
        assert_eq!(job.command[3], "0.25");
        assert_eq!(job.env[0].value, "true");
    }

    #[test]
    fn a_required_parameter_needs_a_value_even_with_a_default() {
        let mut t = template();
        t.parameters[0].required = true;
        let err = t.render(1, &run(json!({})), "x").unwrap_err();
        assert_eq!(field_of(err), "values.trainers");
        assert!(t.render(1, &run(json!({"trainers": 2})), "x").is_ok());
    }

    #[test]
    fn a_bad_template_is_refused_naming_what_is_wrong() {
        let mut t = template();
        t.job["command"][1] = json!("{{script}}");
        assert_eq!(field_of(t.validate().unwrap_err()), "job");
        let mut t = template();
        t.parameters[1].default = Some(json!(5));
        assert_eq!(field_of(t.validate().unwrap_err()), "parameters[1].default");
        let mut t = template();
        t.parameters[2].name = "Bad-Name".into();
        assert_eq!(field_of(t.validate().unwrap_err()), "parameters[2].name");
        let mut t = template();
        t.parameters[3].kind = ParamType::Enum { choices: vec![] };
        assert_eq!(field_of(t.validate().unwrap_err()), "parameters[3].choices");
        let mut t = template();
        t.parameters[0].kind = ParamType::Int {
            min: Some(5),
            max: Some(1),
        };
        t.parameters[0].default = None;
        assert_eq!(field_of(t.validate().unwrap_err()), "parameters[0].min");
        // The defaults make a job without trainers: said against the job.
        let mut t = template();
        t.parameters[0].kind = ParamType::Int {
            min: None,
            max: None,
        };
        t.parameters[0].default = Some(json!(0));
        assert_eq!(field_of(t.validate().unwrap_err()), "job.num_trainers");
    }

    #[test]
    fn a_run_cannot_claim_a_notebook_or_another_template() {
        let mut t = template();
        t.job["notebook"] = json!("sneaky");
        t.job["template"] = json!({"name": "other", "version": 9, "values": {}});
        let job = t.render(2, &run(json!({})), "x").unwrap();
        assert_eq!(job.notebook, None);
        assert_eq!(job.template.unwrap().name, "fit-a-line");
    }

    #[test]
    fn placeholders_are_found_with_spaces_and_unclosed_ones_are_left_alone() {
        assert_eq!(placeholders("a {{ x }} b {{y}} {{z"), ["x", "y"]);
        let values = BTreeMap::from([("x".to_owned(), TemplateValue::Int(1))]);
        assert_eq!(
            fill(&json!("{{x}} and {{ y }}"), &values),
            json!("1 and {{ y }}")
        );
        assert_eq!(fill(&json!(" {{x}} "), &values), json!(1));
    }
}
