"""The SDK against the real `paddlecloud` server: no mocks.

Run from the repository root after `cargo build --release -p server`:

    python3 -m unittest discover -s sdk/python/tests -v

The binary is `$PADDLECLOUD_BIN`, else `$CARGO_TARGET_DIR/release/paddlecloud`, else
`target/release/paddlecloud`. A missing binary, or one without `admin create-key`, fails
the run with a message saying so.
"""

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
import uuid
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "sdk" / "python"))

import paddlecloud  # noqa: E402
from paddlecloud import Client, PaddleCloudError  # noqa: E402

ACCOUNT = "sdk"
EMAIL = "sdk@example.com"
PASSWORD = "sdk-password-1"
# The first user of the database (ACCOUNT's owner) is a site admin; this
# second account's owner is not.
GUEST_ACCOUNT = "sdk-guest"
GUEST_EMAIL = "sdk-guest@example.com"

# Set by setUpModule.
SERVER = ""
KEY = ""
GUEST_KEY = ""
CREDENTIALS = ""
_tmp = None
_server_proc = None
_server_log = None


def _binary() -> Path:
    if os.environ.get("PADDLECLOUD_BIN"):
        return Path(os.environ["PADDLECLOUD_BIN"])
    if os.environ.get("CARGO_TARGET_DIR"):
        return Path(os.environ["CARGO_TARGET_DIR"]) / "release" / "paddlecloud"
    return REPO / "target" / "release" / "paddlecloud"


