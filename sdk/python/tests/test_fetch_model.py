"""`paddlecloud/fetch_model.py`, the `fetch-model` init container of a serving
instance's pods, against a stand-in console.

`FakeConsole` below stands in for the console's REST API: it answers what the real
console answers (`archive.zip` streamed as a zip, `files/{path}` with a
Content-Length, errors as `{"error": {"code", "message", "field"}}` with a 4xx or
5xx, 401 for a wrong Bearer token). The real API, and this script inside a real pod,
are tested by the Rust test server/tests/it/kube_serving.rs; here the script's own
behaviour is checked: what lands in the folder, what is asked, what is retried, what
is said. Standard library only, no network beyond 127.0.0.1, no real waits.

    python3 -m unittest discover -s sdk/python/tests -p test_fetch_model.py -v

(`scripts/test.sh sdk` runs it with the other SDK tests; pytest runs it too.)
"""

import contextlib
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import unittest
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sdk" / "python"))

from paddlecloud import fetch_model  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from console_stub import (  # noqa: E402
    StubConsole,
    answer_with_zip,
    files_under,
    refuse_with,
    send,
    send_error,
    send_streamed,
    zip_of,
)

SCRIPT = REPO / "sdk" / "python" / "paddlecloud" / "fetch_model.py"

TOKEN = "pcv_serving-token-of-tiny"
OWNER, NAME, VERSION = "acme", "tiny", 3
UNAUTHENTICATED = "Sign in, or send a valid access key."
_bytes = random.Random(8).randbytes
# One version of a model: nested folders, and a file bigger than the script's 1 MiB
# read size, so it arrives in more than one piece.
MODEL = {
    "inference.json": json.dumps({"program": "tiny", "inputs": ["x"]}).encode(),
    "inference.pdiparams": _bytes(fetch_model.CHUNK + 300_000),
    "export/model.tar.gz": _bytes(40_000),
    "export/assets/vocab/words.txt": "ünïcode\nwords\n".encode(),
}
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


class FakeConsole(StubConsole):
    """The console's model routes on 127.0.0.1, one model version, requests recorded.

    ``faults`` is what the next requests meet first, one each: a callable taking the
    request handler that returns True when it has answered (else the request goes on
    to the normal answer).
    """

    def __init__(self, files):
        super().__init__()
        self.models = {(OWNER, NAME, VERSION): files}
        self.faults = []

    def answer(self, h, url):
        query = url.query
        with self.lock:
            fault = self.faults.pop(0) if self.faults else None
        if fault is not None and fault(h):
            return
        if h.headers.get("Authorization") != "Bearer " + TOKEN:
            return send_error(h, 401, "unauthenticated", UNAUTHENTICATED)
        route = re.fullmatch(r"/api/v1/models/([^/]+)/([^/]+)/(archive\.zip|files/(.+))", url.path)
        if route is None:
            return send_error(h, 404, "not_found", f"No route {url.path}.")
        owner, name = (urllib.parse.unquote(p) for p in route.group(1, 2))
        version = query.get("version", [""])[0]
        files = self.models.get((owner, name, int(version) if version.isdigit() else None))
        if files is None:
            return send_error(h, 404, "not_found", f"Model {owner}/{name} has no version {version}.")
        if route[3] == "archive.zip":
            return send_streamed(h, zip_of(files, directories=["export"]))
        path = urllib.parse.unquote(route[4])
        if path not in files:
            return send_error(h, 404, "not_found", f"No file {path} in {owner}/{name} version {version}.")
        send(h, 200, files[path], "application/octet-stream")


# Faults, for FakeConsole.faults.
def cut_short(body, sent, streamed=False):
    """Promises all of ``body`` (as Content-Length, or as one chunk of a streamed
    answer) but sends ``sent`` bytes of it and hangs up."""

    def fault(h):
        h.send_response(200)
        if streamed:
            h.send_header("Content-Type", "application/zip")
            h.send_header("Transfer-Encoding", "chunked")
        else:
            h.send_header("Content-Type", "application/octet-stream")
            h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        head = b"%x\r\n" % len(body) if streamed else b""
        h.wfile.write(head + body[:sent])
        h.wfile.flush()
        h.close_connection = True
        return True

    return fault


class FetchModelTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="fetch-model-test-")
        self.addCleanup(tmp.cleanup)
        self.root = Path(tmp.name)
        # As the console sets it: <model volume>/<owner>/<name>/<version>.
        self.models = self.root / "models"
        self.dest = self.models / OWNER / NAME / str(VERSION)
        self.console = FakeConsole(MODEL)
        self.addCleanup(self.console.close)
        # urllib reads proxies from the process environment: 127.0.0.1 must be direct.
        environ = mock.patch.dict(os.environ)
        environ.start()
        self.addCleanup(environ.stop)
        for name in PROXY_VARIABLES:
            os.environ.pop(name, None)
            os.environ.pop(name.upper(), None)
        # No retry waits for real.
        sleep = mock.patch.object(fetch_model.time, "sleep")
        self.sleep = sleep.start()
        self.addCleanup(sleep.stop)

    def env(self, **overrides):
        env = {
            "PADDLECLOUD_SERVER": self.console.url,
            "PADDLECLOUD_SERVING_TOKEN": TOKEN,
            "PADDLECLOUD_MODEL": f"{OWNER}/{NAME}",
            "PADDLECLOUD_MODEL_VERSION": str(VERSION),
            "PADDLECLOUD_MODEL_FILE": "",
            "PADDLECLOUD_MODEL_DIR": str(self.dest),
        }
        env.update(overrides)
        return env

    def fetch(self, **overrides):
        """Runs the script's main; returns its exit code and the lines it printed."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = fetch_model.main(self.env(**overrides))
        return code, out.getvalue().splitlines()

    def leftovers(self):
        """Scratch folders and archives the script left beside the target."""
        return sorted(
            str(p.relative_to(self.root))
            for p in self.root.rglob("*")
            if p.name.startswith(".fetch-") or p.name.endswith(".zip")
        )

    def assertFailedSaying(self, lines, *words):
        self.assertTrue(lines, "it printed nothing")
        last = lines[-1]
        self.assertTrue(last.startswith("cannot fetch the model:"), last)
        for word in words:
            self.assertIn(word, last)

    def assertNothingLanded(self):
        self.assertFalse(self.dest.exists(), "a model folder appeared after a failure")
        self.assertEqual(self.leftovers(), [])

    # The whole version, or one file of it.

    def test_the_whole_version_is_unpacked_into_the_model_dir_with_identical_bytes(self):
        code, lines = self.fetch()

        self.assertEqual(code, 0, lines)
        self.assertEqual(files_under(self.dest), MODEL)
        self.assertTrue((self.dest / "export" / "assets" / "vocab").is_dir())
        self.assertEqual(self.leftovers(), [])
        self.assertEqual(os.listdir(self.dest.parent), [str(VERSION)])
        self.assertEqual(
            [(r.path, r.query) for r in self.console.requests],
            [(f"/api/v1/models/{OWNER}/{NAME}/archive.zip", {"version": [str(VERSION)]})],
        )
        self.assertRegex(lines[-1], rf"^fetched 4 file\(s\), .* into {re.escape(str(self.dest))}$")

    def test_with_a_model_file_only_that_file_is_fetched_into_the_dir_under_its_base_name(self):
        code, lines = self.fetch(PADDLECLOUD_MODEL_FILE="export/model.tar.gz")

        self.assertEqual(code, 0, lines)
        self.assertEqual(files_under(self.dest), {"model.tar.gz": MODEL["export/model.tar.gz"]})
        self.assertEqual(
            [(r.path, r.query) for r in self.console.requests],
            [(f"/api/v1/models/{OWNER}/{NAME}/files/export/model.tar.gz", {"version": [str(VERSION)]})],
        )
        self.assertEqual(self.leftovers(), [])
        self.assertRegex(lines[-1], r"^fetched 1 file\(s\), ")

    def test_a_model_whose_names_need_quoting_is_asked_for_by_its_quoted_path(self):
        self.console.models[("team a", "tiny#2", 1)] = {"dir one/m.tar.gz": b"quoted"}

        code, lines = self.fetch(
            PADDLECLOUD_MODEL="team a/tiny#2",
            PADDLECLOUD_MODEL_VERSION="1",
            PADDLECLOUD_MODEL_FILE="dir one/m.tar.gz",
        )

        self.assertEqual(code, 0, lines)
        self.assertEqual(files_under(self.dest), {"m.tar.gz": b"quoted"})
        self.assertEqual(
            self.console.requests[0].path, "/api/v1/models/team%20a/tiny%232/files/dir%20one/m.tar.gz"
        )

    # The token, and what the console refuses.

    def test_the_serving_token_is_sent_as_a_bearer_token(self):
        code, lines = self.fetch()

        self.assertEqual(code, 0, lines)
        self.assertEqual([r.authorization for r in self.console.requests], ["Bearer " + TOKEN])

    def test_a_wrong_token_fails_at_once_with_the_consoles_message(self):
        code, lines = self.fetch(PADDLECLOUD_SERVING_TOKEN="pcv_revoked")

        self.assertEqual(code, 1)
        self.assertFailedSaying(lines, "401", UNAUTHENTICATED)
        self.assertEqual([r.authorization for r in self.console.requests], ["Bearer pcv_revoked"])
        self.sleep.assert_not_called()
        self.assertNothingLanded()

    def test_a_missing_version_is_not_retried_and_says_the_consoles_message(self):
        code, lines = self.fetch(PADDLECLOUD_MODEL_VERSION="9")

        self.assertEqual(code, 1)
        self.assertFailedSaying(lines, "404", f"Model {OWNER}/{NAME} has no version 9.")
        self.assertEqual(len(self.console.requests), 1)
        self.sleep.assert_not_called()
        self.assertNothingLanded()

    def test_a_missing_file_is_not_retried_and_says_the_consoles_message(self):
        code, lines = self.fetch(PADDLECLOUD_MODEL_FILE="export/nope.tar.gz")

        self.assertEqual(code, 1)
        self.assertFailedSaying(lines, "404", "No file export/nope.tar.gz")
        self.assertEqual(len(self.console.requests), 1)
        self.assertNothingLanded()

    # Retries.

    def test_a_console_unavailable_twice_then_answering_is_fetched_after_retries(self):
        unavailable = refuse_with(503, "unavailable", "The console is starting.")
        self.console.faults = [unavailable, unavailable]

        code, lines = self.fetch()

        self.assertEqual(code, 0, lines)
        self.assertEqual(files_under(self.dest), MODEL)
        self.assertEqual(len(self.console.requests), 3)
        self.assertTrue(any(line.startswith("attempt 1 failed (HTTP 503)") for line in lines), lines)
        self.assertTrue(any(line.startswith("attempt 2 failed (HTTP 503)") for line in lines), lines)
        self.assertEqual([c.args[0] for c in self.sleep.call_args_list], [2, 4])
        self.assertEqual(self.leftovers(), [])

    def test_a_console_that_stays_unavailable_is_given_up_on_after_every_attempt(self):
        self.console.faults = [refuse_with(502, "unavailable", "Bad gateway.")] * 3

        with mock.patch.object(fetch_model, "ATTEMPTS", 3):
            code, lines = self.fetch()

        self.assertEqual(code, 1)
        self.assertFailedSaying(lines, "gave up after 3 attempts", "HTTP 502")
        self.assertEqual(len(self.console.requests), 3)
        self.assertEqual(self.sleep.call_count, 2)
        self.assertNothingLanded()

    def test_a_console_that_cannot_be_reached_is_given_up_on_after_every_attempt(self):
        closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
        url = f"http://127.0.0.1:{closed.server_port}"
        closed.server_close()  # nothing listens there now

        with mock.patch.object(fetch_model, "ATTEMPTS", 2):
            code, lines = self.fetch(PADDLECLOUD_SERVER=url)

        self.assertEqual(code, 1)
        self.assertFailedSaying(lines, "gave up after 2 attempts")
        self.assertTrue(any(line.startswith("attempt 1 failed") for line in lines), lines)
        self.assertNothingLanded()

    def test_a_download_cut_short_fails_rather_than_leaving_a_partial_model(self):
        data = MODEL["export/model.tar.gz"]
        self.console.faults = [cut_short(data, 1000), cut_short(data, 1000)]

        with mock.patch.object(fetch_model, "ATTEMPTS", 2):
            code, lines = self.fetch(PADDLECLOUD_MODEL_FILE="export/model.tar.gz")

        self.assertEqual(code, 1)
        self.assertFailedSaying(
            lines, "gave up after 2 attempts", f"the download ended after 1000 of {len(data)} bytes"
        )
        self.assertEqual(len(self.console.requests), 2)
        self.assertTrue(any(line.startswith("attempt 1 failed") for line in lines), lines)
        self.assertNothingLanded()

    def test_a_download_cut_short_once_is_fetched_whole_on_the_next_attempt(self):
        data = MODEL["export/model.tar.gz"]
        self.console.faults = [cut_short(data, 1000)]

        code, lines = self.fetch(PADDLECLOUD_MODEL_FILE="export/model.tar.gz")

        self.assertEqual(code, 0, lines)
        self.assertEqual(files_under(self.dest), {"model.tar.gz": data})
        self.assertEqual(len(self.console.requests), 2)

    def test_a_streamed_archive_cut_short_is_retried_and_then_fails_cleanly(self):
        """The console streams archive.zip chunked; a cut raises http.client.IncompleteRead,
        which is neither OSError nor URLError: it must be retried like one, and end with
        the one-line reason and nothing left on the volume."""
        archive = zip_of(MODEL)
        self.console.faults = [cut_short(archive, 5000, streamed=True)] * 2

        with mock.patch.object(fetch_model, "ATTEMPTS", 2):
            code, lines = self.fetch()

        self.assertEqual(code, 1)
        self.assertFailedSaying(lines, "gave up after 2 attempts")
        self.assertEqual(len(self.console.requests), 2)
        self.assertNothingLanded()

    # Archives that would write outside the folder.

    def test_a_zip_with_a_member_outside_the_folder_is_refused(self):
        evil = zip_of({"inference.json": b"{}", "../evil.txt": b"owned"})
        self.console.faults = [answer_with_zip(evil)]

        code, lines = self.fetch()

        self.assertEqual(code, 1)
        self.assertFailedSaying(lines, "outside the model", "../evil.txt")
        self.assertEqual([p for p in self.root.rglob("evil.txt")], [])
        self.assertEqual(len(self.console.requests), 1)  # a bad archive is not retried
        self.assertNothingLanded()

    def test_a_zip_with_an_absolute_member_path_is_refused(self):
        target = self.root / "absolute-evil.txt"
        evil = zip_of({"inference.json": b"{}", str(target): b"owned"})
        self.console.faults = [answer_with_zip(evil)]

        code, lines = self.fetch()

        self.assertEqual(code, 1)
        self.assertFailedSaying(lines, "outside the model")
        self.assertFalse(target.exists())
        self.assertNothingLanded()

    def test_an_answer_that_is_not_a_zip_fails_without_a_partial_model(self):
        self.console.faults = [answer_with_zip(b"<html>a proxy's login page</html>")]

        code, lines = self.fetch()

        self.assertEqual(code, 1)
        self.assertFailedSaying(lines, "zip")
        self.assertNothingLanded()

    # A folder that is there already.

    def test_when_the_model_dir_exists_already_nothing_is_requested(self):
        self.dest.mkdir(parents=True)
        (self.dest / "inference.json").write_bytes(b"from an earlier replica")

        code, lines = self.fetch()

        self.assertEqual(code, 0, lines)
        self.assertEqual(self.console.requests, [])
        self.assertEqual(files_under(self.dest), {"inference.json": b"from an earlier replica"})
        self.assertIn("is here already", lines[-1])

    def test_when_another_replica_finishes_first_its_copy_is_kept(self):
        def other_replica_wins(h):
            self.dest.mkdir(parents=True)
            (self.dest / "inference.json").write_bytes(MODEL["inference.json"])
            return False  # then the normal answer

        self.console.faults = [other_replica_wins]

        code, lines = self.fetch()

        self.assertEqual(code, 0, lines)
        self.assertEqual(files_under(self.dest), {"inference.json": MODEL["inference.json"]})
        self.assertEqual(self.leftovers(), [])

    # Settings.

    def test_missing_settings_return_2_naming_them(self):
        code, lines = self.fetch(PADDLECLOUD_SERVER="", PADDLECLOUD_SERVING_TOKEN="")

        self.assertEqual(code, 2)
        self.assertFailedSaying(lines, "PADDLECLOUD_SERVER", "PADDLECLOUD_SERVING_TOKEN", "not set")
        self.assertNotIn("PADDLECLOUD_MODEL_DIR", lines[-1])
        self.assertEqual(self.console.requests, [])
        self.assertFalse(self.models.exists())

    def test_an_empty_environment_names_every_setting_but_the_optional_file(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = fetch_model.main({})

        self.assertEqual(code, 2)
        last = out.getvalue().splitlines()[-1]
        for name in (
            "PADDLECLOUD_SERVER",
            "PADDLECLOUD_SERVING_TOKEN",
            "PADDLECLOUD_MODEL",
            "PADDLECLOUD_MODEL_VERSION",
            "PADDLECLOUD_MODEL_DIR",
        ):
            self.assertIn(name, last)
        self.assertNotIn("PADDLECLOUD_MODEL_FILE", last)

    # As the console runs it.

    def run_as_the_console_does(self, env):
        return subprocess.run(
            [sys.executable, "-c", SCRIPT.read_text()],
            env=env,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def test_the_script_runs_as_the_console_runs_it_with_python3_c(self):
        # The init container's command is ["python3", "-c", <this file>] with only
        # these variables (kubernetes/serving/objects.rs); sys.executable is a python3.
        env = self.env()
        del env["PADDLECLOUD_MODEL_FILE"]  # the console leaves it out when it is empty
        env.update(PATH=os.environ.get("PATH", ""), PYTHONUNBUFFERED="1")

        done = self.run_as_the_console_does(env)

        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual(files_under(self.dest), MODEL)
        self.assertEqual(self.leftovers(), [])
        self.assertEqual(done.stderr, "")
        self.assertRegex(done.stdout.splitlines()[-1], r"^fetched 4 file\(s\), ")
        self.assertEqual([r.authorization for r in self.console.requests], ["Bearer " + TOKEN])

    def test_the_script_run_with_python3_c_exits_1_on_a_refusal(self):
        env = self.env(PADDLECLOUD_SERVING_TOKEN="pcv_revoked")
        env.update(PATH=os.environ.get("PATH", ""))

        done = self.run_as_the_console_does(env)

        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertFailedSaying(done.stdout.splitlines(), UNAUTHENTICATED)
        self.assertNothingLanded()


if __name__ == "__main__":
    unittest.main()
