"""Notifications from the SDK and the CLI, against the real `paddlecloud`
server, with a real HTTP receiver in this process:

    python3 -m unittest discover -s sdk/python/tests -p test_notifications.py -v
"""

import json
import subprocess
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import test_sdk as base
from test_sdk import REPO

from paddlecloud import Client, PaddleCloudError


def setUpModule():
    base.setUpModule()


def tearDownModule():
    base.tearDownModule()


class _Hooks(BaseHTTPRequestHandler):
    received = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode("utf-8")
        _Hooks.received.append((self.path, dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


class NotificationsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Hooks)
        threading.Thread(target=cls.receiver.serve_forever, daemon=True).start()
        cls.url = f"http://127.0.0.1:{cls.receiver.server_address[1]}"

    @classmethod
    def tearDownClass(cls):
        cls.receiver.shutdown()
        cls.receiver.server_close()

    def cli(self, *args):
        done = subprocess.run(
            [str(base._binary()), "notify", *args, "--credentials", base.CREDENTIALS],
            capture_output=True, text=True, cwd=REPO, timeout=120,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def wait_for_hook(self, path, kind):
        deadline = time.monotonic() + 60
        while True:
            got = [json.loads(b) for p, _, b in _Hooks.received if p == path]
            got = [b for b in got if b.get("type") == kind]
            if got:
                return got[0]
            self.assertLess(time.monotonic(), deadline, _Hooks.received)
            time.sleep(0.2)

    def test_a_failed_job_is_posted_to_a_webhook_and_logged(self):
        client = Client(server=base.SERVER, key=base.KEY, timeout=30)
        client.create_cloud_job("sdk-doomed", 1, "64Mi", 0, "100m",
                                command=["sh", "-c", "sleep 2; exit 4"])
        with self.assertRaises(PaddleCloudError) as bad:
            client.subscribe("job", "no-such-job", webhook=self.url + "/sdk")
        self.assertEqual((bad.exception.status, bad.exception.field), (400, "subject.name"))
        made = client.subscribe("job", "sdk-doomed", events=["failed"], webhook=self.url + "/sdk")
        self.assertTrue(made["secret"].startswith("whsec_"), made)

        # The CLI: the same thing, by Slack's shape, and the list shows both.
        said = self.cli("add", "--job", "sdk-doomed", "--on", "failed,succeeded",
                        "--webhook", self.url + "/cli", "--slack")
        self.assertIn("job sdk-doomed when it failed, succeeded, by Slack", said)
        self.assertIn("signing secret (Standard Webhooks): whsec_", said)
        listed = self.cli("list")
        self.assertIn(f"{made['id']:>5}  job sdk-doomed  when it failed  by webhook {self.url}/sdk",
                      listed)

        body = self.wait_for_hook("/sdk", "job.failed")
        self.assertEqual(body["data"]["name"], "sdk-doomed")
        deadline = time.monotonic() + 30
        while not any(p == "/cli" for p, _, _ in _Hooks.received):
            self.assertLess(time.monotonic(), deadline, _Hooks.received)
            time.sleep(0.2)
        slack = [json.loads(b) for p, _, b in _Hooks.received if p == "/cli"][0]
        self.assertIn("job sdk-doomed> in", slack["text"])

        deadline = time.monotonic() + 30
        while True:
            log = client.deliveries(subscription=made["id"])
            if log and log[0]["status"] == "delivered":
                break
            self.assertLess(time.monotonic(), deadline, log)
            time.sleep(0.2)
        self.assertEqual((log[0]["attempts"], log[0]["notice"]["event"]), (1, "failed"))
        self.assertIn("delivered", self.cli("log", "--status", "delivered"))

        queued = client.test_subscription(made["id"])
        self.assertEqual(queued["status"], "pending")
        self.wait_for_hook("/sdk", "job.test")
        client.unsubscribe(made["id"])
        self.assertNotIn(made["id"], [s["id"] for s in client.list_subscriptions()])
        with self.assertRaises(PaddleCloudError) as gone:
            client.unsubscribe(made["id"])
        self.assertEqual(gone.exception.status, 404)


if __name__ == "__main__":
    unittest.main()
