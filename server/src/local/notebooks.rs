//! Notebooks on this machine: each is a real `jupyter lab` process of the
//! configured Python, bound to a free port of 127.0.0.1, under the base URL
//! the console proxies (`/notebooks/<account>/<name>/`), in its own process
//! group, with its token handed down a pipe (never in argv or its
//! environment, which other processes can read). Its workspace, `<data>/notebooks/<account>/<name>/work`,
//! is its home and root folder, kept across stops and console restarts.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::error::AppError;
use app::models::{Account, NotebookSpec, NotebookStatus};
use async_trait::async_trait;
use tokio::io::AsyncWriteExt;

use super::limits::ReplicaLimit;
use super::machine::gpu_env;
use super::process::{command, exit_words, free_port, kill_recorded_group, log_lines, log_outputs};
use super::scheduler::ReplicaAsk;
use super::server_process::{watch_server, Ended, Watch};
use super::venvs::{Prepared, Waited};
use super::workload_host::WorkloadHost;
use crate::backend::lab_client::LabClient;
use crate::backend::last_lines;
use crate::backend::notebooks::{
    answers, jupyter_args, restarted_note, NotebookBackend, NotebookReporter, NotebookRun,
    NotebookState, SDK_FILES, START_TIMEOUT,
};
use crate::backend::supervised::{Supervised, Supervisee};

/// How often a starting server is asked whether it answers.
const PROBE_EVERY: Duration = Duration::from_millis(300);

/// A notebook's server deaths, to restart it with a growing pause and to
/// give up on one that keeps dying.
#[derive(Default)]
struct Deaths(Vec<std::time::Instant>);

impl Deaths {
    /// The most restarts within [`Deaths::WITHIN`].
    const MOST: usize = 3;
    /// The window deaths are counted in.
    const WITHIN: Duration = Duration::from_secs(600);

    /// Counts one more death: how long to wait before starting it again,
    /// or `None` when it died too often to try again.
    fn another(&mut self) -> Option<Duration> {
        let now = std::time::Instant::now();
        self.0.retain(|t| now.duration_since(*t) < Self::WITHIN);
        self.0.push(now);
        (self.0.len() <= Self::MOST).then(|| Duration::from_secs(1 << (self.0.len() - 1)))
    }
}

/// The variable that marks a notebook's processes as the console's.
const MARKER: &str = "PADDLECLOUD_NOTEBOOK_INSTANCE";

/// The local notebook backend.
#[derive(Clone)]
pub struct LocalNotebooks {
    inner: Arc<Inner>,
}

struct Inner {
    /// `<data>/notebooks`, the Python whose `jupyterlab` runs the servers,
    /// and the rest every local workload runs with.
    host: WorkloadHost,
    /// Servers started by this process, by notebook id.
    servers: Supervised<Server>,
    /// Reaches the servers: asks a starting one whether it answers.
    probe: LabClient,
}

/// What a started server shares while it runs.
#[derive(Default)]
struct Server {
    /// Its port once JupyterLab answers.
    port: Mutex<Option<u16>>,
}

impl LocalNotebooks {
    /// Notebooks live under `host.root`; servers run `host.python -m
    /// jupyterlab`; the kernels of a notebook that names an environment run
    /// in its build from `host.venvs`.
    pub fn new(host: WorkloadHost) -> Self {
        Self {
            inner: Arc::new(Inner {
                host,
                servers: Supervised::default(),
                probe: crate::backend::lab_client::direct(),
            }),
        }
    }

    fn dir(&self, account: &Account, name: &str) -> PathBuf {
        self.inner.host.dir(account, name)
    }

