"""Local runs end right, however and whenever they end, under load.

The example in docs/local-runs.md (prints, PaddleBoard points, ``log_params`` just before
the end, ``log_artifact``) runs 50 times, 8 at a time on the test machine's
cores; then 50 more get a SIGTERM at a random moment (before the run starts,
while it runs, while it ends). Each run is checked as its user would: the job's
status and message, its log byte for byte against what the program printed,
its points and parameters, no "could not be reached" from a console that was
up, and nothing left spooled. The same for ``paddlecloud run`` (the CLI wrapper,
its own code in Rust). And "Stop" on the console reaches programs that started
with SIGINT ignored, as every job a script starts in the background does, while
the machine is busy.

The random moments come from one seed, printed, so a failure can be replayed:
``PADDLECLOUD_ENDINGS_SEED=<seed> python -m unittest test_run_endings``.
"""

import concurrent.futures
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import uuid
from pathlib import Path

import test_sdk as base
from test_sdk import REPO

from paddlecloud import Client, PaddleCloudError

RUNS = 50
AT_ONCE = 8
STEPS = 100
PRINT_EVERY = 10


def setUpModule():
    base.setUpModule(extra_args=("--local-run-lost-secs", "3"))


def tearDownModule():
    base.tearDownModule()


def expected_output() -> str:
    """What the example prints when it runs to its end."""
    lines = [f"step {s} loss {1.0 / (s + 1):.4f}" for s in range(0, STEPS, PRINT_EVERY)]
    return "".join(f"{line}\n" for line in lines) + "READY True\ntraining done\n"


# The example in docs/local-runs.md, with prints: some flushed as they go, the last ones
# left in Python's buffer for the end to flush; `log_params` just before the
# end of the block (where two reports once went out with the same offset).
EXAMPLE = """
import sys, time
sys.path.insert(0, {sdk!r})
import paddlecloud

with paddlecloud.run(name={name!r}, params={{"lr": 0.1}}) as run:
    for step in range({steps}):
        paddlecloud.draw_board(1.0 / (step + 1), "train/loss")
        if step % {every} == 0:
            print(f"step {{step}} loss {{1.0 / (step + 1):.4f}}", flush=True)
            time.sleep({pause})
    print("READY True")
    with open("weights-{name}.bin", "wb") as f:
        f.write(b"w" * 64)
    {artifact}
    run.log_params({{"epochs": {steps}}})
    print("training done")
"""


