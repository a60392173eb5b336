//! What a run does next, decided from its nodes as they are: which nodes
//! start, which are skipped and why, and whether the run has ended. Pure,
//! so that every console replica (and a restarted one) decides the same
//! from the same rows.

use super::{Dependency, Need, NodeState, NodeStatus, PipelineSpec, RunStatus};

/// One thing to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Submit try `attempt` of node `node` (an index into the spec).
    Start {
        /// The node.
        node: usize,
        /// Which try (1 for the first).
        attempt: u32,
    },
    /// Node `node` will not run.
    Skip {
        /// The node.
        node: usize,
        /// Why, in words.
        why: String,
    },
    /// Every node is final: the run ends so.
    End {
        /// Succeeded only if no node failed.
        status: RunStatus,
        /// Which nodes failed.
        message: String,
    },
}

/// Whether a dependency holds now (`Some(true)`), never can (`Some(false)`),
/// or is undecided.
fn holds(dep: &Dependency, status: NodeStatus) -> Option<bool> {
    use NodeStatus::*;
    match (status, dep.need) {
        (Pending | Running, _) => None,
        (Succeeded, Need::Succeeded | Need::Finished) => Some(true),
        (Failed, Need::Failed | Need::Finished) => Some(true),
        (Skipped, Need::Finished) => Some(true),
        _ => Some(false),
    }
}

/// Why a dependency can never hold, in words.
fn why_not(dep: &Dependency, status: NodeStatus) -> String {
    let wanted = match dep.need {
        Need::Succeeded => "to succeed",
        Need::Failed => "to fail",
        Need::Finished => "to end",
    };
    format!(
        "It waited for “{}” {wanted}, which {}.",
        dep.node,
        match status {
            NodeStatus::Succeeded => "succeeded",
            NodeStatus::Failed => "failed",
            NodeStatus::Skipped => "was skipped",
            _ => "was stopped",
        }
    )
}

/// Whether node `state` has yet to submit a job now: never started, or a
/// retry whose wait is over.
fn due(state: &NodeState, now_ms: i64) -> bool {
    state.status == NodeStatus::Pending
        && (state.job.is_none() || state.not_before.is_some_and(|t| t <= now_ms))
}

/// What to do next with a run whose nodes are `nodes` (in the spec's
/// order) at `now_ms`. Skips cascade: a node whose dependency was just
/// skipped is skipped in the same call.
pub fn next_steps(spec: &PipelineSpec, nodes: &[NodeState], now_ms: i64) -> Vec<Step> {
    let index = spec.index();
    let deps: Vec<Vec<Dependency>> = spec.nodes.iter().map(|n| n.dependencies()).collect();
    let mut status: Vec<NodeStatus> = nodes.iter().map(|n| n.status).collect();
    let mut steps = Vec::new();
    let first_failure = |status: &[NodeStatus]| {
        status
            .iter()
            .position(|s| *s == NodeStatus::Failed)
            .map(|i| spec.nodes[i].name.clone())
    };
    // Skips first, until nothing more can be skipped.
    loop {
        let mut changed = false;
        let failed = first_failure(&status).filter(|_| spec.fail_fast);
        for i in 0..status.len() {
            // A job already submitted runs its course; a node not started
            // yet (or waiting to retry) may be skipped.
            let startable = status[i] == NodeStatus::Pending
                && (nodes[i].job.is_none() || nodes[i].not_before.is_some());
            if !startable {
                continue;
            }
            let why = if let Some(failed) = &failed {
                Some(format!(
                    "Not started: “{failed}” failed and the pipeline fails fast."
                ))
            } else {
                deps[i].iter().find_map(|d| {
                    let s = status[index[d.node.as_str()]];
                    (holds(d, s) == Some(false)).then(|| why_not(d, s))
                })
            };
            if let Some(why) = why {
                status[i] = NodeStatus::Skipped;
                steps.push(Step::Skip { node: i, why });
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for i in 0..status.len() {
        if status[i] != NodeStatus::Pending || !due(&nodes[i], now_ms) {
            continue;
        }
        let ready = deps[i]
            .iter()
            .all(|d| holds(d, status[index[d.node.as_str()]]) == Some(true));
        if ready {
            steps.push(Step::Start {
                node: i,
                attempt: nodes[i].attempt + 1,
            });
        }
    }
    let started = steps.iter().any(|s| matches!(s, Step::Start { .. }));
    if !started && status.iter().all(|s| s.is_final()) {
        let failed: Vec<String> = status
            .iter()
            .enumerate()
            .filter(|(_, s)| **s == NodeStatus::Failed)
            .map(|(i, _)| format!("“{}”", spec.nodes[i].name))
            .collect();
        steps.push(if failed.is_empty() {
            Step::End {
                status: RunStatus::Succeeded,
                message: String::new(),
            }
        } else {
            Step::End {
                status: RunStatus::Failed,
                message: format!("Failed: {}.", failed.join(", ")),
            }
        });
    }
    steps
}
