//! Distributed training jobs: parameter servers and trainers, and the
//! replicas ("pods") that run them.

use serde::{Deserialize, Serialize};

pub use super::names::{validate_job_name, MAX_JOB_NAME_LEN};
use super::priority::Priority;
use super::quantity::{parse_cpu_millis, parse_memory_bytes};
use crate::error::AppError;

/// Most replicas of one role; a guard against typos like 1000 trainers.
pub const MAX_REPLICAS: u32 = 256;

/// The two roles of a PaddlePaddle parameter-server job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum JobRole {
    /// Holds the parameters (`TRAINING_ROLE=PSERVER`).
    Pserver,
    /// Computes gradients (`TRAINING_ROLE=TRAINER`).
    Trainer,
}

impl JobRole {
    /// Short name used in pod names: `ps-0`, `trainer-3`.
    pub fn pod_prefix(self) -> &'static str {
        match self {
            JobRole::Pserver => "ps",
            JobRole::Trainer => "trainer",
        }
    }

    /// The value of `TRAINING_ROLE` Paddle's launcher expects.
    pub fn training_role(self) -> &'static str {
        match self {
            JobRole::Pserver => "PSERVER",
            JobRole::Trainer => "TRAINER",
        }
    }

    /// Stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            JobRole::Pserver => "pserver",
            JobRole::Trainer => "trainer",
        }
    }

    /// Reads the stored form back.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pserver" => Some(JobRole::Pserver),
            "trainer" => Some(JobRole::Trainer),
            _ => None,
        }
    }
}

/// What one replica of a role asks for, as Kubernetes quantities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ReplicaResources {
    /// CPU, e.g. `500m` or `2`.
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^([0-9]{1,9}m|[0-9]{1,6}(\.[0-9]{1,3})?)$")
    )]
    pub cpu: String,
    /// Memory, e.g. `4Gi`.
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^[0-9]{1,5}(\.[0-9]{1,3})?(Ki|Mi|Gi|Ti|k|K|M|G|T)?$")
    )]
    pub memory: String,
    /// Whole GPUs.
    #[serde(default)]
    pub gpu: u32,
}

impl Default for ReplicaResources {
    fn default() -> Self {
        Self {
            cpu: "1".into(),
            memory: "1Gi".into(),
            gpu: 0,
        }
    }
}

/// Resources in numbers, for totals and quota checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ResourceTotals {
    /// Millicores.
    pub cpu_millis: u64,
    /// Bytes.
    pub memory_bytes: u64,
    /// GPUs.
    pub gpu: u64,
}

impl ResourceTotals {
    /// Whether every amount of `self` is within `have`'s.
    pub fn fits_in(&self, have: &ResourceTotals) -> bool {
        self.cpu_millis <= have.cpu_millis
            && self.memory_bytes <= have.memory_bytes
            && self.gpu <= have.gpu
    }

    /// `self` less `other`, each amount at least 0.
    pub fn minus(self, other: ResourceTotals) -> Self {
        Self {
            cpu_millis: self.cpu_millis.saturating_sub(other.cpu_millis),
            memory_bytes: self.memory_bytes.saturating_sub(other.memory_bytes),
            gpu: self.gpu.saturating_sub(other.gpu),
        }
    }

    /// `self` plus `n` times `r` (a role's replicas, or jobs' totals with
    /// `n = 1`), each amount at most `u64::MAX`: more than any quota or
    /// machine, so it is refused as such rather than wrapped round.
    pub fn add_times(self, r: ResourceTotals, n: u32) -> Self {
        let n = u64::from(n);
        let add = |a: u64, b: u64| a.saturating_add(b.saturating_mul(n));
        Self {
            cpu_millis: add(self.cpu_millis, r.cpu_millis),
            memory_bytes: add(self.memory_bytes, r.memory_bytes),
            gpu: add(self.gpu, r.gpu),
        }
    }

    /// `self` plus `n` times `r`, or the amount (`"cpu"`, `"memory"`,
    /// `"gpu"`) that does not fit in a `u64`.
    pub fn checked_add_times(self, r: ResourceTotals, n: u32) -> Result<Self, &'static str> {
        let n = u64::from(n);
        let add =
            |a: u64, b: u64, what| b.checked_mul(n).and_then(|b| a.checked_add(b)).ok_or(what);
        Ok(Self {
            cpu_millis: add(self.cpu_millis, r.cpu_millis, "cpu")?,
            memory_bytes: add(self.memory_bytes, r.memory_bytes, "memory")?,
            gpu: add(self.gpu, r.gpu, "gpu")?,
        })
    }
}

