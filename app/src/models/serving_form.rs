//! The launch dialog's fields as a flat form (it posts with or without
//! JavaScript) and its conversion into a [`ServingSpec`].

use serde::{Deserialize, Serialize};

use super::form_text::{parse_env_lines, split_command};
use super::jobs::{ReplicaResources, ResourceTotals};
use super::serving::{Autoscale, ServingSpec};
use crate::error::AppError;

/// What the launch dialog posts: every field a string, as forms send them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServingForm {
    /// Instance name.
    pub name: String,
    /// The model, `name` or `owner/name`.
    pub model: String,
    /// Its version; empty: the newest ready one.
    #[serde(default)]
    pub version: String,
    /// A `.tar.gz` inside the version to serve instead.
    #[serde(default)]
    pub file: String,
    /// A Python serving script.
    #[serde(default)]
    pub script: String,
    /// The program instead of the default predict server.
    #[serde(default)]
    pub command: String,
    /// Container image (Kubernetes).
    #[serde(default)]
    pub image: String,
    /// The environment it runs in (`name`, `owner/name`, `:version`), or empty.
    #[serde(default)]
    pub environment: String,
    /// `KEY=VALUE` lines.
    #[serde(default)]
    pub env: String,
    /// Replicas.
    pub replicas: String,
    /// CPU per replica.
    pub cpu: String,
    /// Memory per replica.
    pub memory: String,
    /// GPUs per replica.
    #[serde(default)]
    pub gpu: String,
    /// `on` to scale with load.
    #[serde(default)]
    pub autoscale: String,
    /// Fewest replicas when autoscaling.
    #[serde(default)]
    pub min: String,
    /// Most replicas when autoscaling.
    #[serde(default)]
    pub max: String,
    /// CPU target, percent.
    #[serde(default)]
    pub cpu_percent: String,
    /// The account's secrets it uses: `VARIABLE=secret` or
    /// `file:name=secret` lines.
    #[serde(default)]
    pub secrets: String,
}

fn number(field: &str, raw: &str, what: &str) -> Result<u32, AppError> {
    raw.trim()
        .parse()
        .map_err(|_| AppError::invalid(field, format!("{what} must be a whole number.")))
}

impl ServingForm {
    /// The spec this form describes, checked; the error names the field at fault.
    pub fn to_spec(&self) -> Result<ServingSpec, AppError> {
        let replicas = number("replicas", &self.replicas, "The number of replicas")?;
        // `@alias`: the instance follows the alias (see `ServingSpec::alias`).
        let (model, version) = match self.version.trim() {
            "" => (self.model.trim().to_owned(), None),
            v if v.starts_with('@') => {
                let alias = crate::models::validate_alias(&v[1..])
                    .map_err(|e| AppError::invalid("version", e.to_string()))?;
                (format!("{}@{alias}", self.model.trim()), None)
            }
            v => (
                self.model.trim().to_owned(),
                Some(number("version", v, "The version")?),
            ),
        };
        let autoscale = if self.autoscale == "on" {
            Some(Autoscale {
                min: number("autoscale.min", &self.min, "The fewest replicas")?,
                max: number("autoscale.max", &self.max, "The most replicas")?,
                cpu_percent: number("autoscale.cpu_percent", &self.cpu_percent, "The CPU target")?,
            })
        } else {
            None
        };
        let gpu = match self.gpu.trim() {
            "" => 0,
            g => number("resources.gpu", g, "The number of GPUs")?,
        };
        let spec = ServingSpec {
            name: self.name.trim().to_owned(),
            model,
            version,
            file: self.file.trim().to_owned(),
            script: self.script.clone(),
            command: split_command(&self.command)?,
            image: self.image.trim().to_owned(),
            env: parse_env_lines(&self.env)?,
            replicas,
            resources: ReplicaResources {
                cpu: self.cpu.trim().to_owned(),
                memory: self.memory.trim().to_owned(),
                gpu,
            },
            autoscale,
            environment: crate::models::named_environment(&self.environment),
            environment_use: None,
            canary: None,
            shadow: None,
            secrets: super::secrets::parse_secret_uses(&self.secrets)?,
        };
        spec.validate()?;
        Ok(spec)
    }

    /// What the instance asks for, from the size fields alone (so the
    /// dialog shows it before the rest is filled in): replicas, per replica
    /// and in all (with autoscaling, at its upper bound).
    pub fn size(&self) -> Result<(u32, ResourceTotals, ResourceTotals), AppError> {
        let replicas = number("replicas", &self.replicas, "The number of replicas")?;
        let gpu = match self.gpu.trim() {
            "" => 0,
            g => number("resources.gpu", g, "The number of GPUs")?,
        };
        let per = ReplicaResources {
            cpu: self.cpu.trim().to_owned(),
            memory: self.memory.trim().to_owned(),
            gpu,
        }
        .totals("resources")?;
        let most = if self.autoscale == "on" {
            number("autoscale.max", &self.max, "The most replicas")?.max(replicas)
        } else {
            replicas
        };
        Ok((
            replicas,
            per,
            ResourceTotals::default().add_times(per, most),
        ))
    }

    /// The dialog's starting values.
    pub fn example() -> Self {
        Self {
            replicas: "1".into(),
            cpu: "1".into(),
            memory: "1Gi".into(),
            gpu: "0".into(),
            min: "1".into(),
            max: "4".into(),
            cpu_percent: "70".into(),
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_becomes_a_checked_spec() {
        let mut form = ServingForm::example();
        form.name = " mnist-api ".into();
        form.model = "acme/mnist".into();
        form.version = "@production".into();
        let follows = form.to_spec().unwrap();
        assert_eq!(
            (follows.model.as_str(), follows.version),
            ("acme/mnist@production", None)
        );
        form.version = "@Bad".into();
        assert_eq!(form.to_spec().unwrap_err().field(), Some("version"));
        form.version = "3".into();
        form.replicas = "2".into();
        form.env = "A=1\n".into();
        let spec = form.to_spec().unwrap();
        assert_eq!(spec.name, "mnist-api");
        assert_eq!(spec.version, Some(3));
        assert_eq!(spec.replicas, 2);
        assert!(spec.command.is_empty());
        assert!(spec.autoscale.is_none());
        assert_eq!(spec.env[0].name, "A");

        form.autoscale = "on".into();
        form.max = "x".into();
        assert_eq!(form.to_spec().unwrap_err().field(), Some("autoscale.max"));
        form.replicas = "two".into();
        assert_eq!(form.to_spec().unwrap_err().field(), Some("replicas"));
    }

    #[test]
    fn the_size_is_known_before_the_name_and_model_are() {
        let mut form = ServingForm::example();
        form.replicas = "3".into();
        form.cpu = "500m".into();
        let (n, per, total) = form.size().unwrap();
        assert_eq!((n, per.cpu_millis, total.cpu_millis), (3, 500, 1500));
        form.autoscale = "on".into();
        form.max = "5".into();
        assert_eq!(form.size().unwrap().2.cpu_millis, 2500);
        form.memory = "much".into();
        assert_eq!(form.size().unwrap_err().field(), Some("resources.memory"));
    }
}
