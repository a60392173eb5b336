//! Helpers shared by the integration tests: running the Python writers,
//! reading whole runs, a small deterministic PRNG, and hand encoders for
//! TFRecord/VisualDL framing and protobuf fields.
#![allow(dead_code)] // Each test binary uses a different subset.

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

use server::metric_files::{format_of, LogReader, ScalarPoint};

/// Set to make a missing Python venv a test failure instead of a skip.
pub const REQUIRE_ENV: &str = "PADDLECLOUD_REQUIRE_PYTHON_WRITERS";
/// Overrides the Python interpreter that runs the writers.
pub const PYTHON_ENV: &str = "PADDLECLOUD_PYTHON";

/// One scalar the Python script wrote, from its manifest.
#[derive(Debug, Clone)]
pub struct Expected {
    pub run: String,
    pub tag: String,
    pub step: i64,
    pub value: f64,
    /// Whether the value is stored as f64 (else f32).
    pub is_f64: bool,
    /// The wall time given to the writer; `None` when it used the clock.
    pub wall_time: Option<f64>,
}

/// Logs written by tests/fixtures/write_metric_logs.py.
pub struct Fixture {
    pub dir: PathBuf,
    pub expected: Vec<Expected>,
    /// Clock readings before and after the script wrote, in Unix seconds.
    pub started: f64,
    pub finished: f64,
}

impl Fixture {
    pub fn expected_in(&self, run: &str) -> Vec<&Expected> {
        self.expected.iter().filter(|e| e.run == run).collect()
    }

    /// The log files of one run directory, sorted by name.
    pub fn files(&self, run: &str) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = fs::read_dir(self.dir.join(run))
            .expect("run dir exists")
            .map(|e| e.expect("dir entry").path())
            .filter(|p| format_of(&p.to_string_lossy()).is_some())
            .collect();
        files.sort();
        files
    }
}

pub fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(PYTHON_ENV) {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var_os("HOME")?;
    let p = Path::new(&home).join(".cache/paddlecloud/pyvenv/bin/python");
    p.exists().then_some(p)
}

/// Runs the Python writers once per test binary; `None` (after saying so on
/// stderr) when the venv is absent and not required.
pub fn python_fixture() -> Option<&'static Fixture> {
    static FIXTURE: OnceLock<Option<Fixture>> = OnceLock::new();
    FIXTURE.get_or_init(write_fixture).as_ref()
}

fn write_fixture() -> Option<Fixture> {
    let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    let Some(python) = python() else {
        assert!(
            !required,
            "{REQUIRE_ENV} is set but no Python writers venv was found: create \
             ~/.cache/paddlecloud/pyvenv with tensorboardX and visualdl, or set {PYTHON_ENV}"
        );
        // Straight to stderr: eprintln! output of passing tests is captured
        // and never shown, and a skip must not look like a pass.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: no Python venv at ~/.cache/paddlecloud/pyvenv (nor {PYTHON_ENV}); \
             tests against the real tensorboardX/VisualDL writers did not run (set {REQUIRE_ENV}=1 to fail instead)"
        );
        return None;
    };
    // One directory per test binary (module_path! names it), rewritten by
    // every run.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "python-writers-{}",
        module_path!().replace("::", "-")
    ));
    let _ = fs::remove_dir_all(&dir);
    let out = Command::new(&python)
        .arg(writer_script())
        .arg(&dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "{} failed:\n{}",
        writer_script().display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(load_fixture(&dir))
}

/// tests/fixtures/write_metric_logs.py: `python write_metric_logs.py DIR`
/// writes runs of the real writers into `DIR` and their manifest beside them.
pub fn writer_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/write_metric_logs.py")
}

/// The fixture the writer script left in `dir`, from its manifest.
pub fn load_fixture(dir: &Path) -> Fixture {
    let manifest = fs::read_to_string(dir.join("manifest.tsv")).expect("manifest written");
    let (mut started, mut finished) = (f64::NAN, f64::NAN);
    let mut expected = Vec::new();
    for line in manifest.lines().filter(|l| !l.is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        match cols[..] {
            ["#started", t] => started = t.parse().unwrap(),
            ["#finished", t] => finished = t.parse().unwrap(),
            [run, tag, step, value, precision, wall] => expected.push(Expected {
                run: run.to_owned(),
                tag: tag.to_owned(),
                step: step.parse().unwrap(),
                value: value.parse().unwrap(),
                is_f64: precision == "f64",
                wall_time: (wall != "-").then(|| wall.parse().unwrap()),
            }),
            _ => panic!("bad manifest line {line:?}"),
        }
    }
    Fixture {
        dir: dir.to_owned(),
        expected,
        started,
        finished,
    }
}

