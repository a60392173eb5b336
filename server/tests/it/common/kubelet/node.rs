//! The Node: registration, heartbeats, and the watch of the pods bound to it.

use super::*;

/// The kubelet's state, shared by its tasks.
pub(super) struct Kubelet {
    pub(super) client: Client,
    pub(super) node: String,
    pub(super) port: u16,
    pub(super) work: PathBuf,
    /// Pods' dirs when `work` is gone (its test ended while another shares this kubelet).
    pub(super) fallback: tempfile::TempDir,
    pub(super) registered: SystemTime,
    /// The pods seen, by uid.
    pub(super) pods: Mutex<HashMap<String, Slot>>,
    /// Containers' output, by namespace, pod and container name.
    pub(super) logs: Mutex<HashMap<(String, String, String), Arc<LogBuf>>>,
    /// The process groups of running containers.
    pub(super) groups: Mutex<HashSet<i32>>,
}

/// A pod the kubelet looks after.
pub(super) struct Slot {
    pub(super) namespace: String,
    pub(super) name: String,
    /// `Some(grace seconds)` once the pod has a deletionTimestamp; dropped
    /// when the pod is gone from the API.
    pub(super) deleting: watch::Sender<Option<i64>>,
    pub(super) task: tokio::task::AbortHandle,
}

impl Kubelet {
    pub(super) fn say(&self, what: impl std::fmt::Display) {
        eprintln!("[test-kubelet {}] {what}", self.node);
    }

    pub(super) fn base(&self) -> &Path {
        if self.work.is_dir() {
            &self.work
        } else {
            self.fallback.path()
        }
    }

    // ----- the Node -----------------------------------------------------

