//! Metric files jobs write: incremental readers for scalar metrics in
//! TensorBoard event files (`events.out.tfevents.*`) and VisualDL 2.x logs
//! (`vdlrecords.*.log`), and [`watch`], which feeds a running job's files
//! into PaddleBoard.
//!
//! Training jobs append to these files while they run. A [`LogReader`] per
//! file keeps the byte offset of the end of the last complete record, so a
//! poller can hand it only the bytes from there on, as often as it likes:
//!
//! ```no_run
//! use server::metric_files::{format_of, LogReader};
//! let path = "run/events.out.tfevents.1700000000.host";
//! let mut reader = LogReader::new(format_of(path).unwrap());
//! let mut file = std::fs::File::open(path)?;
//! loop {
//!     let batch = reader.read_from(&mut file)?; // seeks to reader.offset()
//!     for p in &batch.points { println!("{} {} {}", p.tag, p.step, p.value); }
//!     for w in &batch.warnings { eprintln!("{path}: {w}"); }
//!     std::thread::sleep(std::time::Duration::from_secs(5));
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Damage is handled so that one bad byte costs as little as possible:
//!
//! * A record that is not completely written yet is left for the next call.
//! * A complete record whose payload fails its CRC (TensorBoard) or does not
//!   decode as protobuf (both formats) is skipped with a warning.
//! * When the framing itself is damaged — a TFRecord length whose CRC fails,
//!   or a length beyond 256 MiB — the start of the next record is unknown, so
//!   the reader stops at that record and warns once ([`LogReader::stalled`]).
//!   It does not scan ahead for something that looks like a record: VisualDL
//!   records carry no checksum at all, so a scan there would turn garbage into
//!   data points. Each later call re-checks the same spot without a new
//!   warning, so a stall caused by a reader racing a writer on a filesystem
//!   that shows unwritten bytes as zeros clears itself once the bytes land.
//!
//! Nothing here panics on any input.

/// Public for the fuzz targets (`fuzz/src/lib.rs`), which check the
/// framing of records on any bytes.
pub mod framing;
pub mod shipped;
mod tensorboard;
mod visualdl;
pub mod watch;

use std::io::{self, Read, Seek, SeekFrom};

use framing::Frame;

/// One scalar point read from a log file.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalarPoint {
    /// The series name, e.g. `train/loss`.
    pub tag: String,
    /// The training step the writer gave.
    pub step: i64,
    /// When the point was written, in seconds since the Unix epoch.
    pub wall_time: f64,
    /// The value; NaN and infinities are kept as written. TensorBoard's
    /// `simple_value` and VisualDL's values are `f32` on disk.
    pub value: f64,
}

/// The log formats this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogFormat {
    /// TFRecord files of `Event` protobufs, `events.out.tfevents.*`.
    TensorBoard,
    /// VisualDL 2.x `LogWriter` files, `vdlrecords.*.log`.
    VisualDl,
}

/// Which format a file is, from its name (a bare name or a path); `None` for
/// other files.
///
/// Uses the writers' own tests: TensorBoard takes any file whose name contains
/// `tfevents`, VisualDL any whose name contains `vdlrecords`.
pub fn format_of(file_name: &str) -> Option<LogFormat> {
    let name = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
    if name.contains("tfevents") {
        Some(LogFormat::TensorBoard)
    } else if name.contains("vdlrecords") {
        Some(LogFormat::VisualDl)
    } else {
        None
    }
}

/// What one call to [`LogReader::feed`] or [`LogReader::read_from`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// Scalars in file order.
    pub points: Vec<ScalarPoint>,
    /// Human-readable descriptions of damaged records that were skipped, or
    /// of the place where reading stalled; each names its byte offset.
    pub warnings: Vec<String>,
    /// Bytes consumed, up to the end of the last complete record.
    pub consumed: usize,
}

impl Batch {
    fn append(&mut self, other: Batch) {
        self.points.extend(other.points);
        self.warnings.extend(other.warnings);
        self.consumed += other.consumed;
    }
}

#[derive(Debug, Clone)]
enum Decoder {
    TensorBoard(tensorboard::Decoder),
    VisualDl,
}

/// An incremental reader for one log file.
#[derive(Debug, Clone)]
pub struct LogReader {
    format: LogFormat,
    decoder: Decoder,
    offset: u64,
    /// Why reading cannot go past `offset`, if it cannot.
    stalled: Option<String>,
}

/// How much [`LogReader::read_from`] reads at a time.
const READ_CHUNK: usize = 1 << 20;

impl LogReader {
    /// A reader for a file of `format`, starting at byte 0.
    pub fn new(format: LogFormat) -> Self {
        Self::resume(format, 0, Vec::new())
    }

    /// A reader that continues a file from `offset`, a value of
    /// [`LogReader::offset`] saved earlier.
    ///
    /// TensorBoard writers name a tag's plugin only on its first occurrence
    /// in a file, and that first one decides, so pass the saved
    /// [`LogReader::plugin_tags`] too; otherwise tensor-style scalars whose
    /// first occurrence lies before `offset` are not recognised, and a tag
    /// first named for another plugin may later be taken for a scalar
    /// (plain `simple_value` scalars and VisualDL need nothing).
    pub fn resume(format: LogFormat, offset: u64, plugin_tags: Vec<(String, bool)>) -> Self {
        let decoder = match format {
            LogFormat::TensorBoard => {
                Decoder::TensorBoard(tensorboard::Decoder::with_plugin_tags(plugin_tags))
            }
            LogFormat::VisualDl => Decoder::VisualDl,
        };
        Self {
            format,
            decoder,
            offset,
            stalled: None,
        }
    }

