//! Pod logs on disk.
//!
//! The local executor writes each replica's output to one file per pod, in
//! the format Kubernetes serves with `pods/log?timestamps=true`
//! (`<RFC 3339 UTC, nanoseconds> <line>\n`), so the console and the API treat
//! local and cluster logs alike. Logs can reach gigabytes: the tail is found
//! by reading backwards from the end, and a follow or a download reads in
//! bounded chunks of whole lines.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use time::OffsetDateTime;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::{mpsc, watch};

/// The log file of one pod of the job whose files are in `job_dir`.
pub fn log_path(job_dir: &Path, pod: &str) -> PathBuf {
    job_dir.join("logs").join(format!("{pod}.log"))
}

/// The longest piece of a line written as one record. A process that prints
/// without newlines must not make the pump buffer without bound.
pub const MAX_LINE: usize = 1024 * 1024;

/// How much `tail` reads at a time, walking backwards from the end.
const TAIL_BLOCK: usize = 64 * 1024;

/// How much `follow` reads at a time: large enough that a download of a big
/// log is not dominated by per-read overhead, small enough to keep memory flat.
const FOLLOW_CHUNK: usize = 256 * 1024;

/// A follow holds back a partial line until its newline arrives; past this it
/// gives the bytes up anyway. Well above `MAX_LINE` plus a timestamp, so it
/// only matters for files the pump did not write.
const FOLLOW_MAX_PENDING: usize = 4 * MAX_LINE;

/// How often a follow looks for new data. Polling keeps us free of inotify
/// and works on any file system; 200 ms feels live in a browser.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Stamped lines in flight between the readers and the writer; bounds the
/// memory a fast-printing process can pin while the disk catches up.
const PUMP_QUEUE: usize = 32;

/// Formats `at` the way the kubelet stamps log lines: always nine fraction
/// digits, so stamps have one width and sort as text. Public so that other
/// writers of a pod log (e.g. a "could not start" message) can match it.
pub fn format_timestamp(at: OffsetDateTime) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.nanosecond()
    )
}

/// Copies a child's stdout and stderr into the pod log at `path`, each line
/// stamped with the time it was read.
///
/// The file is opened in append mode, so a restarted replica continues its
/// log instead of wiping what the previous attempt printed. A single writer
/// receives whole lines from both streams, so stdout and stderr never
/// interleave mid-line. Should writing fail (a full disk), the pipes are
/// still drained to their end so the child is not killed by a broken pipe;
/// the error is returned when both streams have closed.
pub fn spawn_pump(
    path: PathBuf,
    stdout: tokio::process::ChildStdout,
    stderr: tokio::process::ChildStderr,
) -> tokio::task::JoinHandle<io::Result<()>> {
    spawn_masked_pump(path, stdout, stderr, Masks::default())
}

/// [`spawn_pump`] for a replica given secrets: each of their values is
/// written as `***`, so the log (on disk, and as every reader gets it)
/// never holds one.
pub fn spawn_masked_pump(
    path: PathBuf,
    stdout: tokio::process::ChildStdout,
    stderr: tokio::process::ChildStderr,
    masks: Masks,
) -> tokio::task::JoinHandle<io::Result<()>> {
    tokio::spawn(pump(path, stdout, stderr, masks))
}

/// The byte strings a log must not hold: the pieces of secret values
/// [`app::models::mask_pieces`] names (each value, and each line of one that
/// has several; none shorter than 4 bytes).
#[derive(Clone, Default)]
pub struct Masks(Arc<[Vec<u8>]>);

impl Masks {
    /// The masks of `values`.
    pub fn of(values: &[String]) -> Self {
        let pieces: Vec<Vec<u8>> = app::models::mask_pieces(values)
            .into_iter()
            .map(String::into_bytes)
            .collect();
        Self(pieces.into())
    }

    /// `record` with every mask replaced by `***`.
    pub fn apply(&self, mut record: Vec<u8>) -> Vec<u8> {
        for mask in self.0.iter() {
            if let Some(first) = find(&record, mask, 0) {
                let mut out = Vec::with_capacity(record.len());
                let mut from = 0;
                let mut at = Some(first);
                while let Some(i) = at {
                    out.extend_from_slice(&record[from..i]);
                    out.extend_from_slice(b"***");
                    from = i + mask.len();
                    at = find(&record, mask, from);
                }
                out.extend_from_slice(&record[from..]);
                record = out;
            }
        }
        record
    }
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// The body of [`spawn_pump`], generic so tests can feed it any reader.
async fn pump<A, B>(path: PathBuf, a: A, b: B, masks: Masks) -> io::Result<()>
where
    A: AsyncRead + Unpin,
    B: AsyncRead + Unpin,
{
    let (tx, rx) = mpsc::channel(PUMP_QUEUE);
    let (written, read_a, read_b) = tokio::join!(
        write_records(&path, rx, &masks),
        read_lines(a, tx.clone()),
        read_lines(b, tx)
    );
    written.and(read_a).and(read_b)
}

/// Appends stamped records to the file. Flushes whenever the queue runs dry,
/// so a follower sees a line as soon as it is printed, while a burst of
/// output is still written in large batches.
async fn write_records(
    path: &Path,
    mut rx: mpsc::Receiver<Vec<u8>>,
    masks: &Masks,
) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(dir).await?;
    }
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await?;
    let mut out = BufWriter::with_capacity(256 * 1024, file);
    while let Some(record) = rx.recv().await {
        out.write_all(&masks.apply(record)).await?;
        while let Ok(record) = rx.try_recv() {
            out.write_all(&masks.apply(record)).await?;
        }
        out.flush().await?;
    }
    out.flush().await
}

