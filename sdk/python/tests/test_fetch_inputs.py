"""`paddlecloud/fetch_inputs.py`, the `fetch-inputs` init container of a job's, a
notebook's and a serving instance's pods on Kubernetes (and the downloading it does
with `paddlecloud/download.py`), against a stand-in console.

`FakeConsole` below stands in for the console's REST API as the script meets it:
`GET /api/v1/datasets/{owner}/{name}` answers the dataset as JSON (with
`updated_at`, Unix ms of its last change), its `archive.zip` is streamed as a zip
with `X-PaddleCloud-Revision: r<updated_at>`, a model's
`archive.zip?version=N` is streamed without one, a wrong Bearer token gets a 401
and an unknown asset a 404, both as `{"error": {"code", "message", "field"}}`. It
records every request, so the tests count the archives downloaded. The node's
cache and a pod's folder of links are temporary folders. The real API, and the
script inside a real pod, are tested by the Rust tests server/tests/it/kube_inputs.rs
and server/tests/it/kube_serving.rs; here the script's own behaviour is checked:
what lands in the cache and under which revision, where the links point, what is
downloaded once and what never, what is retried and what is refused at once, what
is said in `fetch.log`, and that a failure leaves no partial revision. Standard
library only, no network beyond 127.0.0.1, no real waits (`time.sleep` is patched,
so retries do not wait).

    python3 -m unittest discover -s sdk/python/tests -p test_fetch_inputs.py -v

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
import threading
import time
import unittest
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[3]
SDK = REPO / "sdk" / "python"
sys.path.insert(0, str(SDK))

from paddlecloud import download, fetch_inputs  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from console_stub import (  # noqa: E402
    StubConsole,
    answer_with_zip,
    cut_short,
    files_under,
    refuse_with,
    send_error,
    send_json,
    send_streamed,
    zip_of,
)

# The init container's command (kubernetes/inputs.rs, BOOT), with this checkout's SDK.
BOOT = (
    f"import sys; sys.path.insert(0, {str(SDK)!r}); "
    "from paddlecloud.fetch_inputs import main; sys.exit(main())"
)

TOKEN = "pcj_job-token-of-train-7"
OWNER = "acme"
DATASET = "corpus"
MODEL = "tiny"
VERSION = 3
UPDATED = 1_700_000_000_000  # the dataset's updated_at, Unix ms
UNAUTHENTICATED = "Sign in, or send a valid access key."
DAY = 86400
_bytes = random.Random(11).randbytes
# A dataset and a model version: nested folders, one file bigger than the script's
# 1 MiB read size, so it arrives in more than one piece.
DATASET_FILES = {
    "train.csv": b"x,y\n1,2\n3,4\n",
    "images/cats/1.png": _bytes(30_000),
    "images/dogs/deep/2.png": _bytes(20_000),
    "README.md": "Ünïcode rows\n".encode(),
}
MODEL_FILES = {
    "inference.json": json.dumps({"program": "tiny", "inputs": ["x"]}).encode(),
    "inference.pdiparams": _bytes(download.CHUNK + 200_000),
    "export/assets/vocab/words.txt": b"words\n",
}
# As the console describes a job's inputs (kubernetes/inputs.rs, `described`).
INPUTS = [
    {"kind": "dataset", "owner": OWNER, "name": DATASET, "version": None,
     "link": f"datasets/{OWNER}/{DATASET}"},
    {"kind": "model", "owner": OWNER, "name": MODEL, "version": VERSION,
     "link": f"models/{OWNER}/{MODEL}/{VERSION}"},
]
DATASET_LINK = INPUTS[0]["link"]
MODEL_LINK = INPUTS[1]["link"]
DATASET_JSON = f"/api/v1/datasets/{OWNER}/{DATASET}"
DATASET_ZIP = f"/api/v1/datasets/{OWNER}/{DATASET}/archive.zip"
MODEL_ZIP = f"/api/v1/models/{OWNER}/{MODEL}/archive.zip"
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


class FakeConsole(StubConsole):
    """The console's dataset and model routes on 127.0.0.1, requests recorded.

    ``datasets`` maps (owner, name) to {"updated_at": ms, "files": {path: bytes}}
    and ``models`` (owner, name, version) to files; tests change them between runs.
    ``faults`` maps a path to what its next requests meet first, one each: a
    callable taking the request handler that returns True when it has answered
    (else the request goes on to the normal answer).
    """

    def __init__(self):
        super().__init__()
        self.datasets = {(OWNER, DATASET): {"updated_at": UPDATED, "files": dict(DATASET_FILES)}}
        self.models = {(OWNER, MODEL, VERSION): dict(MODEL_FILES)}
        self.faults = {}

    def archives(self):
        """The archives asked for so far, as (path, query)."""
        with self.lock:
            return [(r.path, r.query) for r in self.requests if r.path.endswith("/archive.zip")]

    def answer(self, h, url):
        query = url.query
        with self.lock:
            waiting = self.faults.get(url.path)
            fault = waiting.pop(0) if waiting else None
        if fault is not None and fault(h):
            return
        if h.headers.get("Authorization") != "Bearer " + TOKEN:
            return send_error(h, 401, "unauthenticated", UNAUTHENTICATED)
        route = re.fullmatch(r"/api/v1/(datasets|models)/([^/]+)/([^/]+)(/archive\.zip)?", url.path)
        if route is None:
            return send_error(h, 404, "not_found", f"No route {url.path}.")
        kinds, archive = route[1], route[4] is not None
        owner, name = (urllib.parse.unquote(p) for p in route.group(2, 3))
        if kinds == "datasets":
            with self.lock:
                dataset = self.datasets.get((owner, name))
                dataset = dict(dataset) if dataset else None
            if dataset is None:
                return send_error(h, 404, "not_found", f"No dataset {owner}/{name}.")
            updated, files = dataset["updated_at"], dataset["files"]
            if archive:
                # Its revision is read before its files, as the console does.
                return send_streamed(h, zip_of(files, folders_of(files)), [("X-PaddleCloud-Revision", f"r{updated}")])
            return send_json(h, 200, {
                "kind": "dataset", "owner": owner, "name": name, "description": "",
                "tags": [], "public": False, "created_at": UPDATED - DAY * 1000,
                "updated_at": updated, "files": len(files),
                "bytes": sum(len(b) for b in files.values()), "access": "owner",
            })
        version = query.get("version", [""])[0]
        with self.lock:
            files = self.models.get((owner, name, int(version) if version.isdigit() else None))
        if files is None or not archive:
            return send_error(h, 404, "not_found", f"Model {owner}/{name} has no version {version}.")
        send_streamed(h, zip_of(files, folders_of(files)))


def folders_of(files):
    """The folders of ``files``' paths, as the console's zips list them."""
    return sorted({p.rsplit("/", 1)[0] for p in files if "/" in p})


class FetchInputsTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="fetch-inputs-test-")
        self.addCleanup(tmp.cleanup)
        self.root = Path(tmp.name)
        # The node's cache, and a pod's own folder of links.
        self.cache = self.root / "cache"
        self.links = self.root / "pod-a" / "inputs"
        self.console = FakeConsole()
        self.addCleanup(self.console.close)
        # urllib reads proxies from the process environment: 127.0.0.1 must be direct.
        environ = mock.patch.dict(os.environ)
        environ.start()
        self.addCleanup(environ.stop)
        for name in PROXY_VARIABLES:
            os.environ.pop(name, None)
            os.environ.pop(name.upper(), None)
        # No retry waits for real.
        sleep = mock.patch.object(download.time, "sleep")
        self.sleep = sleep.start()
        self.addCleanup(sleep.stop)

    def env(self, links=None, inputs=INPUTS, **overrides):
        env = {
            "PADDLECLOUD_SERVER": self.console.url,
            "PADDLECLOUD_FETCH_TOKEN": TOKEN,
            "PADDLECLOUD_INPUT_CACHE": str(self.cache),
            "PADDLECLOUD_INPUT_DIR": str(links or self.links),
            "PADDLECLOUD_INPUTS": json.dumps(inputs),
        }
        env.update(overrides)
        return env

    def fetch(self, links=None, inputs=INPUTS, **overrides):
        """Runs the script's main; returns its exit code and the lines it printed."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = fetch_inputs.main(self.env(links, inputs, **overrides))
        return code, out.getvalue().splitlines()

    def fetch_log(self, links=None):
        return (Path(links or self.links) / "fetch.log").read_text().splitlines()

    def dataset_dir(self, updated=UPDATED):
        return self.cache / "datasets" / OWNER / DATASET / f"r{updated}"

    def model_dir(self, version=VERSION):
        return self.cache / "models" / OWNER / MODEL / f"v{version}"

    def change_dataset(self, updated, files):
        with self.console.lock:
            self.console.datasets[(OWNER, DATASET)] = {"updated_at": updated, "files": files}

    def leftovers(self):
        """Scratch folders and archives the script left in the cache."""
        return sorted(
            str(p.relative_to(self.root))
            for p in self.root.rglob("*")
            if p.name.startswith(".fetch-") or p.name.endswith(".zip")
        )

    def assertLinksTo(self, link, target, files, links=None):
        path = Path(links or self.links) / link
        self.assertTrue(path.is_symlink(), f"{path} is not a link")
        self.assertEqual(os.readlink(path), str(target))
        self.assertEqual(files_under(path), files)

    def fetch_the_model(self, **overrides):
        """Runs the script's main with the model version alone, as a serving
        instance's replicas do; returns its exit code and the lines it printed."""
        return self.fetch(inputs=[INPUTS[1]], **overrides)

    def assertModelFailedSaying(self, *words):
        """The model's failure is the last line of ``fetch.log`` (as of what the
        init container printed, which Kubernetes shows), with ``words`` in it."""
        last = self.fetch_log()[-1]
        self.assertTrue(last.startswith(f"cannot fetch model {OWNER}/{MODEL}: "), last)
        for word in words:
            self.assertIn(word, last)

    def assertNoModelLanded(self):
        """No revision, no link, and no scratch folder or zip left in the cache."""
        self.assertFalse(self.model_dir().exists(), "a revision appeared after a failure")
        self.assertFalse(os.path.lexists(self.links / MODEL_LINK), "a link appeared after a failure")
        self.assertEqual(self.leftovers(), [])

    def age(self, folder, days):
        """Makes ``folder`` look last used ``days`` ago."""
        then = time.time() - days * DAY
        os.utime(folder, (then, then))

    # Fetched once per revision, and linked.

    def test_a_dataset_and_a_model_version_are_fetched_into_the_cache_by_revision_and_linked(self):
        code, lines = self.fetch()

        self.assertEqual(code, 0, lines)
        self.assertEqual(files_under(self.dataset_dir()), DATASET_FILES)
        self.assertEqual(files_under(self.model_dir()), MODEL_FILES)
        self.assertTrue((self.dataset_dir() / "images" / "dogs" / "deep").is_dir())
        self.assertTrue((self.model_dir() / "export" / "assets" / "vocab").is_dir())
        self.assertLinksTo(DATASET_LINK, self.dataset_dir(), DATASET_FILES)
        self.assertLinksTo(MODEL_LINK, self.model_dir(), MODEL_FILES)
        log = self.fetch_log()
        self.assertEqual(len(log), 2, log)
        self.assertRegex(log[0], rf"^dataset {OWNER}/{DATASET}: fetched r{UPDATED}, 4 file\(s\), ")
        self.assertRegex(
            log[1], rf"^model {OWNER}/{MODEL} version {VERSION}: fetched v{VERSION}, 3 file\(s\), "
        )
        self.assertEqual(self.leftovers(), [])
        self.assertEqual(
            [(r.path, r.query) for r in self.console.requests],
            [(DATASET_JSON, {}), (DATASET_ZIP, {}), (MODEL_ZIP, {"version": [str(VERSION)]})],
        )
        self.assertEqual({r.authorization for r in self.console.requests}, {"Bearer " + TOKEN})

    def test_a_second_run_with_the_same_revisions_downloads_no_archive(self):
        code, lines = self.fetch()
        self.assertEqual(code, 0, lines)
        self.console.requests.clear()
        second_pod = self.root / "pod-b" / "inputs"

        code, lines = self.fetch(links=second_pod)

        self.assertEqual(code, 0, lines)
        self.assertEqual(self.console.archives(), [])
        # Only the dataset's revision is asked for: a model version never changes.
        self.assertEqual([r.path for r in self.console.requests], [DATASET_JSON])
        self.assertEqual(
            self.fetch_log(second_pod),
            [
                f"dataset {OWNER}/{DATASET}: r{UPDATED} in the node's cache",
                f"model {OWNER}/{MODEL} version {VERSION}: v{VERSION} in the node's cache",
            ],
        )
        self.assertLinksTo(DATASET_LINK, self.dataset_dir(), DATASET_FILES, second_pod)
        self.assertLinksTo(MODEL_LINK, self.model_dir(), MODEL_FILES, second_pod)

    def test_a_changed_dataset_is_fetched_as_a_new_revision_and_the_old_one_is_kept(self):
        code, lines = self.fetch()
        self.assertEqual(code, 0, lines)
        changed = {"train.csv": b"x,y\n5,6\n", "images/cats/1.png": b"a new cat"}
        later = UPDATED + 60_000
        self.change_dataset(later, changed)
        self.console.requests.clear()

        code, lines = self.fetch()

        self.assertEqual(code, 0, lines)
        self.assertEqual(self.console.archives(), [(DATASET_ZIP, {})])
        self.assertEqual(files_under(self.dataset_dir(later)), changed)
        self.assertLinksTo(DATASET_LINK, self.dataset_dir(later), changed)
        self.assertEqual(files_under(self.dataset_dir()), DATASET_FILES)  # still there
        log = self.fetch_log()
        self.assertRegex(log[0], rf"^dataset {OWNER}/{DATASET}: fetched r{later}, 2 file\(s\), ")
        self.assertEqual(
            log[1], f"model {OWNER}/{MODEL} version {VERSION}: v{VERSION} in the node's cache"
        )
        self.assertEqual(self.leftovers(), [])

    def test_a_revision_unused_for_keep_days_is_removed_when_another_is_fetched(self):
        code, lines = self.fetch()
        self.assertEqual(code, 0, lines)
        second = UPDATED + 1000
        self.change_dataset(second, {"a.txt": b"second"})
        code, lines = self.fetch()
        self.assertEqual(code, 0, lines)
        self.age(self.dataset_dir(), fetch_inputs.KEEP_DAYS + 1)
        self.age(self.dataset_dir(second), fetch_inputs.KEEP_DAYS - 1)
        third = UPDATED + 2000
        self.change_dataset(third, {"a.txt": b"third"})

        code, lines = self.fetch()

        self.assertEqual(code, 0, lines)
        self.assertFalse(self.dataset_dir().exists(), "a revision unused for too long was kept")
        self.assertEqual(files_under(self.dataset_dir(second)), {"a.txt": b"second"})
        self.assertEqual(files_under(self.dataset_dir(third)), {"a.txt": b"third"})
        self.assertLinksTo(DATASET_LINK, self.dataset_dir(third), {"a.txt": b"third"})
        self.assertIn(f"removed r{UPDATED}, unused for {fetch_inputs.KEEP_DAYS} days", lines)
        self.assertEqual(
            sorted(p.name for p in self.dataset_dir().parent.iterdir() if not p.name.startswith(".")),
            [f"r{second}", f"r{third}"],
        )

    def test_a_revision_used_from_the_cache_counts_as_used_and_is_not_removed(self):
        code, lines = self.fetch()
        self.assertEqual(code, 0, lines)
        self.age(self.dataset_dir(), fetch_inputs.KEEP_DAYS + 1)
        # A job started today reads it from the cache: it is in use again.
        code, lines = self.fetch(links=self.root / "pod-b" / "inputs")
        self.assertEqual(code, 0, lines)
        later = UPDATED + 1000
        self.change_dataset(later, {"a.txt": b"later"})

        code, lines = self.fetch()

        self.assertEqual(code, 0, lines)
        self.assertEqual(files_under(self.dataset_dir()), DATASET_FILES)
        self.assertEqual(files_under(self.dataset_dir(later)), {"a.txt": b"later"})
        self.assertLinksTo(
            DATASET_LINK, self.dataset_dir(), DATASET_FILES, self.root / "pod-b" / "inputs"
        )

    def test_scratch_left_by_a_killed_run_is_removed_when_the_input_is_fetched_again(self):
        # A run stopped in the middle of a download (the pod deleted: SIGTERM, which
        # runs no `finally`; or SIGKILL, a node restarting) leaves its scratch folder
        # and its partial zip beside the revisions. Nothing else ever removes them, so
        # they must go as unused revisions do. (Fails today: `evict` skips every name
        # starting with "." and everything that is not a folder.)
        folder = self.cache / "datasets" / OWNER / DATASET
        scratch = folder / ".fetch-k1lled42"
        (scratch / "images").mkdir(parents=True)
        (scratch / "images" / "half.png").write_bytes(b"half a file")
        partial = folder / ".fetch-k1lled42.zip"
        partial.write_bytes(zip_of(DATASET_FILES)[:5000])
        for left in (scratch, partial):
            self.age(left, fetch_inputs.KEEP_DAYS + 1)

        code, lines = self.fetch()

        self.assertEqual(code, 0, lines)
        self.assertEqual(files_under(self.dataset_dir()), DATASET_FILES)
        self.assertEqual(self.leftovers(), [], "what a killed run left is kept forever")

    # What fails, and what it leaves.

    def test_a_dataset_archive_without_its_revision_fails_and_leaves_no_scratch_folder_or_zip(self):
        self.console.faults[DATASET_ZIP] = [answer_with_zip(zip_of(DATASET_FILES))]  # no header

        code, lines = self.fetch()

        self.assertEqual(code, 1, lines)
        self.assertEqual(
            self.fetch_log()[-1],
            f"cannot fetch dataset {OWNER}/{DATASET}: the console sent no revision with the dataset",
        )
        self.assertEqual(self.leftovers(), [])
        self.assertEqual(
            [p.name for p in self.dataset_dir().parent.iterdir() if not p.name.startswith(".lock")], []
        )
        self.assertFalse(os.path.lexists(self.links / DATASET_LINK))
        self.assertEqual(self.console.archives(), [(DATASET_ZIP, {})])  # not retried

    def test_an_unknown_dataset_is_refused_at_once_with_the_consoles_message_in_fetch_log(self):
        missing = dict(INPUTS[0], name="nope", link=f"datasets/{OWNER}/nope")

        code, lines = self.fetch(inputs=[missing])

        self.assertEqual(code, 1, lines)
        self.assertEqual([r.path for r in self.console.requests], [f"/api/v1/datasets/{OWNER}/nope"])
        self.sleep.assert_not_called()
        self.assertEqual(
            self.fetch_log(), [f"cannot fetch dataset {OWNER}/nope: HTTP 404: No dataset {OWNER}/nope."]
        )
        self.assertEqual(self.leftovers(), [])

    def test_a_forbidden_model_version_is_refused_at_once_with_the_consoles_message_in_fetch_log(self):
        message = f"This job may not read {OWNER}/{MODEL}."
        self.console.faults[MODEL_ZIP] = [refuse_with(403, "forbidden", message)]

        code, lines = self.fetch(inputs=[INPUTS[1]])

        self.assertEqual(code, 1, lines)
        self.assertEqual(self.console.archives(), [(MODEL_ZIP, {"version": [str(VERSION)]})])
        self.sleep.assert_not_called()
        self.assertEqual(self.fetch_log(), [f"cannot fetch model {OWNER}/{MODEL}: HTTP 403: {message}"])
        self.assertFalse(self.model_dir().exists())
        self.assertFalse(os.path.lexists(self.links / MODEL_LINK))
        self.assertEqual(self.leftovers(), [])

    def test_a_missing_model_version_is_refused_at_once_with_the_consoles_message_in_fetch_log(self):
        code, lines = self.fetch(inputs=[dict(INPUTS[1], version=9)])

        self.assertEqual(code, 1, lines)
        self.assertEqual(self.console.archives(), [(MODEL_ZIP, {"version": ["9"]})])
        self.sleep.assert_not_called()
        self.assertIn(f"HTTP 404: Model {OWNER}/{MODEL} has no version 9.", self.fetch_log()[-1])
        self.assertEqual(self.leftovers(), [])

    def test_a_wrong_token_is_refused_at_once_with_the_consoles_message_in_fetch_log(self):
        code, lines = self.fetch(PADDLECLOUD_FETCH_TOKEN="pcj_revoked")

        self.assertEqual(code, 1, lines)
        self.assertEqual([r.authorization for r in self.console.requests], ["Bearer pcj_revoked"])
        self.sleep.assert_not_called()
        self.assertEqual(
            self.fetch_log(), [f"cannot fetch dataset {OWNER}/{DATASET}: HTTP 401: {UNAUTHENTICATED}"]
        )

    def test_a_console_unavailable_once_is_asked_again_and_the_inputs_are_fetched(self):
        starting = refuse_with(503, "unavailable", "The console is starting.")
        self.console.faults[DATASET_JSON] = [starting]

        code, lines = self.fetch()

        self.assertEqual(code, 0, lines)
        self.assertEqual([r.path for r in self.console.requests][:2], [DATASET_JSON, DATASET_JSON])
        self.assertEqual([c.args[0] for c in self.sleep.call_args_list], [2])
        self.assertLinksTo(DATASET_LINK, self.dataset_dir(), DATASET_FILES)

    # A model version, as a serving instance's replicas fetch it: retries, cut
    # answers, archives that are not what they should be.

    def test_a_model_version_is_asked_for_with_the_token_sent_as_a_bearer_token(self):
        code, lines = self.fetch_the_model()

        self.assertEqual(code, 0, lines)
        self.assertEqual(
            [(r.path, r.query, r.authorization) for r in self.console.requests],
            [(MODEL_ZIP, {"version": [str(VERSION)]}, "Bearer " + TOKEN)],
        )
        self.assertLinksTo(MODEL_LINK, self.model_dir(), MODEL_FILES)

    def test_a_model_whose_owner_and_name_need_quoting_is_asked_for_by_its_quoted_path(self):
        owner, name = "team a", "tiny#2"
        with self.console.lock:
            self.console.models[(owner, name, 1)] = {"dir one/m.json": b"quoted"}
        item = {"kind": "model", "owner": owner, "name": name, "version": 1,
                "link": f"models/{owner}/{name}/1"}

        code, lines = self.fetch(inputs=[item])

        self.assertEqual(code, 0, lines)
        self.assertEqual(
            [(r.path, r.query) for r in self.console.requests],
            [("/api/v1/models/team%20a/tiny%232/archive.zip", {"version": ["1"]})],
        )
        revision = self.cache / "models" / owner / name / "v1"
        self.assertLinksTo(item["link"], revision, {"dir one/m.json": b"quoted"})

    def test_a_console_unavailable_twice_then_answering_is_fetched_after_waits_that_grow(self):
        unavailable = refuse_with(503, "unavailable", "The console is starting.")
        self.console.faults[MODEL_ZIP] = [unavailable, unavailable]

        code, lines = self.fetch_the_model()

        self.assertEqual(code, 0, lines)
        self.assertEqual(len(self.console.archives()), 3)
        self.assertTrue(any(line.startswith("attempt 1 failed (HTTP 503)") for line in lines), lines)
        self.assertTrue(any(line.startswith("attempt 2 failed (HTTP 503)") for line in lines), lines)
        self.assertEqual([c.args[0] for c in self.sleep.call_args_list], [2, 4])
        self.assertLinksTo(MODEL_LINK, self.model_dir(), MODEL_FILES)
        self.assertEqual(self.leftovers(), [])

    def test_a_console_that_stays_unavailable_is_given_up_on_after_every_attempt(self):
        self.console.faults[MODEL_ZIP] = [refuse_with(502, "unavailable", "Bad gateway.")] * 3

        with mock.patch.object(download, "ATTEMPTS", 3):
            code, lines = self.fetch_the_model()

        self.assertEqual(code, 1, lines)
        self.assertModelFailedSaying("gave up after 3 attempts", "HTTP 502")
        self.assertEqual(len(self.console.archives()), 3)
        self.assertEqual(self.sleep.call_count, 2)
        self.assertNoModelLanded()

    def test_a_console_that_cannot_be_reached_is_given_up_on_after_every_attempt(self):
        closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
        url = f"http://127.0.0.1:{closed.server_port}"
        closed.server_close()  # nothing listens there now

        with mock.patch.object(download, "ATTEMPTS", 2):
            code, lines = self.fetch_the_model(PADDLECLOUD_SERVER=url)

        self.assertEqual(code, 1, lines)
        self.assertModelFailedSaying("gave up after 2 attempts")
        self.assertTrue(any(line.startswith("attempt 1 failed") for line in lines), lines)
        self.assertEqual(self.sleep.call_count, 1)
        self.assertNoModelLanded()

    def test_a_download_cut_short_fails_without_leaving_a_revision_or_a_scratch_folder_or_zip(self):
        archive = zip_of(MODEL_FILES, folders_of(MODEL_FILES))
        self.console.faults[MODEL_ZIP] = [cut_short(archive, 1000)] * 2

        with mock.patch.object(download, "ATTEMPTS", 2):
            code, lines = self.fetch_the_model()

        self.assertEqual(code, 1, lines)
        self.assertModelFailedSaying(
            "gave up after 2 attempts", f"the download ended after 1000 of {len(archive)} bytes"
        )
        self.assertEqual(len(self.console.archives()), 2)
        self.assertTrue(any(line.startswith("attempt 1 failed") for line in lines), lines)
        self.assertNoModelLanded()

    def test_a_download_cut_short_once_is_fetched_whole_on_the_next_attempt(self):
        archive = zip_of(MODEL_FILES, folders_of(MODEL_FILES))
        self.console.faults[MODEL_ZIP] = [cut_short(archive, 1000)]

        code, lines = self.fetch_the_model()

        self.assertEqual(code, 0, lines)
        self.assertEqual(len(self.console.archives()), 2)
        self.assertLinksTo(MODEL_LINK, self.model_dir(), MODEL_FILES)
        self.assertEqual(self.leftovers(), [])

    def test_a_streamed_archive_cut_short_is_retried_and_then_fails_cleanly(self):
        """The console streams archive.zip chunked; a cut raises http.client.IncompleteRead,
        which is neither OSError nor URLError: it must be retried like one, and end with
        the one-line reason and nothing left in the cache."""
        archive = zip_of(MODEL_FILES)
        self.console.faults[MODEL_ZIP] = [cut_short(archive, 5000, streamed=True)] * 2

        with mock.patch.object(download, "ATTEMPTS", 2):
            code, lines = self.fetch_the_model()

        self.assertEqual(code, 1, lines)
        self.assertModelFailedSaying("gave up after 2 attempts")
        self.assertEqual(len(self.console.archives()), 2)
        self.assertNoModelLanded()

    def test_a_zip_with_a_member_outside_the_folder_is_refused(self):
        evil = zip_of({"inference.json": b"{}", "../evil.txt": b"owned"})
        self.console.faults[MODEL_ZIP] = [answer_with_zip(evil)]

        code, lines = self.fetch_the_model()

        self.assertEqual(code, 1, lines)
        self.assertModelFailedSaying("outside its folder", "../evil.txt")
        self.assertEqual(list(self.root.rglob("evil.txt")), [])
        self.assertEqual(len(self.console.archives()), 1)  # a bad archive is not retried
        self.sleep.assert_not_called()
        self.assertNoModelLanded()

    def test_a_zip_with_an_absolute_member_path_is_refused(self):
        target = self.root / "absolute-evil.txt"
        evil = zip_of({"inference.json": b"{}", str(target): b"owned"})
        self.console.faults[MODEL_ZIP] = [answer_with_zip(evil)]

        code, lines = self.fetch_the_model()

        self.assertEqual(code, 1, lines)
        self.assertModelFailedSaying("outside its folder")
        self.assertFalse(target.exists())
        self.assertNoModelLanded()

    def test_an_answer_that_is_not_a_zip_fails_without_a_partial_revision(self):
        self.console.faults[MODEL_ZIP] = [answer_with_zip(b"<html>a proxy's login page</html>")]

        code, lines = self.fetch_the_model()

        self.assertEqual(code, 1, lines)
        self.assertModelFailedSaying("zip")
        self.assertNoModelLanded()

    def test_a_revision_another_pod_put_in_place_meanwhile_is_kept_as_it_is(self):
        # Not through the lock (the two-runs test covers that): the revision
        # appears while this run downloads, and the rename into place gives way.
        def another_pod_wins(h):
            self.model_dir().mkdir(parents=True)
            (self.model_dir() / "inference.json").write_bytes(MODEL_FILES["inference.json"])
            return False  # then the normal answer

        self.console.faults[MODEL_ZIP] = [another_pod_wins]

        code, lines = self.fetch_the_model()

        self.assertEqual(code, 0, lines)
        self.assertLinksTo(
            MODEL_LINK, self.model_dir(), {"inference.json": MODEL_FILES["inference.json"]}
        )
        self.assertEqual(self.leftovers(), [])

    # Settings.

    def test_missing_settings_return_2_naming_them(self):
        code, lines = self.fetch(PADDLECLOUD_SERVER="", PADDLECLOUD_INPUTS="")

        self.assertEqual(code, 2)
        self.assertEqual(
            lines[-1], "cannot fetch the inputs: PADDLECLOUD_SERVER, PADDLECLOUD_INPUTS not set"
        )
        self.assertEqual(self.console.requests, [])
        self.assertFalse(self.cache.exists())

    def test_an_empty_environment_names_every_setting(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = fetch_inputs.main({})

        self.assertEqual(code, 2)
        last = out.getvalue().splitlines()[-1]
        for name in (
            "PADDLECLOUD_SERVER",
            "PADDLECLOUD_FETCH_TOKEN",
            "PADDLECLOUD_INPUT_CACHE",
            "PADDLECLOUD_INPUT_DIR",
            "PADDLECLOUD_INPUTS",
        ):
            self.assertIn(name, last)

    def test_inputs_that_are_not_json_return_2_saying_so(self):
        code, lines = self.fetch(PADDLECLOUD_INPUTS="[{not json")

        self.assertEqual(code, 2)
        self.assertTrue(
            lines[-1].startswith("cannot fetch the inputs: PADDLECLOUD_INPUTS is not JSON"), lines
        )
        self.assertEqual(self.console.requests, [])

    # Pods starting together on one node.

    def test_two_runs_at_once_on_one_node_download_the_archive_once_and_both_link_it(self):
        # The first run's dataset archive is answered only once the other run has
        # come to the dataset's lock, so the two overlap; without the lock both
        # would download it.
        lock_path = str(self.cache / "datasets" / OWNER / DATASET / ".lock")
        at_the_lock = []
        both_at_the_lock = threading.Event()
        real_flock = fetch_inputs.fcntl.flock

        def flock(file, operation):
            if getattr(file, "name", None) == lock_path:
                with self.console.lock:
                    at_the_lock.append(threading.current_thread().name)
                    if len(at_the_lock) == 2:
                        both_at_the_lock.set()
            return real_flock(file, operation)

        def wait_for_the_other(h):
            both_at_the_lock.wait(10)
            return False  # then the normal answer

        self.console.faults[DATASET_ZIP] = [wait_for_the_other]
        pods = {name: self.root / name / "inputs" for name in ("pod-a", "pod-b")}
        codes = {}

        def run(name):
            try:
                codes[name] = fetch_inputs.main(self.env(links=pods[name]))
            except BaseException as err:  # reported below, not lost in the thread
                codes[name] = repr(err)

        threads = [threading.Thread(target=run, args=(name,), name=name) for name in pods]
        out = io.StringIO()
        with mock.patch.object(fetch_inputs.fcntl, "flock", flock), contextlib.redirect_stdout(out):
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)

        self.assertEqual(codes, {"pod-a": 0, "pod-b": 0}, out.getvalue())
        self.assertTrue(both_at_the_lock.is_set(), "the two runs did not overlap")
        self.assertEqual(
            sorted(path for path, _ in self.console.archives()), sorted([DATASET_ZIP, MODEL_ZIP])
        )
        for links in pods.values():
            self.assertLinksTo(DATASET_LINK, self.dataset_dir(), DATASET_FILES, links)
            self.assertLinksTo(MODEL_LINK, self.model_dir(), MODEL_FILES, links)
        # One run fetched the dataset, the other found it in the cache.
        said = sorted(
            self.fetch_log(links)[0].split(": ", 1)[1].split(",")[0] for links in pods.values()
        )
        self.assertEqual(said, [f"fetched r{UPDATED}", f"r{UPDATED} in the node's cache"])
        self.assertEqual(self.leftovers(), [])

    # As the console runs it.

    def run_as_the_console_does(self, env):
        # The init container runs `python3 -c BOOT` with only these variables
        # (kubernetes/inputs.rs); sys.executable is a python3.
        env.update(PATH=os.environ.get("PATH", ""), PYTHONUNBUFFERED="1")
        return subprocess.run(
            [sys.executable, "-c", BOOT],
            env=env,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def test_the_script_runs_as_the_console_runs_it_with_python3_c(self):
        done = self.run_as_the_console_does(self.env())

        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual(done.stderr, "")
        self.assertLinksTo(DATASET_LINK, self.dataset_dir(), DATASET_FILES)
        self.assertLinksTo(MODEL_LINK, self.model_dir(), MODEL_FILES)
        self.assertEqual(done.stdout.splitlines(), self.fetch_log())
        self.assertEqual(len(self.console.archives()), 2)
        self.assertEqual(self.leftovers(), [])

    def test_the_script_run_with_python3_c_exits_1_on_a_refusal(self):
        done = self.run_as_the_console_does(self.env(PADDLECLOUD_FETCH_TOKEN="pcj_revoked"))

        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertEqual(done.stderr, "")
        self.assertIn(UNAUTHENTICATED, self.fetch_log()[-1])
        self.assertEqual(self.leftovers(), [])


if __name__ == "__main__":
    unittest.main()
