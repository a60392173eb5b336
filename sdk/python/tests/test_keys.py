"""Scoped and expiring access keys from the SDK, against the real `paddlecloud`
server: a read-only key lists jobs and a submit with it says what the key may do;
an expired key says when it expired.

    python3 -m unittest discover -s sdk/python/tests -p test_keys.py -v
"""

import os
import sqlite3
import subprocess
import unittest

import test_sdk as base

from paddlecloud import Client, PaddleCloudError


def setUpModule():
    base.setUpModule()


def tearDownModule():
    base.tearDownModule()


def _key(*extra):
    """A key for the SDK's account made with `paddlecloud admin create-key`."""
    data = os.path.join(base._tmp, "data")
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)  # the server's own database, in its data directory
    out = subprocess.run(
        [str(base._binary()), "admin", "create-key", "--account", base.ACCOUNT, "--user",
         base.EMAIL, "--data-dir", data, *extra],
        capture_output=True, text=True, timeout=60, check=True, cwd=base.REPO, env=env,
    ).stdout
    return out.strip().splitlines()[-1].strip()


class KeysTest(unittest.TestCase):
    def test_a_read_only_key_reads_and_a_submit_with_it_says_what_the_key_may_do(self):
        client = Client(server=base.SERVER, key=_key("--name", "dash", "--scope", "read"), timeout=60)
        client.list_jobs()
        with self.assertRaises(PaddleCloudError) as caught:
            client.create_cloud_job("sdk-scoped", 1, "64Mi", 0, "100m", command=["true"])
        self.assertEqual(caught.exception.status, 403)
        self.assertIn("scope is “read” (read only): it may not POST /api/v1/jobs",
                      caught.exception.message)

    def test_an_expired_key_says_when_it_expired(self):
        key = _key("--name", "old", "--expires-in-days", "1")
        client = Client(server=base.SERVER, key=key, timeout=60)
        client.list_jobs()
        db = sqlite3.connect(os.path.join(base._tmp, "data", "paddlecloud.db"))
        with db:
            db.execute("UPDATE access_keys SET expires_at = 1700000000000 WHERE name = 'old'")
        db.close()
        with self.assertRaises(PaddleCloudError) as caught:
            client.list_jobs()
        self.assertEqual(caught.exception.status, 403)
        self.assertIn("(“old”, pck_", caught.exception.message)
        self.assertIn("expired on 2023-11-14", caught.exception.message)


if __name__ == "__main__":
    unittest.main()
