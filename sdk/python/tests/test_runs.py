"""Local runs (`paddlecloud.run()`, `paddlecloud.init()`) against the real server:
scripts run as real processes and end every way a program ends; one is killed
and becomes lost; one loses the console half-way (a TCP proxy that goes down)
and its spool is replayed with exact counts.

The server is started as in test_sdk.py, with a 3 s lost window; the scripts
beat every 0.5 s.
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
import uuid
from pathlib import Path

import test_sdk as base
from test_sdk import REPO

import paddlecloud  # noqa: E402  (test_sdk put the SDK on sys.path)
from paddlecloud import Client, PaddleCloudError


def setUpModule():
    base.setUpModule(extra_args=("--local-run-lost-secs", "3"))


def tearDownModule():
    base.tearDownModule()


class Proxy:
    """A TCP forwarder to the console that can go down (connections refused)
    and come back on the same port: the console unreachable, as a laptop
    offline sees it."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.port = base._free_port()
        self.listener = None
        self.up()

    def up(self) -> None:
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", self.port))
        self.listener.listen(64)
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def down(self) -> None:
        self.listener.close()

    def _accept(self, listener) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src, dst) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class LocalRunTest(unittest.TestCase):
    def setUp(self):
        self.client = Client(server=base.SERVER, key=base.KEY, timeout=30)
        self.tmp = tempfile.mkdtemp(prefix="paddlecloud-runs-")
        self.spool = os.path.join(self.tmp, "spool")

    def script(self, body: str, server: str = "") -> subprocess.Popen:
        path = os.path.join(self.tmp, f"s-{uuid.uuid4().hex[:6]}.py")
        Path(path).write_text(
            "import sys\n"
            f"sys.path.insert(0, {str(REPO / 'sdk' / 'python')!r})\n"
            "import paddlecloud\n" + textwrap.dedent(body)
        )
        env = dict(os.environ, PADDLECLOUD_SERVER=server or base.SERVER,
                   PADDLECLOUD_KEY=base.KEY, PADDLECLOUD_SPOOL=self.spool,
                   PADDLECLOUD_HEARTBEAT_SECS="0.5")
        env.pop("PADDLECLOUD_CREDENTIALS", None)
        return subprocess.Popen([sys.executable, path], cwd=self.tmp, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finished(self, proc: subprocess.Popen, timeout: float = 60):
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err

    def wait_for(self, what, check, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                self.fail(f"{what}: not within {timeout} s")
            time.sleep(0.2)

    def job(self, name):
        return self.client.get_job(name)

    def test_each_way_a_program_ends_sets_the_runs_status(self):
        tag = uuid.uuid4().hex[:6]
        cases = {
            "ok": ("with paddlecloud.run(name=NAME, params={'lr': 0.1}) as run:\n"
                   "    print('hello from the run')\n"
                   "    import os, subprocess\n"
                   "    sys.stdout.flush()\n"
                   "    subprocess.run(['sh', '-c', 'echo from a child >&2'])\n"
                   "    for i in range(5):\n"
                   "        paddlecloud.draw_board(1.0 / (i + 1), 'loss')\n"
                   "    open('weights.bin', 'wb').write(b'w' * 100)\n"
                   "    made = run.log_artifact('weights.bin', model=NAME)\n"
                   "    assert made['version'] == 1, made\n",
                   "succeeded", 0),
            "boom": ("with paddlecloud.run(name=NAME):\n"
                     "    raise ValueError('bad lr')\n", "failed", 1),
            "exit1": ("with paddlecloud.run(name=NAME):\n"
                      "    sys.exit(1)\n", "failed", 1),
            "exit0": ("with paddlecloud.run(name=NAME):\n"
                      "    sys.exit(0)\n", "succeeded", 0),
            "ctrlc": ("with paddlecloud.run(name=NAME):\n"
                      "    raise KeyboardInterrupt\n", "stopped", -signal.SIGINT),
            "init3": ("paddlecloud.init(name=NAME)\n"
                      "print('via init')\n"
                      "sys.exit(3)\n", "failed", 3),
            "initok": ("paddlecloud.init(name=NAME)\n"
                       "print('via init')\n", "succeeded", 0),
        }
        procs = {}
        for case, (body, _, _) in cases.items():
            procs[case] = self.script(f"NAME = '{case}-{tag}'\n" + body)
        for case, (_, status, code) in cases.items():
            rc, out, err = self.finished(procs[case])
            self.assertEqual(rc, code, f"{case}: {out}\n{err}")
            job = self.job(f"{case}-{tag}")
            self.assertEqual(job["status"], status, f"{case}: {job}\n{err}")
            self.assertEqual(job["source"], "local")
        log = self.client.logs(f"ok-{tag}", "trainer-0")
        # Descriptors 1 and 2 are two pipes read by two threads: a line on
        # each, written close together, may reach the log in either order.
        lines = log.splitlines()
        self.assertCountEqual(lines[:2], ["hello from the run", "from a child"], log)
        self.assertEqual(
            lines[2:], [f"[paddlecloud] weights.bin saved as model ok-{tag} version 1"], log
        )
        # The artifact is a model version recording the run as its source.
        versions = self.client.model_versions(f"ok-{tag}")
        self.assertEqual([(v["version"], v["job"]) for v in versions], [(1, f"ok-{tag}")])
        tags = self.client.metric_tags(f"ok-{tag}")
        self.assertEqual([(t["tag"], t["points"]) for t in tags], [("loss", 5)])
        run = self.client._json("GET", f"/local-runs/ok-{tag}")
        self.assertEqual(run["params"], {"lr": 0.1})
        self.assertEqual(run["facts"]["client"], "python")
        self.assertEqual(run["facts"]["host"], socket.gethostname())
        self.assertEqual(run["facts"]["command"][0], sys.executable)
        self.assertTrue(run["facts"]["command"][1].endswith(".py"), run["facts"])
        boom = self.job(f"boom-{tag}")
        self.assertEqual(boom["message"], "ValueError: bad lr")
        self.assertIn("Traceback", self.client.logs(f"boom-{tag}", "trainer-0"))
        self.assertEqual(self.job(f"init3-{tag}")["message"], "sys.exit(3)")
        self.assertEqual(self.client.logs(f"init3-{tag}", "trainer-0"), "via init\n")
        # Everything was delivered: nothing is left spooled.
        self.assertEqual(os.listdir(self.spool), [])

    def sleeper(self, prefix: str, says: str):
        """A run that prints ``says`` and sleeps for a minute; its name and process."""
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        proc = self.script(
            f"with paddlecloud.run(name={name!r}):\n"
            f"    print({says!r}, flush=True)\n"
            "    import time\n"
            "    time.sleep(60)\n"
        )
        return name, proc

    def test_sigterm_stops_a_run_and_its_output_arrives_while_it_runs(self):
        name, proc = self.sleeper("term", "waiting for a signal")
        # Live: the line is in the console while the run still runs.
        self.wait_for("the first line", lambda: "waiting for a signal" in self._log(name))
        self.assertEqual(self.job(name)["status"], "running")
        proc.send_signal(signal.SIGTERM)
        rc, out, err = self.finished(proc)
        self.assertNotEqual(rc, 0, err)
        job = self.job(name)
        self.assertEqual(job["status"], "stopped", f"{job}\n{err}")
        self.assertEqual(job["message"], "Terminated (SIGTERM).")

    def test_stop_on_the_console_interrupts_the_program_at_its_next_heartbeat(self):
        name, proc = self.sleeper("asked", "working")
        self.wait_for("the run to start", lambda: "working" in self._log(name))
        self.client.stop_job(name)
        rc, out, err = self.finished(proc)
        self.assertNotEqual(rc, 0, err)
        job = self.job(name)
        self.assertEqual((job["status"], job["message"]), ("stopped", "Stopped from the console."), err)

    def _log(self, name):
        try:
            return self.client.logs(name, "trainer-0")
        except PaddleCloudError:
            return ""

    def test_a_killed_process_becomes_lost_after_the_heartbeat_window(self):
        name, proc = self.sleeper("gone", "alive")
        self.wait_for("the run to start", lambda: "alive" in self._log(name))
        # Beating: still running after more than the window.
        time.sleep(4)
        self.assertEqual(self.job(name)["status"], "running")
        proc.kill()
        proc.wait()
        job = self.wait_for("lost", lambda: (j := self.job(name))["status"] == "lost" and j, 15)
        self.assertIn("No heartbeat since", job["message"])

    def test_the_spool_replays_after_the_console_was_down_with_nothing_lost_or_doubled(self):
        proxy = Proxy(int(base.SERVER.rsplit(":", 1)[1]))
        name = f"offline-{uuid.uuid4().hex[:6]}"
        gate = os.path.join(self.tmp, "console-down")
        flushed = os.path.join(self.tmp, "flushed")
        proc = self.script(
            f"import os, time\n"
            f"with paddlecloud.run(name={name!r}) as run:\n"
            "    for i in range(50):\n"
            "        paddlecloud.draw_board(i, 'acc')\n"
            "    print('online part', flush=True)\n"
            "    assert run.flush(30)\n"
            f"    open({flushed!r}, 'w').close()\n"
            f"    while not os.path.exists({gate!r}):\n"
            "        time.sleep(0.05)\n"
            "    for i in range(50, 120):\n"
            "        paddlecloud.draw_board(i, 'acc')\n"
            "    for i in range(10):\n"
            "        print(f'offline line {i}')\n",
            server=f"http://127.0.0.1:{proxy.port}",
        )
        self.assertEqual(proc.stdout.readline().strip(), "online part")
        self.wait_for("the first half sent", lambda: os.path.exists(flushed))
        proxy.down()
        Path(gate).touch()
        rc, out, err = self.finished(proc)
        self.assertEqual(rc, 0, err)
        self.assertIn("could not be reached", err)
        self.assertEqual([t["points"] for t in self.client.metric_tags(name)], [50])
        self.assertIn(self.job(name)["status"], ("running", "lost"))

        proxy.up()
        old = os.environ.get("PADDLECLOUD_SPOOL")
        os.environ["PADDLECLOUD_SPOOL"] = self.spool
        try:
            waiting = paddlecloud.sync(30, client=Client(server=f"http://127.0.0.1:{proxy.port}",
                                                         key=base.KEY))
            # Again: nothing left, nothing sent twice.
            self.assertEqual(paddlecloud.sync(5, client=self.client), 0)
        finally:
            if old is None:
                os.environ.pop("PADDLECLOUD_SPOOL")
            else:
                os.environ["PADDLECLOUD_SPOOL"] = old
        self.assertEqual(waiting, 0)
        self.assertEqual([(t["tag"], t["points"], t["last_step"]) for t in self.client.metric_tags(name)],
                         [("acc", 120, 119)])
        log = self.client.logs(name, "trainer-0")
        self.assertEqual(log, "online part\n" + "".join(f"offline line {i}\n" for i in range(10)))
        self.assertEqual(self.job(name)["status"], "succeeded")
        self.assertEqual(os.listdir(self.spool), [])

    def test_importing_the_sdk_starts_nothing(self):
        probe = subprocess.run(
            [sys.executable, "-c",
             f"import sys; sys.path.insert(0, {str(REPO / 'sdk' / 'python')!r}); "
             "import threading, os, paddlecloud, paddlecloud.runs; "
             "print(threading.active_count(), os.path.exists(os.environ['PADDLECLOUD_SPOOL']))"],
            env=dict(os.environ, PADDLECLOUD_SPOOL=self.spool), capture_output=True, text=True,
        )
        self.assertEqual(probe.stdout.split(), ["1", "False"], probe.stderr)


class SpoolClaimTest(unittest.TestCase):
    """The race a sync runs into when another run ends between the spool
    folder's listing and the claim: what it lists is gone when it claims."""

    def test_a_sync_claiming_a_spool_its_run_already_removed_leaves_nothing_behind(self):
        from paddlecloud.runs import _Spool

        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "run.jsonl")
            owner = _Spool(path)
            self.assertTrue(owner.claim())
            owner.append({"kind": "start", "body": {}})
            listed = _Spool(path)  # a sync listed the folder here
            self.assertFalse(listed.claim(existing=True), "the run still holds it")
            owner.acknowledge(0, "run")
            owner.remove()  # the run delivered everything and ended
            self.assertFalse(listed.claim(existing=True))
            self.assertEqual(os.listdir(folder), [])

    def test_a_sync_claiming_a_released_spool_reads_what_was_sent_after_it_listed(self):
        from paddlecloud.runs import _Spool

        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "run.jsonl")
            owner = _Spool(path)
            owner.claim()
            for i in range(3):
                owner.append({"kind": "log", "body": {"i": i}})
            listed = _Spool(path)
            owner.acknowledge(1, "run")  # two of three reached the console
            owner.release()
            self.assertTrue(listed.claim(existing=True))
            self.assertEqual([r["seq"] for r in listed.pending()], [2])
            self.assertFalse(listed.done())


if __name__ == "__main__":
    unittest.main()
