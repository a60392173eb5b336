"""Downloads from the console with the pod's own token: the fetchers' helpers.

``fetch_inputs.py``, the ``fetch-inputs`` init container of jobs', notebooks'
and serving pods on Kubernetes, fetches what a pod reads (datasets, model
versions) with these. What may pass on a second try (a connection refused or
reset, a 5xx, an answer cut short of its Content-Length or of its last chunk)
is retried with backoff, ``ATTEMPTS`` times in all; a refusal (a 4xx) ends at
once with the console's own message (``Refused``), which the init container
says last, so Kubernetes shows it as the container's message. ``unzip`` unpacks
an archive refusing any member whose path would land outside its folder (``..``
or an absolute path). Standard library only: the init container's image needs
only a Python 3.
"""

import http.client
import json
import os
import shutil
import time
import urllib.error
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
                raise Refused(f"the archive has a file outside its folder: {member.filename}")
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
