//! A container's environment: values, `$(VAR)` references, the downward
//! API, ConfigMaps and Secrets.

use super::*;

impl Kubelet {
    /// The environment of a container, as the kubelet makes it.
    pub(super) async fn env_for(
        &self,
        ctx: &PodCtx,
        c: &Container,
    ) -> Result<Vec<(String, String)>, String> {
        let mut env = Env::default();
        if let Some(path) = std::env::var_os("PATH") {
            env.set("PATH".into(), path.to_string_lossy().into_owned());
        }
        env.set("HOSTNAME".into(), ctx.hostname.clone());
        env.set("HOME".into(), ctx.dir.to_string_lossy().into_owned());
        for from in c.env_from.iter().flatten() {
            let prefix = from.prefix.clone().unwrap_or_default();
            if let Some(r) = &from.config_map_ref {
                let optional = r.optional.unwrap_or(false);
                match self.config_map(ctx, &r.name, optional).await? {
                    Some(cm) => {
                        for (k, v) in cm.data.unwrap_or_default() {
                            env.set(format!("{prefix}{k}"), v);
                        }
                    }
                    None => continue,
                }
            }
            if let Some(r) = &from.secret_ref {
                let optional = r.optional.unwrap_or(false);
                if let Some(secret) = self.secret(ctx, &r.name, optional).await? {
                    for (k, v) in secret.data.unwrap_or_default() {
                        env.set(
                            format!("{prefix}{k}"),
                            String::from_utf8_lossy(&v.0).into_owned(),
                        );
                    }
                }
            }
        }
        for var in c.env.iter().flatten() {
            let value = match (&var.value, &var.value_from) {
                (Some(value), _) => expand(value, &env.vars),
                (None, Some(from)) => {
                    if let Some(field) = &from.field_ref {
                        ctx.field(&field.field_path, &self.node)
                    } else if let Some(key) = &from.config_map_key_ref {
                        let optional = key.optional.unwrap_or(false);
                        let data = self.config_map(ctx, &key.name, optional).await?;
                        match data.and_then(|cm| cm.data?.remove(&key.key)) {
                            Some(v) => v,
                            None if optional => continue,
                            None => {
                                return Err(format!(
                                    "couldn't find key {} in ConfigMap {}/{}",
                                    key.key, ctx.namespace, key.name
                                ))
                            }
                        }
                    } else if let Some(key) = &from.secret_key_ref {
                        let optional = key.optional.unwrap_or(false);
                        let data = self.secret(ctx, &key.name, optional).await?;
                        match data.and_then(|s| s.data?.remove(&key.key)) {
                            Some(v) => String::from_utf8_lossy(&v.0).into_owned(),
                            None if optional => continue,
                            None => {
                                return Err(format!(
                                    "couldn't find key {} in Secret {}/{}",
                                    key.key, ctx.namespace, key.name
                                ))
                            }
                        }
                    } else {
                        // resourceFieldRef: not played.
                        self.say(format_args!(
                            "{}: env {} (resourceFieldRef) left out",
                            ctx.name, var.name
                        ));
                        continue;
                    }
                }
                (None, None) => String::new(),
            };
            env.set(var.name.clone(), value);
        }
        Ok(env.list)
    }

    pub(super) async fn config_map(
        &self,
        ctx: &PodCtx,
        name: &str,
        optional: bool,
    ) -> Result<Option<ConfigMap>, String> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &ctx.namespace);
        match api.get_opt(name).await {
            Ok(Some(cm)) => Ok(Some(cm)),
            Ok(None) if optional => Ok(None),
            Ok(None) => Err(format!("configmap \"{name}\" not found")),
            Err(err) => Err(format!("configmap \"{name}\": {err}")),
        }
    }

    pub(super) async fn secret(
        &self,
        ctx: &PodCtx,
        name: &str,
        optional: bool,
    ) -> Result<Option<Secret>, String> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &ctx.namespace);
        match api.get_opt(name).await {
            Ok(Some(s)) => Ok(Some(s)),
            Ok(None) if optional => Ok(None),
            Ok(None) => Err(format!("secret \"{name}\" not found")),
            Err(err) => Err(format!("secret \"{name}\": {err}")),
        }
    }
}

