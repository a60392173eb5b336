#!/usr/bin/env python3
"""kube-dns-lite.py KUBECONFIG HOSTS_FILE -- DNSMASQ_ARGS...
Stand-in for CoreDNS's kubernetes plugin: runs dnsmasq (as a child, with
--addn-hosts=HOSTS_FILE) and every 0.5 s lists Services and Endpoints from the
apiserver; when the records change it rewrites HOSTS_FILE and SIGHUPs dnsmasq.
Records (cluster.local):
  <svc>.<ns>.svc.cluster.local            -> ClusterIP, or every ready endpoint IP if headless
  <hostname>.<svc>.<ns>.svc.cluster.local -> endpoint IP, for endpoints with a hostname
                                            (pod spec.hostname + spec.subdomain = a headless svc)
  <a-b-c-d>.<ns>.pod.cluster.local        -> a.b.c.d, for endpoint IPs
dnsmasq is run with --local=/cluster.local/ so other cluster.local names get NXDOMAIN."""
import base64
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

kubeconfig, hosts = sys.argv[1], sys.argv[2]
dnsmasq_args = sys.argv[sys.argv.index("--") + 1:]
text = open(kubeconfig).read()
server = re.search(r'server: "?([^",}\s]+)', text).group(1)
token = re.search(r'token: ([^,}\s]+)', text).group(1)
ca = base64.b64decode(re.search(r'certificate-authority-data: ([^,}\s]+)', text).group(1)).decode()
ctx = ssl.create_default_context(cadata=ca)
domain = "cluster.local"

def get(path):
    req = urllib.request.Request(server + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
        return json.load(r)["items"]

def records():
    out = set()
    svcs = {(s["metadata"]["namespace"], s["metadata"]["name"]): s for s in get("/api/v1/services")}
    for (ns, name), s in svcs.items():
        ip = s["spec"].get("clusterIP")
        if ip and ip != "None":
            out.add((ip, f"{name}.{ns}.svc.{domain}"))
    for ep in get("/api/v1/endpoints"):
        ns, name = ep["metadata"]["namespace"], ep["metadata"]["name"]
        s = svcs.get((ns, name))
        if not s:
            continue
        headless = s["spec"].get("clusterIP") == "None"
        for sub in ep.get("subsets") or []:
            for a in sub.get("addresses") or []:
                ip = a["ip"]
                if headless:
                    out.add((ip, f"{name}.{ns}.svc.{domain}"))
                if a.get("hostname"):
                    out.add((ip, f"{a['hostname']}.{name}.{ns}.svc.{domain}"))
                out.add((ip, f"{ip.replace('.', '-')}.{ns}.pod.{domain}"))
    return out

open(hosts, "w").close()
child = subprocess.Popen(["dnsmasq", "--keep-in-foreground", f"--addn-hosts={hosts}"] + dnsmasq_args)
started = time.monotonic()
# A SIGHUP that reaches dnsmasq before it has set up its handler ends it
# (the node's start once failed so: "dnsmasq exited with -1"), so the first
# reload waits this long after the start.
SETTLE = 1.0


def stop(*_):
    child.terminate()
    child.wait()
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
last = None
while True:
    if child.poll() is not None:
        sys.exit("dnsmasq exited with %s" % child.returncode)
    try:
        cur = records()
    except Exception as e:  # apiserver not up yet / restarting
        print("list failed:", e, file=sys.stderr, flush=True)
        time.sleep(1)
        continue
    if cur != last and time.monotonic() - started >= SETTLE:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(hosts))
        with os.fdopen(fd, "w") as f:
            f.writelines(f"{ip} {name}\n" for ip, name in sorted(cur))
        os.chmod(tmp, 0o644)
        os.replace(tmp, hosts)
        child.send_signal(signal.SIGHUP)
        print(time.strftime("%H:%M:%S"), "records:", len(cur), flush=True)
        last = cur
    time.sleep(0.5)