impl ReplicaResources {
    /// Parses the quantities; `role` names the form fields (`ps` or `trainer`).
    pub fn totals(&self, role: &str) -> Result<ResourceTotals, AppError> {
        Ok(ResourceTotals {
            cpu_millis: parse_cpu_millis(&format!("{role}.cpu"), &self.cpu)?,
            memory_bytes: parse_memory_bytes(&format!("{role}.memory"), &self.memory)?,
            gpu: u64::from(self.gpu),
        })
    }
}

/// One environment variable for every replica.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct EnvVar {
    /// Name, e.g. `FLAGS_rpc_deadline`.
    #[cfg_attr(feature = "ssr", schema(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$"))]
    pub name: String,
    /// Value.
    pub value: String,
}

/// What a user submits: the design's
/// `create_cloud_job(name, num_trainer, mem_per_trainer, gpu_per_trainer,
/// cpu_per_trainer, num_ps, mem_per_ps, cpu_per_ps)` plus the program to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct JobSpec {
    /// DNS-1123 label, unique in the account.
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^[a-z]([a-z0-9-]{0,48}[a-z0-9])?$")
    )]
    pub name: String,
    /// Container image (used on Kubernetes; recorded for local runs).
    #[serde(default)]
    pub image: String,
    /// Program and its arguments, e.g. `["python", "train.py"]`; a submission
    /// needs a program (a job the console only records may have none).
    pub command: Vec<String>,
    /// More arguments appended to `command`.
    #[serde(default)]
    pub args: Vec<String>,
    /// Working directory, relative to the job's directory (empty: the job's directory).
    #[serde(default)]
    pub working_dir: String,
    /// Extra environment for every replica.
    #[serde(default)]
    pub env: Vec<EnvVar>,
    /// Parameter servers (0 for collective/trainer-only jobs).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(maximum = 256))]
    pub num_ps: u32,
    /// Trainers (at least 1).
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 256))]
    pub num_trainers: u32,
    /// Per parameter server.
    #[serde(default)]
    pub ps: ReplicaResources,
    /// Per trainer.
    #[serde(default)]
    pub trainer: ReplicaResources,
    /// Datasets the job reads: names of the account's own, or `owner/name`
    /// of one shared with it or public; `:N` reads a saved version (it
    /// never changes), without it the working files. Each replica finds
    /// them through `PADDLE_DATASET_DIR` (the first) and
    /// `PADDLE_DATASET_DIR_<NAME>`.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(max_items = 20))]
    pub datasets: Vec<String>,
    /// Model versions the job reads: `name`, `owner/name`, either with
    /// `:version` (none: the newest ready one). The console records the
    /// exact version it took (`owner/name:version`). Each replica finds
    /// them through `PADDLE_MODEL_DIR` (the first) and
    /// `PADDLE_MODEL_DIR_<NAME>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ssr", schema(max_items = 20))]
    pub models: Vec<String>,
    /// The notebook it was submitted from (with that notebook's key). Set
    /// by the console from the credential, never from what a client sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notebook: Option<String>,
    /// The template version and values it was made from. Set by the
    /// console when it runs a template, never from what a client sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<crate::models::job_origin::TemplateUse>,
    /// The pipeline run and node it is a try of. Set by the console's
    /// scheduler, never from what a client sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<crate::models::job_origin::PipelineUse>,
    /// The experiment and trial it is. Set by the console's experiment
    /// controller, never from what a client sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<crate::models::job_origin::ExperimentUse>,
    /// The notebook file version it runs and the values given. Set by the
    /// console when it runs a notebook, never from what a client sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notebook_run: Option<crate::models::job_origin::NotebookRunUse>,
    /// The batch scoring it is a try of. Set by the console when it starts
    /// or retries one, never from what a client sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scoring: Option<crate::models::job_origin::ScoringUse>,
    /// The environment it runs in: `name` (the account's own), `owner/name`
    /// (a published one), either with `:version`. The console records the
    /// exact version it took (`owner/name:version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// What that environment holds, as the console resolved it. Set by the
    /// console, never from what a client sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_use: Option<crate::models::environments::EnvironmentUse>,
    /// How urgent it is among the account's own waiting work (`low`,
    /// `normal`, `high`); `high` is for owners and the members they allow.
    /// Between accounts, fair share decides (see `models::queue`).
    #[serde(default, skip_serializing_if = "Priority::is_normal")]
    pub priority: Priority,
    /// Its time limit once running, e.g. `90m`, `2h`, `1d` (`s`, `m`, `h`,
    /// `d`): past it the job is stopped and fails, and until then the
    /// queue counts on its room coming back by then (its estimated starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ssr", schema(pattern = r"^[0-9]{1,7}[smhd]$"))]
    pub max_runtime: Option<String>,
    /// The account's secrets its replicas get, by name: each as an
    /// environment variable or a file (see `models::secrets`). The spec
    /// holds names only; values are read when a replica starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ssr", schema(max_items = 20))]
    pub secrets: Vec<crate::models::secrets::SecretUse>,
}

