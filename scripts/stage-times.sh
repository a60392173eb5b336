#!/usr/bin/env bash
# Where the time went: each milestone that `say` noted in FILE (see
# scripts/env.sh), with the seconds until the next one, and the total.
#   scripts/stage-times.sh FILE
# .ci/run prints it last, so that the end of a CI log says which stage was
# slow, or which one a time limit cut short.
set -euo pipefail
file=${1:?usage: $0 FILE}
[ -s "$file" ] || exit 0
now=$(date +%s)
echo "==> where the time went (seconds; each milestone until the next one):"
awk -F '\t' -v now="$now" '
  NR == 1 { first = $1 }
  { if (NR > 1) printf "  %6d %6d  %s\n", prev - first, $1 - prev, what; prev = $1; what = $2 }
  END {
    printf "  %6d %6d  %s (until now)\n", prev - first, now - prev, what
    printf "  total %d s (%.1f minutes)\n", now - first, (now - first) / 60
  }' "$file"
