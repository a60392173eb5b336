#!/usr/bin/env bash
# Release build of the whole console: the wasm bundle (cargo, wasm-bindgen,
# wasm-opt: one module with every island), the site directory Leptos.toml names,
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
# The target_features and producers sections are of no use to a browser.
WASM_OPT_FLAGS=(-Oz --enable-bulk-memory --enable-nontrapping-float-to-int
  --strip-target-features --strip-producers)

say "wasm bundle"
cargo build --locked --profile wasm-release -p frontend --lib --target wasm32-unknown-unknown

mkdir -p "$PKG"
if [ ! -f "$PKG/$NAME.wasm" ] || [ "$WASM_IN" -nt "$PKG/$NAME.wasm" ]; then
  "$WASM_BINDGEN" --target web --no-typescript --out-dir "$PKG" --out-name "$NAME" "$WASM_IN"
  "$WASM_OPT" "${WASM_OPT_FLAGS[@]}" "$PKG/${NAME}_bg.wasm" -o "$PKG/$NAME.wasm"
  rm -f "$PKG/${NAME}_bg.wasm"
fi
cp style/main.css "$PKG/$NAME.css"
cp -r public/. "$SITE/"
# Served as-is to browsers that accept gzip, instead of compressing per request.
for f in "$PKG"/*.wasm "$PKG"/*.js "$PKG/$NAME.css"; do
  [ -f "$f.gz" ] && [ "$f.gz" -nt "$f" ] || gzip -9 -k -f "$f"
done

say "server"
cargo build --locked --release -p server

scripts/bundle-size.sh "$PKG" "$NAME"
