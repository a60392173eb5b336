//! Notebooks on this machine: each is a real `jupyter lab` process of the
//! configured Python, bound to a free port of 127.0.0.1, under the base URL
//! the console proxies (`/notebooks/<account>/<name>/`), in its own process
//! group, with its token handed down a pipe (never in argv or its
//! environment, which other processes can read). Its workspace, `<data>/notebooks/<account>/<name>/work`,
//! is its home and root folder, kept across stops and console restarts.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::error::AppError;
use app::models::{Account, NotebookSpec, NotebookStatus};
use async_trait::async_trait;
use nix::sys::signal::Signal;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use super::machine::{gpu_env, Machine};
use super::process::{
    command, end, exit_words, free_port, kill_recorded_group, log_lines, log_outputs, signal_group,
};
use super::venvs::{Prepared, Venvs};
use crate::backend::lab_client::LabClient;
use crate::backend::last_lines;
use crate::backend::notebooks::{
    answers, jupyter_args, NotebookBackend, NotebookReporter, NotebookRun, SDK_FILES, START_TIMEOUT,
};

/// How often a starting server is asked whether it answers.
const PROBE_EVERY: Duration = Duration::from_millis(300);
/// The variable that marks a notebook's processes as the console's.
const MARKER: &str = "PADDLECLOUD_NOTEBOOK_INSTANCE";

/// The local notebook backend.
#[derive(Clone)]
pub struct LocalNotebooks {
    inner: Arc<Inner>,
}

struct Inner {
    /// `<data>/notebooks`.
    root: PathBuf,
    /// The Python whose `jupyterlab` runs the servers.
    python: String,
    /// SIGTERM → SIGKILL.
    grace: Duration,
    /// What servers inherit of the console's environment.
    inherited_env: Arc<[(String, String)]>,
    /// The room servers wait for, shared with jobs and serving.
    machine: Arc<Machine>,
    /// Servers started by this process, by notebook id.
    servers: Mutex<HashMap<i64, Arc<Server>>>,
    /// Reaches the servers: asks a starting one whether it answers.
    probe: LabClient,
    /// The virtualenvs of environments kernels run in.
    venvs: Arc<Venvs>,
}

/// A started server's controls.
struct Server {
    /// Its port once JupyterLab answers.
    port: Mutex<Option<u16>>,
    stop: watch::Sender<bool>,
    done: watch::Receiver<bool>,
}

impl LocalNotebooks {
    /// Notebooks live under `<data_dir>/notebooks`; servers run `python -m
    /// jupyterlab`, inherit `inherited_env` and wait for room on `machine`;
    /// the kernels of a notebook that names an environment run in its
    /// build from `venvs`.
    pub fn new(
        data_dir: &Path,
        python: String,
        grace: Duration,
        inherited_env: Arc<[(String, String)]>,
        machine: Arc<Machine>,
        venvs: Arc<Venvs>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                root: data_dir.join("notebooks"),
                python,
                grace,
                inherited_env,
                machine,
                servers: Mutex::new(HashMap::new()),
                probe: crate::backend::lab_client::direct(),
                venvs,
            }),
        }
    }

    fn dir(&self, account: &Account, name: &str) -> PathBuf {
        self.inner.root.join(&account.name).join(name)
    }

    fn server(&self, id: i64) -> Option<Arc<Server>> {
        self.inner
            .servers
            .lock()
            .expect("servers lock")
            .get(&id)
            .cloned()
    }

    /// Writes the SDK where kernels import it from; returns that folder.
    async fn sdk(&self) -> std::io::Result<PathBuf> {
        let dir = self.inner.root.join(".sdk");
        let package = dir.join("paddlecloud");
        tokio::fs::create_dir_all(&package).await?;
        for (name, text) in SDK_FILES {
            tokio::fs::write(package.join(name), text).await?;
        }
        Ok(dir)
    }
}

/// Everything one start needs, moved into its supervising task.
struct Launch {
    run: NotebookRun,
    /// The Python whose JupyterLab runs.
    python: String,
    base_url: String,
    root_dir: String,
    env: Vec<(String, String)>,
    inherited_env: Arc<[(String, String)]>,
    dir: PathBuf,
    machine: Arc<Machine>,
    grace: Duration,
    probe: LabClient,
    venvs: Arc<Venvs>,
}

