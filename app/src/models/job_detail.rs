//! What a job's own page (`/jobs/<name>`) and `GET /api/v1/jobs/{name}/detail`
//! show beside the job's row: what happened to it and its replicas, in
//! order, and what it registered.

use serde::{Deserialize, Serialize};

use crate::models::{Job, JobSource, JobStatus, Pod, PodPhase};

/// How many history entries a page shows (the newest); a job whose reason
/// changes often keeps them all in the database.
pub const HISTORY_SHOWN: usize = 200;

/// One thing that happened to a job (`pod` `None`) or to one of its
/// replicas: it moved to `state` (a job status or a pod phase), or gave a
/// new reason while in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct JobHistoryEntry {
    /// When, Unix ms.
    pub at: i64,
    /// The replica (`trainer-0`), or `None` for the job itself.
    pub pod: Option<String>,
    /// `pending`, `running`, `succeeded`, `failed`, `stopped`, `lost`.
    pub state: String,
    /// Why, as the executor or the cluster said it (may be empty).
    pub message: String,
    /// A replica's exit code, once it has one.
    pub exit_code: Option<i32>,
}

impl JobHistoryEntry {
    /// What a person reads in the timeline: "Running", "trainer-0
    /// failed (exit 1)", "Pending".
    pub fn headline(&self) -> String {
        match &self.pod {
            None => JobStatus::parse(&self.state)
                .map_or_else(|| self.state.clone(), |s| s.label().to_owned()),
            Some(pod) => {
                let phase = PodPhase::parse(&self.state)
                    .map_or_else(|| self.state.clone(), |p| p.as_str().to_owned());
                match self.exit_code {
                    Some(code)
                        if !matches!(PodPhase::parse(&self.state), Some(PodPhase::Running)) =>
                    {
                        format!("{pod} {phase} (exit {code})")
                    }
                    _ => format!("{pod} {phase}"),
                }
            }
        }
    }

    /// Whether it says something went wrong (drawn in the error colour).
    pub fn is_bad(&self) -> bool {
        matches!(self.state.as_str(), "failed" | "lost")
    }
}

/// A model version a job registered (its `job` is the job's name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RegisteredVersion {
    /// The model's owner (the job's account).
    pub owner: String,
    /// The model.
    pub name: String,
    /// Its version.
    pub version: u32,
    /// `uploading` or `ready`.
    pub state: String,
    /// When it was registered, Unix ms.
    pub created_at: i64,
}

impl RegisteredVersion {
    /// `owner/name:version`, as jobs and templates name it.
    pub fn reference(&self) -> String {
        format!("{}/{}:{}", self.owner, self.name, self.version)
    }

    /// Its model's page, at this version.
    pub fn href(&self) -> String {
        format!(
            "/models/{}/{}?version={}",
            self.owner, self.name, self.version
        )
    }
}

/// A job with everything its page shows beside the row: its replicas,
/// what happened, oldest first, and what it registered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct JobDetail {
    /// The account the job belongs to (its datasets without an owner are
    /// this account's).
    pub owner: String,
    /// The job's row.
    pub job: Job,
    /// Its replicas.
    pub pods: Vec<Pod>,
    /// What happened, oldest first (at most [`HISTORY_SHOWN`], the newest).
    pub history: Vec<JobHistoryEntry>,
    /// The model versions it registered, newest first.
    pub registered: Vec<RegisteredVersion>,
    /// For a notebook run: how far its executed notebook got (once its
    /// replica sent it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notebook_run: Option<crate::models::NotebookRunReport>,
    /// For a batch scoring job: how many of its input files are scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scoring: Option<crate::models::ScoringProgress>,
    /// Its metric alerts, open first (see `/alerts`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alerts: Vec<crate::models::Alert>,
    /// The server's clock when it read them, Unix ms (how long a running
    /// job has run is counted from it).
    pub now: i64,
}

