//! `paddlecloud upload` and `paddlecloud download`: files of datasets and
//! models to and from a console, streamed, retried, and (downloads) resumed.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use app::models::{format_bytes, validate_path, AssetForm, AssetKind, Me, VersionForm};
use clap::{Args, ValueEnum};

use super::remote::RemoteArgs;
use crate::api_client::assets::Target;
use crate::api_client::{ApiClient, ClientError};

/// Which kind of asset, on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KindArg {
    /// A dataset: a folder of files.
    Dataset,
    /// A model: each upload is a new version.
    Model,
}

impl From<KindArg> for AssetKind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Dataset => AssetKind::Dataset,
            KindArg::Model => AssetKind::Model,
        }
    }
}

/// `paddlecloud upload`.
#[derive(Debug, Clone, Args)]
pub struct UploadArgs {
    /// `dataset` or `model`.
    pub kind: KindArg,
    /// The dataset or model, in your account (created if it does not exist).
    pub name: String,
    /// Files and folders. A folder's files keep their paths below it.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Folder inside the dataset to put the files in.
    #[arg(long, default_value = "")]
    pub to: String,
    /// Description (of a new dataset or model, or of the model version).
    #[arg(long, default_value = "")]
    pub description: String,
    /// Comma-separated tags (of a new dataset, or of the model version, e.g. `candidate`).
    #[arg(long, default_value = "")]
    pub tags: String,
    /// Datasets: after the upload, save the dataset's files as they then
    /// are as a new version (jobs read it as `name:N`), described by this.
    #[arg(long, value_name = "DESCRIPTION")]
    pub save_version: Option<String>,
    /// Which console, as whom.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud download`.
#[derive(Debug, Clone, Args)]
pub struct DownloadArgs {
    /// `dataset` or `model`.
    pub kind: KindArg,
    /// `name` (in your account) or `owner/name` (shared with you, or public).
    pub name: String,
    /// A model's version (default: its newest finished one), or a saved
    /// version of a dataset (default: its working files).
    #[arg(long)]
    pub version: Option<u32>,
    /// Only this file or folder.
    #[arg(long, default_value = "")]
    pub path: String,
    /// Where to write (default: a folder named after the dataset or model).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Which console, as whom.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Times a request is tried when the connection (not the server) fails.
const ATTEMPTS: u32 = 3;

/// Every file under `paths`, with the path it gets inside the asset.
fn local_files(paths: &[PathBuf], to: &str) -> anyhow::Result<Vec<(PathBuf, String)>> {
    let prefix = if to.is_empty() {
        String::new()
    } else {
        format!("{}/", validate_path(to)?)
    };
    let mut out = Vec::new();
    for root in paths {
        let meta =
            std::fs::metadata(root).with_context(|| format!("cannot read {}", root.display()))?;
        if meta.is_file() {
            let name = root
                .file_name()
                .and_then(|n| n.to_str())
                .with_context(|| format!("{} has no file name in UTF-8", root.display()))?;
            out.push((root.clone(), format!("{prefix}{name}")));
            continue;
        }
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            let mut entries: Vec<_> = std::fs::read_dir(&dir)
                .with_context(|| format!("cannot list {}", dir.display()))?
                .collect::<Result<_, _>>()?;
            entries.sort_by_key(|e| e.path());
            for entry in entries {
                let path = entry.path();
                if entry.file_type()?.is_dir() {
                    stack.push(path);
                } else if entry.file_type()?.is_file() {
                    let relative = path
                        .strip_prefix(root)?
                        .to_str()
                        .with_context(|| format!("{} is not a UTF-8 path", path.display()))?;
                    out.push((path.clone(), format!("{prefix}{relative}")));
                }
            }
        }
    }
    for (_, path) in &out {
        validate_path(path)?;
    }
    Ok(out)
}

/// A reader that reports how far it got, once a second, on a terminal.
struct Progress<R> {
    inner: R,
    label: String,
    size: u64,
    read: u64,
    last: Instant,
    shown: bool,
}

impl<R: Read> Read for Progress<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.last.elapsed() >= Duration::from_secs(1) {
            self.last = Instant::now();
            self.shown = true;
            eprint!(
                "\r  {}  {} of {} ({}%)   ",
                self.label,
                format_bytes(self.read),
                format_bytes(self.size),
                self.read * 100 / self.size.max(1)
            );
        }
        Ok(n)
    }
}

