//! Volumes: a container's `volumeMounts` of `persistentVolumeClaim` (bound
//! to a hostPath PersistentVolume), `hostPath`, `configMap` and `secret`
//! volumes, bind-mounted in a mount namespace of the container's own.
//! Other kinds (`emptyDir` among them) are left unmounted: their
//! `mountPath` is whatever the host has there.

use super::*;

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::io::Read as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;

use k8s_openapi::api::core::v1::{KeyToPath, PersistentVolume, PersistentVolumeClaim};
// libc as nix re-exports it: nix's own mount, sched and fs modules are
// features the server does not build it with (tests must not rebuild it).
use nix::errno::Errno;
use nix::libc;

/// One bind mount of a container: `source` on the host at `target`.
pub(super) struct Mount {
    /// What it is, for messages: `volume "work" (persistentVolumeClaim "ws")`.
    pub(super) what: String,
    pub(super) source: PathBuf,
    pub(super) target: PathBuf,
    pub(super) read_only: bool,
}

/// Why a container's volumes cannot be mounted.
pub(super) enum VolumeError {
    /// Not yet (a claim not bound, a ConfigMap not created): the container
    /// waits in `ContainerCreating`, retried every second, as a kubelet does.
    Waiting(String),
    /// Never (a PersistentVolume the test kubelet cannot mount): the
    /// container fails to start.
    Fatal(String),
}