    pub(super) fn node_status(&self) -> Value {
        let now = rfc3339(SystemTime::now());
        let since = rfc3339(self.registered);
        let amounts = json!({
            "cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8",
            "ephemeral-storage": "1Ti",
        });
        let condition = |kind: &str, status: &str, reason: &str, message: &str| {
            json!({
                "type": kind, "status": status, "reason": reason, "message": message,
                "lastHeartbeatTime": now, "lastTransitionTime": since,
            })
        };
        json!({ "status": {
            "capacity": amounts,
            "allocatable": amounts,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "the test kubelet is posting ready status"),
            ],
            "addresses": [
                { "type": "InternalIP", "address": LOCALHOST },
                { "type": "Hostname", "address": self.node },
            ],
            "daemonEndpoints": { "kubeletEndpoint": { "Port": self.port } },
            "nodeInfo": {
                "machineID": "test-kubelet", "systemUUID": "test-kubelet", "bootID": "test-kubelet",
                "kernelVersion": "", "osImage": "local processes", "containerRuntimeVersion": "testkubelet://0.1",
                "kubeletVersion": "v1.20.2", "kubeProxyVersion": "v1.20.2",
                "operatingSystem": "linux", "architecture": std::env::consts::ARCH,
            },
        }})
    }

    /// Creates the Node (or takes over one of that name) and posts its status.
    pub(super) async fn register(&self) -> Result<(), kube::Error> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node: Node = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node,
                "labels": {
                    "kubernetes.io/hostname": self.node,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "beta.kubernetes.io/os": "linux",
                    "beta.kubernetes.io/arch": "amd64",
                    "paddlecloud.org/test-kubelet": "true",
                },
            },
        }))
        .map_err(kube::Error::SerdeError)?;
        match nodes.create(&PostParams::default(), &node).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_already_exists() => {
                let open = json!({ "spec": { "unschedulable": null, "taints": null } });
                nodes
                    .patch(&self.node, &PatchParams::default(), &Patch::Merge(open))
                    .await?;
            }
            Err(err) => return Err(err),
        }
        nodes
            .patch_status(
                &self.node,
                &PatchParams::default(),
                &Patch::Merge(self.node_status()),
            )
            .await?;
        Ok(())
    }

    /// Posts the Node's status every 10 s (a real cluster's node lifecycle
    /// controller wants it), registering it again if someone deleted it.
    pub(super) async fn heartbeat(self: Arc<Self>) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        loop {
            tokio::time::sleep(Duration::from_secs(10)).await;
            let status = Patch::Merge(self.node_status());
            match nodes
                .patch_status(&self.node, &PatchParams::default(), &status)
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.is_not_found() => {
                    if let Err(err) = self.register().await {
                        self.say(format_args!("registering the Node again: {err}"));
                    }
                }
                Err(err) => self.say(format_args!("heartbeat: {err}")),
            }
        }
    }

    /// Kills every container, forgets every pod and deletes the Node (so the
    /// scheduler sends no more pods to it).
    pub(super) async fn shutdown(&self) {
        let slots: Vec<Slot> = lock(&self.pods).drain().map(|(_, s)| s).collect();
        for pgid in lock(&self.groups).drain() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
        for slot in &slots {
            slot.task.abort();
        }
        drop(slots);
        let nodes: Api<Node> = Api::all(self.client.clone());
        let params = DeleteParams::default();
        let delete = nodes.delete(&self.node, &params);
        match tokio::time::timeout(Duration::from_secs(3), delete).await {
            Ok(Ok(_)) => {}
            Ok(Err(kube::Error::Api(s))) if s.is_not_found() => {}
            Ok(Err(err)) => self.say(format_args!("deleting the Node: {err}")),
            Err(_) => self.say("deleting the Node: timed out"),
        }
    }

    // ----- pods -----------------------------------------------------------

    /// Follows the pods bound to the Node, for as long as the kubelet runs.
    pub(super) async fn watch_pods(self: Arc<Self>) {
        let api: Api<Pod> = Api::all(self.client.clone());
        let config = watcher::Config::default().fields(&format!("spec.nodeName={}", self.node));
        let mut events = watcher::watcher(api, config).default_backoff().boxed();
        // The uids listed since the watch (re)started, to forget pods deleted meanwhile.
        let mut listed: Option<HashSet<String>> = None;
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::Init) => listed = Some(HashSet::new()),
                Ok(Event::InitApply(pod)) => {
                    if let (Some(set), Some(uid)) = (&mut listed, &pod.metadata.uid) {
                        set.insert(uid.clone());
                    }
                    self.seen(pod);
                }
                Ok(Event::InitDone) => {
                    if let Some(set) = listed.take() {
                        let gone: Vec<String> = lock(&self.pods)
                            .keys()
                            .filter(|uid| !set.contains(*uid))
                            .cloned()
                            .collect();
                        for uid in gone {
                            self.forget(&uid);
                        }
                    }
                }
                Ok(Event::Apply(pod)) => self.seen(pod),
                Ok(Event::Delete(pod)) => {
                    if let Some(uid) = &pod.metadata.uid {
                        self.forget(uid);
                    }
                }
                Err(err) => self.say(format_args!("watching pods: {err}")),
            }
        }
    }

    /// A pod bound to the Node was added or changed.
    pub(super) fn seen(self: &Arc<Self>, pod: Pod) {
        let (Some(uid), Some(namespace), Some(name)) = (
            pod.metadata.uid.clone(),
            pod.metadata.namespace.clone(),
            pod.metadata.name.clone(),
        ) else {
            self.say("a pod without uid, namespace or name: ignored");
            return;
        };
        let deleting = pod
            .metadata
            .deletion_timestamp
            .as_ref()
            .map(|_| grace_seconds(&pod));
        let mut pods = lock(&self.pods);
        if let Some(slot) = pods.get(&uid) {
            if let Some(grace) = deleting {
                slot.deleting.send_if_modified(|d| {
                    let new = d.is_none();
                    if new {
                        *d = Some(grace);
                    }
                    new
                });
            }
            return;
        }
        let (tx, rx) = watch::channel(deleting);
        let task = tokio::spawn(self.clone().run_pod(pod, rx)).abort_handle();
        pods.insert(
            uid,
            Slot {
                namespace,
                name,
                deleting: tx,
                task,
            },
        );
    }

    /// A pod is gone from the API: kill what is left of it at once.
    pub(super) fn forget(&self, uid: &str) {
        drop(lock(&self.pods).remove(uid));
        lock(&self.logs).retain(|_, log| log.uid != uid);
    }

    pub(super) fn pods_api(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }
}
