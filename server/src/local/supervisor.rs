//! One task per job: waits in the machine's queue until all its replicas
//! fit, starts them together (each with its own GPUs and limits), watches
//! them exit, decides the job's outcome, and ends the rest when it is
//! decided. Preempted (the scheduler gives its room to higher-priority work
//! of its account), it stops its replicas within the preemption grace and
//! queues again in its old place; the next run starts over.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use app::models::{JobRole, JobSpec, JobStatus, PodPhase};
use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use nix::sys::signal::Signal;
use tokio::sync::watch;

use super::limits::ReplicaLimit;
use super::machine::gpu_env;
use super::process::{command, free_ports, signal_group};
use super::recovery::pod_marker;
use app::models::queue::Preempted;

use super::scheduler::{Ask, Grant};
use super::venvs::Prepared;
use super::Inner;
use crate::storage::jobs::PodUpdate;
use crate::storage::logfile;
use crate::time::now_ms;

/// How long a replica's log may stay open after it exited (a background
/// grandchild holding the pipe) before the supervisor moves on.
const LOG_DRAIN: Duration = Duration::from_secs(2);

/// What the supervisor needs to know about the job it runs.
pub struct SupervisedJob {
    /// Database id.
    pub job_id: i64,
    /// Owning account's id.
    pub account_id: i64,
    /// Owning account's name.
    pub account: String,
    /// What was submitted.
    pub spec: JobSpec,
    /// `<data>/jobs/<account>/<job>`.
    pub dir: PathBuf,
    /// The job's own token (`PADDLECLOUD_JOB_TOKEN`): writes this job's metrics.
    pub token: String,
    /// Where the console is (`PADDLECLOUD_SERVER`), when known.
    pub console_url: Option<String>,
    /// The datasets and model versions it reads.
    pub inputs: Inputs,
    /// What its replicas ask of the machine, in pod order.
    pub ask: Ask,
}

/// What a job reads: datasets, then model versions, each with its local
/// folder, given to every replica in the input's variables; and the
/// account's secrets it uses, with their values.
#[derive(Default)]
pub struct Inputs {
    /// Each dataset or model version, and its folder.
    pub folders: Vec<(app::models::Input, PathBuf)>,
    /// Its secrets' variables and files.
    pub secrets: crate::secrets::Revealed,
}

/// A replica whose process was started.
struct Live {
    role: JobRole,
    pgid: i64,
    /// The GPUs it holds.
    gpus: Vec<u32>,
}

/// How a replica ended.
struct Exit {
    pod: String,
    code: Option<i32>,
    signal: Option<i32>,
    /// Ends the pod's followed log streams. Sent only once the exit is on
    /// record, so a follower that sees its stream end reads the final state.
    log_done: watch::Sender<bool>,
}

/// Why a job fails that ran when the console stopped (SIGTERM): its
/// replicas cannot outlive their supervisor.
pub const CONSOLE_STOPPED: &str = "The console stopped while this job ran; its replicas were \
     stopped (SIGTERM, then SIGKILL after the grace period). Run it again to start over.";

/// Runs the job to its end, then releases anything waiting on it.
pub async fn supervise(
    inner: Arc<Inner>,
    run: SupervisedJob,
    stop: watch::Receiver<bool>,
    done: watch::Sender<bool>,
) {
    let job_id = run.job_id;
    let account_id = run.account_id;
    let name = run.spec.name.clone();
    let mut stop = stop;
    let ran = match prepare_environment(&inner, &run, &mut stop).await {
        Ok(Prepared::Ready(venv)) => {
            let mut again: Option<(u64, Preempted)> = None;
            loop {
                match wait_turn(&inner, &run, &mut stop, again.as_ref()).await {
                    Ok(Some(grant)) => {
                        let seq = grant.seq;
                        match drive(&inner, &run, stop.clone(), grant, venv.as_deref()).await {
                            Ok(Ended::Preempted(why)) => again = Some((seq, why)),
                            Ok(Ended::Decided) => break Ok(()),
                            Err(err) => break Err(err),
                        }
                    }
                    Ok(None) => break stopped_in_queue(&inner, &run).await,
                    Err(err) => break Err(err),
                }
            }
        }
        Ok(Prepared::Stopped) => stopped_in_queue(&inner, &run).await,
        Ok(Prepared::Failed(why)) => {
            end_unstarted(&inner, &run, PodPhase::Failed, JobStatus::Failed, &why).await
        }
        Err(err) => Err(err),
    };
    if let Err(err) = ran {
        tracing::error!(job = %name, error = %err, "job supervisor failed");
        let _ = inner
            .store
            .set_status(
                job_id,
                JobStatus::Failed,
                "The executor failed; see the console's log.",
            )
            .await;
    }
    inner
        .controls
        .lock()
        .expect("controls lock")
        .remove(&job_id);
    let _ = done.send(true);
    inner.emit(account_id, &name);
}