    /// The format this reader decodes.
    pub fn format(&self) -> LogFormat {
        self.format
    }

    /// Byte offset of the end of the last complete record consumed: where the
    /// next call's data must start.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Why reading is stuck at [`LogReader::offset`], if the framing there is
    /// damaged (see the crate docs). Cleared when the record becomes readable.
    pub fn stalled(&self) -> Option<&str> {
        self.stalled.as_deref()
    }

    /// TensorBoard tags whose plugin this file has named so far, each with
    /// whether it is the scalars plugin: what to save with the offset for
    /// [`LogReader::resume`]. Empty for VisualDL.
    pub fn plugin_tags(&self) -> Vec<(String, bool)> {
        match &self.decoder {
            Decoder::TensorBoard(d) => d
                .plugin_tags()
                .map(|(tag, is_scalar)| (tag.to_owned(), is_scalar))
                .collect(),
            Decoder::VisualDl => Vec::new(),
        }
    }

    /// The TensorBoard tags of [`LogReader::plugin_tags`] that are
    /// scalar-plugin tensor tags.
    pub fn scalar_plugin_tags(&self) -> Vec<String> {
        self.plugin_tags()
            .into_iter()
            .filter_map(|(tag, is_scalar)| is_scalar.then_some(tag))
            .collect()
    }

    /// Reads every complete record in `data` — the bytes of the file from
    /// [`LogReader::offset`] to its current end — and advances the offset past
    /// the last complete record. A partly written record at the end is left
    /// for the next call, which must pass the data from the new offset.
    pub fn feed(&mut self, data: &[u8]) -> Batch {
        let mut batch = Batch::default();
        let mut pos = 0;
        while let Some(rest) = data.get(pos..) {
            let at = self.offset + pos as u64;
            let frame = match self.format {
                LogFormat::TensorBoard => framing::next_tfrecord(rest),
                LogFormat::VisualDl => framing::next_vdl_record(rest),
            };
            match frame {
                Frame::Record { payload, len } => {
                    self.stalled = None;
                    self.decode(payload, at, &mut batch);
                    pos += len;
                }
                Frame::Corrupt { len, reason } => {
                    self.stalled = None;
                    batch
                        .warnings
                        .push(format!("record at byte {at}: {reason}; skipped"));
                    pos += len;
                }
                Frame::Incomplete => break,
                Frame::Lost(reason) => {
                    let warning = format!(
                        "record at byte {at}: {reason}; cannot find the next record, reading stops here"
                    );
                    if self.stalled.as_deref() != Some(warning.as_str()) {
                        batch.warnings.push(warning.clone());
                        self.stalled = Some(warning);
                    }
                    break;
                }
            }
        }
        batch.consumed = pos;
        self.offset += pos as u64;
        batch
    }

    /// Seeks `source` to [`LogReader::offset`], reads it to the end and feeds
    /// what it read, a chunk at a time so a large file need not fit in memory
    /// at once.
    pub fn read_from<R: Read + Seek>(&mut self, source: &mut R) -> io::Result<Batch> {
        source.seek(SeekFrom::Start(self.offset))?;
        let mut total = Batch::default();
        let mut pending = Vec::new();
        let mut chunk = vec![0; READ_CHUNK];
        loop {
            let n = match source.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            pending.extend_from_slice(&chunk[..n]);
            let batch = self.feed(&pending);
            pending.drain(..batch.consumed);
            total.append(batch);
            if self.stalled.is_some() {
                break;
            }
        }
        Ok(total)
    }

    fn decode(&mut self, payload: &[u8], at: u64, batch: &mut Batch) {
        let result = match &mut self.decoder {
            Decoder::TensorBoard(d) => d.decode(payload, &mut batch.points, &mut batch.warnings),
            Decoder::VisualDl => visualdl::decode(payload, &mut batch.points),
        };
        if let Err(e) = result {
            batch.warnings.push(format!(
                "record at byte {at}: not a valid protobuf ({e}); skipped"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_map_to_formats() {
        assert_eq!(
            format_of("events.out.tfevents.1700000000.host"),
            Some(LogFormat::TensorBoard)
        );
        assert_eq!(
            format_of("/runs/a/events.out.tfevents.1.h.profile-empty"),
            Some(LogFormat::TensorBoard)
        );
        assert_eq!(
            format_of("vdlrecords.1700000000.log"),
            Some(LogFormat::VisualDl)
        );
        assert_eq!(
            format_of(r"C:\runs\vdlrecords.1.log.suffix"),
            Some(LogFormat::VisualDl)
        );
        assert_eq!(format_of("model.pdparams"), None);
        // The directory name must not count.
        assert_eq!(format_of("tfevents/checkpoint"), None);
    }

    #[test]
    fn feeding_nothing_consumes_nothing() {
        for format in [LogFormat::TensorBoard, LogFormat::VisualDl] {
            let mut reader = LogReader::new(format);
            assert_eq!(reader.feed(&[]), Batch::default());
            assert_eq!(reader.offset(), 0);
        }
    }
}
