//! How long the tail of a large pod log takes: it should not depend on the
//! size of the file, since `tail` reads backwards from the end.
//!
//! Writes a 1 GiB log of realistic timestamped lines to a temporary
//! directory (`LOG_TAIL_BENCH_BYTES` overrides the size), then times
//! `tail(path, 1000)`. Run with `cargo bench -p server --bench log_tail`.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

const DEFAULT_BYTES: u64 = 1024 * 1024 * 1024;
const LINES: usize = 1000;
const RUNS: usize = 30;

fn main() -> anyhow::Result<()> {
    let target = match std::env::var("LOG_TAIL_BENCH_BYTES") {
        Ok(bytes) => bytes.trim().parse::<u64>()?,
        Err(_) => DEFAULT_BYTES,
    };
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("trainer-0.log");

    let started = Instant::now();
    let size = write_log(&path, target)?;
    eprintln!(
        "wrote {} in {:.1} s",
        human(size),
        started.elapsed().as_secs_f64()
    );

    let runtime = tokio::runtime::Runtime::new()?;
    let mut times: Vec<Duration> = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let tail = runtime.block_on(server::storage::logfile::tail(&path, LINES))?;
        times.push(started.elapsed());
        let lines = tail.iter().filter(|&&b| b == b'\n').count();
        anyhow::ensure!(lines == LINES, "got {lines} lines, not {LINES}");
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "tail {LINES} lines of {}: p50 {:.2} ms, p90 {:.2} ms, max {:.2} ms ({RUNS} runs)",
        human(size),
        ms(at(0.5)),
        ms(at(0.9)),
        ms(times[times.len() - 1]),
    );
    Ok(())
}

/// Writes lines like a trainer's until the file holds at least `target`
/// bytes; returns its size.
fn write_log(path: &Path, target: u64) -> std::io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut size = 0u64;
    let mut step = 0u64;
    let base = time::OffsetDateTime::now_utc() - time::Duration::days(1);
    let mut stamp = String::new();
    while size < target {
        // A new stamp every 1000 lines keeps writing fast; the tail does not
        // care about the values.
        if step.is_multiple_of(1000) {
            stamp = server::storage::logfile::format_timestamp(
                base + time::Duration::milliseconds(i64::try_from(step).unwrap_or(i64::MAX)),
            );
        }
        let line = format!(
            "{stamp} [trainer-0] pass {} batch {:>6} cost 0.{:06} error 0.{:06} lr 0.001\n",
            step / 100_000,
            step % 100_000,
            step.wrapping_mul(7_919) % 1_000_000,
            step.wrapping_mul(104_729) % 1_000_000,
        );
        out.write_all(line.as_bytes())?;
        size += line.len() as u64;
        step += 1;
    }
    out.flush()?;
    Ok(size)
}

fn human(bytes: u64) -> String {
    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
    const MIB: f64 = 1024.0 * 1024.0;
    let b = bytes as f64;
    if b >= GIB {
        format!("{:.2} GiB", b / GIB)
    } else {
        format!("{:.2} MiB", b / MIB)
    }
}
