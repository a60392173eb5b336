//! "Save as template": a job's spec as the start of a template, in a form
//! that posts with or without JavaScript (parameters and the job as JSON
//! text), and its conversion back into a [`TemplateSpec`].

use serde::{Deserialize, Serialize};

use super::jobs::JobSpec;
use super::templates::TemplateSpec;
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
}

impl TemplateForm {
    /// The form for job `spec`: named after it, no parameters yet, and its
    /// spec without what each run or the console sets (its name, the
    /// notebook or template it came from, the resolved environment).
    pub fn from_job(spec: &JobSpec) -> Self {
        let mut job = serde_json::to_value(spec).unwrap_or_default();
        if let Some(map) = job.as_object_mut() {
            for key in ["name", "notebook", "template", "environment_use"] {
                map.remove(key);
            }
        }
        Self {
            name: spec.name.clone(),
            description: String::new(),
            parameters: "[]".to_owned(),
            job: serde_json::to_string_pretty(&job).unwrap_or_default(),
        }
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
}
