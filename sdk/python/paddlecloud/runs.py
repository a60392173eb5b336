"""Local runs: a script run on your own machine, tracked like a cluster job.

    import paddlecloud

    with paddlecloud.run(params={"lr": 0.1}) as run:
        for step in range(100):
            loss = train_one_step()
            paddlecloud.draw_board(loss, "train/loss")   # or run.log("train/loss", loss)
        run.log_artifact("output/", model="fit-a-line")

The run is a job of your account (``source: local``) with the job table's row,
the log console (what the script prints, C++ logs included), PaddleBoard, its parameters and where
it ran: host, user, command line, working directory, Python and package
versions, git commit and uncommitted diff. How it ends is recorded honestly: a
normal end is succeeded, an exception failed (its traceback in the log),
``sys.exit(n)`` failed with the code (``sys.exit(0)`` succeeded), Ctrl-C or
SIGTERM stopped. A heartbeat every 10 s keeps it running; a machine that
vanishes leaves it "lost" (a late report brings it back). "Stop" on the console
interrupts the program at its next heartbeat, as Ctrl-C would.

Every report is written to a spool file first (``$PADDLECLOUD_SPOOL``, else
``~/.cache/paddlecloud/spool``) and sent from there in order, in the
background. When the console cannot be reached, nothing is lost: what was not
sent stays spooled and is sent by the next run or `sync()`, and the console
takes each report once however often it arrives. ``paddlecloud.init()`` is the
same without a ``with`` block (it ends when the program does).

Importing this module does nothing by itself: no thread, no file, no request.
"""

from __future__ import annotations

import atexit
import getpass
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import uuid
from typing import Any, Callable, Dict, List, Optional

from .client import Client, _json_float
from .errors import PaddleCloudError

__all__ = ["Run", "run", "init", "sync", "spool_dir"]

SPOOL_ENV = "PADDLECLOUD_SPOOL"
#: Seconds between heartbeats (the console marks a run lost after its window).
HEARTBEAT_SECS = 10.0
#: Longest diff of uncommitted changes sent (the console's limit).
MAX_DIFF = 512 * 1024
#: Packages whose versions a run records when they are installed.
PACKAGES = ("paddlepaddle", "paddlepaddle-gpu", "numpy", "visualdl", "paddlecloud")
MAX_POINTS = 10_000
MAX_LOG = 1024 * 1024


