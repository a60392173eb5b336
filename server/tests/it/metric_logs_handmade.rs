//! Hand-built records for the cases real writers do not produce on demand:
//! damage, stalls, unusual tensors, and random bytes. Needs no Python.

use std::io::{self, Cursor, Read, Seek, SeekFrom};

use crate::common::metric_logs::*;
use server::metric_files::{LogFormat, LogReader};

fn tb_file(events: &[Vec<u8>]) -> Vec<u8> {
    events.iter().flat_map(|e| tfrecord(e)).collect()
}

#[test]
fn a_record_with_a_damaged_payload_is_skipped_and_reading_goes_on() {
    let mut file = tb_file(&[tb_simple(1, 10.0, "loss", 1.0)]);
    let second = file.len();
    file.extend(tb_file(&[
        tb_simple(2, 11.0, "loss", 2.0),
        tb_simple(3, 12.0, "loss", 3.0),
    ]));
    file[second + 14] ^= 0x40;

    let mut reader = LogReader::new(LogFormat::TensorBoard);
    let batch = reader.feed(&file);
    let steps: Vec<i64> = batch.points.iter().map(|p| p.step).collect();
    assert_eq!(steps, [1, 3]);
    assert_eq!(batch.warnings.len(), 1);
    assert!(
        batch.warnings[0].contains(&format!("byte {second}")),
        "{:?}",
        batch.warnings
    );
    assert_eq!(reader.offset(), file.len() as u64);
}

#[test]
fn a_damaged_length_stops_reading_there_and_is_reported_once() {
    let mut file = tb_file(&[
        tb_simple(1, 10.0, "loss", 1.0),
        tb_simple(2, 11.0, "loss", 2.0),
    ]);
    let second = tfrecord(&tb_simple(1, 10.0, "loss", 1.0)).len();
    file[second + 9] ^= 1; // the length's CRC

    let mut reader = LogReader::new(LogFormat::TensorBoard);
    let batch = reader.feed(&file);
    assert_eq!(batch.points.len(), 1);
    assert_eq!(batch.warnings.len(), 1);
    assert_eq!(reader.offset(), second as u64);
    assert!(reader.stalled().unwrap().contains("length checksum"));

    // More data behind the damage changes nothing and is not re-reported.
    file.extend(tb_file(&[tb_simple(3, 12.0, "loss", 3.0)]));
    assert_eq!(reader.feed(&file[second..]), Default::default());
    assert_eq!(reader.offset(), second as u64);
}

#[test]
fn a_stall_on_bytes_not_yet_written_clears_once_they_land() {
    // Some filesystems show a racing reader zeros where the writer's bytes go.
    let file = tb_file(&[tb_simple(1, 10.0, "loss", 1.0)]);
    let mut reader = LogReader::new(LogFormat::TensorBoard);
    assert_eq!(reader.feed(&vec![0; file.len()]).warnings.len(), 1);
    assert!(reader.stalled().is_some());

    let batch = reader.feed(&file);
    assert_eq!((batch.points.len(), batch.warnings.len()), (1, 0));
    assert!(reader.stalled().is_none());
}

#[test]
fn an_impossible_length_stops_reading_in_both_formats() {
    let mut reader = LogReader::new(LogFormat::VisualDl);
    let mut file = vdl_record(&vdl_value(1, "loss", 1000, &pb_f32(4, 1.0)));
    let good = file.len();
    file.extend((1u64 << 40).to_le_bytes());
    file.extend([0; 64]);
    let batch = reader.feed(&file);
    assert_eq!((batch.points.len(), batch.warnings.len()), (1, 1));
    assert!(batch.warnings[0].contains("exceeds"));
    assert_eq!(reader.offset(), good as u64);

    let len = u64::MAX.to_le_bytes();
    let mut file = len.to_vec();
    file.extend(masked_crc32c(&len).to_le_bytes());
    let mut reader = LogReader::new(LogFormat::TensorBoard);
    assert_eq!(reader.feed(&file).warnings.len(), 1);
    assert!(reader.stalled().is_some());
}

#[test]
fn a_checksummed_record_that_is_not_protobuf_is_skipped() {
    let garbage = [0xff; 10];
    for (format, file) in [
        (
            LogFormat::TensorBoard,
            [tfrecord(&garbage), tfrecord(&tb_simple(1, 1.0, "a", 1.0))].concat(),
        ),
        (
            LogFormat::VisualDl,
            [
                vdl_record(&garbage),
                vdl_record(&vdl_value(1, "a", 1, &pb_f32(4, 1.0))),
            ]
            .concat(),
        ),
    ] {
        let batch = LogReader::new(format).feed(&file);
        assert_eq!(batch.points.len(), 1, "{format:?}");
        assert_eq!(batch.warnings.len(), 1);
        assert!(
            batch.warnings[0].contains("byte 0: not a valid protobuf"),
            "{:?}",
            batch.warnings
        );
    }
}

#[test]
fn empty_records_and_non_summary_events_hold_no_scalars() {
    let file_version = pb_bytes(3, b"brain.Event:2");
    let file = [tfrecord(&[]), tfrecord(&file_version)].concat();
    let batch = LogReader::new(LogFormat::TensorBoard).feed(&file);
    assert_eq!(
        batch,
        server::metric_files::Batch {
            consumed: file.len(),
            ..Default::default()
        }
    );
}

