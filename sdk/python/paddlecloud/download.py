"""Fetches the model version a serving replica serves from the console.

The console runs this as the ``fetch-model`` init container of a serving
instance's pods on Kubernetes (``python3 -c <this file>``, so the serving image
needs only a Python 3), before the predict server starts. Standard library only.

Environment (set by the console)::

    PADDLECLOUD_SERVER         the console's URL as pods reach it
    PADDLECLOUD_SERVING_TOKEN  the instance's own token: reads this model only
    PADDLECLOUD_MODEL          owner/name
    PADDLECLOUD_MODEL_VERSION  the version
    PADDLECLOUD_MODEL_FILE     one file of the version to fetch (a .tar.gz), or empty
    PADDLECLOUD_MODEL_DIR      where the files go (a volume the predict server reads)

The whole version comes as one zip (``archive.zip``) and is unpacked; with
``PADDLECLOUD_MODEL_FILE`` only that file is fetched. Files land in a scratch
folder beside the target and move into place at once, so replicas sharing a
volume never see half a model. Transient failures (connection, 5xx) are
retried with backoff; a refusal (401/403/404) ends at once with the console's
message as the last line, which Kubernetes shows as the container's message.
"""

import http.client
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

ATTEMPTS = 5
CHUNK = 1 << 20
PROGRESS_EVERY_S = 5.0


class Refused(Exception):
    """The console said no: retrying will not help."""


def say(text):
    print(text, flush=True)


def human(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024.0
    return f"{n:.1f} GB"


def url_of(server, model, version, file):
    owner, _, name = model.partition("/")
    base = server.rstrip("/") + "/api/v1/models/"
    base += urllib.parse.quote(owner, safe="") + "/" + urllib.parse.quote(name, safe="")
    query = "?version=" + str(int(version))
    if file:
        return base + "/files/" + urllib.parse.quote(file, safe="/") + query
    return base + "/archive.zip" + query


def refusal(err):
    """The console's own message from an error answer, if it sent one."""
    try:
        body = json.loads(err.read().decode("utf-8", "replace"))
        return body["error"]["message"]
    except Exception:
        return err.reason


def download(url, token, out, seen=None):
    """Writes the answer to ``out``; returns the bytes written. The answer's
    headers go into ``seen`` (a dict), when given."""
    request = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=60) as answer:
        if seen is not None:
            seen.clear()
            seen.update((k.lower(), v) for k, v in answer.headers.items())
        total = answer.headers.get("Content-Length")
        total = int(total) if total and total.isdigit() else None
        done = 0
        shown = time.monotonic()
        while True:
            chunk = answer.read(CHUNK)
            if not chunk:
                break
            out.write(chunk)
            done += len(chunk)
            if time.monotonic() - shown >= PROGRESS_EVERY_S:
                shown = time.monotonic()
                of = f" of {human(total)}" if total else ""
                say(f"fetched {human(done)}{of}")
        if total is not None and done != total:
            raise OSError(f"the download ended after {done} of {total} bytes")
        return done


def fetch(url, token, out_path, seen=None):
    """Downloads ``url`` to ``out_path``, retrying what may pass; the last
    answer's headers go into ``seen``, when given."""

    def once():
        with open(out_path, "wb") as out:
            return download(url, token, out, seen)

    return retrying(once)


def retrying(once):
    """Runs ``once`` until it passes: a refusal (4xx) ends at once, what may
    pass (connection, 5xx, a cut answer) is tried again with backoff."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return once()
        except urllib.error.HTTPError as err:
            if err.code < 500:
                raise Refused(f"HTTP {err.code}: {refusal(err)}") from None
            why = f"HTTP {err.code}"
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            why = str(getattr(err, "reason", err))
        if attempt == ATTEMPTS:
            raise OSError(f"gave up after {ATTEMPTS} attempts: {why}")
        wait = min(2 ** attempt, 30)
        say(f"attempt {attempt} failed ({why}); again in {wait} s")
        time.sleep(wait)
    return 0


def unzip(archive, dest):
    """Unpacks ``archive`` into ``dest``, refusing members that leave it."""
    root = os.path.realpath(dest)
    with zipfile.ZipFile(archive) as z:
        for member in z.infolist():
            target = os.path.realpath(os.path.join(root, member.filename))
            if target != root and not target.startswith(root + os.sep):
                raise Refused(f"the archive has a file outside the model: {member.filename}")
            if member.is_dir():
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(member) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out, CHUNK)
        return len([m for m in z.infolist() if not m.is_dir()])


def settings(env, names):
    """The values of ``names`` in ``env`` ("" when unset), in order, and the
    names of those unset."""
    values = [env.get(name, "") for name in names]
    return values, [name for name, value in zip(names, values) if not value]


def main(env=os.environ):
    file = env.get("PADDLECLOUD_MODEL_FILE", "")
    (server, token, model, version, dest), missing = settings(
        env,
        (
            "PADDLECLOUD_SERVER",
            "PADDLECLOUD_SERVING_TOKEN",
            "PADDLECLOUD_MODEL",
            "PADDLECLOUD_MODEL_VERSION",
            "PADDLECLOUD_MODEL_DIR",
        ),
    )
    if missing:
        say("cannot fetch the model: " + ", ".join(missing) + " not set")
        return 2
    if not version.isdigit():
        say(f"cannot fetch the model: PADDLECLOUD_MODEL_VERSION is not a number: {version}")
        return 2
    if os.path.isdir(dest):
        say(f"model {model} version {version} is here already")
        return 0
    parent = os.path.dirname(dest.rstrip(os.sep)) or "."
    os.makedirs(parent, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".fetch-", dir=parent)
    started = time.monotonic()
    try:
        url = url_of(server, model, version, file)
        say(f"fetching model {model} version {version} from {server}")
        if file:
            size = fetch(url, token, os.path.join(scratch, os.path.basename(file)))
            files = 1
        else:
            archive = os.path.join(parent, os.path.basename(scratch) + ".zip")
            try:
                size = fetch(url, token, archive)
                files = unzip(archive, scratch)
            finally:
                if os.path.exists(archive):
                    os.remove(archive)
        try:
            os.rename(scratch, dest)
        except OSError:
            # Another replica on the same volume was quicker: its copy is whole.
            if not os.path.isdir(dest):
                raise
        took = time.monotonic() - started
        say(f"fetched {files} file(s), {human(size)}, in {took:.1f} s into {dest}")
        return 0
    except (Refused, OSError, http.client.HTTPException, zipfile.BadZipFile) as err:
        say(f"cannot fetch the model: {err}")
        return 1
    finally:
        # Moved into place, or nothing: never half a model on the volume.
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