impl Kubelet {
    /// The bind mounts of container `c`, its volumes made ready (ConfigMaps'
    /// and Secrets' files written under the pod's `volumes/` dir); `env` is
    /// its environment, for `subPathExpr`.
    pub(super) async fn mounts_for(
        &self,
        ctx: &PodCtx,
        c: &Container,
        env: &[(String, String)],
    ) -> Result<Vec<Mount>, VolumeError> {
        use VolumeError::{Fatal, Waiting};
        let mut mounts = Vec::new();
        for vm in c.volume_mounts.iter().flatten() {
            let Some(volume) = ctx.volumes.iter().find(|v| v.name == vm.name) else {
                return Err(Fatal(format!(
                    "container {:?} mounts volume {:?}, which the pod does not have",
                    c.name, vm.name
                )));
            };
            let name = &volume.name;
            let (what, source, read_only) = if let Some(claim) = &volume.persistent_volume_claim {
                let what = format!(
                    "volume {name:?} (persistentVolumeClaim {:?})",
                    claim.claim_name
                );
                let path = self.claim_path(ctx, &claim.claim_name).await?;
                make_host_path(&path, None).map_err(|e| Fatal(format!("{what}: {e}")))?;
                (what, path, claim.read_only.unwrap_or(false))
            } else if let Some(host) = &volume.host_path {
                let what = format!("volume {name:?} (hostPath {:?})", host.path);
                let path = PathBuf::from(&host.path);
                make_host_path(&path, host.type_.as_deref())
                    .map_err(|e| Waiting(format!("{what}: {e}")))?;
                (what, path, false)
            } else if let Some(cm) = &volume.config_map {
                let what = format!("volume {name:?} (configMap {:?})", cm.name);
                let optional = cm.optional.unwrap_or(false);
                let files = match self.config_map(ctx, &cm.name, optional).await {
                    Ok(Some(map)) => {
                        let mut files: BTreeMap<String, Vec<u8>> = map
                            .data
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(k, v)| (k, v.into_bytes()))
                            .collect();
                        files.extend(
                            map.binary_data
                                .unwrap_or_default()
                                .into_iter()
                                .map(|(k, v)| (k, v.0)),
                        );
                        files
                    }
                    Ok(None) => BTreeMap::new(),
                    Err(err) => return Err(Waiting(format!("{what}: {err}"))),
                };
                let dir = self
                    .write_files(
                        ctx,
                        name,
                        files,
                        cm.items.as_deref(),
                        cm.default_mode,
                        optional,
                    )
                    .map_err(|e| Waiting(format!("{what}: {e}")))?;
                // Kubelets mount ConfigMaps and Secrets read-only, whatever the mount says.
                (what, dir, true)
            } else if let Some(secret) = &volume.secret {
                let secret_name = secret.secret_name.clone().unwrap_or_default();
                let what = format!("volume {name:?} (secret {secret_name:?})");
                let optional = secret.optional.unwrap_or(false);
                let files = match self.secret(ctx, &secret_name, optional).await {
                    Ok(Some(s)) => s
                        .data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.0))
                        .collect(),
                    Ok(None) => BTreeMap::new(),
                    Err(err) => return Err(Waiting(format!("{what}: {err}"))),
                };
                let dir = self
                    .write_files(
                        ctx,
                        name,
                        files,
                        secret.items.as_deref(),
                        secret.default_mode,
                        optional,
                    )
                    .map_err(|e| Waiting(format!("{what}: {e}")))?;
                (what, dir, true)
            } else {
                // emptyDir, downwardAPI, projected...: not played, the mount path is the host's.
                continue;
            };
            let sub = match (&vm.sub_path, &vm.sub_path_expr) {
                (Some(sub), _) if !sub.is_empty() => Some(sub.clone()),
                (_, Some(expr)) if !expr.is_empty() => {
                    let vars: HashMap<String, String> = env.iter().cloned().collect();
                    Some(expand(expr, &vars))
                }
                _ => None,
            };
            let source = match sub {
                Some(sub) => {
                    let rel = relative(&sub)
                        .map_err(|e| Fatal(format!("{what}: subPath {sub:?} {e}")))?;
                    let path = source.join(rel);
                    if std::fs::symlink_metadata(&path).is_err() {
                        std::fs::create_dir_all(&path)
                            .map_err(|e| Fatal(format!("{what}: subPath {sub:?}: {e}")))?;
                    }
                    path
                }
                None => source,
            };
            mounts.push(Mount {
                what,
                source,
                target: Path::new("/").join(&vm.mount_path),
                read_only: read_only || vm.read_only.unwrap_or(false),
            });
        }
        Ok(mounts)
    }

    /// The host path of the hostPath PersistentVolume that claim `claim` is bound to.
    async fn claim_path(&self, ctx: &PodCtx, claim: &str) -> Result<PathBuf, VolumeError> {
        use VolumeError::{Fatal, Waiting};
        let claims: Api<PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), &ctx.namespace);
        let pvc = match claims.get_opt(claim).await {
            Ok(Some(pvc)) => pvc,
            Ok(None) => {
                return Err(Waiting(format!(
                    "persistentvolumeclaim {claim:?} not found"
                )))
            }
            Err(err) => return Err(Waiting(format!("persistentvolumeclaim {claim:?}: {err}"))),
        };
        let bound = pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
        let volume = pvc.spec.as_ref().and_then(|s| s.volume_name.clone());
        let (true, Some(volume)) = (bound, volume) else {
            return Err(Waiting(format!(
                "persistentvolumeclaim {claim:?} is not bound"
            )));
        };
        let pv = match Api::<PersistentVolume>::all(self.client.clone())
            .get_opt(&volume)
            .await
        {
            Ok(Some(pv)) => pv,
            Ok(None) => return Err(Waiting(format!("persistentvolume {volume:?} not found"))),
            Err(err) => return Err(Waiting(format!("persistentvolume {volume:?}: {err}"))),
        };
        let spec = pv.spec.unwrap_or_default();
        if let Some(host) = &spec.host_path {
            return Ok(PathBuf::from(&host.path));
        }
        // The volume source's kind: what is left of the spec but its common fields.
        let kind = serde_json::to_value(&spec)
            .ok()
            .and_then(|v| {
                v.as_object()?
                    .keys()
                    .find(|k| {
                        ![
                            "accessModes",
                            "capacity",
                            "claimRef",
                            "mountOptions",
                            "nodeAffinity",
                            "persistentVolumeReclaimPolicy",
                            "storageClassName",
                            "volumeAttributesClassName",
                            "volumeMode",
                        ]
                        .contains(&k.as_str())
                    })
                    .cloned()
            })
            .unwrap_or_else(|| "unknown".into());
        Err(Fatal(format!(
            "the test kubelet mounts only hostPath PersistentVolumes: claim {claim:?} is bound to \
             PersistentVolume {volume:?}, a {kind} one"
        )))
    }

    /// Writes a ConfigMap's or Secret's `files` (or the `items` of them) into
    /// the pod's `volumes/NAME/` dir, which it returns.
    fn write_files(
        &self,
        ctx: &PodCtx,
        volume: &str,
        mut files: BTreeMap<String, Vec<u8>>,
        items: Option<&[KeyToPath]>,
        default_mode: Option<i32>,
        optional: bool,
    ) -> Result<PathBuf, String> {
        let dir = ctx.dir.join("volumes").join(volume);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let default_mode = default_mode.unwrap_or(0o644);
        let wanted: Vec<(String, Vec<u8>, i32)> = match items {
            Some(items) => {
                let mut wanted = Vec::new();
                for item in items {
                    match files.remove(&item.key) {
                        Some(bytes) => wanted.push((
                            item.path.clone(),
                            bytes,
                            item.mode.unwrap_or(default_mode),
                        )),
                        None if optional => {}
                        None => return Err(format!("references non-existent key {:?}", item.key)),
                    }
                }
                wanted
            }
            None => files
                .into_iter()
                .map(|(key, bytes)| (key, bytes, default_mode))
                .collect(),
        };
        for (path, bytes, mode) in wanted {
            let rel = relative(&path).map_err(|e| format!("path {path:?} {e}"))?;
            let file = dir.join(rel);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            std::fs::write(&file, &bytes)
                .and_then(|()| {
                    std::fs::set_permissions(
                        &file,
                        std::fs::Permissions::from_mode(mode as u32 & 0o777),
                    )
                })
                .map_err(|e| format!("{}: {e}", file.display()))?;
        }
        Ok(dir)
    }
}

