#!/usr/bin/env python3
"""mkimage.py REF ROOTFS_TAR OUT.tar [--entrypoint JSON] [--cmd JSON] [--env K=V]...
Makes a single-layer OCI image archive (oci-layout + index.json + blobs) from a
rootfs tarball, loadable with `ctr -n k8s.io images import OUT.tar`. The index
carries io.containerd.image.name=REF, so ctr names the image REF."""
import argparse, gzip, hashlib, io, json, os, tarfile, time

ap = argparse.ArgumentParser()
ap.add_argument("ref"); ap.add_argument("rootfs"); ap.add_argument("out")
ap.add_argument("--entrypoint", type=json.loads, default=None)
ap.add_argument("--cmd", type=json.loads, default=None)
ap.add_argument("--env", action="append", default=["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"])
ap.add_argument("--workdir", default="/")
a = ap.parse_args()

raw = open(a.rootfs, "rb").read()
diff_id = "sha256:" + hashlib.sha256(raw).hexdigest()
buf = io.BytesIO()
with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=6) as gz:
    gz.write(raw)
layer = buf.getvalue()
blobs = {}
def add(data, media):
    d = hashlib.sha256(data).hexdigest(); blobs[d] = data
    return {"mediaType": media, "digest": "sha256:" + d, "size": len(data)}
ldesc = add(layer, "application/vnd.oci.image.layer.v1.tar+gzip")
cfg = {"architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
       "config": {"Env": a.env, "Entrypoint": a.entrypoint, "Cmd": a.cmd, "WorkingDir": a.workdir},
       "rootfs": {"type": "layers", "diff_ids": [diff_id]},
       "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "mkimage.py"}]}
cdesc = add(json.dumps(cfg, sort_keys=True).encode(), "application/vnd.oci.image.config.v1+json")
mdesc = add(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                        "config": cdesc, "layers": [ldesc]}, sort_keys=True).encode(),
            "application/vnd.oci.image.manifest.v1+json")
tag = a.ref.rsplit(":", 1)[1] if ":" in a.ref.rsplit("/", 1)[-1] else "latest"
mdesc["annotations"] = {"io.containerd.image.name": a.ref, "org.opencontainers.image.ref.name": tag}
index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [mdesc]}

def entry(t, name, data):
    ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 0; ti.mode = 0o644
    t.addfile(ti, io.BytesIO(data))
with tarfile.open(a.out, "w") as t:
    entry(t, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
    entry(t, "index.json", json.dumps(index).encode())
    for d, data in blobs.items():
        entry(t, "blobs/sha256/" + d, data)
print(a.ref, mdesc["digest"], len(layer), "bytes compressed")
