//! Local builds of environments: one virtualenv per distinct list of
//! requirements, under `<data-dir>/environments/<hash>/`, made with the
//! console's Python (`python -m venv`) and filled by pip from PyPI. The
//! hash covers the requirements and the Python, so every version and
//! account that lists the same packages shares one build, and a changed
//! list is a new build. The console's Python SDK is put on the
//! environment's path (a `.pth` file) besides what it lists.
//!
//! A build is made once: a finished one has a marker file, a failed one
//! leaves its log and a line saying why next to it, and either survives a
//! restart. A failed build is tried again when something needs it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::models::{BuildState, EnvironmentBuild, EnvironmentUse};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::backend::notebooks::SDK_FILES;

/// The longest a build may take before it is stopped.
const BUILD_LIMIT: Duration = Duration::from_secs(30 * 60);
/// The most of a build's log a page shows: its end.
const LOG_TAIL: u64 = 64 * 1024;
/// Written into a finished build.
const READY: &str = ".paddlecloud-ready";
/// Beside a build's SDK: which SDK it is (a hash of its files).
const SDK_STAMP: &str = "paddlecloud-sdk/.stamp";

/// The package a requirement line names, as pip compares names
/// (`IPyKernel>=6` and `ipykernel` are one package).
fn package_name(requirement: &str) -> String {
    requirement
        .trim()
        .split(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
        .replace(['_', '.'], "-")
}

/// A hash of the SDK's files, computed once.
fn sdk_stamp() -> &'static str {
    static STAMP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    STAMP.get_or_init(|| {
        let mut h = Sha256::new();
        for (name, text) in SDK_FILES {
            h.update(name.as_bytes());
            h.update(text.as_bytes());
        }
        hex::encode(&h.finalize()[..8])
    })
}

mod progress;

pub use progress::{BuildProgress, Waited, Waiting, PROGRESS_EVERY};

/// How the environment something waits for came out: `Ready(None)` when
/// nothing named one.
pub type Prepared = Waited<Option<PathBuf>>;

/// What waiting for `environment`'s build is called in messages.
pub fn environment_waiting(environment: &EnvironmentUse) -> Waiting {
    Waiting {
        what: format!("its environment {}", environment.reference),
        note: "its build log is on the environment's page".to_owned(),
    }
}

/// The variables that put a virtualenv first: `VIRTUAL_ENV` and its
/// `bin` ahead of the inherited `PATH`.
pub fn venv_env(venv: &Path, inherited: &[(String, String)]) -> [(String, String); 2] {
    let path = super::process::inherited_path(inherited);
    [
        ("VIRTUAL_ENV".to_owned(), venv.display().to_string()),
        (
            "PATH".to_owned(),
            format!("{}:{path}", venv.join("bin").display()),
        ),
    ]
}

/// The builds on this machine.
pub struct Venvs {
    root: PathBuf,
    python: String,
    /// Builds under way, by hash: the receiver turns true when it ends.
    running: Mutex<HashMap<String, watch::Receiver<bool>>>,
}

impl Venvs {
    /// Builds under `root` with `python` (which must have `venv`).
    pub fn new(root: PathBuf, python: String) -> Arc<Self> {
        Arc::new(Self {
            root,
            python,
            running: Mutex::new(HashMap::new()),
        })
    }

    /// The build's name: a hash of the Python and the requirements.
    pub fn hash(&self, requirements: &[String]) -> String {
        let mut h = Sha256::new();
        h.update(self.python.as_bytes());
        for r in requirements {
            h.update(b"\n");
            h.update(r.trim().as_bytes());
        }
        hex::encode(&h.finalize()[..8])
    }

    /// Where the build of `requirements` is (or will be).
    pub fn dir(&self, requirements: &[String]) -> PathBuf {
        self.root.join(self.hash(requirements))
    }

    fn log_path(&self, hash: &str) -> PathBuf {
        self.root.join(format!("{hash}.log"))
    }

    fn failed_path(&self, hash: &str) -> PathBuf {
        self.root.join(format!("{hash}.failed"))
    }

    /// How far the build of `requirements` is (what a list shows: no file
    /// is read).
    pub fn state(&self, requirements: &[String]) -> BuildState {
        let hash = self.hash(requirements);
        if self.running.lock().expect("venv lock").contains_key(&hash) {
            BuildState::Building
        } else if self.root.join(&hash).join(READY).exists() {
            BuildState::Ready
        } else if self.failed_path(&hash).exists() {
            BuildState::Failed
        } else {
            BuildState::NotBuilt
        }
    }

    /// [`Venvs::state`] with why a failed build failed and the end of the
    /// build's log (what an environment's page shows).
    pub async fn report(&self, requirements: &[String]) -> EnvironmentBuild {
        let hash = self.hash(requirements);
        let state = self.state(requirements);
        let message = match state {
            BuildState::Failed => tokio::fs::read_to_string(self.failed_path(&hash))
                .await
                .map(|why| why.trim().to_owned())
                .unwrap_or_default(),
            _ => String::new(),
        };
        EnvironmentBuild {
            state,
            message,
            log: read_tail(&self.log_path(&hash)).await,
        }
    }

