# Shared settings for the scripts; sourced, not run.
# Where downloaded tools are kept between clones.
TOOLS="${PADDLECLOUD_TOOLS:-$HOME/.cache/paddlecloud}"
BINARYEN_VERSION=132
WASM_BINDGEN="$TOOLS/bin/wasm-bindgen"
WASM_OPT="$TOOLS/binaryen-$BINARYEN_VERSION/node_modules/.bin/wasm-opt"

# The wasm-bindgen version the bundle was compiled against (CLI and library must match).
wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock
}

# A key of Leptos.toml's [package.metadata.leptos] table, e.g. leptos_conf output-name.
leptos_conf() {
  sed -n "s/^$1 *= *\"\(.*\)\"/\1/p" Leptos.toml | head -n 1
}

# A milestone, on stderr (scripts that print results on stdout keep them
# clean); its time also goes to $PADDLECLOUD_STAGES when that names a file,
# from which .ci/run prints where the time went (scripts/stage-times.sh).
say() {
  printf '\033[1m==> %s\033[0m\n' "$*" >&2
  if [ -n "${PADDLECLOUD_STAGES:-}" ]; then
    printf '%s\t%s\n' "$(date +%s)" "$*" >>"$PADDLECLOUD_STAGES"
  fi
}

# Phase timings: `tick` starts a clock, `tock WHAT` prints the time since.
tick() { t0=${EPOCHREALTIME//[.,]/}; }
tock() {
  local us=$((${EPOCHREALTIME//[.,]/} - t0))
  printf '    %s: %d.%01d s\n' "$1" $((us / 1000000)) $((us % 1000000 / 100000)) >&2
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs the Debian packages that are missing.
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq
  # The mirror has once answered with a missing archive; a retry got it.
  for attempt in 1 2 3; do
    if as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
      return 0
    fi
    say "apt-get install failed (attempt $attempt), retrying"
    sleep 5
    as_root apt-get update -qq || true
  done
  return 1
}
