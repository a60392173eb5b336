"""Fetches the datasets and model versions a pod reads into the node's cache.

On Kubernetes the console runs this as the ``fetch-inputs`` init container of a
job's replicas, of a notebook's pod and of a serving instance's replicas (their one
input: the model version the instance serves), in an image of its own choosing (not
the job's: the cache is shared by every pod on the node), with the SDK mounted::

    python3 -c "import sys; sys.path.insert(0, SDK); from paddlecloud.fetch_inputs import main; sys.exit(main())"

Environment (set by the console)::

    PADDLECLOUD_SERVER        the console's URL as pods reach it
    PADDLECLOUD_FETCH_TOKEN   the job's own token (or the notebook's key, or the
                              serving instance's token)
    PADDLECLOUD_INPUTS        JSON: [{"kind": "dataset"|"model", "owner", "name",
                              "version": N or null, "link": where the pod finds it,
                              relative to PADDLECLOUD_INPUT_DIR}]
    PADDLECLOUD_INPUT_DIR     the pod's own folder of links (and of fetch.log)
    PADDLECLOUD_INPUT_CACHE   the cache's root in this container; each input's
                              folder ``<root>/<kind>s/<owner>/<name>`` is mounted
                              from the node (only those: a pod sees nothing else)

Each input is kept once per node, by revision: a model version or a dataset's
saved version as ``v<N>`` (a finished version never changes), a dataset's
working files as ``r<ms>``, the time of their last change (the console sends it with the archive, read before the files were). A
revision already there is used as it is, so a second job on the node downloads
nothing; a lock per input makes replicas starting together fetch it once. What
is fetched lands in a scratch folder and moves into place whole. The pod's
``link`` is a symbolic link to the revision (its folder is mounted read-only in
the job's container at the same path), and what was done is written to
``fetch.log`` beside the links, which the job can read. Each time an input is
used, its other revisions not used (by a pod starting) for ``KEEP_DAYS`` days are
removed, and what killed fetches left of it: a job that runs longer than that on
an old revision of a dataset may lose it, so the cache keeps a month.
"""

import fcntl
import io
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.parse
import zipfile

from paddlecloud.download import (
    Refused,
    download,
    fetch,
    human,
    retrying,
    say,
    settings,
    unzip,
)

KEEP_DAYS = 30
REVISION_HEADER = "x-paddlecloud-revision"


def asset_url(server, kind, owner, name):
    return (
        server.rstrip("/")
        + f"/api/v1/{kind}s/"
        + urllib.parse.quote(owner, safe="")
        + "/"
        + urllib.parse.quote(name, safe="")
    )


def read_json(url, token):
    def once():
        body = io.BytesIO()
        download(url, token, body)
        return json.loads(body.getvalue().decode("utf-8"))

    return retrying(once)


def revision_now(server, token, item):
    """The revision the console holds now: ``v<N>`` or ``r<ms>``."""
    if item.get("version") is not None:
        return f"v{int(item['version'])}"
    url = asset_url(server, "dataset", item["owner"], item["name"])
    return f"r{int(read_json(url, token)['updated_at'])}"


def evict(folder, keep):
    """Removes other revisions in ``folder`` not used for ``KEEP_DAYS``, and
    what fetches that were killed left (``.fetch-*``: with the lock held, no
    fetch of this input is under way)."""
    old = time.time() - KEEP_DAYS * 86400
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        if entry.startswith(".fetch-"):
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.remove(path)
            continue
        if entry == keep or entry.startswith(".") or not os.path.isdir(path):
            continue
        if os.stat(path).st_mtime < old:
            shutil.rmtree(path, ignore_errors=True)
            say(f"removed {entry}, unused for {KEEP_DAYS} days")


def download_revision(server, token, item, folder):
    """Fetches the input into ``folder``; returns (revision, files, bytes)."""
    url = asset_url(server, item["kind"], item["owner"], item["name"]) + "/archive.zip"
    if item.get("version") is not None:
        url += "?version=" + str(int(item["version"]))
    scratch = tempfile.mkdtemp(prefix=".fetch-", dir=folder)
    archive = scratch + ".zip"
    try:
        seen = {}
        size = fetch(url, token, archive, seen)
        files = unzip(archive, scratch)
        if item.get("version") is not None:
            revision = f"v{int(item['version'])}"
        else:
            revision = seen.get(REVISION_HEADER)
            if not revision:
                raise Refused("the console sent no revision with the dataset")
        target = os.path.join(folder, revision)
        try:
            os.rename(scratch, target)
        except OSError:
            # Fetched by another pod meanwhile (no lock across nodes' clocks
            # is needed: this one is on the same node): its copy is whole.
            if not os.path.isdir(target):
                raise
        return revision, files, size
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if os.path.exists(archive):
            os.remove(archive)


def one(server, token, item, cache, links, log):
    kind, owner, name = item["kind"], item["owner"], item["name"]
    shown = f"{kind} {owner}/{name}" + (
        f" version {item['version']}" if item.get("version") is not None else ""
    )
    folder = os.path.join(cache, kind + "s", owner, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        revision = revision_now(server, token, item)
        target = os.path.join(folder, revision)
        if os.path.isdir(target):
            log(f"{shown}: {revision} in the node's cache")
        else:
            started = time.monotonic()
            revision, files, size = download_revision(server, token, item, folder)
            target = os.path.join(folder, revision)
            took = time.monotonic() - started
            log(f"{shown}: fetched {revision}, {files} file(s), {human(size)}, in {took:.1f} s")
        # Its time of last use, for eviction.
        os.utime(target)
        evict(folder, revision)
    link = os.path.join(links, item["link"])
    os.makedirs(os.path.dirname(link), exist_ok=True)
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(target, link)


def main(env=os.environ):
    (server, token, cache, links, raw), missing = settings(
        env,
        (
            "PADDLECLOUD_SERVER",
            "PADDLECLOUD_FETCH_TOKEN",
            "PADDLECLOUD_INPUT_CACHE",
            "PADDLECLOUD_INPUT_DIR",
            "PADDLECLOUD_INPUTS",
        ),
    )
    if missing:
        say("cannot fetch the inputs: " + ", ".join(missing) + " not set")
        return 2
    try:
        items = json.loads(raw)
    except ValueError as err:
        say(f"cannot fetch the inputs: PADDLECLOUD_INPUTS is not JSON: {err}")
        return 2
    lines = []

    def log(line):
        say(line)
        lines.append(line)

    status = 0
    for item in items:
        try:
            one(server, token, item, cache, links, log)
        except (Refused, OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as err:
            log(f"cannot fetch {item.get('kind')} {item.get('owner')}/{item.get('name')}: {err}")
            status = 1
            break
    try:
        os.makedirs(links, exist_ok=True)
        with open(os.path.join(links, "fetch.log"), "w") as out:
            out.write("\n".join(lines) + "\n")
    except OSError:
        pass
    return status


if __name__ == "__main__":
    sys.exit(main())
