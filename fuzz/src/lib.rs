//! Fuzz targets: one function per parser of outside input, each taking any
//! bytes, feeding them to the real parser and checking what must hold of
//! its answer beyond "no panic" (a quantity that parses prints back to
//! itself, a valid spec survives a JSON round trip, a record reader never
//! reads past its input and yields only records whose checksums hold…).
//!
//! Two callers run the same functions: the libFuzzer binaries of
//! `fuzz/fuzz_targets/` (coverage-guided, built and run by
//! `scripts/fuzz.sh`, outside CI), through this crate's library, and the
//! test `fuzz_corpus` (`server/tests/it/fuzz_corpus.rs`), which compiles
//! this file as a module of its own (`#[path]`) and replays every committed
//! input of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` and a
//! few thousand [`Mutator`] variations of them on every `cargo test`. So it
//! stays out of the production server library, and uses only public items
//! of `server` and `app`, and only crates the server depends on.
//!
//! A target reports a finding by panicking: an `assert!` here, or a panic
//! (an overflow, an index out of range) in the parser itself.

use std::collections::BTreeMap;
use std::io::Cursor;

use app::models::pipelines::layout::{layout, BOX_H, BOX_W};
use app::models::quantity::{
    format_cpu, format_memory, memory_quantity, parse_cpu_millis, parse_memory_bytes,
};
use app::models::{
    date_to_ms, ms_to_date, next_steps, JobForm, JobQuery, JobSpec, NodeState, NodeStatus,
    PipelineSpec, QuotaForm, ReplicaResources, RunStatus, Step, TemplateRun, TemplateSpec,
    MAX_PER_PAGE,
};

use server::kubernetes::{metrics_api, prometheus};
use server::metric_files::framing::{self, Frame};
use server::metric_files::{Batch, LogFormat, LogReader, ScalarPoint};
use server::storage::logfile;

/// One fuzz target: its name (the libFuzzer binary `fuzz/fuzz_targets/<name>.rs`
/// and the folders `fuzz/corpus/<name>/`, `fuzz/regressions/<name>/`), the
/// function, and what it covers.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The binary's and the corpus folder's name.
    pub name: &'static str,
    /// Runs one input; panics on a finding.
    pub run: fn(&[u8]),
    /// What it feeds and checks, in a line.
    pub covers: &'static str,
}

/// Every target, in the order `scripts/fuzz.sh` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "tfevents",
        run: tfevents,
        covers: "TensorBoard event files: TFRecord framing, CRCs, Event protobufs, incremental and resumed reads",
    },
    Target {
        name: "vdlrecords",
        run: vdlrecords,
        covers: "VisualDL logs: length framing, Record protobufs, incremental and resumed reads",
    },
    Target {
        name: "quantity",
        run: quantity,
        covers: "CPU and memory quantities (forms, specs, quotas, cluster answers), printed back and read again",
    },
    Target {
        name: "job_spec",
        run: job_spec,
        covers: "job specs as JSON (REST, templates) and the submit dialog's form: validation, totals, round trip",
    },
    Target {
        name: "log_stamps",
        run: log_stamps,
        covers: "pod log lines: timestamp split and strip, stamps read back, the backwards tail",
    },
    Target {
        name: "pipeline_spec",
        run: pipeline_spec,
        covers: "pipeline specs as JSON and YAML (the CLI's file): validation, round trip, layout, a simulated run",
    },
    Target {
        name: "template_spec",
        run: template_spec,
        covers: "template specs: parameter types and patterns, defaults, rendering a job, round trip",
    },
    Target {
        name: "job_query",
        run: job_query,
        covers: "the job table's URL query and JSON query: filters, dates, pages, round trip",
    },
    Target {
        name: "prometheus_answer",
        run: prometheus_answer,
        covers: "Prometheus range-query answers: envelope, errors, matrix, sample values",
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

// ---------------------------------------------------------------------------
// Metric files

/// Bytes that separate the payloads of [`records_of`].
const RECORD_SPLIT: &[u8] = b"\n~~\n";

/// TensorBoard event files: `data` as a file, then as the payloads of
/// intact records (split at `\n~~\n`), so that the protobuf decoder is
/// reached without the fuzzer having to find CRCs.
pub fn tfevents(data: &[u8]) {
    check_tf_framing(data);
    check_reader(LogFormat::TensorBoard, data);
    check_reader(LogFormat::TensorBoard, &records_of(data, tfrecord));
}

/// VisualDL logs, as [`tfevents`] does for TensorBoard's.
pub fn vdlrecords(data: &[u8]) {
    check_vdl_framing(data);
    check_reader(LogFormat::VisualDl, data);
    check_reader(LogFormat::VisualDl, &records_of(data, vdl_record));
}

/// A TFRecord with `payload` and correct checksums.
pub fn tfrecord(payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u64).to_le_bytes();
    let mut out = len.to_vec();
    out.extend(framing::masked_crc32c(&len).to_le_bytes());
    out.extend(payload);
    out.extend(framing::masked_crc32c(payload).to_le_bytes());
    out
}

