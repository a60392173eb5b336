//! Serving on this machine: each replica is a real server process on a free
//! port of 127.0.0.1, restarted when it dies, behind the console's endpoint
//! (which balances between the replicas that answer). A replica that never
//! comes up three times in a row (the model does not load) fails the
//! instance with the reason from its log, instead of leaving it Pending.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::error::AppError;
use app::models::{Account, Autoscale, ServingStatus};
use async_trait::async_trait;
use tokio::sync::{mpsc, watch};

use super::limits::ReplicaLimit;
use super::machine::{gpu_env, Machine};
use super::process::{command, exit_words, free_port, kill_recorded_group, log_lines, log_outputs};
use super::scheduler::{Ask, ReplicaAsk};
use super::server_process::{watch_server, Ended, Watch};
use super::venvs::Prepared;
use super::workload_host::WorkloadHost;
use crate::backend::last_lines;
use crate::backend::serving::{
    http_client, Reporter, ServingBackend, ServingRun, ServingState, Upstream, PREDICT_SERVER,
};
use crate::backend::supervised::Supervised;

/// Failed starts in a row (never answering) that fail the instance.
const MAX_FAILED_STARTS: u32 = 3;
/// How often a starting replica is asked whether it answers.
const PROBE_EVERY: Duration = Duration::from_millis(250);

/// The local serving backend.
#[derive(Clone)]
pub struct LocalServing {
    inner: Arc<Inner>,
}

struct Inner {
    /// `<data>/serving`, the Python of the default predict server, and the
    /// rest every local workload runs with.
    host: WorkloadHost,
    /// Running instances by id.
    instances: Supervised<Instance>,
    /// Asks replicas whether they answer; made when the first instance
    /// starts (a client loads the system's root certificates: half a
    /// megabyte a console without serving instances need not hold).
    probe: std::sync::OnceLock<reqwest::Client>,
}

/// What a running instance shares: its size and its ready replicas.
struct Instance {
    desired: watch::Sender<u32>,
    /// Autoscaler bounds, while it autoscales.
    bounds: watch::Sender<Option<Autoscale>>,
    /// Ready replicas: index → port.
    ready: Mutex<BTreeMap<usize, u16>>,
    /// Round-robin position.
    next: AtomicUsize,
}

/// What a replica tells its instance's supervisor, sent with its index and
/// the serial it was started with.
enum News {
    /// Waits for room on the machine, and why.
    Waiting(String),
    /// Answers on this port.
    Ready(u16),
    /// Its process ended; it restarts.
    Down(String),
    /// It cannot start.
    Fatal(String),
}

impl LocalServing {
    /// Replicas live under `host.root`; the default server runs with
    /// `host.python`; replicas wait for room on `host.machine`, as job
    /// replicas do; an instance that names an environment runs in its
    /// build from `host.venvs`.
    pub fn new(host: WorkloadHost) -> Self {
        Self {
            inner: Arc::new(Inner {
                host,
                instances: Supervised::default(),
                probe: std::sync::OnceLock::new(),
            }),
        }
    }

    fn dir(&self, account: &Account, name: &str) -> PathBuf {
        self.inner.host.dir(account, name)
    }
}

impl Inner {
    fn probe(&self) -> &reqwest::Client {
        self.probe
            .get_or_init(|| http_client(Duration::from_secs(2)).unwrap_or_default())
    }
}

impl Launch {
    /// Runs the replicas in the virtualenv `venv`: its `bin` first on
    /// `PATH` and, for the default predict server, its Python.
    fn in_venv(&mut self, venv: &Path, default_server: bool) {
        if default_server {
            self.argv[0] = venv.join("bin").join("python").display().to_string();
        }
        self.env
            .extend(super::venvs::venv_env(venv, &self.inherited_env));
    }
}