/// A relative path without `..` (a subPath, a ConfigMap item's path).
fn relative(path: &str) -> Result<&Path, &'static str> {
    let p = Path::new(path);
    if p.is_absolute() {
        Err("must be relative")
    } else if p.components().any(|c| c == std::path::Component::ParentDir) {
        Err("must not contain '..'")
    } else {
        Ok(p)
    }
}

/// Makes a hostPath volume's path ready as its `type` says (unset and
/// `DirectoryOrCreate`: a dir made if missing, `FileOrCreate`: an empty file;
/// the others must be there already).
fn make_host_path(path: &Path, kind: Option<&str>) -> Result<(), String> {
    let meta = std::fs::metadata(path);
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    match (kind.unwrap_or(""), &meta) {
        ("" | "DirectoryOrCreate", Err(_)) => std::fs::create_dir_all(path).map_err(fail),
        ("FileOrCreate", Err(_)) => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(fail)?;
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map(drop)
                .map_err(fail)
        }
        ("Directory", Ok(m)) if !m.is_dir() => {
            Err(format!("{} is not a directory", path.display()))
        }
        ("File", Ok(m)) if !m.is_file() => Err(format!("{} is not a file", path.display())),
        (_, Err(e)) => Err(format!("{}: {e}", path.display())),
        _ => Ok(()),
    }
}

/// The steps a container's mount namespace is made of; a failed one is
/// reported to the parent as `[step, mount index]`.
const STEP_UNSHARE: u8 = 1;
const STEP_PRIVATE: u8 = 2;
const STEP_MKDIR: u8 = 3;
const STEP_BIND: u8 = 4;
const STEP_READ_ONLY: u8 = 5;
const STEP_CHDIR: u8 = 6;

