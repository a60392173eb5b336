//! Container statuses and the pod status the kubelet patches.

use super::*;

/// Which container of the pod.
#[derive(Clone, Copy, Debug)]
pub(super) enum Which {
    Init(usize),
    Main(usize),
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum CState {
    Waiting {
        reason: String,
        message: Option<String>,
    },
    Running {
        started: SystemTime,
        id: String,
    },
    Terminated {
        code: i32,
        reason: String,
        message: Option<String>,
        started: SystemTime,
        finished: SystemTime,
        id: Option<String>,
    },
}

pub(super) struct CStatus {
    pub(super) name: String,
    pub(super) image: String,
    pub(super) init: bool,
    pub(super) state: CState,
}

impl CStatus {
    pub(super) fn json(&self) -> Value {
        let mut v = json!({
            "name": self.name,
            "image": self.image,
            "imageID": format!("testkubelet://{}", self.image),
            "restartCount": 0,
            "ready": false,
            "started": false,
            "lastState": {},
        });
        match &self.state {
            CState::Waiting { reason, message } => {
                let mut w = json!({ "reason": reason });
                if let Some(m) = message {
                    w["message"] = json!(m);
                }
                v["state"] = json!({ "waiting": w });
            }
            CState::Running { started, id } => {
                v["state"] = json!({ "running": { "startedAt": rfc3339(*started) } });
                v["ready"] = json!(true);
                v["started"] = json!(true);
                v["containerID"] = json!(id);
            }
            CState::Terminated {
                code,
                reason,
                message,
                started,
                finished,
                id,
            } => {
                let mut t = json!({
                    "exitCode": code,
                    "reason": reason,
                    "startedAt": rfc3339(*started),
                    "finishedAt": rfc3339(*finished),
                });
                if let Some(m) = message {
                    t["message"] = json!(m);
                }
                if let Some(id) = id {
                    t["containerID"] = json!(id);
                    v["containerID"] = json!(id);
                }
                v["state"] = json!({ "terminated": t });
                v["ready"] = json!(self.init && *code == 0);
            }
        }
        v
    }

    pub(super) fn ended(&self, ok: bool) -> bool {
        matches!(self.state, CState::Terminated { code, .. } if (code == 0) == ok)
    }
}

/// A pod's status as the kubelet sees it.
pub(super) struct PodState {
    pub(super) init: Vec<CStatus>,
    pub(super) main: Vec<CStatus>,
    pub(super) start_time: SystemTime,
    pub(super) reason: Option<String>,
    pub(super) message: Option<String>,
    /// Each condition's status and when it last changed.
    pub(super) conditions: HashMap<&'static str, (bool, SystemTime)>,
}

impl PodState {
    pub(super) fn new(spec: &k8s_openapi::api::core::v1::PodSpec) -> PodState {
        let status = |c: &Container, init: bool, reason: &str| CStatus {
            name: c.name.clone(),
            image: c.image.clone().unwrap_or_default(),
            init,
            state: CState::Waiting {
                reason: reason.into(),
                message: None,
            },
        };
        let init: Vec<CStatus> = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| status(c, true, "PodInitializing"))
            .collect();
        let main_reason = if init.is_empty() {
            "ContainerCreating"
        } else {
            "PodInitializing"
        };
        PodState {
            main: spec
                .containers
                .iter()
                .map(|c| status(c, false, main_reason))
                .collect(),
            init,
            start_time: SystemTime::now(),
            reason: None,
            message: None,
            conditions: HashMap::new(),
        }
    }

    pub(super) fn get(&mut self, which: Which) -> &mut CStatus {
        match which {
            Which::Init(i) => &mut self.init[i],
            Which::Main(i) => &mut self.main[i],
        }
    }

    pub(super) fn phase(&self) -> &'static str {
        if self.init.iter().any(|c| c.ended(false)) {
            return "Failed";
        }
        if !self.init.iter().all(|c| c.ended(true)) {
            return "Pending";
        }
        let terminated = |c: &CStatus| matches!(c.state, CState::Terminated { .. });
        if !self.main.is_empty() && self.main.iter().all(terminated) {
            if self.main.iter().all(|c| c.ended(true)) {
                "Succeeded"
            } else {
                "Failed"
            }
        } else if self
            .main
            .iter()
            .any(|c| matches!(c.state, CState::Waiting { .. }))
        {
            "Pending"
        } else {
            "Running"
        }
    }

    /// The pod's status, with `pod_ip` as its IP.
    pub(super) fn json(&mut self, pod_ip: &str) -> Value {
        let phase = self.phase();
        let initialized = self.init.iter().all(|c| c.ended(true));
        let ready = phase == "Running"
            && self
                .main
                .iter()
                .all(|c| matches!(c.state, CState::Running { .. }));
        let not_ready = if phase == "Succeeded" || phase == "Failed" {
            "PodCompleted"
        } else {
            "ContainersNotReady"
        };
        let now = SystemTime::now();
        let mut condition = |kind: &'static str, ok: bool, reason: &str| {
            let entry = self.conditions.entry(kind).or_insert((ok, now));
            if entry.0 != ok {
                *entry = (ok, now);
            }
            let mut c = json!({
                "type": kind,
                "status": if ok { "True" } else { "False" },
                "lastProbeTime": null,
                "lastTransitionTime": rfc3339(entry.1),
            });
            if !ok {
                c["reason"] = json!(reason);
            }
            c
        };
        let conditions = json!([
            condition("Initialized", initialized, "ContainersNotInitialized"),
            condition("Ready", ready, not_ready),
            condition("ContainersReady", ready, not_ready),
            condition("PodScheduled", true, ""),
        ]);
        let mut status = json!({
            "phase": phase,
            "conditions": conditions,
            "hostIP": LOCALHOST,
            "podIP": pod_ip,
            "podIPs": [{ "ip": pod_ip }],
            "startTime": rfc3339(self.start_time),
            "containerStatuses": self.main.iter().map(CStatus::json).collect::<Vec<_>>(),
        });
        if !self.init.is_empty() {
            status["initContainerStatuses"] =
                json!(self.init.iter().map(CStatus::json).collect::<Vec<_>>());
        }
        if let Some(reason) = &self.reason {
            status["reason"] = json!(reason);
        }
        if let Some(message) = &self.message {
            status["message"] = json!(message);
        }
        status
    }
}
