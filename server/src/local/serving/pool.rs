//! A pool: the replicas of one version of one track of an instance, each a
//! real server process on a free port of 127.0.0.1, restarted when it dies.
//! An instance runs one pool per track, and two for its main track while it
//! rolls from one version to the next. A replica that never comes up three
//! times in a row (the model does not load) fails the pool with the reason
//! from its log.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::models::Track;
use tokio::sync::{mpsc, watch, Notify};

use crate::backend::last_lines;
use crate::backend::serving::ModelFiles;
use crate::local::limits::ReplicaLimit;
use crate::local::machine::{gpu_env, Machine};
use crate::local::process::{command, exit_words, free_port, log_lines, log_outputs};
use crate::local::scheduler::{Ask, ReplicaAsk};
use crate::local::server_process::{watch_server, Ended, Watch};

/// Failed starts in a row (never answering) that fail the pool.
const MAX_FAILED_STARTS: u32 = 3;
/// How often a starting replica is asked whether it answers.
const PROBE_EVERY: Duration = Duration::from_millis(250);

/// How a pool's replicas are started.
#[derive(Clone)]
pub(super) struct Launch {
    /// The instance's database id (names its replicas' cgroups).
    pub id: i64,
    /// What each replica asks of the machine.
    pub ask: Ask,
    pub machine: Arc<Machine>,
    pub argv: Vec<String>,
    pub inherited_env: Arc<[(String, String)]>,
    pub env: Vec<(String, String)>,
    /// The instance's directory (`logs/` below it).
    pub dir: PathBuf,
    pub grace: Duration,
    /// Names the pool's files and cgroups: `main-v3`, `canary-v4`.
    pub key: String,
    /// Where its replicas' process groups are recorded (the main track's
    /// are what the autoscaler measures).
    pub pids: PathBuf,
}

impl Launch {
    /// This launch for `track` serving `model`.
    pub fn for_model(&self, track: Track, model: &ModelFiles) -> Result<Launch, String> {
        let local = model
            .local
            .as_ref()
            .ok_or("the model has no copy on this machine")?;
        let mut launch = self.clone();
        launch.key = format!("{}-v{}", track.as_str(), model.version);
        launch.pids = pids_dir(&self.dir, track);
        launch.env.push((
            "PADDLECLOUD_MODEL_DIR".to_owned(),
            local.to_string_lossy().into_owned(),
        ));
        launch.env.push((
            "PADDLECLOUD_MODEL_VERSION".to_owned(),
            model.version.to_string(),
        ));
        Ok(launch)
    }
}

/// Where the process groups of `track`'s replicas are recorded.
pub(super) fn pids_dir(dir: &Path, track: Track) -> PathBuf {
    match track {
        Track::Main => dir.join("pids"),
        other => dir.join(format!("pids-{}", other.as_str())),
    }
}

/// What a pool reports to its instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct PoolState {
    /// Replicas that answer.
    pub ready: u32,
    /// What it waits for, or why a replica restarts.
    pub message: String,
    /// Why it cannot run, once it cannot.
    pub failed: Option<String>,
}