/// A VisualDL record with `payload`.
pub fn vdl_record(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u64).to_le_bytes().to_vec();
    out.extend(payload);
    out
}

/// `data` split at [`RECORD_SPLIT`], each piece framed as a record.
fn records_of(data: &[u8], frame: fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 32);
    let mut rest = data;
    while let Some(at) = rest
        .windows(RECORD_SPLIT.len())
        .position(|w| w == RECORD_SPLIT)
    {
        out.extend(frame(&rest[..at]));
        rest = &rest[at + RECORD_SPLIT.len()..];
    }
    out.extend(frame(rest));
    out
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(data[at..at + 8].try_into().unwrap())
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(data[at..at + 4].try_into().unwrap())
}

/// Walks the TFRecords of `data` and checks each answer of the framing
/// against the bytes: a record lies within the input and both its
/// checksums hold; a corrupt one has a good length and a bad data CRC; an
/// incomplete one is really cut short; a lost one has a bad length.
fn check_tf_framing(data: &[u8]) {
    let mut rest = data;
    loop {
        match framing::next_tfrecord(rest) {
            Frame::Record { payload, len } => {
                let n = payload.len();
                assert!(len <= rest.len(), "a record past the end of its input");
                assert_eq!(len, 16 + n);
                assert_eq!(u64_at(rest, 0), n as u64);
                assert_eq!(framing::masked_crc32c(&rest[..8]), u32_at(rest, 8));
                assert_eq!(&rest[12..12 + n], payload);
                assert_eq!(framing::masked_crc32c(payload), u32_at(rest, 12 + n));
                rest = &rest[len..];
            }
            Frame::Corrupt { len, .. } => {
                assert!(
                    (16..=rest.len()).contains(&len),
                    "corrupt record of {len} bytes"
                );
                assert_eq!(u64_at(rest, 0), len as u64 - 16);
                assert_eq!(framing::masked_crc32c(&rest[..8]), u32_at(rest, 8));
                let payload = &rest[12..len - 4];
                assert_ne!(framing::masked_crc32c(payload), u32_at(rest, len - 4));
                rest = &rest[len..];
            }
            Frame::Incomplete => {
                assert!(
                    rest.len() < 12 || (16 + u64_at(rest, 0)) as u128 > rest.len() as u128,
                    "incomplete, yet {} bytes hold the whole record",
                    rest.len()
                );
                break;
            }
            Frame::Lost(_) => {
                assert!(rest.len() >= 12);
                assert!(
                    framing::masked_crc32c(&rest[..8]) != u32_at(rest, 8)
                        || u64_at(rest, 0) > framing::MAX_RECORD_LEN
                );
                break;
            }
        }
    }
}

/// [`check_tf_framing`] for VisualDL's bare length prefix.
fn check_vdl_framing(data: &[u8]) {
    let mut rest = data;
    loop {
        match framing::next_vdl_record(rest) {
            Frame::Record { payload, len } => {
                assert!(len <= rest.len(), "a record past the end of its input");
                assert_eq!(len, 8 + payload.len());
                assert_eq!(u64_at(rest, 0), payload.len() as u64);
                assert_eq!(&rest[8..len], payload);
                rest = &rest[len..];
            }
            Frame::Corrupt { .. } => panic!("VisualDL records have no checksum to fail"),
            Frame::Incomplete => {
                assert!(rest.len() < 8 || (8 + u64_at(rest, 0)) as u128 > rest.len() as u128);
                break;
            }
            Frame::Lost(_) => {
                assert!(u64_at(rest, 0) > framing::MAX_RECORD_LEN);
                break;
            }
        }
    }
}

