#!/usr/bin/env bash
# A real single-node Kubernetes 1.20.2 on this machine, for the Kubernetes
# backend's tests, with real containers and without Docker or kind: etcd
# (Debian's etcd-server), kube-apiserver, kube-controller-manager,
# kube-scheduler, a kubelet and kube-proxy (iptables), all built once from
# Debian bookworm's `kubernetes` source package with bullseye's Go 1.15;
# containerd + runc (Debian); pod networking (CNI bridge + host-local from
# Debian's containernetworking-plugins); and cluster DNS (dnsmasq, fed from
# the API by scripts/kube-node/kube-dns-lite.py: Debian has no CoreDNS).
# Images come from Debian packages and PyPI, never a registry (none is
# reachable here).
#   scripts/kube-test-cluster.sh build          the binaries (once, ~12 min on 2 cores), Debian packages, the images (~2 min once)
#   scripts/kube-test-cluster.sh run COMMAND... cluster up, COMMAND, cluster down; exit code = COMMAND's
#   scripts/kube-test-cluster.sh smoke          run scripts/kube-node/smoke.sh (pods, logs, exec, OOM, pull errors, Services, DNS)
#   scripts/kube-test-cluster.sh up | down      by hand (state in $PADDLECLOUD_NODE_DIR, default /tmp/paddlecloud-node)
# `run` exports KUBECONFIG and PADDLECLOUD_TEST_KUBECONFIG (a token user in
# system:masters), PADDLECLOUD_TEST_KUBE_NODE, PADDLECLOUD_TEST_NODE_IMAGE and
# PADDLECLOUD_TEST_NODE_IP (server/tests/it/common/node.rs), and puts kubectl
# on PATH. A default StorageClass provisions claims as hostPath volumes under
# /tmp/hostpath_pv/ (removed with their claims).
# Needs root (namespaces, cgroups, iptables, a bridge). One node per machine:
# iptables and the bridge are the machine's (a lock says so). `down` undoes
# what `up` did: processes, mounts, cgroups, links, kube-proxy's chains, sysctls.
# Environment: PADDLECLOUD_TOOLS (default ~/.cache/paddlecloud), PADDLECLOUD_NODE_KEEP=1 keeps the state dir.
# Notes: scripts/kube-test-cluster.md.
set -euo pipefail
# shellcheck source=scripts/env.sh disable=SC1091
source "$(dirname "$0")/env.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
NODE_FILES=$HERE/kube-node

K8S_VERSION=1.20.2
GO_PACKAGES=(golang-1.15-go golang-1.15-src)    # from bullseye: Kubernetes 1.20 wants Go 1.15
KUBE_DIR="$TOOLS/kubernetes-$K8S_VERSION"
BIN="$KUBE_DIR/bin"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
IMAGES="$TOOLS/kube-node-images"
DIR=${PADDLECLOUD_NODE_DIR:-/tmp/paddlecloud-node}
D=$DIR/run     # certificates, kubeconfig, logs, pids
S=$DIR/state   # etcd, containerd, kubelet, CNI
NODE=paddlecloud-node
BRIDGE=pcnode0
NODE_IP=10.244.0.1   # the bridge's address: the node's InternalIP, DNS's listen address
POD_CIDR=10.244.0.0/24
SVC_CIDR=10.96.0.0/16
DNS_IP=10.96.0.10
DNS_PORT=1053
PAUSE_IMAGE=k8s.gcr.io/pause:3.2      # kubelet 1.20's default name, built here
BASE_IMAGE=localhost/paddlecloud/busybox:bookworm
# The sysctls the kubelet, kube-proxy and the bridge change: `down` puts them back.
SYSCTLS=(net.ipv4.ip_forward net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables
  vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)


need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "scripts/kube-test-cluster.sh needs root: containers need namespaces, cgroups, a bridge and iptables." >&2
    exit 1
  fi
}

packages() {
  apt_install containerd runc containernetworking-plugins iptables conntrack socat \
    mmdebstrap dnsmasq-base gcc libc6-dev etcd-server openssl curl python3 procps iproute2
}

