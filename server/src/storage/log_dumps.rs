//! Stack dumps inside pod logs, and a log's newest sign of life.
//!
//! A dump is written into the replica's log between a banner
//! ([`app::models::dump_banner`]) and [`DUMP_END`], each line stamped like
//! the pump's, so the log console shows it in its place. The console
//! wrote those lines, not the job: [`last_life_at`] skips them, or taking
//! a dump of a stalled job would make it look alive.

use std::io;
use std::path::Path;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio::io::AsyncWriteExt;

use super::logfile::{format_timestamp, split_timestamp};

/// The line that closes a dump.
pub const DUMP_END: &str = "===== end of stack dump =====";

/// What opens a dump (the start of [`app::models::dump_banner`]'s line).
const DUMP_START: &str = "===== stack dump of ";

/// The lines of a dump: `banner`, `text`'s lines, [`DUMP_END`].
pub fn dump_lines(banner: &str, text: &str) -> Vec<String> {
    std::iter::once(banner.to_owned())
        .chain(text.lines().map(str::to_owned))
        .chain(std::iter::once(DUMP_END.to_owned()))
        .collect()
}

/// Appends `lines`, each stamped `at`, to the log at `path` in one write
/// (the file is in append mode, as the pump's: a line of the job is never
/// split by it).
pub async fn append_stamped(path: &Path, lines: &[String], at: OffsetDateTime) -> io::Result<()> {
    let stamp = format_timestamp(at);
    let mut record = String::new();
    for line in lines {
        record.push_str(&stamp);
        record.push(' ');
        record.push_str(line);
        record.push('\n');
    }
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await?;
    file.write_all(record.as_bytes()).await?;
    file.flush().await
}

/// The stamp (Unix ms) of the newest line in `chunk` (stamped lines, the
/// end of a log) that the job wrote: lines inside dumps do not count.
/// `None` when the chunk has no such line.
pub fn last_life_at(chunk: &[u8]) -> Option<i64> {
    let mut in_dump = false;
    for line in chunk.rsplit(|&b| b == b'\n') {
        let (stamp, text) = split_timestamp(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text == DUMP_END.as_bytes() {
            in_dump = true;
            continue;
        }
        if in_dump {
            if text.starts_with(DUMP_START.as_bytes()) {
                in_dump = false;
            }
            continue;
        }
        let Some(at) = stamp.and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok()) else {
            continue;
        };
        return Some((at.unix_timestamp_nanos() / 1_000_000) as i64);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_line_the_job_wrote_is_its_last_sign_of_life() {
        let log = b"2026-11-30T10:00:00.000000000Z epoch 1\n\
                    2026-11-30T10:05:00.000000000Z epoch 2\n";
        let at = last_life_at(log).expect("a line");
        assert_eq!(
            at,
            OffsetDateTime::parse("2026-11-30T10:05:00Z", &Rfc3339)
                .unwrap()
                .unix_timestamp()
                * 1000
        );
    }

    #[test]
    fn a_dump_written_by_the_console_is_not_a_sign_of_life() {
        let mut log = b"2026-11-30T10:05:00.000000000Z epoch 2\n".to_vec();
        for line in dump_lines(
            "===== stack dump of trainer-0 (py-spy) at 2026-11-30 11:00:00 UTC =====",
            "Thread 7 (idle): \"MainThread\"\n    sleep (time)",
        ) {
            log.extend_from_slice(format!("2026-11-30T11:00:00.000000000Z {line}\n").as_bytes());
        }
        let at = last_life_at(&log).expect("a line");
        assert_eq!(
            at,
            OffsetDateTime::parse("2026-11-30T10:05:00Z", &Rfc3339)
                .unwrap()
                .unix_timestamp()
                * 1000
        );
        assert_eq!(last_life_at(b""), None);
        assert_eq!(last_life_at(b"no stamp here\n"), None);
    }

    #[tokio::test]
    async fn appended_lines_are_stamped_like_the_pumps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/trainer-0.log");
        let at = OffsetDateTime::parse("2026-11-30T11:00:00Z", &Rfc3339).unwrap();
        append_stamped(
            &path,
            &dump_lines("===== stack dump of trainer-0 =====", "a\nb"),
            at,
        )
        .await
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [
                "2026-11-30T11:00:00.000000000Z ===== stack dump of trainer-0 =====",
                "2026-11-30T11:00:00.000000000Z a",
                "2026-11-30T11:00:00.000000000Z b",
                "2026-11-30T11:00:00.000000000Z ===== end of stack dump =====",
            ]
        );
    }
}