/// How one replica is started.
#[derive(Clone)]
struct Launch {
    /// The instance's database id (names its replicas' cgroups).
    id: i64,
    /// What each replica asks of the machine.
    ask: Ask,
    machine: Arc<Machine>,
    argv: Vec<String>,
    inherited_env: Arc<[(String, String)]>,
    env: Vec<(String, String)>,
    dir: PathBuf,
    grace: Duration,
}

#[async_trait]
impl ServingBackend for LocalServing {
    fn name(&self) -> String {
        super::LOCAL.to_owned()
    }

    fn admits(&self, spec: &app::models::ServingSpec) -> Result<(), AppError> {
        self.inner.host.machine.serving_ask(spec).map(|_| ())
    }

    async fn start(&self, run: ServingRun, reporter: Reporter) -> Result<(), AppError> {
        let io = |what: &'static str| {
            move |err: std::io::Error| {
                tracing::error!(error = %err, "{what}");
                AppError::Internal
            }
        };
        let dir = self.dir(&run.account, &run.spec.name);
        let tag = format!("{}#{}", run.account.name, run.id);
        kill_leftovers(&dir, &tag);
        let _ = tokio::fs::remove_dir_all(&dir).await;
        tokio::fs::create_dir_all(dir.join("logs"))
            .await
            .map_err(io("creating a serving directory"))?;
        tokio::fs::create_dir_all(dir.join("pids"))
            .await
            .map_err(io("creating a serving directory"))?;
        let mut env: Vec<(String, String)> = run
            .spec
            .env
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect();
        let model = run.model.local.clone().ok_or(AppError::Internal)?;
        let threads = run.spec.per_replica()?.cpu_millis.div_ceil(1000).max(1);
        env.extend([
            ("HOST".to_owned(), "127.0.0.1".to_owned()),
            (
                "PADDLECLOUD_MODEL_DIR".to_owned(),
                model.to_string_lossy().into_owned(),
            ),
            (
                "PADDLECLOUD_SERVING_THREADS".to_owned(),
                threads.to_string(),
            ),
            ("PADDLECLOUD_SERVING_INSTANCE".to_owned(), tag.clone()),
            ("PYTHONUNBUFFERED".to_owned(), "1".to_owned()),
        ]);
        if !run.spec.script.is_empty() {
            let script = dir.join("serving_script.py");
            tokio::fs::write(&script, &run.spec.script)
                .await
                .map_err(io("writing a serving script"))?;
            env.push((
                "PADDLECLOUD_SERVING_SCRIPT".to_owned(),
                script.to_string_lossy().into_owned(),
            ));
        }
        let default_server = run.spec.command.is_empty();
        let argv = if default_server {
            let server = self.inner.host.root.join("paddlecloud_serving.py");
            tokio::fs::write(&server, PREDICT_SERVER)
                .await
                .map_err(io("writing the predict server"))?;
            vec![
                self.inner.host.python.clone(),
                server.to_string_lossy().into_owned(),
            ]
        } else {
            run.spec.command.clone()
        };
        let host = &self.inner.host;
        let mut launch = Launch {
            id: run.id,
            ask: host.machine.serving_ask(&run.spec)?,
            machine: host.machine.clone(),
            argv,
            inherited_env: host.inherited_env.clone(),
            env,
            dir,
            grace: host.grace,
        };
        let (desired, _) = watch::channel(run.spec.replicas);
        let (bounds, _) = watch::channel(run.spec.autoscale);
        let cores = run.spec.per_replica()?.cpu_millis as f64 / 1000.0;
        let pids_dir = launch.dir.join("pids");
        let instance = Instance {
            desired,
            bounds,
            ready: Mutex::new(BTreeMap::new()),
            next: AtomicUsize::new(0),
        };
        let inner = self.inner.clone();
        self.inner.instances.spawn(run.id, instance, move |instance| async move {
            let mut stop = instance.stop_signal();
            let environment = run.spec.environment_use.as_ref();
            let report = |status, message: String| {
                let (reporter, run) = (&reporter, &run);
                async move {
                    reporter
                        .report(run.account.id, run.id, &run.spec.name, ServingState::new(status, 0, &message))
                        .await
                }
            };
            if let Some(used) = environment {
                report(ServingStatus::Pending, Prepared::waiting(used)).await;
            }
            match inner.host.venvs.prepare(environment, &[], &mut stop).await {
                Prepared::Ready(venv) => {
                    if let Some(venv) = venv {
                        launch.in_venv(&venv, default_server);
                    }
                    let state = &instance.state;
                    // The autoscaler ends with the supervisor.
                    tokio::select! {
                        _ = supervise(state, stop, &run, &reporter, launch, inner.probe()) => {}
                        _ = super::autoscale::run(&pids_dir, &state.desired, state.bounds.subscribe(), cores) => {}
                    }
                }
                Prepared::Stopped => {}
                Prepared::Failed(why) => report(ServingStatus::Failed, why).await,
            }
        });
        Ok(())
    }

    async fn resize(&self, run: ServingRun) -> Result<(), AppError> {
        match self.inner.instances.get(run.id) {
            Some(i) => {
                i.state.bounds.send_replace(run.spec.autoscale);
                i.state.desired.send_replace(run.spec.replicas);
                Ok(())
            }
            None => Err(AppError::conflict(
                "name",
                format!("“{}” is not running.", run.spec.name),
            )),
        }
    }

    async fn stop(&self, _account: &Account, id: i64, _name: &str) -> Result<(), AppError> {
        self.inner.instances.stop(id).await;
        Ok(())
    }

    async fn upstream(&self, _account: &Account, id: i64, _name: &str) -> Option<Upstream> {
        let instance = self.inner.instances.get(id)?;
        let instance = &instance.state;
        let ready = instance.ready.lock().expect("ready lock");
        if ready.is_empty() {
            return None;
        }
        let n = instance.next.fetch_add(1, Ordering::Relaxed) % ready.len();
        let port = ready.values().nth(n)?;
        Some(Upstream::Http(format!("http://127.0.0.1:{port}")))
    }
}

