#!/usr/bin/env bash
# A real, throwaway Kubernetes control plane for the backend's tests, without
# Docker or kind: etcd (Debian's etcd-server) + kube-apiserver,
# kube-controller-manager and kube-scheduler 1.20.2 built once from Debian
# bookworm's `kubernetes` source package with bullseye's Go 1.15.
#   scripts/kube-test-cluster.sh build              build the binaries into $TOOLS (once, ~8 min, 2 cores)
#   scripts/kube-test-cluster.sh build-node         the same plus kubelet and kube-proxy (scripts/kube-node.sh: ~5 min more)
#   scripts/kube-test-cluster.sh run COMMAND [ARGS...]
#       starts the cluster on free loopback ports in a temp dir, exports
#       KUBECONFIG and PADDLECLOUD_TEST_KUBECONFIG (token user in system:masters),
#       runs COMMAND, stops what it started. If KUBECONFIG already points at a
#       reachable cluster (kind, k3d...), uses that one instead.
# No kubelet runs: tests play the node (create a Node with status.allocatable,
# bind or let the scheduler bind pods, patch pod status, serve the kubelet API
# over TLS at the Node's InternalIP and status.daemonEndpoints.kubeletEndpoint.Port).
# A default StorageClass, test-hostpath, has the controller manager provision a
# claim without storageClassName as a hostPath volume under /tmp/hostpath_pv/
# on this machine (removed with its claim), as a cluster with a default class would.
# Environment: PADDLECLOUD_TOOLS (where `build` installs; default ~/.cache/paddlecloud),
# PADDLECLOUD_KUBE_KEEP=1 keeps `run`'s temp dir (logs, certs, kubeconfig) and
# the dirs of the volumes still provisioned.
# COMMAND runs in the caller's directory; messages and timings go to stderr.
set -euo pipefail
# shellcheck source=scripts/env.sh disable=SC1091
source "$(dirname "$0")/env.sh"

K8S_VERSION=1.20.2
GO_PACKAGES=(golang-1.15-go golang-1.15-src)    # from bullseye: Kubernetes 1.20 wants Go 1.15
KUBE_DIR="$TOOLS/kubernetes-$K8S_VERSION"
BIN="$KUBE_DIR/bin"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
# A real node's (scripts/kube-node.sh), from the same source.
NODE_BINARIES=(kubelet kube-proxy)