/// A point as comparable bits (NaN equals itself).
fn point_key(p: &ScalarPoint) -> (String, i64, u64, u64) {
    (
        p.tag.clone(),
        p.step,
        p.wall_time.to_bits(),
        p.value.to_bits(),
    )
}

fn keys(batches: &[&Batch]) -> Vec<(String, i64, u64, u64)> {
    batches
        .iter()
        .flat_map(|b| b.points.iter().map(point_key))
        .collect()
}

/// A [`LogReader`] over `file`: it consumes no more than it was given,
/// whole; fed the same bytes in two calls cut anywhere it reads the same
/// points and warnings; and a reader resumed from the first call's saved
/// state (offset and plugin tags) reads the same points from the second
/// call's bytes.
fn check_reader(format: LogFormat, file: &[u8]) {
    let mut whole_reader = LogReader::new(format);
    let whole = whole_reader.feed(file);
    assert!(whole.consumed <= file.len());
    assert_eq!(whole_reader.offset(), whole.consumed as u64);

    // Somewhere in the file, chosen by its bytes.
    let cut = match file.len() {
        0 => 0,
        n => (file.iter().map(|&b| usize::from(b)).sum::<usize>() * 7919) % (n + 1),
    };
    let mut reader = LogReader::new(format);
    let first = reader.feed(&file[..cut]);
    assert!(first.consumed <= cut);
    let saved_offset = reader.offset();
    let saved_tags = reader.plugin_tags();
    let second = reader.feed(&file[first.consumed..]);
    assert_eq!(first.consumed + second.consumed, whole.consumed);
    assert_eq!(keys(&[&first, &second]), keys(&[&whole]));
    let warnings: Vec<&String> = first.warnings.iter().chain(&second.warnings).collect();
    assert_eq!(warnings, whole.warnings.iter().collect::<Vec<_>>());

    let mut resumed = LogReader::resume(format, saved_offset, saved_tags);
    let again = resumed.feed(&file[first.consumed..]);
    assert_eq!(keys(&[&again]), keys(&[&second]));
    assert_eq!(resumed.offset(), reader.offset());
}

// ---------------------------------------------------------------------------
// Quantities

/// CPU and memory quantities, as forms, specs, quotas and the cluster send
/// them: one that parses prints back (every way the console prints it) to
/// text that parses to the same amount, an error names its field, and the
/// metrics API's reading is a finite number.
pub fn quantity(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_cpu_millis("cpu", text) {
        Ok(millis) => {
            for shown in [format_cpu(millis), format!("{millis}m")] {
                assert_eq!(
                    parse_cpu_millis("cpu", &shown).ok(),
                    Some(millis),
                    "{text:?} is {millis} millicores, printed {shown:?}"
                );
            }
        }
        Err(e) => assert_eq!(e.field(), Some("cpu")),
    }
    match parse_memory_bytes("memory", text) {
        Ok(bytes) => {
            for shown in [memory_quantity(bytes), bytes.to_string()] {
                assert_eq!(
                    parse_memory_bytes("memory", &shown).ok(),
                    Some(bytes),
                    "{text:?} is {bytes} bytes, printed {shown:?}"
                );
            }
            assert!(!format_memory(bytes).is_empty());
        }
        Err(e) => assert_eq!(e.field(), Some("memory")),
    }
    if let Some(v) = metrics_api::quantity(text) {
        assert!(v.is_finite(), "{text:?} read as {v}");
    }
    let form = QuotaForm {
        cpu: text.to_owned(),
        memory: text.to_owned(),
        gpu: text.to_owned(),
        max_jobs: text.to_owned(),
    };
    let _ = form.to_quota();
}