    /// Writes the SDK where kernels import it from; returns that folder.
    async fn sdk(&self) -> std::io::Result<PathBuf> {
        let dir = self.inner.host.root.join(".sdk");
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
    /// The Python whose JupyterLab runs: the host's, once it is ready.
    python: String,
    host: WorkloadHost,
    base_url: String,
    root_dir: String,
    env: Vec<(String, String)>,
    dir: PathBuf,
    probe: LabClient,
    /// The account's secrets it uses as files, removed when it stops.
    _secret_files: super::secret_files::SecretFiles,
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
        self.inner.host.machine.notebook_ask(spec).map(|_| ())
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
        let host = &self.inner.host;
        let secret_files = host
            .secret_files(&format!("notebook-{}", run.id), &run.secrets.files)
            .map_err(io("writing a notebook's secret files"))?;
        let mut env = run.env.clone();
        env.extend(run.secrets.env.iter().cloned());
        env.extend(secret_files.env());
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
                ("SHELL", "/bin/bash".to_owned()),
                (MARKER, tag),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        // The port is chosen when the server is spawned (see [`spawn`]).
        let launch = Launch {
            python: String::new(),
            base_url: run.base_url.clone(),
            root_dir: work.display().to_string(),
            run,
            host: host.clone(),
            env,
            dir,
            probe: self.inner.probe.clone(),
            _secret_files: secret_files,
        };
        let id = launch.run.id;
        self.inner
            .servers
            .spawn(id, Server::default(), move |server| async move {
                supervise(&server, launch, &reporter).await;
            });
        Ok(())
    }

    async fn shut_down(&self) {
        self.inner.servers.stop_all().await;
    }

    async fn stop(&self, _account: &Account, id: i64, _name: &str) -> Result<(), AppError> {
        self.inner.servers.stop(id).await;
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
        let port = (*self
            .inner
            .servers
            .get(id)?
            .state
            .port
            .lock()
            .expect("port lock"))?;
        Some(format!("http://127.0.0.1:{port}"))
    }
}