/// The longest time limit a job may have: thirty days.
pub const MAX_RUNTIME_SECONDS: u64 = 30 * 24 * 3600;

/// Seconds in a time limit as a spec writes it (`90m`, `2h`, `45s`, `1d`),
/// or why not (the error names `field`).
pub fn parse_runtime(field: &str, raw: &str) -> Result<u64, AppError> {
    let raw = raw.trim();
    let bad = || {
        AppError::invalid(
            field,
            format!(
                "“{raw}” is not a time limit: say a whole number and s, m, h or d, e.g. 90m or 2h."
            ),
        )
    };
    let (number, unit) = raw.split_at(raw.len().saturating_sub(1));
    let unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    if number.is_empty() || number.len() > 7 || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let seconds = number.parse::<u64>().map_err(|_| bad())? * unit;
    if seconds == 0 || seconds > MAX_RUNTIME_SECONDS {
        return Err(AppError::invalid(
            field,
            "A time limit is at least 1s and at most 30 days.",
        ));
    }
    Ok(seconds)
}

/// Env names the executor sets itself; a spec may not override them.
pub const RESERVED_ENV: &[&str] = &[
    "PADDLE_JOB_ID",
    "TRAINING_ROLE",
    "PADDLE_TRAINER_ID",
    "PADDLE_TRAINERS_NUM",
    "PADDLE_PSERVERS_IP_PORT_LIST",
    "PADDLE_PORT",
    "PADDLE_TRAINER_ENDPOINTS",
    "PADDLE_CURRENT_ENDPOINT",
    "POD_IP",
    "PADDLECLOUD_JOB_TOKEN",
    "PADDLECLOUD_SERVER",
    "PADDLE_DATASET_DIR",
    "PADDLE_MODEL_DIR",
];

impl JobSpec {
    /// Its time limit in seconds, if it has one (checked by `validate`).
    pub fn max_runtime_seconds(&self) -> Option<u64> {
        self.max_runtime
            .as_deref()
            .and_then(|r| parse_runtime("max_runtime", r).ok())
    }

    /// The GPUs its replicas ask for, all together.
    pub fn gpus(&self) -> u32 {
        self.num_ps * self.ps.gpu + self.num_trainers * self.trainer.gpu
    }

    /// The pods it asks for, with their role and index: `ps-0..`, then
    /// `trainer-0..`. Every backend and the job's record name them so.
    pub fn pod_names(&self) -> Vec<(String, JobRole, u32)> {
        let role = |role: JobRole, n: u32| {
            (0..n).map(move |i| (format!("{}-{i}", role.pod_prefix()), role, i))
        };
        role(JobRole::Pserver, self.num_ps)
            .chain(role(JobRole::Trainer, self.num_trainers))
            .collect()
    }

    /// The spec of a job the console records but does not run (an MLflow
    /// run, a local run): a name, what ran, where, and its trainer pods.
    pub fn recorded(
        name: &str,
        command: Vec<String>,
        working_dir: String,
        num_trainers: u32,
    ) -> Self {
        Self {
            notebook: None,
            template: None,
            pipeline: None,
            experiment: None,
            notebook_run: None,
            scoring: None,
            environment: None,
            environment_use: None,
            priority: Priority::Normal,
            max_runtime: None,
            secrets: vec![],
            name: name.to_owned(),
            image: String::new(),
            command,
            args: vec![],
            working_dir,
            env: vec![],
            num_ps: 0,
            num_trainers,
            ps: ReplicaResources::default(),
            trainer: ReplicaResources::default(),
            datasets: vec![],
            models: vec![],
        }
    }