class Endings(unittest.TestCase):
    def setUp(self):
        self.client = Client(server=base.SERVER, key=base.KEY, timeout=60)
        self.tmp = tempfile.mkdtemp(prefix="paddlecloud-endings-")
        self.spool = os.path.join(self.tmp, "spool")
        self.seed = int(os.environ.get("PADDLECLOUD_ENDINGS_SEED") or time.time_ns() % 1_000_000)
        self.random = random.Random(self.seed)

    def env(self) -> dict:
        # The SDK reads the server and key; the CLI a credentials file.
        return dict(os.environ, PADDLECLOUD_SERVER=base.SERVER, PADDLECLOUD_KEY=base.KEY,
                    PADDLECLOUD_CREDENTIALS=base.CREDENTIALS, PADDLECLOUD_SPOOL=self.spool,
                    PADDLECLOUD_HEARTBEAT_SECS="0.5")

    def example(self, name: str, *, pause: float, artifact: str = "") -> list:
        path = os.path.join(self.tmp, f"{name}.py")
        code = EXAMPLE.format(sdk=str(REPO / "sdk" / "python"), name=name, steps=STEPS,
                              every=PRINT_EVERY, pause=pause,
                              artifact=artifact or "pass")
        Path(path).write_text(textwrap.dedent(code))
        return [sys.executable, path]

    def start(self, argv: list, ignore_sigint: bool = False) -> subprocess.Popen:
        def child():
            if ignore_sigint:
                signal.signal(signal.SIGINT, signal.SIG_IGN)

        return subprocess.Popen(argv, cwd=self.tmp, env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, preexec_fn=child)

    def job(self, name):
        try:
            return self.client.get_job(name)
        except PaddleCloudError as err:
            if err.status == 404:
                return None
            raise

    def log(self, name) -> str:
        try:
            return self.client.logs(name, "trainer-0")
        except PaddleCloudError:
            return ""

    def many(self, work, count: int):
        with concurrent.futures.ThreadPoolExecutor(AT_ONCE) as pool:
            return list(pool.map(work, range(count)))

    def assert_nothing_spooled(self):
        left = os.listdir(self.spool) if os.path.isdir(self.spool) else []
        self.assertEqual(left, [], "reports left in the spool")

    # ------------------------------------------------------------------ SDK

    def test_the_readme_example_run_50_times_ends_succeeded_with_its_whole_log(self):
        tag = uuid.uuid4().hex[:6]
        model = f"fit-{tag}"

        def one(i):
            name = f"ex{i}-{tag}"
            proc = self.start(self.example(
                name, pause=0.01,
                artifact=f"run.log_artifact('weights-{name}.bin', model={model!r})"))
            out, err = proc.communicate(timeout=120)
            return name, proc.returncode, out.decode(), err.decode()

        full = expected_output()
        for name, rc, out, err in self.many(one, RUNS):
            with self.subTest(run=name):
                self.assertEqual(rc, 0, err)
                self.assertNotIn("could not be reached", err)
                self.assertEqual(out, full)
                job = self.job(name)
                self.assertEqual(job["status"], "succeeded", f"{job}\n{err}")
                # The whole output, each byte once, with the artifact's line
                # where the program made it.
                saved = f"[paddlecloud] weights-{name}.bin saved as model {model} version "
                log = self.log(name)
                head, _, tail = log.partition(saved)
                self.assertEqual(head + tail.split("\n", 1)[-1], full, log)
                tags = self.client.metric_tags(name)
                self.assertEqual([(t["tag"], t["points"]) for t in tags], [("train/loss", STEPS)])
                run = self.client._json("GET", f"/local-runs/{name}")
                self.assertEqual(run["params"], {"lr": 0.1, "epochs": STEPS})
        # 50 artifacts at once: 50 versions, each made by its own run.
        versions = self.client.model_versions(model)
        self.assertEqual(sorted(v["version"] for v in versions), list(range(1, RUNS + 1)))
        self.assertEqual(sorted(v["job"] for v in versions),
                         sorted(f"ex{i}-{tag}" for i in range(RUNS)))
        self.assert_nothing_spooled()

    def test_a_sigterm_at_any_moment_leaves_each_run_with_its_true_end(self):
        tag = uuid.uuid4().hex[:6]
        print(f"\nSIGTERM moments: seed {self.seed}", file=sys.stderr)
        delays = [self.random.uniform(0.0, 1.6) for _ in range(RUNS)]

        def one(i):
            name = f"term{i}-{tag}"
            proc = self.start(self.example(name, pause=0.08))
            time.sleep(delays[i])
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=120)
            return name, proc.returncode, out.decode(), err.decode()

        outcomes = self.check_terminated(self.many(one, RUNS), expected_output())
        print(f"SIGTERM outcomes: {outcomes}", file=sys.stderr)
        self.assertGreater(outcomes["stopped"], 0, "no SIGTERM came while a run ran")
        self.assert_nothing_spooled()

    def check_terminated(self, results, full: str, stopped_message="Terminated (SIGTERM)."):
        """Each run has the end that is true of it; counts them."""
        outcomes = {"never started": 0, "stopped": 0, "succeeded": 0}
        for name, rc, out, err in results:
            with self.subTest(run=name, rc=rc):
                self.assertNotIn("could not be reached", err)
                self.assertTrue(full.startswith(out), f"printed {out!r}")
                job = self.job(name)
                if job is None:
                    # Killed before the run began: nothing printed, nothing sent.
                    self.assertEqual(rc, -signal.SIGTERM, err)
                    self.assertEqual(out, "")
                    outcomes["never started"] += 1
                    continue
                status = job["status"]
                self.assertIn(status, ("stopped", "succeeded"), f"{job}\n{err}")
                outcomes[status] += 1
                # The log is exactly what the program printed, however far it got.
                self.assertEqual(self.log(name), out, f"{job}\n{err}")
                if status == "stopped":
                    self.assertEqual(job["message"], stopped_message)
                    self.assertNotEqual(rc, 0)
                else:
                    # Ended before the signal; a signal while it ended waited
                    # for the end to be sent, then took effect.
                    self.assertIn(rc, (0, -signal.SIGTERM), err)
                    self.assertEqual(out, full)
        return outcomes

    def test_stop_on_the_console_reaches_busy_runs_that_ignore_sigint(self):
        burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                   for _ in range(2 * (os.cpu_count() or 2))]
        try:
            self.stop_from_the_console()
        finally:
            for b in burners:
                b.kill()
                b.wait()

    def stop_from_the_console(self):
        tag = uuid.uuid4().hex[:6]
        sleeper = ("import sys\n"
                   f"sys.path.insert(0, {str(REPO / 'sdk' / 'python')!r})\n"
                   "import time, paddlecloud\n"
                   "with paddlecloud.run(name=sys.argv[1]):\n"
                   "    print('working', flush=True)\n"
                   "    time.sleep(120)\n")
        path = os.path.join(self.tmp, "sleeper.py")
        Path(path).write_text(sleeper)
        runs = {}
        for i in range(6):
            name = f"asked{i}-{tag}"
            # As a job started in the background of a script: SIGINT ignored.
            runs[name] = self.start([sys.executable, path, name], ignore_sigint=i % 2 == 0)
        deadline = time.monotonic() + 60
        for name in runs:
            while "working" not in self.log(name):
                self.assertLess(time.monotonic(), deadline, f"{name} did not start")
                time.sleep(0.2)
        # A real SIGINT to a program that ignores it is still ignored.
        ignoring = next(iter(runs))
        runs[ignoring].send_signal(signal.SIGINT)
        time.sleep(1.5)
        self.assertIsNone(runs[ignoring].poll(), "an ignored SIGINT ended the program")
        for name in runs:
            self.client.stop_job(name)
        for name, proc in runs.items():
            with self.subTest(run=name):
                try:
                    out, err = proc.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    self.fail(f"{name}: the console's Stop did not interrupt it")
                self.assertNotEqual(proc.returncode, 0, err)
                job = self.job(name)
                self.assertEqual((job["status"], job["message"]),
                                 ("stopped", "Stopped from the console."), err)
        self.assert_nothing_spooled()

    # ------------------------------------------------------------------ CLI

    def cli(self, name: str, pause: float) -> list:
        lines = [f"step {s} loss {1.0 / (s + 1):.4f}" for s in range(0, STEPS, PRINT_EVERY)]
        script = "".join(f"echo '{line}'; sleep {pause}; " for line in lines)
        script += "echo 'READY True'; echo 'training done'"
        return [str(Path(base._binary()).resolve()), "run", "--name", name, "--param", "lr=0.1", "--",
                "sh", "-c", script]

    def test_the_cli_wrapper_ends_each_run_right_run_plainly_or_sigtermed(self):
        tag = uuid.uuid4().hex[:6]
        full = expected_output()

        def plain(i):
            name = f"cli{i}-{tag}"
            proc = self.start(self.cli(name, 0.005))
            out, err = proc.communicate(timeout=120)
            return name, proc.returncode, out.decode(), err.decode()

        for name, rc, out, err in self.many(plain, RUNS):
            with self.subTest(run=name):
                self.assertEqual(rc, 0, err)
                self.assertEqual(out, full)
                self.assertEqual(self.job(name)["status"], "succeeded", err)
                self.assertEqual(self.log(name), full)

        print(f"\nCLI SIGTERM moments: seed {self.seed}", file=sys.stderr)
        delays = [self.random.uniform(0.0, 1.2) for _ in range(RUNS)]

        def termed(i):
            name = f"clit{i}-{tag}"
            proc = self.start(self.cli(name, 0.08))
            time.sleep(delays[i])
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=120)
            return name, proc.returncode, out.decode(), err.decode()

        outcomes = {"never started": 0, "stopped": 0, "succeeded": 0}
        for name, rc, out, err in self.many(termed, RUNS):
            with self.subTest(run=name, rc=rc):
                self.assertTrue(full.startswith(out), f"printed {out!r}")
                job = self.job(name)
                if job is None:
                    self.assertEqual(out, "")
                    outcomes["never started"] += 1
                    continue
                self.assertIn(job["status"], ("stopped", "succeeded"), f"{job}\n{err}")
                outcomes[job["status"]] += 1
                self.assertEqual(self.log(name), out, f"{job}\n{err}")
                if job["status"] == "succeeded":
                    self.assertEqual(out, full)
                else:
                    self.assertNotEqual(rc, 0)
        print(f"CLI SIGTERM outcomes: {outcomes}", file=sys.stderr)
        self.assertGreater(outcomes["stopped"], 0, "no SIGTERM came while a run ran")
        self.assert_nothing_spooled()


if __name__ == "__main__":
    unittest.main()
