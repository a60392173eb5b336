//! An instance's state, read from its Deployment and pods into the record:
//! its status, a roll's progress and end (the version every main replica
//! serves), and how many canary and shadow replicas are ready.

use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::{AtomicU32, Ordering};

use app::models::{ServingStatus, Track};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, Patch, PatchParams};
use kube::Api;
use serde_json::json;
use tokio::sync::watch;

use super::objects::{track_id, track_name};
use super::SERVING_ID;
use crate::backend::serving::{Reporter, ServingRun, ServingState};
use crate::kubernetes::inputs::FETCHER;
use crate::kubernetes::objects::selector;
use crate::kubernetes::pods::failure;
use crate::kubernetes::Inner;

/// Failed pods (with none ready) that fail the instance, at most: fewer when
/// fewer replicas are wanted (see [`fails_the_instance`]).
const MAX_FAILED_PODS: usize = 3;
/// How often an instance's status is read.
const POLL: Duration = Duration::from_secs(1);

/// Ready replicas of an instance's canary and shadow.
#[derive(Default)]
pub struct SideReady {
    canary: AtomicU32,
    shadow: AtomicU32,
}

impl SideReady {
    fn of(&self, track: Track) -> Option<&AtomicU32> {
        match track {
            Track::Canary => Some(&self.canary),
            Track::Shadow => Some(&self.shadow),
            Track::Main => None,
        }
    }

    /// Records that `track` has `ready` replicas ready.
    pub fn set(&self, (track, ready): (Track, u32)) {
        if let Some(n) = self.of(track) {
            n.store(ready, Ordering::Relaxed);
        }
    }

    /// Ready replicas of `track` (0 for the main one: not counted here).
    pub fn get(&self, track: Track) -> u32 {
        self.of(track).map_or(0, |n| n.load(Ordering::Relaxed))
    }
}

/// The model version a Deployment's pod template serves.
fn template_version(d: &Deployment) -> Option<u32> {
    let pod = d.spec.as_ref()?.template.spec.as_ref()?;
    pod.containers
        .iter()
        .flat_map(|c| c.env.iter().flatten())
        .find(|e| e.name == "PADDLECLOUD_MODEL_VERSION")?
        .value
        .as_ref()?
        .parse()
        .ok()
}

/// Where a roll of the main Deployment is: `Some((version, updated))`
/// while replicas of an older template remain or the newest is not ready,
/// `None` once every replica runs the newest template and answers.
fn rolling(d: &Deployment, wanted: u32) -> Option<(u32, u32)> {
    let status = d.status.as_ref()?;
    let observed = status.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0).max(0) as u32;
    let total = status.replicas.unwrap_or(0).max(0) as u32;
    let ready = status.ready_replicas.unwrap_or(0).max(0) as u32;
    let done = observed && updated >= wanted && total <= wanted && ready >= wanted;
    (!done).then(|| (template_version(d).unwrap_or(0), updated))
}

