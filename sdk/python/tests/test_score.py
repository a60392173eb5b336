"""The batch scorer (paddlecloud/score.py) with the tiny exported model: shards, the
answers line by line for JSON lines and CSV rows, a bad request answered with its error,
resuming where outputs are already in, and finishing only when every file is scored.

The output version here is a folder (``FolderOutput``), not the console: the console's
side is tested where batch scoring runs as a job. Needs a Python with paddlepaddle, as the
serving tests do (``PADDLECLOUD_REQUIRE_PADDLE=1`` makes its absence a failure).
"""

import json
import os
import subprocess
import tempfile
import textwrap
import unittest
from pathlib import Path

import test_serving
from test_serving import _export, _paddle_python, expected_rows

HERE = Path(__file__).resolve().parent
SDK = HERE.parent

# What runs in the paddle Python: the scorer over INPUTS into a folder standing for the
# output version, as replica INDEX of COUNT; prints what it did as one JSON line.
RUNNER = textwrap.dedent(
    """
    import json, os, shutil, sys
    from pathlib import Path
    from paddlecloud import score, serving

    model, inputs, out, index, count = sys.argv[1:6]

    class FolderOutput:
        owner, name, version = "acme", "scores", 1
        finished = 0

        def done(self):
            return set(score.input_files(Path(out)))

        def put(self, local, path):
            target = Path(out, path)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(local, target)

        def finish(self):
            FolderOutput.finished += 1
            return {"version": 1, "state": "ready"}

    service = serving.Service(Path(model), 1, None)
    code = score.run(service, Path(inputs), FolderOutput(), int(index), int(count))
    print(json.dumps({"code": code, "finished": FolderOutput.finished}))
    """
)


def setUpModule():
    global PYTHON, MODEL, _tmp
    python, why = _paddle_python()
    if python is None:
        if os.environ.get("PADDLECLOUD_REQUIRE_PADDLE") == "1":
            raise RuntimeError(why)
        raise unittest.SkipTest(why)
    PYTHON = test_serving.PYTHON = python
    _tmp = tempfile.TemporaryDirectory(prefix="score-test-")
    MODEL = _export(Path(_tmp.name) / "model")["model_dir"]


def tearDownModule():
    _tmp.cleanup()


def run_replica(inputs, out, index, count):
    done = subprocess.run(
        [PYTHON, "-c", RUNNER, MODEL, str(inputs), str(out), str(index), str(count)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(SDK)},
    )
    if done.returncode != 0:
        raise AssertionError(f"the scorer failed:\n{done.stdout}\n{done.stderr}")
    lines = done.stdout.splitlines()
    return json.loads(lines[-1]), "\n".join(lines[:-1])


def answers(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


class ScorerTest(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(dir=_tmp.name))
        self.inputs = self.dir / "in"
        self.out = self.dir / "out"
        (self.inputs / "part").mkdir(parents=True)
        self.out.mkdir()
        rows = [[1, 2, 3, 4], [0, 0, 0, 0], [2, 1, 0, -1]]
        (self.inputs / "a.jsonl").write_text(
            json.dumps({"inputs": {"x": [rows[0]]}}) + "\n"
            + json.dumps({"inputs": {"x": [[1, 2]]}}) + "\n"   # a wrong shape
            + json.dumps({"inputs": [rows[1], rows[2]]}) + "\n"
        )
        (self.inputs / "part" / "b.csv").write_text(
            "a,b,c,d\n" + "".join(",".join(map(str, r)) + "\n" for r in rows)
        )
        (self.inputs / "part" / "c.csv").write_text("5,5,5,5\n")
        (self.inputs / "notes.txt").write_text("not scored")
        self.rows = rows

    def test_two_replicas_share_the_files_and_the_last_one_finishes_the_version(self):
        first, log = run_replica(self.inputs, self.out, 0, 2)
        # Sorted: a.jsonl, part/b.csv, part/c.csv; replica 0 takes the 1st and 3rd.
        self.assertEqual(sorted(os.listdir(self.out)), ["a.jsonl.predictions.jsonl", "part"])
        self.assertEqual(os.listdir(self.out / "part"), ["c.csv.predictions.jsonl"])
        self.assertEqual(first, {"code": 0, "finished": 0})
        self.assertIn("1 not scored (not .jsonl or .csv)", log)
        self.assertIn("the version stays open", log)

        second, log = run_replica(self.inputs, self.out, 1, 2)
        self.assertEqual(second, {"code": 0, "finished": 1})
        self.assertIn("all 3 file(s) scored", log)

        a = answers(self.out / "a.jsonl.predictions.jsonl")
        name = next(iter(a[0]["outputs"]))
        self.assertEqual(a[0]["outputs"][name], expected_rows([self.rows[0]]))
        self.assertIn("error", a[1])
        self.assertEqual(a[2]["outputs"][name], expected_rows(self.rows[1:]))
        b = answers(self.out / "part" / "b.csv.predictions.jsonl")
        self.assertEqual([line["outputs"][name] for line in b], expected_rows(self.rows))
        c = answers(self.out / "part" / "c.csv.predictions.jsonl")
        self.assertEqual(c[0]["outputs"][name], expected_rows([[5, 5, 5, 5]])[0])

    def test_a_replica_run_again_redoes_only_the_files_not_scored(self):
        # As after a failure: one output is in, another is not.
        (self.out / "a.jsonl.predictions.jsonl").write_text('{"outputs": "kept"}\n')
        result, log = run_replica(self.inputs, self.out, 0, 1)
        self.assertEqual(result, {"code": 0, "finished": 1})
        self.assertIn("3 of 3 file(s), 1 already scored", log)
        self.assertEqual(answers(self.out / "a.jsonl.predictions.jsonl"), [{"outputs": "kept"}])
        self.assertTrue((self.out / "part" / "b.csv.predictions.jsonl").exists())

    def test_a_csv_row_that_is_not_numbers_fails_the_replica_naming_it(self):
        (self.inputs / "part" / "c.csv").write_text("1,2,3,4\nx,y,z,w\n")
        done = subprocess.run(
            [PYTHON, "-c", RUNNER, MODEL, str(self.inputs), str(self.out), "0", "1"],
            capture_output=True, text=True, timeout=600,
            env={**os.environ, "PYTHONPATH": str(SDK)},
        )
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("c.csv: row 2 is not numbers", done.stderr)


if __name__ == "__main__":
    unittest.main()
