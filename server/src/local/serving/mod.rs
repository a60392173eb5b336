//! Serving on this machine: each replica is a real server process on a free
//! port of 127.0.0.1, restarted when it dies, behind the console's endpoint
//! (which balances between the replicas that answer). An instance runs a
//! [`pool::Pool`] of replicas per track (main, canary, shadow); a new main
//! version rolls in replica by replica: one of the new version answers
//! before one of the old leaves the ready set and drains, so calls always
//! find a replica. A main pool whose replicas never come up (the model does
//! not load) fails the instance with the reason from its log; a failed
//! canary, shadow or roll is said in the message and the rest serves on.

mod pool;
mod tracks;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::error::AppError;
use app::models::{Account, Autoscale, ServingStatus, Track};
use async_trait::async_trait;
use tokio::sync::{mpsc, watch};

use self::pool::{pids_dir, Launch, Pool};
use self::tracks::Tracks;
use super::process::kill_recorded_group;
use super::venvs::{Prepared, Waited};
use super::workload_host::WorkloadHost;
use crate::backend::serving::{
    http_client, Reporter, ServingBackend, ServingRun, ServingState, Upstream, PREDICT_SERVER,
};
use crate::backend::supervised::Supervised;

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

/// What a running instance shares: its main size, its pools and the
/// releases asked of it.
struct Instance {
    /// Main replicas wanted (a scale or the autoscaler sets it).
    desired: watch::Sender<u32>,
    /// Autoscaler bounds, while it autoscales.
    bounds: watch::Sender<Option<Autoscale>>,
    /// Every running pool, for the endpoint.
    pools: Mutex<Vec<Arc<Pool>>>,
    /// Round-robin position.
    next: AtomicUsize,
    /// Releases for its task to carry out.
    releases: mpsc::UnboundedSender<ServingRun>,
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
        for track in Track::ALL {
            tokio::fs::create_dir_all(pids_dir(&dir, track))
                .await
                .map_err(io("creating a serving directory"))?;
        }
        let mut env: Vec<(String, String)> = run
            .spec
            .env
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect();
        let threads = run.spec.per_replica()?.cpu_millis.div_ceil(1000).max(1);
        env.extend([
            ("HOST".to_owned(), "127.0.0.1".to_owned()),
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
            // argv[0] is the host's Python, settled when the instance starts.
            vec![String::new(), server.to_string_lossy().into_owned()]
        } else {
            run.spec.command.clone()
        };
        let host = &self.inner.host;
        let secret_files = host
            .secret_files(&format!("serving-{}", run.id), &run.secrets.files)
            .map_err(io("writing a serving instance's secret files"))?;
        env.extend(run.secrets.env.iter().cloned());
        env.extend(secret_files.env());
        let mut launch = Launch {
            id: run.id,
            ask: host
                .machine
                .serving_ask(&run.spec)?
                .owned_by(&run.account.name, &run.spec.name),
            machine: host.machine.clone(),
            argv,
            inherited_env: host.inherited_env.clone(),
            env,
            pids: pids_dir(&dir, Track::Main),
            dir,
            grace: host.grace,
            key: String::new(),
        };
        let (desired, _) = watch::channel(run.spec.replicas);
        let (bounds, _) = watch::channel(run.spec.autoscale);
        let cores = run.spec.per_replica()?.cpu_millis as f64 / 1000.0;
        let main_pids = pids_dir(&launch.dir, Track::Main);
        let (releases, releases_rx) = mpsc::unbounded_channel();
        let instance = Instance {
            desired,
            bounds,
            pools: Mutex::new(Vec::new()),
            next: AtomicUsize::new(0),
            releases,
        };
        let inner = self.inner.clone();
        self.inner.instances.spawn(run.id, instance, move |instance| async move {
            // Its secret files stay while it runs.
            let _secret_files = secret_files;
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
            let told = |why: String| async move {
                report(ServingStatus::Pending, why).await;
                Ok::<_, std::convert::Infallible>(())
            };
            // The default server's Python: given, or (on the embedded
            // defaults) the console's build with PaddlePaddle, unless the
            // instance names an environment, whose venv runs it instead.
            if default_server && environment.is_none() {
                let Ok(python) = inner.host.server_python(&mut stop, told).await;
                match python {
                    Waited::Ready(python) => launch.argv[0] = python,
                    Waited::Stopped => return,
                    Waited::Failed(why) => return report(ServingStatus::Failed, why).await,
                }
            }
            let Ok(prepared) = inner.host.venvs.prepare(environment, &[], &mut stop, told).await;
            match prepared {
                Prepared::Ready(venv) => {
                    if let Some(venv) = venv {
                        launch.in_venv(&venv, default_server);
                    }
                    let state = &instance.state;
                    let mut tracks = Tracks::new(state, &run, &reporter, launch, inner.probe().clone());
                    // The autoscaler ends with the instance.
                    tokio::select! {
                        _ = tracks.run(stop, releases_rx) => {}
                        _ = super::autoscale::run(&main_pids, &state.desired, state.bounds.subscribe(), cores) => {}
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
            None => Err(not_running(&run.spec.name)),
        }
    }

    async fn shut_down(&self) {
        self.inner.instances.stop_all().await;
    }

    async fn stop(&self, _account: &Account, id: i64, _name: &str) -> Result<(), AppError> {
        self.inner.instances.stop(id).await;
        Ok(())
    }

    async fn release(&self, run: ServingRun, _reporter: Reporter) -> Result<(), AppError> {
        match self.inner.instances.get(run.id) {
            Some(i) => {
                let name = run.spec.name.clone();
                i.state.releases.send(run).map_err(|_| not_running(&name))
            }
            None => Err(not_running(&run.spec.name)),
        }
    }

    async fn upstream(
        &self,
        _account: &Account,
        id: i64,
        _name: &str,
        track: Track,
    ) -> Option<Upstream> {
        let instance = self.inner.instances.get(id)?;
        let instance = &instance.state;
        // A main track that rolls has two pools: both serve.
        let ports: Vec<u16> = instance
            .pools
            .lock()
            .expect("pools lock")
            .iter()
            .filter(|p| p.track == track)
            .flat_map(|p| p.ready_ports())
            .collect();
        if ports.is_empty() {
            return None;
        }
        let n = instance.next.fetch_add(1, Ordering::Relaxed) % ports.len();
        Some(Upstream::Http(format!("http://127.0.0.1:{}", ports[n])))
    }
}

/// Ends processes a previous console left running for this instance: each
/// recorded group whose leader still carries the instance's tag.
fn kill_leftovers(dir: &Path, tag: &str) {
    let marker = format!("PADDLECLOUD_SERVING_INSTANCE={tag}");
    for track in Track::ALL {
        let Ok(entries) = std::fs::read_dir(pids_dir(dir, track)) else {
            continue;
        };
        for entry in entries.flatten() {
            kill_recorded_group(&entry.path(), &marker);
        }
    }
}

fn not_running(name: &str) -> AppError {
    AppError::conflict("name", format!("“{name}” is not running."))
}
