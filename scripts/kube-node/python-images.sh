#!/usr/bin/env bash
# scripts/kube-node/python-images.sh OUTDIR [paddle] [python]
#
# Builds the images the console's shipped environments name, as one-layer OCI
# archives for `ctr -n k8s.io images import` on the test node
# (scripts/kube-test-cluster.sh): no container registry can be reached here, so they
# are made from Debian bookworm packages (mmdebstrap) and PyPI wheels instead
# of pulled. A user's cluster pulls the real images; these stand in for them.
#   OUTDIR/paddle.tar  docker.io/paddlepaddle/paddle:3.3.1  ("paddle-cpu", the
#                      serving default): python3, pip, `python`, PaddlePaddle,
#                      VisualDL, JupyterLab
#   OUTDIR/python.tar  docker.io/library/python:3.11-slim   ("minimal"): python3, pip, `python`
# Pods on the node have no network, so the paddle image must already hold every
# requirement the console's init step would install (server/src/kubernetes/
# environment.rs): paddle-cpu's `paddlepaddle==3.3.1` and `visualdl==2.5.3`,
# and the `jupyterlab` a notebook adds.
#
# Wheels are fetched once by the host's Debian pip into $PADDLECLOUD_TOOLS/pip-wheels
# (default ~/.cache/paddlecloud/pip-wheels) and installed inside the image by
# the image's own pip with --no-index, so a rebuild downloads no wheel again.
# Needs root (mmdebstrap's root mode, chroot), mmdebstrap, and a bookworm host:
# the host's /usr/bin/python3 (Debian's 3.11.2, the images' own) picks the wheels.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SELF=$HERE/$(basename "$0")
# shellcheck source=scripts/env.sh disable=SC1091
source "$HERE/../env.sh"   # TOOLS, say, apt_install

PADDLE_REF=docker.io/paddlepaddle/paddle:3.3.1
PYTHON_REF=docker.io/library/python:3.11-slim
# What the paddle image's pip installs. `packaging` is the init step's first
# choice for reading requirements (it falls back to pip's copy); papermill
# (the version the console pins) runs notebook runs with no install step.
PADDLE_REQUIREMENTS=(paddlepaddle==3.3.1 visualdl==2.5.3 jupyterlab==4.6.6 papermill==2.7.0 packaging)
# python-is-python3: jobs run `python -c ...`, as in the real images.
PYTHON_DEBS=python3,python3-pip,python-is-python3,ca-certificates
# libgomp1: paddle's libpaddle.so links GCC's OpenMP, the one library its
# wheel does not carry (`import paddle` fails without it). procps: ps, top,
# pkill for `kubectl exec` and notebook terminals, as the real image has.
PADDLE_DEBS=$PYTHON_DEBS,libgomp1,procps
WHEELS=$TOOLS/pip-wheels
# The wheels are chosen by this Python, so it must be the image's: Debian's,
# not one first on PATH (a pyenv 3.11.7 picked soupsieve 2.8, which needs
# 3.11.5, and the image's pip refused it). Its pip also has the host's index,
# proxy and certificate settings, which a pip in the chroot would lack.
HOST_PYTHON=/usr/bin/python3
# mkimage.py's default PATH, for the chroot.
IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin


usage() {
  echo "usage: $0 OUTDIR [paddle] [python]   (both by default)" >&2
  exit 2
}

# --- Run by mmdebstrap as a customize hook: ROOT is the image's root ---------------------

# Common to both images, once their Debian packages are in (before pip).
customize_common() {
  local root=$1
  # Debian marks its Python "externally managed" (PEP 668); the real images
  # are not, and a job's `pip install x` must work there as it does there.
  rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
  # containerd mounts a pod's own; the host's must not leak into the image.
  rm -f "$root/etc/resolv.conf" "$root/etc/hostname"
  # Small: no manuals, translations or apt state. Copyright files stay.
  find "$root/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
    "$root"/usr/share/lintian "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* \
    "$root"/var/log/apt "$root"/var/log/*.log "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old
}

# The paddle image: the wheels installed by the image's own pip, offline.
# Its own pip (not the host's with --root/--target) so that paths
# (/usr/local/lib/python3.11/dist-packages, on Debian's sys.path), script
# shebangs (/usr/bin/python3) and installed metadata are the image's.
customize_paddle() {
  local root=$1 wheels=$2
  mkdir "$root/tmp/wheels"
  # Hard links when the cache and the build share a file system: no copy.
  cp -al "$wheels"/. "$root/tmp/wheels/" 2>/dev/null || cp -a "$wheels"/. "$root/tmp/wheels/"
  # A clean environment: the host's pip settings (index, certificates,
  # find-links) name paths that are not in the image. pip compiles the .pyc
  # files, and they stay (unlike the docs): 58 MiB of the 386 MiB archive,
  # but without them every pod compiles its own on first import, and
  # `import paddle, visualdl` takes 3.8 s instead of 1.0 s.
  chroot "$root" /usr/bin/env -i PATH="$IMAGE_PATH" HOME=/root LANG=C.UTF-8 \
    python3 -m pip install --quiet --no-index --find-links /tmp/wheels --no-cache-dir \
    --root-user-action=ignore --disable-pip-version-check --no-warn-script-location \
    -r /tmp/wheels/requirements.txt
  rm -rf "$root/tmp/wheels"
}