/// One version's replicas, as its instance and the endpoint see them.
pub(super) struct Pool {
    /// The track it serves.
    pub track: Track,
    /// The version.
    pub version: u32,
    desired: watch::Sender<u32>,
    /// Ready replicas: index → port.
    ready: Mutex<BTreeMap<usize, u16>>,
    state: Mutex<PoolState>,
    /// Its instance's: told of every change.
    changed: Arc<Notify>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Pool {
    /// Starts `replicas` replicas as `launch` says; every change of theirs
    /// is told to `changed`.
    pub fn start(
        track: Track,
        version: u32,
        replicas: u32,
        launch: Launch,
        probe: reqwest::Client,
        changed: Arc<Notify>,
    ) -> Arc<Pool> {
        let (stop, stop_rx) = watch::channel(false);
        let pool = Arc::new(Pool {
            track,
            version,
            desired: watch::channel(replicas).0,
            ready: Mutex::new(BTreeMap::new()),
            state: Mutex::new(PoolState::default()),
            changed,
            stop,
            task: Mutex::new(None),
        });
        let task = tokio::spawn(supervise(pool.clone(), launch, probe, stop_rx));
        *pool.task.lock().expect("pool lock") = Some(task);
        pool
    }

    /// The ports of its ready replicas.
    pub fn ready_ports(&self) -> Vec<u16> {
        self.ready
            .lock()
            .expect("ready lock")
            .values()
            .copied()
            .collect()
    }

    /// What it reports now.
    pub fn state(&self) -> PoolState {
        self.state.lock().expect("pool lock").clone()
    }

    /// Replicas it is to run.
    pub fn desired(&self) -> u32 {
        *self.desired.borrow()
    }

    /// Runs `n` replicas (fewer: the last ones stop, after they leave the
    /// ready set).
    pub fn set_desired(&self, n: u32) {
        self.desired
            .send_if_modified(|d| std::mem::replace(d, n) != n);
    }

    /// Ends every replica; returns once they are gone.
    pub async fn stop(&self) {
        self.ready.lock().expect("ready lock").clear();
        self.stop.send_replace(true);
        let task = self.task.lock().expect("pool lock").take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    fn update(&self, f: impl FnOnce(&mut PoolState)) {
        {
            let mut state = self.state.lock().expect("pool lock");
            f(&mut state);
            state.ready = self.ready.lock().expect("ready lock").len() as u32;
        }
        self.changed.notify_one();
    }
}

/// What a replica tells its pool, sent with its index and the serial it
/// was started with.
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

/// Keeps the pool's wanted replicas running until stopped or failed.
async fn supervise(
    pool: Arc<Pool>,
    launch: Launch,
    probe: reqwest::Client,
    mut stop: watch::Receiver<bool>,
) {
    let (tx, mut rx) = mpsc::channel::<(usize, u64, News)>(64);
    // Each replica with the serial it was started with: news from one
    // that was scaled away can still be queued when another takes its index.
    let mut replicas: Vec<(watch::Sender<bool>, tokio::task::JoinHandle<()>, u64)> = Vec::new();
    let mut serials = 0u64;
    let mut desired = pool.desired.subscribe();
    let failed = loop {
        let want = *desired.borrow_and_update() as usize;
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
            // Out of the ready set first: no new call goes to it while its
            // server finishes those in progress (it drains on SIGTERM).
            pool.ready
                .lock()
                .expect("ready lock")
                .remove(&replicas.len());
            pool.update(|_| {});
            stop_tx.send_replace(true);
            let _ = task.await;
        }
        pool.update(|_| {});
        tokio::select! {
            _ = desired.changed() => {}
            _ = stop.changed() => break None,
            news = rx.recv() => match news {
                Some((i, _, News::Waiting(why))) => {
                    pool.update(|s| s.message = format!("Replica {i} {why}"));
                }
                // From a replica scaled away after it said so (its port
                // gone, its end no one's business): another may have its index.
                Some((i, serial, _)) if replicas.get(i).is_none_or(|r| r.2 != serial) => {}
                Some((i, _, News::Ready(port))) => {
                    pool.ready.lock().expect("ready lock").insert(i, port);
                    pool.update(|s| s.message.clear());
                }
                Some((i, _, News::Down(why))) => {
                    pool.ready.lock().expect("ready lock").remove(&i);
                    pool.update(|s| s.message = format!("Replica {i} restarting: {why}"));
                }
                Some((i, _, News::Fatal(why))) => break Some(format!("Replica {i} failed to start: {why}")),
                None => break None,
            },
        }
    };
    pool.ready.lock().expect("ready lock").clear();
    for (stop_tx, _, _) in &replicas {
        stop_tx.send_replace(true);
    }
    for (_, task, _) in replicas {
        let _ = task.await;
    }
    if let Some(why) = failed {
        pool.update(|s| s.failed = Some(why));
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
    let log = launch
        .dir
        .join("logs")
        .join(format!("{}-{index}.log", launch.key));
    let pid_file = launch.pids.join(format!("{}-{index}", launch.key));
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
        .for_command(
            &format!("serving-{}-{}-{index}", launch.id, launch.key),
            &asked,
            &mut cmd,
        )
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