// ---------------------------------------------------------------------------
// Job specs

/// A job spec: JSON (what `POST /api/v1/jobs` and a template's job take)
/// when `data` starts with `{`, else the submit dialog's urlencoded form.
/// Checking and totalling never panic; the totals are the exact sums; a
/// valid spec survives a JSON round trip and is still valid.
pub fn job_spec(data: &[u8]) {
    let spec = if data.first() == Some(&b'{') {
        match serde_json::from_slice::<JobSpec>(data) {
            Ok(spec) => spec,
            Err(_) => return,
        }
    } else {
        match job_form(data).to_spec() {
            Ok(spec) => spec,
            Err(e) => {
                assert!(e.field().is_some(), "a form error names its field: {e}");
                return;
            }
        }
    };
    check_job_spec(&spec);
}

/// The submit dialog's fields from a urlencoded form.
fn job_form(data: &[u8]) -> JobForm {
    let mut form = JobForm::default();
    for (key, value) in form_urlencoded::parse(data) {
        let value = value.into_owned();
        match &*key {
            "name" => form.name = value,
            "image" => form.image = value,
            "command" => form.command = value,
            "working_dir" => form.working_dir = value,
            "env" => form.env = value,
            "num_ps" => form.num_ps = value,
            "num_trainers" => form.num_trainers = value,
            "ps_cpu" => form.ps_cpu = value,
            "ps_memory" => form.ps_memory = value,
            "trainer_cpu" => form.trainer_cpu = value,
            "trainer_memory" => form.trainer_memory = value,
            "trainer_gpu" => form.trainer_gpu = value,
            "datasets" => form.datasets = value,
            "models" => form.models = value,
            "environment" => form.environment = value,
            _ => {}
        }
    }
    form
}

fn check_job_spec(spec: &JobSpec) {
    let valid = spec.validate();
    if let Err(e) = &valid {
        assert!(e.field().is_some(), "a spec error names its field: {e}");
    }
    if let Ok(totals) = spec.totals() {
        let per = |r: &ReplicaResources, role: &str| r.totals(role).unwrap();
        let (ps, trainer) = (per(&spec.ps, "ps"), per(&spec.trainer, "trainer"));
        let exact = |p: u64, t: u64| {
            u128::from(p) * u128::from(spec.num_ps) + u128::from(t) * u128::from(spec.num_trainers)
        };
        assert_eq!(
            u128::from(totals.cpu_millis),
            exact(ps.cpu_millis, trainer.cpu_millis)
        );
        assert_eq!(
            u128::from(totals.memory_bytes),
            exact(ps.memory_bytes, trainer.memory_bytes)
        );
        assert_eq!(u128::from(totals.gpu), exact(ps.gpu, trainer.gpu));
    }
    if valid.is_ok() {
        let text = serde_json::to_string(spec).expect("a spec serialises");
        let back: JobSpec = serde_json::from_str(&text).expect("a spec reads back");
        assert_eq!(&back, spec);
        assert!(back.validate().is_ok());
        assert_eq!(spec.argv().len(), spec.command.len() + spec.args.len());
    }
}

// ---------------------------------------------------------------------------
// Log stamps

