//! Preemption on Kubernetes (opt-in, `--preemption-grace`), by the rule the
//! local executor follows ([`app::models::queue::preemption_victims`]): when
//! a job's pod cannot be placed, its own account's running jobs of lower
//! priority are stopped, as few as make room (lowest priority first, then
//! the most recently started), and queued again. Their pods are deleted
//! with the preemption grace and their replica Jobs made again at once, so
//! they wait behind the higher job: the scheduler takes pending pods in the
//! order of their priority classes.
//!
//! The cluster's own preemption (`preemptionPolicy: PreemptLowerPriority`)
//! is not used: it crosses namespaces, so one account's high job would
//! evict another's, and the console's serving and notebook pods (priority
//! 0) would go for any job. The classes keep `preemptionPolicy: Never`.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use app::error::AppError;
use app::models::queue::{preemption_victims, Preempted, Preemptible};
use app::models::{Account, JobQuery, JobStatus, PodPhase, WorkKind};
use k8s_openapi::api::batch::v1::Job as KubeJob;
use k8s_openapi::api::core::v1::{ConfigMap, Pod as KubePod};
use kube::api::{ListParams, PostParams};

use super::errors::from_kube;
use super::objects::{self, replica_job_name, selector, CONSOLE, JOB_ID, MANAGED_BY};
use super::pods::unschedulable;
use super::{wait_gone, Inner};

/// How long a preempted job's replica Jobs may take to go before they are
/// made again.
const GONE_WITHIN: Duration = Duration::from_secs(30);

/// A job preemption stopped.
#[derive(Default)]
pub(super) struct PreemptedJob {
    /// Its pods that were stopped (uids): their last events are history.
    pods: HashSet<String>,
    /// Why, as its status says while it waits again.
    pub(super) why: String,
}

impl Inner {
    /// Whether `uid` is a pod of job `job_id` that preemption stopped: its
    /// last events are history, the job's replacements count.
    pub(super) fn is_preempted_pod(&self, job_id: i64, uid: Option<&str>) -> bool {
        let preempted = self.preempted.lock().expect("preempted lock");
        uid.is_some_and(|uid| {
            preempted
                .get(&job_id)
                .is_some_and(|job| job.pods.contains(uid))
        })
    }

    /// Why job `job_id` waits again, if preemption stopped it.
    pub(super) fn preempted_why(&self, job_id: i64) -> Option<String> {
        let preempted = self.preempted.lock().expect("preempted lock");
        preempted.get(&job_id).map(|job| job.why.clone())
    }

    /// Notes that job `job_id` waits with a pod the scheduler could not
    /// place, for [`Self::preempt_again`].
    pub(super) fn note_unplaced(&self, job_id: i64) {
        self.unplaced.lock().expect("unplaced lock").insert(job_id);
    }

    /// Tries preemption again for each job noted as unplaced that still
    /// waits: a decision that found nothing to stop (everything of lower
    /// priority already gone, or the room fragmented) may find it now.
    pub(super) async fn preempt_again(self: &Arc<Self>) {
        let noted: Vec<i64> = self
            .unplaced
            .lock()
            .expect("unplaced lock")
            .iter()
            .copied()
            .collect();
        for job_id in noted {
            let waiting = match self.store.by_id(job_id).await {
                Ok(stored) if stored.job.status == JobStatus::Pending => stored,
                _ => {
                    self.unplaced.lock().expect("unplaced lock").remove(&job_id);
                    continue;
                }
            };
            let tried = match self.store.account_of(waiting.account_id).await {
                Ok(account) => self.preempt_for(&account, job_id).await,
                Err(err) => Err(err),
            };
            if let Err(err) = tried {
                tracing::warn!(error = %err, job_id, "preempting for a job");
            }
        }
    }

    /// Forgets what preemption recorded of a job that has ended.
    pub(super) fn forget_preempted(&self, job_id: i64) {
        self.preempted
            .lock()
            .expect("preempted lock")
            .remove(&job_id);
    }