# --- The host side -----------------------------------------------------------------------

# Fetches (or reuses) the paddle image's wheels into $WHEELS/paddle, with
# requirements.txt beside them. A stamp of the requirements and the host
# Python skips the index altogether on a rebuild.
wheels() {
  local dir=$WHEELS/paddle stamp requirements=$WORK/requirements.txt
  printf '%s\n' "${PADDLE_REQUIREMENTS[@]}" >"$requirements"
  stamp=$({
    cat "$requirements"
    "$HOST_PYTHON" -c 'import platform; print(platform.python_version(), platform.machine())'
  } | sha256sum | cut -c1-16)
  if [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ]; then return 0; fi
  say "fetching the paddle image's wheels into $dir"
  tick
  mkdir -p "$dir"
  rm -rf "$dir.new"
  # `pip wheel`, not `pip download`: a dependency published only as an sdist
  # is built here, so the image's offline install needs no build backend.
  # Wheels of an earlier set (--find-links) are reused; --no-cache-dir keeps
  # no second copy in pip's own cache.
  "$HOST_PYTHON" -m pip wheel --quiet --disable-pip-version-check --no-cache-dir \
    --find-links "$dir" --wheel-dir "$dir.new" -r "$requirements"
  cp "$requirements" "$dir.new/requirements.txt"
  echo "$stamp" >"$dir.new/.stamp"
  rm -rf "$dir"
  mv "$dir.new" "$dir"
  tock "wheels ($(du -sh "$dir" | cut -f1))"
}

# NAME REF DEBS MKIMAGE-ARGS...: the rootfs by mmdebstrap, then OUTDIR/NAME.tar.
build() {
  local name=$1 ref=$2 debs=$3 hooks
  shift 3
  hooks=("--customize-hook=$(printf '%q' "$SELF") _customize common \"\$1\"")
  if [ "$name" = paddle ]; then
    hooks+=("--customize-hook=$(printf '%q' "$SELF") _customize paddle \"\$1\" $(printf '%q' "$WHEELS/paddle")")
  fi
  say "building $ref"
  tick
  # --variant=apt: Essential packages and apt, like the real Debian-based
  # images (minbase would add little but size). The mirror is mmdebstrap's
  # default, as for the node's busybox image. mmdebstrap's own hooks:
  # merged-usr makes the /usr symlinks itself, where bookworm would otherwise
  # install the usrmerge package and with it all of perl (47 MB); eatmydata
  # spares dpkg its fsyncs (~20 s instead of ~75 s for the python image).
  # Its output (the hooks are chatty) is shown only when it fails.
  if ! mmdebstrap --quiet --mode=root --variant=apt --include="$debs" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --hook-dir=/usr/share/mmdebstrap/hooks/eatmydata \
    "${hooks[@]}" bookworm "$WORK/$name-rootfs.tar" >"$WORK/$name-mmdebstrap.log" 2>&1; then
    tail -n 40 "$WORK/$name-mmdebstrap.log" >&2
    echo "$0: mmdebstrap failed for $ref" >&2
    exit 1
  fi
  tock "$name: mmdebstrap ($(du -h "$WORK/$name-rootfs.tar" | cut -f1) rootfs)"
  tick
  # LANG=C.UTF-8 as the real images set it (Python would coerce C to it anyway).
  python3 "$HERE/mkimage.py" "$ref" "$WORK/$name-rootfs.tar" "$OUT/$name.tar.new" \
    --env LANG=C.UTF-8 "$@" >/dev/null
  mv "$OUT/$name.tar.new" "$OUT/$name.tar"
  rm -f "$WORK/$name-rootfs.tar"
  tock "$name: mkimage ($(du -h "$OUT/$name.tar" | cut -f1) archive)"
}

main() {
  [ $# -ge 1 ] || usage
  if [ "$1" = _customize ]; then
    shift
    "customize_$1" "${@:2}"
    return
  fi
  OUT=$1
  shift
  local names=("$@") name
  [ ${#names[@]} -gt 0 ] || names=(paddle python)
  for name in "${names[@]}"; do
    case $name in paddle | python) ;; *) usage ;; esac
  done
  if [ "$(id -u)" != 0 ]; then
    echo "$0 needs root: mmdebstrap's root mode and chroot." >&2
    exit 1
  fi
  # dpkg-dev: dpkg-architecture, which mmdebstrap's eatmydata hook runs.
  apt_install mmdebstrap dpkg-dev
  "$HOST_PYTHON" -m pip --version >/dev/null 2>&1 || apt_install python3 python3-pip
  if ! "$HOST_PYTHON" -c 'import sys; assert sys.version_info[:3] == (3, 11, 2)' 2>/dev/null; then
    echo "$0: $HOST_PYTHON must be bookworm's Python 3.11.2, the images' own: its pip picks their wheels." >&2
    exit 1
  fi
  mkdir -p "$OUT"
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  for name in "${names[@]}"; do
    case $name in
      paddle)
        wheels
        build paddle "$PADDLE_REF" "$PADDLE_DEBS" --cmd '["/bin/bash"]'
        ;;
      python)
        build python "$PYTHON_REF" "$PYTHON_DEBS" --cmd '["python3"]'
        ;;
    esac
  done
}

main "$@"
