#!/usr/bin/env bash
# Installs what building and testing the console needs, skipping what is
# already there. Tools live under ~/.cache/paddlecloud so a fresh clone reuses them.
#   scripts/setup.sh build   wasm target, wasm-bindgen (= Cargo.lock's version), wasm-opt 132, python3-venv
#   scripts/setup.sh test    the above + Debian chromium, PostgreSQL and slapd + end2end and scripts/oidc-provider npm packages
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

build_tools() {
  command -v cargo >/dev/null || { echo "Rust is required: https://rustup.rs" >&2; exit 1; }
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    say "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
  command -v npm >/dev/null || apt_install nodejs npm
  # Environments are virtualenvs made with the console's Python.
  python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3 python3-venv

  local want
  want=$(wasm_bindgen_version)
  if [ "$("$WASM_BINDGEN" --version 2>/dev/null)" != "wasm-bindgen $want" ]; then
    say "installing wasm-bindgen-cli $want into $TOOLS (about 3 minutes)"
    # Not --locked: its lockfile names a webpki-roots release the registry lacks.
    cargo install --quiet --root "$TOOLS" wasm-bindgen-cli --version "$want" --force
  fi

  # Debian's binaryen 108 silently breaks wasm-bindgen 0.2.130 output (the page
  # never hydrates); the npm build of 132 is known good.
  if [ "$("$WASM_OPT" --version 2>/dev/null | awk '{print $3}')" != "$BINARYEN_VERSION" ]; then
    say "installing wasm-opt $BINARYEN_VERSION (npm binaryen) into $TOOLS"
    mkdir -p "$TOOLS/binaryen-$BINARYEN_VERSION"
    npm install --silent --no-audit --no-fund --prefix "$TOOLS/binaryen-$BINARYEN_VERSION" "binaryen@$BINARYEN_VERSION.0.0"
  fi
}

# A venv under $TOOLS with the packages a requirements file pins, rebuilt
# when the file changes.
venv_from() {
  local venv="$TOOLS/$1" requirements="$2" stamp
  stamp=$(sha256sum "$requirements" | cut -c1-16)
  if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$stamp" ]; then
    say "installing $requirements into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    echo "$stamp" >"$venv/.requirements"
  fi
}

test_tools() {
  build_tools
  # prometheus: a real server for the Kubernetes resource charts tests.
  apt_install chromium postgresql python3 python3-venv prometheus
  # slapd: a throw-away LDAP directory the sign-in tests start
  # (scripts/ldap-test-server.sh). Preseeded so that its install makes no
  # directory of its own and starts no system slapd.
  if ! dpkg -s slapd >/dev/null 2>&1; then
    echo "slapd slapd/no_configuration boolean true" | as_root debconf-set-selections
  fi
  apt_install slapd ldap-utils
  if [ ! -d end2end/node_modules/@playwright/test ] || [ end2end/package-lock.json -nt end2end/node_modules/.package-lock.json ]; then
    say "installing end2end npm packages"
    (cd end2end && npm ci --silent --no-audit --no-fund)
  fi
  # oidc-provider: a real OpenID Connect provider the sign-in tests start
  # (scripts/oidc-provider/provider.mjs, checked by its check.py).
  if [ ! -d scripts/oidc-provider/node_modules/oidc-provider ] || [ scripts/oidc-provider/package-lock.json -nt scripts/oidc-provider/node_modules/.package-lock.json ]; then
    say "installing scripts/oidc-provider npm packages"
    (cd scripts/oidc-provider && npm ci --silent --no-audit --no-fund)
  fi
  # The real Python writers and clients the tests drive (tensorboardX,
  # VisualDL, mlflow-skinny, paddlepaddle, jupyterlab).
  venv_from pyvenv scripts/python-requirements.txt
  # schemathesis, which checks the REST API against its OpenAPI document
  # (scripts/api-contract.sh): its own venv, so its pins never meet those above.
  venv_from schemathesis scripts/api-requirements.txt
  # A real Kubernetes for the Kubernetes backend's tests: the control plane,
  # kubelet and kube-proxy built once from Debian's source package into
  # ~/.cache (about 12 minutes), the node's packages and images.
  if [ "$(id -u)" = 0 ]; then
    scripts/kube-test-cluster.sh build
  else
    say "not root: the real node (scripts/kube-test-cluster.sh) cannot run here; make test will say so"
  fi
}

say "setup for ${1:-build}: what is missing is installed (tools kept under $TOOLS)"
case "${1:-build}" in
  build) build_tools ;;
  test) test_tools ;;
  *) echo "usage: $0 build|test" >&2; exit 2 ;;
esac
