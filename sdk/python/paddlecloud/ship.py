"""Runs a replica's command and sends the metric files it writes to the console.

On the local executor the console reads a job's TensorBoard
(``events.out.tfevents.*``) and VisualDL (``vdlrecords.*.log``) files from
the job's directory itself. Inside a pod on Kubernetes it cannot, so the
console starts each replica's command through this module::

    python3 -c 'import sys; sys.path.insert(0, "/opt/paddlecloud/python"); \\
        from paddlecloud.ship import main; main()' python3 train.py --epochs 3

It runs the command as its child (same stdin, stdout, stderr and
environment; signals it receives are passed on; it exits with the command's
status), and meanwhile, every second, sends what was appended to any metric
file below the working directory to the console with the job's token
(``POST /api/v1/jobs/<job>/metric-files/<path>``). The console decodes the
bytes with the same reader as a local job's files, so charts look the same
on both backends, and the pod needs no route to anything but the console.
After the command ends, one last pass sends the rest.

A console that cannot be reached costs the job nothing: the command runs
regardless, and the files are sent when the console answers again.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

from .client import Client
from .errors import PaddleCloudError

log = logging.getLogger("paddlecloud.ship")

#: Seconds between looks at the files: charts promise points within two.
INTERVAL = 1.0
#: How much of a file one request carries, unless a record needs more.
PIECE = 1 << 20
#: The most the console takes in one request (its ``MAX_PIECE``).
MAX_PIECE = 4 << 20
#: How deep below the working directory files are looked for.
MAX_DEPTH = 6
#: Top-level folders never searched, as for a local job.
SKIP_DIRS = ("logs", "__pycache__", ".git", "node_modules")
#: How long the last pass may try to reach the console after the command ends
#: (``$PADDLECLOUD_SHIP_LAST_PASS_SECS`` overrides it).
FINAL_PASS_SECONDS = 30.0
#: Where a container's termination message goes (the pod's default).
TERMINATION_LOG = "/dev/termination-log"
#: Signals passed on to the command.
FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def is_metric_file(name: str) -> bool:
    """Whether the console reads a file of this name (the writers' own tests)."""
    return "tfevents" in name or "vdlrecords" in name


def find_files(root: str) -> List[str]:
    """Metric files below ``root`` as sorted relative paths with ``/``."""
    found = []
    stack = [(root, 0)]
    while stack:
        at, depth = stack.pop()
        try:
            entries = list(os.scandir(at))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < MAX_DEPTH and not (depth == 0 and entry.name in SKIP_DIRS):
                        stack.append((entry.path, depth + 1))
                elif entry.is_file(follow_symlinks=False) and is_metric_file(entry.name):
                    found.append(os.path.relpath(entry.path, root).replace(os.sep, "/"))
            except OSError:
                continue
    return sorted(found)


class _File:
    """What the console has of one file."""

    def __init__(self) -> None:
        self.offset = 0
        self.plugin_tags: List[Dict[str, Any]] = []
        #: The file's size when the console last could not go on (an
        #: incomplete record, or damage): nothing to send until it grows.
        self.waiting_at: Optional[int] = None
        #: How much the next piece must hold to finish the record at ``offset``.
        self.need = 0
        #: Set when the console refused the file for good.
        self.refused = False


class Shipper:
    """Sends the metric files below ``root`` as job ``job``'s metrics."""

    def __init__(self, client: Client, job: str, root: str) -> None:
        self.client = client
        self.job = job
        self.root = root
        self.files: Dict[str, _File] = {}
        self.unreachable_since: Optional[float] = None

    def pass_once(self) -> bool:
        """Sends what every file gained; whether the console took all of it."""
        for rel in find_files(self.root):
            state = self.files.setdefault(rel, _File())
            if not state.refused and not self._ship(rel, state):
                return False
        return True

    def _ship(self, rel: str, state: _File) -> bool:
        path = os.path.join(self.root, rel)
        while True:
            try:
                size = os.path.getsize(path)
            except OSError:
                return True
            if size < state.offset:  # replaced by a new file of the same name
                self.files[rel] = state = _File()
            if size <= state.offset or size == state.waiting_at:
                return True
            want = min(max(PIECE, state.need), size - state.offset)
            if state.need > MAX_PIECE:
                if size < state.offset + state.need:
                    return True
                log.warning("%s: a record of %d bytes at byte %d is more than the console "
                            "takes at once; skipped", rel, state.need, state.offset)
                state.offset += state.need
                state.need = 0
                continue
            try:
                with open(path, "rb") as f:
                    f.seek(state.offset)
                    data = f.read(want)
            except OSError:
                return True
            try:
                ack = self.client.ship_metric_file(
                    self.job, rel, state.offset, data, state.plugin_tags
                )
            except PaddleCloudError as err:
                if err.status is not None and 400 <= err.status < 500 and err.status != 429:
                    log.warning("PaddleBoard refused %s of job %s: %s", rel, self.job, err)
                    state.refused = True
                    return True
                if self.unreachable_since is None:
                    self.unreachable_since = time.monotonic()
                    log.warning("PaddleBoard unreachable (%s); metric files are sent when it "
                                "answers", err)
                return False
            self.unreachable_since = None
            for warning in ack.get("warnings") or []:
                log.warning("%s: %s", rel, warning)
            state.plugin_tags = ack.get("plugin_tags") or []
            state.need = int(ack.get("next_record") or 0)
            moved = int(ack["offset"]) > state.offset
            state.offset = int(ack["offset"])
            if not moved:
                # Nothing complete in what was sent: wait for the file to grow,
                # unless only the piece's size held the record back.
                if not (state.need > len(data) and size - state.offset > len(data)):
                    state.waiting_at = size
                    return True
            else:
                state.waiting_at = None


def _termination_message(text: str) -> None:
    """Leaves ``text`` where Kubernetes reads a container's last words (the
    console shows a "Could not start" one as the job's reason)."""
    if os.path.exists(TERMINATION_LOG):
        try:
            with open(TERMINATION_LOG, "w") as f:
                f.write(text)
        except OSError:
            pass


def _exit_status(code: int) -> int:
    """The shell's status for a child's return code (``-N``: killed by N)."""
    return 128 - code if code < 0 else code


def run(
    command: Sequence[str],
    client: Optional[Client],
    job: Optional[str],
    last_pass: float = FINAL_PASS_SECONDS,
) -> int:
    """Runs ``command``, shipping metric files meanwhile; returns its status."""
    try:
        child = subprocess.Popen(list(command))
    except OSError as err:
        why = f"Could not start {command[0]}: {err.strerror or err}"
        print(why, file=sys.stderr, flush=True)
        _termination_message(why)
        return 127 if isinstance(err, FileNotFoundError) else 126
    for name in FORWARDED:
        signum = getattr(signal, name, None)
        if signum is not None:
            signal.signal(signum, lambda s, _f: child.send_signal(s))
    shipper = Shipper(client, job, os.getcwd()) if client and job else None
    done = threading.Event()

    def watch() -> None:
        while not done.wait(INTERVAL):
            try:
                shipper.pass_once()
            except Exception as err:  # never let the watcher take the job down
                log.warning("sending metric files failed: %r", err)

    watcher = threading.Thread(target=watch, name="paddlecloud-ship", daemon=True)
    if shipper:
        watcher.start()
    code = child.wait()  # a signal's handler runs, then the wait goes on (PEP 475)
    done.set()
    if shipper:
        watcher.join()
        deadline = time.monotonic() + last_pass
        while True:
            try:
                if shipper.pass_once():
                    break
            except Exception as err:
                log.warning("sending metric files failed: %r", err)
                break
            if time.monotonic() > deadline:
                log.warning("PaddleBoard unreachable: the job's last metric points were not sent")
                break
            time.sleep(INTERVAL)
    return _exit_status(code)


def main(argv: Optional[Sequence[str]] = None) -> None:
    """``python3 -m paddlecloud.ship COMMAND [ARGS...]`` (see the module)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python3 -m paddlecloud.ship COMMAND [ARGS...]", file=sys.stderr)
        sys.exit(2)
    logging.basicConfig(level=logging.WARNING, format="paddlecloud: %(message)s")
    server = os.environ.get("PADDLECLOUD_SERVER")
    token = os.environ.get("PADDLECLOUD_JOB_TOKEN")
    job = os.environ.get("PADDLE_JOB_ID")
    client = Client(server=server, key=token, timeout=30) if server and token and job else None
    last_pass = float(os.environ.get("PADDLECLOUD_SHIP_LAST_PASS_SECS") or FINAL_PASS_SECONDS)
    sys.exit(run(args, client, job, last_pass))


if __name__ == "__main__":
    main()
