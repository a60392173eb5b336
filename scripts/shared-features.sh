#!/usr/bin/env bash
# Fails, naming them, when `cargo test` (scripts/test.sh) would build a crate
# of the release build (scripts/build.sh) with other features: cargo then
# compiles that crate and every crate above it a second time, the server and
# its binary included, which cost CI's cold run about 6 minutes before this
# check. A dev-dependency that turns on a feature is matched by giving the
# normal dependency the same feature (see bitflags in server/Cargo.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
features() {
  cargo tree --locked --target "$host" --prefix none -f '{p}|{f}' "$@" | sed 's/ (\*)$//' | sort -u
}
release=$(features -p server -e normal,build)
tests=$(features -p app -p server --features app/ssr -e normal,build,dev)
# A crate can appear with several feature sets (a build script's or a proc
# macro's copy is built for the host apart): the sets are compared whole.
differ=$(awk -F'|' '
  NR == FNR { r[$1] = r[$1] " [" $2 "]"; next }
  { t[$1] = t[$1] " [" $2 "]" }
  END { for (p in r) if ((p in t) && r[p] != t[p]) printf "  %s: release%s, tests%s\n", p, r[p], t[p] }' \
  <(echo "$release") <(echo "$tests"))
if [ -n "$differ" ]; then
  echo "The test build would compile these again with other features than the release build:" >&2
  echo "$differ" >&2
  exit 1
fi
