#!/usr/bin/env bash
# Checks the REST API against its own OpenAPI document with schemathesis:
# every check it has (statuses, schemas, headers, that schema-valid requests
# are taken and schema-violating ones refused, auth), a fixed seed and a
# bounded number of examples, against a fresh console on SQLite.
#   scripts/api-contract.sh [BINARY] [extra `st run` options...]
# BINARY defaults to the release build. Exits non-zero on any failure and
# leaves the report (and the console's log) in target/api-contract/.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

binary="${1:-${CARGO_TARGET_DIR:-target}/release/paddlecloud}"
shift || true
st="$TOOLS/schemathesis/bin/st"
[ -x "$st" ] || { echo "schemathesis is not installed: run scripts/setup.sh test" >&2; exit 1; }
[ -x "$binary" ] || { echo "no console binary at $binary: run scripts/build.sh" >&2; exit 1; }
# Absolute, so it still names the binary from inside $out (CARGO_TARGET_DIR
# may be relative or absolute).
binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")

out="${CARGO_TARGET_DIR:-target}/api-contract"
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
data="$out/data"
password='contract-Secret-1'

"$binary" admin create-account --name contract --email owner@example.com \
  --password-stdin --data-dir "$data" <<<"$password" >/dev/null
key=$("$binary" admin create-key --account contract --user owner@example.com --data-dir "$data" | tail -n 1)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Jobs the fuzzer submits run as real processes; they run in a scratch
# directory and the console stops them within a second when it ends.
(cd "$out" && exec env -u DATABASE_URL RUST_LOG=warn "$binary" serve \
  --addr "127.0.0.1:$port" --data-dir "$data" --leptos-config "$OLDPWD/Leptos.toml" \
  --stop-grace 1 --local-cpus 64 --local-memory 256Gi) >"$out/console.log" 2>&1 &
console=$!
trap 'kill "$console" 2>/dev/null; wait "$console" 2>/dev/null || true' EXIT

for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/api/v1/openapi.json" -o "$out/openapi.json" && break
  kill -0 "$console" 2>/dev/null || { cat "$out/console.log" >&2; exit 1; }
  sleep 0.2
done

say "schemathesis against http://127.0.0.1:$port/api/v1/openapi.json (seed 1)"
# One worker: the same seed then gives the same requests in the same order.
"$st" --config-file scripts/schemathesis.toml run "http://127.0.0.1:$port/api/v1/openapi.json" \
  --header "Authorization: Bearer $key" \
  --checks all --seed 1 --max-examples "${API_CONTRACT_EXAMPLES:-25}" \
  --phases examples,coverage,fuzzing --workers 1 \
  --generation-database none --no-color \
  --report junit --report-dir "$out" "$@"
