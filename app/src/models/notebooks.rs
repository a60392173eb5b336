//! Notebooks: a private JupyterLab per user, reached through the console's
//! proxy at [`Notebook::lab_path`]. What is created ([`NotebookSpec`]), what
//! the table shows ([`Notebook`]) and the dialog's fields ([`NotebookForm`]).

use serde::{Deserialize, Serialize};

use super::jobs::{ReplicaResources, ResourceTotals};
use super::names::validate_job_name;
use crate::error::AppError;

/// The longest idle timeout, minutes (a week).
pub const MAX_IDLE_MINUTES: u32 = 7 * 24 * 60;

/// What creating a notebook takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookSpec {
    /// DNS-1123 label, unique among the account's notebooks.
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^[a-z]([a-z0-9-]{0,48}[a-z0-9])?$")
    )]
    pub name: String,
    /// What its server asks for while it runs.
    #[serde(default)]
    pub resources: ReplicaResources,
    /// Stop it after this many minutes without kernel or terminal activity;
    /// `None`: the site's default (which may be never).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 10080))]
    pub idle_minutes: Option<u32>,
    /// Container image (Kubernetes); empty: the console's default.
    #[serde(default)]
    pub image: String,
    /// The environment its kernels run in (`name`, `owner/name`, either
    /// with `:version`); the console records the exact version it took.
    /// Locally the default Python kernel runs in that environment (with
    /// ipykernel added); on Kubernetes its image runs the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// What that environment holds, as the console resolved it. Set by the
    /// console, never from what a client sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_use: Option<crate::models::environments::EnvironmentUse>,
    /// The account's secrets its kernels and terminals get, by name, as
    /// variables or files (see `models::secrets`); values are read when its
    /// server starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ssr", schema(max_items = 20))]
    pub secrets: Vec<crate::models::secrets::SecretUse>,
}

impl NotebookSpec {
    /// Checks every field; the error names the field at fault.
    pub fn validate(&self) -> Result<(), AppError> {
        validate_job_name(&self.name).map_err(|e| match e {
            AppError::Invalid { message, .. } => AppError::invalid(
                "name",
                message
                    .replace("A job name", "A notebook name")
                    .replace("the job", "the notebook"),
            ),
            other => other,
        })?;
        self.totals()?;
        if let Some(m) = self.idle_minutes {
            if m == 0 || m > MAX_IDLE_MINUTES {
                return Err(AppError::invalid(
                    "idle_minutes",
                    format!(
                        "The idle timeout is 1 to {MAX_IDLE_MINUTES} minutes, or empty for never."
                    ),
                ));
            }
        }
        crate::models::secrets::validate_secret_uses(&self.secrets, |name| {
            name.starts_with("PADDLECLOUD_")
                || name.starts_with("PADDLE_DATASET_DIR")
                || matches!(
                    name,
                    "HOME" | "PYTHONPATH" | "JUPYTER_RUNTIME_DIR" | "SHELL"
                )
        })
    }

    /// What it asks for, in numbers.
    pub fn totals(&self) -> Result<ResourceTotals, AppError> {
        self.resources.totals("resources")
    }
}

/// Where a notebook is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum NotebookStatus {
    /// Waiting for room, or its server is starting.
    Pending,
    /// JupyterLab answers.
    Running,
    /// Stopped (by a user, or culled when idle); the workspace is kept.
    Stopped,
    /// Its server could not start or died; the message says why.
    Failed,
}

impl NotebookStatus {
    /// Every status.
    pub const ALL: [NotebookStatus; 4] = [
        NotebookStatus::Pending,
        NotebookStatus::Running,
        NotebookStatus::Stopped,
        NotebookStatus::Failed,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            NotebookStatus::Pending => "pending",
            NotebookStatus::Running => "running",
            NotebookStatus::Stopped => "stopped",
            NotebookStatus::Failed => "failed",
        }
    }

    /// Reads [`NotebookStatus::as_str`]'s spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Shown in the table.
    pub fn label(self) -> &'static str {
        match self {
            NotebookStatus::Pending => "Starting",
            NotebookStatus::Running => "Running",
            NotebookStatus::Stopped => "Stopped",
            NotebookStatus::Failed => "Failed",
        }
    }

    /// Whether its server runs (or is starting): it counts in the quota.
    pub fn is_active(self) -> bool {
        matches!(self, NotebookStatus::Pending | NotebookStatus::Running)
    }
}

/// One notebook as the table shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Notebook {
    /// Its name.
    pub name: String,
    /// Who created it (email): the only one who may open it.
    pub owner: String,
    /// What it was created with (idle timeout as set).
    pub spec: NotebookSpec,
    /// Where it is in its life.
    pub status: NotebookStatus,
    /// Why it stopped or failed, or what it waits for.
    pub message: String,
    /// Where it runs (`local`, or the Kubernetes cluster's name).
    pub cluster: String,
    /// Unix ms.
    pub created_at: i64,
    /// When its server last started, Unix ms.
    pub started_at: Option<i64>,
    /// The newest kernel or terminal activity seen, Unix ms (now while a
    /// kernel is busy); `None` before the first probe after a start.
    pub last_activity: Option<i64>,
    /// When idle culling stops it unless there is activity first, Unix ms.
    pub stops_at: Option<i64>,
    /// The last activity probe failed: why (culling waits for a probe
    /// that answers).
    pub probe_error: String,
    /// The account's name: the lab is at `/notebooks/<account>/<name>/lab`.
    pub account: String,
}