/// Waits in the machine's queue, keeping the job's message on why (the job
/// table shows it); `None` if the job is stopped before its turn. After a
/// preemption (`again`: its place and why) it queues in its old place, its
/// message saying it was preempted.
async fn wait_turn(
    inner: &Arc<Inner>,
    run: &SupervisedJob,
    stop: &mut watch::Receiver<bool>,
    again: Option<&(u64, Preempted)>,
) -> anyhow::Result<Option<Grant>> {
    let scheduler = &inner.machine.scheduler;
    let (ticket, preempted) = match again {
        Some((seq, why)) => (scheduler.requeue(run.ask.clone(), *seq), Some(why.words())),
        None => (scheduler.enqueue(run.ask.clone()), None),
    };
    let preempted = preempted.as_deref();
    ticket
        .wait_turn(stop, |why| async move {
            let said = match preempted {
                Some(p) => format!("{p}; queued again, {why}"),
                None => why,
            };
            set_job(inner, run, JobStatus::Pending, &said).await
        })
        .await
}

/// How a run of the job's replicas ended.
enum Ended {
    /// The job's outcome is decided and written.
    Decided,
    /// Its replicas were stopped to give the room back; it queues again.
    Preempted(Preempted),
}

/// Builds the job's environment (at most once for every job that lists
/// the same requirements) before it queues for room, with the job saying
/// so meanwhile, and how far the build is.
async fn prepare_environment(
    inner: &Arc<Inner>,
    run: &SupervisedJob,
    stop: &mut watch::Receiver<bool>,
) -> anyhow::Result<Prepared> {
    let environment = run.spec.environment_use.as_ref();
    let told = |why: String| async move { set_job(inner, run, JobStatus::Pending, &why).await };
    inner
        .venvs
        .prepare(environment, run.spec.extra_requirements(), stop, told)
        .await
}

/// A job stopped while it waited: no replica ran. When the console is
/// stopping, it stays Pending as it is, to be queued again by the next start.
async fn stopped_in_queue(inner: &Inner, run: &SupervisedJob) -> anyhow::Result<()> {
    if inner.is_stopping() {
        set_job(
            inner,
            run,
            JobStatus::Pending,
            "Queued again when the console is back (it stopped while this job waited).",
        )
        .await?;
        return Ok(());
    }
    end_unstarted(
        inner,
        run,
        PodPhase::Stopped,
        JobStatus::Stopped,
        "Stopped by a user while it waited for room.",
    )
    .await
}

/// Ends a job none of whose replicas started, saying why on each.
async fn end_unstarted(
    inner: &Inner,
    run: &SupervisedJob,
    phase: PodPhase,
    status: JobStatus,
    why: &str,
) -> anyhow::Result<()> {
    let pod_message = match status {
        JobStatus::Stopped => {
            "Not started: the job was stopped while it waited for room.".to_owned()
        }
        _ => format!("Not started: {why}"),
    };
    for (pod, _, _) in run.spec.pod_names() {
        set_pod(
            inner,
            run,
            &pod,
            PodUpdate {
                phase: Some(phase),
                message: Some(pod_message.clone()),
                ..Default::default()
            },
        )
        .await?;
    }
    set_job(inner, run, status, why).await
}

