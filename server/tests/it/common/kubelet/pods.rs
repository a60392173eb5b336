//! A pod's life: its init containers in order, then its containers at
//! once; status patches as they start and end; deletion with a grace period.

use super::*;

impl Kubelet {
    /// Plays one pod from its binding to its deletion.
    pub(super) async fn run_pod(self: Arc<Self>, pod: Pod, mut del: watch::Receiver<Option<i64>>) {
        let ctx = match PodCtx::new(&self, &pod) {
            Ok(ctx) => ctx,
            Err(err) => {
                self.say(format_args!(
                    "pod {}: {err}",
                    pod.metadata.name.as_deref().unwrap_or("?")
                ));
                return self.finish_later(None, &mut del).await;
            }
        };
        let spec = pod.spec.clone().unwrap_or_default();
        let mut state = PodState::new(&spec);
        let status = pod.status.clone().unwrap_or_default();
        let phase = status.phase.as_deref().unwrap_or("Pending");
        if phase == "Succeeded" || phase == "Failed" {
            return self.finish_later(Some(&ctx), &mut del).await;
        }
        if del.borrow().is_some() {
            return self.finish_later(Some(&ctx), &mut del).await;
        }
        if phase != "Pending" || status.start_time.is_some() {
            // Started by an earlier kubelet of this name, whose processes are gone.
            let now = SystemTime::now();
            for c in state.init.iter_mut().chain(state.main.iter_mut()) {
                c.state = CState::Terminated {
                    code: 137,
                    reason: "Error".into(),
                    message: Some("the test kubelet that ran this container stopped".into()),
                    started: now,
                    finished: now,
                    id: None,
                };
            }
            self.patch(&ctx, &mut state).await;
            return self.finish_later(Some(&ctx), &mut del).await;
        }
        self.patch(&ctx, &mut state).await;
        let init = spec.init_containers.clone().unwrap_or_default();
        for (i, container) in init.iter().enumerate() {
            let group = [(Which::Init(i), container.clone())];
            if let Some(stop) = self.run_group(&ctx, &mut state, &group, &mut del).await {
                return self.stopped(&ctx, &mut state, stop, &mut del).await;
            }
            if !matches!(state.init[i].state, CState::Terminated { code: 0, .. }) {
                state.reason = Some("Init:Error".into());
                state.message = Some(format!("init container {:?} failed", container.name));
                self.patch(&ctx, &mut state).await;
                return self.finish_later(Some(&ctx), &mut del).await;
            }
        }
        let group: Vec<(Which, Container)> = spec
            .containers
            .iter()
            .enumerate()
            .map(|(i, c)| (Which::Main(i), c.clone()))
            .collect();
        if let Some(stop) = self.run_group(&ctx, &mut state, &group, &mut del).await {
            return self.stopped(&ctx, &mut state, stop, &mut del).await;
        }
        self.finish_later(Some(&ctx), &mut del).await
    }

    /// After a deletion stopped the pod's containers: the final status, then
    /// the pod deleted for good.
    pub(super) async fn stopped(
        &self,
        ctx: &PodCtx,
        state: &mut PodState,
        stop: Stop,
        del: &mut watch::Receiver<Option<i64>>,
    ) {
        if stop == Stop::Gone {
            return;
        }
        self.patch(ctx, state).await;
        self.finish_later(Some(ctx), del).await
    }