/// A container's mounts, ready for its `pre_exec` hook: every string made
/// before the fork (nothing allocates between fork and exec).
pub(super) struct MountPlan {
    mounts: Vec<PlannedMount>,
    /// The container's `workingDir`, and the pod's dir should it not be there.
    workdir: Option<CString>,
    pod_dir: CString,
    /// The write end of a pipe the hook reports a failed step on.
    report: std::io::PipeWriter,
}

struct PlannedMount {
    source: CString,
    target: CString,
    /// Made (if missing) before the bind: the target's ancestors, then the
    /// target itself, a dir (or the last, an empty file, for a file's mount).
    make: Vec<CString>,
    file: bool,
    read_only: bool,
    /// Flags (`MS_*`) the source's mount has that a read-only remount must keep.
    keep: libc::c_ulong,
}

/// What a failed mount plan says, read back in the parent.
pub(super) struct MountReport {
    reader: std::io::PipeReader,
    /// The mounts' descriptions, in the plan's order.
    what: Vec<String>,
}

impl MountReport {
    /// What failed, if the hook said (call once the child has failed and
    /// every copy of the `Command` holding the write end is dropped).
    pub(super) fn read(mut self, os_error: &std::io::Error) -> Option<String> {
        let mut step = [0u8; 2];
        self.reader.read_exact(&mut step).ok()?;
        let what = |i: u8| self.what.get(i as usize).map(String::as_str).unwrap_or("?");
        let doing = match step[0] {
            STEP_UNSHARE => "a mount namespace of its own (unshare CLONE_NEWNS)".to_owned(),
            STEP_PRIVATE => "making / private in its mount namespace".to_owned(),
            STEP_MKDIR => format!("creating the mount point of {}", what(step[1])),
            STEP_BIND => format!("bind-mounting {}", what(step[1])),
            STEP_READ_ONLY => format!("remounting {} read-only", what(step[1])),
            STEP_CHDIR => "changing to its working dir under its mounts".to_owned(),
            _ => return None,
        };
        Some(format!("{doing}: {os_error}"))
    }
}

/// `path` as a C string.
fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| format!("{path:?} holds a NUL byte"))
}

/// Prepares `mounts` for [`enter_mounts`]: parents before what is mounted
/// inside them, mount points made on the host (unless inside another
/// mount), strings made. `workdir` is the container's `workingDir`.
pub(super) fn plan_mounts(
    mut mounts: Vec<Mount>,
    workdir: Option<&str>,
    pod_dir: &Path,
) -> Result<(MountPlan, MountReport), String> {
    mounts.sort_by_key(|m| m.target.components().count());
    let mut planned = Vec::new();
    for (i, m) in mounts.iter().enumerate() {
        let fail = |e: String| format!("{} at {}: {e}", m.what, m.target.display());
        let file = std::fs::metadata(&m.source)
            .map(|meta| !meta.is_dir())
            .map_err(|e| fail(format!("{}: {e}", m.source.display())))?;
        let nested = mounts[..i].iter().any(|o| m.target.starts_with(&o.target));
        if !nested {
            // On the host: the mount point, as a container runtime makes it.
            let made = if file {
                m.target
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| {
                        std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(&m.target)
                            .map(drop)
                    })
            } else {
                std::fs::create_dir_all(&m.target)
            };
            made.map_err(|e| fail(format!("creating the mount point: {e}")))?;
        }
        let make = m
            .target
            .ancestors()
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .skip(1) // "/"
            .map(c_path)
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        let source = c_path(&m.source).map_err(fail)?;
        let keep = if m.read_only {
            mount_flags(&source)
                .map_err(|e| fail(format!("statvfs {}: {e}", m.source.display())))?
        } else {
            0
        };
        planned.push(PlannedMount {
            source,
            target: c_path(&m.target).map_err(fail)?,
            make,
            file,
            read_only: m.read_only,
            keep,
        });
    }
    let workdir = workdir
        .filter(|d| d.starts_with('/'))
        .map(|d| c_path(Path::new(d)))
        .transpose()?;
    let (reader, report) = std::io::pipe().map_err(|e| format!("a pipe: {e}"))?;
    let what = mounts
        .iter()
        .map(|m| format!("{} at {}", m.what, m.target.display()))
        .collect();
    Ok((
        MountPlan {
            mounts: planned,
            workdir,
            pod_dir: c_path(pod_dir)?,
            report,
        },
        MountReport { reader, what },
    ))
}