def spool_dir() -> str:
    """Where reports wait until the console has them."""
    return os.path.expanduser(
        os.environ.get(SPOOL_ENV) or os.path.join("~", ".cache", "paddlecloud", "spool")
    )


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the run's process gets SIGTERM: the
    run ends as stopped."""


def _git(cwd: str) -> Optional[Dict[str, Any]]:
    def git(*args: str) -> Optional[str]:
        try:
            out = subprocess.run(
                ["git", *args], cwd=cwd, capture_output=True, timeout=5, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.decode("utf-8", "replace")

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    branch = (git("rev-parse", "--abbrev-ref", "HEAD") or "").strip()
    dirty = bool((git("status", "--porcelain", "--untracked-files=no") or "").strip())
    diff = git("diff", "HEAD") if dirty else ""
    diff = diff or ""
    if len(diff.encode("utf-8")) > MAX_DIFF:
        diff = diff.encode("utf-8")[:MAX_DIFF].decode("utf-8", "ignore") + "\n[diff cut]\n"
    return {
        "commit": commit.strip(),
        "branch": "" if branch == "HEAD" else branch,
        "dirty": dirty,
        "diff": diff,
    }


def _facts(command: Optional[List[str]] = None, client: str = "python") -> Dict[str, Any]:
    from importlib import metadata

    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    try:
        user = getpass.getuser()
    except Exception:  # no user name (containers): not worth failing over
        user = ""
    script = sys.argv[0] if sys.argv and sys.argv[0] else ""
    where = os.path.dirname(os.path.abspath(script)) if script else os.getcwd()
    return {
        "host": socket.gethostname(),
        "user": user,
        "command": command if command is not None else [sys.executable, *sys.argv],
        "working_dir": os.getcwd(),
        "python": platform.python_version(),
        "packages": packages,
        "git": _git(where if os.path.isdir(where) else os.getcwd()),
        "client": client,
    }


class _Spool:
    """One run's reports in order: ``<id>.jsonl`` (one report a line, each
    with its sequence number) and ``<id>.state`` (how many the console has,
    and the run's name once it has the start). A report is written before it
    is sent, and counted as sent only once the console answered."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.state_path = path[: -len(".jsonl")] + ".state"
        self.lock_path = path[: -len(".jsonl")] + ".lock"
        self.lock = threading.Lock()
        self.state: Dict[str, Any] = {"sent": 0, "name": None}
        self._lock_file = None
        self.count = 0

    def claim(self, *, existing: bool = False) -> bool:
        """Holds ``<id>.lock`` while this process sends the run's reports; False
        when another process (the run itself, or another sync) holds it, or,
        with ``existing``, when the run ended and removed its spool between
        the folder's listing and this claim. The lock goes with its process,
        however that ends. What was sent is read only once the lock is held:
        read earlier, it may be a run's count from before it sent the rest."""
        import fcntl

        self._lock_file = open(self.lock_path, "a")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.release()
            return False
        if existing and not os.path.exists(self.path):
            # Opening the lock made a new file where the run had removed its
            # own: take it away again, unless another claim already did.
            try:
                if os.stat(self.lock_path).st_ino == os.fstat(self._lock_file.fileno()).st_ino:
                    os.remove(self.lock_path)
            except FileNotFoundError:
                pass
            self.release()
            return False
        if os.path.exists(self.state_path):
            with open(self.state_path, encoding="utf-8") as f:
                self.state.update(json.load(f))
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                self.count = sum(1 for line in f if line.endswith("\n"))
        return True

    def append(self, report: Dict[str, Any]) -> None:
        with self.lock:
            line = json.dumps({"seq": self.count, **report}) + "\n"
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            self.count += 1

    def pending(self) -> List[Dict[str, Any]]:
        with self.lock:
            sent = self.state["sent"]
            out = []
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    if not line.endswith("\n"):
                        break  # torn last line of a crash: never acknowledged
                    report = json.loads(line)
                    if report["seq"] >= sent:
                        out.append(report)
            return out

    def acknowledge(self, seq: int, name: Optional[str] = None) -> None:
        with self.lock:
            self.state["sent"] = seq + 1
            if name:
                self.state["name"] = name
            tmp = self.state_path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(self.state, f)
            os.replace(tmp, self.state_path)

    def done(self) -> bool:
        return self.state["sent"] >= self.count

    def release(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def remove(self) -> None:
        for p in (self.path, self.state_path, self.lock_path):
            try:
                os.remove(p)
            except FileNotFoundError:
                pass
        self.release()


def _deliver(client: Client, spool: _Spool) -> bool:
    """Sends what the console does not have yet, in order; False when it
    could not be reached (the rest waits)."""
    for report in spool.pending():
        kind, name = report["kind"], spool.state["name"]
        path = None if name is None else f"/local-runs/{urllib_quote(name)}"
        try:
            if kind == "start":
                job = client._json("POST", "/local-runs", body=report["body"])
                spool.acknowledge(report["seq"], job["name"])
                continue
            if path is None:
                return False  # no start yet: cannot happen in order
            if kind == "log":
                client._json("POST", f"{path}/log", body=report["body"])
            elif kind == "points":
                client.log_metrics(name, report["body"])
            elif kind == "params":
                client._json("POST", f"{path}/params", body=report["body"])
            elif kind == "end":
                client._json("POST", f"{path}/end", body=report["body"])
        except PaddleCloudError as err:
            permanent = err.status is not None and 400 <= err.status < 500 and err.status not in (408, 429)
            if not permanent:
                return False
            # The console will never take it (a bad value): say so, go on.
            print(f"paddlecloud: the console refused a {kind} report of run {name}: {err}",
                  file=sys.__stderr__)
        spool.acknowledge(report["seq"])
    return True


def urllib_quote(segment: str) -> str:
    import urllib.parse

    return urllib.parse.quote(segment, safe="")


class _FdCapture:
    """Copies what is written to file descriptors 1 and 2 into the run's log
    while it still reaches where it went: Python's prints, and what C++ code
    (Paddle's glog lines) and child processes write. Each descriptor becomes
    a pipe that a thread reads."""

    def __init__(self, sink: Callable[[str], None]) -> None:
        self.sink = sink
        self.saved: Dict[int, int] = {}
        self.threads: List[threading.Thread] = []

    def start(self) -> None:
        for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
            stream.flush()
            original = os.dup(fd)
            read, write = os.pipe()
            os.dup2(write, fd)
            os.close(write)
            self.saved[fd] = original
            t = threading.Thread(target=self._pump, args=(read, original),
                                 name=f"paddlecloud-run-fd{fd}", daemon=True)
            t.start()
            self.threads.append(t)

    def _pump(self, read: int, original: int) -> None:
        import codecs

        decode = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            try:
                data = os.read(read, 65536)
            except OSError:
                break
            if not data:
                break
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(original, view):]
                except OSError:
                    break  # the terminal went away: the log still gets it
            self.sink(decode.decode(data))
        self.sink(decode.decode(b"", final=True))
        os.close(read)

    def stop(self, timeout: float = 5.0) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        for fd, original in self.saved.items():
            os.dup2(original, fd)  # the pipe's last writer goes: its reader ends
        for t in self.threads:
            t.join(timeout)  # a child that kept the pipe open is not waited for
        for original in self.saved.values():
            os.close(original)
        self.saved.clear()


def _descriptors_are_streams() -> bool:
    """Whether sys.stdout/stderr write to descriptors 1 and 2 (not in a
    notebook's kernel, whose streams are its own)."""
    try:
        return sys.stdout.fileno() == 1 and sys.stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):
        return False


