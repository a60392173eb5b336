"""The default serving program (`paddlecloud/serving.py`) as the console runs it: a real
server process on a free port, serving a real exported PaddlePaddle model.

    python3 -m unittest discover -s sdk/python/tests -v

These tests run under any Python 3; the server and the model export run under a Python
with paddlepaddle 3.3.1: `$PADDLECLOUD_SERVING_PYTHON` (what the console runs replicas with), else `~/.cache/paddlecloud/pyvenv/bin/python`
(which `scripts/setup.sh test` makes). Without one the tests are skipped, or fail when
`PADDLECLOUD_REQUIRE_PADDLE=1`.
"""

import json
import os
import queue
import re
import signal
import subprocess
import tarfile
import tempfile
import textwrap
import threading
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVING = HERE.parent / "paddlecloud" / "serving.py"
EXPORT = HERE / "fixtures" / "export_tiny_model.py"
# Importing paddle takes seconds, more on a busy machine.
STARTUP_SECONDS = 180
CANNOT_LOAD = "paddlecloud-serving: cannot load the model: "

# Set by setUpModule.
PYTHON = ""
TMP = Path()
JSON_MODEL: dict = {}
PDMODEL_MODEL: dict = {}
_tmp = None


def _paddle_python():
    """The Python with paddle, or None and why not."""
    path = os.environ.get("PADDLECLOUD_SERVING_PYTHON") or os.path.expanduser(
        "~/.cache/paddlecloud/pyvenv/bin/python"
    )
    if not os.path.exists(path):
        return None, f"no Python at {path}"
    found = subprocess.run(
        [
            path,
            "-c",
            "import importlib.util, sys; sys.exit(importlib.util.find_spec('paddle') is None)",
        ],
        capture_output=True,
        timeout=120,
    )
    if found.returncode != 0:
        return None, f"{path} has no paddlepaddle"
    return path, ""