    /// Starts building `requirements` unless they are built or being
    /// built; returns at once.
    pub fn start(self: &Arc<Self>, requirements: &[String]) {
        let _ = self.begin(requirements);
    }

    /// The build's directory once it is ready (building it first if need
    /// be), or why it could not be built.
    pub async fn ready(self: &Arc<Self>, requirements: &[String]) -> Result<PathBuf, String> {
        let dir = self.dir(requirements);
        if let Some(mut done) = self.begin(requirements) {
            // An error: the build task is gone, which is as good as done.
            let _ = done.wait_for(|d| *d).await;
        }
        if dir.join(READY).exists() {
            // A build outlives the console that made it: it gets this
            // console's SDK (what jobs in it import) before it is used.
            self.write_sdk(&dir).await?;
            return Ok(dir);
        }
        let hash = self.hash(requirements);
        Err(tokio::fs::read_to_string(self.failed_path(&hash))
            .await
            .map(|why| why.trim().to_owned())
            .unwrap_or_else(|_| "the build did not finish".to_owned()))
    }

    /// Waits for the build of `environment`'s requirements and `extra`
    /// ones (at most one build per distinct list) unless `stop` turns true
    /// first, `told` hearing how far it is (see [`Venvs::wait`]);
    /// `Ready(None)` at once when there is no environment.
    pub async fn prepare<E, Told>(
        self: &Arc<Self>,
        environment: Option<&EnvironmentUse>,
        extra: &[&str],
        stop: &mut watch::Receiver<bool>,
        told: impl FnMut(String) -> Told,
    ) -> Result<Prepared, E>
    where
        Told: std::future::Future<Output = Result<(), E>>,
    {
        let Some(environment) = environment else {
            return Ok(Prepared::Ready(None));
        };
        let mut requirements = environment.requirements.clone();
        for wanted in extra {
            if !requirements
                .iter()
                .any(|r| package_name(r) == package_name(wanted))
            {
                requirements.push((*wanted).to_owned());
            }
        }
        let waiting = environment_waiting(environment);
        let waited = self.wait(&requirements, &waiting, stop, told).await?;
        Ok(waited.map(Some))
    }

    /// The running build's end signal, starting one if none runs and the
    /// requirements are not built; `None` when they are built.
    fn begin(self: &Arc<Self>, requirements: &[String]) -> Option<watch::Receiver<bool>> {
        let hash = self.hash(requirements);
        let mut running = self.running.lock().expect("venv lock");
        if let Some(done) = running.get(&hash) {
            return Some(done.clone());
        }
        if self.root.join(&hash).join(READY).exists() {
            return None;
        }
        let (tx, rx) = watch::channel(false);
        running.insert(hash.clone(), rx.clone());
        let this = self.clone();
        let requirements = requirements.to_vec();
        tokio::spawn(async move {
            let outcome = tokio::time::timeout(BUILD_LIMIT, this.build(&hash, &requirements))
                .await
                .unwrap_or_else(|_| {
                    Err(format!(
                        "it took longer than {} minutes",
                        BUILD_LIMIT.as_secs() / 60
                    ))
                });
            if let Err(why) = outcome {
                tracing::warn!(hash, why, "an environment build failed");
                let _ = this
                    .append_log(&hash, &format!("\nThe build failed: {why}\n"))
                    .await;
                let _ = tokio::fs::write(this.failed_path(&hash), &why).await;
            }
            this.running.lock().expect("venv lock").remove(&hash);
            let _ = tx.send(true);
        });
        Some(rx)
    }

