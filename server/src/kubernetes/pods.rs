//! What the console reads off its pods, for every kind of workload.

use k8s_openapi::api::core::v1::{Pod, PodStatus};

/// Restarts after which a container that keeps failing counts as failed.
const MAX_RESTARTS: i32 = 3;

/// Why a pod failed, if it did: a Failed pod, or a container that keeps
/// restarting. The text is the container's own message (its last output,
/// with `terminationMessagePolicy: FallbackToLogsOnError`), an init
/// container's first, else its exit code.
pub(crate) fn failure(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    let init = status.init_container_statuses.iter().flatten();
    let main = status.container_statuses.iter().flatten();
    let containers: Vec<_> = init
        .map(|c| (true, c))
        .chain(main.map(|c| (false, c)))
        .collect();
    let message = containers.iter().find_map(|(is_init, c)| {
        let state = c.state.as_ref()?;
        let terminated = state
            .terminated
            .as_ref()
            .or(c.last_state.as_ref().and_then(|s| s.terminated.as_ref()))?;
        // An init container that did its work says nothing of the failure.
        if *is_init && terminated.exit_code == 0 {
            return None;
        }
        Some(
            terminated
                .message
                .clone()
                .filter(|m| !m.trim().is_empty())
                .unwrap_or_else(|| format!("exited with code {}", terminated.exit_code)),
        )
    });
    let crashing = containers
        .iter()
        .any(|(_, c)| c.restart_count >= MAX_RESTARTS);
    let failed = status.phase.as_deref() == Some("Failed");
    (failed || crashing).then(|| message.unwrap_or_else(|| "the container failed".to_owned()))
}

/// Why the scheduler has not placed a pod ("0/3 nodes are available: 3
/// Insufficient cpu."), if it says.
pub(crate) fn unschedulable(status: &PodStatus) -> Option<String> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .and_then(|c| c.message.clone())
}

/// Why a pod that is not running yet waits: the scheduler's word, else its
/// container's (`ContainerCreating`, `ImagePullBackOff: …`), else the pod's.
pub(crate) fn waiting_reason(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    let unschedulable = unschedulable(status);
    let waiting = status
        .init_container_statuses
        .iter()
        .chain(status.container_statuses.iter())
        .flatten()
        .find_map(|c| c.state.as_ref()?.waiting.clone())
        .and_then(|w| match (w.reason, w.message) {
            (Some(reason), Some(message)) => Some(format!("{reason}: {message}")),
            (reason, message) => reason.or(message),
        });
    unschedulable
        .or(waiting)
        .or(status.message.clone())
        .filter(|m| !m.trim().is_empty())
}

/// Variable `name` of a container, as JSON (`Null` when it has none).
/// Whether a pod may still run a process: a container reported running (or
/// not reported at all in a Running pod). A waiting container (being made,
/// or never started) runs nothing, and a deleted pod starts nothing new.
pub(crate) fn any_container_running(pod: &Pod) -> bool {
    let Some(status) = &pod.status else {
        return false;
    };
    let phase = status.phase.as_deref();
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    match status.container_statuses.as_deref() {
        Some(containers) if !containers.is_empty() => containers.iter().any(|c| {
            c.state
                .as_ref()
                .is_none_or(|s| s.terminated.is_none() && s.waiting.is_none())
        }),
        _ => phase == Some("Running"),
    }
}

/// Whether a pod is Pending with no container that ever ran (waiting for
/// its image, or not yet placed): nothing of it runs, so nothing is lost by
/// removing it without a grace period.
pub(crate) fn never_started(pod: &Pod) -> bool {
    let Some(status) = &pod.status else {
        return true;
    };
    status.phase.as_deref().is_none_or(|p| p == "Pending")
        && status.container_statuses.iter().flatten().all(|c| {
            c.state
                .as_ref()
                .is_none_or(|s| s.running.is_none() && s.terminated.is_none())
                && c.last_state.as_ref().is_none_or(|s| s.terminated.is_none())
        })
}