/// Waits for room, runs the server until it is stopped or dies, and
/// reports each change. A server that dies is Failed with its log's last
/// lines; it is not restarted (its kernels are gone either way).
async fn supervise(server: &Supervisee<Server>, mut launch: Launch, reporter: &NotebookReporter) {
    let mut stop = server.stop_signal();
    // Says what is prepared, and how far (a copy for each wait).
    let told = |why: String| {
        let run = &launch.run;
        async move {
            report_on(reporter, run, NotebookStatus::Pending, why).await;
            Ok::<_, Infallible>(())
        }
    };
    // JupyterLab first (on the embedded defaults the console builds it).
    let Ok(lab) = launch.host.server_python(&mut stop, told).await;
    match lab {
        Waited::Ready(python) => launch.python = python,
        Waited::Stopped => return,
        Waited::Failed(why) => {
            return report_on(reporter, &launch.run, NotebookStatus::Failed, why).await
        }
    }
    // Its tools (`jupyter`, `pip`) first on a terminal's PATH, unless an
    // environment's venv puts its own there below.
    let path = super::process::inherited_path(&launch.host.inherited_env);
    let lab_bin = Path::new(&launch.python)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(|p| format!("{}:", p.display()))
        .unwrap_or_default();
    launch
        .env
        .push(("PATH".to_owned(), format!("{lab_bin}{path}")));
    let environment = launch.run.spec.environment_use.clone();
    // Its kernels need ipykernel besides what the environment lists.
    let Ok(prepared) = launch
        .host
        .venvs
        .prepare(environment.as_ref(), &["ipykernel"], &mut stop, told)
        .await;
    match prepared {
        Prepared::Ready(None) => {}
        Prepared::Ready(Some(venv)) => {
            let label = environment.map(|e| e.reference).unwrap_or_default();
            match kernel_in(&launch.dir, &venv, &label).await {
                Ok(jupyter_path) => {
                    launch.env.push(("JUPYTER_PATH".to_owned(), jupyter_path));
                    launch
                        .env
                        .extend(super::venvs::venv_env(&venv, &launch.host.inherited_env));
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
    let machine = &launch.host.machine;
    let ask = match machine.notebook_ask(&run.spec) {
        Ok(ask) => ask.owned_by(&run.account.name, &run.spec.name),
        Err(err) => return report(NotebookStatus::Failed, err.to_string()).await,
    };
    // What it is held to once it runs (its kernels too: they are its children).
    let held = ask.replicas.first().copied();
    let ticket = machine.scheduler.enqueue(ask);
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
    let mut deaths = Deaths::default();
    // Said while it runs after a restart: what came back and what did not.
    let mut running_note = String::new();
    loop {
        let (mut child, port, limit) = match spawn(&launch, &log, &gpus, held).await {
            Ok(started) => started,
            Err(why) => break report(NotebookStatus::Failed, why).await,
        };
        let status_url = format!("http://127.0.0.1:{port}{}api/status", run.base_url);
        let how = Watch {
            pid_file: &launch.dir.join("pid"),
            probe_every: PROBE_EVERY,
            deadline: Some(START_TIMEOUT),
            grace: launch.host.grace,
        };
        let answering = || answers(&launch.probe, &status_url, &run.jupyter_token);
        let note = running_note.clone();
        let on_answer = move || {
            let note = note.clone();
            async move {
                *server.state.port.lock().expect("port lock") = Some(port);
                report(NotebookStatus::Running, note).await;
            }
        };
        let ended = watch_server(&mut child, how, &mut stop, answering, on_answer).await;
        *server.state.port.lock().expect("port lock") = None;
        match ended {
            // Stopped: the service records why.
            Ended::Stopped => break,
            Ended::NoAnswer => {
                let why = format!(
                    "JupyterLab did not answer within {} s. {}",
                    START_TIMEOUT.as_secs(),
                    log_tail(&log)
                );
                break report(NotebookStatus::Failed, why).await;
            }
            Ended::Exited {
                answered: false,
                status,
            } => {
                let why = format!(
                    "JupyterLab failed to start with {}. {}",
                    ended_words(status, &limit),
                    log_tail(&log)
                );
                break report(NotebookStatus::Failed, why).await;
            }
            // It ran, then died by itself (killed, out of memory, a crash):
            // started again with its workspace, unless it keeps dying.
            Ended::Exited {
                answered: true,
                status,
            } => {
                let code = ended_words(status, &limit);
                let Some(wait) = deaths.another() else {
                    let why = format!(
                        "JupyterLab exited with {code}, the {}th time within {} minutes: not started again. {}",
                        Deaths::MOST + 1,
                        Deaths::WITHIN.as_secs() / 60,
                        log_tail(&log)
                    );
                    break report(NotebookStatus::Failed, why).await;
                };
                let at = app::models::time::format_utc_seconds(crate::time::now_ms());
                tracing::warn!(notebook = %run.spec.name, account = %run.account.name, code = %code, "a notebook's JupyterLab exited; starting it again");
                running_note = restarted_note(&format!("JupyterLab exited with {code} at {at}"));
                let why = format!("JupyterLab exited with {code} at {at}; starting it again…");
                report(NotebookStatus::Pending, why).await;
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stop.changed() => break,
                }
            }
        }
    }
    drop(grant);
}

/// How it ended: its exit, and that it was ended for its memory where it
/// was ("signal 9 (SIGKILL); OOMKilled: exceeded its memory limit 2Gi").
fn ended_words(status: Option<std::process::ExitStatus>, limit: &ReplicaLimit) -> String {
    let code = exit_words(status);
    match limit.exceeded() {
        Some(why) => format!("{code}; {why}"),
        None => code,
    }
}

/// Starts `jupyter lab` on a free port with GPUs `gpus`, held to `held`
/// (the CPU and memory it asked for, as a pod is), its output appended to
/// `log`, and hands it the notebook's token down a pipe: in its argv or
/// environment, every process of this user could read it
/// (`/proc/<pid>/environ`), and with it open the server around the proxy.
async fn spawn(
    launch: &Launch,
    log: &Path,
    gpus: &[u32],
    held: Option<ReplicaAsk>,
) -> Result<(tokio::process::Child, u16, ReplicaLimit), String> {
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
    let mut cmd = command(&argv, &work, &launch.host.inherited_env, &launch.env);
    cmd.envs(gpu_env(gpus))
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(err)
        .kill_on_drop(true);
    let held = held.unwrap_or(ReplicaAsk {
        cpu_millis: 0,
        memory_bytes: u64::MAX,
        gpus: 0,
    });
    let mut limit = launch
        .host
        .machine
        .limits
        .for_command(&format!("notebook-{}", launch.run.id), &held, &mut cmd)
        .map_err(|e| format!("cannot set its limits: {e}"))?;
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", launch.python))?;
    limit.watch(child.id().map_or(0, |pid| pid as i32));
    if let Some(mut stdin) = child.stdin.take() {
        let line = format!("{}\n", launch.run.jupyter_token);
        // A server that died at once closed the pipe: its exit says why.
        let _ = stdin.write_all(line.as_bytes()).await;
    }
    Ok((child, port, limit))
}

async fn report_on(
    reporter: &NotebookReporter,
    run: &NotebookRun,
    status: NotebookStatus,
    message: String,
) {
    reporter
        .report(
            run.account.id,
            run.id,
            &run.spec.name,
            NotebookState::new(status, &message),
        )
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
