//! The submit dialog's fields as a flat form, so it posts with or without
//! JavaScript, and its conversion into a [`JobSpec`].

use serde::{Deserialize, Serialize};

use super::form_text::{join_command, parse_env_lines, split_command};
use super::jobs::{JobSpec, ReplicaResources};
use super::names::again_name;
use crate::error::AppError;

/// What the submit dialog posts: every field a string, as forms send them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobForm {
    /// Job name.
    pub name: String,
    /// Container image.
    #[serde(default)]
    pub image: String,
    /// Command line, split like a shell would (quotes group words).
    pub command: String,
    /// Working directory inside the job's directory.
    #[serde(default)]
    pub working_dir: String,
    /// `KEY=VALUE` lines.
    #[serde(default)]
    pub env: String,
    /// Parameter servers.
    pub num_ps: String,
    /// Trainers.
    pub num_trainers: String,
    /// CPU per parameter server.
    pub ps_cpu: String,
    /// Memory per parameter server.
    pub ps_memory: String,
    /// CPU per trainer.
    pub trainer_cpu: String,
    /// Memory per trainer.
    pub trainer_memory: String,
    /// GPUs per trainer.
    #[serde(default)]
    pub trainer_gpu: String,
    /// Datasets it reads, `name` or `owner/name`, separated by commas or spaces.
    #[serde(default)]
    pub datasets: String,
    /// Model versions it reads, `[owner/]name[:version]`, separated by
    /// commas or spaces.
    #[serde(default)]
    pub models: String,
    /// The environment it runs in (`name`, `owner/name`, `:version`), or empty.
    #[serde(default)]
    pub environment: String,
    /// `low`, `normal` (or empty) or `high`.
    #[serde(default)]
    pub priority: String,
    /// A time limit (`90m`, `2h`), or empty for none.
    #[serde(default)]
    pub max_runtime: String,
    /// The account's secrets it uses: `VARIABLE=secret` or
    /// `file:name=secret` lines.
    #[serde(default)]
    pub secrets: String,
}

fn count(field: &str, raw: &str, what: &str) -> Result<u32, AppError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(0);
    }
    raw.parse().map_err(|_| {
        AppError::invalid(
            field,
            format!("The number of {what} must be a whole number."),
        )
    })
}

/// The names in a field that lists them separated by commas or spaces.
fn list_words(raw: &str) -> Vec<String> {
    raw.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|d| !d.is_empty())
        .map(str::to_owned)
        .collect()
}

impl JobForm {
    /// The spec this form describes; the error names the form field at fault.
    pub fn to_spec(&self) -> Result<JobSpec, AppError> {
        let env = parse_env_lines(&self.env)?;
        let gpu = count("trainer.gpu", &self.trainer_gpu, "GPUs")?;
        Ok(JobSpec {
            priority: super::priority::Priority::parse(&self.priority)?,
            max_runtime: Some(self.max_runtime.trim().to_owned()).filter(|r| !r.is_empty()),
            secrets: super::secrets::parse_secret_uses(&self.secrets)?,
            notebook: None,
            template: None,
            pipeline: None,
            experiment: None,
            notebook_run: None,
            scoring: None,
            environment: super::named_environment(&self.environment),
            environment_use: None,
            name: self.name.trim().to_owned(),
            image: self.image.trim().to_owned(),
            command: split_command(&self.command)?,
            args: vec![],
            working_dir: self.working_dir.trim().to_owned(),
            env,
            num_ps: count("num_ps", &self.num_ps, "parameter servers")?,
            num_trainers: count("num_trainers", &self.num_trainers, "trainers")?,
            ps: ReplicaResources {
                cpu: self.ps_cpu.clone(),
                memory: self.ps_memory.clone(),
                gpu: 0,
            },
            trainer: ReplicaResources {
                cpu: self.trainer_cpu.clone(),
                memory: self.trainer_memory.clone(),
                gpu,
            },
            datasets: list_words(&self.datasets),
            models: list_words(&self.models),
        })
    }

