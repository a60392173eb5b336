//! Picks up TensorBoard event files and VisualDL logs that a job writes into
//! its directory, while it runs, and stores their scalars as the job's
//! metrics: a job that already logs with tensorboardX, torch's
//! SummaryWriter or VisualDL's LogWriter shows up on PaddleBoard unchanged.
//!
//! Every file is read incrementally from where the last pass stopped. Tags of
//! files in a subdirectory get that directory (relative to the job's
//! directory) in front, as TensorBoard names runs: `runs/train/loss`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use app::models::{validate_point, Account, MetricPoint, MAX_BATCH_POINTS};
use app::ports::Metrics;
use tokio::sync::watch;

use super::{format_of, LogReader};

/// How often a running job's directory is looked at: charts promise new
/// points within two seconds.
pub const INTERVAL: Duration = Duration::from_secs(1);
/// How deep below the job's directory log files are looked for.
const MAX_DEPTH: usize = 6;
/// Directories never searched: the console's own pod logs, and caches that
/// can hold many files.
const SKIP_DIRS: &[&str] = &["logs", "__pycache__", ".git", "node_modules"];

/// Reads one job's log files until `done` turns true, then once more.
pub async fn watch_job(
    metrics: Arc<dyn Metrics>,
    account: Account,
    job: String,
    dir: PathBuf,
    mut done: watch::Receiver<bool>,
) {
    let mut files: HashMap<PathBuf, LogReader> = HashMap::new();
    loop {
        let finished = *done.borrow();
        pass(&*metrics, &account, &job, &dir, &mut files).await;
        if finished {
            return;
        }
        // Either the interval passes or the job ends (then a last pass).
        let _ = tokio::time::timeout(INTERVAL, done.changed()).await;
    }
}

/// One look at every log file under `dir`.
async fn pass(
    metrics: &dyn Metrics,
    account: &Account,
    job: &str,
    dir: &Path,
    files: &mut HashMap<PathBuf, LogReader>,
) {
    let found = {
        let dir = dir.to_owned();
        tokio::task::spawn_blocking(move || find_log_files(&dir))
            .await
            .unwrap_or_default()
    };
    for path in found {
        let reader = files.entry(path.clone()).or_insert_with(|| {
            LogReader::new(format_of(&path.to_string_lossy()).expect("found by format"))
        });
        let mut work = reader.clone();
        let read = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || {
                let mut file = std::fs::File::open(&path)?;
                // A file that shrank was replaced: read it from the start.
                if file.metadata()?.len() < work.offset() {
                    work = LogReader::new(work.format());
                }
                let batch = work.read_from(&mut file)?;
                Ok::<_, std::io::Error>((work, batch))
            })
            .await
        };
        let (next, batch) = match read {
            Ok(Ok(done)) => done,
            Ok(Err(err)) => {
                tracing::debug!(file = %path.display(), error = %err, "log file not readable yet");
                continue;
            }
            Err(_) => continue,
        };
        for warning in &batch.warnings {
            tracing::warn!(job, file = %path.display(), "{warning}");
        }
        let (points, refused) = metric_points(&run_prefix(dir, &path), batch.points);
        for why in &refused {
            tracing::warn!(job, file = %path.display(), "{why}");
        }
        let mut stored = true;
        for chunk in points.chunks(MAX_BATCH_POINTS) {
            if let Err(err) = metrics.append(account, job, chunk.to_vec()).await {
                tracing::warn!(job, file = %path.display(), error = %err, "storing scalars from a log file");
                stored = false;
                break;
            }
        }
        // Only move past what was stored, so a database hiccup is retried.
        if stored {
            files.insert(path, next);
        }
    }
}

/// The points of a file as PaddleBoard stores them: tags with the file's run
/// `prefix` in front. Points PaddleBoard would refuse (a control character
/// in a tag, a wall time in milliseconds) are left out, each with why, so one
/// bad point does not hold back the rest of the file.
pub(crate) fn metric_points(
    prefix: &str,
    points: Vec<super::ScalarPoint>,
) -> (Vec<MetricPoint>, Vec<String>) {
    let mut refused = Vec::new();
    let points = points
        .into_iter()
        .map(|p| MetricPoint {
            tag: format!("{prefix}{}", p.tag),
            step: p.step,
            value: p.value,
            wall_time: Some(p.wall_time),
        })
        .filter(|p| match validate_point(p) {
            Ok(()) => true,
            Err((_, why)) => {
                refused.push(format!("point {:?} step {} left out: {why}", p.tag, p.step));
                false
            }
        })
        .collect();
    (points, refused)
}

/// `runs/train/` for `<dir>/runs/train/events.out…`, empty at the top.
pub(crate) fn run_prefix(dir: &Path, file: &Path) -> String {
    file.parent()
        .and_then(|parent| parent.strip_prefix(dir).ok())
        .map(|rel| rel.to_string_lossy().replace('\\', "/"))
        .filter(|rel| !rel.is_empty())
        .map(|rel| format!("{rel}/"))
        .unwrap_or_default()
}

/// Log files under `dir`, in name order (VisualDL names carry a timestamp,
/// so a resumed run's newer file comes after the older).
fn find_log_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_owned(), 0usize)];
    while let Some((at, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            if kind.is_dir() {
                if depth < MAX_DEPTH && !(depth == 0 && SKIP_DIRS.contains(&name.as_str())) {
                    stack.push((path, depth + 1));
                }
            } else if kind.is_file() && format_of(&name).is_some() {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_of_files_in_subdirectories_are_named_by_their_run() {
        let dir = Path::new("/data/jobs/a/mnist");
        assert_eq!(run_prefix(dir, &dir.join("events.out.tfevents.1")), "");
        assert_eq!(
            run_prefix(dir, &dir.join("runs/train/events.out.tfevents.1")),
            "runs/train/"
        );
    }

    #[test]
    fn log_files_are_found_below_the_job_directory_but_not_in_pod_logs() {
        let dir = tempfile::tempdir().unwrap();
        let make = |rel: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"").unwrap();
        };
        make("vdl/vdlrecords.2.log");
        make("vdl/vdlrecords.1.log");
        make("runs/train/events.out.tfevents.9.host");
        make("logs/events.out.tfevents.7");
        make("model/params.pdparams");
        let found: Vec<String> = find_log_files(dir.path())
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(
            found,
            [
                "runs/train/events.out.tfevents.9.host",
                "vdl/vdlrecords.1.log",
                "vdl/vdlrecords.2.log"
            ]
        );
    }
}
