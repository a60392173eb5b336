//! The spool of local-run reports, shared with the Python SDK
//! (`paddlecloud/runs.py`): `<id>.jsonl` holds one report a line
//! (`{"seq", "kind", "body"}`), written before it is sent; `<id>.state`
//! says how many the console has and the run's name; `<id>.lock` is held
//! by whoever sends them (the run itself, or a `sync`). Reports are sent
//! in order, and the console takes each once however often it comes.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::api_client::{ApiClient, ClientError};

/// `$PADDLECLOUD_SPOOL`, else `~/.cache/paddlecloud/spool`.
pub fn spool_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PADDLECLOUD_SPOOL").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    Path::new(&home).join(".cache/paddlecloud/spool")
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    sent: u64,
    name: Option<String>,
}

/// One run's reports.
pub struct Spool {
    path: PathBuf,
    state: State,
    count: u64,
    _lock: File,
}

impl Spool {
    /// Opens (or makes) the spool at `path` (`<id>.jsonl`) and holds its
    /// lock; `None` when another process holds it.
    pub fn claim(path: PathBuf) -> anyhow::Result<Option<Self>> {
        let lock = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path.with_extension("lock"))
            .with_context(|| format!("opening {}", path.display()))?;
        if lock.try_lock().is_err() {
            return Ok(None);
        }
        let state = fs::read(path.with_extension("state"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let count = match File::open(&path) {
            Ok(f) => BufReader::new(f).split(b'\n').filter(|l| l.is_ok()).count() as u64,
            Err(_) => 0,
        };
        Ok(Some(Self {
            path,
            state,
            count,
            _lock: lock,
        }))
    }

    /// The run's job name, once the console has its start.
    pub fn name(&self) -> Option<&str> {
        self.state.name.as_deref()
    }

    /// Reports written and not yet acknowledged.
    pub fn waiting(&self) -> u64 {
        self.count.saturating_sub(self.state.sent)
    }

    /// Writes a report (durably) before it is sent.
    pub fn append(&mut self, kind: &str, body: Value) -> anyhow::Result<()> {
        let line = json!({"seq": self.count, "kind": kind, "body": body}).to_string() + "\n";
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .with_context(|| format!("writing {}", self.path.display()))?;
        file.write_all(line.as_bytes())?;
        file.sync_data()?;
        self.count += 1;
        Ok(())
    }

    fn acknowledge(&mut self, seq: u64, name: Option<String>) -> anyhow::Result<()> {
        self.state.sent = seq + 1;
        if name.is_some() {
            self.state.name = name;
        }
        let tmp = self.path.with_extension("state.tmp");
        fs::write(&tmp, serde_json::to_vec(&self.state)?)?;
        fs::rename(&tmp, self.path.with_extension("state"))?;
        Ok(())
    }

    /// Sends what the console does not have, in order. Ok(false) when it
    /// could not be reached (the rest waits); a report it refuses for good
    /// (a 4xx) is said and passed over.
    pub fn deliver(&mut self, client: &ApiClient) -> anyhow::Result<bool> {
        let Ok(file) = File::open(&self.path) else {
            return Ok(true);
        };
        for line in BufReader::new(file).lines() {
            let Ok(report) = serde_json::from_str::<Value>(&line?) else {
                break; // a torn last line: never acknowledged
            };
            let seq = report["seq"].as_u64().unwrap_or(0);
            if seq < self.state.sent {
                continue;
            }
            let kind = report["kind"].as_str().unwrap_or_default();
            let name = self.state.name.clone();
            if name.is_none() && kind != "start" {
                return Ok(false);
            }
            match client.local_run_report(name.as_deref(), kind, &report["body"]) {
                Ok(named) => self.acknowledge(seq, named)?,
                Err(ClientError::Api { status, .. })
                    if status == 408 || status == 429 || status >= 500 =>
                {
                    return Ok(false)
                }
                Err(err @ ClientError::Api { .. }) => {
                    eprintln!("paddlecloud: the console refused a {kind} report: {err}");
                    self.acknowledge(seq, None)?;
                }
                Err(_) => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Everything was delivered: the files go.
    pub fn remove(self) {
        for ext in ["jsonl", "state", "lock"] {
            let _ = fs::remove_file(self.path.with_extension(ext));
        }
    }

    /// Where the reports wait.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `paddlecloud sync`: sends every spooled run no process is sending;
/// returns how many still wait.
pub fn sync(client: &ApiClient) -> anyhow::Result<usize> {
    let dir = spool_dir();
    let Ok(entries) = fs::read_dir(&dir) else {
        return Ok(0);
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    let mut waiting = 0;
    for path in paths {
        let Some(mut spool) = Spool::claim(path)? else {
            continue;
        };
        if spool.deliver(client)? && spool.waiting() == 0 {
            println!("sent the reports of {}", spool.name().unwrap_or("a run"));
            spool.remove();
        } else {
            waiting += 1;
        }
    }
    Ok(waiting)
}
