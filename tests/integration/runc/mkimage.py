#!/usr/bin/env python3
"""Writes an image of a root directory, no registry involved.
  mkimage.py oci ROOTDIR NAME OUT.tar      an OCI layout tar for `ctr images import`
  mkimage.py rootfs ROOTDIR OUT.tar        a plain tar for `docker import` / `podman import`
"""
import hashlib, io, json, os, sys, tarfile

def tar_dir(root):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for dp, dn, fn in os.walk(root):
            dn.sort()
            for name in sorted(dn + fn):
                p = os.path.join(dp, name)
                ti = t.gettarinfo(p, os.path.relpath(p, root))
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
                ti.mtime = 0
                if ti.isreg():
                    with open(p, "rb") as f:
                        t.addfile(ti, f)
                else:
                    t.addfile(ti)
    return buf.getvalue()

def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()

def main():
    kind = sys.argv[1]
    if kind == "rootfs":
        open(sys.argv[3], "wb").write(tar_dir(sys.argv[2]))
        return
    root, name, out = sys.argv[2:5]
    layer = tar_dir(root)
    blobs = {}
    def put(b):
        d = sha(b)
        blobs[d] = b
        return d
    ld = put(layer)
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                                    "Cmd": ["sh"], "WorkingDir": "/"},
                         "rootfs": {"type": "layers", "diff_ids": [ld]}}).encode()
    cd = put(config)
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": len(config)},
                           "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": ld, "size": len(layer)}]}).encode()
    md = put(manifest)
    index = json.dumps({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                        "digest": md, "size": len(manifest),
                        "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]}}]}).encode()
    with tarfile.open(out, "w") as t:
        def add(n, b):
            ti = tarfile.TarInfo(n)
            ti.size = len(b)
            t.addfile(ti, io.BytesIO(b))
        add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add("index.json", index)
        for d, b in blobs.items():
            add("blobs/sha256/" + d[7:], b)

main()
