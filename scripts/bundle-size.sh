#!/usr/bin/env bash
# Prints what the browser downloads, gzip: the main wasm module, the JavaScript
# glue, and for each page (a lazy route) the wasm it needs to open, that is the
# main module plus the page's modules from the split manifest. Parts of a page
# that load on demand (lazy functions named `<page>_...`, e.g. the Jobs page's
# `jobs_log_console`) are counted together with their page.
# The target counts wasm; the build fails when a page passes the ceiling.
#   scripts/bundle-size.sh PKG_DIR NAME
set -euo pipefail
PKG=$1
NAME=$2
# The target is 350 KB gzip per page; the build fails only past a hard ceiling
# so an overshoot is seen at every build without blocking all work (issue 2
# stays open on it). The ceiling follows the bundle down: 540 KB until the
# splitter moved each page's data into its own modules (largest page 462 KB).
TARGET_KB=350
CEILING_KB=${PADDLECLOUD_WASM_CEILING_KB:-480}

gz() { stat -c %s "$1.gz"; }
kb() { echo $((($1 + 512) / 1024)); }

main=$(gz "$PKG/$NAME.wasm")
js=$(gz "$PKG/$NAME.js")
loader="$PKG/__wasm_split.______________________.js"
[ -f "$loader" ] && js=$((js + $(gz "$loader")))
total=$main
for f in "$PKG"/split_*.wasm "$PKG"/chunk_*.wasm; do
  [ -e "$f" ] && total=$((total + $(gz "$f")))
done
printf '==> wasm bundle (gzip): main module %d KB, all modules %d KB; JavaScript glue %d KB\n' \
  "$(kb "$main")" "$(kb "$total")" "$(kb "$js")"

# The manifest as "entry module" lines: {"<entry>": ["chunk_1", "split_<entry>"], ...}
declare -A modules=()
manifest="$PKG/__wasm_split_manifest.json"
if [ -f "$manifest" ]; then
  entry=""
  while IFS= read -r line; do
    if [[ $line =~ ^\ *\"([^\"]+)\":\ \[ ]]; then
      entry=${BASH_REMATCH[1]#__}
    elif [[ $line =~ ^\ *\"([^\"]+)\",?$ ]] && [ -n "$entry" ]; then
      modules[$entry]+=" ${BASH_REMATCH[1]}"
    fi
  done <"$manifest"
fi

# Sum of the main module and the distinct modules named in $@.
wasm_of() {
  local size=$main
  local -A seen=()
  for m in $@; do
    [ -n "${seen[$m]:-}" ] && continue
    seen[$m]=1
    size=$((size + $(gz "$PKG/$m.wasm")))
  done
  echo "$size"
}

largest=$main
for entry in $(printf '%s\n' "${!modules[@]}" | sort); do
  [[ $entry == *_route_view_* ]] || continue
  page=${entry%_route_view_*}
  size=$(wasm_of "${modules[$entry]}")
  printf '    %-34s %4d KB\n' "/$page" "$(kb "$size")"
  [ "$size" -gt "$largest" ] && largest=$size
  for part in $(printf '%s\n' "${!modules[@]}" | sort); do
    [[ $part == "${page}"_* && $part != *_route_view_* ]] || continue
    with=$(wasm_of "${modules[$entry]} ${modules[$part]}")
    label=${part#"${page}"_}
    printf '    %-34s %4d KB\n' "/$page with ${label%_*} open" "$(kb "$with")"
    [ "$with" -gt "$largest" ] && largest=$with
  done
done
printf '    largest: %d KB of wasm (target %d KB, ceiling %d KB)\n' "$(kb "$largest")" "$TARGET_KB" "$CEILING_KB"
if [ "$largest" -gt $((CEILING_KB * 1024)) ]; then
  echo "a page's wasm is over the ${CEILING_KB} KB gzip ceiling" >&2
  exit 1
elif [ "$largest" -gt $((TARGET_KB * 1024)) ]; then
  echo "WARNING: a page's wasm is $(kb $((largest - TARGET_KB * 1024))) KB over its ${TARGET_KB} KB gzip target" >&2
fi