/// Reads one stream to its end, sending each line (or `MAX_LINE` piece of a
/// longer one) stamped and newline-terminated. Works on bytes: a process's
/// output need not be UTF-8, and the log keeps it exactly.
async fn read_lines<R: AsyncRead + Unpin>(stream: R, tx: mpsc::Sender<Vec<u8>>) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, stream);
    let mut line: Vec<u8> = Vec::new();
    // Once the writer is gone nothing is stored, but the pipe is still
    // drained so the child can keep printing.
    let mut writer_alive = true;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            if !line.is_empty() && writer_alive {
                // The receiver being gone only means the writer failed, and
                // it reports that itself.
                let _ = tx.send(stamp_record(&mut line)).await;
            }
            return Ok(());
        }
        let (taken, complete) = if line.len() == MAX_LINE {
            // A full piece: a newline right after it ends the same line
            // rather than starting an empty one.
            if buf[0] == b'\n' {
                (1, true)
            } else {
                (0, true)
            }
        } else {
            let room = MAX_LINE - line.len();
            let window = &buf[..buf.len().min(room)];
            match window.iter().position(|&byte| byte == b'\n') {
                Some(at) => (at + 1, true),
                None => (window.len(), false),
            }
        };
        if writer_alive {
            line.extend_from_slice(&buf[..taken]);
        }
        reader.consume(taken);
        if complete && writer_alive {
            let record = stamp_record(&mut line);
            writer_alive = tx.send(record).await.is_ok();
            line.clear();
        }
    }
}

/// Turns a line read just now into a log record, taking its bytes. The
/// newline is added when missing, so every record is a whole line.
fn stamp_record(line: &mut Vec<u8>) -> Vec<u8> {
    if !line.ends_with(b"\n") {
        line.push(b'\n');
    }
    let stamp = format_timestamp(OffsetDateTime::now_utc());
    let mut record = Vec::with_capacity(stamp.len() + 1 + line.len());
    record.extend_from_slice(stamp.as_bytes());
    record.push(b' ');
    record.append(line);
    record
}

/// The last `lines` complete lines of the log at `path`, with their newlines.
///
/// Reads backwards from the end in blocks, so the cost depends on the size
/// of the answer, not of the file. A missing file has no lines yet.
pub async fn tail(path: &Path, lines: usize) -> io::Result<Vec<u8>> {
    tail_with_offset(path, lines).await.map(|(chunk, _)| chunk)
}

/// Like [`tail`], plus the byte offset just past the returned lines, from
/// which [`follow`] continues without a gap or a duplicate.
///
/// A final line still being written (no newline yet) is neither returned
/// nor counted: the offset points at its start, so the follow yields it
/// once it is complete.
pub async fn tail_with_offset(path: &Path, lines: usize) -> io::Result<(Vec<u8>, u64)> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
            Err(err) => return Err(err),
        };
        let len = file.metadata()?.len();
        tail_of(&mut file, len, lines, TAIL_BLOCK)
    })
    .await
    .map_err(io::Error::other)?
}

/// The tail of the first `len` bytes of `reader`, read backwards `block`
/// bytes at a time. Separate from the file so tests can count what it reads
/// and use tiny blocks to exercise the boundaries; public for the fuzz
/// target `log_stamps` (`fuzz/src/lib.rs`), which compares it with the
/// lines counted forwards.
pub fn tail_of<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    lines: usize,
    block: usize,
) -> io::Result<(Vec<u8>, u64)> {
    let block = block.max(1) as u64;
    // Blocks read so far, last first, each with its start offset.
    let mut blocks: Vec<(u64, Vec<u8>)> = Vec::new();
    // Just past the last newline: where the complete lines end.
    let mut end: Option<u64> = None;
    // Where the answer starts, once enough newlines have been seen.
    let mut start: Option<u64> = None;
    let mut newlines = 0usize;
    let mut pos = len;
    while pos > 0 && start.is_none() {
        let from = pos.saturating_sub(block);
        let mut buf = vec![0; usize::try_from(pos - from).map_err(io::Error::other)?];
        reader.seek(SeekFrom::Start(from))?;
        reader.read_exact(&mut buf)?;
        for (i, _) in buf.iter().enumerate().rev().filter(|(_, &b)| b == b'\n') {
            let at = from + i as u64;
            if end.is_none() {
                end = Some(at + 1);
                if lines == 0 {
                    start = end;
                    break;
                }
            } else {
                newlines += 1;
                if newlines == lines {
                    start = Some(at + 1);
                    break;
                }
            }
        }
        blocks.push((from, buf));
        pos = from;
    }
    let Some(end) = end else {
        // Not one complete line yet.
        return Ok((Vec::new(), 0));
    };
    let start = start.unwrap_or(0);
    let mut out = Vec::with_capacity(usize::try_from(end - start).map_err(io::Error::other)?);
    for (from, buf) in blocks.iter().rev() {
        let to = from + buf.len() as u64;
        let lo = start.clamp(*from, to) - from;
        let hi = end.clamp(*from, to) - from;
        out.extend_from_slice(&buf[lo as usize..hi as usize]);
    }
    Ok((out, end))
}