#[async_trait]
impl NotebookBackend for LocalNotebooks {
    fn name(&self) -> String {
        super::LOCAL.to_owned()
    }

    fn client(&self) -> LabClient {
        self.inner.probe.clone()
    }

    fn admits(&self, spec: &NotebookSpec) -> Result<(), AppError> {
        self.inner.machine.notebook_ask(spec).map(|_| ())
    }

    async fn start(&self, run: NotebookRun, reporter: NotebookReporter) -> Result<(), AppError> {
        let io = |what: &'static str| {
            move |err: std::io::Error| {
                tracing::error!(error = %err, "{what}");
                AppError::Internal
            }
        };
        // One server per notebook: a start while one runs replaces it.
        self.stop(&run.account, run.id, &run.spec.name).await?;
        let dir = self.dir(&run.account, &run.spec.name);
        let tag = format!("{}#{}", run.account.name, run.id);
        kill_leftover(&dir, &tag);
        let work = dir.join("work");
        tokio::fs::create_dir_all(&work)
            .await
            .map_err(io("making a notebook's workspace"))?;
        let sdk = self
            .sdk()
            .await
            .map_err(io("writing the SDK for notebooks"))?;
        quiet_news(&work)
            .await
            .map_err(io("writing a notebook's JupyterLab settings"))?;
        let python_bin = Path::new(&self.inner.python)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(|p| format!("{}:", p.display()))
            .unwrap_or_default();
        let path = super::process::inherited_path(&self.inner.inherited_env);
        let mut env = run.env.clone();
        env.extend(
            [
                // The token comes down the server's stdin (see `spawn`).
                ("PADDLECLOUD_LAB_TOKEN_FD", "0".to_owned()),
                ("HOME", work.display().to_string()),
                (
                    "JUPYTER_RUNTIME_DIR",
                    dir.join("runtime").display().to_string(),
                ),
                ("PYTHONPATH", sdk.display().to_string()),
                ("PYTHONUNBUFFERED", "1".to_owned()),
                ("PATH", format!("{python_bin}{path}")),
                ("SHELL", "/bin/bash".to_owned()),
                (MARKER, tag),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        // The port is chosen when the server is spawned (see [`spawn`]).
        let python = self.inner.python.clone();
        let base_url = run.base_url.clone();
        let root_dir = work.display().to_string();
        let (stop, _) = watch::channel(false);
        let (done_tx, done) = watch::channel(false);
        let server = Arc::new(Server {
            port: Mutex::new(None),
            stop,
            done,
        });
        self.inner
            .servers
            .lock()
            .expect("servers lock")
            .insert(run.id, server.clone());
        let launch = Launch {
            run,
            python,
            base_url,
            root_dir,
            env,
            inherited_env: self.inner.inherited_env.clone(),
            dir,
            machine: self.inner.machine.clone(),
            grace: self.inner.grace,
            probe: self.inner.probe.clone(),
            venvs: self.inner.venvs.clone(),
        };
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let id = launch.run.id;
            supervise(&server, launch, &reporter).await;
            let mut servers = inner.servers.lock().expect("servers lock");
            if servers.get(&id).is_some_and(|s| Arc::ptr_eq(s, &server)) {
                servers.remove(&id);
            }
            drop(servers);
            let _ = done_tx.send(true);
        });
        Ok(())
    }

    async fn stop(&self, _account: &Account, id: i64, _name: &str) -> Result<(), AppError> {
        if let Some(server) = self.server(id) {
            server.stop.send_replace(true);
            let mut done = server.done.clone();
            let _ = done.wait_for(|d| *d).await;
        }
        Ok(())
    }

    async fn remove(&self, account: &Account, id: i64, name: &str) -> Result<(), AppError> {
        self.stop(account, id, name).await?;
        match tokio::fs::remove_dir_all(self.dir(account, name)).await {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(err) => {
                tracing::error!(error = %err, notebook = %name, "removing a notebook's workspace");
                Err(AppError::Internal)
            }
        }
    }

    async fn upstream(&self, _account: &Account, id: i64, _name: &str) -> Option<String> {
        let port = (*self.server(id)?.port.lock().expect("port lock"))?;
        Some(format!("http://127.0.0.1:{port}"))
    }
}

