//! `paddlecloud run [--name N] [--param K=V] -- COMMAND…`: runs any program
//! (any language) on this machine as a local run: a job of the account with
//! its output in the log console, its parameters, where it ran, and how it
//! ended (exit 0 succeeded, another code failed, Ctrl-C or SIGTERM stopped).
//! Reports go through the spool (`spool.rs`), so an unreachable console
//! loses nothing: `paddlecloud sync` sends what waits.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use app::models::pipeline_form::typed_value;
use clap::Args;
use serde_json::{json, Value};

use super::remote::RemoteArgs;
use super::spool::{spool_dir, Spool};
use crate::api_client::ApiClient;

/// `run`.
#[derive(Debug, Clone, Args)]
pub struct LocalRunArgs {
    /// The job's name (default: after the program, `train`, `train-2`…).
    #[arg(long)]
    pub name: Option<String>,
    /// A parameter, `NAME=VALUE` (repeatable; a number or `true` stays one).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// The program and its arguments, after `--`.
    #[arg(trailing_var_arg = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// What this machine and directory say about a run.
fn facts(command: &[String]) -> Value {
    let run = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let git = run(&["rev-parse", "HEAD"]).map(|commit| {
        let branch = run(&["rev-parse", "--abbrev-ref", "HEAD"]).unwrap_or_default();
        let dirty = run(&["status", "--porcelain", "--untracked-files=no"])
            .is_some_and(|s| !s.trim().is_empty());
        let mut diff = if dirty {
            run(&["diff", "HEAD"]).unwrap_or_default()
        } else {
            String::new()
        };
        if diff.len() > app::models::MAX_DIFF {
            let mut cut = app::models::MAX_DIFF;
            while !diff.is_char_boundary(cut) {
                cut -= 1;
            }
            diff.truncate(cut);
            diff.push_str("\n[diff cut]\n");
        }
        let branch = branch.trim();
        json!({"commit": commit.trim(), "branch": if branch == "HEAD" { "" } else { branch },
               "dirty": dirty, "diff": diff})
    });
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    json!({
        "host": host,
        "user": std::env::var("USER").unwrap_or_default(),
        "command": command,
        "working_dir": std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default(),
        "git": git,
        "client": "cli",
    })
}

/// Output not yet reported, and how much was.
#[derive(Default)]
struct Output {
    pending: Vec<u8>,
    offset: u64,
}

impl Output {
    /// A log report of the whole lines waiting (everything when `all`).
    fn take(&mut self, all: bool) -> Option<Value> {
        let cut = if all {
            self.pending.len()
        } else {
            self.pending
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1)
        };
        if cut == 0 {
            return None;
        }
        let bytes: Vec<u8> = self.pending.drain(..cut).collect();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let report = json!({"offset": self.offset, "text": text, "at": crate::time::now_ms()});
        self.offset += text.len() as u64;
        Some(report)
    }
}

/// Copies `from` to `to` and into `output` as it comes.
fn tee(
    mut from: impl Read + Send + 'static,
    mut to: impl Write + Send + 'static,
    output: Arc<Mutex<Output>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            let _ = to.write_all(&buf[..n]);
            let _ = to.flush();
            output
                .lock()
                .expect("output lock")
                .pending
                .extend_from_slice(&buf[..n]);
        }
    })
}

