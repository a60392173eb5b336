//! The fuzz targets (`fuzz/src/lib.rs`, compiled here as the module
//! `fuzzing`: the server library carries none of it) on every `cargo test`,
//! without libFuzzer: every committed input of `fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/`, then a fixed-seed run of mutations of them.
//! `scripts/fuzz.sh` does the coverage-guided search; this keeps what it
//! found (and what it once broke) passing.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[path = "../../../fuzz/src/lib.rs"]
mod fuzzing;

use fuzzing::{Mutator, Target, TARGETS};

/// Mutated inputs per target: about a second for all targets in a release
/// build, a few in a debug one.
const MUTATIONS: usize = 5000;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The files of `dir`, by name; none when it does not exist.
fn inputs(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// Runs `input`; a panic is a finding, described by where the input came
/// from. A mutation is saved to a file so that it can be replayed (and,
/// once fixed, kept in `fuzz/regressions/<target>/`).
fn run_one(target: &Target, input: &[u8], origin: impl Fn() -> String) -> Result<(), String> {
    if catch_unwind(AssertUnwindSafe(|| (target.run)(input))).is_ok() {
        return Ok(());
    }
    let origin = origin();
    let saved = if origin.starts_with("mutation") {
        let path =
            std::env::temp_dir().join(format!("fuzz-{}-{}", target.name, std::process::id()));
        std::fs::write(&path, input).unwrap();
        format!(", saved as {}", path.display())
    } else {
        String::new()
    };
    Err(format!(
        "{} panicked on {origin}{saved} (replay: scripts/fuzz.sh --replay {} FILE; once fixed, keep it in fuzz/regressions/{}/)",
        target.name, target.name, target.name
    ))
}

/// A target's committed inputs, then its mutations; the first panic.
fn run_target(target: &Target, fuzz: &Path) -> Result<(), String> {
    let started = Instant::now();
    let corpus = inputs(&fuzz.join("corpus").join(target.name));
    if corpus.is_empty() {
        return Err(format!(
            "fuzz/corpus/{} has no input to start from",
            target.name
        ));
    }
    let regressions = inputs(&fuzz.join("regressions").join(target.name));
    for (path, bytes) in corpus.iter().chain(&regressions) {
        run_one(target, bytes, || path.display().to_string())?;
    }
    let entries: Vec<Vec<u8>> = corpus
        .iter()
        .chain(&regressions)
        .map(|(_, b)| b.clone())
        .collect();
    // A seed of its own per target, fixed: a failure comes back.
    let seed = target.name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let mut mutator = Mutator::new(seed);
    for i in 0..MUTATIONS {
        let input = mutator.mutate(&entries);
        run_one(target, &input, || format!("mutation {i} (seed {seed:#x})"))?;
    }
    eprintln!(
        "{}: {} committed inputs and {MUTATIONS} mutations in {:.2} s",
        target.name,
        entries.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[test]
fn every_committed_fuzz_input_and_its_seeded_mutations_parse_without_panicking() {
    let fuzz = fuzz_dir();
    let failures: Vec<String> = TARGETS
        .iter()
        .filter_map(|target| run_target(target, &fuzz).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_fuzz_target_has_a_libfuzzer_binary_calling_it() {
    let fuzz = fuzz_dir();
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).unwrap();
    let mut binaries: Vec<String> = std::fs::read_dir(fuzz.join("fuzz_targets"))
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.trim_end_matches(".rs").to_owned()
        })
        .collect();
    binaries.sort();
    let mut names: Vec<String> = TARGETS.iter().map(|t| t.name.to_owned()).collect();
    names.sort();
    assert_eq!(
        binaries, names,
        "fuzz/fuzz_targets/ against fuzz/src/lib.rs's TARGETS"
    );
    for target in TARGETS {
        let source =
            std::fs::read_to_string(fuzz.join(format!("fuzz_targets/{}.rs", target.name))).unwrap();
        assert!(
            source.contains(&format!("paddlecloud_fuzz::{}(data)", target.name)),
            "fuzz/fuzz_targets/{}.rs calls paddlecloud_fuzz::{}",
            target.name,
            target.name
        );
        assert!(
            manifest.contains(&format!("name = \"{}\"", target.name)),
            "fuzz/Cargo.toml has a [[bin]] {}",
            target.name
        );
        assert!(fuzzing::target(target.name).is_some());
        assert!(
            !target.covers.trim().is_empty(),
            "{} says what it feeds and checks",
            target.name
        );
    }
}