#[cfg(test)]
pub(crate) fn env_of(container: &serde_json::Value, name: &str) -> serde_json::Value {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["name"] == name)
        .cloned()
        .unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({ "metadata": { "name": "p" }, "status": status })).unwrap()
    }

    #[test]
    fn a_pod_the_scheduler_cannot_place_waits_with_the_schedulers_words() {
        let p = pod(json!({
            "phase": "Pending",
            "conditions": [{ "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                             "message": "0/1 nodes are available: 1 Insufficient cpu." }],
        }));
        assert_eq!(
            waiting_reason(&p).as_deref(),
            Some("0/1 nodes are available: 1 Insufficient cpu.")
        );
        assert_eq!(failure(&p), None);
    }

    #[test]
    fn a_container_that_cannot_pull_its_image_waits_with_the_reason() {
        let p = pod(json!({
            "phase": "Pending",
            "containerStatuses": [{ "name": "c", "ready": false, "restartCount": 0, "image": "x",
                "imageID": "", "state": { "waiting": { "reason": "ImagePullBackOff",
                "message": "Back-off pulling image \"x\"" } } }],
        }));
        assert_eq!(
            waiting_reason(&p).as_deref(),
            Some("ImagePullBackOff: Back-off pulling image \"x\"")
        );
    }

    #[test]
    fn a_container_that_keeps_crashing_fails_with_its_last_words() {
        let p = pod(json!({
            "phase": "Running",
            "containerStatuses": [{ "name": "c", "ready": false, "restartCount": 3, "image": "x",
                "imageID": "", "state": { "waiting": { "reason": "CrashLoopBackOff" } },
                "lastState": { "terminated": { "exitCode": 1,
                    "message": "Traceback\nNo module named jupyterlab" } } }],
        }));
        assert_eq!(
            failure(&p).as_deref(),
            Some("Traceback\nNo module named jupyterlab")
        );
    }

    #[test]
    fn a_failed_pod_is_told_by_its_failing_container_not_by_an_init_step_that_did_its_work() {
        let p = pod(json!({
            "phase": "Failed",
            "initContainerStatuses": [{ "name": "fetch-inputs", "ready": true, "restartCount": 0,
                "image": "x", "imageID": "", "state": { "terminated": { "exitCode": 0 } } }],
            "containerStatuses": [{ "name": "c", "ready": false, "restartCount": 0, "image": "x",
                "imageID": "", "state": { "terminated": { "exitCode": 3, "message": "no data" } } }],
        }));
        assert_eq!(failure(&p).as_deref(), Some("no data"));
    }

    #[test]
    fn a_pod_runs_a_process_until_its_containers_have_ended() {
        let container = |state: serde_json::Value| {
            json!({ "name": "c", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
                    "state": state })
        };
        let running = pod(json!({ "phase": "Running",
            "containerStatuses": [container(json!({ "running": {} }))] }));
        assert!(any_container_running(&running));
        // Deleted, its container killed, the object still there.
        let ended = pod(json!({ "phase": "Running",
            "containerStatuses": [container(json!({ "terminated": { "exitCode": 137 } }))] }));
        assert!(!any_container_running(&ended));
        let making = pod(json!({ "phase": "Pending",
            "containerStatuses": [container(json!({ "waiting": { "reason": "ContainerCreating" } }))] }));
        assert!(!any_container_running(&making));
        // Running with nothing said about its containers: assume they run.
        assert!(any_container_running(&pod(json!({ "phase": "Running" }))));
        assert!(!any_container_running(&pod(
            json!({ "phase": "Succeeded" })
        )));
    }

    #[test]
    fn only_a_pending_pod_whose_containers_never_ran_counts_as_never_started() {
        let with = |phase: &str, state: serde_json::Value| {
            pod(
                json!({ "phase": phase, "containerStatuses": [{ "name": "c", "ready": false,
                "restartCount": 0, "image": "x", "imageID": "", "state": state }] }),
            )
        };
        assert!(never_started(&with(
            "Pending",
            json!({ "waiting": { "reason": "ErrImagePull" } })
        )));
        assert!(never_started(&pod(json!({ "phase": "Pending" }))));
        assert!(!never_started(&with("Running", json!({ "running": {} }))));
        assert!(!never_started(&with(
            "Pending",
            json!({ "terminated": { "exitCode": 1 } })
        )));
    }
}
