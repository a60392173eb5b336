//! The kinds of long-running workloads and the rules they share: what a
//! message calls each, that a name is unique per account and kind, and
//! what asks for room in a quota. Jobs, pipeline runs, notebooks and
//! serving instances are recorded, supervised by a backend, reported on
//! and announced to live views the same way (see `server/src/backend`);
//! experiments, batch scoring and schedules are meant to join them.

use super::environments::EnvironmentUse;
use super::jobs::{JobSpec, ResourceTotals};
use super::notebooks::NotebookSpec;
use super::serving::ServingSpec;
use crate::error::AppError;

/// A kind of long-running workload. Every kind that holds room on the
/// cluster is admitted to a quota by the same rule
/// ([`super::QuotaUse::admit`]); only a job also counts against the
/// number of jobs, and a pipeline run or an experiment holds nothing
/// itself (its nodes and trials are jobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// A job (its replicas, while unfinished).
    Job,
    /// A pipeline run (its nodes are jobs of their own).
    PipelineRun,
    /// An experiment (its trials are jobs of their own).
    Experiment,
    /// A notebook's server, while it runs.
    Notebook,
    /// A serving instance's replicas, while active.
    Instance,
}

impl Workload {
    /// What quota messages call it.
    pub fn noun(self) -> &'static str {
        match self {
            Workload::Job => "job",
            Workload::PipelineRun => "pipeline run",
            Workload::Experiment => "experiment",
            Workload::Notebook => "notebook",
            Workload::Instance => "instance",
        }
    }

    /// What pages and errors call it in full.
    pub fn title(self) -> &'static str {
        match self {
            Workload::Instance => "serving instance",
            other => other.noun(),
        }
    }

    /// The conflict of a new workload whose `name` its account already
    /// uses for another of this kind.
    pub fn name_taken(self, name: &str) -> AppError {
        let title = self.title();
        let article = if title.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "An"
        } else {
            "A"
        };
        AppError::conflict(
            "name",
            format!(
                "{article} {title} named “{name}” already exists in this account. Choose another \
                 name or delete that one."
            ),
        )
    }
}

/// What the rules every workload follows need of its spec: the kind, its
/// own checks, the room it asks for while it runs, and the environment it
/// names (which the console pins to the build it will run in).
pub trait WorkloadSpec {
    /// Its kind.
    const KIND: Workload;
    /// Checks every field; the error names the field at fault.
    fn validate(&self) -> Result<(), AppError>;
    /// The room it holds while it runs, all replicas together.
    fn totals(&self) -> Result<ResourceTotals, AppError>;
    /// The environment it names (`name` or `owner/name`, optionally
    /// `:build`), and the build the console pinned it to.
    fn environment(&mut self) -> (&mut Option<String>, &mut Option<EnvironmentUse>);
}

/// One [`WorkloadSpec`] for a spec whose `validate`, `totals` and
/// `environment`/`environment_use` fields have the shared meaning.
macro_rules! workload_spec {
    ($spec:ty, $kind:expr) => {
        impl WorkloadSpec for $spec {
            const KIND: Workload = $kind;
            fn validate(&self) -> Result<(), AppError> {
                <$spec>::validate(self)
            }
            fn totals(&self) -> Result<ResourceTotals, AppError> {
                <$spec>::totals(self)
            }
            fn environment(&mut self) -> (&mut Option<String>, &mut Option<EnvironmentUse>) {
                (&mut self.environment, &mut self.environment_use)
            }
        }
    };
}

workload_spec!(JobSpec, Workload::Job);
workload_spec!(NotebookSpec, Workload::Notebook);
workload_spec!(ServingSpec, Workload::Instance);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_name_is_a_conflict_on_the_name_that_says_the_kind() {
        let err = Workload::Instance.name_taken("mnist");
        assert_eq!(err.field(), Some("name"));
        assert!(
            err.to_string()
                .starts_with("A serving instance named “mnist” already exists"),
            "{err}"
        );
        assert!(Workload::PipelineRun
            .name_taken("nightly")
            .to_string()
            .starts_with("A pipeline run named"));
        assert!(Workload::Experiment
            .name_taken("lr-search")
            .to_string()
            .starts_with("An experiment named"));
    }
}
