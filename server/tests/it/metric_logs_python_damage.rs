//! Damages files written by the real writers — truncation at every offset,
//! a bit flip at every byte, garbage payloads in valid framing — and checks
//! that the reader neither panics nor loses more than the damaged records.

use std::fs;

use crate::common::metric_logs::{python_fixture, same_value, tfrecord, vdl_record, Rng};
use server::metric_files::{LogFormat, LogReader, ScalarPoint};

/// Byte offsets where records start, plus the file length, from the lengths
/// in an intact file.
fn record_bounds(bytes: &[u8], format: LogFormat) -> Vec<usize> {
    let overhead = match format {
        LogFormat::TensorBoard => 16,
        LogFormat::VisualDl => 8,
    };
    let mut bounds = vec![0];
    let mut pos = 0;
    while pos < bytes.len() {
        let len = u64::from_le_bytes(bytes[pos..pos + 8].try_into().unwrap()) as usize;
        pos += overhead + len;
        bounds.push(pos);
    }
    assert_eq!(pos, bytes.len());
    bounds
}

fn same_points(a: &[ScalarPoint], b: &[ScalarPoint]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.tag == y.tag
                && x.step == y.step
                && x.wall_time == y.wall_time
                && same_value(x.value, y.value)
        })
}

/// The tiny files: (bytes, format) for each.
fn tiny_files() -> Option<Vec<(Vec<u8>, LogFormat)>> {
    let fx = python_fixture()?;
    let mut files = Vec::new();
    for (run, format) in [
        ("tiny_tb", LogFormat::TensorBoard),
        ("tiny_vdl", LogFormat::VisualDl),
    ] {
        for path in fx.files(run) {
            files.push((fs::read(path).unwrap(), format));
        }
    }
    assert_eq!(files.len(), 3);
    Some(files)
}

#[test]
fn a_file_cut_at_any_offset_yields_the_complete_records_and_resumes() {
    let Some(files) = tiny_files() else { return };
    for (bytes, format) in files {
        let bounds = record_bounds(&bytes, format);
        let whole = LogReader::new(format).feed(&bytes).points;
        for cut in 0..=bytes.len() {
            let mut reader = LogReader::new(format);
            let head = reader.feed(&bytes[..cut]);
            assert!(head.warnings.is_empty(), "cut {cut}: {:?}", head.warnings);
            // Only whole records are consumed: the last boundary within the cut.
            let boundary = *bounds.iter().rev().find(|&&b| b <= cut).unwrap();
            assert_eq!(head.consumed, boundary, "cut {cut}");
            assert!(
                same_points(&head.points, &whole[..head.points.len()]),
                "cut {cut}"
            );

            let tail = reader.feed(&bytes[head.consumed..]);
            assert!(tail.warnings.is_empty());
            assert!(
                same_points(&[head.points, tail.points].concat(), &whole),
                "cut {cut}"
            );
        }
    }
}