#[test]
fn tensor_scalars_are_recognised_by_the_first_metadata_of_their_tag() {
    let file = tb_file(&[
        tb_tensor(0, "acc", 0.5, Some("scalars")),
        tb_tensor(1, "acc", 0.75, None), // metadata only came first
        tb_tensor(0, "no_meta", 1.0, None),
        tb_tensor(0, "text", 2.0, Some("text")),
        tb_tensor(1, "text", 3.0, Some("scalars")), // first metadata wins
    ]);
    let mut reader = LogReader::new(LogFormat::TensorBoard);
    let batch = reader.feed(&file);
    let got: Vec<(&str, i64, f64)> = batch
        .points
        .iter()
        .map(|p| (p.tag.as_str(), p.step, p.value))
        .collect();
    assert_eq!(got, [("acc", 0, 0.5), ("acc", 1, 0.75)]);
    assert_eq!(reader.scalar_plugin_tags(), ["acc"]);
}

#[test]
fn an_unreadable_scalar_tensor_is_reported_once_per_tag() {
    // A DT_STRING tensor under the scalars plugin.
    let tensor = [pb_varint(1, 7), pb_bytes(8, b"x")].concat();
    let meta = pb_bytes(9, &pb_bytes(1, &pb_bytes(1, b"scalars")));
    let event = |step| {
        tb_event(
            step,
            1.0,
            &[pb_bytes(1, b"s"), pb_bytes(8, &tensor), meta.clone()],
        )
    };
    let batch = LogReader::new(LogFormat::TensorBoard).feed(&tb_file(&[event(0), event(1)]));
    assert!(batch.points.is_empty());
    assert_eq!(batch.warnings.len(), 1, "{:?}", batch.warnings);
    assert!(batch.warnings[0].contains("unsupported tensor dtype 7"));
}

#[test]
fn a_visualdl_zero_is_a_scalar_but_images_and_metadata_are_not() {
    let file = [
        vdl_record(&vdl_value(
            0,
            "meta_data_tag",
            5,
            &pb_bytes(10, &pb_bytes(1, b"run")),
        )),
        vdl_record(&vdl_value(1, "loss", 1_700_000_000_250, &pb_f32(4, 0.0))),
        vdl_record(&vdl_value(
            1,
            "img",
            5,
            &pb_bytes(5, &pb_bytes(4, b"\x89PNG")),
        )),
    ]
    .concat();
    let batch = LogReader::new(LogFormat::VisualDl).feed(&file);
    assert_eq!(batch.points.len(), 1);
    let p = &batch.points[0];
    assert_eq!(
        (p.tag.as_str(), p.step, p.value, p.wall_time),
        ("loss", 1, 0.0, 1_700_000_000.25)
    );
}

#[test]
fn visualdl_add_scalars_lines_are_tagged_main_slash_sub() {
    let line = |sub: &str, v| pb_bytes(14, &[pb_bytes(1, sub.as_bytes()), pb_f32(2, v)].concat());
    let file = [
        vdl_record(&vdl_value(3, "lr", 1000, &line("a", 0.5))),
        vdl_record(&vdl_value(3, "lr", 1000, &line("b", -0.5))),
    ]
    .concat();
    let batch = LogReader::new(LogFormat::VisualDl).feed(&file);
    let got: Vec<(&str, f64)> = batch
        .points
        .iter()
        .map(|p| (p.tag.as_str(), p.value))
        .collect();
    assert_eq!(got, [("lr/a", 0.5), ("lr/b", -0.5)]);
}

/// Returns at most a few bytes per `read`, as pipes and network mounts may.
struct Trickle<'a> {
    inner: Cursor<&'a [u8]>,
    rng: Rng,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.rng.range(1, 5000).min(buf.len());
        self.inner.read(&mut buf[..n])
    }
}

impl Seek for Trickle<'_> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

#[test]
fn read_from_copes_with_short_reads_and_records_larger_than_its_buffer() {
    let big = tb_event(
        0,
        1.0,
        &[pb_bytes(1, b"img"), pb_bytes(4, &vec![7; 3 << 20])],
    );
    let file = tb_file(&[
        tb_simple(1, 1.0, "a", 1.0),
        big,
        tb_simple(2, 2.0, "a", 2.0),
    ]);
    let mut reader = LogReader::new(LogFormat::TensorBoard);
    let mut source = Trickle {
        inner: Cursor::new(&file),
        rng: Rng::new(5),
    };
    let batch = reader.read_from(&mut source).unwrap();
    assert_eq!(batch.points.len(), 2);
    assert_eq!(batch.consumed, file.len());
    assert_eq!(reader.offset(), file.len() as u64);
}

#[test]
fn random_bytes_never_panic_and_never_overrun() {
    let mut rng = Rng::new(1);
    for round in 0..20_000 {
        let len = rng.range(0, if round % 100 == 0 { 65_536 } else { 512 });
        let mut data = rng.bytes(len);
        if round % 2 == 0 && len >= 8 {
            // A plausible small length, so the bytes after it get decoded.
            let claimed = rng.range(0, len) as u64;
            data[..8].copy_from_slice(&claimed.to_le_bytes());
        }
        for format in [LogFormat::TensorBoard, LogFormat::VisualDl] {
            let mut reader = LogReader::new(format);
            let batch = reader.feed(&data);
            assert!(batch.consumed <= data.len());
            assert_eq!(reader.offset(), batch.consumed as u64);
        }
        // Random payloads in valid framing reach the protobuf decoder.
        let framed = tfrecord(&data);
        let batch = LogReader::new(LogFormat::TensorBoard).feed(&framed);
        assert_eq!(batch.consumed, framed.len());
    }
}
