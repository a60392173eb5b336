# Shared settings for the scripts; sourced, not run.
# Where downloaded tools are kept between clones.
TOOLS="${PADDLECLOUD_TOOLS:-$HOME/.cache/paddlecloud}"
BINARYEN_VERSION=132
WASM_BINDGEN="$TOOLS/bin/wasm-bindgen"
WASM_OPT="$TOOLS/binaryen-$BINARYEN_VERSION/node_modules/.bin/wasm-opt"
# Splits the bundle at the lazy routes (tools/wasm-split, installed by setup.sh).
WASM_SPLIT="$TOOLS/bin/paddlecloud-wasm-split"

# The wasm-bindgen version the bundle was compiled against (CLI and library must match).
wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock
}

# A key of Leptos.toml's [package.metadata.leptos] table, e.g. leptos_conf output-name.
leptos_conf() {
  sed -n "s/^$1 *= *\"\(.*\)\"/\1/p" Leptos.toml | head -n 1
}