def _run(args, stdin=None):
    done = subprocess.run(
        args, input=stdin, capture_output=True, text=True, cwd=REPO, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"`{' '.join(map(str, args))}` exited with {done.returncode}:\n"
            f"{done.stdout}\n{done.stderr}"
        )
    return done.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setUpModule(extra_args=()):
    global SERVER, KEY, GUEST_KEY, CREDENTIALS, _tmp, _server_proc, _server_log
    binary = _binary()
    if not binary.is_file():
        raise RuntimeError(
            f"The paddlecloud server binary is not at {binary}. Build it with "
            "`cargo build --locked --release -p server` from the repository root, "
            "or point PADDLECLOUD_BIN at it."
        )
    probe = subprocess.run(
        [str(binary), "admin", "create-key", "--help"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        raise RuntimeError(
            f"{binary} does not support `paddlecloud admin create-key` (exit "
            f"{probe.returncode}: {probe.stderr.strip()[:300]}); the SDK needs a server "
            "with access keys and the /api/v1 REST API. Rebuild it from this checkout."
        )

    _tmp = tempfile.mkdtemp(prefix="paddlecloud-sdk-")
    data = os.path.join(_tmp, "data")
    try:
        _run(
            [binary, "admin", "create-account", "--name", ACCOUNT, "--email", EMAIL,
             "--password-stdin", "--data-dir", data],
            stdin=PASSWORD + "\n",
        )
        out = _run(
            [binary, "admin", "create-key", "--account", ACCOUNT, "--user", EMAIL,
             "--data-dir", data]
        )
        KEY = out.strip().splitlines()[-1].strip()
        if not KEY.startswith("pck_"):
            raise RuntimeError(f"`admin create-key` printed no key on its last line:\n{out}")
        _run(
            [binary, "admin", "create-account", "--name", GUEST_ACCOUNT, "--email",
             GUEST_EMAIL, "--password-stdin", "--data-dir", data],
            stdin=PASSWORD + "\n",
        )
        out = _run(
            [binary, "admin", "create-key", "--account", GUEST_ACCOUNT, "--user",
             GUEST_EMAIL, "--data-dir", data]
        )
        GUEST_KEY = out.strip().splitlines()[-1].strip()
        if not GUEST_KEY.startswith("pck_"):
            raise RuntimeError(f"`admin create-key` printed no key on its last line:\n{out}")

        port = _free_port()
        SERVER = f"http://127.0.0.1:{port}"
        _server_log = open(os.path.join(_tmp, "server.log"), "w+")
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info,sqlx=warn"))
        env.pop("DATABASE_URL", None)
        # Environments (paddle-cpu, which batch scoring runs in) are built
        # once per machine, in the cache the Rust tests build theirs in.
        environments = () if "--environments-dir" in extra_args else (
            "--environments-dir", os.path.expanduser("~/.cache/paddlecloud/environments"))
        _server_proc = subprocess.Popen(
            [str(binary), "serve", "--addr", f"127.0.0.1:{port}", "--data-dir", data,
             "--stop-grace", "1",
             # The tests' jobs together ask for more than a 2-core CI machine
             # has; they are not about waiting for room.
             "--local-cpus", "64", "--local-memory", "256Gi", *environments, *extra_args],
            cwd=REPO, stdout=_server_log, stderr=subprocess.STDOUT, env=env,
        )
        deadline = time.monotonic() + 60
        while True:
            if _server_proc.poll() is not None:
                raise RuntimeError(f"The server exited with {_server_proc.returncode}:\n{_log()}")
            try:
                with urllib.request.urlopen(f"{SERVER}/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"The server did not answer /healthz within 60 s:\n{_log()}")
            time.sleep(0.1)

        CREDENTIALS = os.path.join(_tmp, "credentials.json")
        with open(CREDENTIALS, "w") as f:
            json.dump({"server": SERVER, "account": ACCOUNT, "user": EMAIL, "key": KEY,
                       "created_at": "ignored"}, f)
    except BaseException:
        tearDownModule()
        raise


def _log() -> str:
    if _server_log is None:
        return ""
    _server_log.flush()
    _server_log.seek(0)
    return _server_log.read()[-4000:]


def tearDownModule():
    global _server_proc, _server_log
    if _server_proc is not None and _server_proc.poll() is None:
        _server_proc.terminate()
        try:
            _server_proc.wait(10)
        except subprocess.TimeoutExpired:
            _server_proc.kill()
            _server_proc.wait()
    _server_proc = None
    if _server_log is not None:
        _server_log.close()
        _server_log = None
    if _tmp is not None:
        shutil.rmtree(_tmp, ignore_errors=True)


def job_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# Prints who it is; trainers exit 0, the parameter server waits to be stopped
# (one that exits before the trainers fail the job).
# Like a parameter-server job: the server listens on its port, and a trainer
# reaches it before it ends, so a job cannot succeed (and its server be stopped)
# before the server has started and said who it is.
ROLE_SCRIPT = (
    "import os, socket, time\n"
    "role = os.environ['TRAINING_ROLE']\n"
    "if role == 'PSERVER':\n"
    "    server = socket.create_server(('127.0.0.1', int(os.environ['PADDLE_PORT'])))\n"
    "print('role', role, 'trainer id', os.environ.get('PADDLE_TRAINER_ID'), "
    "'greeting', os.environ.get('GREETING'), flush=True)\n"
    "if role == 'PSERVER':\n"
    "    time.sleep(60)\n"
    "for ps in filter(None, os.environ['PADDLE_PSERVERS_IP_PORT_LIST'].split(',')):\n"
    "    host, port = ps.rsplit(':', 1)\n"
    "    for _ in range(600):\n"
    "        try:\n"
    "            socket.create_connection((host, int(port)), timeout=1).close()\n"
    "            break\n"
    "        except OSError:\n"
    "            time.sleep(0.1)\n"
)


class ClientTestCase(unittest.TestCase):
    def setUp(self):
        self.client = Client(server=SERVER, key=KEY, timeout=30)
        self.jobs = []

    def tearDown(self):
        for name in self.jobs:
            try:
                self.client.delete_job(name)
            except PaddleCloudError:
                pass

    def submit(self, prefix, command, num_trainer=1, num_ps=0, **kwargs):
        name = job_name(prefix)
        self.jobs.append(name)
        return self.client.create_cloud_job(
            name, num_trainer, "256Mi", 0, "500m", num_ps, "256Mi", "250m",
            command=command, **kwargs,
        )

    def wait_until(self, name, status, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            job = self.client.get_job(name)
            if job["status"] == status:
                return job
            if time.monotonic() > deadline:
                self.fail(f"{name} is {job['status']}, not {status}, after {timeout} s: {job}")
            time.sleep(0.2)


class JobLifecycleTest(ClientTestCase):
    def test_a_submitted_job_runs_to_success_and_its_log_can_be_read(self):
        job = self.submit(
            "ok", ["python3", "-c", ROLE_SCRIPT], num_trainer=2, num_ps=1,
        )
        name = job["name"]
        self.assertIn(job["status"], ("pending", "running"))
        self.assertEqual(job["spec"]["num_trainers"], 2)
        self.assertEqual(job["spec"]["num_ps"], 1)
        self.assertEqual(job["spec"]["trainer"], {"cpu": "500m", "memory": "256Mi", "gpu": 0})
        self.assertEqual(job["spec"]["ps"], {"cpu": "250m", "memory": "256Mi", "gpu": 0})

        done = self.client.wait_job(name, timeout=60, poll=0.2)
        self.assertEqual(done["status"], "succeeded", done)
        self.assertEqual(done["trainers"]["succeeded"], 2, done)
        self.assertIsNotNone(done["finished_at"])

        pods = {p["name"]: p for p in self.client.pods(name)}
        self.assertEqual(set(pods), {"ps-0", "trainer-0", "trainer-1"})
        # What the job's page shows: its pods, what happened, in order.
        detail = self.client.job_detail(name)
        self.assertEqual(detail["job"]["status"], "succeeded")
        self.assertEqual({p["name"] for p in detail["pods"]}, set(pods))
        history = detail["history"]
        self.assertEqual((history[0]["pod"], history[0]["state"]), (None, "pending"))
        self.assertEqual([e["state"] for e in history if e["pod"] is None][-1], "succeeded")
        self.assertIn(("trainer-1", "succeeded", 0),
                      [(e["pod"], e["state"], e["exit_code"]) for e in history])
        self.assertEqual(detail["registered"], [])
        self.assertEqual(pods["trainer-1"]["role"], "trainer")
        self.assertEqual(pods["trainer-1"]["phase"], "succeeded")
        self.assertEqual(pods["trainer-1"]["exit_code"], 0)

        log = self.client.logs(name, "trainer-1")
        self.assertIn("role TRAINER trainer id 1", log)
        self.assertNotIn("trainer id 0", log)
        self.assertIn("role TRAINER trainer id 0", self.client.logs(name, "trainer-0"))
        # Without a pod: the job's first pod, the parameter server.
        self.assertIn("role PSERVER", self.client.logs(name))
        stamped = self.client.logs(name, "trainer-1", tail=1, timestamps=True)
        self.assertRegex(stamped, r"^\d{4}-\d\d-\d\dT\S+ role TRAINER trainer id 1 greeting None\n?$")

    def test_a_command_string_is_split_like_a_shell_and_env_reaches_every_replica(self):
        script = ROLE_SCRIPT.replace("'", '"')
        job = self.submit(
            "env", f"python3 -c '{script}'", env={"GREETING": "hello there"},
        )
        self.assertEqual(job["spec"]["command"], ["python3", "-c", script])
        self.assertEqual(job["spec"]["env"], [{"name": "GREETING", "value": "hello there"}])
        self.assertEqual(self.client.wait_job(job["name"], timeout=60, poll=0.2)["status"],
                         "succeeded")
        self.assertIn("greeting hello there", self.client.logs(job["name"], "trainer-0"))

    def test_a_long_running_job_is_stopped_by_stop_job_and_ends_stopped(self):
        name = self.submit("sleepy", "sleep 60", num_trainer=1, num_ps=1)["name"]
        self.wait_until(name, "running")
        started = time.monotonic()
        self.client.stop_job(name)
        job = self.client.wait_job(name, timeout=20, poll=0.2)
        self.assertEqual(job["status"], "stopped", job)
        self.assertLess(time.monotonic() - started, 15, "stop did not end `sleep 60` quickly")
        phases = {p["name"]: p["phase"] for p in self.client.pods(name)}
        self.assertEqual(phases, {"ps-0": "stopped", "trainer-0": "stopped"})
        # Stopping a finished job changes nothing.
        self.assertEqual(self.client.stop_job(name)["status"], "stopped")

    def test_list_jobs_filters_by_status_and_by_name(self):
        running = self.submit("listed-run", "sleep 60")["name"]
        finished = self.submit("listed-done", ["true"])["name"]
        self.wait_until(running, "running")
        self.client.wait_job(finished, timeout=30, poll=0.2)

        names = [j["name"] for j in self.client.list_jobs(status="running")]
        self.assertIn(running, names)
        self.assertNotIn(finished, names)
        self.assertTrue(all(j["status"] == "running"
                            for j in self.client.list_jobs(status="running")))
        self.assertIn(finished, [j["name"] for j in self.client.list_jobs(status="succeeded")])

        self.assertEqual([j["name"] for j in self.client.list_jobs(name=running)], [running])
        page = self.client.list_jobs_page(name="listed-", per_page=1, sort="name")
        self.assertGreaterEqual(page["total"], 2)
        self.assertEqual((page["page"], page["per_page"], len(page["jobs"])), (1, 1, 1))
        # Without a page, list_jobs gathers every page.
        every = [j["name"] for j in self.client.list_jobs(name="listed-", per_page=1)]
        self.assertIn(running, every)
        self.assertIn(finished, every)

        today = time.strftime("%Y-%m-%d", time.gmtime())
        self.assertIn(running, [j["name"] for j in self.client.list_jobs(since=today, until=today)])
        self.assertNotIn(running, [j["name"] for j in self.client.list_jobs(until="2000-01-01")])
        self.client.stop_job(running)

    def test_a_deleted_job_is_gone(self):
        name = self.submit("gone", ["true"])["name"]
        self.client.wait_job(name, timeout=30, poll=0.2)
        self.assertIsNone(self.client.delete_job(name))
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.get_job(name)
        self.assertEqual(caught.exception.status, 404)

    def test_wait_job_gives_up_after_its_timeout(self):
        name = self.submit("patient", "sleep 60")["name"]
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.wait_job(name, timeout=0.5, poll=0.1)
        self.assertEqual(caught.exception.code, "timeout")
        self.assertIsNone(caught.exception.status)
        self.client.stop_job(name)


class FollowLogsTest(ClientTestCase):
    def test_follow_logs_yields_lines_as_they_are_printed_and_ends_when_the_job_ends(self):
        script = (
            "import time\n"
            "for i in range(1, 4):\n"
            "    print('line', i, flush=True)\n"
            "    time.sleep(1)\n"
        )
        name = self.submit("follow", ["python3", "-c", script])["name"]
        self.wait_until(name, "running")

        seen = []
        status_at_first_line = None
        result = {}

        def read():
            nonlocal status_at_first_line
            try:
                for line in self.client.follow_logs(name, "trainer-0"):
                    seen.append((time.monotonic(), line))
                    if status_at_first_line is None:
                        status_at_first_line = self.client.get_job(name)["status"]
                result["ended"] = True
            except BaseException as err:  # reported below, on the test's thread
                result["error"] = err

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(30)
        self.assertFalse(reader.is_alive(), f"follow_logs did not end with the job; got {seen}")
        if "error" in result:
            raise result["error"]
        self.assertEqual([line for _, line in seen], ["line 1", "line 2", "line 3"])
        # Lines arrive as printed, not all at once when the pod ends.
        self.assertEqual(status_at_first_line, "running")
        self.assertGreater(seen[-1][0] - seen[0][0], 1.5, seen)
        self.assertEqual(self.client.get_job(name)["status"], "succeeded")

    def test_a_followed_log_can_be_left_early(self):
        name = self.submit("chatty", ["python3", "-c",
                                      "import time\nwhile True:\n    print('tick', flush=True)\n"
                                      "    time.sleep(0.2)\n"])["name"]
        self.wait_until(name, "running")
        lines = self.client.follow_logs(name, "trainer-0")
        self.assertEqual(next(lines), "tick")
        lines.close()
        self.client.stop_job(name)


# A serving replica of the test's own: answers /healthz and doubles the inputs at /predict.
_ECHO_SERVER = """
import json, os
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self._send({"status": "ready"})
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._send({"outputs": {"y": [2 * v for v in body["inputs"]]}, "pid": os.getpid(),
                    "version": int(os.environ.get("PADDLECLOUD_MODEL_VERSION", "0"))})
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
"""


class ServingTest(ClientTestCase):
    def test_a_model_is_launched_called_scaled_stopped_and_deleted(self):
        folder = tempfile.mkdtemp(prefix="sdk-model-")
        with open(os.path.join(folder, "inference.json"), "w") as f:
            f.write("{}")
        self.client.register_model("echo-model", folder)
        name = job_name("echo")
        launched = self.client.launch_serving(
            name, "echo-model", replicas=2, cpu="250m", memory="128Mi",
            command=[sys.executable, "-c", _ECHO_SERVER],
        )
        self.assertEqual(launched["status"], "pending")
        self.assertEqual(launched["endpoint"], f"/serve/{ACCOUNT}/{name}")
        deadline = time.monotonic() + 30
        while self.client.get_serving(name)["status"] != "ready":
            self.assertLess(time.monotonic(), deadline, self.client.get_serving(name))
            time.sleep(0.2)
        pids = set()
        for _ in range(6):
            answer = self.client.predict(name, [1, 2.5])
            self.assertEqual(answer["outputs"]["y"], [2, 5.0])
            pids.add(answer["pid"])
        self.assertEqual(len(pids), 2, "both replicas answer, in turn")
        listed = [s for s in self.client.list_serving() if s["name"] == name]
        self.assertEqual(listed[0]["ready"], 2)

        scaled = self.client.scale_serving(name, 1)
        self.assertEqual(scaled["spec"]["replicas"], 1)
        with self.assertRaises(PaddleCloudError) as bad:
            self.client.scale_serving(name, autoscale={"min": 3, "max": 2, "cpu_percent": 50})
        self.assertEqual(bad.exception.field, "autoscale.max")
        self.assertEqual(self.client.stop_serving(name)["status"], "stopped")
        with self.assertRaises(PaddleCloudError) as gone:
            self.client.predict(name, [1])
        self.assertEqual(gone.exception.status, 503)
        self.client.delete_serving(name)
        with self.assertRaises(PaddleCloudError) as missing:
            self.client.get_serving(name)
        self.assertEqual(missing.exception.status, 404)

    def test_a_canary_and_a_shadow_are_released_promoted_and_rolled_back(self):
        folder = tempfile.mkdtemp(prefix="sdk-model-")
        with open(os.path.join(folder, "inference.json"), "w") as f:
            f.write("{}")
        model = job_name("echo-rel")
        for _ in range(3):
            self.client.register_model(model, folder)
        name = job_name("rel")
        self.client.launch_serving(
            name, model, version=1, cpu="100m", memory="128Mi",
            command=[sys.executable, "-c", _ECHO_SERVER],
        )

        def answered(version, within=30):
            deadline = time.monotonic() + within
            while True:
                try:
                    if self.client.predict(name, [1])["version"] == version:
                        return
                except PaddleCloudError as err:
                    self.assertEqual(err.status, 503, err)  # no replica ready yet
                self.assertLess(time.monotonic(), deadline, self.client.get_serving(name))
                time.sleep(0.1)

        answered(1)
        with self.assertRaises(PaddleCloudError) as bad:
            self.client.start_canary(name, 2, percent=100)
        self.assertEqual((bad.exception.status, bad.exception.field), (400, "canary.percent"))
        with self.assertRaises(PaddleCloudError) as none:
            self.client.promote_canary(name)
        self.assertEqual(none.exception.status, 409)

        tracks = self.client.start_canary(name, 2, 50)["tracks"]
        self.assertEqual([(t["track"], t["version"], t["percent"]) for t in tracks],
                         [("main", 1, 50), ("canary", 2, 50)])
        answered(2)
        versions = {self.client.predict(name, [1])["version"] for _ in range(10)}
        self.assertEqual(versions, {1, 2})

        self.client.start_shadow(name, 3, 100)
        deadline = time.monotonic() + 30
        while not any(c["shadow_status"] == 200 for c in self.client.shadow_calls(name)):
            self.assertLess(time.monotonic(), deadline)
            self.assertNotEqual(self.client.predict(name, [1])["version"], 3)
            time.sleep(0.1)
        call = next(c for c in self.client.shadow_calls(name, 5) if c["shadow_status"] == 200)
        self.assertEqual(call["version"], 3)
        self.assertFalse(call["agrees"], call)
        self.client.end_shadow(name)

        self.client.promote_canary(name)
        deadline = time.monotonic() + 60
        while self.client.get_serving(name)["version"] != 2:
            self.assertLess(time.monotonic(), deadline, self.client.get_serving(name))
            time.sleep(0.2)
        self.assertEqual({self.client.predict(name, [1])["version"] for _ in range(6)}, {2})
        self.client.start_canary(name, 3, 10)
        self.assertEqual(len(self.client.rollback_canary(name)["tracks"]), 1)
        traffic = self.client.serving_traffic(name)
        self.assertIn("versions", traffic)
        self.client.delete_serving(name)

    def test_an_unknown_model_is_refused_naming_the_field(self):
        with self.assertRaises(PaddleCloudError) as err:
            self.client.launch_serving(job_name("nomodel"), "no-such-model")
        self.assertEqual((err.exception.status, err.exception.field), (400, "model"))


class TemplateTest(ClientTestCase):
    def test_a_template_is_saved_run_with_typed_values_and_refuses_a_bad_one(self):
        name = job_name("tpl")
        saved = self.client.save_template({
            "name": name,
            "parameters": [
                {"name": "trainers", "type": "int", "min": 1, "max": 2, "default": 1},
                {"name": "word", "type": "enum", "choices": ["hi", "bye"], "default": "hi"},
            ],
            "job": {"command": ["sh", "-c", "echo {{word}}"], "num_trainers": "{{trainers}}",
                    "trainer": {"cpu": "250m", "memory": "128Mi"}},
        })
        self.assertEqual(saved["version"], 1)
        self.assertIn(name, [t["name"] for t in self.client.list_templates()])
        job = self.client.run_template(name, {"trainers": 2, "word": "bye"},
                                       job_name=job_name("tplrun"))
        self.jobs.append(job["name"])
        self.assertEqual(job["spec"]["num_trainers"], 2)
        self.assertEqual(job["spec"]["template"],
                         {"owner": ACCOUNT, "name": name, "version": 1,
                          "values": {"trainers": 2, "word": "bye"}})
        self.assertEqual(self.client.wait_job(job["name"], timeout=60, poll=0.2)["status"],
                         "succeeded")
        self.assertIn("bye", self.client.logs(job["name"], "trainer-0"))
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.run_template(name, {"trainers": 3})
        self.assertEqual((caught.exception.status, caught.exception.field),
                         (400, "values.trainers"))
        self.assertEqual(self.client.get_template(name, version=1)["version"], 1)

    def test_a_published_template_is_run_by_another_account_and_only_a_site_admin_publishes(self):
        name = job_name("shared")
        self.client.save_template({
            "name": name,
            "parameters": [{"name": "word", "type": "string", "default": "hello"}],
            "job": {"command": ["sh", "-c", "echo {{word}}"], "num_trainers": 1,
                    "trainer": {"cpu": "250m", "memory": "128Mi"}},
        })
        guest = Client(server=SERVER, key=GUEST_KEY, timeout=30)
        with self.assertRaises(PaddleCloudError) as caught:
            guest.get_template(name, owner=ACCOUNT)
        self.assertEqual(caught.exception.status, 404)
        with self.assertRaises(PaddleCloudError) as caught:
            guest.publish_template(name, owner=ACCOUNT)
        self.assertEqual(caught.exception.status, 403)

        published = self.client.publish_template(name)
        self.assertEqual((published["owner"], published["public"]), (ACCOUNT, True))
        self.assertIn((ACCOUNT, name), [(t["owner"], t["name"]) for t in guest.list_templates()])
        self.assertEqual(guest.get_template(name, owner=ACCOUNT, version=1)["owner"], ACCOUNT)
        job = guest.run_template(name, {"word": "shared"}, owner=ACCOUNT,
                                 job_name=job_name("guestrun"))
        try:
            self.assertEqual(job["spec"]["template"],
                             {"owner": ACCOUNT, "name": name, "version": 1,
                              "values": {"word": "shared"}})
            self.assertEqual(guest.wait_job(job["name"], timeout=60, poll=0.2)["status"],
                             "succeeded")
            self.assertIn("shared", guest.logs(job["name"], "trainer-0"))
        finally:
            guest.delete_job(job["name"])
        self.assertFalse(self.client.publish_template(name, False)["public"])
        self.assertNotIn(name, [t["name"] for t in guest.list_templates()])


# Runs inside the environment: tomli-w is not in the console's own Python.
IN_ENVIRONMENT = "import tomli_w; print('inside', tomli_w.__name__, flush=True)"


class PipelineTest(ClientTestCase):
    def test_a_pipeline_passes_a_parameter_and_a_metric_on_and_a_cycle_is_refused(self):
        run = job_name("flow")[:26]
        write = ("import paddlecloud\n"
                 "paddlecloud.draw_board(0.25, 'score')\n"
                 "print('drawn', flush=True)\n")
        sdk = str(REPO / "sdk" / "python")
        pipeline = {
            "name": "flow",
            "parameters": {"word": "hello"},
            "nodes": [
                {"name": "score", "job": {"command": ["python3", "-c", write], "num_trainers": 1,
                                          "env": [{"name": "PYTHONPATH", "value": sdk}],
                                          "trainer": {"cpu": "250m", "memory": "128Mi"}}},
                {"name": "say", "after": ["score"],
                 "job": {"command": ["sh", "-c", "echo {{params.word}} {{nodes.score.metrics.score}}"],
                         "num_trainers": 1, "trainer": {"cpu": "250m", "memory": "128Mi"}}},
            ],
        }
        made = self.client.run_pipeline(pipeline, name=run, values={"word": "bye"})
        self.jobs.extend([f"{run}-score", f"{run}-say"])
        self.assertEqual(made["status"], "running")
        done = self.client.wait_pipeline(run, timeout=90, poll=0.3)
        self.assertEqual(done["status"], "succeeded", done)
        self.assertIn(run, [r["name"] for r in self.client.list_pipelines()])
        self.assertEqual(self.client.logs(f"{run}-say"), "bye 0.25\n")
        pipeline["nodes"][0]["after"] = ["say"]
        with self.assertRaises(PaddleCloudError) as err:
            self.client.run_pipeline(pipeline)
        self.assertEqual(err.exception.field, "nodes")
        self.assertIn("score → say → score", str(err.exception))


class ExperimentTest(ClientTestCase):
    def test_an_experiment_searches_a_templates_parameters_and_names_its_best_trial(self):
        template = job_name("bowl")[:30]
        name = job_name("search")[:40]
        sdk = str(REPO / "sdk" / "python")
        draw = ("import paddlecloud\n"
                "for i in range(3):\n"
                "    paddlecloud.draw_board(({{x}} - 0.3) ** 2 + 1.0 / (i + 1), 'loss', step=i)\n"
                "assert paddlecloud.flush_board()\n")
        self.client.save_template({
            "name": template,
            "parameters": [{"name": "x", "type": "float", "min": 0.0, "max": 1.0,
                            "default": 0.5}],
            "job": {"command": ["python3", "-c", draw], "num_trainers": 1,
                    "env": [{"name": "PYTHONPATH", "value": sdk}],
                    "trainer": {"cpu": "250m", "memory": "128Mi"}},
        })
        spec = {
            "name": name,
            "template": template,
            "parameters": [{"name": "x", "type": "float", "min": 0.0, "max": 1.0}],
            "objective": {"metric": "loss", "direction": "minimize"},
            "algorithm": {"type": "random"},
            "max_trials": 3,
            "parallel_trials": 2,
        }
        made = self.client.create_experiment(spec)
        self.jobs.extend(f"{name}-t{n}" for n in range(1, 4))
        self.assertEqual(made["status"], "running")
        self.assertIsNone(self.client.best_trial(name))
        done = self.client.wait_experiment(name, timeout=120, poll=0.3)
        self.assertEqual(done["status"], "succeeded", done)
        trials = self.client.trials(name)
        self.assertEqual([t["status"] for t in trials], ["succeeded"] * 3)
        best = self.client.best_trial(name)
        self.assertEqual(best["objective"], min(t["objective"] for t in trials))
        self.assertAlmostEqual(best["objective"], (best["values"]["x"] - 0.3) ** 2 + 1 / 3)
        listed = [e for e in self.client.list_experiments() if e["name"] == name][0]
        self.assertEqual(listed["trials"]["succeeded"], 3)
        with self.assertRaises(PaddleCloudError) as err:
            self.client.create_experiment(dict(spec, name=name + "x",
                                               parameters=[{"name": "x", "type": "float",
                                                            "min": 0.0, "max": 2.0}]))
        self.assertEqual(err.exception.field, "parameters[0].max")
        with self.assertRaises(PaddleCloudError) as err:
            self.client.best_trial("no-such-experiment")
        self.assertEqual(err.exception.status, 404)


class EnvironmentTest(ClientTestCase):
    def test_a_job_runs_in_a_saved_environment_once_it_is_built(self):
        name = job_name("env")
        saved = self.client.save_environment({
            "name": name,
            "description": "tomli-w for the SDK's test",
            "requirements": ["tomli-w==1.0.0"],
        })
        self.assertEqual((saved["owner"], saved["name"], saved["version"]), (ACCOUNT, name, 1))
        self.assertEqual(saved["requirements"], ["tomli-w==1.0.0"])

        detail = self.client.wait_environment(name, timeout=240, poll=0.5)
        self.assertEqual(detail["build"]["state"], "ready", detail["build"])
        self.assertEqual(detail["versions"], [1])
        self.assertTrue(detail["can_edit"])
        listed = {(e["environment"]["owner"], e["environment"]["name"]): e["state"]
                  for e in self.client.list_environments()}
        self.assertEqual(listed[(ACCOUNT, name)], "ready")

        job = self.submit("inenv", ["python", "-c", IN_ENVIRONMENT], environment=name)
        self.assertTrue(job["spec"]["environment"].endswith(f"/{name}:1"), job["spec"])
        self.assertEqual(job["spec"]["environment"], f"{ACCOUNT}/{name}:1")
        self.assertEqual(job["spec"]["environment_use"]["reference"], f"{ACCOUNT}/{name}:1")
        self.assertEqual(job["spec"]["environment_use"]["requirements"], ["tomli-w==1.0.0"])
        done = self.client.wait_job(job["name"], timeout=120, poll=0.2)
        log = self.client.logs(job["name"], "trainer-0")
        self.assertEqual(done["status"], "succeeded", log)
        self.assertIn("inside tomli_w", log)

    def test_a_build_that_fails_is_raised_by_wait_environment_with_its_reason(self):
        name = job_name("envbad")
        # A real package at a version that does not exist: pip finds no match.
        self.client.save_environment({"name": name, "requirements": ["tomli-w==99.0.0"]})
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.wait_environment(name, timeout=240, poll=0.5)
        self.assertEqual(caught.exception.code, "build_failed")
        self.assertIn(f"{ACCOUNT}/{name}:1", caught.exception.message)
        build = self.client.get_environment(name)["build"]
        self.assertEqual(build["state"], "failed")
        self.assertIn("tomli-w==99.0.0", build["log"])

    def test_a_bad_requirement_is_refused_naming_it(self):
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.save_environment({"name": job_name("envopt"),
                                          "requirements": ["--index-url http://x"]})
        self.assertEqual((caught.exception.status, caught.exception.field),
                         (400, "requirements[0]"))
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.create_cloud_job(job_name("noenv"), 1, "128Mi", 0, "250m",
                                         command="true", environment="no-such-environment")
        self.assertIn(caught.exception.status, (400, 404))

    def test_the_shipped_environments_are_listed_and_readable(self):
        listed = [(e["environment"]["owner"], e["environment"]["name"])
                  for e in self.client.list_environments()]
        self.assertIn(("paddlecloud", "paddle-cpu"), listed)
        self.assertIn(("paddlecloud", "minimal"), listed)
        detail = self.client.get_environment("minimal", owner="paddlecloud")
        self.assertEqual(detail["environment"]["owner"], "paddlecloud")
        self.assertTrue(detail["environment"]["public"])
        self.assertFalse(detail["can_edit"])

    def test_only_a_site_admin_publishes_an_environment(self):
        name = job_name("envpub")
        guest = Client(server=SERVER, key=GUEST_KEY, timeout=30)
        guest.save_environment({"name": name})
        with self.assertRaises(PaddleCloudError) as caught:
            guest.publish_environment(name)
        self.assertEqual((caught.exception.status, caught.exception.code), (403, "forbidden"))
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.get_environment(name, owner=GUEST_ACCOUNT)
        self.assertEqual(caught.exception.status, 404)

        # The site admin (ACCOUNT's owner, the database's first user) may.
        published = self.client.publish_environment(name, owner=GUEST_ACCOUNT)
        self.assertEqual((published["owner"], published["public"]), (GUEST_ACCOUNT, True))
        detail = self.client.get_environment(name, owner=GUEST_ACCOUNT, version=1)
        self.assertEqual(detail["environment"]["owner"], GUEST_ACCOUNT)
        self.assertFalse(detail["can_edit"])
        self.assertIn((GUEST_ACCOUNT, name),
                      [(e["environment"]["owner"], e["environment"]["name"])
                       for e in self.client.list_environments()])


class ErrorTest(ClientTestCase):
    def test_a_spec_without_trainers_is_refused_naming_the_field(self):
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.create_cloud_job(job_name("none"), 0, "1Gi", 0, "1", command="true")
        err = caught.exception
        self.assertEqual((err.status, err.code, err.field), (400, "invalid", "num_trainers"))
        self.assertTrue(str(err).startswith("num_trainers: "), str(err))
        self.assertTrue(str(err).endswith(" (400 invalid)"), str(err))

    def test_a_bad_quantity_is_refused_naming_the_field(self):
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.create_cloud_job(job_name("fat"), 1, "4GB", 0, "1", command="true")
        self.assertEqual((caught.exception.status, caught.exception.field),
                         (400, "trainer.memory"))

    def test_a_taken_name_is_a_conflict(self):
        name = self.submit("twice", "sleep 60")["name"]
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.create_cloud_job(name, 1, "1Gi", 0, "1", command="true")
        self.assertEqual((caught.exception.status, caught.exception.code), (409, "conflict"))
        self.client.stop_job(name)

    def test_a_wrong_key_is_refused_with_401(self):
        wrong = Client(server=SERVER, key="pck_" + "0" * 64)
        for call in (wrong.me, wrong.list_jobs, lambda: wrong.get_job("anything")):
            with self.assertRaises(PaddleCloudError) as caught:
                call()
            self.assertEqual(caught.exception.status, 401)
            self.assertEqual(caught.exception.code, "unauthenticated")
            self.assertIn("create-key", caught.exception.message)

    def test_a_job_that_does_not_exist_is_404(self):
        for call in (
            lambda: self.client.get_job("no-such-job"),
            lambda: self.client.stop_job("no-such-job"),
            lambda: self.client.delete_job("no-such-job"),
            lambda: self.client.pods("no-such-job"),
            lambda: self.client.job_detail("no-such-job"),
            lambda: self.client.logs("no-such-job", "trainer-0"),
            lambda: self.client.follow_logs("no-such-job", "trainer-0"),
        ):
            with self.assertRaises(PaddleCloudError) as caught:
                call()
            self.assertEqual((caught.exception.status, caught.exception.code),
                             (404, "not_found"))

    def test_a_pod_that_does_not_exist_is_404(self):
        name = self.submit("pods", ["true"])["name"]
        self.client.wait_job(name, timeout=30, poll=0.2)
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.logs(name, "trainer-9")
        self.assertEqual(caught.exception.status, 404)

    def test_names_are_quoted_into_the_path(self):
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.get_job("../me")
        self.assertIn(caught.exception.status, (400, 404))

    def test_an_unreachable_server_is_a_connection_error(self):
        unreachable = Client(server=f"http://127.0.0.1:{_free_port()}", key=KEY, timeout=5)
        with self.assertRaises(PaddleCloudError) as caught:
            unreachable.me()
        self.assertIsNone(caught.exception.status)
        self.assertEqual(caught.exception.code, "connection")


class CredentialsTest(unittest.TestCase):
    def test_me_names_the_account_and_user_of_the_key(self):
        me = Client(credentials=CREDENTIALS).me()
        self.assertEqual(me["email"], EMAIL)
        self.assertEqual(me["account"]["name"], ACCOUNT)
        self.assertEqual(me["account"]["namespace"], "pc-sdk")
        self.assertIn("role", me)

    def test_accounts_and_members_name_the_keys_account(self):
        client = Client(credentials=CREDENTIALS)
        self.assertEqual(client.accounts(), [{"account": ACCOUNT, "role": "owner"}])
        listed = client.members()
        self.assertEqual([m["email"] for m in listed["members"]], [EMAIL])
        with self.assertRaises(PaddleCloudError) as caught:
            client.invite("not an address", "member")
        self.assertEqual((caught.exception.status, caught.exception.field), (400, "email"))

    def test_account_picks_that_accounts_credentials_file(self):
        home = os.path.join(_tmp, "home")
        os.makedirs(os.path.join(home, ".config", "paddlecloud"), exist_ok=True)
        other = os.path.join(home, ".config", "paddlecloud", f"credentials-{ACCOUNT}.json")
        with open(CREDENTIALS) as src, open(other, "w") as dst:
            dst.write(src.read())
        env = {"HOME": home}
        with mock.patch.dict(os.environ, env):
            os.environ.pop("PADDLECLOUD_CREDENTIALS", None)
            self.assertEqual(Client(account=ACCOUNT).me()["account"]["name"], ACCOUNT)
            with mock.patch.dict(os.environ, {"PADDLECLOUD_ACCOUNT": "elsewhere"}):
                with self.assertRaises(PaddleCloudError) as caught:
                    Client()
                self.assertIn("credentials-elsewhere.json", str(caught.exception))

    def test_the_credentials_file_fills_in_what_the_arguments_do_not_give(self):
        client = Client(credentials=CREDENTIALS)
        self.assertEqual((client.server, client.account, client.user), (SERVER, ACCOUNT, EMAIL))
        self.assertNotIn(KEY, repr(client))
        with mock.patch.dict(os.environ, {"PADDLECLOUD_SERVER": "http://elsewhere:1"}):
            self.assertEqual(Client(credentials=CREDENTIALS).server, "http://elsewhere:1")
        with mock.patch.dict(os.environ, {"PADDLECLOUD_CREDENTIALS": CREDENTIALS}):
            self.assertEqual(Client().me()["email"], EMAIL)

    def test_a_server_and_key_in_the_environment_need_no_credentials_file(self):
        # What a notebook's kernel has: the console's URL and the notebook's key.
        missing = os.path.join(_tmp, "nowhere.json")
        env = {"PADDLECLOUD_SERVER": SERVER, "PADDLECLOUD_KEY": KEY,
               "PADDLECLOUD_CREDENTIALS": missing}
        with mock.patch.dict(os.environ, env):
            self.assertEqual(Client().me()["email"], EMAIL)
            self.assertEqual(paddlecloud.me()["email"], EMAIL)
            # A file named by the caller still wins over the environment's key.
            self.assertEqual(Client(credentials=CREDENTIALS).me()["email"], EMAIL)
        with mock.patch.dict(os.environ, {"PADDLECLOUD_KEY": KEY, "PADDLECLOUD_CREDENTIALS": missing}):
            os.environ.pop("PADDLECLOUD_SERVER", None)
            with self.assertRaises(PaddleCloudError):
                Client()  # a key without a server is not enough

    def test_a_missing_credentials_file_says_where_to_get_one(self):
        missing = os.path.join(_tmp, "nowhere.json")
        with mock.patch.dict(os.environ, {"PADDLECLOUD_CREDENTIALS": missing}):
            with self.assertRaises(PaddleCloudError) as caught:
                Client()
        text = str(caught.exception)
        self.assertIn(missing, text)
        self.assertIn("Account page", text)
        self.assertIn("paddlecloud admin create-key", text)
        self.assertIsNone(caught.exception.status)

    def test_a_malformed_credentials_file_says_what_is_wrong(self):
        bad = os.path.join(_tmp, "bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        with self.assertRaises(PaddleCloudError) as caught:
            Client(credentials=bad)
        self.assertIn("could not be read", str(caught.exception))
        keyless = os.path.join(_tmp, "keyless.json")
        with open(keyless, "w") as f:
            json.dump({"server": SERVER}, f)
        with self.assertRaises(PaddleCloudError) as caught:
            Client(credentials=keyless)
        self.assertIn("'key'", str(caught.exception))

    def test_the_module_level_functions_use_the_credentials_named_by_the_environment(self):
        with mock.patch.dict(os.environ, {"PADDLECLOUD_CREDENTIALS": CREDENTIALS}):
            os.environ.pop("PADDLECLOUD_SERVER", None)
            self.assertEqual(paddlecloud.me()["email"], EMAIL)
            name = job_name("module")
            job = paddlecloud.create_cloud_job(
                name, 1, "128Mi", 0, 1, command=["python3", "-c", ROLE_SCRIPT],
            )
            try:
                self.assertEqual(job["spec"]["trainer"]["cpu"], "1")
                self.assertEqual(paddlecloud.wait_job(name, timeout=60, poll=0.2)["status"],
                                 "succeeded")
                self.assertIn(name, [j["name"] for j in paddlecloud.list_jobs(name=name)])
                self.assertEqual(paddlecloud.get_job(name)["name"], name)
                self.assertEqual([p["name"] for p in paddlecloud.pods(name)], ["trainer-0"])
                self.assertIn("trainer id 0", paddlecloud.logs(name))
                self.assertIn("trainer id 0", "\n".join(paddlecloud.follow_logs(name)))
                self.assertEqual(paddlecloud.stop_job(name)["status"], "succeeded")
            finally:
                paddlecloud.delete_job(name)


class ErrorTextTest(unittest.TestCase):
    def test_an_error_reads_field_message_status_and_code(self):
        err = PaddleCloudError("Must be at least 1.", status=400, code="invalid",
                               field="num_trainers")
        self.assertEqual(str(err), "num_trainers: Must be at least 1. (400 invalid)")
        self.assertEqual(str(PaddleCloudError("Job not found.", status=404, code="not_found")),
                         "Job not found. (404 not_found)")
        self.assertEqual(str(PaddleCloudError("No file.")), "No file.")


if __name__ == "__main__":
    unittest.main()


# A training loop as users write it: draw_board inside the job, no set-up.
BOARD_SCRIPT = (
    "import math, paddlecloud\n"
    "for step in range(300):\n"
    "    paddlecloud.draw_board(1.0 / (step + 1), 'train/loss')\n"
    "    if step % 10 == 0:\n"
    "        paddlecloud.draw_board(step / 300, 'eval/acc', step=step)\n"
    "paddlecloud.draw_board(float('nan'), 'train/loss')\n"
    "paddlecloud.draw_board(math.inf, 'train/loss')\n"
    "print('done', flush=True)\n"
)


class BoardTest(ClientTestCase):
    def test_draw_board_inside_a_job_reaches_paddleboard_without_set_up(self):
        sdk = str(REPO / "sdk" / "python")
        job = self.submit("board", ["python3", "-c", BOARD_SCRIPT], env={"PYTHONPATH": sdk})
        done = self.client.wait_job(job["name"], timeout=60, poll=0.2)
        self.assertEqual(done["status"], "succeeded", self.client.logs(job["name"]))

        # Queued points are sent when the program exits: nothing is lost.
        tags = {t["tag"]: t for t in self.client.metric_tags(job["name"])}
        self.assertEqual(tags["train/loss"]["points"], 302)
        self.assertEqual(tags["train/loss"]["last_step"], 301)
        self.assertEqual(tags["eval/acc"]["points"], 30)
        self.assertEqual(tags["eval/acc"]["last_step"], 290)

        series = self.client.metric_series(job["name"], "train/loss", width=1000)
        values = [p["value"] for p in series["points"]]
        self.assertEqual(values[0], 1.0)
        self.assertAlmostEqual(values[299], 1 / 300, places=6)
        self.assertTrue(math.isnan(values[300]))
        self.assertEqual(values[301], math.inf)
        self.assertEqual((series["nan"], series["pos_inf"]), (1, 1))

    def test_log_metrics_round_trips_and_a_chart_keeps_every_spike(self):
        job = self.submit("metrics", ["true"])
        name = job["name"]
        points = [{"tag": "loss", "step": s, "value": 1.0} for s in range(20_000)]
        points[12_345]["value"] = 99.0
        for start in range(0, len(points), 10_000):
            self.client.log_metrics(name, points[start:start + 10_000])
        chart = self.client.metric_series(name, "loss", width=200)
        self.assertLessEqual(len(chart["points"]), 400)
        self.assertIn(99.0, [p["value"] for p in chart["points"]])
        self.assertEqual(chart["total"], 20_000)
        zoom = self.client.metric_series(name, "loss", start=12_300, end=12_399, width=200)
        self.assertEqual(len(zoom["points"]), 100)

    def test_a_board_outside_a_job_says_which_job_it_needs(self):
        env = {k: v for k, v in os.environ.items()
               if k not in ("PADDLE_JOB_ID", "PADDLECLOUD_JOB", "PADDLECLOUD_JOB_TOKEN")}
        with mock.patch.dict(os.environ, env, clear=True):
            with self.assertRaises(PaddleCloudError) as caught:
                paddlecloud.Board(client=self.client)
        self.assertIn("PADDLECLOUD_JOB", str(caught.exception))

    def test_points_drawn_while_the_server_is_away_are_sent_when_it_answers(self):
        job = self.submit("retry", ["true"])
        # A client pointed at a port nobody listens on, then mended.
        gone = Client(server="http://127.0.0.1:9", key=KEY, timeout=2)
        board = paddlecloud.Board(job=job["name"], client=gone, flush_interval=0.1)
        for step in range(50):
            board.draw(step, "loss")
        self.assertFalse(board.flush(timeout=0.5), "nothing can be sent yet")
        board.client = self.client
        self.assertTrue(board.close(timeout=30))
        tags = self.client.metric_tags(job["name"])
        self.assertEqual(tags, [{"tag": "loss", "points": 50, "last_step": 49, "last_value": 49}])


def _venv_python():
    path = os.environ.get("PADDLECLOUD_PYTHON") or os.path.expanduser(
        "~/.cache/paddlecloud/pyvenv/bin/python")
    return path if os.path.exists(path) else None


# A training job's end: reads its dataset, writes its model, registers it.
TRAIN_AND_REGISTER = (
    "import os, paddlecloud\n"
    "data = paddlecloud.dataset_dir()\n"
    "labels = open(os.path.join(data, 'train', 'labels.txt')).read()\n"
    "os.makedirs('output/params', exist_ok=True)\n"
    "open('output/inference.pdmodel', 'w').write('model trained on ' + labels)\n"
    "open('output/params/w.bin', 'wb').write(bytes(range(256)) * 4096)\n"
    "v = paddlecloud.register_model('digits', 'output', tags='candidate')\n"
    "print('registered', v['version'], v['state'], flush=True)\n"
)


class FilesTest(ClientTestCase):
    def test_a_folder_uploaded_as_a_dataset_downloads_byte_for_byte(self):
        src = Path(tempfile.mkdtemp(dir=_tmp))
        (src / "train").mkdir()
        (src / "train" / "labels.txt").write_text("7\n2\n")
        (src / "big.bin").write_bytes(os.urandom(3_000_000))
        name = job_name("ds")
        dataset = self.client.upload_dataset(name, src, description="digits", tags=["mnist"])
        self.assertEqual((dataset["files"], dataset["bytes"]), (2, 3_000_004))
        self.assertEqual(dataset["tags"], ["mnist"])
        self.assertIn(name, [d["name"] for d in self.client.list_datasets()])
        dest = Path(tempfile.mkdtemp(dir=_tmp))
        got = self.client.download_dataset(name, dest)
        self.assertEqual(len(got), 2)
        for rel in ("train/labels.txt", "big.bin"):
            self.assertEqual((dest / rel).read_bytes(), (src / rel).read_bytes(), rel)

    def test_a_saved_dataset_version_keeps_its_files_and_a_job_reads_it_by_number(self):
        src = Path(tempfile.mkdtemp(dir=_tmp))
        (src / "labels.txt").write_text("cat")
        name = job_name("dsv")
        self.client.upload_dataset(name, src)
        v1 = self.client.save_dataset_version(name, description="first labels", tags=["clean"])
        self.assertEqual((v1["version"], v1["state"], v1["files"]), (1, "ready", 1))
        self.assertEqual((v1["description"], v1["tags"]), ("first labels", ["clean"]))
        (src / "labels.txt").write_text("dog")
        self.client.upload_dataset(name, src)
        self.assertEqual([v["version"] for v in self.client.dataset_versions(name)], [1])
        old = Path(tempfile.mkdtemp(dir=_tmp))
        self.client.download_dataset(name, old, version=1)
        self.assertEqual((old / "labels.txt").read_text(), "cat")
        now = Path(tempfile.mkdtemp(dir=_tmp))
        self.client.download_dataset(name, now)
        self.assertEqual((now / "labels.txt").read_text(), "dog")
        sdk = str(REPO / "sdk" / "python")
        read = (
            "import os, paddlecloud\n"
            f"print('read', open(os.path.join(paddlecloud.dataset_dir('{name}'), 'labels.txt')).read())\n"
        )
        job = self.submit(
            "readv1", ["python3", "-c", read], env={"PYTHONPATH": sdk}, datasets=[f"{name}:1"],
        )
        done = self.client.wait_job(job["name"], timeout=60, poll=0.2)
        log = self.client.logs(job["name"])
        self.assertEqual(done["status"], "succeeded", log)
        self.assertIn("read cat", log)
        with self.assertRaises(PaddleCloudError) as err:
            self.submit("nothing", ["true"], datasets=[f"{name}:7"])
        self.assertEqual(err.exception.field, "datasets")
        self.assertIn("version 7", str(err.exception))

    def test_a_batch_scoring_of_two_replicas_writes_a_dataset_version_and_says_how_far_it_got(self):
        import test_serving

        python, why = test_serving._paddle_python()
        if python is None:
            if os.environ.get("PADDLECLOUD_REQUIRE_PADDLE") == "1":
                self.fail(why)
            self.skipTest(why)
        test_serving.PYTHON = python
        model = test_serving._export(Path(tempfile.mkdtemp(dir=_tmp)) / "tiny")
        tiny = job_name("tiny")
        self.client.register_model(tiny, model["model_dir"])
        rows = [[1, 2, 3, 4], [0, 0, 0, 0], [2, 1, 0, -1]]
        src = Path(tempfile.mkdtemp(dir=_tmp))
        (src / "a.jsonl").write_text(json.dumps({"inputs": {"x": [rows[0]]}}) + "\n")
        (src / "b.csv").write_text("".join(",".join(map(str, r)) + "\n" for r in rows))
        inputs, outputs = job_name("rows"), job_name("scores")
        self.client.upload_dataset(inputs, src)
        self.client.save_dataset_version(inputs)
        with self.assertRaises(PaddleCloudError) as err:
            self.client.score_dataset(tiny, f"{inputs}:4", outputs)
        self.assertEqual(err.exception.field, "dataset")
        # The dataset's newest saved version, into a new dataset's version 1.
        job = self.client.score_dataset(tiny, inputs, outputs, replicas=2, memory="1Gi")
        self.jobs.append(job["name"])
        self.assertEqual(job["spec"]["num_trainers"], 2)
        done = self.client.wait_job(job["name"], timeout=600, poll=0.5)
        logs = self.client.logs(job["name"]) + self.client.logs(job["name"], "trainer-1")
        self.assertEqual(done["status"], "succeeded", logs)
        self.assertIn("all 2 file(s) scored", logs)
        progress = self.client.scoring(job["name"])
        self.assertEqual(
            (progress["inputs"], progress["scored"], progress["output_state"], progress["version"]),
            (2, 2, "ready", 1), progress,
        )
        with self.assertRaises(PaddleCloudError) as err:
            self.client.retry_scoring(job["name"])
        self.assertEqual(err.exception.status, 409)
        version = self.client.dataset_versions(outputs)[0]
        self.assertEqual((version["state"], version["files"], version["job"]), ("ready", 2, job["name"]))
        dest = Path(tempfile.mkdtemp(dir=_tmp))
        self.client.download_dataset(outputs, dest, version=version["version"])
        name = test_serving.output_name(model)
        b = [json.loads(x)["outputs"][name] for x in (dest / "b.csv.predictions.jsonl").read_text().splitlines()]
        self.assertEqual(b, test_serving.expected_rows(rows))
        a = json.loads((dest / "a.jsonl.predictions.jsonl").read_text())
        self.assertEqual(a["outputs"][name], test_serving.expected_rows(rows[:1]))

    def test_a_job_reads_its_dataset_and_registers_its_output_as_a_model_version(self):
        src = Path(tempfile.mkdtemp(dir=_tmp))
        (src / "train").mkdir()
        (src / "train" / "labels.txt").write_text("7 2 1")
        dataset = job_name("mnist")
        self.client.upload_dataset(dataset, src)
        sdk = str(REPO / "sdk" / "python")
        job = self.submit(
            "train", ["python3", "-c", TRAIN_AND_REGISTER],
            env={"PYTHONPATH": sdk}, datasets=[dataset],
        )
        done = self.client.wait_job(job["name"], timeout=60, poll=0.2)
        log = self.client.logs(job["name"])
        self.assertEqual(done["status"], "succeeded", log)
        self.assertIn("registered 1 ready", log)
        trained_by = job["name"]
        versions = self.client.model_versions("digits")
        self.assertEqual(versions[0]["job"], job["name"])
        self.assertEqual(versions[0]["tags"], ["candidate"])
        dest = Path(tempfile.mkdtemp(dir=_tmp))
        self.client.download_model("digits", dest)
        self.assertEqual((dest / "inference.pdmodel").read_text(), "model trained on 7 2 1")
        self.assertEqual((dest / "params" / "w.bin").read_bytes(), bytes(range(256)) * 4096)
        # The next job reads that version by name: pinned, at model_dir().
        read = (
            "import os, paddlecloud\n"
            "print(open(os.path.join(paddlecloud.model_dir('digits'), 'inference.pdmodel')).read())\n"
        )
        job = self.submit(
            "evaluate", ["python3", "-c", read], env={"PYTHONPATH": sdk}, models=["digits"],
        )
        owner = self.client.me()["account"]["name"]
        self.assertEqual(job["spec"]["models"], [f"{owner}/digits:{versions[0]['version']}"])
        done = self.client.wait_job(job["name"], timeout=60, poll=0.2)
        log = self.client.logs(job["name"])
        self.assertEqual(done["status"], "succeeded", log)
        self.assertIn("model trained on 7 2 1", log)
        with self.assertRaises(PaddleCloudError) as err:
            self.submit("nothing", ["true"], models=["no-such-model"])
        self.assertEqual(err.exception.field, "models")
        # The version's lineage: the dataset read by the job that registered
        # it, and the job that read it.
        version = f"model:{owner}/digits:{versions[0]['version']}"
        graph = self.client.lineage(version)
        edges = {(e["from"], e["relation"], e["to"]) for e in graph["edges"]}
        self.assertLessEqual({
            (f"dataset:{owner}/{dataset}", "read", f"job:{owner}/{trained_by}"),
            (f"job:{owner}/{trained_by}", "registered", version),
            (version, "read", f"job:{owner}/{job['name']}"),
        }, edges)
        with self.assertRaises(PaddleCloudError) as bad:
            self.client.lineage("model:digits")
        self.assertEqual((bad.exception.status, bad.exception.field), (400, "node"))

    def test_a_job_token_cannot_delete_a_dataset(self):
        name = job_name("keep")
        src = Path(tempfile.mkdtemp(dir=_tmp)) / "a.txt"
        src.write_text("keep me")
        self.client.upload_dataset(name, src)
        script = (
            "import os, sys, paddlecloud\n"
            "c = paddlecloud.default_client()\n"
            "try:\n"
            f"    c._json('DELETE', '/datasets/' + c.me()['account']['name'] + '/{name}')\n"
            "except paddlecloud.PaddleCloudError as e:\n"
            "    print('refused', e.status, flush=True)\n"
        )
        sdk = str(REPO / "sdk" / "python")
        job = self.submit("deleter", ["python3", "-c", script], env={"PYTHONPATH": sdk})
        self.client.wait_job(job["name"], timeout=60, poll=0.2)
        self.assertIn("refused 403", self.client.logs(job["name"]))
        self.assertIn(name, [d["name"] for d in self.client.list_datasets()])

    def test_parallel_runs_registering_a_new_model_all_get_a_version(self):
        # Each run finds the model missing and makes it; all but one of the
        # makers are told it exists, which must not fail the run (a CI run of the
        # 50-run endings test lost 3 versions to that).
        name = job_name("par")
        weights = Path(tempfile.mkdtemp(dir=_tmp)) / "w.bin"
        weights.write_bytes(b"w")
        runs = 12
        start = threading.Barrier(runs)
        got, errors = [], []

        def register():
            client = Client(server=SERVER, key=KEY, timeout=30)
            start.wait()
            try:
                got.append(client.register_model(name, weights)["version"])
            except PaddleCloudError as err:
                errors.append(str(err))

        threads = [threading.Thread(target=register) for _ in range(runs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(sorted(got), list(range(1, runs + 1)))

    def test_an_alias_is_set_moved_and_deleted_with_its_history(self):
        name = job_name("ali")
        weights = Path(tempfile.mkdtemp(dir=_tmp)) / "w.bin"
        weights.write_bytes(b"w")
        for _ in range(2):
            self.client.register_model(name, weights)
        set_ = self.client.set_alias(name, "production", 1)
        self.assertEqual((set_["alias"], set_["version"], set_["protected"]),
                         ("production", 1, False))
        moved = self.client.set_alias(name, "production", 2, protected=True)
        self.assertEqual((moved["version"], moved["protected"]), (2, True))
        self.assertEqual([(a["alias"], a["version"]) for a in self.client.aliases(name)],
                         [("production", 2)])
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.set_alias(name, "production", 9)
        self.assertEqual((caught.exception.status, caught.exception.field), (400, "version"))
        self.client.delete_alias(name, "production")
        self.assertEqual(self.client.aliases(name), [])
        history = self.client.alias_history(name)
        self.assertEqual([(h["from"], h["to"]) for h in history], [(2, None), (1, 2), (None, 1)])

    def test_a_missing_path_and_a_bad_name_are_refused_with_a_reason(self):
        with self.assertRaises(PaddleCloudError) as err:
            self.client.upload_dataset("fine", "/nonexistent/folder")
        self.assertIn("/nonexistent/folder", str(err.exception))
        f = Path(tempfile.mkdtemp(dir=_tmp)) / "x.txt"
        f.write_text("x")
        with self.assertRaises(PaddleCloudError) as err:
            self.client.upload_dataset("Bad Name", f)
        self.assertEqual((err.exception.status, err.exception.field), (400, "name"))


class MlflowClientTest(ClientTestCase):
    """The real `mlflow` client (mlflow-skinny, in the test venv) logging to the
    console's MLflow tracking API, unchanged but for the tracking URI and token."""

    def test_the_real_mlflow_client_logs_runs_that_appear_as_jobs_with_their_metrics(self):
        python = _venv_python()
        if python is None:
            if os.environ.get("PADDLECLOUD_REQUIRE_PYTHON_WRITERS"):
                self.fail("no ~/.cache/paddlecloud/pyvenv with mlflow-skinny (run scripts/setup.sh test)")
            self.skipTest("no ~/.cache/paddlecloud/pyvenv with mlflow-skinny")
        env = dict(os.environ, PADDLECLOUD_URL=SERVER, PADDLECLOUD_TOKEN=KEY,
                   MLFLOW_TEST_BIG_HISTORY="26000")
        done = subprocess.run(
            [python, "-m", "unittest", "-v", "mlflow_compat"],
            cwd=Path(__file__).parent, env=env, capture_output=True, text=True, timeout=600,
        )
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("OK", done.stderr)
        self.assertNotIn("skipped", done.stderr.splitlines()[-1])

        # The run is a job in the table, finished, with its metrics on PaddleBoard.
        runs = [j for j in self.client.list_jobs() if j.get("source") == "mlflow"]
        self.assertTrue(runs, "an MLflow run shows up as a job")
        run = next(j for j in runs if j["name"].startswith("run-"))
        self.assertEqual(run["status"], "succeeded")
        self.assertEqual(run["cluster"], "local")
        tags = {t["tag"]: t for t in self.client.metric_tags(run["name"])}
        self.assertEqual(tags["big"]["points"], 26000)
        loss = self.client.metric_series(run["name"], "loss")
        self.assertEqual(loss["total"], 13)
        self.assertEqual((loss["nan"], loss["pos_inf"], loss["neg_inf"]), (1, 1, 1))