    /// What its Python needs besides its environment's requirements: for a
    /// notebook run, papermill and a kernel (both backends add them).
    pub fn extra_requirements(&self) -> &'static [&'static str] {
        if self.notebook_run.is_some() {
            crate::models::job_origin::NOTEBOOK_RUN_EXTRAS
        } else {
            &[]
        }
    }

    /// Checks every field; the error names the field at fault.
    pub fn validate(&self) -> Result<(), AppError> {
        validate_job_name(&self.name)?;
        if self.command.is_empty() || self.command[0].trim().is_empty() {
            return Err(AppError::invalid(
                "command",
                "Give the program to run, e.g. python train.py.",
            ));
        }
        if self.num_trainers == 0 {
            return Err(AppError::invalid(
                "num_trainers",
                "A job needs at least one trainer.",
            ));
        }
        if self.num_trainers > MAX_REPLICAS {
            return Err(AppError::invalid(
                "num_trainers",
                format!("At most {MAX_REPLICAS} trainers."),
            ));
        }
        if self.num_ps > MAX_REPLICAS {
            return Err(AppError::invalid(
                "num_ps",
                format!("At most {MAX_REPLICAS} parameter servers."),
            ));
        }
        if self.working_dir.starts_with('/') || self.working_dir.split('/').any(|part| part == "..")
        {
            return Err(AppError::invalid(
                "working_dir",
                "The working directory must be a relative path inside the job's directory.",
            ));
        }
        if let Some(limit) = &self.max_runtime {
            parse_runtime("max_runtime", limit)?;
        }
        validate_env(&self.env, |name| {
            RESERVED_ENV.contains(&name)
                || name.starts_with("PADDLE_DATASET_DIR_")
                || name.starts_with("PADDLE_MODEL_DIR_")
        })?;
        crate::models::secrets::validate_secret_uses(&self.secrets, |name| {
            RESERVED_ENV.contains(&name)
                || self.env.iter().any(|e| e.name == name)
                || name.starts_with("PADDLE_DATASET_DIR_")
                || name.starts_with("PADDLE_MODEL_DIR_")
                || name.starts_with("PADDLECLOUD_")
        })?;
        if self.datasets.len() > 20 {
            return Err(AppError::invalid(
                "datasets",
                "A job reads at most 20 datasets.",
            ));
        }
        for d in &self.datasets {
            let (owner, name, _) = split_dataset(d)?;
            let owner = owner.unwrap_or("");
            if !owner.is_empty() {
                crate::models::validate_account_name(owner).map_err(|_| {
                    AppError::invalid(
                        "datasets",
                        format!("“{d}” is not a dataset: use name or owner/name, with :N for a saved version."),
                    )
                })?;
            }
            crate::models::validate_asset_name(name).map_err(|_| {
                AppError::invalid(
                    "datasets",
                    format!("“{d}” is not a dataset: use name or owner/name, with :N for a saved version."),
                )
            })?;
        }
        if self.models.len() > 20 {
            return Err(AppError::invalid(
                "models",
                "A job reads at most 20 models.",
            ));
        }
        for m in &self.models {
            crate::models::ModelRef::parse(m, "models")?;
        }
        self.totals().map(|_| ())
    }

    /// What the whole job asks for; an amount too large to count (say 256
    /// trainers of 900000Ti) is refused naming the field, never wrapped.
    pub fn totals(&self) -> Result<ResourceTotals, AppError> {
        let too_much = |role: &str, what: &str| {
            AppError::invalid(
                format!("{role}.{what}"),
                format!("The job's replicas together ask for more {what} than can be counted."),
            )
        };
        let ps = self.ps.totals("ps")?;
        let trainer = self.trainer.totals("trainer")?;
        ResourceTotals::default()
            .checked_add_times(ps, self.num_ps)
            .map_err(|what| too_much("ps", what))?
            .checked_add_times(trainer, self.num_trainers)
            .map_err(|what| too_much("trainer", what))
    }

    /// The full argument vector: `command` then `args`.
    pub fn argv(&self) -> Vec<String> {
        self.command.iter().chain(&self.args).cloned().collect()
    }
}

