//! Stack dumps of a job's pods. The job's image need not have py-spy: its
//! static binary (built once from PyPI by the console, as for local
//! replicas) is streamed into the pod through `exec` and run there on
//! every Python process of the container; what it prints is written to the
//! container's own output (`/proc/1/fd/1`) between a banner and an end
//! line, so the pod's log (and the log console) shows it where it
//! happened, and comes back to the caller.

use std::time::Duration;

use app::error::AppError;
use app::models::{dump_banner, StackDump};
use k8s_openapi::api::core::v1::Pod as KubePod;
use kube::api::AttachParams;
use kube::Api;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::errors::from_kube;
use crate::storage::log_dumps::dump_lines;

/// The longest one pod's dump may take (the copy included).
const DUMP_LIMIT: Duration = Duration::from_secs(60);

/// Where py-spy is put in the container.
const IN_POD: &str = "/tmp/.paddlecloud-py-spy";

/// Copies py-spy (`len` bytes) from stdin, then dumps every Python
/// process the container runs (its own exec'd shell is not Python). Exit
/// 90: the copy failed; 91: no Python process. The bytes are counted
/// because stdin cannot be closed on its own before version 5 of the
/// exec protocol (Kubernetes 1.30): closing it ends the whole exec.
fn script(len: usize) -> String {
    format!(
        "head -c {len} > {IN_POD} && chmod 0755 {IN_POD} || exit 90\n\
         found=0\n\
         for d in /proc/[0-9]*; do\n\
           case \"$(readlink \"$d/exe\" 2>/dev/null)\" in *python*) ;; *) continue ;; esac\n\
           found=1\n\
           {IN_POD} dump --pid \"${{d#/proc/}}\" 2>&1\n\
         done\n\
         rm -f {IN_POD}\n\
         [ \"$found\" = 1 ] || exit 91\n"
    )
}

/// Runs `command` in `container` of pod `pod`, feeding it `input`: what
/// it printed on stdout and stderr, and its exit code (`None` if the API
/// did not say).
async fn exec(
    pods: &Api<KubePod>,
    pod: &str,
    container: &str,
    command: Vec<String>,
    input: &[u8],
) -> Result<(String, String, Option<i32>, String), AppError> {
    let ap = AttachParams::default()
        .container(container)
        .stdin(true)
        .stdout(true)
        .stderr(true);
    let mut attached = pods
        .exec(pod, command, &ap)
        .await
        .map_err(|e| from_kube("run a command in the pod", e))?;
    let (mut stdin, mut stdout, mut stderr) = (
        attached.stdin().ok_or(AppError::Internal)?,
        attached.stdout().ok_or(AppError::Internal)?,
        attached.stderr().ok_or(AppError::Internal)?,
    );
    let status = attached.take_status().ok_or(AppError::Internal)?;
    // Written, then left open until the command ends (see `script`).
    let write = async {
        stdin.write_all(input).await?;
        stdin.flush().await
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (wrote, read_out, read_err, status) = tokio::join!(
        write,
        stdout.read_to_end(&mut out),
        stderr.read_to_end(&mut err),
        status
    );
    drop(stdin);
    let _ = attached.join().await;
    wrote.map_err(|e| AppError::Unavailable {
        message: format!("copying into the pod failed: {e}"),
    })?;
    read_out.and(read_err).map_err(|e| AppError::Unavailable {
        message: format!("reading from the pod failed: {e}"),
    })?;
    let said = status
        .as_ref()
        .and_then(|s| s.message.clone())
        .unwrap_or_default();
    // A failure's Status carries its exit code as the cause "ExitCode".
    let code = status.map(|s| {
        if s.status.as_deref() == Some("Success") {
            0
        } else {
            s.details
                .and_then(|d| d.causes)
                .into_iter()
                .flatten()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
                .and_then(|c| c.message)
                .and_then(|m| m.parse().ok())
                .unwrap_or(1)
        }
    });
    Ok((
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
        code,
        said,
    ))
}

/// Dumps pod `live` (replica `replica`) with `py_spy` (the binary's
/// bytes), writing the dump into its log.
pub async fn dump_pod(
    pods: &Api<KubePod>,
    live: &str,
    replica: &str,
    container: &str,
    py_spy: &[u8],
) -> StackDump {
    let shell = |s: String| vec!["sh".to_owned(), "-c".to_owned(), s];
    let ran = tokio::time::timeout(
        DUMP_LIMIT,
        exec(pods, live, container, shell(script(py_spy.len())), py_spy),
    )
    .await;
    let failed = |why: String| StackDump {
        pod: replica.to_owned(),
        text: String::new(),
        error: Some(why),
    };
    let (text, err, code, said) = match ran {
        Err(_) => return failed(format!("py-spy took longer than {}s", DUMP_LIMIT.as_secs())),
        Ok(Err(e)) => return failed(e.to_string()),
        Ok(Ok(done)) => done,
    };
    let why = match code {
        Some(90) => Some(format!(
            "py-spy could not be copied into the pod (its image needs sh, head and a writable /tmp): {}",
            err.trim()
        )),
        Some(91) => Some("no Python process runs in this replica".to_owned()),
        _ if text.trim().is_empty() => Some(format!(
            "py-spy printed nothing (exit {code:?}): {} {said}",
            err.trim()
        )),
        _ => None,
    };
    let at = crate::time::now_ms();
    let shown = why.clone().unwrap_or_else(|| text.clone());
    let mut record = dump_lines(&dump_banner(replica, at), &shown).join("\n");
    record.push('\n');
    // Into the container's own output: the kubelet stamps it into the log.
    let told = exec(
        pods,
        live,
        container,
        shell(format!("head -c {} > /proc/1/fd/1", record.len())),
        record.as_bytes(),
    )
    .await;
    if let Err(err) = told {
        tracing::warn!(pod = live, error = %err, "writing a stack dump into the pod's log");
    }
    match why {
        Some(why) => failed(why),
        None => StackDump {
            pod: replica.to_owned(),
            text,
            error: None,
        },
    }
}