    async fn append_log(&self, hash: &str, text: &str) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        let mut log = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path(hash))
            .await?;
        log.write_all(text.as_bytes()).await
    }

    /// Makes the virtualenv, puts the SDK on its path and installs the
    /// requirements, writing what each step says to the build's log.
    async fn build(&self, hash: &str, requirements: &[String]) -> Result<(), String> {
        let dir = self.root.join(hash);
        let io = |what: &'static str| move |e: std::io::Error| format!("{what}: {e}");
        tokio::fs::create_dir_all(&self.root)
            .await
            .map_err(io("could not make the environments folder"))?;
        // Another console sharing the folder may be building it: wait for
        // it, then use what it made.
        let _lock = self.lock(hash).await?;
        if dir.join(READY).exists() {
            return Ok(());
        }
        let _ = tokio::fs::remove_file(self.failed_path(hash)).await;
        let _ = tokio::fs::remove_dir_all(&dir).await;
        tokio::fs::write(
            self.log_path(hash),
            format!(
                "Building a Python environment with {}\nRequirements:\n{}\n\n",
                self.python,
                if requirements.is_empty() {
                    "  (none: the SDK only)".to_owned()
                } else {
                    requirements
                        .iter()
                        .map(|r| format!("  {r}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                }
            ),
        )
        .await
        .map_err(io("could not write the build log"))?;
        self.step(
            hash,
            "Making the virtualenv",
            &self.python,
            &["-m", "venv", &dir.display().to_string()],
        )
        .await?;
        let python = dir.join("bin").join("python").display().to_string();
        self.install_sdk(&dir, &python).await?;
        if !requirements.is_empty() {
            let file = dir.join("requirements.txt");
            tokio::fs::write(&file, requirements.join("\n") + "\n")
                .await
                .map_err(io("could not write requirements.txt"))?;
            let file = file.display().to_string();
            self.step(
                hash,
                "Installing the requirements from PyPI",
                &python,
                &[
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--no-input",
                    "--progress-bar",
                    "off",
                    "-r",
                    &file,
                ],
            )
            .await?;
        }
        tokio::fs::write(dir.join(READY), b"")
            .await
            .map_err(io("could not mark the build finished"))?;
        self.append_log(hash, "\nReady.\n")
            .await
            .map_err(io("could not write the build log"))?;
        tracing::info!(hash, "an environment was built");
        Ok(())
    }

    /// Holds `<hash>.lock` until dropped, so that one process builds a hash
    /// at a time.
    async fn lock(&self, hash: &str) -> Result<nix::fcntl::Flock<std::fs::File>, String> {
        let path = self.root.join(format!("{hash}.lock"));
        tokio::task::spawn_blocking(move || {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| format!("could not open {}: {e}", path.display()))?;
            nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, e)| format!("could not lock {}: {e}", path.display()))
        })
        .await
        .map_err(|e| format!("the build lock was lost: {e}"))?
    }

    /// The SDK's files in the environment, found through a `.pth` file in
    /// its site-packages (so `import paddlecloud` works in it).
    async fn install_sdk(&self, dir: &Path, python: &str) -> Result<(), String> {
        let out = tokio::process::Command::new(python)
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ])
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| format!("could not run the environment's Python: {e}"))?;
        let purelib = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !out.status.success() || purelib.is_empty() {
            return Err("the environment's Python did not say where its packages go".to_owned());
        }
        self.write_sdk(dir).await?;
        let pth = Path::new(&purelib).join("paddlecloud-sdk.pth");
        tokio::fs::write(&pth, format!("{}\n", dir.join("paddlecloud-sdk").display()))
            .await
            .map_err(|e| format!("could not put the SDK on the path: {e}"))
    }

    /// Writes this console's SDK into the build at `dir` unless it is
    /// there already (its stamp matches).
    async fn write_sdk(&self, dir: &Path) -> Result<(), String> {
        let stamp = sdk_stamp();
        let stamp_path = dir.join(SDK_STAMP);
        if tokio::fs::read_to_string(&stamp_path).await.ok().as_deref() == Some(stamp) {
            return Ok(());
        }
        let sdk = dir.join("paddlecloud-sdk").join("paddlecloud");
        let io = |e: std::io::Error| format!("could not write the SDK: {e}");
        tokio::fs::create_dir_all(&sdk).await.map_err(io)?;
        for (name, text) in SDK_FILES {
            // Renamed into place: a job already running in this build never
            // imports a half-written file.
            let part = sdk.join(format!("{name}.part"));
            tokio::fs::write(&part, text).await.map_err(io)?;
            tokio::fs::rename(&part, sdk.join(name)).await.map_err(io)?;
        }
        tokio::fs::write(&stamp_path, stamp).await.map_err(io)
    }

    /// Runs one step with its output going to the log; its last lines are
    /// the error when it fails.
    async fn step(
        &self,
        hash: &str,
        what: &str,
        program: &str,
        args: &[&str],
    ) -> Result<(), String> {
        self.append_log(hash, &format!("==> {what}\n"))
            .await
            .map_err(|e| format!("could not write the build log: {e}"))?;
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.log_path(hash))
            .map_err(|e| format!("could not open the build log: {e}"))?;
        let err = log
            .try_clone()
            .map_err(|e| format!("could not open the build log: {e}"))?;
        let status = tokio::process::Command::new(program)
            .args(args)
            .env("PYTHONUNBUFFERED", "1")
            .env("PIP_NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .kill_on_drop(true)
            .status()
            .await
            .map_err(|e| format!("{what}: could not run {program}: {e}"))?;
        if status.success() {
            return Ok(());
        }
        let tail = read_tail(&self.log_path(hash)).await;
        let lines: Vec<String> = tail
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect();
        let last = crate::backend::last_lines(&lines, 3, 400);
        Err(format!("{what} failed ({status}): {last}"))
    }
}

/// The end of a log file (empty when there is none).
async fn read_tail(path: &Path) -> String {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let Ok(mut file) = tokio::fs::File::open(path).await else {
        return String::new();
    };
    let len = file.metadata().await.map(|m| m.len()).unwrap_or(0);
    let _ = file
        .seek(std::io::SeekFrom::Start(len.saturating_sub(LOG_TAIL)))
        .await;
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes).await;
    String::from_utf8_lossy(&bytes).into_owned()
}