    /// Waits for the pod's deletion, then deletes it for good.
    pub(super) async fn finish_later(
        &self,
        ctx: Option<&PodCtx>,
        del: &mut watch::Receiver<Option<i64>>,
    ) {
        if deleted(del).await == Stop::Gone {
            return;
        }
        let Some(ctx) = ctx else { return };
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(ctx.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        for attempt in 0..5 {
            match self
                .pods_api(&ctx.namespace)
                .delete(&ctx.name, &params)
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(s)) if s.is_not_found() || s.is_conflict() => return,
                Err(err) => {
                    self.say(format_args!(
                        "deleting pod {}/{} (attempt {attempt}): {err}",
                        ctx.namespace, ctx.name
                    ));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    /// Posts the pod's status (merge patch of `status`; the uid in the patch
    /// makes it fail on a new pod of the same name).
    pub(super) async fn patch(&self, ctx: &PodCtx, state: &mut PodState) {
        let body = json!({ "metadata": { "uid": ctx.uid }, "status": state.json(&pod_ip(&ctx.namespace)) });
        for attempt in 0..3 {
            let patch = Patch::Merge(&body);
            match self
                .pods_api(&ctx.namespace)
                .patch_status(&ctx.name, &PatchParams::default(), &patch)
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(s)) if s.is_not_found() || s.is_invalid() => return,
                Err(err) => {
                    self.say(format_args!(
                        "status of {}/{} (attempt {attempt}): {err}",
                        ctx.namespace, ctx.name
                    ));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    /// Runs `group` (containers at once) until all have exited, or the pod is
    /// deleted (then kills them and returns how).
    pub(super) async fn run_group(
        self: &Arc<Self>,
        ctx: &PodCtx,
        state: &mut PodState,
        group: &[(Which, Container)],
        del: &mut watch::Receiver<Option<i64>>,
    ) -> Option<Stop> {
        // Environments and volumes first: they may wait for a ConfigMap or
        // Secret (as CreateContainerConfigError), for a claim to be bound (as
        // ContainerCreating).
        let mut envs = Vec::new();
        for (which, container) in group {
            let ready = loop {
                let (reason, message) = match self.env_for(ctx, container).await {
                    Ok(env) => match self.mounts_for(ctx, container, &env).await {
                        Ok(mounts) => break (env, Ok(mounts)),
                        Err(VolumeError::Fatal(message)) => break (env, Err(message)),
                        Err(VolumeError::Waiting(message)) => ("ContainerCreating", message),
                    },
                    Err(message) => ("CreateContainerConfigError", message),
                };
                let waiting = CState::Waiting {
                    reason: reason.into(),
                    message: Some(message),
                };
                if state.get(*which).state != waiting {
                    state.get(*which).state = waiting;
                    self.patch(ctx, state).await;
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    stop = deleted(del) => return Some(stop),
                }
            };
            envs.push(ready);
        }
        let mut waits = FuturesUnordered::new();
        let mut running: HashMap<usize, i32> = HashMap::new();
        for (n, ((which, container), (env, mounts))) in group.iter().zip(envs).enumerate() {
            match self.spawn(ctx, container, env, mounts) {
                Ok(proc) => {
                    state.get(*which).state = CState::Running {
                        started: proc.started,
                        id: proc.id.clone(),
                    };
                    running.insert(n, proc.pgid);
                    waits.push(wait_proc(self.clone(), n, proc));
                }
                Err(terminated) => state.get(*which).state = terminated,
            }
        }
        self.patch(ctx, state).await;
        let mut stop = None;
        let mut kill_at: Option<tokio::time::Instant> = None;
        while !waits.is_empty() {
            let deadline =
                kill_at.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                Some((n, exit)) = waits.next() => {
                    running.remove(&n);
                    let (which, _) = &group[n];
                    let c = state.get(*which);
                    let started = match &c.state {
                        CState::Running { started, .. } => *started,
                        _ => exit.finished,
                    };
                    c.state = CState::Terminated {
                        code: exit.code,
                        reason: if exit.code == 0 { "Completed" } else { "Error" }.into(),
                        message: (exit.code != 0).then_some(exit.message).filter(|m| !m.is_empty()),
                        started,
                        finished: exit.finished,
                        id: Some(exit.id),
                    };
                    if stop.is_none() {
                        self.patch(ctx, state).await;
                    }
                }
                s = deleted(del), if stop.is_none() => {
                    let grace = match s {
                        Stop::Graceful(seconds) => seconds,
                        Stop::Gone => 0,
                    };
                    let signal = if grace > 0 { Signal::SIGTERM } else { Signal::SIGKILL };
                    for pgid in running.values() {
                        let _ = killpg(Pid::from_raw(*pgid), signal);
                    }
                    kill_at = Some(tokio::time::Instant::now() + Duration::from_secs(grace as u64));
                    stop = Some(s);
                }
                () = tokio::time::sleep_until(deadline), if kill_at.is_some() => {
                    for pgid in running.values() {
                        let _ = killpg(Pid::from_raw(*pgid), Signal::SIGKILL);
                    }
                    kill_at = None;
                }
            }
        }
        stop
    }

    /// Starts a container's process in its own process group, its output
    /// captured, and its `mounts` (if any) bound in a mount namespace of its
    /// own; or the `StartError` state it ends in at once (as when `mounts`
    /// says why there are none).
    pub(super) fn spawn(
        self: &Arc<Self>,
        ctx: &PodCtx,
        c: &Container,
        env: Vec<(String, String)>,
        mounts: Result<Vec<Mount>, String>,
    ) -> Result<Proc, CState> {
        let now = SystemTime::now();
        let start_error = |message: String| CState::Terminated {
            code: 128,
            reason: "StartError".into(),
            message: Some(message),
            started: now,
            finished: now,
            id: None,
        };
        let log = Arc::new(LogBuf::new(ctx, &c.name, self.base()));
        lock(&self.logs).insert(
            (ctx.namespace.clone(), ctx.name.clone(), c.name.clone()),
            log.clone(),
        );
        let vars: HashMap<String, String> = env.iter().cloned().collect();
        let argv: Vec<String> = c
            .command
            .iter()
            .flatten()
            .chain(c.args.iter().flatten())
            .map(|a| expand(a, &vars))
            .collect();
        if c.command.as_ref().is_none_or(Vec::is_empty) {
            log.finish();
            return Err(start_error(format!(
                "the test kubelet has no images: container {:?} must give its command (image {:?}'s entrypoint is unknown here)",
                c.name,
                c.image.as_deref().unwrap_or("")
            )));
        }
        // The mount points are made on the host first: a workingDir among them is there then.
        let plan = match mounts {
            Ok(mounts) if mounts.is_empty() => None,
            Ok(mounts) => Some(plan_mounts(mounts, c.working_dir.as_deref(), &ctx.dir)),
            Err(message) => Some(Err(message)),
        };
        let plan = match plan.transpose() {
            Ok(plan) => plan,
            Err(message) => {
                log.finish();
                return Err(start_error(format!(
                    "failed to start container {:?}: {message}",
                    c.name
                )));
            }
        };
        let cwd = c
            .working_dir
            .as_deref()
            .map(Path::new)
            .filter(|d| d.is_absolute() && d.is_dir())
            .unwrap_or(&ctx.dir);
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env_clear()
            .envs(env)
            .current_dir(cwd)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                // Dies with the kubelet's thread, should the test process die without cleaning up.
                let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
                Ok(())
            });
        }
        let report = plan.map(|(plan, report)| {
            // SAFETY: system calls only, on strings made before the fork.
            unsafe { cmd.pre_exec(move || enter_mounts(&plan)) };
            report
        });
        let spawned = cmd.spawn();
        // The hook holds the write end of the report's pipe.
        drop(cmd);
        let mut child = match spawned {
            Ok(child) => child,
            Err(err) => {
                log.finish();
                if let Some(why) = report.and_then(|r| r.read(&err)) {
                    return Err(start_error(format!(
                        "failed to start container {:?}: {why}",
                        c.name
                    )));
                }
                let why = match err.kind() {
                    std::io::ErrorKind::NotFound if !argv[0].contains('/') => {
                        "executable file not found in $PATH".to_owned()
                    }
                    std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
                    std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
                    _ => err.to_string(),
                };
                return Err(start_error(format!(
                    "failed to start container {:?}: exec: {:?}: {why}",
                    c.name, argv[0]
                )));
            }
        };
        let pid = child.id().map_or(0, |p| p as i32);
        lock(&self.groups).insert(pid);
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(tokio::spawn(read_lines(out, log.clone())));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(tokio::spawn(read_lines(err, log.clone())));
        }
        Ok(Proc {
            child,
            pgid: pid,
            id: format!("testkubelet://{pid}"),
            started: now,
            log,
            readers,
        })
    }