/// Checks extra environment variables: valid names, none that PaddleCloud
/// sets itself (`reserved`).
pub fn validate_env(env: &[EnvVar], reserved: impl Fn(&str) -> bool) -> Result<(), AppError> {
    for var in env {
        let ok = !var.name.is_empty()
            && !var.name.as_bytes()[0].is_ascii_digit()
            && var
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ok {
            return Err(AppError::invalid(
                "env",
                format!("“{}” is not a valid environment variable name.", var.name),
            ));
        }
        if reserved(&var.name) {
            return Err(AppError::invalid(
                "env",
                format!("{} is set by PaddleCloud for each replica.", var.name),
            ));
        }
    }
    Ok(())
}

/// The variable that holds a dataset's folder for a replica or a notebook:
/// `PADDLE_DATASET_DIR_<NAME>`, the name (`mnist` or `owner/mnist`) in
/// capitals with anything but letters and digits as `_`.
pub fn dataset_dir_variable(name: &str) -> String {
    dir_variable("PADDLE_DATASET_DIR", name)
}

/// A dataset as a job names it: `name`, `owner/name`, either with `:N`
/// for a saved version (none: the working files). Returns the owner (if
/// named), the name and the version; the names' spelling is checked by the
/// caller ([`crate::models::JobSpec`]'s validation).
pub fn split_dataset(raw: &str) -> Result<(Option<&str>, &str, Option<u32>), AppError> {
    let (path, version) = match raw.rsplit_once(':') {
        Some((path, v)) => {
            let n = v.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                AppError::invalid(
                    "datasets",
                    format!("“{raw}”: a dataset's version is a number from 1, as in mnist:3."),
                )
            })?;
            (path, Some(n))
        }
        None => (raw, None),
    };
    let (owner, name) = match path.split_once('/') {
        Some((owner, name)) => (Some(owner), name),
        None => (None, path),
    };
    Ok((owner, name, version))
}

/// The variable that holds a model version's folder for a replica:
/// `PADDLE_MODEL_DIR_<NAME>`, spelled like [`dataset_dir_variable`].
pub fn model_dir_variable(name: &str) -> String {
    dir_variable("PADDLE_MODEL_DIR", name)
}

fn dir_variable(prefix: &str, name: &str) -> String {
    let key: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{prefix}_{key}")
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum JobStatus {
    /// Accepted; replicas are starting.
    Pending,
    /// Every replica has started.
    Running,
    /// Every trainer exited 0.
    Succeeded,
    /// A replica failed, or the job could not run.
    Failed,
    /// Stopped by a user.
    Stopped,
    /// A local run whose machine stopped reporting (no heartbeat within
    /// the window): it may have crashed, lost power or the network.
    Lost,
}

impl JobStatus {
    /// All statuses, in the order filters list them.
    pub const ALL: [JobStatus; 6] = [
        JobStatus::Pending,
        JobStatus::Running,
        JobStatus::Succeeded,
        JobStatus::Failed,
        JobStatus::Stopped,
        JobStatus::Lost,
    ];

    /// Stored and URL form.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pending => "pending",
            JobStatus::Running => "running",
            JobStatus::Succeeded => "succeeded",
            JobStatus::Failed => "failed",
            JobStatus::Stopped => "stopped",
            JobStatus::Lost => "lost",
        }
    }

    /// Reads the stored form back.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Whether the job can still change by itself.
    pub fn is_active(self) -> bool {
        matches!(self, JobStatus::Pending | JobStatus::Running)
    }

    /// Capitalised for display.
    pub fn label(self) -> &'static str {
        match self {
            JobStatus::Pending => "Pending",
            JobStatus::Running => "Running",
            JobStatus::Succeeded => "Succeeded",
            JobStatus::Failed => "Failed",
            JobStatus::Stopped => "Stopped",
            JobStatus::Lost => "Lost",
        }
    }
}

/// Where a replica is in its life (named like Kubernetes pod phases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum PodPhase {
    /// Not started yet.
    Pending,
    /// Its process runs.
    Running,
    /// Exited 0.
    Succeeded,
    /// Exited non-zero, was killed, or could not start.
    Failed,
    /// Ended by a stop.
    Stopped,
}

