"""Metric alerts from the SDK and the CLI, against the real `paddlecloud`
server:

    python3 -m unittest discover -s sdk/python/tests -p test_alerts.py -v
"""

import subprocess
import time
import unittest

import test_sdk as base
from test_sdk import REPO

from paddlecloud import Client, PaddleCloudError


def setUpModule():
    base.setUpModule()


def tearDownModule():
    base.tearDownModule()


class AlertsTest(unittest.TestCase):
    def cli(self, *args):
        done = subprocess.run(
            [str(base._binary()), "alert", *args, "--credentials", base.CREDENTIALS],
            capture_output=True, text=True, cwd=REPO, timeout=120,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_a_nan_in_a_running_jobs_metrics_raises_an_alert_listed_by_sdk_and_cli(self):
        client = Client(server=base.SERVER, key=base.KEY, timeout=30)
        client.create_cloud_job("sdk-nan", 1, "64Mi", 0, "100m", command=["sleep", "60"])
        with self.assertRaises(ValueError):
            client.create_alert_rule("two", "loss", above=1, below=0)
        with self.assertRaises(PaddleCloudError) as bad:
            client.create_alert_rule("quiet", "loss", silent_minutes=0)
        self.assertEqual((bad.exception.status, bad.exception.field), (400, "condition.minutes"))
        made = client.create_alert_rule("nan", "loss", not_finite=True, job="sdk-nan")
        self.assertEqual(made["condition"], {"kind": "not_finite"})
        said = self.cli("add", "low-acc", "--tag", "acc", "--below", "-0.5")
        self.assertIn("saved low-acc: acc is below -0.5 (every running job)", said)
        self.assertIn("nan  loss is NaN or infinite (job sdk-nan)  open 0", self.cli("rules"))

        deadline = time.monotonic() + 30
        while client.get_job("sdk-nan")["status"] != "running":
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        client.log_metrics("sdk-nan", [{"tag": "loss", "step": 1, "value": 0.5},
                                       {"tag": "loss", "step": 2, "value": float("nan")}])
        deadline = time.monotonic() + 30
        while True:
            raised = client.alerts(job="sdk-nan")
            if raised:
                break
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        self.assertEqual((raised[0]["rule"], raised[0]["step"]), ("nan", 2))
        self.assertIn("sdk-nan  loss is NaN or infinite at step 2  (nan)", self.cli("list"))
        client.delete_alert_rule("nan")
        self.cli("delete", "low-acc")
        self.assertEqual(client.list_alert_rules(), [])
        client.stop_job("sdk-nan")


if __name__ == "__main__":
    unittest.main()