/// Keeps `desired` replicas running until stopped or failed, reporting the
/// instance's state on every change.
async fn supervise(
    instance: &Instance,
    mut stop: watch::Receiver<bool>,
    run: &ServingRun,
    reporter: &Reporter,
    launch: Launch,
    probe: &reqwest::Client,
) {
    let (tx, mut rx) = mpsc::channel::<(usize, u64, News)>(64);
    // Each replica with the serial it was started with: news from one
    // that was scaled away can still be queued when another takes its index.
    let mut replicas: Vec<(watch::Sender<bool>, tokio::task::JoinHandle<()>, u64)> = Vec::new();
    let mut serials = 0u64;
    let mut desired = instance.desired.subscribe();
    let mut message = String::new();
    let mut recorded = run.spec.replicas;
    let outcome = loop {
        let want = *desired.borrow_and_update() as usize;
        if want as u32 != recorded {
            // The autoscaler (or a scale) changed the size: the record says so.
            recorded = want as u32;
            reporter.replicas(run.id, &run.spec.name, recorded).await;
        }
        while replicas.len() < want {
            let (stop_tx, stop_rx) = watch::channel(false);
            serials += 1;
            let task = tokio::spawn(replica(
                (replicas.len(), serials),
                launch.clone(),
                stop_rx,
                tx.clone(),
                probe.clone(),
            ));
            replicas.push((stop_tx, task, serials));
        }
        while replicas.len() > want {
            let (stop_tx, task, _) = replicas.pop().expect("a replica");
            instance
                .ready
                .lock()
                .expect("ready lock")
                .remove(&replicas.len());
            stop_tx.send_replace(true);
            let _ = task.await;
        }
        let ready = instance.ready.lock().expect("ready lock").len() as u32;
        reporter
            .report(
                run.account.id,
                run.id,
                &run.spec.name,
                ServingState::new(
                    ServingStatus::of_replicas(ready, want as u32),
                    ready,
                    &message,
                ),
            )
            .await;
        tokio::select! {
            _ = desired.changed() => {}
            _ = stop.changed() => break None,
            news = rx.recv() => match news {
                Some((i, _, News::Waiting(why))) => {
                    message = format!("Replica {i} {why}");
                }
                // From a replica scaled away after it said so (its port
                // gone, its end no one's business): another may have its index.
                Some((i, serial, _)) if replicas.get(i).is_none_or(|r| r.2 != serial) => {}
                Some((i, _, News::Ready(port))) => {
                    instance.ready.lock().expect("ready lock").insert(i, port);
                    message.clear();
                }
                Some((i, _, News::Down(why))) => {
                    instance.ready.lock().expect("ready lock").remove(&i);
                    message = format!("Replica {i} restarting: {why}");
                }
                Some((i, _, News::Fatal(why))) => break Some(format!("Replica {i} failed to start: {why}")),
                None => break None,
            },
        }
    };
    instance.ready.lock().expect("ready lock").clear();
    for (stop_tx, _, _) in &replicas {
        stop_tx.send_replace(true);
    }
    for (_, task, _) in replicas {
        let _ = task.await;
    }
    if let Some(why) = outcome {
        tracing::warn!(serving = %run.spec.name, reason = %why, "serving failed");
        reporter
            .report(
                run.account.id,
                run.id,
                &run.spec.name,
                ServingState::new(ServingStatus::Failed, 0, &why),
            )
            .await;
    }
}