/// The flags of the mount `path` is on that a read-only bind remount would
/// otherwise clear (which only an unprivileged user namespace would refuse).
fn mount_flags(path: &CStr) -> Result<libc::c_ulong, Errno> {
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer of the right type.
    Errno::result(unsafe { libc::statvfs(path.as_ptr(), st.as_mut_ptr()) })?;
    // SAFETY: statvfs succeeded: it filled the buffer.
    let flags = unsafe { st.assume_init() }.f_flag;
    Ok([
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ]
    .into_iter()
    .filter(|(st, _)| flags & st != 0)
    .fold(0, |acc, (_, ms)| acc | ms))
}

/// A bind mount (or remount, without `source`) of `target`.
fn mount(source: Option<&CStr>, target: &CStr, flags: libc::c_ulong) -> Result<(), Errno> {
    let source = source.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: NUL-terminated strings (or null), no filesystem type nor data.
    let res = unsafe {
        libc::mount(
            source,
            target.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    Errno::result(res).map(drop)
}

/// In the child, between fork and exec: a mount namespace of its own, `/`
/// private in it (nothing propagates back to the host), each mount bound
/// (and made read-only), then the working dir entered again (the process's
/// cwd was set before, on the host's dir under the mounts). Only system
/// calls on strings made before the fork: nothing allocates.
pub(super) fn enter_mounts(plan: &MountPlan) -> std::io::Result<()> {
    let fail = |step: u8, i: usize, errno: Errno| {
        let _ = (&plan.report).write_all(&[step, i.min(255) as u8]);
        std::io::Error::from(errno)
    };
    // SAFETY: a plain system call; the child is single-threaded.
    Errno::result(unsafe { libc::unshare(libc::CLONE_NEWNS) })
        .map_err(|e| fail(STEP_UNSHARE, 0, e))?;
    mount(None, c"/", libc::MS_REC | libc::MS_PRIVATE).map_err(|e| fail(STEP_PRIVATE, 0, e))?;
    for (i, m) in plan.mounts.iter().enumerate() {
        // The mount point (made on the host already, but for one inside an
        // earlier mount). EEXIST comes before EROFS: an existing one in a
        // read-only mount is no error.
        let last = m.make.len().saturating_sub(1);
        for (n, path) in m.make.iter().enumerate() {
            // SAFETY: NUL-terminated paths; the descriptor is closed at once.
            let res = unsafe {
                if m.file && n == last {
                    let fd = libc::open(
                        path.as_ptr(),
                        libc::O_CREAT | libc::O_RDONLY | libc::O_CLOEXEC,
                        0o644,
                    );
                    if fd >= 0 {
                        libc::close(fd);
                    }
                    fd.min(0)
                } else {
                    libc::mkdir(path.as_ptr(), 0o755)
                }
            };
            match Errno::result(res) {
                Ok(_) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(fail(STEP_MKDIR, i, e)),
            }
        }
        mount(Some(&m.source), &m.target, libc::MS_BIND | libc::MS_REC)
            .map_err(|e| fail(STEP_BIND, i, e))?;
        if m.read_only {
            let flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | m.keep;
            mount(None, &m.target, flags).map_err(|e| fail(STEP_READ_ONLY, i, e))?;
        }
    }
    if let Some(dir) = &plan.workdir {
        // SAFETY: NUL-terminated paths.
        if unsafe { libc::chdir(dir.as_ptr()) } != 0 {
            let res = unsafe { libc::chdir(plan.pod_dir.as_ptr()) };
            Errno::result(res).map_err(|e| fail(STEP_CHDIR, 0, e))?;
        }
    }
    Ok(())
}
