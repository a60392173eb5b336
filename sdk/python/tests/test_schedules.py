"""Schedules from the SDK and the CLI, against the real `paddlecloud` server:

    python3 -m unittest discover -s sdk/python/tests -p test_schedules.py -v
"""

import os
import subprocess
import tempfile
import time
import unittest

import test_sdk as base
from test_sdk import REPO

from paddlecloud import Client, PaddleCloudError


def setUpModule():
    base.setUpModule()


def tearDownModule():
    base.tearDownModule()


class SchedulesTest(unittest.TestCase):
    def cli(self, *args):
        done = subprocess.run(
            [str(base._binary()), "schedule", *args, "--credentials", base.CREDENTIALS],
            capture_output=True, text=True, cwd=REPO, timeout=120,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_a_template_runs_on_a_cron_schedule_and_is_paused_shown_and_deleted(self):
        client = Client(server=base.SERVER, key=base.KEY, timeout=30)
        client.save_template({
            "name": "tick", "parameters": [{"name": "code", "type": "int", "default": 0}],
            "job": {"command": ["sh", "-c", "exit {{code}}"], "num_trainers": 1,
                    "trainer": {"cpu": "100m", "memory": "64Mi"}},
        })
        with self.assertRaises(PaddleCloudError) as bad:
            client.create_schedule("bad", "61 * * * *", {"kind": "template", "name": "tick"})
        self.assertEqual((bad.exception.status, bad.exception.field), (400, "cron"))
        with self.assertRaises(PaddleCloudError) as bad:
            client.create_schedule("bad", "0 3 * * *",
                                   {"kind": "template", "name": "tick", "values": {"code": "x"}})
        self.assertEqual(bad.exception.field, "target.values.code")

        made = client.create_schedule("ticker", "*/2 * * * * *",
                                      {"kind": "template", "name": "tick"}, timezone="Asia/Tokyo")
        self.assertEqual((made["timezone"], made["overlap"]), ("Asia/Tokyo", "forbid"))
        deadline = time.monotonic() + 60
        while True:
            runs = client.get_schedule("ticker")["runs"]
            started = [r for r in runs if r["outcome"] == "started" and r.get("started")]
            if started:
                break
            self.assertLess(time.monotonic(), deadline, runs)
            time.sleep(0.5)
        job = client.get_job(started[0]["started"])
        self.assertEqual(job["spec"]["template"]["name"], "tick")

        paused = client.pause_schedule("ticker")
        self.assertEqual((paused["paused"], paused["next_at"]), (True, None))
        self.assertIn("ticker  template tick  */2 * * * * * (Asia/Tokyo)  next paused",
                      self.cli("list"))
        shown = self.cli("show", "ticker")
        self.assertIn("started", shown)
        self.assertIn(started[0]["started"], shown)

        # From a YAML file, with the CLI.
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("name: nightly\ncron: '0 3 * * 1-5'\ntimezone: Europe/Berlin\n"
                    "catch_up: none\ntarget:\n  kind: template\n  name: tick\n")
        self.addCleanup(os.unlink, f.name)
        said = self.cli("create", "-f", f.name)
        self.assertIn("saved nightly: template tick at 0 3 * * 1-5 (Europe/Berlin)", said)
        listed = {s["name"]: s for s in client.list_schedules()}
        self.assertEqual(listed["nightly"]["catch_up"], "none")
        self.cli("delete", "nightly")
        client.delete_schedule("ticker")
        self.assertEqual(client.list_schedules(), [])
        with self.assertRaises(PaddleCloudError) as gone:
            client.get_schedule("ticker")
        self.assertEqual(gone.exception.status, 404)


if __name__ == "__main__":
    unittest.main()