#[test]
fn a_bit_flip_in_a_tensorboard_file_costs_at_most_the_damaged_record() {
    let Some(files) = tiny_files() else { return };
    let (bytes, format) = &files[0];
    assert_eq!(*format, LogFormat::TensorBoard);
    let bounds = record_bounds(bytes, *format);
    let whole = LogReader::new(*format).feed(bytes).points;
    // Points before each record boundary.
    let before: Vec<Vec<ScalarPoint>> = bounds
        .iter()
        .map(|&b| LogReader::new(*format).feed(&bytes[..b]).points)
        .collect();

    for i in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[i] ^= 1 << (i % 8);
        let mut reader = LogReader::new(*format);
        let batch = reader.feed(&damaged);
        assert_eq!(batch.warnings.len(), 1, "flip at {i}: {:?}", batch.warnings);

        let r = bounds.partition_point(|&b| b <= i) - 1; // record holding byte i
        let (start, end) = (bounds[r], bounds[r + 1]);
        if i < start + 12 {
            // Length or its CRC: reading stops before this record, for good.
            assert_eq!(reader.offset(), start as u64, "flip at {i}");
            assert!(reader.stalled().is_some());
            assert!(same_points(&batch.points, &before[r]), "flip at {i}");
            assert!(
                reader.feed(&damaged[start..]).warnings.is_empty(),
                "warned once"
            );
        } else {
            // Data or its CRC: that record alone is skipped. If it introduced
            // a tensor tag's plugin metadata, that tag's later values are no
            // longer known to be scalars, exactly as in TensorBoard.
            assert_eq!(reader.offset(), bytes.len() as u64);
            let lost = &before[r + 1][before[r].len()..];
            let orphaned: Vec<&str> = lost
                .iter()
                .filter(|p| {
                    p.tag.starts_with("tensor/") && !before[r].iter().any(|q| q.tag == p.tag)
                })
                .map(|p| p.tag.as_str())
                .collect();
            let want: Vec<ScalarPoint> = before[r]
                .iter()
                .chain(
                    whole[before[r + 1].len()..]
                        .iter()
                        .filter(|p| !orphaned.contains(&p.tag.as_str())),
                )
                .cloned()
                .collect();
            assert!(
                same_points(&batch.points, &want),
                "flip at {i} in record {start}..{end}"
            );
        }
    }
}

#[test]
fn a_bit_flip_in_a_visualdl_file_never_harms_earlier_records() {
    let Some(files) = tiny_files() else { return };
    for (bytes, format) in &files[1..] {
        let bounds = record_bounds(bytes, *format);
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 1 << (i % 8);
            let mut reader = LogReader::new(*format);
            let batch = reader.feed(&damaged);
            // VisualDL has no checksums, so what follows the flip may read as
            // anything; what precedes it must be intact.
            let r = bounds.partition_point(|&b| b <= i) - 1;
            let before = LogReader::new(*format).feed(&bytes[..bounds[r]]).points;
            assert!(batch.consumed <= damaged.len());
            assert!(batch.points.len() >= before.len(), "flip at {i}");
            assert!(
                same_points(&batch.points[..before.len()], &before),
                "flip at {i}"
            );
        }
    }
}

#[test]
fn garbage_inside_valid_framing_is_skipped_with_a_warning_and_never_panics() {
    let Some(files) = tiny_files() else { return };
    let mut rng = Rng::new(3);
    for (bytes, format) in &files {
        let bounds = record_bounds(bytes, *format);
        let header = if *format == LogFormat::TensorBoard {
            12
        } else {
            8
        };
        for round in 0..2_000 {
            // Mutate real payloads, so the decoder sees nearly valid protobuf,
            // then frame them correctly so only the decoder can object.
            let mut file = Vec::new();
            for w in bounds.windows(2) {
                let mut payload = bytes[w[0] + header..w[1] - (header - 8)].to_vec();
                for _ in 0..rng.range(0, 3) {
                    if payload.is_empty() {
                        break;
                    }
                    let at = rng.range(0, payload.len() - 1);
                    match round % 3 {
                        0 => payload[at] = rng.next_u64() as u8,
                        1 => payload.truncate(at),
                        _ => {
                            let n = rng.range(1, 8);
                            payload.splice(at..at, rng.bytes(n));
                        }
                    }
                }
                file.extend(match format {
                    LogFormat::TensorBoard => tfrecord(&payload),
                    LogFormat::VisualDl => vdl_record(&payload),
                });
            }
            let mut reader = LogReader::new(*format);
            let batch = reader.feed(&file);
            assert_eq!(
                batch.consumed,
                file.len(),
                "framing is intact, so all is consumed"
            );
            assert!(reader.stalled().is_none());
            assert!(batch
                .warnings
                .iter()
                .all(|w| w.contains("protobuf") || w.contains("scalar tag")));
        }
    }
}
