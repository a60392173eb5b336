//! Reads logs written by the real tensorboardX and VisualDL writers (see
//! tests/fixtures/write_metric_logs.py) and checks every scalar.

use crate::common;

use std::{collections::BTreeMap, fs, io::Cursor};

use crate::common::metric_logs::{
    feed_in_slices, python_fixture, read_run, same_value, stored, Fixture, Rng,
};
use server::metric_files::{format_of, LogFormat, LogReader, ScalarPoint};

fn by_tag(points: &[ScalarPoint]) -> BTreeMap<&str, Vec<&ScalarPoint>> {
    let mut map: BTreeMap<&str, Vec<&ScalarPoint>> = BTreeMap::new();
    for p in points {
        map.entry(p.tag.as_str()).or_default().push(p);
    }
    map
}

fn counts(points: &[ScalarPoint]) -> BTreeMap<&str, usize> {
    by_tag(points)
        .into_iter()
        .map(|(t, v)| (t, v.len()))
        .collect()
}

fn point<'a>(points: &'a [ScalarPoint], tag: &str, step: i64) -> &'a ScalarPoint {
    points
        .iter()
        .find(|p| p.tag == tag && p.step == step)
        .unwrap_or_else(|| panic!("no {tag} at step {step}"))
}

/// Compares a run against the manifest: same points per tag, in order, with
/// the stored values and either the given wall time or a plausible one.
fn assert_matches_manifest(fixture: &Fixture, run: &str) {
    let points = read_run(fixture, run);
    let expected = fixture.expected_in(run);
    assert_eq!(points.len(), expected.len(), "{run}: point count");
    let got = by_tag(&points);
    let mut want: BTreeMap<&str, Vec<_>> = BTreeMap::new();
    for e in &expected {
        want.entry(e.tag.as_str()).or_default().push(*e);
    }
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{run}: tags"
    );
    for (tag, want) in want {
        assert_eq!(got[tag].len(), want.len(), "{run} {tag}: count");
        for (p, e) in got[tag].iter().zip(&want) {
            assert_eq!(p.step, e.step, "{run} {tag}");
            assert!(
                same_value(p.value, stored(e)),
                "{run} {tag} step {}: {} != {}",
                e.step,
                p.value,
                e.value
            );
            match e.wall_time {
                Some(w) => assert!(
                    (p.wall_time - w).abs() < 1e-6,
                    "{run} {tag}: wall {} != {w}",
                    p.wall_time
                ),
                // VisualDL keeps milliseconds, hence the slack.
                None => assert!(
                    p.wall_time >= fixture.started - 0.01 && p.wall_time <= fixture.finished + 0.01,
                    "{run} {tag}: wall time {} outside the script's run",
                    p.wall_time
                ),
            }
        }
    }
}

#[test]
fn tensorboardx_scalars_are_read_exactly_and_other_summaries_are_skipped() {
    let Some(fx) = python_fixture() else { return };
    assert_eq!(fx.files("tb").len(), 1);
    let points = read_run(fx, "tb");
    let want: BTreeMap<&str, usize> = [
        ("tensor/content", 100),
        ("tensor/double", 100),
        ("tensor/float_val", 100),
        ("train/acc", 1000),
        ("train/loss", 1000),
    ]
    .into();
    // No img, hist, note/text_summary (a string tensor) or pr (a float tensor
    // of the pr_curves plugin).
    assert_eq!(counts(&points), want);

    let first = point(&points, "train/loss", 0);
    assert_eq!((first.value, first.wall_time), (1.0, 1_700_000_000.0));
    let last = point(&points, "train/loss", 999);
    assert_eq!(last.value, f64::from(1.0f32 / 1000.0));
    assert_eq!(last.wall_time, 1_700_000_000.0 + 999.0 * 0.5);
    assert!(point(&points, "train/loss", 500).value.is_nan());
    assert_eq!(point(&points, "train/loss", 600).value, f64::INFINITY);
    assert_eq!(point(&points, "train/acc", 700).value, f64::NEG_INFINITY);
    assert_eq!(point(&points, "train/acc", 999).value, f64::from(0.999f32));

    // Tensor scalars: the plugin metadata came with step 0 only.
    assert_eq!(
        point(&points, "tensor/float_val", 99).value,
        99.0 * 0.25 - 3.0
    );
    assert_eq!(point(&points, "tensor/content", 99).value, -148.5);
    assert_eq!(point(&points, "tensor/double", 1).value, 1.0 / 3.0 + 1.0); // f64, not rounded to f32
    assert!(point(&points, "tensor/double", 50).value.is_nan());

    assert_matches_manifest(fx, "tb");
}

