//! "Save as template": a job's spec as the start of a template, in a form
//! that posts with or without JavaScript (parameters and the job as JSON
//! text), and its conversion back into a [`TemplateSpec`].

use serde::{Deserialize, Serialize};

use super::jobs::{JobSpec, ReplicaResources};
use super::local_runs::LocalRun;
use super::templates::{ParamType, TemplateParam, TemplateSpec};
use crate::error::AppError;

/// What the "Save as template" page posts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateForm {
    /// The template's name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The parameters, as a JSON array.
    #[serde(default)]
    pub parameters: String,
    /// The job, as a JSON object with `{{parameter}}` placeholders.
    pub job: String,
    /// The notebook run whose notebook the template runs (empty: the job
    /// runs its command).
    #[serde(default)]
    pub notebook_job: String,
}

impl TemplateForm {
    /// The form for job `spec`: named after it, no parameters yet, and its
    /// spec without what each run or the console sets (its name, the
    /// notebook or template it came from, the resolved environment).
    ///
    /// A notebook run's template runs its notebook: the runner's command
    /// goes, and the run is named as where the notebook is copied from
    /// (its parameters are the notebook's, filled in by whoever has read
    /// the notebook: `api::templates::job_as_template`).
    pub fn from_job(spec: &JobSpec) -> Self {
        let mut job = serde_json::to_value(spec).unwrap_or_default();
        let notebook_run = spec.notebook_run.is_some();
        if let Some(map) = job.as_object_mut() {
            for key in [
                "name",
                "notebook",
                "template",
                "environment_use",
                "notebook_run",
            ] {
                map.remove(key);
            }
            if notebook_run {
                for key in ["command", "args", "num_ps", "ps"] {
                    map.remove(key);
                }
            }
        }
        let description = match &spec.notebook_run {
            Some(run) => format!(
                "Runs {} of notebook {} (version #{}), as the run {} did.",
                run.path, run.notebook, run.version, spec.name
            ),
            None => String::new(),
        };
        Self {
            name: spec.name.clone(),
            description,
            parameters: "[]".to_owned(),
            job: serde_json::to_string_pretty(&job).unwrap_or_default(),
            notebook_job: if notebook_run {
                spec.name.clone()
            } else {
                String::new()
            },
        }
    }

    /// "Run on the cluster" for a local run: the same command, run by
    /// `python3` when Python ran it, its script relative to where it ran,
    /// and each parameter that the command line passes as `--name VALUE`
    /// (or `--name=VALUE`) made a template parameter defaulting to the
    /// run's value, so a run on the cluster can change it. Resources are a
    /// starting point (1 CPU, 2 GiB), to be set in the form.
    pub fn from_local_run(spec: &JobSpec, run: &LocalRun) -> Self {
        let mut spec = spec.clone();
        let facts = &run.facts;
        let mut command = spec.command.clone();
        if let Some(first) = command.first_mut() {
            let base = first.rsplit('/').next().unwrap_or(first).to_owned();
            if base.starts_with("python") {
                *first = "python3".to_owned();
            }
        }
        let dir = format!("{}/", facts.working_dir.trim_end_matches('/'));
        for arg in command.iter_mut().skip(1) {
            if let Some(inside) = arg.strip_prefix(&dir) {
                *arg = inside.to_owned();
            }
        }
        let mut parameters = Vec::new();
        for (name, value) in &run.params {
            let named = name.starts_with(|c: char| c.is_ascii_lowercase())
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !named {
                continue; // not a placeholder name: the value stays as typed
            }
            let kind = match value {
                serde_json::Value::Bool(_) => ParamType::Bool,
                serde_json::Value::Number(n) if n.is_i64() => ParamType::Int {
                    min: None,
                    max: None,
                },
                serde_json::Value::Number(_) => ParamType::Float {
                    min: None,
                    max: None,
                },
                serde_json::Value::String(_) => ParamType::String { pattern: None },
                _ => continue,
            };
            let text = match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let flag = format!("--{name}");
            let placeholder = format!("{{{{{name}}}}}");
            let mut used = false;
            for i in 1..command.len() {
                if command[i] == format!("{flag}={text}") {
                    command[i] = format!("{flag}={placeholder}");
                    used = true;
                } else if command[i - 1] == flag && command[i] == text {
                    command[i] = placeholder.clone();
                    used = true;
                }
            }
            if used {
                parameters.push(TemplateParam {
                    name: name.clone(),
                    kind,
                    default: Some(value.clone()),
                    description: format!("{text} in the local run"),
                    required: false,
                });
            }
        }
        spec.command = command;
        spec.working_dir = String::new();
        spec.trainer = ReplicaResources {
            cpu: "1".to_owned(),
            memory: "2Gi".to_owned(),
            gpu: 0,
        };
        let mut form = Self::from_job(&spec);
        let commit = facts
            .git
            .as_ref()
            .map(|g| format!(" at commit {}", g.commit))
            .unwrap_or_default();
        form.description = format!(
            "From the local run {} on {} in {}{commit}: the job runs the same command in its working directory.",
            run.name, facts.host, facts.working_dir
        );
        form.parameters =
            serde_json::to_string_pretty(&parameters).unwrap_or_else(|_| "[]".to_owned());
        form
    }

