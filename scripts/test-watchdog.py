#!/usr/bin/env python3
"""Runs a `cargo test` command and ends it if one test hangs, naming the test.

    scripts/test-watchdog.py [--per-test SECONDS] -- cargo test ...

Output passes through line by line. libtest says "test X has been running for
over 60 seconds" once for a slow test and "test X ... ok" when it ends; a test
still not ended SECONDS after it began (default 900: our slowest takes under
two minutes) is a hang. Then the watchdog prints which tests hang, the
processes they left (what a test waits on is usually among them), stops the
command and exits 124, so that a hang fails the stage in seconds, named at the
end of the log, instead of running into CI's time limit with no word.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

SLOW = re.compile(r"^test (\S+) has been running for over (\d+) seconds")
ENDED = re.compile(r"^test (\S+) \.\.\. ")


def process_tree(pgid: int) -> str:
    """The command's processes, with how long each has run."""
    try:
        out = subprocess.run(
            ["ps", "-o", "pid,ppid,etimes,args", "-g", str(pgid)],
            capture_output=True, text=True, timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError) as err:
        return f"(ps failed: {err})"
    return "\n".join(line[:300] for line in out.splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-test", type=float, default=900.0, metavar="SECONDS")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")

    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    # name -> when it began (its first warning's time less the warning's seconds)
    slow: dict[str, float] = {}
    lock = threading.Lock()
    hung: list[str] = []

    def read() -> None:
        assert child.stdout is not None
        for raw in iter(child.stdout.readline, b""):
            sys.stdout.buffer.write(raw)
            sys.stdout.buffer.flush()
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with lock:
                if m := SLOW.match(line):
                    slow.setdefault(m.group(1), time.monotonic() - float(m.group(2)))
                elif m := ENDED.match(line):
                    slow.pop(m.group(1), None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    while child.poll() is None:
        time.sleep(5)
        now = time.monotonic()
        with lock:
            hung = sorted(n for n, began in slow.items() if now - began > args.per_test)
        if hung:
            break
    if not hung:
        reader.join()
        return child.returncode

    print(f"\n==> test-watchdog: stopping the tests, {len(hung)} ran over {args.per_test:.0f} s:",
          flush=True)
    with lock:
        for name in hung:
            print(f"    {name} (running for {time.monotonic() - slow[name]:.0f} s)")
        others = sorted(set(slow) - set(hung))
    if others:
        print("    also still running: " + ", ".join(others))
    print("==> their processes:\n" + process_tree(child.pid), flush=True)
    os.killpg(child.pid, signal.SIGTERM)
    try:
        child.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    print(f"==> test-watchdog: hung: {', '.join(hung)}", flush=True)
    return 124


if __name__ == "__main__":
    sys.exit(main())
