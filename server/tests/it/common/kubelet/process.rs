//! Processes and their output: a container's process group, its exit,
//! and its log kept in memory for the kubelet API.

use super::*;

/// A running container.
pub(super) struct Proc {
    pub(super) child: tokio::process::Child,
    pub(super) pgid: i32,
    pub(super) id: String,
    pub(super) started: SystemTime,
    pub(super) log: Arc<LogBuf>,
    pub(super) readers: Vec<tokio::task::JoinHandle<()>>,
}

/// How a container ended.
pub(super) struct Exit {
    pub(super) code: i32,
    pub(super) finished: SystemTime,
    pub(super) id: String,
    /// The last lines of its output.
    pub(super) message: String,
}

/// Waits for container `n` to exit; then kills what is left of its process
/// group (as the end of a container's PID 1 does) and reads its output to the end.
pub(super) async fn wait_proc(kubelet: Arc<Kubelet>, n: usize, mut proc: Proc) -> (usize, Exit) {
    let status = proc.child.wait().await;
    let _ = killpg(Pid::from_raw(proc.pgid), Signal::SIGKILL);
    lock(&kubelet.groups).remove(&proc.pgid);
    for reader in proc.readers.drain(..) {
        let abort = reader.abort_handle();
        // A process that left the group may hold the pipe open.
        if tokio::time::timeout(Duration::from_secs(2), reader)
            .await
            .is_err()
        {
            abort.abort();
        }
    }
    proc.log.finish();
    let code = match status {
        Ok(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
        Err(err) => {
            kubelet.say(format_args!("waiting for {}: {err}", proc.id));
            255
        }
    };
    let exit = Exit {
        code,
        finished: SystemTime::now(),
        id: proc.id.clone(),
        message: proc.log.tail_text(),
    };
    (n, exit)
}

pub(super) async fn read_lines(out: impl tokio::io::AsyncRead + Unpin, log: Arc<LogBuf>) {
    let mut reader = tokio::io::BufReader::new(out);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => log.push(&line),
        }
    }
}

/// A line of output and when it arrived.
pub(super) struct LogLine {
    pub(super) at: SystemTime,
    pub(super) bytes: Vec<u8>,
}

#[derive(Default)]
pub(super) struct LogState {
    pub(super) lines: Vec<LogLine>,
    /// The container has exited and its output is all here.
    pub(super) done: bool,
}

/// A container's output, in memory (and in a file under `work/logs`).
pub(super) struct LogBuf {
    pub(super) uid: String,
    pub(super) state: watch::Sender<LogState>,
    pub(super) file: Mutex<Option<std::fs::File>>,
}

impl LogBuf {
    pub(super) fn new(ctx: &PodCtx, container: &str, base: &Path) -> LogBuf {
        let dir = base.join("logs");
        let uid8 = ctx.uid.get(..8).unwrap_or(&ctx.uid);
        let path = dir.join(format!(
            "{}_{}_{uid8}_{container}.log",
            ctx.namespace, ctx.name
        ));
        let file = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::File::create(&path))
            .ok();
        LogBuf {
            uid: ctx.uid.clone(),
            state: watch::Sender::new(LogState::default()),
            file: Mutex::new(file),
        }
    }

    pub(super) fn push(&self, bytes: &[u8]) {
        let at = SystemTime::now();
        if let Some(file) = lock(&self.file).as_mut() {
            let _ = file.write_all(bytes);
        }
        self.state.send_modify(|s| {
            s.lines.push(LogLine {
                at,
                bytes: bytes.to_vec(),
            })
        });
    }

    pub(super) fn finish(&self) {
        self.state.send_modify(|s| s.done = true);
    }

    /// The last lines, as a failed container's termination message.
    pub(super) fn tail_text(&self) -> String {
        let state = self.state.borrow();
        let first = state.lines.len().saturating_sub(MESSAGE_LINES);
        let bytes: Vec<u8> = state.lines[first..]
            .iter()
            .flat_map(|l| l.bytes.iter().copied())
            .collect();
        let cut = bytes.len().saturating_sub(MESSAGE_BYTES);
        String::from_utf8_lossy(&bytes[cut..]).into_owned()
    }
}