/// What a pod's runner needs to know of it.
pub(super) struct PodCtx {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) uid: String,
    pub(super) hostname: String,
    pub(super) service_account: String,
    pub(super) labels: std::collections::BTreeMap<String, String>,
    pub(super) annotations: std::collections::BTreeMap<String, String>,
    /// Its volumes (`spec.volumes`).
    pub(super) volumes: Vec<k8s_openapi::api::core::v1::Volume>,
    /// Its working dir (unless a container names an existing absolute one).
    pub(super) dir: PathBuf,
}

impl PodCtx {
    pub(super) fn new(kubelet: &Kubelet, pod: &Pod) -> Result<PodCtx, String> {
        let meta = &pod.metadata;
        let (Some(namespace), Some(name), Some(uid)) = (&meta.namespace, &meta.name, &meta.uid)
        else {
            return Err("no namespace, name or uid".into());
        };
        let spec = pod.spec.as_ref();
        let dir = kubelet.base().join("pods").join(format!(
            "{namespace}_{name}_{}",
            uid.get(..8).unwrap_or(uid)
        ));
        let dir = match std::fs::create_dir_all(&dir) {
            Ok(()) => dir,
            Err(err) => {
                kubelet.say(format_args!(
                    "{}: {err}; {name} runs in {}",
                    dir.display(),
                    kubelet.fallback.path().display()
                ));
                kubelet.fallback.path().to_owned()
            }
        };
        Ok(PodCtx {
            namespace: namespace.clone(),
            name: name.clone(),
            uid: uid.clone(),
            hostname: spec
                .and_then(|s| s.hostname.clone())
                .unwrap_or_else(|| name.clone()),
            service_account: spec
                .and_then(|s| s.service_account_name.clone())
                .unwrap_or_default(),
            labels: meta.labels.clone().unwrap_or_default(),
            annotations: meta.annotations.clone().unwrap_or_default(),
            volumes: spec.and_then(|s| s.volumes.clone()).unwrap_or_default(),
            dir,
        })
    }

    /// A `fieldRef`'s value (the downward API).
    pub(super) fn field(&self, path: &str, node: &str) -> String {
        let key_of = |prefix: &str| {
            path.strip_prefix(prefix)?
                .strip_suffix("']")
                .map(str::to_owned)
        };
        match path {
            "metadata.name" => self.name.clone(),
            "metadata.namespace" => self.namespace.clone(),
            "metadata.uid" => self.uid.clone(),
            "spec.nodeName" => node.to_owned(),
            "spec.serviceAccountName" => self.service_account.clone(),
            "status.podIP" | "status.podIPs" => pod_ip(&self.namespace),
            "status.hostIP" | "status.hostIPs" => LOCALHOST.to_owned(),
            _ => {
                if let Some(key) = key_of("metadata.labels['") {
                    self.labels.get(&key).cloned().unwrap_or_default()
                } else if let Some(key) = key_of("metadata.annotations['") {
                    self.annotations.get(&key).cloned().unwrap_or_default()
                } else {
                    eprintln!(
                        "[test-kubelet] {}: fieldRef {path} is not played: empty",
                        self.name
                    );
                    String::new()
                }
            }
        }
    }
}

/// `$(VAR)` references expanded as Kubernetes does: defined ones replaced,
/// undefined ones kept, `$$` an escaped `$`.
pub(super) fn expand(input: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('(') {
            match tail.find(')') {
                Some(end) => {
                    let name = &tail[..end];
                    match vars.get(name) {
                        Some(value) => out.push_str(value),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &tail[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = tail;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}