/// Runs replica `index` (restarting it after a crash) until told to stop.
async fn replica(
    (index, serial): (usize, u64),
    launch: Launch,
    mut stop: watch::Receiver<bool>,
    news: mpsc::Sender<(usize, u64, News)>,
    probe: reqwest::Client,
) {
    let log = launch.dir.join("logs").join(format!("replica-{index}.log"));
    let pid_file = launch.dir.join("pids").join(format!("replica-{index}"));
    let mut failed_starts = 0;
    let mut backoff = Duration::from_millis(500);
    loop {
        if *stop.borrow() {
            return;
        }
        // Room on the machine first, in turn with jobs and other replicas.
        let ticket = launch.machine.scheduler.enqueue(launch.ask.clone());
        let news = &news;
        let waiting = |why| async move {
            let _ = news.send((index, serial, News::Waiting(why))).await;
            Ok::<_, Infallible>(())
        };
        let Ok(Some(grant)) = ticket.wait_turn(&mut stop, waiting).await else {
            return;
        };
        let gpus = grant.gpus.first().cloned().unwrap_or_default();
        let started = start(&launch, &log, index, &gpus);
        let (mut child, port, mut limit) = match started {
            Ok(c) => c,
            Err(why) => {
                let _ = news.send((index, serial, News::Fatal(why))).await;
                return;
            }
        };
        limit.watch(child.id().map_or(0, |pid| pid as i32));
        let how = Watch {
            pid_file: &pid_file,
            probe_every: PROBE_EVERY,
            // A model may take long to load: a replica that never answers
            // shows as not ready, and one that exits counts as a failed start.
            deadline: None,
            grace: launch.grace,
        };
        let on_answer = move || async move {
            let _ = news.send((index, serial, News::Ready(port))).await;
        };
        let ended = watch_server(
            &mut child,
            how,
            &mut stop,
            || answers(&probe, port),
            on_answer,
        );
        let (ready, status) = match ended.await {
            Ended::Exited { answered, status } => (answered, status),
            Ended::Stopped | Ended::NoAnswer => return,
        };
        if ready {
            failed_starts = 0;
            backoff = Duration::from_millis(500);
        }
        let code = exit_words(status);
        // The model's place on this machine is the console's business.
        let model = launch
            .env
            .iter()
            .find(|(k, _)| k == "PADDLECLOUD_MODEL_DIR")
            .map(|(_, v)| v.as_str())
            .unwrap_or("\0");
        let reason = log_reason(&log)
            .replace(&format!("{model}/"), "")
            .replace(model, "the model");
        let why = match limit.exceeded() {
            Some(exceeded) => exceeded,
            None => format!("exited with {code}. {reason}"),
        };
        // Its room goes back while it waits to start again.
        drop((grant, limit));
        if !ready {
            failed_starts += 1;
            if failed_starts >= MAX_FAILED_STARTS {
                let _ = news.send((index, serial, News::Fatal(why))).await;
                return;
            }
        }
        let _ = news.send((index, serial, News::Down(why))).await;
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => return,
        }
        backoff = (backoff * 2).min(Duration::from_secs(10));
    }
}

