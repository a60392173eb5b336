//! A notebook's state, read from its pod into the record.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use app::models::NotebookStatus;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::json;

use super::objects::{pod_name, stateful_set_name};
use super::Reach;
use crate::backend::lab_client::LabClient;
use crate::backend::last_lines;
use crate::backend::notebooks::{
    answers, restarted_note, NotebookReporter, NotebookRun, NotebookState, START_TIMEOUT,
};
use crate::backend::supervised::Supervisee;
use crate::kubernetes::pods::{failure, waiting_reason};
use crate::kubernetes::Inner;

/// How often the pod is read (and, while it starts, JupyterLab asked).
const POLL: Duration = Duration::from_secs(1);

/// What follows one notebook's pod.
pub(super) struct Follower {
    pub inner: Arc<Inner>,
    pub run: NotebookRun,
    pub reporter: NotebookReporter,
    /// The port JupyterLab listens on in the pod.
    pub port: u16,
    /// How its server is reached.
    pub reach: Reach,
    pub probe: LabClient,
    /// Where the server's address is published for the proxy, and the
    /// signal that ends this task.
    pub published: Arc<Supervisee<Mutex<Option<String>>>>,
}

/// What the pod says now.
enum Seen {
    /// No pod (yet): the StatefulSet makes it.
    NoPod,
    /// Waiting for room or for its container, with why.
    Waiting(Option<String>),
    /// Its container runs at this address (the pod's uid, `http://ip:port`).
    Up(String, String),
    /// It failed: its last words.
    Failed(String),
}

impl Follower {
    /// Reads the pod every [`POLL`] and reports each change until `stop`.
    pub async fn run(self) {
        let mut stop = self.published.stop_signal();
        let run = &self.run;
        let pods: Api<Pod> = self.inner.api(&run.account.namespace);
        let pod = pod_name(&run.spec.name);
        let status_path = format!("{}api/status", run.base_url);
        let mut last: Option<(NotebookStatus, String)> = None;
        // The pod (uid) whose server answered, and since when one runs unanswered.
        let mut serving: Option<String> = None;
        // Set once a server answered: one answering after it is a restart
        // (its pod deleted or its container restarted), which the message says.
        let mut answered_once = false;
        let mut running_note = String::new();
        let mut running_since: Option<Instant> = None;
        loop {
            if *stop.borrow() {
                return;
            }
            let next = match pods.get_opt(&pod).await {
                // The API server is away: say nothing new.
                Err(_) => None,
                Ok(found) => Some(
                    match found.as_ref().map(|p| seen(p, self.port, self.reach)) {
                        None | Some(Seen::NoPod) => {
                            (NotebookStatus::Pending, "Creating its pod…".to_owned())
                        }
                        Some(Seen::Waiting(why)) => {
                            running_since = None;
                            let why = why.map_or("Starting its pod…".to_owned(), |w| {
                                if w.contains("nodes are available") {
                                    format!("Waiting for room: {w}")
                                } else {
                                    format!("Starting its pod: {w}")
                                }
                            });
                            (NotebookStatus::Pending, why)
                        }
                        Some(Seen::Failed(words)) => {
                            let lines: Vec<String> = words
                                .lines()
                                .map(str::trim)
                                .filter(|l| !l.is_empty())
                                .map(str::to_owned)
                                .collect();
                            let why = format!("JupyterLab stopped: {}", last_lines(&lines, 4, 600));
                            self.fail(&why).await;
                            return;
                        }
                        Some(Seen::Up(uid, base)) => {
                            if serving.as_deref() == Some(uid.as_str()) {
                                (NotebookStatus::Running, running_note.clone())
                            } else if answers(
                                &self.probe,
                                &format!("{base}{status_path}"),
                                &run.jupyter_token,
                            )
                            .await
                            {
                                serving = Some(uid);
                                self.publish(Some(base));
                                (NotebookStatus::Running, running_note.clone())
                            } else {
                                self.publish(None);
                                let since = *running_since.get_or_insert_with(Instant::now);
                                if since.elapsed() > START_TIMEOUT {
                                    self.fail(&format!(
                                    "JupyterLab did not answer within {} s of its pod starting.",
                                    START_TIMEOUT.as_secs()
                                ))
                                    .await;
                                    return;
                                }
                                (NotebookStatus::Pending, "Starting JupyterLab…".to_owned())
                            }
                        }
                    },
                ),
            };
            if let Some(next) = next {
                if next.0 == NotebookStatus::Running {
                    answered_once = true;
                } else {
                    if answered_once && serving.is_some() {
                        // It answered and now does not: its pod or container ended.
                        let at = app::models::time::format_utc_seconds(crate::time::now_ms());
                        running_note = restarted_note(&format!("its pod's server ended at {at}"));
                    }
                    serving = None;
                    self.publish(None);
                }
                if last.as_ref() != Some(&next) {
                    self.report(next.0, &next.1).await;
                    last = Some(next);
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(POLL) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// Publishes where the proxy reaches the server (`None`: nowhere now).
    fn publish(&self, upstream: Option<String>) {
        *self.published.state.lock().expect("upstream lock") = upstream;
    }

    async fn report(&self, status: NotebookStatus, message: &str) {
        let run = &self.run;
        self.reporter
            .report(
                run.account.id,
                run.id,
                &run.spec.name,
                NotebookState::new(status, message),
            )
            .await;
    }

    /// Fails the notebook with `why` and scales it to 0, so that pods do
    /// not keep failing the same way.
    async fn fail(&self, why: &str) {
        self.publish(None);
        let run = &self.run;
        let sets: Api<StatefulSet> = self.inner.api(&run.account.namespace);
        let patch = json!({ "spec": { "replicas": 0 } });
        if let Err(err) = sets
            .patch(
                &stateful_set_name(&run.spec.name),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            tracing::warn!(notebook = %run.spec.name, error = %err, "scaling a failed notebook to 0");
        }
        self.report(NotebookStatus::Failed, why).await;
    }
}

/// Where the server of `pod`, listening on `port`, is reached (`None`
/// before it has an IP).
pub(super) fn address(pod: &Pod, port: u16, reach: Reach) -> Option<String> {
    let ip = pod.status.as_ref()?.pod_ip.as_deref()?;
    Some(match reach {
        Reach::PodIp => format!("http://{}:{port}", host(ip)),
        Reach::ApiServer => super::tunnel::address(
            pod.metadata.name.as_deref()?,
            pod.metadata.namespace.as_deref()?,
            port,
        ),
    })
}

/// What `pod` says, its server listening on `port`, reached by `reach`.
fn seen(pod: &Pod, port: u16, reach: Reach) -> Seen {
    if let Some(words) = failure(pod) {
        return Seen::Failed(words);
    }
    let status = pod.status.clone().unwrap_or_default();
    let running = status.phase.as_deref() == Some("Running")
        && status
            .container_statuses
            .iter()
            .flatten()
            .all(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()));
    match (running, address(pod, port, reach)) {
        (true, Some(base)) if pod.metadata.deletion_timestamp.is_none() => {
            Seen::Up(pod.metadata.uid.clone().unwrap_or_default(), base)
        }
        _ if status.phase.is_none() => Seen::NoPod,
        _ => Seen::Waiting(waiting_reason(pod)),
    }
}

/// An IP as a URL's host (IPv6 in brackets).
fn host(ip: &str) -> String {
    if ip.contains(':') {
        format!("[{ip}]")
    } else {
        ip.to_owned()
    }
}