    /// The dialog filled in from `spec` to run it again with changes,
    /// under the next free-looking name (`fit` → `fit-2`). What the console
    /// set itself (template, pipeline, experiment, notebook) is not carried:
    /// the new job is the user's own.
    pub fn again(spec: &JobSpec) -> Self {
        let mut words = spec.command.clone();
        words.extend(spec.args.iter().cloned());
        let env: Vec<String> = spec
            .env
            .iter()
            .map(|e| format!("{}={}", e.name, e.value))
            .collect();
        Self {
            name: again_name(&spec.name),
            image: spec.image.clone(),
            command: join_command(&words),
            working_dir: spec.working_dir.clone(),
            env: env.join("\n"),
            num_ps: spec.num_ps.to_string(),
            num_trainers: spec.num_trainers.to_string(),
            ps_cpu: spec.ps.cpu.clone(),
            ps_memory: spec.ps.memory.clone(),
            trainer_cpu: spec.trainer.cpu.clone(),
            trainer_memory: spec.trainer.memory.clone(),
            trainer_gpu: spec.trainer.gpu.to_string(),
            datasets: spec.datasets.join(", "),
            models: spec.models.join(", "),
            environment: spec.environment.clone().unwrap_or_default(),
            priority: spec.priority.as_str().to_owned(),
            max_runtime: spec.max_runtime.clone().unwrap_or_default(),
            secrets: super::secrets::secret_uses_text(&spec.secrets),
        }
    }

    /// The dialog's starting values.
    pub fn example() -> Self {
        Self {
            name: String::new(),
            image: "paddlepaddle/paddle:2.6.1".into(),
            command: "python train.py".into(),
            working_dir: String::new(),
            env: String::new(),
            num_ps: "1".into(),
            num_trainers: "2".into(),
            ps_cpu: "1".into(),
            ps_memory: "1Gi".into(),
            trainer_cpu: "2".into(),
            trainer_memory: "4Gi".into(),
            trainer_gpu: "0".into(),
            datasets: String::new(),
            models: String::new(),
            environment: String::new(),
            priority: String::new(),
            max_runtime: String::new(),
            secrets: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_filled_from_a_job_submits_the_same_job_under_the_next_name() {
        let mut form = JobForm::example();
        form.name = "fit".into();
        form.command = "python train.py --note 'two words'".into();
        form.env = "A=1\nB=x=y".into();
        form.datasets = "mnist, team/cifar".into();
        form.trainer_gpu = "1".into();
        let spec = form.to_spec().unwrap();
        let again = JobForm::again(&spec);
        assert_eq!(again.name, "fit-2");
        let mut respec = again.to_spec().unwrap();
        respec.name = "fit".into();
        assert_eq!(respec, spec);
    }

    #[test]
    fn a_form_becomes_a_spec_with_env_and_counts() {
        let mut form = JobForm::example();
        form.name = " mnist ".into();
        form.env = "A=1\n# comment\nB = two=2\n".into();
        let spec = form.to_spec().unwrap();
        assert_eq!(spec.name, "mnist");
        assert_eq!(spec.command, ["python", "train.py"]);
        assert_eq!(spec.env.len(), 2);
        assert_eq!(
            (spec.env[1].name.as_str(), spec.env[1].value.as_str()),
            ("B", " two=2")
        );
        assert_eq!((spec.num_ps, spec.num_trainers), (1, 2));
        spec.validate().unwrap();
    }

    #[test]
    fn bad_counts_and_env_lines_name_their_field() {
        let mut form = JobForm::example();
        form.num_trainers = "two".into();
        assert_eq!(form.to_spec().unwrap_err().field(), Some("num_trainers"));
        let mut form = JobForm::example();
        form.env = "JUSTAKEY".into();
        assert_eq!(form.to_spec().unwrap_err().field(), Some("env"));
    }
}