# The inputs of the images: a change to any rebuilds them (not to this
# script's other parts).
images_stamp() {
  { cat "$NODE_FILES/pause.c" "$NODE_FILES/mkimage.py"; declare -f base_images; } | sha256sum | cut -c1-16
}
python_images_stamp() {   # the recipe without its comments
  { grep -v '^[[:space:]]*#' "$NODE_FILES/python-images.sh"; cat "$NODE_FILES/mkimage.py"; } | sha256sum | cut -c1-16
}

images() {
  base_images
  python_images
}

# The images the console's shipped environments name (PaddlePaddle's CPU
# image, Python's): from Debian packages and PyPI wheels, ~2 min, cached.
python_images() {
  local stamp work
  stamp=$(python_images_stamp)
  if [ "$(cat "$IMAGES/.stamp-python" 2>/dev/null)" = "$stamp" ]; then return 0; fi
  say "building the environments' images (PaddlePaddle CPU, Python) from Debian packages and PyPI"
  tick
  work=$(mktemp -d)
  "$NODE_FILES/python-images.sh" "$work"
  mkdir -p "$IMAGES"
  mv "$work/paddle.tar" "$work/python.tar" "$IMAGES/"
  echo "$stamp" >"$IMAGES/.stamp-python"
  rm -rf "$work"
  tock "images paddle, python ($(du -ch "$IMAGES/paddle.tar" "$IMAGES/python.tar" | tail -n 1 | cut -f1))"
}

base_images() {
  local stamp work
  stamp=$(images_stamp)
  if [ "$(cat "$IMAGES/.stamp" 2>/dev/null)" = "$stamp" ]; then return 0; fi
  say "building the node's images (pause, busybox) from Debian packages"
  tick
  work=$(mktemp -d)
  mkdir -p "$work/pause"
  gcc -Os -Wall -Werror -static -o "$work/pause/pause" "$NODE_FILES/pause.c"
  tar -C "$work/pause" --owner=0 --group=0 -cf "$work/pause.tar" pause
  # busybox-static (sh, wget, httpd...), glibc's getent and /etc/services:
  # small, and enough for the smoke checks and shell-command jobs.
  mmdebstrap --quiet --variant=extract --include=busybox-static,libc-bin,netbase \
    --extract-hook='for a in $("$1"/bin/busybox --list); do [ -e "$1/bin/$a" ] || [ -e "$1/usr/bin/$a" ] || ln -s busybox "$1/bin/$a"; done' \
    --extract-hook='printf "passwd: files\ngroup: files\nhosts: files dns\n" >"$1/etc/nsswitch.conf"; printf "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n" >"$1/etc/passwd"; printf "root:x:0:\nnogroup:x:65534:\n" >"$1/etc/group"; mkdir -p "$1/tmp" "$1/root"; chmod 1777 "$1/tmp"; rm -rf "$1"/usr/share/doc "$1"/usr/share/man "$1"/usr/share/locale "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
    bookworm "$work/busybox.tar"
  # Each archive in place whole, the stamp last; the other images in
  # $IMAGES (the console's, PaddlePaddle's) are not these inputs' to remove.
  mkdir -p "$IMAGES"
  python3 "$NODE_FILES/mkimage.py" "$PAUSE_IMAGE" "$work/pause.tar" "$work/pause.oci.tar" \
    --entrypoint '["/pause"]' >/dev/null
  python3 "$NODE_FILES/mkimage.py" "$BASE_IMAGE" "$work/busybox.tar" "$work/busybox.oci.tar" \
    --cmd '["/bin/sh"]' >/dev/null
  mv "$work/pause.oci.tar" "$IMAGES/pause.tar"
  mv "$work/busybox.oci.tar" "$IMAGES/busybox.tar"
  echo "$stamp" >"$IMAGES/.stamp"
  rm -rf "$work"
  tock "images pause, busybox ($(du -ch "$IMAGES/pause.tar" "$IMAGES/busybox.tar" | tail -n 1 | cut -f1))"
}

# In a subshell: its EXIT trap (the build tree) and lock must not replace
# those of `run`, which may build first.
build_binaries() (   # the binaries missing from $BIN, in one make
  local asked=("${BINARIES[@]}") wanted=() b
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

  say "building ${wanted[*]} (about 12 minutes on 2 cores for all six)"
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
)