impl PodPhase {
    /// Stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            PodPhase::Pending => "pending",
            PodPhase::Running => "running",
            PodPhase::Succeeded => "succeeded",
            PodPhase::Failed => "failed",
            PodPhase::Stopped => "stopped",
        }
    }

    /// Reads the stored form back.
    pub fn parse(s: &str) -> Option<Self> {
        [
            PodPhase::Pending,
            PodPhase::Running,
            PodPhase::Succeeded,
            PodPhase::Failed,
            PodPhase::Stopped,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
    }

    /// Whether the replica has ended.
    pub fn is_finished(self) -> bool {
        !matches!(self, PodPhase::Pending | PodPhase::Running)
    }
}

/// One replica of a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Pod {
    /// `ps-0`, `trainer-2`.
    pub name: String,
    /// Its role.
    pub role: JobRole,
    /// Index within the role.
    pub index: u32,
    /// Its phase.
    pub phase: PodPhase,
    /// Exit code once it exited by itself.
    pub exit_code: Option<i32>,
    /// When it started, Unix ms.
    pub started_at: Option<i64>,
    /// When it ended, Unix ms.
    pub finished_at: Option<i64>,
    /// Why it is in this phase, when that is not obvious.
    pub message: String,
    /// The GPUs (indices) the local executor gave it; empty on Kubernetes,
    /// where the device plugin chooses.
    #[serde(default)]
    pub gpus: Vec<u32>,
}

/// Replicas of one role: how many run, of how many.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RoleCounts {
    /// Running now.
    pub ready: u32,
    /// Asked for.
    pub total: u32,
    /// Exited 0.
    pub succeeded: u32,
    /// Failed.
    pub failed: u32,
}

/// A job as the table and the API show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Job {
    /// Unique in the account.
    pub name: String,
    /// What was submitted.
    pub spec: JobSpec,
    /// Where it is in its life.
    pub status: JobStatus,
    /// Where it ran: `local` or a cluster's name.
    pub cluster: String,
    /// When it was submitted, Unix ms.
    pub created_at: i64,
    /// When its first replica started.
    pub started_at: Option<i64>,
    /// When it ended.
    pub finished_at: Option<i64>,
    /// Parameter servers.
    pub ps: RoleCounts,
    /// Trainers.
    pub trainers: RoleCounts,
    /// Why it ended, when it did not succeed.
    pub message: String,
    /// Who ran it: the console's executor, or an MLflow client that logged it.
    #[serde(default)]
    pub source: JobSource,
    /// The machine a local run ran on.
    #[serde(default)]
    pub ran_on: Option<String>,
    /// Since when (Unix ms, its last sign of life) a running job has been
    /// stalled: no log line, metric point or CPU use for the console's
    /// `--stall-minutes` (see [`crate::models::stalls`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled_since: Option<i64>,
    /// Since when (Unix ms) the GPUs a running job holds have stayed under
    /// 5% utilisation (see [`crate::models::stalls`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_idle_since: Option<i64>,
}

/// How a job came to be in the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum JobSource {
    /// Submitted to the console, which runs its replicas.
    #[default]
    Console,
    /// An MLflow run logged to the console's tracking API; it ran wherever
    /// its client ran, and the console only records it.
    Mlflow,
    /// A local run (`paddlecloud.run()`, `paddlecloud run -- …`): it ran on
    /// someone's machine, which reported its log, metrics and end.
    Local,
}

impl JobSource {
    /// Every source, in the order filters list them.
    pub const ALL: [JobSource; 3] = [JobSource::Console, JobSource::Local, JobSource::Mlflow];

    /// Stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            JobSource::Console => "console",
            JobSource::Mlflow => "mlflow",
            JobSource::Local => "local",
        }
    }

    /// How the job table's filter names it.
    pub fn label(self) -> &'static str {
        match self {
            JobSource::Console => "Run by the console",
            JobSource::Local => "Local runs",
            JobSource::Mlflow => "MLflow runs",
        }
    }

    /// Reads the stored form back.
    pub fn parse(s: &str) -> Self {
        match s {
            "mlflow" => JobSource::Mlflow,
            "local" => JobSource::Local,
            _ => JobSource::Console,
        }
    }
}

impl Job {
    /// Since when it has been stalled, while it runs (a job that ended
    /// keeps its last mark for the record, but is no longer stalled).
    pub fn stalled(&self) -> Option<i64> {
        self.stalled_since
            .filter(|_| self.status == JobStatus::Running)
    }

    /// Since when its GPUs have been idle, while it runs.
    pub fn gpus_idle(&self) -> Option<i64> {
        self.gpus_idle_since
            .filter(|_| self.status == JobStatus::Running)
    }

