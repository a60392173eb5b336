#!/usr/bin/env bash
# The resident memory of a fresh console at idle, and where it is.
#   scripts/idle-rss.sh [BINARY] [SECONDS]
# Starts BINARY (default: the release build) as `make run` does, `serve` on
# its embedded defaults (SQLite, the local executor), from the repository
# root, with a throwaway data dir and a free port; waits SECONDS (default 60)
# without a request, then prints /proc's figures (VmRSS, RssAnon, RssFile,
# threads), smaps_rollup, and the resident kilobytes of each mapping group:
# the binary's code, its data, its pages relocated at load, the heap
# (anonymous mappings), shared libraries, the SQLite file and the rest.
# Prints numbers only; it checks nothing. docs/benchmarks.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
binary="${1:-${CARGO_TARGET_DIR:-target}/release/paddlecloud}"
seconds="${2:-60}"
[ -x "$binary" ] || { echo "no console binary at $binary: run scripts/build.sh" >&2; exit 1; }
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
env -u DATABASE_URL "$binary" serve --addr "127.0.0.1:$port" --data-dir "$data" >"$data/console.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do
  grep -q "PaddleCloud Console is up" "$data/console.log" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$data/console.log" >&2; exit 1; }
  sleep 0.1
done
sleep "$seconds"
echo "binary: $binary ($(stat -c %s "$binary") bytes), idle ${seconds} s, pid $pid"
grep -E '^(VmRSS|RssAnon|RssFile|RssShmem|VmData|Threads):' "/proc/$pid/status"
echo "threads by name: $(cat /proc/"$pid"/task/*/comm | sort | uniq -c | awk '{printf "%s×%s ", $1, $2}')"
echo "smaps_rollup:"
grep -E '^(Rss|Pss|Private_Clean|Private_Dirty|Shared_Clean|Anonymous|AnonHugePages):' "/proc/$pid/smaps_rollup" | sed 's/^/  /'
echo "resident kB by mapping:"
python3 - "$pid" "$(readlink -f "$binary")" <<'EOF'
import re, sys
pid, exe = sys.argv[1], sys.argv[2]
groups, name = {}, None
for line in open(f"/proc/{pid}/smaps"):
    m = re.match(r"^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$", line)
    if m:
        perms, path = m.group(1), m.group(2).strip()
        if path == exe:
            name = {"r-xp": "binary: code"}.get(perms, "binary: data")
        elif path.endswith((".db", ".db-shm", ".db-wal")):
            name = "SQLite file (mmap)"
        elif ".so" in path:
            name = "shared libraries"
        elif path in ("", "[heap]"):
            name = "heap (anonymous)"
        else:
            name = path
    elif line.startswith("Rss:") and name:
        groups[name] = groups.get(name, 0) + int(line.split()[1])
    elif line.startswith("Anonymous:") and name and name.startswith("binary:"):
        # Pages of the binary written at load (relocations): private copies.
        kb = int(line.split()[1])
        groups[name] -= kb
        groups["binary: relocated at load"] = groups.get("binary: relocated at load", 0) + kb
for name, kb in sorted(groups.items(), key=lambda g: -g[1]):
    if kb:
        print(f"  {kb:>8}  {name}")
EOF