build() {
  need_root
  packages
  build_binaries
  images
}

free_ports() {
  python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))' "$1"
}

start() {   # NAME COMMAND...: in the background, its own session, logging to $D/NAME.log
  local name=$1
  shift
  setsid "$@" >"$D/$name.log" 2>&1 </dev/null &
  echo $! >"$D/$name.pid"
}

alive_pid() { [ -f "$D/$1.pid" ] && kill -0 "$(cat "$D/$1.pid")" 2>/dev/null; }

wait_for() {   # WHAT CHECK...: 60 s, with the logs of whatever died
  local what=$1 deadline=$((SECONDS + 60)) n
  shift
  until "$@" >/dev/null 2>&1; do
    for n in etcd containerd kube-apiserver kube-scheduler kube-controller-manager kubelet kube-proxy kube-dns; do
      if [ -f "$D/$n.pid" ] && ! alive_pid "$n"; then
        echo "waiting for $what: $n exited; its log:" >&2
        tail -n 30 "$D/$n.log" >&2
        exit 1
      fi
    done
    if [ $SECONDS -ge $deadline ]; then
      echo "timed out after 60 s waiting for $what" >&2
      for n in "$D"/*.log; do printf '\n--- %s ---\n' "$n" >&2; tail -n 15 "$n" >&2; done
      exit 1
    fi
    sleep 0.2
  done
}

kubectl_() { "$BIN/kubectl" --kubeconfig "$D/kubeconfig" --cache-dir "$D/kubectl-cache" "$@"; }

certificates() {
  local api=$1 token
  sign() {   # NAME SUBJECT EXTENSION...
    local name=$1 subject=$2
    shift 2
    openssl req -newkey rsa:2048 -nodes -subj "$subject" -keyout "$D/$name.key" -out "$D/$name.csr" 2>/dev/null
    openssl x509 -req -in "$D/$name.csr" -CA "$D/ca.crt" -CAkey "$D/ca.key" -CAcreateserial -days 7 \
      -out "$D/$name.crt" -extfile <(printf '%s\n' basicConstraints=CA:FALSE \
        keyUsage=digitalSignature,keyEncipherment "$@") 2>/dev/null
  }
  openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj /CN=paddlecloud-node-ca \
    -keyout "$D/ca.key" -out "$D/ca.crt" 2>/dev/null
  sign apiserver /CN=kube-apiserver extendedKeyUsage=serverAuth \
    "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,IP:$NODE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  # The apiserver's client certificate towards the kubelet (logs, exec), which trusts the CA.
  sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" extendedKeyUsage=clientAuth
  openssl genrsa -out "$D/sa.key" 2048 2>/dev/null
  token=$(openssl rand -hex 24)
  echo "$token,paddlecloud-test,paddlecloud-test,\"system:masters\"" >"$D/tokens.csv"
  cat >"$D/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: paddlecloud-node
  cluster:
    server: $api
    certificate-authority-data: $(base64 -w0 <"$D/ca.crt")
users:
- name: paddlecloud-node
  user:
    token: $token
contexts:
- name: paddlecloud-node
  context: {cluster: paddlecloud-node, user: paddlecloud-node, namespace: default}
current-context: paddlecloud-node
EOF
  chmod 600 "$D/kubeconfig" "$D/tokens.csv" "$D"/*.key
}

configs() {
  mkdir -p "$S/cni/net.d"
  cat >"$D/containerd.toml" <<EOF
# containerd 1.6 for a kubelet 1.20 node: CRI with runc, cgroupfs (systemd is
# not PID 1 everywhere), the pause image built here, CNI from Debian.
version = 2
root = "$S/containerd/root"
state = "$S/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$S/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  # Where root lacks CAP_SYS_RESOURCE (sandboxed machines), runc cannot lower
  # a sandbox's oom_score_adj to -998 and every pod fails to start.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$S/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$S/cni/net.d"
    max_conf_num = 1
EOF
  cat >"$S/cni/net.d/10-paddlecloud.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "paddlecloud-node",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$S/cni-ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  : >"$D/pod-resolv.conf"   # pods get the cluster DNS and nothing upstream (there is none)
  cat >"$D/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $D/ca.crt}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
resolvConf: $D/pod-resolv.conf
failSwapOn: false
hairpinMode: hairpin-veth
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
# Images are imported, never pulled: never collected either.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
volumePluginDir: $S/kubelet-plugins
# Ready ~10 s sooner, and pods in image-pull back-off deleted within ~10 s.
nodeStatusUpdateFrequency: 2s
syncFrequency: 10s
EOF
  local masquerade=false
  # Pod -> ClusterIP -> a pod on the same bridge needs the reply to pass
  # conntrack (br_netfilter); without it, kube-proxy masquerades everything.
  if [ -w /proc/sys/net/bridge/bridge-nf-call-iptables ]; then
    sysctl -qw net.bridge.bridge-nf-call-iptables=1
  else
    masquerade=true
  fi
  cat >"$D/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $D/kubeconfig}
hostnameOverride: $NODE
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
mode: iptables
clusterCIDR: 10.244.0.0/16
iptables: {masqueradeAll: $masquerade, syncPeriod: 10s, minSyncPeriod: 0s}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

up() {
  need_root
  local all=${EPOCHREALTIME//[.,]/} etcd_port peer_port api_port api token k image pid
  local b
  for b in "${BINARIES[@]}"; do [ -x "$BIN/$b" ] || { build; break; }; done
  images   # whatever's inputs changed
  if [ -d "$S" ]; then
    say "a node's state is left in $DIR: taking it down first"
    down
  fi
  mkdir -p "$D" "$S"
  for k in "${SYSCTLS[@]}"; do echo "$k=$(sysctl -n "$k" 2>/dev/null || true)"; done >"$D/sysctls"
  read -r etcd_port peer_port api_port <<<"$(free_ports 3)"
  api=https://127.0.0.1:$api_port
  tick
  certificates "$api"
  token=$(sed -n 's/^ *token: //p' "$D/kubeconfig")
  configs
  tock "certificates and configuration"

  # The bridge first: it is the node's address before any pod exists.
  ip link add "$BRIDGE" type bridge
  ip addr add "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up

  tick
  start etcd etcd --name paddlecloud-node --data-dir "$S/etcd" --logger zap \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "paddlecloud-node=http://127.0.0.1:$peer_port"
  start containerd containerd --config "$D/containerd.toml"
  wait_for etcd curl -fs --max-time 5 "http://127.0.0.1:$etcd_port/health"
  # Bound on every address and advertised at the node's: the "kubernetes"
  # Service's Endpoints are reachable from pods. The default admission
  # plugins (ServiceAccount, TaintNodesByCondition): a real kubelet
  # heartbeats, and the node lifecycle controller lifts the not-ready taint.
  start kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 0.0.0.0 --advertise-address "$NODE_IP" --secure-port "$api_port" --insecure-port 0 \
    --tls-cert-file "$D/apiserver.crt" --tls-private-key-file "$D/apiserver.key" --cert-dir "$D" \
    --client-ca-file "$D/ca.crt" --token-auth-file "$D/tokens.csv" --authorization-mode RBAC \
    --service-account-key-file "$D/sa.key" --service-account-signing-key-file "$D/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range "$SVC_CIDR" --allow-privileged \
    --kubelet-preferred-address-types InternalIP \
    --kubelet-client-certificate "$D/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$D/apiserver-kubelet-client.key" \
    --feature-gates TTLAfterFinished=true
  wait_for "kube-apiserver /readyz" curl -fs --max-time 5 --cacert "$D/ca.crt" \
    -H "Authorization: Bearer $token" "$api/readyz"
  tock "etcd, containerd, kube-apiserver"

  tick
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$D/kubeconfig" --leader-elect=false \
    --port 0 --secure-port 0
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$D/kubeconfig" \
    --controllers '*' --use-service-account-credentials=false --leader-elect=false \
    --service-account-private-key-file "$D/sa.key" --root-ca-file "$D/ca.crt" \
    --feature-gates TTLAfterFinished=true --port 0 --secure-port 0 \
    --enable-hostpath-provisioner --pvclaimbinder-sync-period 1s --resource-quota-sync-period 2s
  wait_for containerd ctr -a "$S/containerd/containerd.sock" version
  # At once: PaddlePaddle's alone takes ~13 s (unpacking 1.4 GB).
  local imports=()
  for image in "$IMAGES"/*.tar; do
    ctr -a "$S/containerd/containerd.sock" -n k8s.io images import "$image" >/dev/null &
    imports+=($!)
  done
  for pid in "${imports[@]}"; do wait "$pid" || { echo "importing an image of $IMAGES failed" >&2; exit 1; }; done
  tock "controllers, images imported"

  tick
  start kubelet "$BIN/kubelet" --config "$D/kubelet.yaml" --kubeconfig "$D/kubeconfig" \
    --container-runtime remote --container-runtime-endpoint "unix://$S/containerd/containerd.sock" \
    --containerd "$S/containerd/containerd.sock" --runtime-request-timeout 2m \
    --root-dir "$S/kubelet" --cert-dir "$S/kubelet/pki" \
    --hostname-override "$NODE" --node-ip "$NODE_IP" --pod-infra-container-image "$PAUSE_IMAGE"
  start kube-proxy "$BIN/kube-proxy" --config "$D/kube-proxy.yaml"
  # Cluster DNS: the kube-dns Service (no selector) -> dnsmasq on the node.
  start kube-dns python3 "$NODE_FILES/kube-dns-lite.py" "$D/kubeconfig" "$D/dns-hosts" -- \
    --conf-file=/dev/null --no-resolv --no-hosts --no-poll --listen-address="$NODE_IP" \
    --bind-interfaces --port="$DNS_PORT" --pid-file= --user=root --local=/cluster.local/ \
    --domain-needed --log-facility=- --cache-size=0
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system}
spec:
  clusterIP: $DNS_IP
  ports: [{name: dns, port: 53, protocol: UDP, targetPort: $DNS_PORT}, {name: dns-tcp, port: 53, protocol: TCP, targetPort: $DNS_PORT}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: kube-dns, namespace: kube-system}
subsets:
- addresses: [{ip: $NODE_IP}]
  ports: [{name: dns, port: $DNS_PORT, protocol: UDP}, {name: dns-tcp, port: $DNS_PORT, protocol: TCP}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: node-hostpath
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
  wait_for "node $NODE Ready" sh -c "'$BIN/kubectl' --kubeconfig '$D/kubeconfig' get node $NODE \
    -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
  wait_for "the default serviceaccount" kubectl_ get serviceaccount default
  t0=$all tock "node up"
  say "real node $NODE ($K8S_VERSION, containerd, runc) at $api; KUBECONFIG=$D/kubeconfig"
}

stop_named() {   # NAME...: TERM, 5 s, KILL
  local n pid
  for n in "$@"; do if alive_pid "$n"; then kill "$(cat "$D/$n.pid")" 2>/dev/null || true; fi; done
  for _ in $(seq 50); do
    local any=0
    for n in "$@"; do if alive_pid "$n"; then any=1; fi; done
    [ $any = 0 ] && break
    sleep 0.1
  done
  for n in "$@"; do
    [ -f "$D/$n.pid" ] || continue
    pid=$(cat "$D/$n.pid")
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$D/$n.pid"
  done
}

# What kube-proxy's cleanup leaves: the kubelet's chains (KUBE-FIREWALL in
# INPUT and OUTPUT drops marked packets and outside connections to
# 127.0.0.0/8) and both canaries. The machine's own rules stay as they were.
remove_kube_chains() {
  local tool table rule chain
  for tool in iptables ip6tables; do
    command -v "$tool" >/dev/null || continue
    for table in filter nat mangle; do
      "$tool" -t "$table" -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j KUBE-' |
        while read -r rule; do
          # As iptables -S prints it, comments quoted for a shell.
          eval "$tool -t $table ${rule/#-A/-D}" 2>/dev/null || true
        done
      for chain in $("$tool" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(KUBE-[A-Z0-9-]*\)$/\1/p'); do
        "$tool" -t "$table" -F "$chain" 2>/dev/null || true
      done
      for chain in $("$tool" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(KUBE-[A-Z0-9-]*\)$/\1/p'); do
        "$tool" -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  done
}

down() {
  local sock=$S/containerd/containerd.sock c m h top t
  # Everything is tried, whatever fails before it: a cleanup that stops
  # half-way leaves the machine worse than one that goes on.
  set +e +o pipefail
  tick
  if [ -f "$D/kubeconfig" ] && alive_pid kubelet && alive_pid kube-apiserver; then
    # Pods deleted through the kubelet: their sandboxes go with a CNI DEL.
    kubectl_ delete pods --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
    for _ in $(seq 50); do
      [ -z "$(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  stop_named kubelet kube-proxy kube-dns
  if [ -S "$sock" ]; then
    c=(ctr -a "$sock" -n k8s.io)
    for t in $("${c[@]}" tasks ls -q 2>/dev/null); do "${c[@]}" tasks kill -s KILL "$t" >/dev/null 2>&1 || true; done
    sleep 0.3
    for t in $("${c[@]}" tasks ls -q 2>/dev/null); do "${c[@]}" tasks delete -f "$t" >/dev/null 2>&1 || true; done
  fi
  stop_named containerd
  # Shims outlive containerd: only those of this node's socket.
  pkill -9 -f "containerd-shim-runc-v2 .*-address $sock" 2>/dev/null || true
  stop_named kube-controller-manager kube-scheduler kube-apiserver etcd
  tock "processes stopped"
  tick
  if [ -x "$BIN/kube-proxy" ]; then "$BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true; fi
  remove_kube_chains
  # Mounts under the state dir (network namespaces, shm, overlay roots, volumes), deepest first.
  awk '{print $2}' /proc/self/mounts | grep -E "^($DIR|/var/lib/kubelet)/" | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  for h in /sys/fs/cgroup/*/; do
    for top in kubepods k8s.io; do
      if [ -d "$h$top" ]; then find "$h$top" -depth -type d -exec rmdir {} \; 2>/dev/null || true; fi
    done
  done
  for c in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$c" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  if [ -f "$D/sysctls" ]; then
    while IFS='=' read -r k v; do
      if [ -n "$v" ]; then sysctl -qw "$k=$v" 2>/dev/null || true; fi
    done <"$D/sysctls"
  fi
  # Paths containerd 1.6 and kubelet 1.20 use whatever they are told.
  rm -rf /run/containerd/s /run/containerd/fifo /var/log/pods /var/log/containers /var/lib/kubelet
  if [ "${PADDLECLOUD_NODE_KEEP:-}" = 1 ]; then
    say "kept $DIR"
  else
    rm -rf "$DIR"
  fi
  tock "mounts, cgroups, links, iptables chains, sysctls undone"
}

lock() {
  mkdir -p "$(dirname "$DIR")"
  exec 8>"$DIR.lock"
  if ! flock -n 8; then
    echo "another real node runs on this machine (lock $DIR.lock): one at a time" >&2
    exit 1
  fi
}

run() {
  [ $# -gt 0 ] || { echo "usage: $0 run COMMAND [ARGS...]" >&2; exit 2; }
  need_root
  lock
  local status=0
  trap down EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  up
  env KUBECONFIG="$D/kubeconfig" PADDLECLOUD_TEST_KUBECONFIG="$D/kubeconfig" \
    PADDLECLOUD_TEST_KUBE_NODE="$NODE" PADDLECLOUD_TEST_NODE_IMAGE="$BASE_IMAGE" PADDLECLOUD_TEST_NODE_IP="$NODE_IP" \
    PATH="$BIN:$PATH" "$@" || status=$?
  exit "$status"
}

case "${1:-}" in
  build) build ;;
  images) need_root; images ;;
  up) lock; up ;;
  down) need_root; down ;;
  run) shift; run "$@" ;;
  smoke) run "$NODE_FILES/smoke.sh" ;;
  *) echo "usage: $0 build | run COMMAND [ARGS...] | smoke | up | down" >&2; exit 2 ;;
esac
