//! A template that runs a notebook file (papermill) instead of a command:
//! the file as it was when the template was saved, copied into the
//! console's store, so that the template keeps working after the notebook
//! changes or is gone. Each run copies it again into the job's own run key
//! (`use_cases::jobs::admit_and_submit`), so deleting a job never deletes
//! the template's file. The template's parameters are the notebook's
//! (those of its `parameters` cell, with the limits a template adds); the
//! job is the one replica that runs the SDK's runner.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AppError;
use crate::models::job_origin::{NotebookRunUse, TemplateValue, DEFAULT_RUN_ENVIRONMENT};
use crate::models::jobs::JobSpec;

/// The notebook file a template runs. A client names where to copy it
/// from: a notebook run of the account (`job`, what "Save as template" on
/// its page sends), or a version of a file of one of its own notebooks
/// (`notebook`, `path`, `version`: the newest when left out). The console
/// fills in the rest when it saves.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TemplateNotebook {
    /// The notebook (workspace) the file came from.
    #[serde(default)]
    pub notebook: String,
    /// The file's path in it.
    #[serde(default)]
    pub path: String,
    /// The version copied (its id on the notebook's history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    /// The notebook run (a job of the account) it was copied from, if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// The console's copy (set when saved; a client's is only used to keep
    /// the copy of an earlier version of the same template).
    #[serde(default)]
    pub input: String,
}

impl TemplateNotebook {
    /// The template's job with what a notebook run is made of: one
    /// trainer (the default) starting the runner. A command, `args`,
    /// parameter servers or more trainers are refused: the notebook is
    /// what runs, once.
    pub fn job_value(&self, job: &Value) -> Result<Value, AppError> {
        let mut job = job.clone();
        let Some(map) = job.as_object_mut() else {
            return Ok(job); // refused by the template's own check
        };
        for key in ["command", "args"] {
            let empty = match map.get(key) {
                None | Some(Value::Null) => true,
                Some(Value::Array(items)) => items.is_empty(),
                Some(_) => false,
            };
            if !empty {
                return Err(AppError::invalid(
                    format!("job.{key}"),
                    "A notebook template runs its notebook: leave out the command and its arguments.",
                ));
            }
        }
        let one = |key: &str, want: u64| match map.get(key) {
            None | Some(Value::Null) => true,
            Some(v) => v.as_u64() == Some(want),
        };
        if !one("num_trainers", 1) || !one("num_ps", 0) {
            return Err(AppError::invalid(
                "job.num_trainers",
                "A notebook template runs one trainer and no parameter servers.",
            ));
        }
        map.insert("num_trainers".into(), Value::from(1));
        // The runner is filled in after the placeholders: it is no
        // template text.
        map.insert("command".into(), Value::from(vec!["python3"]));
        map.remove("args");
        let unset = map.get("environment").is_none_or(Value::is_null);
        if unset {
            map.insert("environment".into(), Value::from(DEFAULT_RUN_ENVIRONMENT));
        }
        Ok(job)
    }

    /// Makes `spec` (the filled job) the run of this notebook with
    /// `values`: the runner's command and the record of the run, whose key
    /// is the template's copy until the run is submitted.
    pub(super) fn attach(&self, spec: &mut JobSpec, values: &BTreeMap<String, TemplateValue>) {
        let run = NotebookRunUse {
            notebook: self.notebook.clone(),
            path: self.path.clone(),
            version: self.version.unwrap_or_default(),
            run: self.input.clone(),
            values: values.clone(),
        };
        spec.command = run.runner_command();
        spec.args = run.runner_args();
        spec.notebook_run = Some(run);
    }

    /// `train.ipynb of notebook lab, version #12`: what the template's
    /// page says it runs.
    pub fn describe(&self) -> String {
        let version = self
            .version
            .map(|v| format!(", version #{v}"))
            .unwrap_or_default();
        format!("{} of notebook {}{version}", self.path, self.notebook)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::models::{TemplateRun, TemplateSpec};

    fn template() -> TemplateSpec {
        serde_json::from_value(json!({
            "name": "nb",
            "parameters": [
                {"name": "epochs", "type": "int", "min": 1, "default": 2},
                {"name": "memory", "type": "enum", "choices": ["1Gi", "2Gi"], "default": "1Gi"},
            ],
            "job": {"trainer": {"cpu": "1", "memory": "{{memory}}"}},
            "notebook": {"notebook": "lab", "path": "train.ipynb", "version": 7,
                         "input": "ab".repeat(16)},
        }))
        .unwrap()
    }

    fn field_of(err: AppError) -> String {
        err.field().unwrap_or_default().to_owned()
    }

    #[test]
    fn a_notebook_templates_run_starts_the_runner_with_the_values_the_job_does_not_use() {
        let t = template();
        t.validate().unwrap();
        let run = TemplateRun {
            values: [
                ("epochs".to_owned(), json!(5)),
                ("memory".into(), json!("2Gi")),
            ]
            .into(),
            ..Default::default()
        };
        let job = t.render(3, &run, "nb-run").unwrap();
        assert_eq!(job.command, ["python3", "-m", "paddlecloud.notebook_run"]);
        assert_eq!(job.args, ["--parameters", r#"{"epochs":5}"#]);
        assert_eq!(job.trainer.memory, "2Gi");
        assert_eq!((job.num_trainers, job.num_ps), (1, 0));
        assert_eq!(job.environment.as_deref(), Some(DEFAULT_RUN_ENVIRONMENT));
        let used = job.notebook_run.unwrap();
        assert_eq!((used.path.as_str(), used.version), ("train.ipynb", 7));
        assert_eq!(
            used.run,
            "ab".repeat(16),
            "the template's copy until submitted"
        );
        assert_eq!(used.values["epochs"], TemplateValue::Int(5));
        assert!(!used.values.contains_key("memory"));
        assert_eq!(job.template.unwrap().values.len(), 2);
    }

    #[test]
    fn a_notebook_template_refuses_a_command_or_more_than_one_replica() {
        for (job, field) in [
            (json!({"command": ["python3", "x.py"]}), "job.command"),
            (json!({"args": ["--x"]}), "job.args"),
            (json!({"num_trainers": 2}), "job.num_trainers"),
            (json!({"num_ps": 1}), "job.num_trainers"),
        ] {
            let mut t = template();
            t.job = job.clone();
            t.parameters.truncate(1);
            assert_eq!(field_of(t.validate().unwrap_err()), field, "{job}");
        }
        let mut t = template();
        t.job = json!({"command": [], "num_trainers": 1, "environment": "team/env:2"});
        t.parameters.truncate(1);
        let job = t.render(1, &TemplateRun::default(), "x").unwrap();
        assert_eq!(job.environment.as_deref(), Some("team/env:2"));
    }

    #[test]
    fn a_client_cannot_slip_a_notebook_run_into_a_notebook_templates_job() {
        let mut t = template();
        t.job["notebook_run"] = json!({"notebook": "x", "path": "y.ipynb", "version": 1,
                                       "run": "cd".repeat(16), "values": {}});
        let job = t.render(1, &TemplateRun::default(), "x").unwrap();
        assert_eq!(job.notebook_run.unwrap().run, "ab".repeat(16));
    }
}