/// Starts one process of replica `index` on a free port with the GPUs
/// `gpus` and its limits, its output appended to `log`.
fn start(
    launch: &Launch,
    log: &Path,
    index: usize,
    gpus: &[u32],
) -> Result<(tokio::process::Child, u16, ReplicaLimit), String> {
    let port = free_port()?;
    let (out, err) = log_outputs(log)?;
    // A job replica's command (own process group, only the passed-through
    // environment), its output going straight to the log file.
    let mut cmd = command(
        &launch.argv,
        &launch.dir,
        &launch.inherited_env,
        &launch.env,
    );
    cmd.env("PORT", port.to_string())
        .envs(gpu_env(gpus))
        .stdout(out)
        .stderr(err)
        .kill_on_drop(true);
    let asked = launch.ask.replicas.first().copied().unwrap_or(ReplicaAsk {
        cpu_millis: 0,
        memory_bytes: u64::MAX,
        gpus: 0,
    });
    let limit = launch
        .machine
        .limits
        .for_command(&format!("serving-{}-{index}", launch.id), &asked, &mut cmd)
        .map_err(|e| format!("cannot set its limits: {e}"))?;
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", launch.argv[0]))?;
    Ok((child, port, limit))
}

/// Whether the replica answers HTTP on its port (any status below 500 at
/// `/healthz`: a user's own server need not have that path).
async fn answers(probe: &reqwest::Client, port: u16) -> bool {
    probe
        .get(format!("http://127.0.0.1:{port}/healthz"))
        .send()
        .await
        .is_ok_and(|r| r.status().as_u16() < 500)
}

/// The most telling line at the end of a replica's log: the predict
/// server's own "cannot load the model" line, else the last lines.
fn log_reason(log: &Path) -> String {
    let lines = log_lines(log);
    if let Some(line) = lines
        .iter()
        .rev()
        .find(|l| l.contains("cannot load the model"))
    {
        return line.clone();
    }
    last_lines(&lines, 3, 400)
}

/// Ends processes a previous console left running for this instance: each
/// recorded group whose leader still carries the instance's tag.
fn kill_leftovers(dir: &Path, tag: &str) {
    let Ok(entries) = std::fs::read_dir(dir.join("pids")) else {
        return;
    };
    let marker = format!("PADDLECLOUD_SERVING_INSTANCE={tag}");
    for entry in entries.flatten() {
        kill_recorded_group(&entry.path(), &marker);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_is_the_model_line_or_the_last_lines_of_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("r.log");
        std::fs::write(
            &log,
            "importing\npaddlecloud-serving: cannot load the model: no inference.pdiparams\nbye\n",
        )
        .unwrap();
        assert_eq!(
            log_reason(&log),
            "paddlecloud-serving: cannot load the model: no inference.pdiparams"
        );
        std::fs::write(&log, "a\n\nb\nc\nd\n").unwrap();
        assert_eq!(log_reason(&log), "b · c · d");
    }
}