fn me(client: &ApiClient) -> anyhow::Result<Me> {
    Ok(client.json(client.get(&client.url(&["me"])).call())?)
}

/// Tries `f` again when the connection broke; the server's refusals are final.
fn retried<T>(what: &str, mut f: impl FnMut() -> Result<T, ClientError>) -> anyhow::Result<T> {
    let mut attempt = 1;
    loop {
        match f() {
            Err(ClientError::Connection { reason, .. }) if attempt < ATTEMPTS => {
                eprintln!("  {what}: connection failed ({reason}); retrying");
                std::thread::sleep(Duration::from_secs(attempt.into()));
                attempt += 1;
            }
            other => return other.with_context(|| what.to_owned()),
        }
    }
}

/// Uploads files and folders into a dataset, or as a new model version.
pub fn upload(args: UploadArgs) -> anyhow::Result<()> {
    let client = args.remote.client()?;
    let me = me(&client)?;
    let kind = AssetKind::from(args.kind);
    if kind == AssetKind::Model && args.save_version.is_some() {
        bail!("--save-version is for datasets: uploading a model already makes a new version");
    }
    let files = local_files(&args.paths, &args.to)?;
    if files.is_empty() {
        bail!("no files to upload under {:?}", args.paths);
    }
    let target = Target {
        kind,
        owner: &me.account.name,
        name: &args.name,
    };
    if client.asset(&target)?.is_none() {
        let form = AssetForm {
            name: args.name.clone(),
            description: if kind == AssetKind::Dataset {
                args.description.clone()
            } else {
                String::new()
            },
            tags: if kind == AssetKind::Dataset {
                args.tags.clone()
            } else {
                String::new()
            },
        };
        client.create_asset(kind, &form)?;
        eprintln!(
            "created {} {}/{}",
            kind.label().to_lowercase(),
            me.account.name,
            args.name
        );
    }
    let version = match kind {
        AssetKind::Dataset => None,
        AssetKind::Model => {
            let form = VersionForm {
                description: args.description.clone(),
                tags: args.tags.clone(),
                // Inside a job, the version records the job that made it.
                job: std::env::var("PADDLE_JOB_ID")
                    .ok()
                    .filter(|j| !j.is_empty()),
                empty: true,
            };
            Some(client.create_version(&target, &form)?.version)
        }
    };
    let total: u64 = files
        .iter()
        .map(|(local, _)| std::fs::metadata(local).map(|m| m.len()).unwrap_or(0))
        .sum();
    let started = Instant::now();
    for (i, (local, path)) in files.iter().enumerate() {
        let size = std::fs::metadata(local)?.len();
        let what = format!("[{}/{}] {path}", i + 1, files.len());
        let t0 = Instant::now();
        let mut shown = false;
        retried(&what, || {
            let file = File::open(local).map_err(|err| ClientError::Api {
                status: 0,
                code: "io".into(),
                message: format!("cannot read {}: {err}", local.display()),
                field: None,
            })?;
            let mut reader = Progress {
                inner: std::io::BufReader::with_capacity(1 << 20, file),
                label: what.clone(),
                size,
                read: 0,
                last: Instant::now(),
                shown: false,
            };
            let result = client.put_file(&target, version, path, &mut reader);
            shown |= reader.shown;
            result
        })?;
        if shown {
            eprint!("\r");
        }
        eprintln!(
            "{what}  {}  {}",
            format_bytes(size),
            rate(size, t0.elapsed())
        );
    }
    match version {
        Some(v) => {
            client.finish_version(&target, v)?;
            println!(
                "model {}/{} v{v}: {} files, {}",
                me.account.name,
                args.name,
                files.len(),
                format_bytes(total)
            );
        }
        None => {
            println!(
                "dataset {}/{}: uploaded {} files, {} in {}",
                me.account.name,
                args.name,
                files.len(),
                format_bytes(total),
                rate(total, started.elapsed())
            );
            if let Some(description) = &args.save_version {
                let form = VersionForm {
                    description: description.clone(),
                    job: std::env::var("PADDLE_JOB_ID")
                        .ok()
                        .filter(|j| !j.is_empty()),
                    ..VersionForm::default()
                };
                let v = client.create_version(&target, &form)?;
                println!(
                    "dataset {}/{} v{}: {} files, {} (read it as {}:{})",
                    me.account.name,
                    args.name,
                    v.version,
                    v.files,
                    format_bytes(v.bytes),
                    args.name,
                    v.version
                );
            }
        }
    }
    Ok(())
}