/// Pod log lines: each line's timestamp split off and put back gives the
/// line; stripping keeps every line and drops only stamps; a stamp the
/// console writes for a time made of the input's first bytes is found
/// again and reads back as that time; the backwards tail equals the last
/// lines counted forwards, whatever its block size.
pub fn log_stamps(data: &[u8]) {
    for line in data.split_inclusive(|&b| b == b'\n') {
        let (stamp, rest) = logfile::split_timestamp(line);
        match stamp {
            Some(stamp) => {
                assert_eq!([stamp.as_bytes(), b" ", rest].concat(), line);
            }
            None => assert_eq!(rest, line),
        }
    }
    let stripped = logfile::strip_timestamps(data);
    assert!(stripped.len() <= data.len());
    let newlines = |d: &[u8]| d.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(newlines(&stripped), newlines(data));

    if let Some(head) = data.get(..16) {
        let nanos = i128::from_le_bytes(head.try_into().unwrap());
        // Every instant `time` can hold, years -9999 to 9999.
        let span = time::Date::MAX
            .midnight()
            .assume_utc()
            .unix_timestamp_nanos()
            - time::Date::MIN
                .midnight()
                .assume_utc()
                .unix_timestamp_nanos();
        let nanos = time::Date::MIN
            .midnight()
            .assume_utc()
            .unix_timestamp_nanos()
            + nanos.rem_euclid(span);
        let at = time::OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap();
        check_stamp(at, &data[16..]);
    }

    let lines = data.first().map_or(3, |&b| usize::from(b % 8));
    let block = data.get(1).map_or(5, |&b| 1 + usize::from(b % 32));
    let (tail, end) = logfile::tail_of(&mut Cursor::new(data), data.len() as u64, lines, block)
        .expect("a cursor reads");
    // Counted forwards: the complete lines, the last `lines` of them.
    let complete_end = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let complete: Vec<&[u8]> = data[..complete_end]
        .split_inclusive(|&b| b == b'\n')
        .collect();
    let expected = complete[complete.len().saturating_sub(lines)..].concat();
    assert_eq!(end, complete_end as u64);
    assert_eq!(
        tail, expected,
        "the last {lines} lines, read back {block} bytes at a time"
    );
}

/// A stamp written for `at` before `text` is found again and reads back as `at`.
fn check_stamp(at: time::OffsetDateTime, text: &[u8]) {
    if !(0..=9999).contains(&at.year()) {
        // RFC 3339 has four-digit years only: such a time has no stamp
        // (a local run's log chunk with one is refused).
        return;
    }
    let stamp = logfile::format_timestamp(at);
    let text: Vec<u8> = text.iter().copied().filter(|&b| b != b'\n').collect();
    let line = [stamp.as_bytes(), b" ", &text, b"\n"].concat();
    let (found, rest) = logfile::split_timestamp(&line);
    assert_eq!(found, Some(stamp.as_str()));
    assert_eq!(rest, [&text[..], b"\n"].concat());
    let read = time::OffsetDateTime::parse(&stamp, &time::format_description::well_known::Rfc3339)
        .expect("a stamp is RFC 3339");
    assert_eq!(read, at, "{stamp}");
}

// ---------------------------------------------------------------------------
// Pipelines

/// A pipeline spec: JSON (the REST API, the CLI's `.json` file) and YAML
/// (the CLI's `.yaml` file). Checking never panics; a valid spec survives a
/// JSON round trip, lays out with every node in one box, and a run of it,
/// simulated with the scheduler's own `next_steps` and nodes that succeed
/// or fail as the input's bytes say, always ends.
pub fn pipeline_spec(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let outcomes: Vec<bool> = data.iter().map(|b| b & 1 == 0).collect();
    for yaml in [false, true] {
        if let Ok(spec) = server::cli::parse_pipeline_file(text, yaml, "pipeline") {
            check_pipeline(&spec, &outcomes);
        }
    }
}

fn check_pipeline(spec: &PipelineSpec, outcomes: &[bool]) {
    // Drawn before it is checked too (the submit form's preview).
    let pending: Vec<NodeState> = spec
        .nodes
        .iter()
        .map(|n| NodeState::pending(&n.name))
        .collect();
    let _ = layout(spec, &pending);
    if let Err(e) = spec.validate() {
        assert!(e.field().is_some(), "a pipeline error names its field: {e}");
        return;
    }
    let text = serde_json::to_string(spec).expect("a pipeline serialises");
    let back: PipelineSpec = serde_json::from_str(&text).expect("a pipeline reads back");
    assert_eq!(&back, spec);

    let graph = layout(spec, &pending);
    let mut seen = vec![0; spec.nodes.len()];
    for b in &graph.boxes {
        assert!(!b.nodes.is_empty());
        b.nodes.iter().for_each(|&i| seen[i] += 1);
        assert!(b.x + BOX_W <= graph.width);
        assert!(b.y + BOX_H <= graph.height);
    }
    assert!(seen.iter().all(|&n| n == 1), "every node in one box");
    assert!(graph
        .edges
        .iter()
        .all(|&(a, b)| a < graph.boxes.len() && b < graph.boxes.len()));

    simulate_run(spec, pending, outcomes);
}

