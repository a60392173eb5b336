#!/usr/bin/env bash
# The console's own image, from deploy/Dockerfile, built on this machine with
# no registry (none is reachable here) for the real node of scripts/kube-test-cluster.sh
# (containerd 1.6 imports it with `ctr -n k8s.io images import`).
#   scripts/console-image.sh build [OUT.tar]   the image as an OCI archive (default
#                                              ~/.cache/paddlecloud/kube-node-images/console.tar);
#                                              skipped when its inputs are unchanged
#   scripts/console-image.sh check [OUT.tar]   load the archive and run the console in it
# The image's name is the one deploy/paddlecloud.yaml asks for, as containerd
# normalizes it (paddlecloud/console:0.1.0 -> docker.io/paddlecloud/console:0.1.0);
# a warning says when its tag is not Cargo.toml's version.
#
# How, and why:
# * The runtime stage comes from the binary and site scripts/build.sh already
#   made: `buildah bud --build-context build=DIR` puts a folder laid out like the
#   build stage's /src in place of that stage, which buildah then skips, so
#   nothing compiles twice and the Dockerfile a user runs stays the only recipe.
# * FROM debian:bookworm-slim is a stand-in made here by mmdebstrap (minbase,
#   merged /usr, the official slim image's dpkg excludes and apt settings),
#   stored under docker.io/library/debian:bookworm-slim so `--pull=never` finds it.
#   Built once, cached in ~/.cache/paddlecloud/console-image, rebuilt when its
#   recipe (the base_rootfs function, mkimage.py) changes.
# * The Dockerfile's RUN apt-get needs the Debian mirror: chroot isolation
#   shares this machine's network (and needs no cgroup v2, user namespace or
#   nested runtime).
# * buildah's storage is a throwaway folder under the cache (overlay, or vfs
#   where overlay cannot mount), removed on exit with whatever it mounted.
# * The archive is rebuilt when the binary, the site, Leptos.toml, the
#   Dockerfile, the base or this script change (a stamp next to it says which).
# Needs root (mmdebstrap and buildah as root). Environment: PADDLECLOUD_TOOLS
# (default ~/.cache/paddlecloud), CARGO_TARGET_DIR (default target).
set -euo pipefail
# shellcheck source=scripts/env.sh disable=SC1091
source "$(dirname "$0")/env.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
SELF="$HERE/$(basename "$0")"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case "$TARGET" in /*) ;; *) TARGET=$ROOT/$TARGET ;; esac
# The site is where Leptos.toml puts it (below the repository), wherever
# cargo's target dir is.
SITE=$ROOT/$(cd "$ROOT" && leptos_conf site-root)
CACHE="$TOOLS/console-image"
BASE="$CACHE/base.tar"
BASE_IMAGE=docker.io/library/debian:bookworm-slim
DEFAULT_OUT="$TOOLS/kube-node-images/console.tar"


# The name the Deployment's pods ask for, normalized as containerd's CRI
# looks it up: an image imported under the short name would not be found.
image_ref() {
  local ref first
  ref=$(sed -n 's/^ *image: *\(paddlecloud\/console:[^ ]*\) *$/\1/p' "$ROOT/deploy/paddlecloud.yaml" | head -n 1)
  [ -n "$ref" ] || { echo "no paddlecloud/console image in deploy/paddlecloud.yaml" >&2; exit 1; }
  first=${ref%%/*}
  case "$first" in
    *.* | *:* | localhost) echo "$ref" ;;
    *) echo "docker.io/$ref" ;;
  esac
}

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "scripts/console-image.sh needs root: mmdebstrap and buildah build as root here." >&2
    exit 1
  fi
}

# Everything a buildah call here shares: the throwaway storage, chroot isolation.
WORK=
DRIVER=
bah() {
  buildah --root "$WORK/storage" --runroot "$WORK/run" --storage-driver "$DRIVER" "$@"
}

# containers/image keeps a blob-info cache for root in /var/lib/containers/cache
# whatever the storage flags say: removed again where it was not there before.
VARLIB_NEW=
new_work() {
  [ -e /var/lib/containers ] || VARLIB_NEW=1
  mkdir -p "$CACHE"
  WORK=$(mktemp -d "$CACHE/work.XXXXXX")
  # buildah's own temporary files (layer blobs, archives) stay in the folder too.
  export TMPDIR="$WORK/tmp" BUILDAH_ISOLATION=chroot
  mkdir -p "$TMPDIR"
  trap cleanup EXIT
  # overlay where the kernel and the filesystem under the cache allow it (not
  # overlay on overlay); else vfs, which copies every layer whole (`check`
  # took 36 s with it here, 10 s with overlay).
  if buildah --root "$WORK/probe" --runroot "$WORK/probe-run" --storage-driver overlay info >/dev/null 2>&1; then
    DRIVER=overlay
  else
    DRIVER=vfs
  fi
  rm -rf "$WORK/probe" "$WORK/probe-run"
}

cleanup() {
  local m
  [ -n "$WORK" ] && [ -d "$WORK" ] || return 0
  if [ -n "$DRIVER" ]; then bah rm --all >/dev/null 2>&1 || true; fi
  # A RUN step or a layer killed half-way can leave its mounts: deepest first.
  awk '{print $2}' /proc/self/mounts | { grep "^$WORK/" || true; } | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  # --one-file-system: never through a mount that outlived umount (/dev, /proc).
  rm -rf --one-file-system "$WORK"
  if [ -n "$VARLIB_NEW" ]; then
    rm -rf /var/lib/containers/cache
    rmdir /var/lib/containers 2>/dev/null || true
  fi
}

# The base's root filesystem as a tarball. As debian:bookworm-slim is made
# (debuerreotype --slimify): minbase, merged /usr by symlinks (no usrmerge
# and its perl), no docs but copyrights, no man pages or translations, and its
# apt settings (no package caches or .debs left in a layer, no translations).
# shellcheck disable=SC2016 # a hook's "$1" is the chroot, expanded by mmdebstrap's shell
base_rootfs() {
  local out=$1
  mmdebstrap --quiet --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/groff/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/linda/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook='cd "$1"/etc/apt/apt.conf.d &&
      printf "%s\n" "DPkg::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };" \
        "APT::Update::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };" \
        "Dir::Cache::pkgcache \"\";" "Dir::Cache::srcpkgcache \"\";" >docker-clean &&
      echo "Acquire::Languages \"none\";" >docker-no-languages &&
      printf "%s\n" "Acquire::GzipIndexes \"true\";" "Acquire::CompressionTypes::Order:: \"gz\";" >docker-gzip-indexes &&
      echo "Apt::AutoRemove::SuggestsImportant \"false\";" >docker-autoremove-suggests &&
      echo force-unsafe-io >"$1"/etc/dpkg/dpkg.cfg.d/docker-apt-speedup' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb "$1"/var/log/*.log "$1"/var/log/apt/* "$1"/var/cache/ldconfig/aux-cache "$1"/var/cache/debconf/*-old' \
    bookworm "$out" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main"
}

base_stamp() {
  { declare -f base_rootfs; cat "$HERE/kube-node/mkimage.py"; } | sha256sum | cut -c1-16
}

base() {
  local stamp log
  stamp=$(base_stamp)
  if [ -f "$BASE" ] && [ "$(cat "$BASE.stamp" 2>/dev/null)" = "$stamp" ]; then return 0; fi
  say "building the stand-in for $BASE_IMAGE (mmdebstrap)"
  tick
  log="$WORK/mmdebstrap.log"
  # mmdebstrap's hooks print even with --quiet: shown only when it fails.
  if ! base_rootfs "$WORK/base-rootfs.tar" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "mmdebstrap failed (log above)" >&2
    exit 1
  fi
  python3 "$HERE/kube-node/mkimage.py" "$BASE_IMAGE" "$WORK/base-rootfs.tar" "$WORK/base.tar" \
    --cmd '["bash"]' >/dev/null
  rm -f "$WORK/base-rootfs.tar"
  mv "$WORK/base.tar" "$BASE"
  echo "$stamp" >"$BASE.stamp"
  tock "base image ($(du -h "$BASE" | cut -f1) compressed)"
}

# The inputs of the console's image: a change to any rebuilds it.
console_stamp() {
  {
    sha256sum <"$TARGET/release/paddlecloud"
    (cd "$SITE" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
    sha256sum <"$ROOT/Leptos.toml"
    sha256sum <"$ROOT/deploy/Dockerfile"
    sha256sum <"$SELF"
    sha256sum <"$BASE"
    image_ref
  } | sha256sum | cut -c1-16
}

# The console in the image: its help, the files it serves, and a real start
# (SQLite in /tmp, local cluster) answering /healthz, /login and the wasm bundle
# from WORKDIR /app, as the Deployment's pods would. bash's /dev/tcp is the
# client: the image has no curl.
smoke() {
  local container=$1 port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  bah run "$container" -- sh -c 'paddlecloud --help >/dev/null && echo "paddlecloud --help: ok"'
  # shellcheck disable=SC2016 # expanded by the container's bash
  bah run "$container" -- bash -c '
    set -eu
    ls /etc/ssl/certs/ca-certificates.crt /app/Leptos.toml /app/target/site/pkg/paddlecloud.wasm >/dev/null
    echo "ca-certificates, Leptos.toml, site: present"
    # The renderer of notebook pages is a virtualenv the console makes.
    python3 -m venv /tmp/smoke-venv && /tmp/smoke-venv/bin/python -c "import sys; print(\"python3 -m venv: ok\", sys.version.split()[0])"
    paddlecloud serve --addr 127.0.0.1:$1 --data-dir /tmp/smoke >/tmp/serve.log 2>&1 &
    server=$!
    # Chroot isolation has no PID namespace: the server must not outlive this.
    trap "kill $server 2>/dev/null; wait $server 2>/dev/null || true" EXIT
    get() {   # PATH: the status line and the body
      exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
      printf "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n" "$2" >&3
      cat <&3
      exec 3<&-
    }
    for _ in $(seq 100); do get "$1" /healthz >/tmp/healthz 2>/dev/null && break; sleep 0.1; done
    status() { head -n 1 | tr -d "\r"; }
    echo "/healthz: $(status </tmp/healthz)"
    get "$1" /login >/tmp/index || true
    echo "/login: $(status </tmp/index), $(grep -o "/pkg/paddlecloud[.a-z_]*" /tmp/index | sort -u | tr "\n" " ")"
    get "$1" /pkg/paddlecloud.wasm >/tmp/wasm || true
    echo "/pkg/paddlecloud.wasm: $(status </tmp/wasm)"
    for f in /tmp/healthz /tmp/index /tmp/wasm; do
      head -n 1 $f | grep -q " 200 " || { echo "$f: not 200"; cat /tmp/serve.log; exit 1; }
    done
  ' smoke "$port"
}

build() {
  local out=${1:-$DEFAULT_OUT} ref version stamp art log
  need_root
  out=$(realpath -m "$out")
  for f in "$TARGET/release/paddlecloud" "$SITE/pkg/paddlecloud.wasm" "$ROOT/Leptos.toml"; do
    if [ ! -f "$f" ]; then
      echo "missing $f: run scripts/build.sh first (the image is made from its binary and site)" >&2
      exit 1
    fi
  done
  apt_install buildah mmdebstrap python3 >&2
  new_work
  exec 9>"$CACHE/lock"
  flock 9
  ref=$(image_ref)
  version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$ROOT/Cargo.toml")
  if [ "${ref##*:}" != "$version" ]; then
    say "warning: deploy/paddlecloud.yaml asks for $ref, Cargo.toml's version is $version"
  fi
  base
  stamp=$(console_stamp)
  if [ -f "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
    say "$ref: up to date in $out"
    return 0
  fi
  say "building $ref from deploy/Dockerfile (runtime stage; build stage = $TARGET)"
  tick
  # The build stage's /src, as far as the runtime stage reads it. Hard links
  # where the filesystem allows: the binary is large.
  art="$WORK/artifacts/src"
  mkdir -p "$art/target/release"
  cp -al "$TARGET/release/paddlecloud" "$art/target/release/" 2>/dev/null ||
    cp -a "$TARGET/release/paddlecloud" "$art/target/release/"
  cp -a "$SITE" "$art/target/site"
  cp -a "$ROOT/Leptos.toml" "$art/Leptos.toml"
  bah tag "$(bah pull --quiet "oci-archive:$BASE")" "$BASE_IMAGE"
  log="$WORK/build.log"
  if ! (cd "$ROOT" && bah bud --pull=never --isolation chroot --build-context "build=$WORK/artifacts" \
    -f deploy/Dockerfile -t "$ref" .) >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "buildah bud failed (log above)" >&2
    exit 1
  fi
  grep -E '^\[[0-9]+/[0-9]+\] STEP' "$log" | sed 's/^/    /' >&2
  tock "buildah bud"
  tick
  smoke "$(bah from --pull=never "$ref")" | sed 's/^/    /' >&2
  tock "smoke run in the image"
  tick
  # An OCI layout, then the annotation containerd names an import by (as
  # mkimage.py's archives): the ref.name alone depends on ctr's flags.
  bah push --quiet "$ref" "oci:$WORK/oci:$ref" >/dev/null
  python3 - "$WORK/oci/index.json" "$ref" <<'EOF'
import json, sys
path, ref = sys.argv[1], sys.argv[2]
with open(path) as f:
    index = json.load(f)
for m in index["manifests"]:
    m.setdefault("annotations", {})["io.containerd.image.name"] = ref
with open(path, "w") as f:
    json.dump(index, f)
EOF
  mkdir -p "$(dirname "$out")"
  tar -C "$WORK/oci" --owner=0 --group=0 -cf "$out.tmp" oci-layout index.json blobs
  mv "$out.tmp" "$out"
  echo "$stamp" >"$out.stamp"
  tock "OCI archive $out ($(du -h "$out" | cut -f1))"
}

# The archive as containerd would get it: loaded into a fresh storage, then smoke.
check() {
  local archive=${1:-$DEFAULT_OUT} ref id
  need_root
  archive=$(realpath -m "$archive")
  [ -f "$archive" ] || { echo "no archive $archive: run $0 build first" >&2; exit 1; }
  new_work
  tick
  ref=$(python3 -c 'import json, sys, tarfile
t = tarfile.open(sys.argv[1])
index = json.load(t.extractfile("index.json"))
print(index["manifests"][0]["annotations"]["io.containerd.image.name"])' "$archive")
  echo "    io.containerd.image.name: $ref" >&2
  id=$(bah pull --quiet "oci-archive:$archive")
  echo "    $(bah inspect --type image --format 'entrypoint {{.OCIv1.Config.Entrypoint}}, workdir {{.OCIv1.Config.WorkingDir}}, {{len .OCIv1.RootFS.DiffIDs}} layers' "$id")" >&2
  smoke "$(bah from --pull=never "$id")" | sed 's/^/    /' >&2
  tock "check of $archive"
}

case "${1:-}" in
  build) shift; build "$@" ;;
  check) shift; check "$@" ;;
  *) echo "usage: $0 build [OUT.tar] | check [OUT.tar]" >&2; exit 2 ;;
esac