/// Runs `paddlecloud run`; the process's exit status is the program's.
pub fn run_local(args: LocalRunArgs) -> anyhow::Result<i32> {
    // Listening before anything is sent: a SIGTERM that came before the
    // handler would end this process alone and leave the run "running". One
    // that comes before the program starts reaches it as soon as it does.
    let signals = listen_for_signals();
    let client = args.remote.client()?;
    let mut params = serde_json::Map::new();
    for pair in &args.params {
        match pair.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                params.insert(k.trim().to_owned(), typed_value(v));
            }
            _ => bail!("--param wants NAME=VALUE, got {pair:?}"),
        }
    }
    let mut raw = [0u8; 16];
    getrandom::fill(&mut raw).context("making the run's id")?;
    let id = hex::encode(raw);
    let dir = spool_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut spool = Spool::claim(dir.join(format!("{id}.jsonl")))?.context("the spool is taken")?;
    spool.append(
        "start",
        json!({
            "client_id": id, "name": args.name, "params": params,
            "facts": facts(&args.command), "started_at": crate::time::now_ms(),
        }),
    )?;
    let online = spool.deliver(&client)?;
    if !online {
        eprintln!("paddlecloud: the console cannot be reached; the run's reports are spooled.");
    }

    let mut command = Command::new(&args.command[0]);
    command
        .args(&args.command[1..])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so a stop reaches everything it started;
    // except at a terminal, where it must stay in the foreground group to
    // read its input (Ctrl-C reaches the whole group there anyway).
    let own_group = !std::io::IsTerminal::is_terminal(&std::io::stdin());
    if own_group {
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
    }
    if let Some(name) = spool.name() {
        // The program's own `draw_board` charts this run.
        command.env("PADDLECLOUD_JOB", name);
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {}", args.command[0]))?;
    let output = Arc::new(Mutex::new(Output::default()));
    let readers = [
        tee(
            child.stdout.take().expect("piped"),
            std::io::stdout(),
            output.clone(),
        ),
        tee(
            child.stderr.take().expect("piped"),
            std::io::stderr(),
            output.clone(),
        ),
    ];
    let interrupted = Arc::new(AtomicBool::new(false));
    forward_signals(signals, child.id(), own_group, interrupted.clone());

    // `$PADDLECLOUD_HEARTBEAT_SECS`, as the SDK: for a console with a short window.
    let beat_every = std::env::var("PADDLECLOUD_HEARTBEAT_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map_or(
            Duration::from_secs(app::models::HEARTBEAT_SECS),
            Duration::from_secs_f64,
        );
    let mut last_beat = Instant::now();
    let mut stop_asked = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(500));
        let report = output.lock().expect("output lock").take(false);
        if let Some(report) = report {
            spool.append("log", report)?;
        }
        let _ = spool.deliver(&client);
        if last_beat.elapsed() >= beat_every {
            last_beat = Instant::now();
            let asked = spool
                .name()
                .is_some_and(|name| client.local_run_heartbeat(name).unwrap_or(false));
            if asked && !stop_asked {
                // Stop on the console: the program gets SIGTERM.
                stop_asked = true;
                interrupted.store(true, Ordering::SeqCst);
                let pid = nix::unistd::Pid::from_raw(child.id() as i32);
                let term = nix::sys::signal::Signal::SIGTERM;
                let _ = if own_group {
                    nix::sys::signal::killpg(pid, term)
                } else {
                    nix::sys::signal::kill(pid, term)
                };
            }
        }
    };
    // What it left running in the background may hold the pipes open: its
    // output is read a little longer, then the run ends without it.
    let waited = Instant::now();
    while readers.iter().any(|r| !r.is_finished()) && waited.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(report) = output.lock().expect("output lock").take(true) {
        spool.append("log", report)?;
    }
    let (outcome, code, mut message) = match (status.code(), status.signal()) {
        (Some(0), _) => ("succeeded", 0, String::new()),
        (Some(c), _) if interrupted.load(Ordering::SeqCst) => {
            ("stopped", c, "Interrupted.".to_owned())
        }
        (Some(c), _) => ("failed", c, String::new()),
        (None, Some(s))
            if s == libc_sig::INT || s == libc_sig::TERM || interrupted.load(Ordering::SeqCst) =>
        {
            ("stopped", 128 + s, format!("Ended by signal {s}."))
        }
        (None, s) => {
            let s = s.unwrap_or(0);
            ("failed", 128 + s, format!("Killed by signal {s}."))
        }
    };
    if stop_asked {
        message = "Stopped from the console.".to_owned();
    }
    spool.append(
        "end",
        json!({
            "outcome": outcome, "exit_code": status.code(), "message": message,
            "finished_at": crate::time::now_ms(),
        }),
    )?;
    // Reachable a moment ago: worth a wait; never reached: the spool keeps it.
    let patience = if spool.name().is_some() { 10 } else { 2 };
    let deadline = Instant::now() + Duration::from_secs(patience);
    while !spool.deliver(&client)? && Instant::now() < deadline {
        std::thread::sleep(Duration::from_secs(1));
    }
    if spool.waiting() == 0 {
        spool.remove();
    } else {
        eprintln!(
            "paddlecloud: {} reports of this run wait in {}; `paddlecloud sync` sends them.",
            spool.waiting(),
            spool.path().display()
        );
    }
    Ok(code)
}

/// Signal numbers (Linux).
mod libc_sig {
    pub const INT: i32 = 2;
    pub const TERM: i32 = 15;
}

/// SIGINT and SIGTERM to this process, caught from now on (none without a
/// tokio runtime: then they keep their default action).
type Signals = Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>;

fn listen_for_signals() -> Signals {
    use tokio::signal::unix::{signal, SignalKind};
    let handle = tokio::runtime::Handle::try_current().ok()?;
    let _runtime = handle.enter();
    Some((
        signal(SignalKind::interrupt()).ok()?,
        signal(SignalKind::terminate()).ok()?,
    ))
}

/// The caught SIGINT and SIGTERM go to the program's process group, and
/// the run ends as stopped.
fn forward_signals(signals: Signals, pid: u32, group: bool, interrupted: Arc<AtomicBool>) {
    let (Some((mut int, mut term)), Ok(handle)) = (signals, tokio::runtime::Handle::try_current())
    else {
        return;
    };
    handle.spawn(async move {
        loop {
            let sig = tokio::select! {
                _ = int.recv() => nix::sys::signal::Signal::SIGINT,
                _ = term.recv() => nix::sys::signal::Signal::SIGTERM,
            };
            interrupted.store(true, Ordering::SeqCst);
            let pid = nix::unistd::Pid::from_raw(pid as i32);
            let _ = if group {
                nix::sys::signal::killpg(pid, sig)
            } else {
                nix::sys::signal::kill(pid, sig)
            };
        }
    });
}

/// `paddlecloud sync`.
pub fn run_sync(remote: RemoteArgs) -> anyhow::Result<()> {
    let client: ApiClient = remote.client()?;
    let waiting = super::spool::sync(&client)?;
    if waiting > 0 {
        bail!("{waiting} runs' reports still wait (the console could not be reached)");
    }
    Ok(())
}