/// Waits for room, runs the server until it is stopped or dies, and
/// reports each change. A server that dies is Failed with its log's last
/// lines; it is not restarted (its kernels are gone either way).
async fn supervise(server: &Server, mut launch: Launch, reporter: &NotebookReporter) {
    let mut stop = server.stop.subscribe();
    let environment = launch.run.spec.environment_use.clone();
    if let Some(used) = &environment {
        let waiting = Prepared::waiting(used);
        report_on(reporter, &launch.run, NotebookStatus::Pending, waiting).await;
    }
    // Its kernels need ipykernel besides what the environment lists.
    match launch
        .venvs
        .prepare(environment.as_ref(), &["ipykernel"], &mut stop)
        .await
    {
        Prepared::Ready(None) => {}
        Prepared::Ready(Some(venv)) => {
            let label = environment.map(|e| e.reference).unwrap_or_default();
            match kernel_in(&launch.dir, &venv, &label).await {
                Ok(jupyter_path) => {
                    launch.env.push(("JUPYTER_PATH".to_owned(), jupyter_path));
                    launch
                        .env
                        .extend(super::venvs::venv_env(&venv, &launch.inherited_env));
                }
                Err(err) => {
                    tracing::error!(error = %err, "writing a notebook's kernel spec");
                    let why = "Could not write its kernel's settings; see the console's log.";
                    return report_on(
                        reporter,
                        &launch.run,
                        NotebookStatus::Failed,
                        why.to_owned(),
                    )
                    .await;
                }
            }
        }
        Prepared::Stopped => return,
        Prepared::Failed(why) => {
            return report_on(reporter, &launch.run, NotebookStatus::Failed, why).await
        }
    }
    let run = &launch.run;
    let report = |status, message: String| report_on(reporter, run, status, message);
    let ask = match launch.machine.notebook_ask(&run.spec) {
        Ok(ask) => ask,
        Err(err) => return report(NotebookStatus::Failed, err.to_string()).await,
    };
    let ticket = launch.machine.scheduler.enqueue(ask);
    let waiting = |why| async move {
        let why = format!("Waiting for room: {why}");
        report(NotebookStatus::Pending, why).await;
        Ok::<_, Infallible>(())
    };
    let Ok(Some(grant)) = ticket.wait_turn(&mut stop, waiting).await else {
        return;
    };
    report(NotebookStatus::Pending, "Starting JupyterLab…".to_owned()).await;
    let log = launch.dir.join("jupyter.log");
    let gpus = grant.gpus.first().cloned().unwrap_or_default();
    let (mut child, port) = match spawn(&launch, &log, &gpus).await {
        Ok(started) => started,
        Err(why) => return report(NotebookStatus::Failed, why).await,
    };
    let pgid = child.id().map(i64::from).unwrap_or(0);
    let pid_file = launch.dir.join("pid");
    let _ = std::fs::write(&pid_file, pgid.to_string());
    let status_url = format!("http://127.0.0.1:{port}{}api/status", run.base_url);
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    let mut ready = false;
    let outcome = loop {
        tokio::select! {
            status = child.wait() => break Some(status.ok()),
            _ = stop.changed() => break None,
            _ = tokio::time::sleep(PROBE_EVERY), if !ready => {
                if answers(&launch.probe, &status_url, &run.jupyter_token).await {
                    ready = true;
                    *server.port.lock().expect("port lock") = Some(port);
                    report(NotebookStatus::Running, String::new()).await;
                } else if tokio::time::Instant::now() > deadline {
                    end(&mut child, pgid, launch.grace).await;
                    let why = format!(
                        "JupyterLab did not answer within {} s. {}",
                        START_TIMEOUT.as_secs(),
                        log_tail(&log)
                    );
                    let _ = std::fs::remove_file(&pid_file);
                    return report(NotebookStatus::Failed, why).await;
                }
            }
        }
    };
    *server.port.lock().expect("port lock") = None;
    match outcome {
        // Stopped: the service records why.
        None => end(&mut child, pgid, launch.grace).await,
        Some(status) => {
            signal_group(pgid, Signal::SIGKILL);
            let code = exit_words(status);
            let what = if ready {
                "JupyterLab exited"
            } else {
                "JupyterLab failed to start"
            };
            report(
                NotebookStatus::Failed,
                format!("{what} with {code}. {}", log_tail(&log)),
            )
            .await;
        }
    }
    let _ = std::fs::remove_file(&pid_file);
    drop(grant);
}