impl JobDetail {
    /// The timeline to show: the history, or for a job older than it (run
    /// before the console kept one) what its row still says: when it was
    /// submitted, started and ended.
    pub fn timeline(&self) -> Vec<JobHistoryEntry> {
        if !self.history.is_empty() {
            return self.history.clone();
        }
        let job = &self.job;
        let entry = |at: i64, state: JobStatus, message: &str| JobHistoryEntry {
            at,
            pod: None,
            state: state.as_str().to_owned(),
            message: message.to_owned(),
            exit_code: None,
        };
        let mut out = vec![entry(job.created_at, JobStatus::Pending, "")];
        if let Some(at) = job.started_at {
            out.push(entry(at, JobStatus::Running, ""));
        }
        if let Some(at) = job.finished_at {
            out.push(entry(at, job.status, &job.message));
        }
        out
    }

    /// How long it ran (or has run, at `now`), Unix ms; `None` before it
    /// started.
    pub fn ran_for(&self, now: i64) -> Option<i64> {
        let started = self.job.started_at?;
        Some(self.job.finished_at.unwrap_or(now).saturating_sub(started))
    }
}

/// What `job` was made from, in words: its experiment and trial, its
/// template, pipeline node,
/// notebook, or where a local or MLflow run ran.
pub fn origin_of(job: &Job) -> String {
    if let Some(e) = &job.spec.experiment {
        return format!("experiment {} · trial {}", e.name, e.trial);
    }
    if let Some(t) = &job.spec.template {
        return format!("template {} v{}", t.name, t.version);
    }
    if let Some(p) = &job.spec.pipeline {
        return format!("pipeline {} · {}", p.run, p.node);
    }
    if let Some(s) = &job.spec.scoring {
        return format!(
            "batch scoring into {} · try {}",
            s.output_version(),
            s.attempt
        );
    }
    if let Some(r) = &job.spec.notebook_run {
        return format!(
            "notebook {} · {} (version {})",
            r.notebook, r.path, r.version
        );
    }
    if let Some(n) = &job.spec.notebook {
        return format!("notebook {n}");
    }
    match job.source {
        JobSource::Local => match job.ran_on.as_deref().filter(|h| !h.is_empty()) {
            Some(host) => format!("local run on {host}"),
            None => "local run".into(),
        },
        JobSource::Mlflow => "MLflow run".into(),
        JobSource::Console => String::new(),
    }
}

/// Where "Run again with changes" goes: a template's form with this job's
/// values, or the submit dialog filled from its spec; none for a run the
/// console only recorded (it ran elsewhere).
pub fn again_href(job: &Job) -> Option<String> {
    if let Some(t) = &job.spec.template {
        return Some(format!(
            "/templates/{}?owner={}&from={}",
            crate::models::url::encode(&t.name),
            crate::models::url::encode(&t.owner),
            crate::models::url::encode(&job.name)
        ));
    }
    if let Some(s) = &job.spec.scoring {
        return Some(crate::models::scoring_href(
            job.spec.models.first().map(String::as_str),
            Some(&s.dataset),
        ));
    }
    if let Some(r) = &job.spec.notebook_run {
        return Some(crate::models::run_href(
            &r.notebook,
            &r.path,
            Some(r.version),
            Some(&job.name),
        ));
    }
    (job.source == JobSource::Console).then(|| {
        format!(
            "/jobs?submit=1&from={}",
            crate::models::url::encode(&job.name)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pod: Option<&str>, state: &str, exit_code: Option<i32>) -> JobHistoryEntry {
        JobHistoryEntry {
            at: 0,
            pod: pod.map(str::to_owned),
            state: state.into(),
            message: String::new(),
            exit_code,
        }
    }

    #[test]
    fn a_timeline_line_names_the_replica_its_phase_and_how_it_exited() {
        assert_eq!(entry(None, "running", None).headline(), "Running");
        assert_eq!(
            entry(Some("trainer-1"), "failed", Some(3)).headline(),
            "trainer-1 failed (exit 3)"
        );
        assert_eq!(
            entry(Some("ps-0"), "running", None).headline(),
            "ps-0 running"
        );
        assert!(entry(Some("trainer-0"), "failed", Some(1)).is_bad());
        assert!(!entry(None, "succeeded", None).is_bad());
    }
}