/// Whole lines appended to the log at `path` after byte offset `from`, as
/// they arrive.
///
/// The file is polled, so this works without inotify on any file system.
/// Only whole lines are yielded, so a line is never shown half-printed; a
/// partial last line is yielded as is once the pod has ended. The stream
/// ends when `finished` is true (or its sender is gone, as nobody could set
/// it any more) and everything up to the end of the file has been yielded.
/// A file that shrank below the offset or was replaced is read again from
/// the start, as a new log. With `finished` already true this streams a
/// whole log in bounded chunks, which is how a download is served.
pub fn follow(
    path: PathBuf,
    from: u64,
    finished: watch::Receiver<bool>,
) -> impl Stream<Item = io::Result<Bytes>> + Send + 'static {
    follow_with(path, from, finished, FOLLOW_POLL, None)
}

/// [`follow`] with its poll interval and a counter of reads of the file,
/// through which tests can see that waiting does not spin.
fn follow_with(
    path: PathBuf,
    from: u64,
    finished: watch::Receiver<bool>,
    poll: Duration,
    reads: Option<Arc<AtomicUsize>>,
) -> impl Stream<Item = io::Result<Bytes>> + Send + 'static {
    let state = Follow {
        reader: Follower {
            path,
            offset: from,
            file: None,
            pending: Vec::new(),
            reads,
        },
        finished,
        closed: false,
    };
    futures_util::stream::unfold(Some(state), move |state| async move {
        let mut state = state?;
        loop {
            // Seen before reading, so that everything flushed before the pod
            // was marked finished is read before the stream ends.
            let done = *state.finished.borrow_and_update() || state.closed;
            let (reader, step) = match tokio::task::spawn_blocking(move || {
                let mut reader = state.reader;
                let step = reader.step();
                (reader, step)
            })
            .await
            {
                Ok(stepped) => stepped,
                Err(err) => return Some((Err(io::Error::other(err)), None)),
            };
            state.reader = reader;
            match step {
                Ok(Some(chunk)) => return Some((Ok(chunk), Some(state))),
                Err(err) => return Some((Err(err), None)),
                Ok(None) if done => {
                    if state.reader.pending.is_empty() {
                        return None;
                    }
                    let rest = Bytes::from(std::mem::take(&mut state.reader.pending));
                    return Some((Ok(rest), None));
                }
                Ok(None) => {
                    tokio::select! {
                        _ = tokio::time::sleep(poll) => {}
                        changed = state.finished.changed() => {
                            if changed.is_err() {
                                state.closed = true;
                            }
                        }
                    }
                }
            }
        }
    })
}

/// What a follow carries between polls.
struct Follow {
    reader: Follower,
    finished: watch::Receiver<bool>,
    /// The sender of `finished` is gone.
    closed: bool,
}

/// The file side of a follow; its reads block, so they run on the blocking
/// pool.
struct Follower {
    path: PathBuf,
    offset: u64,
    /// The open log and its inode, to notice the file being replaced.
    file: Option<(File, (u64, u64))>,
    /// Read but not yet yielded: the start of a line still being written.
    pending: Vec<u8>,
    reads: Option<Arc<AtomicUsize>>,
}

impl Follower {
    /// Reads on from the offset: `Some` whole lines when there are any,
    /// `None` once at the end of the file with nothing whole to give.
    fn step(&mut self) -> io::Result<Option<Bytes>> {
        use std::os::unix::fs::MetadataExt;
        loop {
            if let Some(reads) = &self.reads {
                reads.fetch_add(1, Ordering::Relaxed);
            }
            let Some((file, _)) = &mut self.file else {
                match File::open(&self.path) {
                    Ok(file) => {
                        let meta = file.metadata()?;
                        self.file = Some((file, (meta.dev(), meta.ino())));
                        continue;
                    }
                    Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
                    Err(err) => return Err(err),
                }
            };
            file.seek(SeekFrom::Start(self.offset))?;
            // Straight into `pending`: an idle poll allocates nothing.
            let n = file
                .take(FOLLOW_CHUNK as u64)
                .read_to_end(&mut self.pending)?;
            if n > 0 {
                self.offset += n as u64;
                if let Some(last) = self.pending.iter().rposition(|&b| b == b'\n') {
                    let rest = self.pending.split_off(last + 1);
                    let lines = std::mem::replace(&mut self.pending, rest);
                    return Ok(Some(Bytes::from(lines)));
                }
                if self.pending.len() >= FOLLOW_MAX_PENDING {
                    return Ok(Some(Bytes::from(std::mem::take(&mut self.pending))));
                }
                continue;
            }
            // At the end of the open file: has the path moved on to a new
            // file, or has this one been cut short?
            let identity = self.file.as_ref().map(|(_, identity)| *identity);
            match std::fs::metadata(&self.path) {
                Ok(meta)
                    if Some((meta.dev(), meta.ino())) != identity || meta.len() < self.offset =>
                {
                    self.file = None;
                    self.offset = 0;
                    self.pending.clear();
                }
                Ok(_) => return Ok(None),
                // Removed: nothing more will come through this name until it
                // is created again.
                Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(err) => return Err(err),
            }
        }
    }
}

