//! Metric files written where the console cannot read them (inside a pod on
//! Kubernetes), sent to it piece by piece by the SDK's `paddlecloud.ship`,
//! which runs a replica's command and watches its directory as
//! [`super::watch`] does a local job's.
//!
//! The pod sends raw bytes from an offset; the console decodes them with the
//! same [`LogReader`] a local job's files go through, so both backends read
//! the same formats the same way, and the pod needs no decoder and no route
//! to anything but the console. The console keeps no state per file: the
//! sender keeps the offset and the reader's plugin tags the console answers
//! with, and sends them back with the next piece. A piece sent twice (an
//! answer lost on the way) stores the same steps again, which replaces them.

use std::path::{Component, Path};

use app::error::AppError;
use app::models::{Account, MetricFileAck, PluginTag, MAX_BATCH_POINTS};
use app::ports::Metrics;

use super::watch::{metric_points, run_prefix};
use super::{format_of, LogReader};

/// The request header that carries the plugin tags of the last answer
/// (JSON), empty or absent for a file's first piece.
pub const PLUGIN_TAGS_HEADER: &str = "paddlecloud-plugin-tags";
/// The largest piece of a file one request carries.
pub const MAX_PIECE: usize = 4 << 20;
/// The longest file path (relative to the replica's directory) accepted.
const MAX_PATH: usize = 512;

/// Stores the scalars in `data`, the bytes of `file` (relative to the
/// replica's working directory) from `offset`, as points of `job`.
pub async fn receive(
    metrics: &dyn Metrics,
    account: &Account,
    job: &str,
    file: &str,
    offset: u64,
    plugin_tags: Vec<PluginTag>,
    data: &[u8],
) -> Result<MetricFileAck, AppError> {
    let format = check_file(file)?;
    if data.len() > MAX_PIECE {
        return Err(AppError::invalid(
            "body",
            format!("Send a metric file in pieces of at most {MAX_PIECE} bytes."),
        ));
    }
    let tags = plugin_tags.into_iter().map(|t| (t.tag, t.scalar)).collect();
    let mut reader = LogReader::resume(format, offset, tags);
    let batch = reader.feed(data);
    let (points, refused) =
        metric_points(&run_prefix(Path::new(""), Path::new(file)), batch.points);
    if points.is_empty() {
        // Nothing to store, but the job must still be the caller's.
        metrics.tags(account, job).await?;
    }
    for chunk in points.chunks(MAX_BATCH_POINTS) {
        metrics.append(account, job, chunk.to_vec()).await?;
    }
    let rest = &data[batch.consumed..];
    let next_record = match reader.stalled() {
        Some(_) => None,
        None => super::framing::record_len(format, rest)
            .filter(|len| *len > rest.len())
            .map(|len| len as u64),
    };
    let mut warnings = batch.warnings;
    warnings.extend(refused);
    Ok(MetricFileAck {
        offset: reader.offset(),
        points: points.len(),
        plugin_tags: reader
            .plugin_tags()
            .into_iter()
            .map(|(tag, scalar)| PluginTag { tag, scalar })
            .collect(),
        next_record,
        stalled: reader.stalled().map(str::to_owned),
        warnings,
    })
}

/// A metric file's path below the replica's directory: relative, no `..`,
/// named as TensorBoard or VisualDL name their files.
fn check_file(file: &str) -> Result<super::LogFormat, AppError> {
    let relative = !file.is_empty()
        && file.len() <= MAX_PATH
        && Path::new(file)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    let format = format_of(file).filter(|_| relative);
    format.ok_or_else(|| {
        AppError::invalid(
            "file",
            format!(
                "“{file}” is not a metric file below the job's directory: a relative path (at \
                 most {MAX_PATH} bytes, no `..`) whose name contains `tfevents` (TensorBoard) or \
                 `vdlrecords` (VisualDL)."
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_relative_metric_file_names_are_taken() {
        assert!(check_file("vdl/vdlrecords.1700000000.log").is_ok());
        assert!(check_file("runs/train/events.out.tfevents.1.host").is_ok());
        for bad in [
            "",
            "model.pdparams",
            "/etc/events.out.tfevents.1",
            "../vdlrecords.1.log",
            "a/../../vdlrecords.1.log",
            "./vdlrecords.1.log",
        ] {
            let err = check_file(bad).unwrap_err();
            assert_eq!(err.field(), Some("file"), "{bad}");
        }
        assert!(check_file(&format!("{}/vdlrecords.1.log", "d".repeat(600))).is_err());
    }
}