fn env_for(
    run: &SupervisedJob,
    pod: &str,
    role: JobRole,
    index: u32,
    port: u16,
    ps: &str,
    trainers: &str,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = run
        .spec
        .env
        .iter()
        .map(|v| (v.name.clone(), v.value.clone()))
        .collect();
    let endpoint = format!("127.0.0.1:{port}");
    env.extend(
        [
            ("PADDLE_JOB_ID", run.spec.name.clone()),
            ("TRAINING_ROLE", role.training_role().to_owned()),
            ("PADDLE_TRAINERS_NUM", run.spec.num_trainers.to_string()),
            ("PADDLE_PSERVERS_NUM", run.spec.num_ps.to_string()),
            ("PADDLE_PSERVERS_IP_PORT_LIST", ps.to_owned()),
            ("PADDLE_TRAINER_ENDPOINTS", trainers.to_owned()),
            ("PADDLE_PORT", port.to_string()),
            ("PADDLE_CURRENT_ENDPOINT", endpoint),
            ("POD_IP", "127.0.0.1".to_owned()),
            ("PYTHONUNBUFFERED", "1".to_owned()),
            ("PADDLECLOUD_ACCOUNT", run.account.clone()),
            ("PADDLECLOUD_POD", pod.to_owned()),
            ("PADDLECLOUD_JOB_TOKEN", run.token.clone()),
        ]
        .map(|(k, v)| (k.to_owned(), v)),
    );
    if let Some(url) = &run.console_url {
        env.push(("PADDLECLOUD_SERVER".to_owned(), url.clone()));
    }
    for (input, dir) in &run.inputs.folders {
        for variable in input.variables() {
            env.push((variable, dir.display().to_string()));
        }
    }
    match role {
        JobRole::Trainer => env.push(("PADDLE_TRAINER_ID".into(), index.to_string())),
        JobRole::Pserver => env.push(("PADDLE_PSERVER_ID".into(), index.to_string())),
    }
    let (k, v) = pod_marker(run.job_id, pod)
        .split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .expect("marker has =");
    env.push((k, v));
    env
}

async fn set_pod(
    inner: &Inner,
    run: &SupervisedJob,
    pod: &str,
    update: PodUpdate,
) -> anyhow::Result<()> {
    inner
        .store
        .update_pod(run.job_id, pod, update)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    inner.emit(run.account_id, &run.spec.name);
    Ok(())
}

async fn set_job(
    inner: &Inner,
    run: &SupervisedJob,
    status: JobStatus,
    message: &str,
) -> anyhow::Result<()> {
    inner
        .store
        .set_status(run.job_id, status, message)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    inner.emit(run.account_id, &run.spec.name);
    Ok(())
}