/// Splits a log line into its timestamp and the rest (after the separating
/// space). A line that does not start with a timestamp is left whole, so
/// lines written by something other than the pump still show.
pub fn split_timestamp(line: &[u8]) -> (Option<&str>, &[u8]) {
    let len = timestamp_len(line);
    if len == 0 || line.get(len) != Some(&b' ') {
        return (None, line);
    }
    match std::str::from_utf8(&line[..len]) {
        Ok(stamp) => (Some(stamp), &line[len + 1..]),
        Err(_) => (None, line),
    }
}

/// Removes the leading `<timestamp> ` from each line of `chunk`, for
/// `timestamps=false`. Lines without one are kept as they are.
pub fn strip_timestamps(chunk: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(chunk.len());
    for line in chunk.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(split_timestamp(line).1);
    }
    out
}

/// The length of an RFC 3339 timestamp at the start of `s`, or 0. Checks the
/// shape only (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`): it decides what
/// to strip, and must be cheap enough to run on every line of a download.
fn timestamp_len(s: &[u8]) -> usize {
    fn digits(s: &[u8], at: usize, n: usize) -> bool {
        s.len() >= at + n && s[at..at + n].iter().all(u8::is_ascii_digit)
    }
    fn byte(s: &[u8], at: usize, b: u8) -> bool {
        s.get(at) == Some(&b)
    }
    let date_time = digits(s, 0, 4)
        && byte(s, 4, b'-')
        && digits(s, 5, 2)
        && byte(s, 7, b'-')
        && digits(s, 8, 2)
        && byte(s, 10, b'T')
        && digits(s, 11, 2)
        && byte(s, 13, b':')
        && digits(s, 14, 2)
        && byte(s, 16, b':')
        && digits(s, 17, 2);
    if !date_time {
        return 0;
    }
    let mut at = 19;
    if byte(s, at, b'.') {
        let fraction = s[at + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if !(1..=9).contains(&fraction) {
            return 0;
        }
        at += 1 + fraction;
    }
    match s.get(at) {
        Some(b'Z') => at + 1,
        Some(b'+' | b'-')
            if digits(s, at + 1, 2) && byte(s, at + 3, b':') && digits(s, at + 4, 2) =>
        {
            at + 6
        }
        _ => 0,
    }
}

/// A pod's log file as the `Cluster` port serves it: the last `tail` lines
/// or all of it, then (`follow`) what is written until `done` turns true;
/// with or without each line's timestamp.
pub async fn serve(
    path: PathBuf,
    request: app::models::LogRequest,
    done: watch::Receiver<bool>,
) -> Result<app::ports::LogStream, app::error::AppError> {
    use futures_util::StreamExt;
    let io_err = |err: io::Error| {
        tracing::error!(error = %err, path = %path.display(), "reading a pod log");
        app::error::AppError::Internal
    };
    let stream: app::ports::LogStream = match (request.tail, request.follow) {
        (Some(lines), false) => {
            let chunk = tail(&path, lines).await.map_err(io_err)?;
            Box::pin(futures_util::stream::once(
                async move { Ok(Bytes::from(chunk)) },
            ))
        }
        (Some(lines), true) => {
            let (chunk, offset) = tail_with_offset(&path, lines).await.map_err(io_err)?;
            let head = futures_util::stream::once(async move { Ok(Bytes::from(chunk)) });
            Box::pin(head.chain(follow(path, offset, done)))
        }
        (None, true) => Box::pin(follow(path, 0, done)),
        // The whole log, streamed in whole lines, never loaded at once.
        (None, false) => Box::pin(follow(path, 0, watch::channel(true).1)),
    };
    if request.timestamps {
        Ok(stream)
    } else {
        Ok(Box::pin(stream.map(|chunk| {
            chunk.map(|bytes| Bytes::from(strip_timestamps(&bytes)))
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use std::io::Write;
    use std::process::Stdio;
    use time::format_description::well_known::Rfc3339;

    const STAMP: &str = "2026-11-22T06:50:00.123456789Z";

    fn stamped(n: usize) -> String {
        format!("{STAMP} line {n}\n")
    }

    /// Runs `script` under `sh` with both streams going to a pump into `path`.
    async fn pump_child(path: &Path, script: &str) {
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sh");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let pump = spawn_pump(path.to_owned(), stdout, stderr);
        child.wait().await.expect("wait");
        pump.await.expect("join").expect("pump");
    }

    /// Asserts every line is a valid stamp, a space, and text; returns the texts.
    fn texts(log: &[u8]) -> Vec<Vec<u8>> {
        assert!(log.ends_with(b"\n"), "log ends with a newline");
        log.split_inclusive(|&b| b == b'\n')
            .map(|line| {
                let (stamp, rest) = split_timestamp(line);
                let stamp = stamp.expect("every line is stamped");
                assert_eq!(stamp.len(), STAMP.len(), "nine fraction digits: {stamp}");
                let parsed = OffsetDateTime::parse(stamp, &Rfc3339).expect("RFC 3339");
                assert_eq!(parsed.offset(), time::UtcOffset::UTC);
                rest.strip_suffix(b"\n").expect("newline").to_vec()
            })
            .collect()
    }

    /// The next chunk of a follow, failing the test if it takes too long.
    async fn next_chunk<S>(stream: &mut S) -> Option<Bytes>
    where
        S: Stream<Item = io::Result<Bytes>> + Unpin,
    {
        tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("in time")
            .map(|chunk| chunk.expect("read"))
    }

    fn write_file(path: &Path, content: &[u8]) {
        std::fs::write(path, content).expect("write");
    }

    fn append_file(path: &Path, content: &[u8]) {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .expect("open");
        file.write_all(content).expect("append");
    }

    /// Counts the bytes read through it.
    struct Counting<R> {
        inner: R,
        read: u64,
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n as u64;
            Ok(n)
        }
    }

    impl<R: Seek> Seek for Counting<R> {
        fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    /// The tail through tiny blocks, for boundary cases.
    fn tail_in_blocks(content: &[u8], lines: usize, block: usize) -> (Vec<u8>, u64) {
        let mut reader = io::Cursor::new(content);
        tail_of(&mut reader, content.len() as u64, lines, block).expect("tail")
    }

    #[tokio::test]
    async fn both_streams_of_a_child_are_captured_and_stamped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("logs").join("pod.log");
        pump_child(&path, "echo out; echo err >&2; printf partial").await;
        let log = std::fs::read(&path).expect("read");
        let mut lines = texts(&log);
        assert_eq!(lines.len(), 3);
        // "partial" is last on stdout, after "out"; stderr's line can land anywhere.
        let out = lines.iter().position(|l| l == b"out").expect("out");
        let partial = lines.iter().position(|l| l == b"partial").expect("partial");
        assert!(out < partial);
        lines.sort();
        assert_eq!(
            lines,
            vec![b"err".to_vec(), b"out".to_vec(), b"partial".to_vec()]
        );
    }

    #[tokio::test]
    async fn a_partial_last_line_is_terminated_with_a_newline() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        pump_child(&path, "printf 'no newline'").await;
        let log = std::fs::read(&path).expect("read");
        assert_eq!(texts(&log), vec![b"no newline".to_vec()]);
    }

    #[tokio::test]
    async fn a_restarted_process_appends_to_the_existing_log() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        write_file(&path, stamped(0).as_bytes());
        pump_child(&path, "echo first").await;
        pump_child(&path, "echo second").await;
        let log = std::fs::read(&path).expect("read");
        assert!(log.starts_with(stamped(0).as_bytes()));
        assert_eq!(
            texts(&log),
            vec![b"line 0".to_vec(), b"first".to_vec(), b"second".to_vec()]
        );
    }

    #[tokio::test]
    async fn invalid_utf8_is_written_byte_for_byte() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        pump_child(&path, r"printf '\377\376ok\n'").await;
        let log = std::fs::read(&path).expect("read");
        assert_eq!(texts(&log), vec![b"\xff\xfeok".to_vec()]);
    }

    #[tokio::test]
    async fn a_line_longer_than_a_mebibyte_is_split_into_stamped_pieces() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        let long = vec![b'a'; 2 * MAX_LINE + 10];
        let mut stdout = long.clone();
        stdout.extend_from_slice(b"\nafter\n");
        pump(path.clone(), &stdout[..], &b""[..], Masks::default())
            .await
            .expect("pump");
        let log = std::fs::read(&path).expect("read");
        let lines = texts(&log);
        let lengths: Vec<usize> = lines.iter().map(Vec::len).collect();
        assert_eq!(lengths, vec![MAX_LINE, MAX_LINE, 10, 5]);
        assert_eq!(lines[..3].concat(), long);
    }

    #[tokio::test]
    async fn a_secret_value_is_written_as_stars_and_nothing_else_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        let masks = Masks::of(&["hunter2-xyz".to_owned(), "ab".to_owned()]);
        let stdout = b"token hunter2-xyz and hunter2-xyz\nab cd\n\xff raw\n";
        pump(path.clone(), &stdout[..], &b""[..], masks)
            .await
            .expect("pump");
        let lines = texts(&std::fs::read(&path).expect("read"));
        assert_eq!(lines[0], b"token *** and ***");
        assert_eq!(lines[1], b"ab cd");
        assert_eq!(lines[2], b"\xff raw");
    }

    #[tokio::test]
    async fn a_line_of_exactly_a_mebibyte_stays_one_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        let mut stdout = vec![b'a'; MAX_LINE];
        stdout.extend_from_slice(b"\nnext\n");
        pump(path.clone(), &stdout[..], &b""[..], Masks::default())
            .await
            .expect("pump");
        let lengths: Vec<usize> = texts(&std::fs::read(&path).expect("read"))
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(lengths, vec![MAX_LINE, 4]);
    }

    #[tokio::test]
    async fn the_tail_returns_exactly_the_last_n_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        let all: Vec<String> = (0..5).map(stamped).collect();
        write_file(&path, all.concat().as_bytes());
        let len = all.concat().len() as u64;
        for n in [1, 3, 5, 6, 100] {
            let (chunk, offset) = tail_with_offset(&path, n).await.expect("tail");
            let want = all[5usize.saturating_sub(n)..].concat();
            assert_eq!(String::from_utf8(chunk).expect("utf-8"), want, "{n} lines");
            assert_eq!(offset, len);
        }
        assert_eq!(
            tail(&path, 2).await.expect("tail"),
            all[3..].concat().as_bytes()
        );
    }

    #[tokio::test]
    async fn no_lines_are_asked_for_or_there_is_no_file_yet() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        assert_eq!(
            tail_with_offset(&path, 10).await.expect("tail"),
            (Vec::new(), 0)
        );
        write_file(&path, b"a\nb\n");
        assert_eq!(
            tail_with_offset(&path, 0).await.expect("tail"),
            (Vec::new(), 4)
        );
        write_file(&path, b"");
        assert_eq!(
            tail_with_offset(&path, 3).await.expect("tail"),
            (Vec::new(), 0)
        );
    }

    #[tokio::test]
    async fn a_last_line_without_newline_is_left_for_the_follow() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        write_file(&path, b"a\nb\nc\npart");
        assert_eq!(
            tail_with_offset(&path, 2).await.expect("tail"),
            (b"b\nc\n".to_vec(), 6)
        );
        assert_eq!(
            tail_with_offset(&path, 9).await.expect("tail"),
            (b"a\nb\nc\n".to_vec(), 6)
        );
        assert_eq!(
            tail_with_offset(&path, 0).await.expect("tail"),
            (Vec::new(), 6)
        );
        write_file(&path, b"only partial");
        assert_eq!(
            tail_with_offset(&path, 3).await.expect("tail"),
            (Vec::new(), 0)
        );

        // The follow picks up exactly where the tail stopped.
        write_file(&path, b"a\nb\nc\npart");
        let (_, offset) = tail_with_offset(&path, 1).await.expect("tail");
        append_file(&path, b"ial\nd\n");
        let chunks: Vec<Bytes> = follow(path.clone(), offset, watch::channel(true).1)
            .map(|chunk| chunk.expect("read"))
            .collect()
            .await;
        assert_eq!(chunks.concat(), b"partial\nd\n");
    }

    #[test]
    fn the_tail_is_right_at_every_block_boundary() {
        let content = b"alpha\nbe\n\nlonger line here\nz\n".to_vec();
        let lines: Vec<&[u8]> = content.split_inclusive(|&b| b == b'\n').collect();
        let mut without_newline = content.clone();
        without_newline.extend_from_slice(b"tail end");
        for block in 1..=content.len() + 3 {
            for n in 0..=lines.len() + 1 {
                let want = lines[lines.len().saturating_sub(n)..].concat();
                let got = tail_in_blocks(&content, n, block);
                assert_eq!(
                    got,
                    (want.clone(), content.len() as u64),
                    "block {block}, {n} lines"
                );
                let got = tail_in_blocks(&without_newline, n, block);
                assert_eq!(
                    got,
                    (want, content.len() as u64),
                    "block {block}, {n} lines, partial"
                );
            }
        }
    }

    #[tokio::test]
    async fn the_tail_handles_lines_longer_than_a_block() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        let lines: Vec<Vec<u8>> = (0..4u8)
            .map(|i| {
                let mut line = vec![b'a' + i; TAIL_BLOCK * 2 + 17];
                line.push(b'\n');
                line
            })
            .collect();
        write_file(&path, &lines.concat());
        for n in 0..=5 {
            let chunk = tail(&path, n).await.expect("tail");
            assert_eq!(
                chunk,
                lines[4usize.saturating_sub(n)..].concat(),
                "{n} lines"
            );
        }
    }

    #[test]
    fn the_tail_of_a_large_file_is_read_from_the_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        let mut out = io::BufWriter::new(File::create(&path).expect("create"));
        let mut n = 0;
        let mut size = 0;
        while size < 8 * 1024 * 1024 {
            let line = format!("{STAMP} step {n} loss=0.25 accuracy=0.75 some more padding text\n");
            out.write_all(line.as_bytes()).expect("write");
            size += line.len();
            n += 1;
        }
        out.flush().expect("flush");
        drop(out);

        let len = std::fs::metadata(&path).expect("metadata").len();
        let mut reader = Counting {
            inner: File::open(&path).expect("open"),
            read: 0,
        };
        let (chunk, offset) = tail_of(&mut reader, len, 100, TAIL_BLOCK).expect("tail");
        assert_eq!(offset, len);
        assert_eq!(chunk.split(|&b| b == b'\n').count(), 101);
        let last = format!(
            "{STAMP} step {} loss=0.25 accuracy=0.75 some more padding text\n",
            n - 1
        );
        assert!(chunk.ends_with(last.as_bytes()));
        assert!(
            reader.read <= TAIL_BLOCK as u64,
            "read {} bytes of {len} for {} bytes of tail",
            reader.read,
            chunk.len()
        );
        // A bigger tail reads only as many more blocks as it needs.
        let mut reader = Counting {
            inner: File::open(&path).expect("open"),
            read: 0,
        };
        let (chunk, _) = tail_of(&mut reader, len, 5000, TAIL_BLOCK).expect("tail");
        assert!(reader.read < chunk.len() as u64 + TAIL_BLOCK as u64);
        assert!(reader.read < len / 4);
    }

    #[tokio::test]
    async fn a_follow_yields_lines_appended_after_the_offset_and_never_a_partial_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        write_file(&path, b"old\n");
        let (done_tx, done_rx) = watch::channel(false);
        let mut stream = Box::pin(follow_with(
            path.clone(),
            4,
            done_rx,
            Duration::from_millis(20),
            None,
        ));

        append_file(&path, b"new 1\nnew 2\npart");
        assert_eq!(
            next_chunk(&mut stream).await.expect("chunk"),
            &b"new 1\nnew 2\n"[..]
        );
        // The partial line is held back while it is being written.
        let early = tokio::time::timeout(Duration::from_millis(200), stream.next()).await;
        assert!(early.is_err(), "yielded {early:?} before the newline");
        append_file(&path, b"ial\n");
        assert_eq!(
            next_chunk(&mut stream).await.expect("chunk"),
            &b"partial\n"[..]
        );

        append_file(&path, b"last\nunfinished");
        done_tx.send(true).expect("send");
        assert_eq!(
            next_chunk(&mut stream).await.expect("chunk"),
            &b"last\n"[..]
        );
        assert_eq!(
            next_chunk(&mut stream).await.expect("chunk"),
            &b"unfinished"[..]
        );
        assert!(
            next_chunk(&mut stream).await.is_none(),
            "ends once finished"
        );
    }

    #[tokio::test]
    async fn a_follow_ends_when_finished_is_set_while_it_waits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        write_file(&path, b"a\n");
        let (done_tx, done_rx) = watch::channel(false);
        let stream = follow(path.clone(), 0, done_rx);
        let collect = tokio::spawn(stream.map(|chunk| chunk.expect("read")).collect::<Vec<_>>());
        tokio::time::sleep(Duration::from_millis(300)).await;
        append_file(&path, b"b\n");
        done_tx.send(true).expect("send");
        let chunks = tokio::time::timeout(Duration::from_secs(5), collect)
            .await
            .expect("ends")
            .expect("join");
        assert_eq!(chunks.concat(), b"a\nb\n");
    }

    #[tokio::test]
    async fn a_follow_ends_when_the_sender_of_finished_is_gone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        write_file(&path, b"a\n");
        let (done_tx, done_rx) = watch::channel(false);
        let collect = tokio::spawn(follow(path, 0, done_rx).collect::<Vec<_>>());
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(done_tx);
        let chunks = tokio::time::timeout(Duration::from_secs(5), collect)
            .await
            .expect("ends")
            .expect("join");
        assert_eq!(chunks.len(), 1);
    }

    #[tokio::test]
    async fn a_waiting_follow_polls_instead_of_spinning() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        write_file(&path, b"a\n");
        let reads = Arc::new(AtomicUsize::new(0));
        let (_done_tx, done_rx) = watch::channel(false);
        let mut stream = Box::pin(follow_with(
            path,
            2,
            done_rx,
            Duration::from_millis(100),
            Some(reads.clone()),
        ));
        let waited = tokio::time::timeout(Duration::from_secs(1), stream.next()).await;
        assert!(waited.is_err(), "nothing to yield");
        let reads = reads.load(Ordering::Relaxed);
        // About ten polls: one read each, plus one to open the file.
        assert!((2..=30).contains(&reads), "{reads} reads in a second");
    }

    #[tokio::test]
    async fn a_follow_starts_again_when_the_file_is_truncated_or_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        write_file(&path, b"one\ntwo\n");
        let (done_tx, done_rx) = watch::channel(false);
        let mut stream = Box::pin(follow_with(
            path.clone(),
            0,
            done_rx,
            Duration::from_millis(20),
            None,
        ));
        assert_eq!(
            next_chunk(&mut stream).await.expect("chunk"),
            &b"one\ntwo\n"[..]
        );
        // Truncated to less than what was read.
        write_file(&path, b"3\n");
        assert_eq!(next_chunk(&mut stream).await.expect("chunk"), &b"3\n"[..]);
        // Replaced by a new file (even a longer one).
        let other = dir.path().join("other.log");
        write_file(&other, b"new file, first line\n");
        std::fs::rename(&other, &path).expect("rename");
        assert_eq!(
            next_chunk(&mut stream).await.expect("chunk"),
            &b"new file, first line\n"[..]
        );
        done_tx.send(true).expect("send");
    }

    #[tokio::test]
    async fn a_follow_waits_for_the_file_to_appear() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        let (done_tx, done_rx) = watch::channel(false);
        let collect = tokio::spawn(
            follow_with(path.clone(), 0, done_rx, Duration::from_millis(20), None)
                .map(|chunk| chunk.expect("read"))
                .collect::<Vec<_>>(),
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        write_file(&path, b"hello\n");
        tokio::time::sleep(Duration::from_millis(100)).await;
        done_tx.send(true).expect("send");
        let chunks = tokio::time::timeout(Duration::from_secs(5), collect)
            .await
            .expect("ends")
            .expect("join");
        assert_eq!(chunks.concat(), b"hello\n");
    }

    #[tokio::test]
    async fn a_finished_log_streams_whole_in_bounded_chunks_of_whole_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        let content: String = (0..40_000).map(stamped).collect();
        assert!(content.len() > 3 * FOLLOW_CHUNK);
        write_file(&path, content.as_bytes());
        let chunks: Vec<Bytes> = follow(path, 0, watch::channel(true).1)
            .map(|chunk| chunk.expect("read"))
            .collect()
            .await;
        assert!(chunks.len() >= 3);
        for chunk in &chunks {
            // One read, plus the line it started in the middle of.
            assert!(chunk.len() <= FOLLOW_CHUNK + stamped(0).len() + 8);
            assert!(chunk.ends_with(b"\n"));
        }
        assert_eq!(chunks.concat(), content.as_bytes());
    }

    #[tokio::test]
    async fn a_pumped_log_is_followed_live_while_the_process_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pod.log");
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg("echo one; sleep 0.5; echo two >&2; sleep 0.3; printf three")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sh");
        let pump = spawn_pump(
            path.clone(),
            child.stdout.take().expect("stdout"),
            child.stderr.take().expect("stderr"),
        );
        let (done_tx, done_rx) = watch::channel(false);
        let mut stream = Box::pin(follow(path, 0, done_rx));
        let first = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("in time")
            .expect("chunk")
            .expect("read");
        assert_eq!(strip_timestamps(&first), b"one\n");
        child.wait().await.expect("wait");
        pump.await.expect("join").expect("pump");
        done_tx.send(true).expect("send");
        let rest: Vec<Bytes> = stream.map(|chunk| chunk.expect("read")).collect().await;
        assert_eq!(strip_timestamps(&rest.concat()), b"two\nthree\n");
    }

    #[test]
    fn timestamps_are_stripped_from_each_line_and_only_from_its_start() {
        let chunk = format!(
            "{STAMP} first\n2026-11-22T06:50:01Z second\n2026-11-22T06:50:02.5+02:00 third\n\
             not stamped {STAMP}\n{STAMP}no space\n2026-11-22T06:50:00.1234567890Z ten digits\n\
             \n{STAMP} \n{STAMP} last without newline"
        );
        let want = format!(
            "first\nsecond\nthird\nnot stamped {STAMP}\n{STAMP}no space\n\
             2026-11-22T06:50:00.1234567890Z ten digits\n\n\nlast without newline"
        );
        assert_eq!(
            String::from_utf8(strip_timestamps(chunk.as_bytes())).expect("utf-8"),
            want
        );
        assert_eq!(strip_timestamps(b""), b"");
        assert_eq!(strip_timestamps(b"\xff\n"), b"\xff\n");
    }

    #[test]
    fn a_line_splits_into_its_timestamp_and_text() {
        let line = format!("{STAMP} hello world\n");
        assert_eq!(
            split_timestamp(line.as_bytes()),
            (Some(STAMP), &b"hello world\n"[..])
        );
        assert_eq!(split_timestamp(b"hello\n"), (None, &b"hello\n"[..]));
        assert_eq!(split_timestamp(STAMP.as_bytes()), (None, STAMP.as_bytes()));
    }

    #[test]
    fn a_timestamp_is_formatted_like_the_kubelet_formats_it() {
        let at = OffsetDateTime::parse("2026-11-22T06:50:00.1Z", &Rfc3339).expect("parse");
        assert_eq!(format_timestamp(at), "2026-11-22T06:50:00.100000000Z");
        let at =
            OffsetDateTime::parse("2026-11-22T08:50:00.123456789+02:00", &Rfc3339).expect("parse");
        assert_eq!(format_timestamp(at), STAMP);
    }
}
