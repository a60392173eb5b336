#!/usr/bin/env bash
# Release build of the whole console: the wasm bundle (cargo, then split at the
# lazy routes, wasm-bindgen, wasm-opt), the site directory Leptos.toml names,
# and the server binary. Cargo skips what is up to date; the post-processing
# steps skip when their output is newer than their input.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

NAME=$(leptos_conf output-name)
SITE=$(leptos_conf site-root)
PKG="$SITE/$(leptos_conf site-pkg-dir)"
TARGET="${CARGO_TARGET_DIR:-target}"
WASM_IN="$TARGET/wasm32-unknown-unknown/wasm-release/frontend.wasm"
SPLIT_DIR="$TARGET/wasm-split"
# The target_features and producers sections are of no use to a browser, and
# with ~250 modules they came to ~20 KB of a page's download.
WASM_OPT_FLAGS=(-Oz --enable-bulk-memory --enable-nontrapping-float-to-int
  --strip-target-features --strip-producers)

echo "==> wasm bundle"
cargo build --locked --profile wasm-release -p frontend --lib --target wasm32-unknown-unknown

mkdir -p "$PKG"
if [ ! -f "$PKG/$NAME.wasm" ] || [ "$WASM_IN" -nt "$PKG/$NAME.wasm" ]; then
  # What cargo-leptos --split does: split the raw module at the lazy routes
  # (the pages), then wasm-bindgen the main module, then shrink every module.
  rm -rf "$SPLIT_DIR"
  rm -f "$PKG"/split_*.wasm* "$PKG"/chunk_*.wasm* "$PKG"/__wasm_split*
  mkdir -p "$SPLIT_DIR"
  "$WASM_SPLIT" "$WASM_IN" "$PKG" "$SPLIT_DIR/main.wasm" "$NAME"
  # The split modules import the main module's table, memory and stack
  # pointer, which wasm-bindgen would otherwise drop from its exports.
  "$WASM_BINDGEN" --target web --no-typescript --keep-lld-exports \
    --out-dir "$PKG" --out-name "$NAME" "$SPLIT_DIR/main.wasm"
  "$WASM_OPT" "${WASM_OPT_FLAGS[@]}" "$PKG/${NAME}_bg.wasm" -o "$PKG/$NAME.wasm"
  rm -f "$PKG/${NAME}_bg.wasm"
  # ~240 small modules: one wasm-opt per core at a time.
  find "$PKG" -maxdepth 1 \( -name 'split_*.wasm' -o -name 'chunk_*.wasm' \) -print0 |
    xargs -0 -r -P "$(nproc)" -I{} "$WASM_OPT" "${WASM_OPT_FLAGS[@]}" {} -o {}
fi
cp style/main.css "$PKG/$NAME.css"
cp -r public/. "$SITE/"
# Served as-is to browsers that accept gzip, instead of compressing per request.
for f in "$PKG"/*.wasm "$PKG"/*.js "$PKG/$NAME.css"; do
  [ -f "$f.gz" ] && [ "$f.gz" -nt "$f" ] || gzip -9 -k -f "$f"
done

echo "==> server"
cargo build --locked --release -p server

scripts/bundle-size.sh "$PKG" "$NAME"