    /// The output of a container, if it has started.
    pub(super) fn log(&self, namespace: &str, pod: &str, container: &str) -> Option<Arc<LogBuf>> {
        lock(&self.logs)
            .get(&(namespace.to_owned(), pod.to_owned(), container.to_owned()))
            .cloned()
    }
}

/// An environment being built: in order, and by name for `$(VAR)`.
#[derive(Default)]
pub(super) struct Env {
    pub(super) list: Vec<(String, String)>,
    pub(super) vars: HashMap<String, String>,
}

impl Env {
    pub(super) fn set(&mut self, name: String, value: String) {
        self.vars.insert(name.clone(), value.clone());
        self.list.push((name, value));
    }
}

/// How a pod's deletion stops it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stop {
    /// Marked for deletion: this many seconds between SIGTERM and SIGKILL.
    Graceful(i64),
    /// Gone from the API (deleted with grace 0, or the kubelet stops): SIGKILL.
    Gone,
}

/// Until the pod is marked for deletion (or gone).
pub(super) async fn deleted(del: &mut watch::Receiver<Option<i64>>) -> Stop {
    match del.wait_for(Option::is_some).await {
        Ok(grace) => Stop::Graceful(grace.unwrap_or(0)),
        Err(_) => Stop::Gone,
    }
}

/// A deleted pod's grace period: the deletion's, else the spec's, at most 30 s.
pub(super) fn grace_seconds(pod: &Pod) -> i64 {
    pod.metadata
        .deletion_grace_period_seconds
        .or_else(|| pod.spec.as_ref()?.termination_grace_period_seconds)
        .unwrap_or(30)
        .clamp(0, MAX_GRACE_SECONDS)
}