async fn drive(
    inner: &Arc<Inner>,
    run: &SupervisedJob,
    mut stop: watch::Receiver<bool>,
    mut grant: Grant,
    venv: Option<&Path>,
) -> anyhow::Result<Ended> {
    let pods = run.spec.pod_names();
    let ports = free_ports(pods.len())?;
    let endpoints = |role: JobRole| {
        pods.iter()
            .zip(&ports)
            .filter(|((_, r, _), _)| *r == role)
            .map(|(_, port)| format!("127.0.0.1:{port}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let ps_list = endpoints(JobRole::Pserver);
    let trainer_list = endpoints(JobRole::Trainer);
    let cwd = run.dir.join(&run.spec.working_dir);
    tokio::fs::create_dir_all(&cwd).await?;
    let argv = run.spec.argv();
    // Written for this run and removed when it ends (dropped with `drive`).
    let secret_files = super::secret_files::SecretFiles::write(
        &inner.secret_files,
        &format!("job-{}", run.job_id),
        &run.inputs.secrets.files,
    )?;
    let masks = logfile::Masks::of(&run.inputs.secrets.masks());

    let mut live: HashMap<String, Live> = HashMap::new();
    let mut limits: HashMap<String, ReplicaLimit> = HashMap::new();
    let mut exits = FuturesUnordered::new();
    let mut failure: Option<String> = None;

    for (((pod, role, index), port), (asked, gpus)) in pods
        .iter()
        .zip(&ports)
        .zip(run.ask.replicas.iter().zip(&grant.gpus))
    {
        let mut env = env_for(run, pod, *role, *index, *port, &ps_list, &trainer_list);
        env.extend(run.inputs.secrets.env.iter().cloned());
        env.extend(secret_files.env());
        env.extend(gpu_env(gpus));
        if let Some(venv) = venv {
            env.extend(super::venvs::venv_env(venv, &inner.inherited_env));
        }
        let path = logfile::log_path(&run.dir, pod);
        let mut cmd = command(&argv, &cwd, &inner.inherited_env, &env);
        let limited =
            inner
                .machine
                .limits
                .for_command(&format!("job-{}-{pod}", run.job_id), asked, &mut cmd);
        let spawned = limited.and_then(|limit| cmd.spawn().map(|child| (child, limit)));
        match spawned {
            Ok((mut child, mut limit)) => {
                let pgid = i64::from(child.id().unwrap_or(0));
                limit.watch(pgid as i32);
                limits.insert(pod.clone(), limit);
                let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take())
                else {
                    anyhow::bail!("a replica's output pipes were not set up");
                };
                let pump = logfile::spawn_masked_pump(path, stdout, stderr, masks.clone());
                let (log_tx, log_rx) = watch::channel(false);
                inner
                    .log_done
                    .lock()
                    .expect("log_done lock")
                    .insert((run.job_id, pod.clone()), log_rx);
                live.insert(
                    pod.clone(),
                    Live {
                        role: *role,
                        pgid,
                        gpus: gpus.clone(),
                    },
                );
                set_pod(
                    inner,
                    run,
                    pod,
                    PodUpdate {
                        phase: Some(PodPhase::Running),
                        pid: Some(pgid),
                        started_at: Some(now_ms()),
                        gpus: Some(gpus.clone()),
                        ..Default::default()
                    },
                )
                .await?;
                let pod = pod.clone();
                exits.push(async move {
                    let status = child.wait().await;
                    if let Ok(Err(err)) | Err(err) = tokio::time::timeout(LOG_DRAIN, pump)
                        .await
                        .map(|joined| joined.map_err(std::io::Error::other).and_then(|r| r))
                        .map_err(std::io::Error::other)
                    {
                        tracing::warn!(pod = %pod, error = %err, "log of a replica was not drained");
                    }
                    use std::os::unix::process::ExitStatusExt;
                    let (code, signal) = match status {
                        Ok(s) => (s.code(), s.signal()),
                        Err(_) => (None, None),
                    };
                    Exit { pod, code, signal, log_done: log_tx }
                });
            }
            Err(err) => {
                let message = format!("Could not start {}: {err}", argv[0]);
                let _ = tokio::fs::write(&path, format!("{}\n", message)).await;
                set_pod(
                    inner,
                    run,
                    pod,
                    PodUpdate {
                        phase: Some(PodPhase::Failed),
                        finished_at: Some(now_ms()),
                        message: Some(message.clone()),
                        ..Default::default()
                    },
                )
                .await?;
                failure = Some(format!("{pod}: {message}"));
                break;
            }
        }
    }

    let (samples, every) = inner.sampler.clone();
    let sampling = tokio::spawn(super::sampling::sample_pods(
        samples.clone(),
        run.job_id,
        live.iter()
            .map(|(pod, replica)| (pod.clone(), replica.pgid as i32, replica.gpus.clone()))
            .collect(),
        every,
    ));
    let mut outcome: Option<(JobStatus, String)> = failure.map(|m| (JobStatus::Failed, m));
    if outcome.is_none() {
        set_job(inner, run, JobStatus::Running, "").await?;
    }
    let trainers = run.spec.num_trainers as usize;
    let mut trainers_done = 0usize;
    // Logs of pods whose exit decided or ended the job: released after the
    // job's own status is written.
    let mut done_with_job: Vec<watch::Sender<bool>> = Vec::new();

    // Past its time limit it is stopped, and fails saying so.
    let limit = run.spec.max_runtime_seconds();
    // (Without one the timer is never polled: the branch below is off.)
    let time_limit = tokio::time::sleep(Duration::from_secs(limit.unwrap_or(3600)));
    tokio::pin!(time_limit);
    // Preempted: why, once the scheduler says so.
    let mut preempted: Option<Preempted> = None;
    // Watch replicas until the job's outcome is decided.
    while outcome.is_none() {
        tokio::select! {
            Ok(()) = grant.preempted.changed() => {
                if let Some(why) = grant.preempted.borrow_and_update().clone() {
                    outcome = Some((JobStatus::Pending, format!("{}; stopping its replicas to queue again.", why.words())));
                    preempted = Some(why);
                }
            }
            _ = &mut time_limit, if limit.is_some() => {
                let said = run.spec.max_runtime.clone().unwrap_or_default();
                outcome = Some((JobStatus::Failed, format!("Ran past its time limit of {said}: stopped.")));
            }
            Some(exit) = exits.next() => {
                let Some(replica) = live.remove(&exit.pod) else { continue };
                let exceeded = limits.remove(&exit.pod).and_then(|limit| limit.exceeded());
                let ok = exit.code == Some(0) && exceeded.is_none();
                let message = match (exceeded, exit.code, exit.signal) {
                    (Some(why), _, _) => why,
                    (None, Some(0), _) => String::new(),
                    (None, Some(code), _) => format!("exited with code {code}"),
                    (None, None, Some(sig)) => format!("killed by signal {sig}"),
                    (None, None, None) => "ended, status unknown".to_owned(),
                };
                set_pod(inner, run, &exit.pod, PodUpdate {
                    phase: Some(if ok { PodPhase::Succeeded } else { PodPhase::Failed }),
                    exit_code: exit.code,
                    finished_at: Some(now_ms()),
                    message: Some(message.clone()),
                    ..Default::default()
                }).await?;
                match replica.role {
                    JobRole::Trainer if ok => {
                        trainers_done += 1;
                        if trainers_done == trainers {
                            outcome = Some((JobStatus::Succeeded, String::new()));
                        }
                    }
                    JobRole::Trainer => {
                        outcome = Some((JobStatus::Failed, format!("{} {message}.", exit.pod)));
                    }
                    JobRole::Pserver => {
                        let why = if ok { "exited before the trainers finished".to_owned() } else { message };
                        outcome = Some((JobStatus::Failed, format!("{} {why}.", exit.pod)));
                    }
                }
                if outcome.is_none() {
                    let _ = exit.log_done.send(true);
                } else {
                    done_with_job.push(exit.log_done);
                }
            }
            changed = stop.changed() => {
                if inner.is_stopping() {
                    outcome = Some((JobStatus::Failed, CONSOLE_STOPPED.to_owned()));
                } else if changed.is_err() || *stop.borrow() {
                    outcome = Some((JobStatus::Stopped, "Stopped by a user.".to_owned()));
                }
            }
        }
    }
    let (status, message) = outcome.expect("decided above");

    // End whatever still runs: parameter servers after success, everything
    // after a failure or a stop.
    let why = match status {
        JobStatus::Pending => {
            "Stopped to give its room to higher-priority work; it runs again when there is room."
        }
        JobStatus::Succeeded => "Stopped after the trainers finished.",
        JobStatus::Stopped => "Stopped by a user.",
        _ if message == CONSOLE_STOPPED => "Stopped because the console stopped.",
        _ if message.starts_with("Ran past its time limit") => "Stopped at the job's time limit.",
        _ => "Stopped because the job failed.",
    };
    for replica in live.values() {
        signal_group(replica.pgid, Signal::SIGTERM);
    }
    let grace = match (&preempted, inner.machine.scheduler.preemption_grace()) {
        (Some(_), Some(grace)) => grace,
        _ => inner.grace,
    };
    let deadline = tokio::time::sleep(grace);
    tokio::pin!(deadline);
    while !live.is_empty() {
        tokio::select! {
            Some(exit) = exits.next() => {
                if let Some(replica) = live.remove(&exit.pod) {
                    signal_group(replica.pgid, Signal::SIGKILL); // its own children, if any linger
                }
                done_with_job.push(exit.log_done);
                set_pod(inner, run, &exit.pod, PodUpdate {
                    phase: Some(PodPhase::Stopped),
                    exit_code: exit.code,
                    finished_at: Some(now_ms()),
                    message: Some(why.to_owned()),
                    ..Default::default()
                }).await?;
            }
            _ = &mut deadline => {
                for replica in live.values() {
                    signal_group(replica.pgid, Signal::SIGKILL);
                }
                // Their exits arrive on the next turns.
                deadline.as_mut().reset(tokio::time::Instant::now() + Duration::from_secs(3600));
            }
        }
    }
    // Replicas that never started (a failed start stops the loop early).
    for pod in inner
        .store
        .pods(run.job_id)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?
    {
        if pod.phase == PodPhase::Pending && preempted.is_none() {
            set_pod(
                inner,
                run,
                &pod.name,
                PodUpdate {
                    phase: Some(PodPhase::Stopped),
                    message: Some("Not started because the job failed.".into()),
                    ..Default::default()
                },
            )
            .await?;
        }
    }
    sampling.abort();
    // Gone before the flush: a sample it was still storing would otherwise
    // land after it (kept in memory, never flushed) or roll back with it.
    let _ = sampling.await;
    if let Err(err) = samples.flush(run.job_id).await {
        tracing::warn!(job = %run.spec.name, error = %err, "storing resource samples");
    }
    {
        let mut logs = inner.log_done.lock().expect("log_done lock");
        for (pod, _, _) in &pods {
            logs.remove(&(run.job_id, pod.clone()));
        }
    }
    if let Some(why) = preempted {
        // Back to waiting, each replica saying why; the room goes back
        // when the grant drops.
        let said = format!("{}; waits to run again.", why.words());
        inner
            .store
            .requeue_pods(run.job_id, &said)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        set_job(inner, run, JobStatus::Pending, &said).await?;
        for log_done in done_with_job {
            let _ = log_done.send(true);
        }
        drop(grant);
        return Ok(Ended::Preempted(why));
    }
    let written = set_job(inner, run, status, &message).await;
    for log_done in done_with_job {
        let _ = log_done.send(true);
    }
    written.map(|()| Ended::Decided)
}
