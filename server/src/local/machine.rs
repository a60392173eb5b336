//! This machine as the local executor's replicas share it, jobs' and
//! serving instances' alike: its room and queue ([`LocalScheduler`]) and how
//! replicas are held to their limits ([`Limits`]).

use std::sync::Arc;

use app::error::AppError;
use app::models::{ClusterCapacity, JobRole, JobSpec, NotebookSpec, ServingSpec};

use super::capacity::{self, CapacitySettings};
use super::limits::{Limits, LimitsChoice};
use super::scheduler::{Ask, Asker, LocalScheduler, Owner, ReplicaAsk};

/// The machine's room, queue and limits.
pub struct Machine {
    /// Who holds what, and who waits.
    pub scheduler: Arc<LocalScheduler>,
    /// How replicas are held to what they asked for.
    pub limits: Limits,
}

impl Machine {
    /// Learns the machine as `settings` leave it to learn (`nvidia-smi` for
    /// GPUs) and how limits can be held here (as `limits` says); preempts
    /// lower-priority jobs with `preemption` as their grace (`None`: never).
    pub fn detect(
        settings: &CapacitySettings,
        limits: LimitsChoice,
        preemption: Option<std::time::Duration>,
    ) -> std::io::Result<Arc<Self>> {
        let capacity = capacity::detect(settings, "nvidia-smi");
        tracing::info!(capacity = %capacity.source, "the local executor's room");
        Ok(Arc::new(Self {
            scheduler: LocalScheduler::preempting(capacity, preemption),
            limits: Limits::detect(limits)?,
        }))
    }

    /// A machine of a given room and limits (tests).
    pub fn new(capacity: capacity::Capacity, limits: Limits) -> Arc<Self> {
        Arc::new(Self {
            scheduler: LocalScheduler::new(capacity),
            limits,
        })
    }

    /// What `GET /api/v1/cluster` and the Quota page show.
    pub fn report(&self, cluster: &str) -> ClusterCapacity {
        let capacity = self.scheduler.capacity();
        let (used, held, queued) = self.scheduler.usage();
        ClusterCapacity {
            cluster: cluster.to_owned(),
            total: Some(capacity.totals()),
            used: Some(used),
            gpus: capacity.devices(&held),
            queued: queued as u32,
            limits: self.limits.enforcement(),
            source: capacity.source.clone(),
        }
    }

    /// What a job's replicas ask for, in the order of its pods (`ps-0…`,
    /// `trainer-0…`), or why it can never run here: a replica larger than
    /// the machine, or replicas that together are (they start together).
    pub fn job_ask(&self, spec: &JobSpec) -> Result<Ask, AppError> {
        let ps = spec.ps.totals("ps")?;
        let trainer = spec.trainer.totals("trainer")?;
        let replicas = spec
            .pod_names()
            .into_iter()
            .map(|(_, role, _)| {
                let t = if role == JobRole::Pserver {
                    ps
                } else {
                    trainer
                };
                ReplicaAsk {
                    cpu_millis: t.cpu_millis,
                    memory_bytes: t.memory_bytes,
                    gpus: t.gpu as u32,
                }
            })
            .collect();
        let ask = Ask {
            asker: Asker::Job,
            replicas,
            owner: Owner {
                name: spec.name.clone(),
                priority: spec.priority,
                max_runtime_ms: spec
                    .max_runtime_seconds()
                    .map(|s| i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX)),
                ..Owner::default()
            },
        };
        for (role, n, one) in [
            ("ps", spec.num_ps, ps),
            ("trainer", spec.num_trainers, trainer),
        ] {
            let single = Ask {
                asker: Asker::Job,
                replicas: vec![ReplicaAsk::from(one)],
                owner: Owner::default(),
            };
            if n == 0 {
                continue;
            }
            if let Some(no) = self.scheduler.never_fits(&single) {
                let noun = if role == "ps" {
                    "parameter server"
                } else {
                    "trainer"
                };
                return Err(AppError::invalid(
                    format!("{role}.{}", no.resource),
                    format!(
                        "Each {noun} asks for {}, but this machine offers {} in all.",
                        no.asked, no.capacity
                    ),
                ));
            }
        }
        if let Some(no) = self.scheduler.never_fits(&ask) {
            let role = match no.resource {
                "gpu" if ps.gpu > 0 && trainer.gpu == 0 => "ps",
                "cpu" if spec.num_trainers == 0 => "ps",
                _ => "trainer",
            };
            return Err(AppError::invalid(
                format!("{role}.{}", no.resource),
                format!(
                    "The job's {} replicas ask for {} together and start together, but this \
                     machine offers {}. Ask for less per replica, or for fewer replicas.",
                    spec.num_ps + spec.num_trainers,
                    no.asked,
                    no.capacity
                ),
            ));
        }
        Ok(ask)
    }

    /// What one replica of a serving instance asks for, or why it can never
    /// run here.
    pub fn serving_ask(&self, spec: &ServingSpec) -> Result<Ask, AppError> {
        self.single_ask(Asker::ServingReplica, spec.per_replica()?, "Each replica")
    }

    /// What a notebook's server asks for, or why it can never run here.
    pub fn notebook_ask(&self, spec: &NotebookSpec) -> Result<Ask, AppError> {
        self.single_ask(Asker::Notebook, spec.totals()?, "The notebook")
    }

    /// One process asking for `one`, or why it can never run here (`who`
    /// starts the refusal).
    fn single_ask(
        &self,
        asker: Asker,
        one: app::models::ResourceTotals,
        who: &str,
    ) -> Result<Ask, AppError> {
        let ask = Ask {
            asker,
            replicas: vec![ReplicaAsk::from(one)],
            owner: Owner::default(),
        };
        match self.scheduler.never_fits(&ask) {
            None => Ok(ask),
            Some(no) => Err(AppError::invalid(
                format!("resources.{}", no.resource),
                format!(
                    "{who} asks for {}, but this machine offers {} in all.",
                    no.asked, no.capacity
                ),
            )),
        }
    }
}

/// The environment that tells a replica its GPUs: the devices it may see,
/// and (numbered as it sees them) the ones PaddlePaddle should use. A
/// replica without GPUs sees none, as a pod without a GPU request.
pub fn gpu_env(gpus: &[u32]) -> Vec<(String, String)> {
    let visible = gpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut env = vec![("CUDA_VISIBLE_DEVICES".to_owned(), visible)];
    if !gpus.is_empty() {
        let selected = (0..gpus.len())
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",");
        env.push(("FLAGS_selected_gpus".to_owned(), selected));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_sees_only_its_own_gpus_numbered_from_zero() {
        assert_eq!(
            gpu_env(&[2, 3]),
            [
                ("CUDA_VISIBLE_DEVICES".to_owned(), "2,3".to_owned()),
                ("FLAGS_selected_gpus".to_owned(), "0,1".to_owned())
            ]
        );
        assert_eq!(
            gpu_env(&[]),
            [("CUDA_VISIBLE_DEVICES".to_owned(), String::new())]
        );
    }
}
