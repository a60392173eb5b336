"""`paddlecloud.ship`, which runs a replica's command in a pod and sends the metric files it
writes to the console, run here as a pod runs it (against the release binary):

    python3 -m unittest discover -s sdk/python/tests -v

The files are VisualDL records written by hand, so the tests control where a record is cut;
the Rust test `metric_files_shipped` sends the real writers' files the same way.
"""

import os
import signal
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from pathlib import Path

import test_sdk as base
from test_sdk import REPO

from paddlecloud import Client

SDK = str(REPO / "sdk" / "python")


def setUpModule():
    base.setUpModule()


def tearDownModule():
    base.tearDownModule()


def shipper(command, cwd, env=None):
    """`python3 -m paddlecloud.ship COMMAND` as the pod's shell starts it."""
    full = {**os.environ, "PYTHONPATH": SDK, **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "paddlecloud.ship", "--", *command],
        cwd=cwd,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# A VisualDL file by hand: records are a u64 length and a `Record` protobuf
# (`values`: step = 1, tag = 2, timestamp in ms = 3, value = 4 as float; 5 is an image).
WRITER = textwrap.dedent(
    """
    import os, struct, sys, time

    def varint(n):
        out = b""
        while True:
            b, n = n & 0x7F, n >> 7
            out += bytes([b | (0x80 if n else 0)])
            if not n:
                return out

    def field(no, wire, payload):
        return varint(no << 3 | wire) + payload

    def value(step, tag, v=None, image=None):
        body = field(1, 0, varint(step)) + field(2, 2, varint(len(tag)) + tag.encode())
        body += field(3, 0, varint(int(time.time() * 1000)))
        if v is not None:
            body += field(4, 5, struct.pack("<f", v))
        if image is not None:
            body += field(5, 2, varint(len(image)) + image)
        return body

    def record(*values):
        payload = b"".join(field(1, 2, varint(len(v)) + v) for v in values)
        return struct.pack("<Q", len(payload)) + payload

    os.makedirs("vdl", exist_ok=True)
    os.makedirs("runs/eval", exist_ok=True)
    with open("runs/eval/vdlrecords.2.log", "ab") as f:
        f.write(record(value(0, "acc", 0.5)))
    with open("vdl/vdlrecords.1.log", "ab", buffering=0) as f:
        for step in range(3):
            f.write(record(value(step, "loss", 1.0 / (step + 1))))
        # A record cut in two, the rest a while later.
        half = record(value(3, "loss", 0.25))
        f.write(half[:7])
        time.sleep(1.5)
        f.write(half[7:])
        # Larger than one request's usual piece, then larger than any.
        f.write(record(value(4, "picture", image=os.urandom(1_500_000)), value(4, "loss", 0.2)))
        f.write(record(value(5, "picture", image=os.urandom(5_000_000))))
        f.write(record(value(5, "loss", 0.15)))
        print("written", flush=True)
        deadline = time.time() + 60
        while not os.path.exists("stop") and time.time() < deadline:
            time.sleep(0.05)
        # Written just before the command ends: the shipper's last pass sends it.
        f.write(record(value(6, "loss", 0.125)))
    sys.exit(int(sys.argv[1]))
    """
)


class ShipTest(base.ClientTestCase):
    def steps(self, job, tag):
        tags = {t["tag"]: t for t in self.client.metric_tags(job)}
        if tag not in tags:
            return []
        return [(p["step"], p["value"]) for p in self.client.metric_series(job, tag)["points"]]

    def test_metric_files_reach_paddleboard_while_the_command_runs_and_after_it_ends(self):
        job = self.submit("ship", ["sleep", "120"])["name"]
        work = Path(tempfile.mkdtemp(dir=base._tmp))
        (work / "writer.py").write_text(WRITER)
        env = {"PADDLECLOUD_SERVER": base.SERVER, "PADDLECLOUD_JOB_TOKEN": base.KEY,
               "PADDLE_JOB_ID": job}
        proc = shipper([sys.executable, "writer.py", "5"], work, env)
        started = time.monotonic()
        want = [(0, 1.0), (1, 0.5), (2, 1 / 3), (3, 0.25), (4, 0.2), (5, 0.15)]
        while True:
            got = self.steps(job, "vdl/loss")
            if len(got) >= len(want) or time.monotonic() - started > 30:
                break
            time.sleep(0.2)
        print(f"\n6 points through the shipper in {time.monotonic() - started:.1f} s "
              "(1.5 s of it the writer's own pause)", file=sys.stderr)
        self.assertIsNone(proc.poll(), "the points came while the command ran")
        self.assertEqual([s for s, _ in got], [s for s, _ in want])
        for (_, value), (_, expected) in zip(got, want):
            self.assertAlmostEqual(value, expected, places=6)
        self.assertEqual(self.steps(job, "runs/eval/acc"), [(0, 0.5)])
        (work / "stop").touch()
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 5, err)
        self.assertIn("written", out)
        self.assertEqual([s for s, _ in self.steps(job, "vdl/loss")], list(range(7)))
        self.assertIn("5000", err, "the skipped record is named with its size")

    def test_a_commands_status_and_signals_pass_through(self):
        work = tempfile.mkdtemp(dir=base._tmp)
        proc = shipper(["sh", "-c", "exit 3"], work)
        proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 3)
        proc = shipper(["sh", "-c", "kill -9 $$"], work)
        proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 128 + signal.SIGKILL)
        proc = shipper(["sh", "-c", "trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done"],
                       work)
        self.assertEqual(proc.stdout.readline().strip(), "ready")
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 7, "SIGTERM reached the command, which chose its status")
        proc = shipper(["/nonexistent/program"], work)
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 127)
        self.assertIn("Could not start /nonexistent/program: No such file or directory", err)

    def test_a_file_the_console_refuses_is_reported_once_and_the_command_still_succeeds(self):
        work = Path(tempfile.mkdtemp(dir=base._tmp))
        (work / "vdlrecords.1.log").write_bytes(struct.pack("<Q", 1) + b"x")
        env = {"PADDLECLOUD_SERVER": base.SERVER, "PADDLECLOUD_JOB_TOKEN": base.KEY,
               "PADDLE_JOB_ID": "no-such-job"}
        proc = shipper(["sh", "-c", "sleep 2.5"], work, env)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(err.count("refused vdlrecords.1.log"), 1, err)

    def test_an_unreachable_console_costs_the_command_nothing(self):
        work = Path(tempfile.mkdtemp(dir=base._tmp))
        (work / "vdlrecords.1.log").write_bytes(struct.pack("<Q", 1) + b"x")
        env = {"PADDLECLOUD_SERVER": "http://127.0.0.1:9", "PADDLECLOUD_JOB_TOKEN": base.KEY,
               "PADDLE_JOB_ID": "any", "PADDLECLOUD_SHIP_LAST_PASS_SECS": "2"}
        proc = shipper(["sh", "-c", "echo done"], work, env)
        out, err = proc.communicate(timeout=120)
        self.assertEqual((proc.returncode, out.strip()), (0, "done"))
        self.assertIn("unreachable", err)


if __name__ == "__main__":
    unittest.main()