    /// The template it describes; JSON that does not read is a 400 on its
    /// field, the rest is checked as any saved template is.
    pub fn to_spec(&self) -> Result<TemplateSpec, AppError> {
        let parameters = if self.parameters.trim().is_empty() {
            Vec::new()
        } else {
            serde_json::from_str(&self.parameters).map_err(|e| {
                AppError::invalid(
                    "parameters",
                    format!("The parameters are not a JSON list of parameters: {e}"),
                )
            })?
        };
        let job = serde_json::from_str(&self.job)
            .map_err(|e| AppError::invalid("job", format!("The job is not JSON: {e}")))?;
        Ok(TemplateSpec {
            name: self.name.trim().to_owned(),
            description: self.description.trim().to_owned(),
            parameters,
            job,
            notebook: (!self.notebook_job.trim().is_empty()).then(|| {
                super::templates::TemplateNotebook {
                    job: Some(self.notebook_job.trim().to_owned()),
                    ..Default::default()
                }
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::JobForm;

    #[test]
    fn a_job_becomes_a_template_that_makes_the_same_job_without_what_the_console_set() {
        let mut spec = JobForm::example().to_spec().unwrap();
        spec.name = "mnist-run".into();
        spec.notebook = Some("lab".into());
        spec.environment = Some("team/nlp:2".into());
        let form = TemplateForm::from_job(&spec);
        assert!(!form.job.contains("\"notebook\""), "{}", form.job);
        assert!(form.job.contains("team/nlp:2"), "{}", form.job);
        let template = form.to_spec().unwrap();
        template.validate().unwrap();
        let made = template.render(1, &Default::default(), "again").unwrap();
        assert_eq!(made.command, spec.command);
        assert_eq!(made.num_trainers, spec.num_trainers);
        assert_eq!(made.notebook, None);
    }

    #[test]
    fn json_that_does_not_read_is_refused_at_its_field() {
        let mut form = TemplateForm::from_job(&JobForm::example().to_spec().unwrap());
        form.parameters = "[{".into();
        assert_eq!(form.to_spec().unwrap_err().field(), Some("parameters"));
        form.parameters = String::new();
        form.job = "not json".into();
        assert_eq!(form.to_spec().unwrap_err().field(), Some("job"));
    }

    #[test]
    fn a_local_run_becomes_a_template_whose_flags_are_its_parameters() {
        use crate::models::{LocalRun, RunFacts};
        let spec: JobSpec = serde_json::from_value(serde_json::json!({
            "name": "train", "command": ["/usr/bin/python3.11", "/home/ada/fit/train.py", "--lr", "0.1", "--epochs=3", "--tag", "x"],
            "num_trainers": 1
        })).unwrap();
        let run = LocalRun {
            name: "train".into(),
            params: [
                ("lr".to_owned(), serde_json::json!(0.1)),
                ("epochs".to_owned(), serde_json::json!(3)),
                ("Other".to_owned(), serde_json::json!("x")),
            ]
            .into_iter()
            .collect(),
            facts: RunFacts {
                host: "laptop".into(),
                working_dir: "/home/ada/fit".into(),
                ..Default::default()
            },
            heartbeat_at: 0,
            log_length: 0,
        };
        let form = TemplateForm::from_local_run(&spec, &run);
        let template = form.to_spec().unwrap();
        assert_eq!(
            template.job["command"],
            serde_json::json!([
                "python3",
                "train.py",
                "--lr",
                "{{lr}}",
                "--epochs={{epochs}}",
                "--tag",
                "x"
            ])
        );
        let names: Vec<&str> = template
            .parameters
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names, ["epochs", "lr"]);
        assert!(form.description.contains("laptop"), "{}", form.description);
    }
}