class _Tee:
    """Writes to the real stream and keeps a copy for the run's log (where
    the streams are not descriptors 1 and 2)."""

    def __init__(self, stream: Any, sink: Callable[[str], None]) -> None:
        self._stream = stream
        self._sink = sink

    def write(self, text: str) -> int:
        n = self._stream.write(text)
        self._sink(text)
        return n

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class Run:
    """One local run. Use `run()` or `init()`; ``run.name`` is its job's name
    once the console has its start (or when given)."""

    def __init__(
        self,
        name: Optional[str] = None,
        params: Optional[Dict[str, Any]] = None,
        *,
        client: Optional[Client] = None,
        capture_output: bool = True,
        command: Optional[List[str]] = None,
        flush_interval: float = 1.0,
        heartbeat: Optional[float] = None,
        client_kind: str = "python",
    ) -> None:
        self.client = client or _default_client()
        self.requested_name = name
        self.params = dict(params or {})
        self.capture_output = capture_output
        self.command = command
        self.flush_interval = flush_interval
        # $PADDLECLOUD_HEARTBEAT_SECS: for consoles with a short lost window.
        self.heartbeat_secs = heartbeat or float(
            os.environ.get("PADDLECLOUD_HEARTBEAT_SECS") or HEARTBEAT_SECS
        )
        self.client_kind = client_kind
        self.client_id = uuid.uuid4().hex
        self._spool: Optional[_Spool] = None
        # Guards what the program hands over (output, points) as it comes.
        self._lock = threading.Lock()
        self._output: List[str] = []
        self._points: List[Dict[str, Any]] = []
        self._next_step: Dict[str, int] = {}
        # Held while output and points become spooled reports: the sender
        # and finish() both do it, and a log report's offset is only right
        # when the text before it was spooled first.
        self._take_lock = threading.Lock()
        self._offset = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        # flush(): tickets asked, and the highest whose reports a delivery
        # pass that began after it has sent (a pass already under way when
        # flush() was called does not count).
        self._flushes = threading.Condition()
        self._asked = 0
        self._served = 0
        self._give_up_at = 0.0
        self._threads: List[threading.Thread] = []
        self._saved: Dict[str, Any] = {}
        self._ended = False
        # Set once the run is ending: a signal then waits until the end is
        # delivered, and is raised again after (see _on_signal).
        self._ending = False
        self._deferred: List[int] = []
        self._stop_asked = False

    # ------------------------------------------------------------ properties

    @property
    def name(self) -> Optional[str]:
        """The run's job name (None until the console named it)."""
        named = self._spool.state["name"] if self._spool else None
        return named or self.requested_name

    # ------------------------------------------------------------- reporting

    def log(self, name: str, value: Any, step: Optional[int] = None) -> None:
        """Charts ``value`` as series ``name`` on PaddleBoard (default step:
        the series' previous plus one). Sent in the background in batches."""
        with self._lock:
            if step is None:
                step = self._next_step.get(name, 0)
            self._next_step[name] = int(step) + 1
            self._points.append(
                {"tag": str(name), "step": int(step), "value": _json_float(value),
                 "wall_time": time.time()}
            )
            full = len(self._points) >= MAX_POINTS
        if full:
            self._wake.set()

    def log_params(self, params: Dict[str, Any]) -> None:
        """Records more parameters (a name given again takes the new value)."""
        self.params.update(params)
        if self._spool is not None:  # before the start, they go with it
            self._spool.append({"kind": "params", "body": dict(params)})
            self._wake.set()

    def log_artifact(self, path: str, *, model: Optional[str] = None,
                     dataset: Optional[str] = None) -> Dict[str, Any]:
        """Uploads ``path`` (a file or folder) as a new version of ``model``,
        or into ``dataset``; says so in the run's log and returns what was
        made. Needs the console (an upload is not spooled)."""
        if (model is None) == (dataset is None):
            raise ValueError("log_artifact: give model= or dataset=, one of them")
        self.flush()
        if model is not None:
            made = self.client.register_model(model, path, job=self.name)
            what = f"model {model} version {made.get('version')}"
        else:
            made = self.client.upload_dataset(dataset, path)
            what = f"dataset {dataset}"
        self._write(f"[paddlecloud] {path} saved as {what}\n")
        return made

    def flush(self, timeout: Optional[float] = 30.0) -> bool:
        """Sends everything reported so far; whether the console has it all."""
        with self._flushes:
            self._asked += 1
            ticket = self._asked
        self._wake.set()
        with self._flushes:
            return self._flushes.wait_for(lambda: self._served >= ticket, timeout)

    # ------------------------------------------------------------- lifecycle

    def start(self) -> "Run":
        """Starts the run: its start report, output capture, the sender and
        the heartbeat. A signal that comes while it starts ends the run as
        stopped (the console is told) before it goes on."""
        if threading.current_thread() is threading.main_thread():
            # First: a SIGTERM from here on ends the run as stopped, never
            # the process alone with the run left "running".
            self._saved["sigterm"] = signal.signal(signal.SIGTERM, self._on_signal)
            self._saved["sigint"] = signal.signal(signal.SIGINT, self._on_signal)
        try:
            self._start()
        except BaseException as exc:
            if self._spool is None or self._spool.count == 0:
                # Before its start was spooled: as if no run had begun. A
                # SIGTERM then does what it would have done without one.
                if self._spool is not None:
                    self._spool.remove()
                self._restore_signals()
                if isinstance(exc, Terminated):
                    signal.raise_signal(signal.SIGTERM)
                raise
            self.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def _start(self) -> None:
        os.makedirs(spool_dir(), exist_ok=True)
        self._spool = _Spool(os.path.join(spool_dir(), f"{self.client_id}.jsonl"))
        self._spool.claim()
        body = {
            "client_id": self.client_id,
            "name": self.requested_name,
            "params": self.params,
            "facts": _facts(self.command, self.client_kind),
            "started_at": int(time.time() * 1000),
        }
        self._spool.append({"kind": "start", "body": body})
        if self.capture_output and _descriptors_are_streams():
            capture = _FdCapture(self._write)
            capture.start()
            self._saved["fds"] = capture
        elif self.capture_output:
            self._saved["stdout"], self._saved["stderr"] = sys.stdout, sys.stderr
            sys.stdout = _Tee(sys.stdout, self._write)  # type: ignore[assignment]
            sys.stderr = _Tee(sys.stderr, self._write)  # type: ignore[assignment]
        from . import board

        self._saved["board"] = board._default
        board._default = _RunBoard(self)  # draw_board() goes to this run
        for target in (self._send_loop, self._beat_loop):
            t = threading.Thread(target=target, name=f"paddlecloud-run-{target.__name__}", daemon=True)
            t.start()
            self._threads.append(t)
        # Reports an earlier run could not deliver go out too.
        threading.Thread(target=sync, kwargs={"client": self.client, "skip": self.client_id},
                         name="paddlecloud-sync", daemon=True).start()

    def finish(self, outcome: str = "succeeded", *, exit_code: Optional[int] = None,
               message: str = "", timeout: float = 10.0) -> None:
        """Ends the run (``succeeded``, ``failed`` or ``stopped``) and sends
        what is left, waiting at most ``timeout`` s; what the console did not
        get stays spooled. SIGTERM or Ctrl-C meanwhile waits until the end is
        sent, then takes effect."""
        self._ending = True
        if self._ended:
            return
        self._ended = True
        try:
            self._restore_capture()
            if self._spool.count == 0:
                # Interrupted before its start was spooled: the console never
                # heard of it, and there is nothing to tell it.
                self._spool.remove()
                return
            self._take_output(final=True)
            self._take_points()
            self._spool.append({"kind": "end", "body": {
                "outcome": outcome, "exit_code": exit_code, "message": message,
                "finished_at": int(time.time() * 1000)}})
            self._give_up_at = time.monotonic() + timeout
            self._stop.set()
            self._wake.set()
            if self._threads:
                # The sender alone: the heartbeat thread ends at the stop
                # unless a beat is under way, and nothing waits for that.
                self._threads[0].join(max(0.0, self._give_up_at - time.monotonic()) + 1.0)
            else:
                self._send_loop()  # it never started: deliver from here
            if self._spool.done():
                self._spool.remove()
            else:
                self._spool.release()
                left = self._spool.count - self._spool.state["sent"]
                print(f"paddlecloud: the console at {self.client.server} could not be reached; "
                      f"{left} reports of run {self.name or self.client_id} wait in {self._spool.path} "
                      "and are sent by the next run or paddlecloud.sync().", file=sys.__stderr__)
        finally:
            self._restore_signals()
            for signum in self._deferred:
                signal.raise_signal(signum)  # what came while it ended: now
            self._deferred.clear()

    def __enter__(self) -> "Run":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._ending = True
        if exc_type is None:
            self.finish("succeeded")
        elif issubclass(exc_type, KeyboardInterrupt):
            if self._stop_asked:
                why = "Stopped from the console."
            elif issubclass(exc_type, Terminated):
                why = "Terminated (SIGTERM)."
            else:
                why = "Interrupted (KeyboardInterrupt)."
            self.finish("stopped", message=why)
        elif issubclass(exc_type, SystemExit):
            code = _exit_code(exc)
            if code == 0:
                self.finish("succeeded", exit_code=0)
            else:
                self.finish("failed", exit_code=code, message=f"sys.exit({exc.code!r})")
        else:
            self._write("".join(traceback.format_exception(exc_type, exc, tb)))
            self.finish("failed", message=f"{exc_type.__name__}: {exc}"[:2000])
        return False

    # -------------------------------------------------------------- internals

    def _write(self, text: str) -> None:
        with self._lock:
            self._output.append(text)

    def _on_signal(self, signum: int, frame: Any) -> None:
        """SIGTERM and SIGINT while the run is on. While it ends, a signal
        waits for the end to be sent (then it is raised again, with the
        program's own handler back). "Stop" on the console interrupts the
        program even where SIGINT was ignored when it started (a job started
        in the background of a script); a real Ctrl-C does what it did
        before the run."""
        # The frame check closes the window between entering the end and
        # setting the flag (a signal handled at __exit__'s first instruction).
        if self._ending or (frame is not None and frame.f_code in _ENDING_CODE):
            self._deferred.append(signum)
            return
        if signum == signal.SIGTERM:
            raise Terminated()
        previous = self._saved.get("sigint", signal.default_int_handler)
        if self._stop_asked or previous in (signal.SIG_DFL, None):
            raise KeyboardInterrupt()
        if previous == signal.SIG_IGN:
            return
        previous(signum, frame)

    def _restore_capture(self) -> None:
        from . import board

        if "fds" in self._saved:
            self._saved.pop("fds").stop()
        if "stdout" in self._saved:
            sys.stdout, sys.stderr = self._saved.pop("stdout"), self._saved.pop("stderr")
        if "board" in self._saved:
            board._default = self._saved.pop("board")

    def _restore_signals(self) -> None:
        for name, signum in (("sigterm", signal.SIGTERM), ("sigint", signal.SIGINT)):
            if name in self._saved:
                previous = self._saved.pop(name)
                signal.signal(signum, signal.SIG_DFL if previous is None else previous)

    def _take_output(self, final: bool = False) -> None:
        with self._take_lock:
            with self._lock:
                text = "".join(self._output)
                cut = len(text) if final else text.rfind("\n") + 1
                ready, rest = text[:cut], text[cut:]
                self._output = [rest] if rest else []
            while ready:
                piece = ready[:MAX_LOG]
                if len(piece) < len(ready):
                    cut = piece.rfind("\n") + 1 or len(piece)
                    piece = piece[:cut]
                ready = ready[len(piece):]
                self._spool.append({"kind": "log", "body": {
                    "offset": self._offset, "text": piece, "at": int(time.time() * 1000)}})
                self._offset += len(piece.encode("utf-8"))

    def _take_points(self) -> None:
        with self._take_lock:
            with self._lock:
                points, self._points = self._points, []
            for i in range(0, len(points), MAX_POINTS):
                self._spool.append({"kind": "points", "body": points[i:i + MAX_POINTS]})

    def _send_loop(self) -> None:
        """Spools what the program handed over and delivers the spool, each
        flush interval or when woken. Once the run ends it goes on until the
        console has every report, the end included, or the end's time is up.
        Whether it may return is decided by what was true *before* a pass
        began: finish() spools the end before it sets the stop, so a pass
        that saw the stop also read the end; one that began earlier may not
        have, and another pass follows."""
        backoff = 0.5
        while True:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            with self._flushes:
                ticket = self._asked
            ending = self._stop.is_set()
            try:
                if not ending:
                    self._take_output()
                    self._take_points()
                delivered = _deliver(self.client, self._spool)
            except Exception as err:  # never let the sender die silently
                print(f"paddlecloud: sending run reports failed ({err!r}); retrying",
                      file=sys.__stderr__)
                delivered = False
            if delivered:
                backoff = 0.5
                with self._flushes:
                    self._served = max(self._served, ticket)
                    self._flushes.notify_all()
                if ending:
                    return
                continue
            if ending:
                if time.monotonic() + backoff > self._give_up_at:
                    return  # the end waited long enough; the spool keeps the rest
                time.sleep(backoff)
            else:
                self._stop.wait(backoff)  # the end wakes it: no backoff then
            backoff = min(backoff * 2, 30.0)

    def _beat_loop(self) -> None:
        while not self._stop.wait(self.heartbeat_secs):
            name = self._spool.state["name"]
            if name is None:
                continue
            try:
                beat = self.client._json("POST", f"/local-runs/{urllib_quote(name)}/heartbeat")
            except Exception:
                continue  # offline (or a garbled answer): the next beat tries again
            if isinstance(beat, dict) and beat.get("stop") and not self._stop_asked:
                # "Stop" on the console: the program is interrupted as by
                # Ctrl-C (a real SIGINT, which also wakes a sleep; the run's
                # own handler turns it into KeyboardInterrupt even where
                # SIGINT was ignored).
                # To the main thread itself: a signal the kernel hands to
                # another thread would leave the main thread's sleep asleep.
                self._stop_asked = True
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