have_binaries() {   # [BINARY...]: all there (default: the control plane's)
  local b
  [ $# -gt 0 ] || set -- "${BINARIES[@]}"
  for b in "$@"; do [ -x "$BIN/$b" ] || return 1; done
}

# Needed by `run` whatever cluster it uses; openssl makes the certs, python3 finds free ports.
runtime_packages() { apt_install etcd-server openssl curl python3 procps; }

build() {   # [BINARY...] (default: the control plane's): those missing from $BIN, in one make
  [ $# -gt 0 ] || set -- "${BINARIES[@]}"
  local asked=("$@") wanted=() b
  runtime_packages
  apt_install make rsync dpkg-dev
  mkdir -p "$TOOLS"
  # Two test runs starting at once must not both build.
  exec 9>"$TOOLS/.kubernetes-build.lock"
  flock 9
  for b in "${asked[@]}"; do [ -x "$BIN/$b" ] || wanted+=("$b"); done
  if [ ${#wanted[@]} -eq 0 ]; then
    say "Kubernetes $K8S_VERSION ${asked[*]} already in $BIN"
    exec 9>&-   # or the cluster's processes would inherit the lock
    return 0
  fi
  # Built next to the result (not in /tmp, which may be a small tmpfs): 2.5 GB
  # while building, removed after, whether the build worked or not.
  local total=${EPOCHREALTIME//[.,]/}
  work="$TOOLS/kubernetes-build.tmp"   # global: the EXIT trap reads it
  rm -rf "$work" "$KUBE_DIR.tmp"
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/apt/lists/partial" "$work/dl"

  # A private apt configuration (own sources and lists dirs, /etc/apt untouched)
  # on the mirror the system already uses: bookworm's sources for Kubernetes,
  # bullseye's binaries for Go 1.15 (bookworm only has Go 1.19, too new for 1.20's vendor tree).
  say "fetching the kubernetes source package (bookworm) and Go 1.15 (bullseye)"
  tick
  local mirror
  # shellcheck disable=SC2016 # $(REPO_URI) is apt's placeholder, not a shell expansion
  mirror=${PADDLECLOUD_DEBIAN_MIRROR:-$(apt-get indextargets --format '$(REPO_URI)' 'Label: Debian' | sed -n 1p)}
  mirror=${mirror:-http://deb.debian.org/debian/}
  printf 'Types: %s\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n' \
    deb-src "$mirror" bookworm deb "$mirror" bullseye >"$work/apt/kube-build.sources"
  local apt_opts=(-qq -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/apt"
    -o "Dir::State::Lists=$work/apt/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
    -o "APT::Sandbox::User=$(id -un)")
  apt-get "${apt_opts[@]}" update
  (cd "$work/dl" && apt-get "${apt_opts[@]}" download "${GO_PACKAGES[@]}" \
    && apt-get "${apt_opts[@]}" source --download-only kubernetes)
  tock "download ($(du -sh "$work/dl" | cut -f1))"

  # Go unpacked, not installed: nothing system-wide changes.
  tick
  for deb in "$work"/dl/*.deb; do dpkg-deb -x "$deb" "$work/go"; done
  # Applies Debian's patches (kubectl output escaping, CVE-2021-25743). Quiet: it
  # cannot check the .dsc's signature without debian-keyring, but apt checked its hash.
  (cd "$work" && dpkg-source -x dl/kubernetes_*.dsc src >unpack.log 2>&1) || { cat "$work/unpack.log" >&2; exit 1; }
  tock "unpack"

  say "building ${wanted[*]} (about 8 minutes on 2 cores for the control plane, 5 for a node)"
  tick
  local goroot="$work/go/usr/lib/go-1.15"
  # Offline: everything is in vendor/. CGO off: static binaries, no C toolchain needed.
  # The tarball carries its version (export-subst), so no git is needed either.
  if ! (cd "$work/src" && env PATH="$goroot/bin:$PATH" GOROOT="$goroot" GOPATH="$work/gopath" \
    GOPROXY=off GOFLAGS=-mod=vendor CGO_ENABLED=0 HOME="$work" \
    make WHAT="${wanted[*]/#/cmd/}" >"$work/make.log" 2>&1); then
    tail -n 40 "$work/make.log" >&2
    exit 1
  fi
  tock "make"
  local built="$work/src/_output/bin"
  "$built/${wanted[0]}" --version | grep -qx "Kubernetes v$K8S_VERSION" \
    || { echo "built $("$built/${wanted[0]}" --version), wanted v$K8S_VERSION" >&2; exit 1; }
  # Each binary in place whole (copied beside, then renamed): a `run` reading
  # $BIN meanwhile never sees half a file.
  mkdir -p "$BIN"
  for b in "${wanted[@]}"; do
    cp "$built/$b" "$BIN/.$b.tmp"
    mv "$BIN/.$b.tmp" "$BIN/$b"
  done
  rm -rf "$work"
  t0=$total tock "build total"
  say "installed into $BIN ($(du -sh "$KUBE_DIR" | cut -f1)); build tree removed"
  trap - EXIT
  exec 9>&-
}

# The user's KUBECONFIG answers? (kubectl when there is one, else any HTTP
# answer from the first server the file names.)
reachable() {
  local kubectl server
  kubectl=$(command -v kubectl || true)
  [ -n "$kubectl" ] || { [ -x "$BIN/kubectl" ] && kubectl="$BIN/kubectl"; }
  if [ -n "$kubectl" ]; then
    "$kubectl" get --raw=/version --request-timeout=5s >/dev/null 2>&1
  else
    server=$(sed -n 's/^ *server: *//p' "${KUBECONFIG%%:*}" 2>/dev/null | head -n 1)
    [ -n "$server" ] && curl -ks --max-time 5 -o /dev/null "$server/version"
  fi
}

free_ports() {   # N distinct free loopback ports, bound together so they differ
  python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))' "$1"
}

names=()   # the components started, in order...
pids=()    # ...and their process ids
dir=""
api=""     # https://127.0.0.1:PORT
token=""   # the bearer token of the kubeconfig's user
cmd=""     # COMMAND's process id while it runs...
cmd_line=""  # ...and its words
# With a parent-death signal, the components die with this script even when
# it is SIGKILLed (a CI timeout) and no trap can run.
pdeath=()
if [[ $(setpriv --help 2>/dev/null) == *--pdeathsig* ]]; then pdeath=(setpriv --pdeathsig KILL --); fi

alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $s != Z* ]]; }
any_alive() {
  local pid
  for pid in "${pids[@]}"; do if alive "$pid"; then return 0; fi; done
  return 1
}
dead() {   # prints the names of the components that are no longer running
  local i
  for i in "${!pids[@]}"; do alive "${pids[i]}" || echo "${names[i]}"; done
}
logs() {   # the last lines of the logs of NAME... (all components by default)
  local name
  [ $# -gt 0 ] || set -- "${names[@]}"
  for name in "$@"; do
    printf '\n--- last lines of %s.log ---\n' "$name" >&2
    tail -n "${LOG_LINES:-25}" "$dir/$name.log" >&2 || true
  done
}

# The dirs of the volumes the default StorageClass provisioned that are still
# there (a namespace the tests deleted last may not have been reclaimed yet):
# they go with the cluster, not left in /tmp/hostpath_pv.
remove_provisioned() {
  local paths path
  if [ -z "$api" ] || [ ! -f "$dir/ca.crt" ]; then return 0; fi
  paths=$(curl -fs --max-time 5 --cacert "$dir/ca.crt" -H "Authorization: Bearer $token" \
    "$api/api/v1/persistentvolumes" | python3 -c 'import json, sys
for pv in json.load(sys.stdin)["items"]:
    spec = pv["spec"]
    path = spec.get("hostPath", {}).get("path", "")
    if spec.get("storageClassName") == "test-hostpath" and path.startswith("/tmp/hostpath_pv/"):
        print(path)' 2>/dev/null) || return 0
  while IFS= read -r path; do
    if [ -n "$path" ]; then rm -rf -- "$path"; fi
  done <<<"$paths"
}

stop() {
  local i pid
  trap - INT TERM HUP
  # Signalled while COMMAND runs: COMMAND got the signal too (on_signal), and
  # has 10 s to finish (its cleanup may still use the cluster) before a KILL.
  if [ -n "$cmd" ]; then
    for _ in $(seq 100); do alive "$cmd" || break; sleep 0.1; done
    if alive "$cmd"; then
      say "'${cmd_line}' still running 10 s after the signal: killing it"
      kill -9 "$cmd" 2>/dev/null || true
    fi
  fi
  t0=${EPOCHREALTIME//[.,]/}
  if [ "${PADDLECLOUD_KUBE_KEEP:-}" != 1 ]; then remove_provisioned; fi
  # Reverse order: scheduler and controllers, then the apiserver, then etcd.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done
  for _ in $(seq 50); do any_alive || break; sleep 0.1; done
  for pid in "${pids[@]}"; do if alive "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ ${#pids[@]} -gt 0 ]; then tock "stopped"; fi
  if [ -z "$dir" ]; then return; fi
  if [ "${PADDLECLOUD_KUBE_KEEP:-}" = 1 ]; then
    rm -f "$dir/owner.pid"
    say "kept $dir"
  else
    rm -rf "$dir"
  fi
}

on_signal() {   # SIGNAL STATUS: passes SIGNAL on to COMMAND, then exits (the EXIT trap stops the rest)
  if [ -n "$cmd" ]; then kill -"$1" "$cmd" 2>/dev/null || true; fi
  exit "$2"
}

api_ok() {   # PATH: the apiserver answers it with a 2xx
  curl -fs --max-time 5 -o /dev/null --cacert "$dir/ca.crt" -H "Authorization: Bearer $token" "$api$1"
}

start() {   # NAME COMMAND...: in the background, logging to $dir/NAME.log
  local name=$1
  shift
  "${pdeath[@]}" "$@" >"$dir/$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
}

# Polls until CHECK succeeds (60 s); fails early, with the components' logs,
# when one of them has exited.
wait_for() {
  local what=$1 deadline=$((SECONDS + 60)) gone
  shift
  until "$@"; do
    gone=$(dead)
    if [ -n "$gone" ]; then
      echo "waiting for $what: $(echo "$gone" | paste -sd ' ') exited" >&2
      logs
      exit 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "timed out after 60 s waiting for $what" >&2
      logs
      exit 1
    fi
    sleep 0.2
  done
}

run() {
  [ $# -gt 0 ] || { echo "usage: $0 run COMMAND [ARGS...]" >&2; exit 2; }
  if [ -n "${KUBECONFIG:-}" ] && reachable; then
    say "using the cluster of KUBECONFIG=$KUBECONFIG"
    export PADDLECLOUD_TEST_KUBECONFIG=$KUBECONFIG
    exec "$@"
  fi
  [ -z "${KUBECONFIG:-}" ] || say "KUBECONFIG=$KUBECONFIG does not answer; starting a throwaway cluster"
  have_binaries || build
  runtime_packages

  local start_all=${EPOCHREALTIME//[.,]/} etcd_port peer_port api_port status=0 gone old
  # The temp dirs of runs that were SIGKILLed (their components died with them).
  for old in "${TMPDIR:-/tmp}"/paddlecloud-kube.*/owner.pid; do
    if [ -f "$old" ] && ! alive "$(cat "$old")"; then rm -rf "$(dirname "$old")" 2>/dev/null || true; fi
  done
  dir=$(mktemp -d -t paddlecloud-kube.XXXXXX)
  echo $$ >"$dir/owner.pid"
  trap stop EXIT
  trap 'on_signal INT 130' INT
  trap 'on_signal TERM 143' TERM
  trap 'on_signal HUP 129' HUP
  read -r etcd_port peer_port api_port <<<"$(free_ports 3)"
  api="https://127.0.0.1:$api_port"

  # Certificates: a CA and an apiserver serving cert it signs (a self-signed
  # leaf would be refused by webpki/rustls), plus the service-account key.
  tick
  openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj /CN=paddlecloud-test-ca \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver \
    -keyout "$dir/apiserver.key" -out "$dir/apiserver.csr" 2>/dev/null
  openssl x509 -req -in "$dir/apiserver.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 7 -out "$dir/apiserver.crt" -extfile <(printf '%s\n' 'basicConstraints=CA:FALSE' \
      'keyUsage=digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth' \
      'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc') 2>/dev/null
  openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
  token=$(openssl rand -hex 24)
  # The token user is in system:masters: RBAC allows it everything.
  echo "$token,paddlecloud-test,paddlecloud-test,\"system:masters\"" >"$dir/tokens.csv"
  cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: paddlecloud-test
  cluster:
    server: $api
    certificate-authority-data: $(base64 -w0 <"$dir/ca.crt")
users:
- name: paddlecloud-test
  user:
    token: $token
contexts:
- name: paddlecloud-test
  context: {cluster: paddlecloud-test, user: paddlecloud-test, namespace: default}
current-context: paddlecloud-test
EOF
  chmod 600 "$dir/kubeconfig" "$dir/tokens.csv"
  tock "certificates"

  tick
  start etcd etcd --name paddlecloud-test --data-dir "$dir/etcd" --logger zap \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "paddlecloud-test=http://127.0.0.1:$peer_port"
  wait_for etcd curl -fs --max-time 5 -o /dev/null "http://127.0.0.1:$etcd_port/health"
  tock "etcd ready"

  # --insecure-port=0: 1.20 still opens an unauthenticated :8080 by default.
  # No --kubelet-certificate-authority: the apiserver then skips verifying the
  # kubelet's serving cert, so the tests' fake kubelet may use any self-signed
  # one; nor a --kubelet-client-certificate: it presents none.
  # --endpoint-reconciler-type none: the "kubernetes" Service's Endpoints may not
  # be a loopback address (an error every 10 s otherwise); nothing here uses them.
  # TTLAfterFinished (Job ttlSecondsAfterFinished) is alpha in 1.20, on by default from 1.21.
  # Admission: ServiceAccount off (pods would wait for each namespace's default
  # ServiceAccount); TaintNodesByCondition off (it taints every new Node
  # not-ready, and with no kubelet nothing would ever lift the taint).
  tick
  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" --insecure-port 0 \
    --tls-cert-file "$dir/apiserver.crt" --tls-private-key-file "$dir/apiserver.key" --cert-dir "$dir" \
    --token-auth-file "$dir/tokens.csv" --authorization-mode RBAC \
    --service-account-key-file "$dir/sa.key" --service-account-signing-key-file "$dir/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range 10.96.0.0/16 --allow-privileged \
    --disable-admission-plugins ServiceAccount,TaintNodesByCondition \
    --kubelet-preferred-address-types InternalIP --endpoint-reconciler-type none \
    --feature-gates TTLAfterFinished=true
  wait_for "kube-apiserver /readyz" api_ok /readyz
  tock "kube-apiserver ready"

  # The default StorageClass, created while the controllers start (it needs
  # only the apiserver; kubectl takes a few tenths of a second). Its
  # provisioner is the controller manager's hostPath one (--enable-hostpath-provisioner):
  # each claim gets a fresh /tmp/hostpath_pv/UUID on this machine, deleted
  # with the claim (the hostPath deleter removes only what is under /tmp).
  local storage_class
  "$BIN/kubectl" --kubeconfig "$dir/kubeconfig" --cache-dir "$dir/kubectl-cache" create -f - \
    >"$dir/storageclass.log" 2>&1 <<EOF &
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: test-hostpath
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
  storage_class=$!

  # Controllers: all the default ones (garbage collector, job, replicaset,
  # deployment, endpoints, serviceaccount + token, namespace, podgc...) but
  # nodelifecycle, which would mark the tests' kubelet-less Nodes NotReady
  # after 40 s without heartbeats and then evict their pods. The hostPath
  # provisioner on (the default StorageClass's); claims bound within a second
  # of a missed event rather than the default 15 s. Quotas recounted every
  # 2 s rather than 5 min: in the first seconds after start the apiserver's
  # quota admission can miss a pod (seen: a pod created 0.1 s after its
  # namespace's ResourceQuota, used stayed 0), and the controller recounts
  # on a pod's end or deletion, never on its creation.
  # Ports 0: no 0.0.0.0:10252/10257 (or 10251/10259) listeners to collide on.
  tick
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$dir/kubeconfig" --leader-elect=false \
    --port 0 --secure-port 0
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$dir/kubeconfig" \
    --controllers '*,-nodelifecycle' --use-service-account-credentials=false --leader-elect=false \
    --service-account-private-key-file "$dir/sa.key" --root-ca-file "$dir/ca.crt" \
    --feature-gates TTLAfterFinished=true --port 0 --secure-port 0 \
    --enable-hostpath-provisioner --pvclaimbinder-sync-period 1s --resource-quota-sync-period 2s
  # The serviceaccount controller creating default/default (in the default
  # namespace the apiserver made) shows the controllers run; the garbage
  # collector, last to be ready, says so in its log.
  wait_for "the default namespace's default serviceaccount" api_ok /api/v1/namespaces/default/serviceaccounts/default
  wait_for "the garbage collector's informers" \
    grep -q 'Garbage collector: all resource monitors have synced' "$dir/kube-controller-manager.log"
  if ! wait "$storage_class"; then
    echo "creating the default StorageClass failed:" >&2
    cat "$dir/storageclass.log" >&2
    exit 1
  fi
  tock "controllers ready, default StorageClass test-hostpath"
  t0=$start_all tock "start to ready"

  export KUBECONFIG="$dir/kubeconfig" PADDLECLOUD_TEST_KUBECONFIG="$dir/kubeconfig" PATH="$BIN:$PATH"
  say "throwaway Kubernetes $K8S_VERSION at $api (logs in $dir)"
  # In the background, so that a signal to this script alone (timeout(1), CI)
  # is acted on at once, and passed on to COMMAND. With the terminal as stdin
  # still, and SIGINT/SIGQUIT not ignored (unless they were when this script
  # started), which bash would otherwise do for a background command.
  cmd_line="$*"
  (
    trap - INT QUIT
    exec "$@"
  ) <&0 &
  cmd=$!
  wait "$cmd" || status=$?
  cmd=""
  gone=$(dead)
  if [ -n "$gone" ]; then
    echo "while '$*' ran, these exited: $(echo "$gone" | paste -sd ' ')" >&2
    # shellcheck disable=SC2086 # one name a line
    logs $gone
    [ "$status" != 0 ] || status=1
  fi
  exit "$status"
}

case "${1:-}" in
  build) build ;;
  # The control plane too where it is missing: one make builds both (a cold
  # cache saves the second download, unpack and the packages they share).
  build-node) build "${BINARIES[@]}" "${NODE_BINARIES[@]}" ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 build | build-node | run COMMAND [ARGS...]" >&2; exit 2 ;;
esac
