//! What every long-running workload of the local executor (serving
//! instances, notebook servers, and those to come) runs with: a folder of
//! its own per account and workload, a Python, the grace period of a stop,
//! the part of the console's environment its processes inherit, the
//! machine whose room they wait for (with jobs), and the environments'
//! virtualenvs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use app::models::Account;

use super::machine::Machine;
use super::venvs::Venvs;

/// One kind of local workload's settings.
#[derive(Clone)]
pub struct WorkloadHost {
    /// `<data>/<kind>`: `<root>/<account>/<name>` is a workload's folder.
    pub root: PathBuf,
    /// The Python that runs the kind's default server.
    pub python: String,
    /// SIGTERM → SIGKILL.
    pub grace: Duration,
    /// What its processes inherit of the console's environment.
    pub inherited_env: Arc<[(String, String)]>,
    /// The room its processes wait for, shared with jobs.
    pub machine: Arc<Machine>,
    /// The virtualenvs of environments it runs in.
    pub venvs: Arc<Venvs>,
}

impl WorkloadHost {
    /// Workloads of one kind under `<data_dir>/<kind>`, run as described
    /// on [`WorkloadHost`]'s fields.
    pub fn new(
        data_dir: &Path,
        kind: &str,
        python: String,
        grace: Duration,
        inherited_env: Arc<[(String, String)]>,
        machine: Arc<Machine>,
        venvs: Arc<Venvs>,
    ) -> Self {
        Self {
            root: data_dir.join(kind),
            python,
            grace,
            inherited_env,
            machine,
            venvs,
        }
    }

    /// Workload `name`'s folder in `account`.
    pub fn dir(&self, account: &Account, name: &str) -> PathBuf {
        self.root.join(&account.name).join(name)
    }
}
