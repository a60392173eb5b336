#!/usr/bin/env bash
# Coverage-guided fuzzing of the console's parsers with libFuzzer, on stable
# Rust. Outside CI: CI replays the committed corpus in `cargo test` instead
# (server/tests/it/fuzz_corpus.rs).
#   scripts/fuzz.sh [SECONDS] [TARGET...]    fuzz each target SECONDS (default 60) over
#                                            fuzz/corpus/TARGET, keeping new inputs there
#   scripts/fuzz.sh --merge [TARGET...]      minimise fuzz/corpus/TARGET (libFuzzer
#                                            -set_cover_merge=1 over edges), keeping the seed-* inputs
#   scripts/fuzz.sh --replay TARGET FILE...  run TARGET once on each FILE
#   scripts/fuzz.sh --list                   the targets
# Prints per target: executions, executions per second, corpus size, coverage
# (edges) and features, and crashes with the crashing input's path
# (target/fuzz/artifacts/TARGET/crash-…). Exits 1 if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

OUT="${CARGO_TARGET_DIR:-target}/fuzz"
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
BIN_DIR="$OUT/$TRIPLE/release"

all_targets() {
  for f in fuzz/fuzz_targets/*.rs; do basename "$f" .rs; done
}

build() {
  say "building the fuzz targets (instrumented; into $OUT, the first time takes long)"
  # libFuzzer's coverage signals, as cargo-fuzz asks rustc for them: edge
  # counters, their PC table, and compared values (which lets the fuzzer
  # find CRCs and keywords). No sanitizer (that needs nightly). RUSTFLAGS
  # replaces .cargo/config.toml's build.rustflags, so its cfg is repeated.
  # `--target` keeps the flags off build scripts and proc macros.
  # fuzz/ is a workspace of its own; its lock file starts as a copy of the
  # console's, so it builds the very versions the console does (cargo adds
  # libfuzzer-sys and drops the browser crates).
  cp Cargo.lock fuzz/Cargo.lock
  RUSTFLAGS="--cfg erase_components --cfg fuzzing -Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares" \
    CARGO_TARGET_DIR="$OUT" cargo build --release --manifest-path fuzz/Cargo.toml \
    --target "$TRIPLE" --bins
}

check_target() {
  [ -f "fuzz/fuzz_targets/$1.rs" ] || { echo "no fuzz target $1 (scripts/fuzz.sh --list)" >&2; exit 2; }
}

# A field of libFuzzer's output: the last `NAME: VALUE` on a status line.
status_field() {
  grep -E '^#[0-9]+' "$2" | tail -n 1 | sed -n "s/.* $1: \([^ ]*\).*/\1/p"
}

stat() {
  sed -n "s/^stat::$1: *//p" "$2" | tail -n 1
}

fuzz_one() {
  local target=$1 seconds=$2
  local corpus="fuzz/corpus/$target" regressions="fuzz/regressions/$target"
  local artifacts="$OUT/artifacts/$target/" log="$OUT/logs/$target.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  local dirs=("$corpus")
  [ -d "$regressions" ] && dirs+=("$regressions")
  local rc=0
  # -timeout: a parser that takes 10 s on a few KB is a finding too.
  "$BIN_DIR/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts" -print_final_stats=1 "${dirs[@]}" >"$log" 2>&1 || rc=$?
  local crash
  crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
  printf '%-18s %12s %9s %7s %6s %7s  %s\n' "$target" \
    "$(stat number_of_executed_units "$log")" "$(stat average_exec_per_sec "$log")" \
    "$(find "$corpus" -type f | wc -l)" "$(status_field cov "$log")" "$(status_field ft "$log")" \
    "${crash:-${rc/#0/none}}"
  if [ "$rc" != 0 ]; then
    echo "  $target crashed (exit $rc); its log: $log; the input: ${crash:-see the log}" >&2
    grep -m 1 -A 3 -E "panicked at|ERROR: libFuzzer" "$log" | sed 's/^/  /' >&2 || true
    return 1
  fi
}

merge_one() {
  local target=$1 corpus="fuzz/corpus/$1" merged
  merged=$(mktemp -d)
  # The hand-made seeds stay whatever their coverage; the rest is a small
  # set of inputs (greedy set cover) that reaches every edge the whole
  # corpus reaches. Edges, not hit counts (-use_counters=0): counted hits
  # would keep thousands of inputs per target.
  find "$corpus" -maxdepth 1 -type f -name 'seed-*' -exec cp {} "$merged/" \;
  mkdir -p "$OUT/logs"
  "$BIN_DIR/$target" -set_cover_merge=1 -use_counters=0 "$merged" "$corpus" \
    >"$OUT/logs/$target.merge.log" 2>&1
  local before after
  before=$(find "$corpus" -type f | wc -l)
  rm -rf "$corpus"
  mv "$merged" "$corpus"
  chmod 755 "$corpus"
  after=$(find "$corpus" -type f | wc -l)
  printf '%-18s %6s -> %s inputs (%s)\n' "$target" "$before" "$after" "$(du -sh "$corpus" | cut -f1)"
}

case "${1:-}" in
  --list)
    all_targets
    exit 0
    ;;
  --replay)
    target=${2:?usage: scripts/fuzz.sh --replay TARGET FILE...}
    check_target "$target"
    shift 2
    build
    exec "$BIN_DIR/$target" "$@"
    ;;
  --merge)
    shift
    targets=("$@")
    [ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(all_targets)
    for t in "${targets[@]}"; do check_target "$t"; done
    build
    for t in "${targets[@]}"; do merge_one "$t"; done
    exit 0
    ;;
esac

seconds=60
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(all_targets)
for t in "${targets[@]}"; do check_target "$t"; done
build
say "fuzzing ${#targets[@]} targets for $seconds s each"
printf '%-18s %12s %9s %7s %6s %7s  %s\n' target execs execs/s corpus cov ft crash
failed=0
for t in "${targets[@]}"; do
  fuzz_one "$t" "$seconds" || failed=1
done
exit "$failed"