/// Starts `jupyter lab` on a free port with GPUs `gpus`, its output
/// appended to `log`, and hands it the notebook's token down a pipe: in
/// its argv or environment, every process of this user could read it
/// (`/proc/<pid>/environ`), and with it open the server around the proxy.
async fn spawn(
    launch: &Launch,
    log: &Path,
    gpus: &[u32],
) -> Result<(tokio::process::Child, u16), String> {
    let port = free_port()?;
    let (out, err) = log_outputs(log)?;
    let mut argv = vec![launch.python.clone()];
    argv.extend(jupyter_args(
        &launch.base_url,
        &launch.root_dir,
        "127.0.0.1",
        port,
    ));
    // Kernels started without a path run where the server does: the workspace.
    let work = launch.dir.join("work");
    let mut cmd = command(&argv, &work, &launch.inherited_env, &launch.env);
    cmd.envs(gpu_env(gpus))
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(err)
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", launch.python))?;
    if let Some(mut stdin) = child.stdin.take() {
        let line = format!("{}\n", launch.run.jupyter_token);
        // A server that died at once closed the pipe: its exit says why.
        let _ = stdin.write_all(line.as_bytes()).await;
    }
    Ok((child, port))
}

async fn report_on(
    reporter: &NotebookReporter,
    run: &NotebookRun,
    status: NotebookStatus,
    message: String,
) {
    reporter
        .report(run.account.id, run.id, &run.spec.name, status, &message)
        .await
}

/// Makes the default Python kernel (`python3`) the environment's: a kernel
/// spec under `<dir>/jupyter` (outside the workspace, so it follows the
/// notebook's spec, not what the user keeps), found first through
/// `JUPYTER_PATH`, which this returns.
async fn kernel_in(dir: &Path, venv: &Path, label: &str) -> std::io::Result<String> {
    let root = dir.join("jupyter");
    let kernel = root.join("kernels").join("python3");
    tokio::fs::create_dir_all(&kernel).await?;
    let spec = serde_json::json!({
        "argv": [
            venv.join("bin").join("python").display().to_string(),
            "-m", "ipykernel_launcher", "-f", "{connection_file}",
        ],
        "display_name": format!("Python 3 ({label})"),
        "language": "python",
        "metadata": { "debugger": true },
    });
    tokio::fs::write(kernel.join("kernel.json"), spec.to_string()).await?;
    Ok(root.display().to_string())
}

/// JupyterLab asks every new user whether to fetch news from the Internet,
/// which a console's machines often cannot reach: a new workspace starts
/// with "never" (the user may change it; an existing choice is kept).
async fn quiet_news(work: &Path) -> std::io::Result<()> {
    let dir = work.join(".jupyter/lab/user-settings/@jupyterlab/apputils-extension");
    let file = dir.join("notification.jupyterlab-settings");
    if tokio::fs::try_exists(&file).await? {
        return Ok(());
    }
    tokio::fs::create_dir_all(&dir).await?;
    tokio::fs::write(&file, r#"{"fetchNews": "false", "checkForUpdates": false}"#).await
}

/// The last lines of the server's log, for a failure's message.
fn log_tail(log: &Path) -> String {
    last_lines(&log_lines(log), 4, 600)
}

/// Ends a server a previous console left running for this notebook: the
/// recorded group, if its leader still carries the notebook's marker.
fn kill_leftover(dir: &Path, tag: &str) {
    kill_recorded_group(&dir.join("pid"), &format!("{MARKER}={tag}"));
}