/// Drives a run to its end as the scheduler would, each started node
/// ending at once (succeeded or failed as `outcomes` says, no retries).
fn simulate_run(spec: &PipelineSpec, mut nodes: Vec<NodeState>, outcomes: &[bool]) {
    let mut finished = 0;
    for pass in 0..=spec.nodes.len() + 1 {
        let steps = next_steps(spec, &nodes, 0);
        assert!(!steps.is_empty(), "pass {pass}: the run stalled: {nodes:?}");
        for step in steps {
            match step {
                Step::Start { node, attempt } => {
                    let state = &mut nodes[node];
                    assert_eq!(state.status, NodeStatus::Pending);
                    assert_eq!(attempt, state.attempt + 1);
                    let ok = outcomes.get(finished % outcomes.len().max(1)) != Some(&false);
                    finished += 1;
                    state.status = if ok {
                        NodeStatus::Succeeded
                    } else {
                        NodeStatus::Failed
                    };
                    state.attempt = attempt;
                    state.job = Some(format!("job-{node}"));
                }
                Step::Skip { node, .. } => {
                    assert_eq!(nodes[node].status, NodeStatus::Pending);
                    nodes[node].status = NodeStatus::Skipped;
                }
                Step::End { status, .. } => {
                    assert!(nodes.iter().all(|n| n.status.is_final()));
                    let failed = nodes.iter().any(|n| n.status == NodeStatus::Failed);
                    assert_eq!(status == RunStatus::Failed, failed);
                    return;
                }
            }
        }
    }
    panic!("the run did not end after a pass per node: {nodes:?}");
}

// ---------------------------------------------------------------------------
// Templates

/// A template spec (JSON, as REST and the CLI take it). Checking never
/// panics; a valid one survives a JSON round trip; every default checks to
/// a value that checks again to itself; a run with the defaults renders a
/// valid job or says which value is wrong.
pub fn template_spec(data: &[u8]) {
    let Ok(spec) = serde_json::from_slice::<TemplateSpec>(data) else {
        return;
    };
    if let Err(e) = spec.validate() {
        assert!(e.field().is_some(), "a template error names its field: {e}");
        return;
    }
    let text = serde_json::to_string(&spec).expect("a template serialises");
    let back: TemplateSpec = serde_json::from_str(&text).expect("a template reads back");
    assert_eq!(back, spec);
    for p in &spec.parameters {
        if let Some(default) = &p.default {
            let value = p.check(default).expect("validate checked the default");
            assert_eq!(p.check(&value.to_json()).ok(), Some(value));
        }
    }
    match spec.render(1, &TemplateRun::default(), &spec.name) {
        Ok(job) => {
            assert!(job.validate().is_ok());
            assert!(job.template.is_some());
        }
        Err(e) => assert!(e.field().is_some(), "a run error names its field: {e}"),
    }
}

// ---------------------------------------------------------------------------
// Job table query

/// The job table's query: the page's URL (urlencoded) when `data` does not
/// start with `{`, else the JSON a server function takes. Reading never
/// panics; pages stay in bounds; a date reads back as itself; the URL a
/// query from a URL writes shows the same jobs; the links any query writes
/// read back as a query that writes the same links.
pub fn job_query(data: &[u8]) {
    let query = if data.first() == Some(&b'{') {
        match serde_json::from_slice::<JobQuery>(data) {
            Ok(q) => q,
            Err(_) => return,
        }
    } else {
        let params: BTreeMap<String, String> = form_urlencoded::parse(data).into_owned().collect();
        for value in params.values() {
            if let Some(ms) = date_to_ms(value) {
                assert_eq!(date_to_ms(&ms_to_date(ms)), Some(ms), "{value:?}");
            }
        }
        let query = JobQuery::from_params(|k| params.get(k).cloned());
        assert_eq!(
            view(&round_trip(&query)),
            view(&query),
            "the URL of {query:?}"
        );
        query
    };
    assert!(query.page() >= 1);
    assert!((1..=MAX_PER_PAGE).contains(&query.per_page()));
    let once = round_trip(&query);
    assert_eq!(round_trip(&once), once);
}

