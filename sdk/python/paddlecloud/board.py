"""PaddleBoard from Python: ``draw_board(value, name, step=None)``.

Points are queued and sent in the background in batches (at most 10,000 a
call, at least once a second), so logging a scalar costs the training loop a
queue append. Whatever is queued is sent when the program exits. Network
trouble never stops training: failed batches are retried with backoff, and
only when more than ``max_queued`` points wait are the oldest dropped, with a
warning.

Inside a job the console started, the board needs no set-up: the executor
gives every replica ``PADDLECLOUD_SERVER``, ``PADDLECLOUD_JOB_TOKEN`` (a
token that writes this job's metrics and nothing else) and ``PADDLE_JOB_ID``.
Elsewhere it uses the credentials file and the job named by
``PADDLECLOUD_JOB`` or `Board(job=...)`.
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import threading
import time
from typing import Any, Deque, Dict, List, Optional

from .client import Client, _json_float
from .errors import PaddleCloudError

__all__ = ["Board", "draw_board", "flush_board"]

log = logging.getLogger("paddlecloud.board")

#: Most points per request (the server's limit).
MAX_BATCH = 10_000


class Board:
    """Sends one job's scalars to PaddleBoard.

    ``client`` and ``job`` default to the job this process runs in (see the
    module's documentation), else the credentials file and ``$PADDLECLOUD_JOB``.
    """

    def __init__(
        self,
        job: Optional[str] = None,
        client: Optional[Client] = None,
        *,
        flush_interval: float = 1.0,
        max_queued: int = 1_000_000,
    ) -> None:
        token = os.environ.get("PADDLECLOUD_JOB_TOKEN")
        server = os.environ.get("PADDLECLOUD_SERVER")
        if client is None:
            client = Client(server=server, key=token) if token and server else Client()
        job = job or os.environ.get("PADDLE_JOB_ID") or os.environ.get("PADDLECLOUD_JOB")
        if not job:
            raise PaddleCloudError(
                "Which job are these metrics for? Run inside a PaddleCloud job, set "
                "PADDLECLOUD_JOB, or pass Board(job=...).",
                code="invalid",
            )
        self.job = job
        self.client = client
        self.flush_interval = flush_interval
        self.max_queued = max_queued
        self._queue: Deque[Dict[str, Any]] = collections.deque()
        self._next_step: Dict[str, int] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False
        self._dropped = 0
        self._thread = threading.Thread(target=self._run, name="paddleboard", daemon=True)
        self._thread.start()

    def draw(
        self, value: Any, name: str, step: Optional[int] = None, wall_time: Optional[float] = None
    ) -> None:
        """Queues one scalar of series ``name``. Without ``step``, the tag's
        previous step plus one (0 for its first point)."""
        point = {
            "tag": str(name),
            "value": _json_float(value),
            "wall_time": time.time() if wall_time is None else float(wall_time),
        }
        with self._lock:
            if step is None:
                step = self._next_step.get(point["tag"], 0)
            point["step"] = int(step)
            self._next_step[point["tag"]] = int(step) + 1
            self._queue.append(point)
            if len(self._queue) > self.max_queued:
                self._queue.popleft()
                self._dropped += 1
            self._idle.clear()
            full = len(self._queue) >= MAX_BATCH
        if full:
            self._wake.set()

    def flush(self, timeout: Optional[float] = 30.0) -> bool:
        """Sends what is queued now; returns whether it was all sent in time."""
        self._wake.set()
        return self._idle.wait(timeout)

    def close(self, timeout: Optional[float] = 30.0) -> bool:
        """Flushes and stops the sender."""
        sent = self.flush(timeout)
        self._closed = True
        self._wake.set()
        return sent

    def _take(self) -> List[Dict[str, Any]]:
        with self._lock:
            n = min(len(self._queue), MAX_BATCH)
            return [self._queue.popleft() for _ in range(n)]

    def _put_back(self, batch: List[Dict[str, Any]]) -> None:
        with self._lock:
            self._queue.extendleft(reversed(batch))

    def _run(self) -> None:
        backoff = 0.5
        while True:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            while True:
                batch = self._take()
                if not batch:
                    with self._lock:
                        if not self._queue:
                            self._idle.set()
                    break
                try:
                    self.client.log_metrics(self.job, batch)
                    backoff = 0.5
                except PaddleCloudError as err:
                    if err.status is not None and 400 <= err.status < 500 and err.status != 429:
                        # The server will never take this batch: say so once, go on.
                        log.warning("PaddleBoard refused %d points of job %s: %s",
                                    len(batch), self.job, err)
                        continue
                    self._put_back(batch)
                    log.warning("PaddleBoard unreachable (%s); retrying in %.1f s", err, backoff)
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 30.0)
                    break
                except Exception as err:  # never let the sender die silently
                    self._put_back(batch)
                    log.warning("PaddleBoard send failed (%r); retrying in %.1f s", err, backoff)
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 30.0)
                    break
            with self._lock:  # draw() counts under the lock: read and reset under it
                dropped, self._dropped = self._dropped, 0
            if dropped:
                log.warning("PaddleBoard dropped %d old points: more than %d were waiting",
                            dropped, self.max_queued)
            if self._closed:
                return


_default: Optional[Board] = None
_default_lock = threading.Lock()


def _board() -> Board:
    global _default
    with _default_lock:
        if _default is None:
            _default = Board()
            atexit.register(_default.close)
        return _default


def draw_board(value: Any, name: str, step: Optional[int] = None) -> None:
    """Charts ``value`` (a number, or a 1-element tensor/array) as series
    ``name`` of this job on PaddleBoard, at ``step`` (default: the series'
    previous step plus one). Cheap: points are sent in the background, and
    what is queued is sent when the program exits."""
    _board().draw(value, name, step)


def flush_board(timeout: Optional[float] = 30.0) -> bool:
    """Sends every queued point now; returns whether all were sent in time."""
    return _board().flush(timeout)