fn rate(bytes: u64, took: Duration) -> String {
    let secs = took.as_secs_f64().max(0.001);
    format!(
        "{:.1} s, {}/s",
        secs,
        format_bytes((bytes as f64 / secs) as u64)
    )
}

/// Downloads a dataset, a model version, or one file or folder of them.
/// Files already there with the right size are kept; a `.part` file left
/// by a cut-off download is continued where it stopped.
pub fn download(args: DownloadArgs) -> anyhow::Result<()> {
    let client = args.remote.client()?;
    let kind = AssetKind::from(args.kind);
    let mine;
    let (owner, name) = match args.name.split_once('/') {
        Some((o, n)) => (o, n),
        None => {
            mine = me(&client)?.account.name;
            (mine.as_str(), args.name.as_str())
        }
    };
    let target = Target { kind, owner, name };
    if client.asset(&target)?.is_none() {
        bail!(
            "no {} {owner}/{name} that your key can read",
            kind.label().to_lowercase()
        );
    }
    let version = match kind {
        AssetKind::Dataset => args.version,
        AssetKind::Model => Some(match args.version {
            Some(v) => v,
            None => client
                .versions(&target)?
                .into_iter()
                .find(|v| v.state == "ready")
                .map(|v| v.version)
                .with_context(|| format!("model {owner}/{name} has no finished version"))?,
        }),
    };
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(name));
    // A file path downloads just that file; a folder, everything below it.
    let only = args.path.trim_matches('/');
    let mut files = Vec::new();
    let mut dirs = vec![String::new()];
    while let Some(dir) = dirs.pop() {
        for entry in client.list_dir(&target, version, &dir)? {
            let wanted = only.is_empty()
                || entry.path == only
                || entry.path.starts_with(&format!("{only}/"))
                || only.starts_with(&format!("{}/", entry.path));
            if !wanted {
                continue;
            }
            if entry.dir {
                dirs.push(entry.path);
            } else {
                files.push(entry);
            }
        }
    }
    if files.is_empty() {
        bail!(
            "nothing to download{}",
            if only.is_empty() {
                String::new()
            } else {
                format!(" at {only}")
            }
        );
    }
    let started = Instant::now();
    let mut total = 0;
    for (i, entry) in files.iter().enumerate() {
        // The server's paths are checked again: a download never writes
        // outside `out`.
        let relative = validate_path(&entry.path)?;
        let dest = out.join(&relative);
        let what = format!("[{}/{}] {relative}", i + 1, files.len());
        if std::fs::metadata(&dest).is_ok_and(|m| m.len() == entry.size) {
            eprintln!("{what}  up to date");
            continue;
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let t0 = Instant::now();
        retried(&what, || {
            fetch(&client, &target, version, &entry.path, &dest, entry.size)
        })?;
        total += entry.size;
        eprintln!(
            "{what}  {}  {}",
            format_bytes(entry.size),
            rate(entry.size, t0.elapsed())
        );
    }
    println!(
        "downloaded {} files into {} ({}, {})",
        files.len(),
        out.display(),
        format_bytes(total),
        rate(total, started.elapsed())
    );
    Ok(())
}

/// One file into `dest` through `dest.part`, continuing a partial one.
fn fetch(
    client: &ApiClient,
    target: &Target,
    version: Option<u32>,
    path: &str,
    dest: &Path,
    size: u64,
) -> Result<(), ClientError> {
    let io = |err: std::io::Error| ClientError::Connection {
        server: client.server().to_owned(),
        reason: err.to_string(),
    };
    let part = dest.with_extension(match dest.extension() {
        Some(ext) => format!("{}.part", ext.to_string_lossy()),
        None => "part".to_owned(),
    });
    let have = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
    let asked = if have < size { have } else { 0 };
    let (partial, mut body) = client.get_file(target, version, path, asked)?;
    let from = if partial { asked } else { 0 };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(from > 0)
        .write(true)
        .truncate(from == 0)
        .open(&part)
        .map_err(io)?;
    std::io::copy(&mut body, &mut file).map_err(io)?;
    file.flush().map_err(io)?;
    let got = file.metadata().map_err(io)?.len();
    if got != size {
        return Err(io(std::io::Error::other(format!(
            "got {got} of {size} bytes"
        ))));
    }
    std::fs::rename(&part, dest).map_err(io)
}