def _export(out_dir, *args):
    done = subprocess.run(
        [PYTHON, str(EXPORT), str(out_dir), *args], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise RuntimeError(f"exporting the tiny model failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def setUpModule():
    global PYTHON, TMP, JSON_MODEL, PDMODEL_MODEL, _tmp
    python, why = _paddle_python()
    if python is None:
        message = (
            f"{why}: run `scripts/setup.sh test`, or point PADDLECLOUD_SERVING_PYTHON at a "
            "Python with paddlepaddle 3.3.1"
        )
        if os.environ.get("PADDLECLOUD_REQUIRE_PADDLE") == "1":
            raise RuntimeError(message)
        raise unittest.SkipTest(message)
    PYTHON = python
    _tmp = tempfile.TemporaryDirectory(prefix="serving-test-")
    TMP = Path(_tmp.name)
    JSON_MODEL = _export(TMP / "json", "--tar")
    PDMODEL_MODEL = _export(TMP / "pdmodel", "--format", "pdmodel")


def tearDownModule():
    _tmp.cleanup()


def expected_rows(rows):
    """The tiny model by hand (see fixtures/export_tiny_model.py): y = x @ W + b."""
    return [[a + c - d + 0.5, b + c + 2 * d - 1] for a, b, c, d in rows]


def output_name(model):
    return next(iter(model["outputs"]))


class Server:
    """One `serving.py` process, started with `--port 0` and found by its ready line."""

    def __init__(self, *args, env=None, program=(str(SERVING),), cwd=None):
        self.stderr_file = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [PYTHON, *program, "--port", "0", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=self.stderr_file,
            text=True,
            env=dict(os.environ, **(env or {})),
            cwd=cwd,
        )
        lines = queue.Queue()
        threading.Thread(target=self._read_stdout, args=(lines,), daemon=True).start()
        try:
            self.ready_line = lines.get(timeout=STARTUP_SECONDS)
        except queue.Empty:
            self.ready_line = None
        match = re.match(r"paddlecloud-serving: ready on (http://\S+) \(", self.ready_line or "")
        if not match:
            self.close()
            raise AssertionError(
                f"the server did not get ready; stdout: {self.ready_line!r}\n"
                f"stderr:\n{self.stderr_text}"
            )
        self.url = match.group(1)

    def _read_stdout(self, lines):
        for line in self.process.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def stderr(self):
        if self.stderr_file.closed:
            return self.stderr_text
        self.stderr_file.seek(0)
        return self.stderr_file.read()

    def request(self, path, body=None, method=None, timeout=60):
        """(status, parsed JSON or text) of one request."""
        data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status, content_type, text = (
                    resp.status,
                    resp.headers["Content-Type"],
                    resp.read().decode(),
                )
        except urllib.error.HTTPError as err:
            status, content_type, text = err.code, err.headers["Content-Type"], err.read().decode()
        return status, json.loads(text) if content_type == "application/json" else text

    def predict(self, inputs):
        return self.request("/predict", {"inputs": inputs})

    def stop(self):
        """SIGTERM, then the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()
        finally:
            self.process.stdout.close()

    def close(self):
        """Stops the server and keeps what it wrote to stderr in `stderr_text`."""
        self.stop()
        self.stderr_text = self.stderr()
        self.stderr_file.close()


def run_to_exit(*args):
    """(exit status, stderr) of a server that is expected not to start."""
    done = subprocess.run(
        [PYTHON, str(SERVING), "--port", "0", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=STARTUP_SECONDS,
    )
    return done.returncode, done.stderr


class ServerTestCase(unittest.TestCase):
    def start(self, *args, **kwargs):
        server = Server(*args, **kwargs)
        self.addCleanup(server.close)
        return server

    def assert_hand_computed_answer(self, server, model):
        rows = [[1, 2, 3, 4]]
        self.assertEqual(
            server.predict({"x": rows}),
            (200, {"outputs": {output_name(model): expected_rows(rows)}}),
        )


class TinyModelTest(unittest.TestCase):
    """One server for the tests that only ask it things."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server("--model-dir", JSON_MODEL["model_dir"])
        cls.output = output_name(JSON_MODEL)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def test_a_tiny_exported_model_answers_a_predict_call_with_the_hand_computed_output(self):
        self.assertEqual(self.server.request("/healthz"), (200, {"status": "ready"}))
        self.assertEqual(JSON_MODEL["outputs"], {self.output: [[0.5, 12.0]]})
        self.assertEqual(
            self.server.predict(JSON_MODEL["inputs"]), (200, {"outputs": JSON_MODEL["outputs"]})
        )

    def test_the_ready_line_names_the_model_file_and_its_input(self):
        program = str(Path(JSON_MODEL["model_dir"]) / "inference.json")
        self.assertIn(f"(model: {program}, inputs: x float32[-1, 4])", self.server.ready_line)

    def test_the_metadata_gives_the_input_name_shape_and_dtype_and_the_output_names(self):
        self.assertEqual(
            self.server.request("/metadata"),
            (
                200,
                {
                    "model": str(Path(JSON_MODEL["model_dir"]) / "inference.json"),
                    "script": None,
                    "inputs": [{"name": "x", "shape": [-1, 4], "dtype": "float32"}],
                    "outputs": [self.output],
                },
            ),
        )

    def test_a_batch_of_three_rows_gets_three_hand_computed_rows_back(self):
        rows = [[1, 2, 3, 4], [0, 0, 0, 0], [-1.5, 2, 0.25, 8]]
        self.assertEqual(
            self.server.predict({"x": rows}), (200, {"outputs": {self.output: expected_rows(rows)}})
        )

    def test_the_only_input_may_be_sent_without_its_name(self):
        self.assertEqual(
            self.server.predict([[1, 2, 3, 4]]), (200, {"outputs": {self.output: [[0.5, 12.0]]}})
        )

    def test_a_wrong_input_name_or_shape_or_a_non_json_body_gets_a_400_and_serving_goes_on(self):
        bad = [
            ({"inputs": {"y": [[1, 2, 3, 4]]}}, "unknown input 'y'; the model's inputs are: x"),
            ({"inputs": {}}, "missing input 'x'"),
            (
                {"inputs": {"x": [[1, 2, 3]]}},
                "input 'x' has shape [1, 3] but the model takes [-1, 4]",
            ),
            (
                {"inputs": {"x": [1, 2, 3, 4]}},
                "input 'x' has shape [4] but the model takes [-1, 4]",
            ),
            ({"inputs": {"x": [[1, 2, 3, 4], [1, 2]]}}, "input 'x' is not a rectangular array"),
            ({"inputs": {"x": [[1, 2, 3, "four"]]}}, "input 'x' must hold only numbers"),
            ({"x": [[1, 2, 3, 4]]}, 'the body must be a JSON object {"inputs"'),
            (b"x=1,2,3,4", "the body is not JSON: Expecting value: line 1 column 1"),
            (b"\xff\xfe", "the body is not JSON"),
        ]
        for body, message in bad:
            with self.subTest(body=body):
                status, answer = self.server.request("/predict", body)
                self.assertEqual(status, 400, answer)
                self.assertEqual(list(answer), ["error"])
                self.assertIn(message, answer["error"])
                self.assertNotIn("Traceback", answer["error"])
        self.assertEqual(
            self.server.predict([[1, 2, 3, 4]]), (200, {"outputs": {self.output: [[0.5, 12.0]]}})
        )
        self.assertIn("POST /predict 400 ", self.server.stderr())
        self.assertIn("unknown input 'y'", self.server.stderr())

    def test_an_unknown_path_gets_a_json_404_and_a_wrong_method_a_json_405(self):
        status, answer = self.server.request("/predictions")
        self.assertEqual(status, 404)
        self.assertIn("/predictions", answer["error"])
        self.assertEqual(self.server.request("/predict"), (405, {"error": "/predict takes POST"}))

    def test_twenty_concurrent_requests_all_get_their_own_correct_answers(self):
        answers, errors = {}, []
        start = threading.Barrier(20)

        def client(i):
            start.wait()
            for j in range(5):
                rows = [[i, j, 1, 2]] * (1 + i % 3)
                try:
                    answers[i, j] = (self.server.predict({"x": rows}), rows)
                except Exception as exc:  # reported below; a thread cannot fail the test
                    errors.append(f"{i},{j}: {exc!r}")

        threads = [threading.Thread(target=client, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        self.assertEqual(errors, [])
        self.assertEqual(len(answers), 100)
        for (status, answer), rows in answers.values():
            self.assertEqual(
                (status, answer), (200, {"outputs": {self.output: expected_rows(rows)}})
            )

    def test_every_request_is_logged_on_stderr_with_its_status_and_duration(self):
        self.server.request("/healthz")
        self.assertRegex(self.server.stderr(), r"(?m)^GET /healthz 200 \d+\.\dms$")


class ModelFilesTest(ServerTestCase):
    def test_it_runs_as_python_m_paddlecloud_serving_too(self):
        server = self.start(
            "--model-dir",
            JSON_MODEL["model_dir"],
            program=("-m", "paddlecloud.serving"),
            cwd=SERVING.parent.parent,
        )
        self.assert_hand_computed_answer(server, JSON_MODEL)

    def test_a_model_packed_as_a_tar_gz_is_extracted_and_served(self):
        self.assert_hand_computed_answer(
            self.start("--model-dir", JSON_MODEL["archive"]), JSON_MODEL
        )

    def test_a_directory_holding_only_a_tar_gz_is_served_from_it_and_the_env_names_it(self):
        only_archive = TMP / "only-archive"
        only_archive.mkdir()
        (only_archive / "resnet.tgz").write_bytes(Path(JSON_MODEL["archive"]).read_bytes())
        server = self.start(env={"PADDLECLOUD_MODEL_DIR": str(only_archive)})
        self.assert_hand_computed_answer(server, JSON_MODEL)

    def test_a_legacy_pdmodel_program_is_served_too(self):
        server = self.start("--model-dir", PDMODEL_MODEL["model_dir"])
        self.assertIn("inference.pdmodel, inputs: x float32[-1, 4])", server.ready_line)
        self.assert_hand_computed_answer(server, PDMODEL_MODEL)

    def test_an_archive_member_that_would_land_outside_the_extraction_directory_is_refused(self):
        archive = TMP / "evil.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(Path(JSON_MODEL["model_dir"]) / "inference.json", arcname="../inference.json")
        status, stderr = run_to_exit("--model-dir", archive)
        self.assertEqual(status, 1, stderr)
        self.assertEqual(
            stderr.splitlines()[-1],
            f"{CANNOT_LOAD}{archive}: member '../inference.json' points outside the archive",
        )


class LoadFailureTest(unittest.TestCase):
    def model_copy(self, name):
        copy = TMP / name
        copy.mkdir()
        for file in JSON_MODEL["files"]:
            (copy / file).write_bytes((Path(JSON_MODEL["model_dir"]) / file).read_bytes())
        return copy

    def assert_cannot_load(self, model_dir, *reason_parts):
        status, stderr = run_to_exit("--model-dir", model_dir)
        self.assertEqual(status, 1, stderr)
        last = stderr.splitlines()[-1]
        self.assertTrue(last.startswith(CANNOT_LOAD), stderr)
        for part in reason_parts:
            self.assertIn(part, last)

    def test_a_corrupt_params_file_makes_the_server_exit_1_with_a_cannot_load_line(self):
        model = self.model_copy("corrupt-params")
        params = model / "inference.pdiparams"
        params.write_bytes(params.read_bytes()[:40])
        self.assert_cannot_load(model, "paddle could not read", "inference.pdiparams")

    def test_a_corrupt_program_file_makes_the_server_exit_1_with_a_cannot_load_line(self):
        model = self.model_copy("corrupt-program")
        (model / "inference.json").write_text('{"program": ')
        self.assert_cannot_load(model, "paddle could not read", "inference.json")

    def test_a_missing_params_file_makes_the_server_exit_1_with_a_cannot_load_line(self):
        model = self.model_copy("missing-params")
        (model / "inference.pdiparams").unlink()
        self.assert_cannot_load(
            model, "no .pdiparams file beside the program file(s)", "inference.json"
        )

    def test_a_model_directory_that_does_not_exist_makes_the_server_exit_1_with_a_cannot_load_line(
        self,
    ):
        self.assert_cannot_load(TMP / "nowhere", f"{TMP / 'nowhere'} does not exist")


class ScriptTest(ServerTestCase):
    def write_script(self, name, source):
        path = TMP / name
        path.write_text(textwrap.dedent(source))
        return path

    def test_a_script_load_and_predict_replace_the_paddle_model(self):
        script = self.write_script(
            "scaled.py",
            """
            import os
            import numpy as np

            def load(model_dir):
                return {"scale": 10, "files": sorted(os.listdir(model_dir))}

            def predict(state, inputs):
                if "x" not in inputs:
                    raise ValueError("send x")
                assert isinstance(inputs["x"], np.ndarray)
                x = inputs["x"]
                return {"scaled": x * state["scale"], "files": state["files"], "n": len(x)}
        """,
        )
        server = self.start("--model-dir", JSON_MODEL["archive"], "--script", script)
        self.assertIn(f"inputs: see {script})", server.ready_line)
        self.assertEqual(
            server.predict({"x": [1.5, 2]}),
            (
                200,
                {
                    "outputs": {
                        "scaled": [15.0, 20.0],
                        "files": JSON_MODEL["files"],
                        "n": 2,
                    }
                },
            ),
        )
        self.assertEqual(server.predict({"y": 1}), (400, {"error": "send x"}))
        status, metadata = server.request("/metadata")
        self.assertEqual((metadata["script"], metadata["inputs"]), (str(script), []))

    def test_a_script_predict_gets_the_loaded_paddle_model_as_its_state(self):
        script = self.write_script(
            "argmax.py",
            """
            def predict(state, inputs):
                (scores,) = state.predict(inputs).values()
                return {"label": scores.argmax(axis=1), "score": scores.max(axis=1)}
        """,
        )
        server = self.start("--model-dir", JSON_MODEL["model_dir"], "--script", script)
        rows = [[1, 2, 3, 4], [9, 0, 0, 0]]
        self.assertEqual(
            server.predict(rows), (200, {"outputs": {"label": [1, 0], "score": [12.0, 9.5]}})
        )
        status, answer = server.predict({"x": [[1, 2]]})
        self.assertEqual(status, 400)
        self.assertIn("input 'x' has shape [1, 2]", answer["error"])

    def test_a_script_that_fails_to_load_makes_the_server_exit_1_with_a_cannot_load_line(self):
        script = self.write_script(
            "broken.py",
            """
            def load(model_dir):
                raise FileNotFoundError("no tokenizer.json in " + model_dir)
        """,
        )
        status, stderr = run_to_exit("--model-dir", JSON_MODEL["model_dir"], "--script", script)
        self.assertEqual(status, 1)
        self.assertEqual(
            stderr.splitlines()[-1],
            f"{CANNOT_LOAD}the script's load() failed: "
            f"FileNotFoundError: no tokenizer.json in {JSON_MODEL['model_dir']}",
        )


class MetricsTest(ServerTestCase):
    def test_the_metrics_count_predict_requests_by_status_and_time_them_in_a_histogram(self):
        server = self.start("--model-dir", JSON_MODEL["model_dir"])
        for _ in range(3):
            self.assertEqual(server.predict([[1, 2, 3, 4]])[0], 200)
        for body in (b"not json", {"inputs": {"y": 1}}):
            self.assertEqual(server.request("/predict", body)[0], 400)
        server.request("/healthz")  # not a /predict request: not counted

        status, text = server.request("/metrics")
        self.assertEqual(status, 200)
        samples = {}
        for line in text.splitlines():
            if not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                samples[name] = float(value)
        self.assertEqual(samples['paddlecloud_serving_requests_total{code="200"}'], 3)
        self.assertEqual(samples['paddlecloud_serving_requests_total{code="400"}'], 2)
        self.assertEqual(samples["paddlecloud_serving_request_seconds_count"], 5)
        self.assertEqual(samples['paddlecloud_serving_request_seconds_bucket{le="+Inf"}'], 5)
        self.assertGreater(samples["paddlecloud_serving_request_seconds_sum"], 0)
        buckets = [
            v
            for k, v in samples.items()
            if k.startswith("paddlecloud_serving_request_seconds_bucket")
        ]
        self.assertEqual(buckets, sorted(buckets), "histogram buckets are cumulative")
        self.assertIn("# TYPE paddlecloud_serving_request_seconds histogram", text)


class ShutdownTest(ServerTestCase):
    def test_sigterm_stops_the_server_gracefully_with_exit_status_0(self):
        server = self.start("--model-dir", JSON_MODEL["model_dir"])
        self.assertEqual(server.predict([[1, 2, 3, 4]])[0], 200)
        self.assertEqual(server.stop(), 0, server.stderr())
        self.assertIn("paddlecloud-serving: stopping", server.stderr())

    def test_a_request_in_progress_at_sigterm_is_answered_before_the_server_exits(self):
        script = TMP / "slow.py"
        script.write_text(
            "import time\n"
            "def predict(state, inputs):\n"
            "    time.sleep(2)\n"
            "    return state.predict(inputs)\n"
        )
        server = self.start("--model-dir", JSON_MODEL["model_dir"], "--script", script)
        answers = []
        client = threading.Thread(target=lambda: answers.append(server.predict([[1, 2, 3, 4]])))
        client.start()
        time.sleep(0.5)
        server.process.send_signal(signal.SIGTERM)
        client.join(timeout=60)
        self.assertEqual(answers, [(200, {"outputs": JSON_MODEL["outputs"]})])
        self.assertEqual(server.stop(), 0, server.stderr())


if __name__ == "__main__":
    unittest.main()
