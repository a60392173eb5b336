#!/usr/bin/env bash
# Release build of the whole console: the wasm bundle (cargo + wasm-bindgen +
# wasm-opt), the site directory Leptos.toml names, and the server binary.
# Cargo skips what is up to date; the post-processing steps skip when their
# output is newer than their input.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

NAME=$(leptos_conf output-name)
SITE=$(leptos_conf site-root)
PKG="$SITE/$(leptos_conf site-pkg-dir)"
TARGET="${CARGO_TARGET_DIR:-target}"
WASM_IN="$TARGET/wasm32-unknown-unknown/wasm-release/frontend.wasm"

echo "==> wasm bundle"
cargo build --locked --profile wasm-release -p frontend --lib --target wasm32-unknown-unknown

mkdir -p "$PKG"
if [ ! -f "$PKG/$NAME.wasm" ] || [ "$WASM_IN" -nt "$PKG/$NAME.wasm" ]; then
  "$WASM_BINDGEN" --target web --no-typescript --out-dir "$PKG" --out-name "$NAME" "$WASM_IN"
  "$WASM_OPT" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
    "$PKG/${NAME}_bg.wasm" -o "$PKG/$NAME.wasm"
  rm -f "$PKG/${NAME}_bg.wasm"
fi
cp style/main.css "$PKG/$NAME.css"
cp -r public/. "$SITE/"
# Served as-is to browsers that accept gzip, instead of compressing per request.
for f in "$PKG/$NAME.wasm" "$PKG/$NAME.js" "$PKG/$NAME.css"; do
  [ -f "$f.gz" ] && [ "$f.gz" -nt "$f" ] || gzip -9 -k -f "$f"
done

echo "==> server"
cargo build --locked --release -p server

raw=$(stat -c %s "$PKG/$NAME.wasm")
gz=$(stat -c %s "$PKG/$NAME.wasm.gz")
# The target is 350 KB gzip; the build fails only past a hard ceiling so an
# overshoot is seen at every build without blocking all work (see README).
TARGET_KB=350
CEILING_KB=${PADDLECLOUD_WASM_CEILING_KB:-450}
printf '==> wasm bundle %s: %d KB raw, %d KB gzip (target %d KB gzip, ceiling %d KB)\n' \
  "$PKG/$NAME.wasm" $((raw / 1024)) $((gz / 1024)) "$TARGET_KB" "$CEILING_KB"
if [ "$gz" -gt $((CEILING_KB * 1024)) ]; then
  echo "wasm bundle is over its ${CEILING_KB} KB gzip ceiling" >&2
  exit 1
elif [ "$gz" -gt $((TARGET_KB * 1024)) ]; then
  echo "WARNING: wasm bundle is $((gz / 1024 - TARGET_KB)) KB over its ${TARGET_KB} KB gzip target" >&2
fi