impl Notebook {
    /// The environment a run of one of its files takes unless the run
    /// names one: the notebook's own (the version it took), else the
    /// console's shipped Python.
    pub fn run_environment(&self) -> String {
        (self
            .spec
            .environment_use
            .as_ref()
            .map(|e| e.reference.clone()))
        .or_else(|| self.spec.environment.clone())
        .unwrap_or_else(|| crate::models::DEFAULT_RUN_ENVIRONMENT.to_owned())
    }

    /// The console's path of its JupyterLab.
    pub fn lab_path(&self) -> String {
        lab_path(&self.account, &self.name)
    }
}

/// `/notebooks/<account>/<name>/`: the base URL the notebook's server runs
/// under, so that every link it makes goes through the console.
pub fn base_path(account: &str, name: &str) -> String {
    format!("/notebooks/{account}/{name}/")
}

/// The console's path of a notebook's JupyterLab.
pub fn lab_path(account: &str, name: &str) -> String {
    format!("{}lab", base_path(account, name))
}

/// The account's notebooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookList {
    /// Newest first.
    pub notebooks: Vec<Notebook>,
    /// The server's clock, Unix ms.
    pub now: i64,
}

/// What the "New notebook" dialog posts: every field a string.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotebookForm {
    /// Notebook name.
    pub name: String,
    /// CPU, e.g. `1` or `500m`.
    pub cpu: String,
    /// Memory, e.g. `2Gi`.
    pub memory: String,
    /// GPUs.
    #[serde(default)]
    pub gpu: String,
    /// Idle timeout in minutes; empty: never (or the site's default).
    #[serde(default)]
    pub idle_minutes: String,
    /// Container image (Kubernetes).
    #[serde(default)]
    pub image: String,
    /// The environment it runs in (`name`, `owner/name`, `:version`), or empty.
    #[serde(default)]
    pub environment: String,
    /// The account's secrets it uses: `VARIABLE=secret` or
    /// `file:name=secret` lines.
    #[serde(default)]
    pub secrets: String,
}

impl NotebookForm {
    /// What the dialog shows first.
    pub fn example() -> Self {
        Self {
            name: String::new(),
            cpu: "1".into(),
            memory: "2Gi".into(),
            gpu: "0".into(),
            idle_minutes: String::new(),
            image: String::new(),
            environment: String::new(),
            secrets: String::new(),
        }
    }

    /// The spec the fields describe; the error names the field at fault.
    pub fn to_spec(&self) -> Result<NotebookSpec, AppError> {
        let gpu = match self.gpu.trim() {
            "" => 0,
            g => g
                .parse()
                .map_err(|_| AppError::invalid("gpu", "GPUs must be a whole number."))?,
        };
        let idle_minutes = match self.idle_minutes.trim() {
            "" => None,
            m => Some(m.parse().map_err(|_| {
                AppError::invalid(
                    "idle_minutes",
                    "The idle timeout must be a whole number of minutes.",
                )
            })?),
        };
        let spec = NotebookSpec {
            name: self.name.trim().to_owned(),
            resources: ReplicaResources {
                cpu: self.cpu.trim().to_owned(),
                memory: self.memory.trim().to_owned(),
                gpu,
            },
            idle_minutes,
            image: self.image.trim().to_owned(),
            environment: crate::models::named_environment(&self.environment),
            environment_use: None,
            secrets: crate::models::secrets::parse_secret_uses(&self.secrets)?,
        };
        spec.validate()?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_becomes_a_spec_and_bad_fields_are_named() {
        let mut form = NotebookForm::example();
        form.name = "scratch".into();
        form.idle_minutes = "30".into();
        let spec = form.to_spec().unwrap();
        assert_eq!(spec.idle_minutes, Some(30));
        assert_eq!(spec.totals().unwrap().cpu_millis, 1000);

        let field = |f: NotebookForm| match f.to_spec() {
            Err(AppError::Invalid { field, .. }) => field,
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert_eq!(
            field(NotebookForm {
                name: "Bad_Name".into(),
                ..form.clone()
            }),
            Some("name".into())
        );
        assert_eq!(
            field(NotebookForm {
                idle_minutes: "0".into(),
                ..form.clone()
            }),
            Some("idle_minutes".into())
        );
        assert_eq!(
            field(NotebookForm {
                idle_minutes: "soon".into(),
                ..form.clone()
            }),
            Some("idle_minutes".into())
        );
        assert_eq!(
            field(NotebookForm {
                memory: "lots".into(),
                ..form.clone()
            }),
            Some("resources.memory".into())
        );
        assert_eq!(
            field(NotebookForm {
                gpu: "-1".into(),
                ..form
            }),
            Some("gpu".into())
        );
    }

    #[test]
    fn the_lab_lives_under_the_account_and_name() {
        assert_eq!(
            lab_path("vision", "scratch"),
            "/notebooks/vision/scratch/lab"
        );
        assert_eq!(base_path("vision", "scratch"), "/notebooks/vision/scratch/");
    }
}
