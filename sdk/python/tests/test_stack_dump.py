"""Stack dumps of a running job from the SDK and the CLI, against the real
`paddlecloud` server (which builds py-spy from PyPI itself):

    python3 -m unittest discover -s sdk/python/tests -p test_stack_dump.py -v
"""

import subprocess
import time
import unittest

import test_sdk as base
from test_sdk import REPO

from paddlecloud import Client, PaddleCloudError

PROGRAM = "import time\nprint('waiting for a lock', flush=True)\ntime.sleep(120)\n"


def setUpModule():
    base.setUpModule()


def tearDownModule():
    base.tearDownModule()


class StackDumpTest(unittest.TestCase):
    def test_a_running_python_job_is_dumped_by_sdk_and_cli_and_a_stopped_one_is_refused(self):
        client = Client(server=base.SERVER, key=base.KEY, timeout=120)
        client.create_cloud_job("sdk-hang", 1, "256Mi", 0, "500m",
                                command=["python3", "-u", "-c", PROGRAM])
        deadline = time.monotonic() + 60
        while "waiting for a lock" not in client.logs("sdk-hang", "trainer-0"):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)

        dumps = client.stack_dump("sdk-hang")
        self.assertEqual([d["pod"] for d in dumps], ["trainer-0"])
        self.assertNotIn("error", dumps[0])
        self.assertIn('(idle): "MainThread"', dumps[0]["text"])
        self.assertIn("<module> (<string>:3)", dumps[0]["text"])
        log = client.logs("sdk-hang", "trainer-0")
        self.assertIn("===== stack dump of trainer-0 (py-spy) at ", log)
        self.assertIn("===== end of stack dump =====", log)

        done = subprocess.run(
            [str(base._binary()), "dump", "sdk-hang", "--credentials", base.CREDENTIALS],
            capture_output=True, text=True, cwd=REPO, timeout=120,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("== trainer-0 ==", done.stdout)
        self.assertIn("<module> (<string>:3)", done.stdout)

        client.stop_job("sdk-hang")
        with self.assertRaises(PaddleCloudError) as refused:
            client.stack_dump("sdk-hang")
        self.assertEqual(refused.exception.status, 409)
        self.assertIn("no running replica", str(refused.exception))

    def test_the_idle_gpu_list_is_the_site_admins_and_empty_without_gpus(self):
        client = Client(server=base.SERVER, key=base.KEY, timeout=30)
        # The tests' first user made the database, which makes them a site admin.
        self.assertEqual(client.idle_gpu_jobs(), [])
        done = subprocess.run(
            [str(base._binary()), "cluster", "--idle-gpus", "--credentials", base.CREDENTIALS],
            capture_output=True, text=True, cwd=REPO, timeout=60,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "no job holds idle GPUs")


if __name__ == "__main__":
    unittest.main()
