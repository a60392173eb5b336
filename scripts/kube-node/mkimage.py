#!/usr/bin/env python3
"""mkimage.py REF ROOTFS_TAR OUT.tar [--entrypoint JSON] [--cmd JSON] [--env K=V]...

Makes a one-layer OCI image archive (oci-layout, index.json, blobs) from a root
filesystem tarball, for `ctr -n k8s.io images import OUT.tar`: no registry can be
reached here, and no image tool is needed for this much. The index carries
io.containerd.image.name=REF, so containerd names the image REF. The layer is
gzipped with a fixed mtime and the config has a fixed date: the same rootfs
makes the same image."""

import argparse
import gzip
import hashlib
import io
import json
import tarfile

EPOCH = "1970-01-01T00:00:00Z"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("rootfs")
    ap.add_argument("out")
    ap.add_argument("--entrypoint", type=json.loads, default=None)
    ap.add_argument("--cmd", type=json.loads, default=None)
    ap.add_argument("--env", action="append",
                    default=["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"])
    ap.add_argument("--workdir", default="/")
    a = ap.parse_args()

    with open(a.rootfs, "rb") as f:
        raw = f.read()
    diff_id = "sha256:" + hashlib.sha256(raw).hexdigest()
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=6) as gz:
        gz.write(raw)
    blobs = {}

    def add(data: bytes, media: str) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media, "digest": "sha256:" + digest, "size": len(data)}

    layer = add(buf.getvalue(), "application/vnd.oci.image.layer.v1.tar+gzip")
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": EPOCH,
        "config": {"Env": a.env, "Entrypoint": a.entrypoint, "Cmd": a.cmd,
                   "WorkingDir": a.workdir},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": EPOCH, "created_by": "scripts/kube-node/mkimage.py"}],
    }
    config_desc = add(json.dumps(config, sort_keys=True).encode(),
                      "application/vnd.oci.image.config.v1+json")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": config_desc, "layers": [layer]}
    manifest_desc = add(json.dumps(manifest, sort_keys=True).encode(),
                        "application/vnd.oci.image.manifest.v1+json")
    last = a.ref.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else "latest"
    manifest_desc["annotations"] = {"io.containerd.image.name": a.ref,
                                    "org.opencontainers.image.ref.name": tag}
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [manifest_desc]}

    def entry(t: tarfile.TarFile, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mtime = 0
        info.mode = 0o644
        t.addfile(info, io.BytesIO(data))

    with tarfile.open(a.out, "w") as t:
        entry(t, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        entry(t, "index.json", json.dumps(index).encode())
        for digest, data in blobs.items():
            entry(t, "blobs/sha256/" + digest, data)
    print(a.ref, manifest_desc["digest"], layer["size"], "bytes compressed")


if __name__ == "__main__":
    main()
