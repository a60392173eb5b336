#!/usr/bin/env bash
# Runs the tests against the release build that scripts/build.sh made.
#   scripts/test.sh        Rust tests (SQLite + a throwaway PostgreSQL), the real Kubernetes node's, the Python SDK, the API contract, the short load and fault run, then Playwright
#   scripts/test.sh rust   only the Rust tests but the real node's
#   scripts/test.sh kube-node  only the real node's checks and the tests named on_a_real_node (root: containerd, CNI, kube-proxy, DNS)
#   scripts/test.sh kube-bench the real node's benchmarks (not in `all`: they only print figures)
#   scripts/test.sh sdk    only the Python SDK's tests (against the release binary)
#   scripts/test.sh api    only the REST API against its OpenAPI document (schemathesis, fixed seed)
#   scripts/test.sh e2e    only the Playwright suite
#   scripts/test.sh load   only the short load and fault run (SQLite and a throwaway PostgreSQL: kill -9, PostgreSQL restarted)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh
# The Python with paddlepaddle (scripts/setup.sh test) runs serving replicas
# and exports the test model; the serving tests must run, not skip.
export PADDLECLOUD_SERVING_PYTHON="${PADDLECLOUD_SERVING_PYTHON:-$TOOLS/pyvenv/bin/python}"
export PADDLECLOUD_REQUIRE_PADDLE=1

rust_tests() {
  say "Rust tests: building them (scripts/rust-tests.sh: the release build's libraries, the test code at opt-level 0)"
  scripts/shared-features.sh
  scripts/rust-tests.sh build
  say "Rust tests: running them"
  # With PostgreSQL started here, its tests must run: a skip would be a
  # silent pass. The Kubernetes tests are the real node's stage (below).
  # KUBECONFIG is dropped so that no test reaches a cluster this shell
  # happens to point at. The watchdog ends a test that hangs, naming it (and
  # what it waits on).
  env -u KUBECONFIG PADDLECLOUD_REQUIRE_POSTGRES=1 PADDLECLOUD_REQUIRE_PYTHON_WRITERS=1 PADDLECLOUD_REQUIRE_PROMETHEUS=1 \
    PADDLECLOUD_REQUIRE_JUPYTER=1 PADDLECLOUD_REQUIRE_OIDC=1 PADDLECLOUD_REQUIRE_LDAP=1 scripts/with-postgres.sh \
    scripts/test-watchdog.py -- scripts/rust-tests.sh run --skip on_a_real_node
}

# The `it` binary of scripts/rust-tests.sh (as rust_tests built it), only the tests
# named on_a_real_node, required to run: they skip only outside the node.
# One at a time: requests are what the scheduler counts, and the node has
# the machine's cores to give (fit-a-line's two trainers ask for 1 CPU each).
# Their output shown: they print what they measure (docs/testing.md, "On a real node").
# The console's own image first (deploy/Dockerfile's runtime stage from this
# build's binary and site; cached), which the node imports; PostgreSQL beside
# the node, on its address too, for the console deployed in it.
kube_node_tests() {
  say "A real Kubernetes node (containerd, CNI, kube-proxy, DNS): its checks with kubectl, then the console's tests on it"
  scripts/rust-tests.sh build   # up to date after the rust stage: cargo says Fresh
  scripts/console-image.sh build
  # shellcheck disable=SC2016 # expanded by the inner shell, inside the node
  scripts/kube-test-cluster.sh run sh -c 'scripts/kube-node/smoke.sh && \
    PADDLECLOUD_PG_ALSO_ON=$PADDLECLOUD_TEST_NODE_IP/24 PADDLECLOUD_REQUIRE_KUBE_NODE=1 PADDLECLOUD_REQUIRE_POSTGRES=1 \
    scripts/with-postgres.sh scripts/test-watchdog.py -- scripts/rust-tests.sh it on_a_real_node --skip benchmark_ \
    --test-threads 1 --nocapture'
}

# The node's benchmarks (tests named benchmark_…on_a_real_node: they print
# what docs/testing.md's "Measured on the real node" table shows), outside CI.
kube_bench() {
  say "The real node's benchmarks"
  scripts/rust-tests.sh build
  scripts/kube-test-cluster.sh run scripts/rust-tests.sh it benchmark_ --test-threads 1 --nocapture
}

sdk_tests() {
  say "Python SDK (standard library only; against the release binary)"
  PADDLECLOUD_BIN="${CARGO_TARGET_DIR:-target}/release/paddlecloud" PADDLECLOUD_REQUIRE_PYTHON_WRITERS=1 PADDLECLOUD_REQUIRE_JUPYTER=1 \
    python3 -m unittest discover -s sdk/python/tests
}

api_tests() {
  say "The REST API against its OpenAPI document (schemathesis, seed 1)"
  scripts/api-contract.sh "${CARGO_TARGET_DIR:-target}/release/paddlecloud"
}

load_tests() {
  say "Load and faults, short (followers, metric writers, pages; kill -9; PostgreSQL restarted)"
  python3 scripts/load_faults.py --short --binary "${CARGO_TARGET_DIR:-target}/release/paddlecloud" \
    --site "$(leptos_conf site-root)"
}

e2e_tests() {
  say "Playwright (Debian chromium; hydrated and JavaScript-off projects)"
  (cd end2end && npx playwright test)
}

case "${1:-all}" in
  rust) rust_tests ;;
  sdk) sdk_tests ;;
  api) api_tests ;;
  e2e) e2e_tests ;;
  load) load_tests ;;
  kube-node) kube_node_tests ;;
  kube-bench) kube_bench ;;
  all) rust_tests; kube_node_tests; sdk_tests; api_tests; load_tests; e2e_tests ;;
  *) echo "usage: $0 [rust|kube-node|kube-bench|sdk|api|load|e2e|all]" >&2; exit 2 ;;
esac