/// What a query shows: the filters, order and page as the server applies them.
#[allow(clippy::type_complexity)]
fn view(
    q: &JobQuery,
) -> (
    Option<app::models::JobStatus>,
    Option<app::models::JobSource>,
    Option<&str>,
    Option<i64>,
    Option<i64>,
    app::models::JobSort,
    u32,
    u32,
) {
    (
        q.status,
        q.source,
        q.name_filter(),
        q.from,
        q.to,
        q.sort,
        q.page(),
        q.per_page(),
    )
}

/// The query that the links written from `query` read back as.
fn round_trip(query: &JobQuery) -> JobQuery {
    let params: BTreeMap<&str, String> = query.to_params().into_iter().collect();
    JobQuery::from_params(|k| params.get(k).cloned())
}

// ---------------------------------------------------------------------------
// Prometheus

/// A Prometheus answer to a range query, whatever a server (or something
/// in its place) sends: read without panicking, and every series read has
/// one time per value and only finite values.
pub fn prometheus_answer(data: &[u8]) {
    let status = http::StatusCode::OK;
    if let Ok(series) = prometheus::read_matrix("http://prometheus/", status, data) {
        for s in series {
            assert_eq!(s.ts.len(), s.values.len());
            assert!(s.values.iter().all(|v| v.is_finite()));
        }
    }
}

// ---------------------------------------------------------------------------
// The seeded mutator of the tests

/// A small fixed-seed mutator (xorshift64*) for the tests' short run: each
/// input is a corpus entry with one to four of bit flips, byte
/// replacements, inserts, deletes, duplicated runs and splices with another
/// entry. Not coverage-guided; the same seed gives the same inputs.
#[derive(Debug, Clone)]
pub struct Mutator {
    state: u64,
}

impl Mutator {
    /// A mutator whose inputs depend only on `seed` (0 is taken as 1).
    pub fn new(seed: u64) -> Self {
        Self { state: seed.max(1) }
    }

    fn next(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    /// A new input made from `corpus` (from nothing when it is empty).
    pub fn mutate(&mut self, corpus: &[Vec<u8>]) -> Vec<u8> {
        let mut input = corpus
            .get(self.below(corpus.len()))
            .cloned()
            .unwrap_or_default();
        for _ in 0..1 + self.below(4) {
            let len = input.len();
            match self.below(7) {
                0 if len > 0 => {
                    let at = self.below(len);
                    input[at] ^= 1 << self.below(8);
                }
                1 if len > 0 => {
                    const SPECIAL: &[u8] = b"\x00\x01\x7f\x80\xff0.-{}\"\n :9";
                    let at = self.below(len);
                    input[at] = SPECIAL[self.below(SPECIAL.len())];
                }
                2 => {
                    let at = self.below(len + 1);
                    let byte = self.next() as u8;
                    input.insert(at, byte);
                }
                3 if len > 0 => {
                    let at = self.below(len);
                    let n = 1 + self.below((len - at).min(16));
                    input.drain(at..at + n);
                }
                4 if len > 0 => {
                    let at = self.below(len);
                    let n = 1 + self.below((len - at).min(16));
                    let run = input[at..at + n].to_vec();
                    let to = self.below(len + 1);
                    input.splice(to..to, run);
                }
                5 if !corpus.is_empty() => {
                    // Splice: this input's head, another entry's tail.
                    let other = &corpus[self.below(corpus.len())];
                    let head = self.below(len + 1);
                    let tail = self.below(other.len() + 1);
                    input.truncate(head);
                    input.extend_from_slice(&other[tail..]);
                }
                _ if !corpus.is_empty() => {
                    // A piece of another entry, inserted.
                    let other = &corpus[self.below(corpus.len())];
                    let from = self.below(other.len() + 1);
                    let n = self.below((other.len() - from).min(32) + 1);
                    let to = self.below(len + 1);
                    input.splice(to..to, other[from..from + n].iter().copied());
                }
                _ => input.push(self.next() as u8),
            }
        }
        input
    }
}