    /// Makes room for `account`'s waiting job `job_id`, whose pod cannot be
    /// placed, by preempting its account's running jobs of lower priority,
    /// if preemption is on and stopping them makes room.
    pub(super) async fn preempt_for(
        self: &Arc<Self>,
        account: &Account,
        job_id: i64,
    ) -> Result<(), AppError> {
        let Some(grace) = self.preemption else {
            return Ok(());
        };
        // One decision at a time: two would count the same room twice.
        let _one = self.preempting.lock().await;
        let waiting = self.store.by_id(job_id).await?;
        if waiting.job.status != JobStatus::Pending || waiting.job.cluster != self.name {
            return Ok(());
        }
        // Only while one of its pods is still not placed: a placed pod
        // holds its room already, and counting it as wanted would stop
        // work in vain.
        let labels = selector(&[(MANAGED_BY, CONSOLE), (JOB_ID, &job_id.to_string())]);
        let unplaced = self
            .api::<KubePod>(&account.namespace)
            .list(&ListParams::default().labels(&labels))
            .await
            .map_err(|e| from_kube("list the waiting job's pods", e))?
            .items
            .iter()
            .any(|p| p.status.as_ref().and_then(unschedulable).is_some());
        if !unplaced {
            self.unplaced.lock().expect("unplaced lock").remove(&job_id);
            return Ok(());
        }
        let need = waiting.job.spec.totals()?;
        let room = self.room.read_now(&self.client).await?;
        let free = room.total.minus(room.used);
        let query = JobQuery {
            status: Some(JobStatus::Running),
            per_page: Some(1000),
            ..JobQuery::default()
        };
        let running: Vec<_> = self
            .store
            .list(account.id, &query)
            .await?
            .jobs
            .into_iter()
            .filter(|j| j.cluster == self.name)
            .collect();
        let preemptible: Vec<Preemptible> = running
            .iter()
            .map(|j| Preemptible {
                priority: j.spec.priority,
                since: j.started_at.unwrap_or(j.created_at),
                holds: j.spec.totals().unwrap_or_default(),
                giving_back: false,
            })
            .collect();
        let priority = waiting.job.spec.priority;
        let victims = preemption_victims(need, priority, free, &preemptible);
        let why = Preempted {
            by: waiting.job.name.clone(),
            kind: WorkKind::Job,
            priority,
        }
        .words();
        for victim in victims.into_iter().map(|i| &running[i]) {
            tracing::info!(job = %victim.name, account = %account.name, by = %waiting.job.name, "preempting");
            self.requeue(account, &victim.name, &why, grace).await?;
        }
        Ok(())
    }

    /// Stops job `name`'s pods (SIGTERM, SIGKILL after `grace`) and makes
    /// its replica Jobs again, the job waiting, saying `why` ("Preempted by
    /// job urgent (high priority)") before the scheduler's reason.
    async fn requeue(
        self: &Arc<Self>,
        account: &Account,
        name: &str,
        why: &str,
        grace: Duration,
    ) -> Result<(), AppError> {
        let stored = self.store.get(account.id, name).await?;
        let (id, spec, ns) = (stored.id, &stored.job.spec, &account.namespace);
        let labels = selector(&[(MANAGED_BY, CONSOLE), (JOB_ID, &id.to_string())]);
        let lp = ListParams::default().labels(&labels);
        let pods = self.api::<KubePod>(ns);
        let old: HashSet<String> = pods
            .list(&lp)
            .await
            .map_err(|e| from_kube("list the preempted job's pods", e))?
            .items
            .into_iter()
            .filter_map(|p| p.metadata.uid)
            .collect();
        {
            let mut preempted = self.preempted.lock().expect("preempted lock");
            let job = preempted.entry(id).or_default();
            job.pods.extend(old);
            job.why = why.to_owned();
        }
        let said = format!("{why}; waits to run again.");
        for pod in self.store.pods(id).await? {
            if pod.phase != PodPhase::Pending {
                self.collect_log(&account.name, name, id, ns, &pod.name)
                    .await;
            }
        }
        self.remove_workloads(ns, id, Some(grace)).await?;
        self.store.requeue_pods(id, &said).await?;
        self.store.set_status(id, JobStatus::Pending, &said).await?;
        self.emit(account.id, name);
        let jobs = self.api::<KubeJob>(ns);
        for (replica, _, _) in spec.pod_names() {
            let job = replica_job_name(&spec.name, &replica);
            wait_gone(&jobs, &job, "a preempted replica's Job to go", GONE_WITHIN).await?;
        }
        let parent = self
            .api::<ConfigMap>(ns)
            .get(&spec.name)
            .await
            .map_err(|e| from_kube("read the preempted job", e))?;
        let ctx = self.job_context(account, spec, id).await;
        let pp = PostParams::default();
        for replica in objects::replica_jobs(spec, &ctx, &parent)? {
            jobs.create(&pp, &replica)
                .await
                .map_err(|e| from_kube("queue the preempted job's replicas again", e))?;
        }
        Ok(())
    }
}