#[test]
fn visualdl_scalars_are_read_from_both_runs_in_the_directory() {
    let Some(fx) = python_fixture() else { return };
    let files = fx.files("vdl");
    assert_eq!(files.len(), 2, "one file per LogWriter: {files:?}");

    let run1 = common::metric_logs::read_file(&files[0]);
    assert_eq!(
        counts(&run1),
        [("train/acc", 1000), ("train/loss", 1000)].into()
    );
    let first = point(&run1, "train/loss", 0);
    assert_eq!((first.value, first.wall_time), (2.0, 1_700_000_000.0));
    assert_eq!(
        point(&run1, "train/loss", 999).value,
        f64::from(2.0f32 / 1000.0)
    );
    assert!(point(&run1, "train/loss", 300).value.is_nan());
    assert_eq!(point(&run1, "train/loss", 400).value, f64::INFINITY);
    assert_eq!(point(&run1, "train/acc", 800).value, f64::NEG_INFINITY);

    let run2 = common::metric_logs::read_file(&files[1]);
    assert_eq!(
        counts(&run2),
        [("lr_group/a", 50), ("lr_group/b", 50), ("train/loss", 200)].into()
    );
    assert_eq!(run2[0].step, 1000, "the restart resumes at step 1000");
    let last = point(&run2, "train/loss", 1199);
    assert_eq!(last.wall_time, 1_700_000_000.0 + 1199.0 * 0.5);
    assert_eq!(point(&run2, "lr_group/b", 1049).value, f64::from(-104.9f32));

    assert_matches_manifest(fx, "vdl");
}

#[test]
fn the_small_fixtures_match_their_manifest_too() {
    let Some(fx) = python_fixture() else { return };
    assert_matches_manifest(fx, "tiny_tb");
    assert_matches_manifest(fx, "tiny_vdl");
}

#[test]
fn feeding_real_files_in_random_slices_gives_the_one_shot_result() {
    let Some(fx) = python_fixture() else { return };
    let mut rng = Rng::new(7);
    for run in ["tb", "vdl"] {
        for path in fx.files(run) {
            let bytes = fs::read(&path).unwrap();
            let whole = common::metric_logs::read_file(&path);
            let format = format_of(&path.to_string_lossy()).unwrap();
            for max_slice in [1, 7, 64, 4096, 100_000] {
                if max_slice == 1 && bytes.len() > 100_000 {
                    continue; // byte-at-a-time over 250 kB only costs time
                }
                let mut reader = LogReader::new(format);
                let sliced = feed_in_slices(&mut reader, &bytes, &mut rng, max_slice);
                assert_eq!(
                    sliced.len(),
                    whole.len(),
                    "{} max {max_slice}",
                    path.display()
                );
                assert!(sliced.iter().zip(&whole).all(|(a, b)| a.tag == b.tag
                    && a.step == b.step
                    && same_value(a.value, b.value)
                    && a.wall_time == b.wall_time));
                assert_eq!(reader.offset(), bytes.len() as u64);
            }
        }
    }
}

#[test]
fn read_from_resumes_where_it_stopped_as_the_file_grows() {
    let Some(fx) = python_fixture() else { return };
    let path = &fx.files("tb")[0];
    let bytes = fs::read(path).unwrap();
    let whole = common::metric_logs::read_file(path);
    let mut reader = LogReader::new(LogFormat::TensorBoard);
    let mut points = Vec::new();
    let mut rng = Rng::new(11);
    let mut visible = 0;
    while visible < bytes.len() {
        visible = (visible + rng.range(1, 30_000)).min(bytes.len());
        let batch = reader
            .read_from(&mut Cursor::new(&bytes[..visible]))
            .unwrap();
        assert!(batch.warnings.is_empty());
        points.extend(batch.points);
    }
    assert_eq!(points.len(), whole.len());
    assert!(points
        .iter()
        .zip(&whole)
        .all(|(a, b)| a.tag == b.tag && a.step == b.step));
}

#[test]
fn a_resumed_reader_still_knows_the_tensor_scalar_tags() {
    let Some(fx) = python_fixture() else { return };
    let path = &fx.files("tb")[0];
    let bytes = fs::read(path).unwrap();
    let whole = common::metric_logs::read_file(path);
    // Cut in the middle of the tensor scalars (steps 0..100).
    let cut = (1..)
        .map(|k| k * 1000)
        .find(|&cut| {
            let head = LogReader::new(LogFormat::TensorBoard).feed(&bytes[..cut]);
            head.points
                .iter()
                .any(|p| p.tag == "tensor/double" && p.step == 50)
        })
        .unwrap();
    let mut first = LogReader::new(LogFormat::TensorBoard);
    let head = first.feed(&bytes[..cut]);
    let mut tags = first.scalar_plugin_tags();
    tags.sort();
    assert_eq!(
        tags,
        ["tensor/content", "tensor/double", "tensor/float_val"]
    );

    // Without the saved tags the tensor scalars of the second half are lost.
    let forgetful = LogReader::resume(LogFormat::TensorBoard, first.offset(), Vec::new())
        .feed(&bytes[first.offset() as usize..]);
    assert!(forgetful.points.iter().all(|p| p.tag.starts_with("train/")));
    assert!(forgetful.points.len() < whole.len() - head.points.len());

    // As after a restart of the console: a new reader from the saved state.
    let saved = first.plugin_tags();
    assert_eq!(
        saved.iter().filter(|(_, scalar)| *scalar).count(),
        tags.len()
    );
    let mut second = LogReader::resume(LogFormat::TensorBoard, first.offset(), saved);
    let tail = second.feed(&bytes[first.offset() as usize..]);
    assert_eq!(head.points.len() + tail.points.len(), whole.len());
    assert_eq!(second.offset(), bytes.len() as u64);
}