/// Reads a whole file in one call, asserting it is undamaged.
pub fn read_file(path: &Path) -> Vec<ScalarPoint> {
    let format = format_of(&path.to_string_lossy()).expect("a log file");
    let mut reader = LogReader::new(format);
    let mut file = fs::File::open(path).expect("open log");
    let batch = reader.read_from(&mut file).expect("read log");
    assert!(
        batch.warnings.is_empty(),
        "{}: {:?}",
        path.display(),
        batch.warnings
    );
    assert_eq!(
        reader.offset(),
        fs::metadata(path).unwrap().len(),
        "whole file consumed"
    );
    batch.points
}

/// Reads every log file of a run, in file-name order.
pub fn read_run(fixture: &Fixture, run: &str) -> Vec<ScalarPoint> {
    fixture
        .files(run)
        .iter()
        .flat_map(|f| read_file(f))
        .collect()
}

/// Equality that treats NaN as equal to NaN.
pub fn same_value(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// `value` as the writer stores it.
pub fn stored(e: &Expected) -> f64 {
    if e.is_f64 {
        e.value
    } else {
        f64::from(e.value as f32)
    }
}

/// xorshift64*: deterministic, dependency-free randomness for the tests.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// Feeds `file` as a writer appending slices of random size would expose
/// it, always passing the bytes from the reader's offset to the visible end.
pub fn feed_in_slices(
    reader: &mut LogReader,
    file: &[u8],
    rng: &mut Rng,
    max_slice: usize,
) -> Vec<ScalarPoint> {
    let mut points = Vec::new();
    let mut visible = 0;
    while visible < file.len() {
        visible = (visible + rng.range(1, max_slice)).min(file.len());
        let start = reader.offset() as usize;
        let batch = reader.feed(&file[start..visible]);
        assert!(batch.warnings.is_empty(), "{:?}", batch.warnings);
        assert_eq!(reader.offset() as usize, start + batch.consumed);
        points.extend(batch.points);
    }
    points
}

// --- Hand encoders -------------------------------------------------------

pub fn masked_crc32c(data: &[u8]) -> u32 {
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI).checksum(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// A TFRecord around `payload`.
pub fn tfrecord(payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u64).to_le_bytes();
    let mut out = len.to_vec();
    out.extend(masked_crc32c(&len).to_le_bytes());
    out.extend(payload);
    out.extend(masked_crc32c(payload).to_le_bytes());
    out
}

/// A VisualDL record around `payload`.
pub fn vdl_record(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u64).to_le_bytes().to_vec();
    out.extend(payload);
    out
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Protobuf field builders: each returns the encoded key and value.
pub fn pb_varint(field: u32, v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(u64::from(field) << 3, &mut out);
    varint(v, &mut out);
    out
}

pub fn pb_f64(field: u32, v: f64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(u64::from(field) << 3 | 1, &mut out);
    out.extend(v.to_le_bytes());
    out
}

pub fn pb_f32(field: u32, v: f32) -> Vec<u8> {
    let mut out = Vec::new();
    varint(u64::from(field) << 3 | 5, &mut out);
    out.extend(v.to_le_bytes());
    out
}

pub fn pb_bytes(field: u32, v: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(u64::from(field) << 3 | 2, &mut out);
    varint(v.len() as u64, &mut out);
    out.extend(v);
    out
}

/// An `Event` with one summary value made of `value_fields`.
pub fn tb_event(step: i64, wall_time: f64, value_fields: &[Vec<u8>]) -> Vec<u8> {
    let value = value_fields.concat();
    let summary = pb_bytes(1, &value);
    [
        pb_f64(1, wall_time),
        pb_varint(2, step as u64),
        pb_bytes(5, &summary),
    ]
    .concat()
}

/// A `Summary.Value` with a `simple_value`.
pub fn tb_simple(step: i64, wall_time: f64, tag: &str, v: f32) -> Vec<u8> {
    tb_event(
        step,
        wall_time,
        &[pb_bytes(1, tag.as_bytes()), pb_f32(2, v)],
    )
}

/// A rank-0 DT_FLOAT tensor value, with plugin metadata if `plugin` is given.
pub fn tb_tensor(step: i64, tag: &str, v: f32, plugin: Option<&str>) -> Vec<u8> {
    let tensor = [
        pb_varint(1, 1),
        pb_bytes(2, &[]),
        pb_bytes(5, &v.to_le_bytes()),
    ]
    .concat();
    let mut fields = vec![pb_bytes(1, tag.as_bytes()), pb_bytes(8, &tensor)];
    if let Some(name) = plugin {
        let plugin_data = pb_bytes(1, name.as_bytes());
        fields.push(pb_bytes(9, &pb_bytes(1, &plugin_data)));
    }
    tb_event(step, 1.0, &fields)
}

/// A VisualDL `Record` with one `Value` made of id, tag, timestamp and `rest`.
pub fn vdl_value(step: i64, tag: &str, timestamp_ms: i64, rest: &[u8]) -> Vec<u8> {
    let value = [
        pb_varint(1, step as u64),
        pb_bytes(2, tag.as_bytes()),
        pb_varint(3, timestamp_ms as u64),
        rest.to_vec(),
    ]
    .concat();
    pb_bytes(1, &value)
}
