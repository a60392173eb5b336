#!/usr/bin/env bash
# Prints what the browser downloads, gzip: the console's one wasm module (the
# islands of every page; the rest of a page is server-rendered HTML) and its
# JavaScript glue. The build fails when the wasm passes the 350 KB budget.
#   scripts/bundle-size.sh PKG_DIR NAME
set -euo pipefail
PKG=$1
NAME=$2
LIMIT_KB=350

gz() { stat -c %s "$1.gz"; }
kb() { echo $((($1 + 512) / 1024)); }

wasm=$(gz "$PKG/$NAME.wasm")
js=$(gz "$PKG/$NAME.js")
printf '==> wasm bundle (gzip): %d KB of wasm for the whole console (limit %d KB); JavaScript glue %d KB\n' \
  "$(kb "$wasm")" "$LIMIT_KB" "$(kb "$js")"
if [ "$wasm" -gt $((LIMIT_KB * 1024)) ]; then
  echo "the wasm bundle is over its ${LIMIT_KB} KB gzip limit" >&2
  exit 1
fi
