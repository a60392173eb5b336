"""The queue from the SDK and the CLI, against the real `paddlecloud` server:

    python3 -m unittest discover -s sdk/python/tests -p test_queue.py -v
"""

import subprocess
import time
import unittest

import test_sdk as base
from test_sdk import REPO

from paddlecloud import Client


def setUpModule():
    base.setUpModule()


def tearDownModule():
    base.tearDownModule()


class QueueTest(unittest.TestCase):
    def test_a_job_waiting_behind_one_that_fills_the_machine_is_listed_with_its_priority_and_holder(self):
        client = Client(server=base.SERVER, key=base.KEY, timeout=60)
        total = client._json("GET", "/cluster")["total"]["cpu_millis"]
        client.create_cloud_job("sdk-fill", 1, "64Mi", 0, f"{total}m", command=["sleep", "120"],
                                max_runtime="10m")
        self.assertEqual(client.get_job("sdk-fill")["spec"]["max_runtime"], "10m")
        deadline = time.monotonic() + 60
        while client.get_job("sdk-fill")["status"] != "running":
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        client.create_cloud_job("sdk-wait", 1, "64Mi", 0, "100m", command=["true"],
                                priority="low")
        try:
            queue = client.queue()
            self.assertTrue(queue["ordered_here"])
            mine = [w for w in queue["waiting"] if w["work"].get("name") == "sdk-wait"]
            self.assertEqual(len(mine), 1, queue)
            self.assertEqual(mine[0]["priority"], "low")
            self.assertTrue(mine[0]["reason"].startswith("waiting for"), mine[0])
            self.assertIn("sdk-fill", [h.get("name") for h in mine[0]["held_by"]])
            self.assertEqual(client.get_job("sdk-wait")["spec"]["priority"], "low")

            done = subprocess.run(
                [str(base._binary()), "queue", "--credentials", base.CREDENTIALS],
                capture_output=True, text=True, cwd=REPO, timeout=60,
            )
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertRegex(done.stdout, r"\d+\. job sdk-wait \[low\] waiting for .* \(held by job sdk-fill\)")
        finally:
            client.stop_job("sdk-fill")
        with self.assertRaises(ValueError):
            client.create_cloud_job("sdk-bad", 1, "64Mi", 0, "100m", command=["true"],
                                    priority="urgent")


if __name__ == "__main__":
    unittest.main()
