#!/usr/bin/env bash
# The Rust tests' binaries: built once, run by scripts/test.sh's stages.
#   scripts/rust-tests.sh build          app's and server's unit tests and the `it` suite
#   scripts/rust-tests.sh run [ARGS...]  each binary with libtest's ARGS, in its package's
#                                        folder as cargo test would; all run, and it fails
#                                        if any failed (cargo test --no-fail-fast)
#   scripts/rust-tests.sh it [ARGS...]   only the `it` suite
# The same tests as `cargo test --release -p app -p server --features app/ssr`,
# compiled differently: cargo's bench profile (the release profile's settings,
# so every library the release build made is reused as it is) with the test
# code itself at opt-level 0. Optimizing the ~75,000 lines the three test
# crates compile took 250 of the test build's seconds on 2 cores (app's unit
# tests 85 s, server's 71 s, `it` 93 s; at opt-level 0: 10, ~15 and 13 s),
# while what they test (the server and app libraries the `it` suite links,
# every dependency, the paddlecloud binary) stays the optimized release build.
# The doc tests run with cargo (they compile as they run).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-target}
case "$TARGET" in /*) ;; *) TARGET=$ROOT/$TARGET ;; esac
LIST="$TARGET/release/rust-tests.list"
# package folder, cargo rustc's target selection
UNITS=("app --lib" "server --lib" "server --test it")

build() {
  local unit pkg sel
  : >"$LIST.new"
  for unit in "${UNITS[@]}"; do
    read -r pkg sel <<<"$unit"
    # shellcheck disable=SC2086 # $sel is two words: --lib, or --test it
    cargo rustc --locked --profile bench -p "$pkg" $sel --features app/ssr \
      --message-format json-render-diagnostics -- -C opt-level=0 |
      python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(sys.argv[1], m["executable"], sep="\t")' "$pkg" >>"$LIST.new"
  done
  mv "$LIST.new" "$LIST"
  sed 's/^/    /' "$LIST"
}

run() {
  local only=$1 failed=() pkg bin
  shift
  [ -s "$LIST" ] || { echo "no test binaries: run scripts/rust-tests.sh build first" >&2; exit 2; }
  while IFS=$'\t' read -r pkg bin; do
    case "$only" in all) ;; it) [[ "$(basename "$bin")" == it-* ]] || continue ;; esac
    echo "     Running $(basename "$bin") ($pkg)"
    (cd "$ROOT/$pkg" && "$bin" "$@") || failed+=("$(basename "$bin")")
  done <"$LIST"
  if [ "$only" = all ]; then
    echo "     Doc-tests"
    cargo test --locked --release --doc -p app -p server --features app/ssr -- "$@" || failed+=(doc-tests)
  fi
  if [ ${#failed[@]} -gt 0 ]; then
    echo "failed: ${failed[*]}" >&2
    exit 101
  fi
}

case "${1:-}" in
  build) build ;;
  run) shift; run all "$@" ;;
  it) shift; run it "$@" ;;
  *) echo "usage: $0 build | run [ARGS...] | it [ARGS...]" >&2; exit 2 ;;
esac