    /// The GPUs its replicas ask for, all together.
    pub fn gpus_held(&self) -> u32 {
        self.spec.gpus()
    }

    /// Replicas that exited 0.
    pub fn succeeded(&self) -> u32 {
        self.ps.succeeded + self.trainers.succeeded
    }

    /// Replicas that failed.
    pub fn failed(&self) -> u32 {
        self.ps.failed + self.trainers.failed
    }
}

/// What the log console shows first: the job's pods, which one is
/// selected, and the tail of its log (one round trip, one resource).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogView {
    /// The job's replicas.
    pub pods: Vec<Pod>,
    /// The selected pod (the asked-for one, else the first).
    pub pod: Option<String>,
    /// The last lines of its log, with timestamps.
    pub tail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn spec() -> JobSpec {
        JobSpec {
            priority: Default::default(),
            max_runtime: None,
            secrets: vec![],
            notebook: None,
            template: None,
            pipeline: None,
            experiment: None,
            notebook_run: None,
            scoring: None,
            environment: None,
            environment_use: None,
            name: "mnist".into(),
            image: "paddlepaddle/paddle:2.6.1".into(),
            command: vec!["python".into(), "train.py".into()],
            args: vec![],
            working_dir: String::new(),
            env: vec![],
            num_ps: 2,
            num_trainers: 3,
            ps: ReplicaResources {
                cpu: "500m".into(),
                memory: "1Gi".into(),
                gpu: 0,
            },
            trainer: ReplicaResources {
                cpu: "2".into(),
                memory: "4Gi".into(),
                gpu: 1,
            },
            datasets: vec![],
            models: vec![],
        }
    }

    #[test]
    fn totals_add_every_replica_of_both_roles() {
        let t = spec().totals().unwrap();
        assert_eq!(t.cpu_millis, 2 * 500 + 3 * 2000);
        assert_eq!(t.memory_bytes, (2u64 << 30) + (12u64 << 30));
        assert_eq!(t.gpu, 3);
    }

    #[test]
    fn totals_too_large_to_count_are_refused_not_wrapped() {
        // Found by fuzzing: fuzz/regressions/job_spec/totals-overflow.json.
        let mut s = spec();
        s.num_trainers = MAX_REPLICAS;
        s.trainer.memory = "900000Ti".into();
        assert_eq!(s.validate().unwrap_err().field(), Some("trainer.memory"));
        let most = ResourceTotals {
            cpu_millis: u64::MAX,
            memory_bytes: 1,
            gpu: 0,
        };
        assert_eq!(
            ResourceTotals::default().add_times(most, 2).cpu_millis,
            u64::MAX
        );
    }

    #[test]
    fn each_bad_field_is_named() {
        type Change = Box<dyn Fn(&mut JobSpec)>;
        let cases: Vec<(Change, &str)> = vec![
            (Box::new(|s| s.name = "MNIST".into()), "name"),
            (Box::new(|s| s.name = "a".repeat(51)), "name"),
            (Box::new(|s| s.name = "-x".into()), "name"),
            (Box::new(|s| s.command.clear()), "command"),
            (Box::new(|s| s.num_trainers = 0), "num_trainers"),
            (Box::new(|s| s.num_ps = 1000), "num_ps"),
            (Box::new(|s| s.trainer.cpu = "lots".into()), "trainer.cpu"),
            (Box::new(|s| s.ps.memory = "4GB".into()), "ps.memory"),
            (
                Box::new(|s| s.working_dir = "../other".into()),
                "working_dir",
            ),
            (
                Box::new(|s| {
                    s.env.push(EnvVar {
                        name: "TRAINING_ROLE".into(),
                        value: "x".into(),
                    })
                }),
                "env",
            ),
            (
                Box::new(|s| {
                    s.env.push(EnvVar {
                        name: "1BAD".into(),
                        value: "x".into(),
                    })
                }),
                "env",
            ),
        ];
        for (change, field) in cases {
            let mut s = spec();
            change(&mut s);
            assert_eq!(s.validate().unwrap_err().field(), Some(field));
        }
        assert!(spec().validate().is_ok());
    }

    #[test]
    fn statuses_round_trip_through_their_stored_form() {
        for st in JobStatus::ALL {
            assert_eq!(JobStatus::parse(st.as_str()), Some(st));
        }
        assert!(JobStatus::Running.is_active() && !JobStatus::Stopped.is_active());
    }
}
