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
use super::venvs::{Venvs, Waited, Waiting};

/// The Python that runs one kind of workload's default server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerPython {
    /// One the operator named (`--notebook-python`, `--serving-python`):
    /// used as it is.
    Given(String),
    /// The console's own build of `requirements`, made from PyPI as an
    /// environment's is, the first time a workload needs it: what the
    /// embedded defaults serve with, so that nothing is installed by hand.
    Built {
        /// What it is, as a message names it ("JupyterLab").
        what: &'static str,
        /// What the build installs.
        requirements: Vec<String>,
    },
}

impl ServerPython {
    /// `given`, or the console's build of `what` from `requirements` when
    /// no Python is given.
    pub fn given_or_built(
        given: Option<String>,
        what: &'static str,
        requirements: Vec<String>,
    ) -> Self {
        match given {
            Some(python) => Self::Given(python),
            None => Self::Built { what, requirements },
        }
    }
}

/// One kind of local workload's settings.
#[derive(Clone)]
pub struct WorkloadHost {
    /// `<data>/<kind>`: `<root>/<account>/<name>` is a workload's folder.
    pub root: PathBuf,
    /// The Python that runs the kind's default server.
    pub python: ServerPython,
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
        python: ServerPython,
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

    /// Writes the secret files of workload `key` (e.g. `notebook-7`) where
    /// the local executor keeps them (`<data_dir>/secret-files`, cleared
    /// when the console starts); they go when the result is dropped.
    pub fn secret_files(
        &self,
        key: &str,
        files: &[(String, Vec<u8>)],
    ) -> std::io::Result<super::secret_files::SecretFiles> {
        let data_dir = self.root.parent().unwrap_or(&self.root);
        super::secret_files::SecretFiles::write(&data_dir.join("secret-files"), key, files)
    }

    /// The Python to run the kind's default server with: the given one at
    /// once, or the console's build, waited for unless `stop` turns true
    /// first (`told` hears how far the build is, as [`Venvs::wait`] says).
    pub async fn server_python<E, Told>(
        &self,
        stop: &mut tokio::sync::watch::Receiver<bool>,
        told: impl FnMut(String) -> Told,
    ) -> Result<Waited<String>, E>
    where
        Told: std::future::Future<Output = Result<(), E>>,
    {
        let (what, requirements) = match &self.python {
            ServerPython::Given(python) => return Ok(Waited::Ready(python.clone())),
            ServerPython::Built { what, requirements } => (what, requirements),
        };
        let waiting = Waiting {
            what: (*what).to_owned(),
            note: "built once on this machine, from PyPI".to_owned(),
        };
        let built = self.venvs.wait(requirements, &waiting, stop, told).await?;
        Ok(built.map(|venv| venv.join("bin").join("python").display().to_string()))
    }

    /// Workload `name`'s folder in `account`.
    pub fn dir(&self, account: &Account, name: &str) -> PathBuf {
        self.root.join(&account.name).join(name)
    }
}