/// Reads the instance's Deployment and pods into its record until stopped;
/// the canary's and shadow's ready replicas go to `sides`.
pub(super) async fn follow(
    inner: Arc<Inner>,
    run: ServingRun,
    reporter: Reporter,
    mut stop: watch::Receiver<bool>,
    sides: impl Fn((Track, u32)) + Send,
) {
    let ns = &run.account.namespace;
    let deployments: Api<Deployment> = inner.api(ns);
    let pods: Api<Pod> = inner.api(ns);
    let main_pods = selector(&[(SERVING_ID, &run.id.to_string())]);
    let mut last = None;
    let mut serving = run.model.version;
    loop {
        // A canary or shadow none of whose pods is ready, with failed
        // ones, is said in the message (its calls go to the main version).
        let mut side_failed = String::new();
        for track in [Track::Canary, Track::Shadow] {
            let (exists, ready) = match deployments
                .get_opt(&track_name(&run.spec.name, track))
                .await
            {
                Ok(Some(d)) => (
                    true,
                    d.status.and_then(|s| s.ready_replicas).unwrap_or(0).max(0) as u32,
                ),
                _ => (false, 0),
            };
            if exists && ready == 0 {
                let own = selector(&[(SERVING_ID, &track_id(run.id, track))]);
                if let Ok(listed) = pods.list(&ListParams::default().labels(&own)).await {
                    if let Some(why) = listed.items.iter().rev().find_map(failed_line) {
                        side_failed = format!("The {} failed: {why}", track.as_str());
                    }
                }
            }
            sides((track, ready));
        }
        let state = async {
            let d = deployments.get_opt(&run.spec.name).await.ok()??;
            let wanted = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0).max(0) as u32;
            let roll = rolling(&d, wanted);
            let version = template_version(&d);
            let status = d.status.unwrap_or_default();
            let ready = status.ready_replicas.unwrap_or(0).max(0) as u32;
            let listed = pods
                .list(&ListParams::default().labels(&main_pods))
                .await
                .ok()?;
            let failed: Vec<String> = listed.items.iter().filter_map(failed_line).collect();
            let fetching = listed.items.iter().filter(|p| is_fetching(p)).count();
            Some((wanted, ready, failed, fetching, roll, version))
        }
        .await;
        if let Some((wanted, ready, failed, fetching, roll, version)) = state {
            if let (None, Some(version)) = (roll, version) {
                if version != serving {
                    serving = version;
                    reporter
                        .rolled(run.account.id, run.id, &run.spec.name, version)
                        .await;
                }
            }
            let why = failed.last().cloned().unwrap_or_default();
            let next = if fails_the_instance(ready, wanted, failed.len()) {
                (
                    ServingStatus::Failed,
                    0,
                    format!("Replicas failed to start: {why}"),
                )
            } else {
                let message = if let Some((to, updated)) = roll.filter(|r| r.0 != serving) {
                    let failing = if failed.is_empty() {
                        String::new()
                    } else {
                        format!(" A new replica failed: {why}")
                    };
                    format!(
                        "Rolling from v{serving} to v{to}: {updated} of {wanted} replicas on v{to}.{failing}"
                    )
                } else if ready < wanted && !failed.is_empty() {
                    format!("A replica failed: {why}")
                } else if ready < wanted && fetching > 0 {
                    format!("Fetching the model into {fetching} replica(s).")
                } else {
                    side_failed.clone()
                };
                (
                    ServingStatus::of_replicas(ready, wanted.max(1)),
                    ready,
                    message,
                )
            };
            if last.as_ref() != Some(&next) {
                reporter
                    .report(
                        run.account.id,
                        run.id,
                        &run.spec.name,
                        ServingState::new(next.0, next.1, &next.2),
                    )
                    .await;
                last = Some(next.clone());
            }
            if next.0 == ServingStatus::Failed {
                // Stop the churn of new pods failing the same way.
                let patch = json!({ "spec": { "replicas": 0 } });
                let _ = deployments
                    .patch(
                        &run.spec.name,
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await;
                return;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = stop.changed() => return,
        }
    }
}

/// Whether the instance has failed: no replica ready, and failed pods for
/// every replica wanted (up to [`MAX_FAILED_PODS`]). A Deployment's pod whose
/// container keeps failing stays one pod (restarted, `CrashLoopBackOff`;
/// [`failure`] counts it once it has restarted 3 times), so one replica
/// wanted fails with its one pod, not three.
fn fails_the_instance(ready: u32, wanted: u32, failed_pods: usize) -> bool {
    ready == 0 && failed_pods >= MAX_FAILED_PODS.min(wanted.max(1) as usize)
}

/// Whether a pod is still fetching its model (its init container runs).
fn is_fetching(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.init_container_statuses.as_ref())
        .is_some_and(|all| {
            all.iter()
                .any(|c| c.name == FETCHER && c.state.as_ref().is_some_and(|s| s.running.is_some()))
        })
}

/// Why a pod failed, if it did ([`failure`]), as one line: the predict
/// server's own, else the last.
fn failed_line(pod: &Pod) -> Option<String> {
    let text = failure(pod)?;
    Some(
        text.lines()
            .rev()
            .find(|l| l.contains("cannot load the model") || l.contains("cannot fetch "))
            .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or("")
            .trim()
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::fails_the_instance;

    #[test]
    fn an_instance_fails_once_every_wanted_replica_has_failed_and_none_is_ready() {
        // One replica, restarted until it crash-loops: its one pod fails it.
        assert!(fails_the_instance(0, 1, 1));
        assert!(!fails_the_instance(0, 2, 1), "the other may still start");
        assert!(fails_the_instance(0, 2, 2));
        // Many replicas: three failed pods are enough to say so.
        assert!(fails_the_instance(0, 10, 3));
        assert!(!fails_the_instance(0, 10, 2));
        // A ready replica serves: not failed.
        assert!(!fails_the_instance(1, 1, 5));
        // Scaled to zero: any failed pod still says it.
        assert!(fails_the_instance(0, 0, 1));
        assert!(!fails_the_instance(0, 0, 0));
    }
}