#: The code of the methods that end a run: a signal handled in them waits.
_ENDING_CODE = (Run.__exit__.__code__, Run.finish.__code__)


class _RunBoard:
    """`draw_board()` while a run is active."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def draw(self, value: Any, name: str, step: Optional[int] = None) -> None:
        self.run.log(name, value, step)

    def flush(self, timeout: Optional[float] = 30.0) -> bool:
        return self.run.flush(timeout)

    def close(self, timeout: Optional[float] = 30.0) -> bool:
        return self.run.flush(timeout)


def _exit_code(exc: BaseException) -> int:
    code = getattr(exc, "code", 1)
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1  # sys.exit("message") exits 1


def _default_client() -> Client:
    from . import default_client

    return default_client()


def run(name: Optional[str] = None, params: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Run:
    """A local run to use as ``with paddlecloud.run(...) as run:``. ``name``
    is its job's name (default: after the script, ``train``, ``train-2``…),
    ``params`` its parameters. See the module's documentation."""
    return Run(name, params, **kwargs)


_active: Optional[Run] = None


def init(name: Optional[str] = None, params: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Run:
    """Starts a local run that ends when the program does: succeeded, failed
    on an uncaught exception or ``sys.exit(n)`` with n ≠ 0, stopped on
    Ctrl-C or SIGTERM. Calling it again returns the same run."""
    global _active
    if _active is not None:
        return _active
    current = Run(name, params, **kwargs).start()
    _active = current
    outcome: Dict[str, Any] = {}
    real_exit, real_hook = sys.exit, sys.excepthook

    def exit_(code: Any = None) -> None:
        outcome.setdefault("exit", code)
        real_exit(code)

    def hook(exc_type, exc, tb) -> None:
        outcome["exc"] = (exc_type, exc, tb)
        real_hook(exc_type, exc, tb)

    def at_exit() -> None:
        current._ending = True  # a signal from here on waits for the end
        sys.exit, sys.excepthook = real_exit, real_hook
        if "exc" in outcome:
            current.__exit__(*outcome["exc"])
        elif "exit" in outcome:
            current.__exit__(SystemExit, SystemExit(outcome["exit"]), None)
        else:
            current.__exit__(None, None, None)

    sys.exit, sys.excepthook = exit_, hook  # type: ignore[assignment]
    atexit.register(at_exit)
    return current


def sync(timeout: float = 60.0, *, client: Optional[Client] = None,
         skip: Optional[str] = None) -> int:
    """Sends the reports of ended runs that the console did not get (it was
    down, or the machine offline); returns how many runs are still waiting."""
    folder = spool_dir()
    if not os.path.isdir(folder):
        return 0
    client = client or _default_client()
    deadline = time.time() + timeout
    waiting = 0
    for entry in sorted(os.listdir(folder)):
        if not entry.endswith(".jsonl") or entry == f"{skip}.jsonl":
            continue
        spool = _Spool(os.path.join(folder, entry))
        if not spool.claim(existing=True):
            continue  # a run still going, or another sync, sends these (or sent them)
        while not _deliver(client, spool):
            if time.time() > deadline:
                break
            time.sleep(1.0)
        if spool.done():
            spool.remove()
        else:
            spool.release()
            waiting += 1
    return waiting
