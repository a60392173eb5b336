"""Batch scoring: a model version over the files of a dataset version, a shard per replica,
its predictions written as a new version of an output dataset.

Each replica of the job runs ``python3 -m paddlecloud.score``. It loads the model as a
serving replica does (:mod:`paddlecloud.serving`: the inference model found in the folder
or its ``tar.gz``, or a script's ``load``/``predict`` hooks), takes its share of the input
files, and uploads one predictions file per input file into the output version.

Environment (the job's own, as the console sets it)
---------------------------------------------------
``PADDLE_MODEL_DIR``            the model version's folder
``PADDLE_DATASET_DIR``          the input files (a dataset's saved version)
``PADDLE_TRAINER_ID``           this replica's shard, 0 … N-1 (default 0)
``PADDLE_TRAINERS_NUM``         N, the number of replicas (default 1)
``PADDLECLOUD_SCORE_OUTPUT``    the output dataset, ``owner/name``
``PADDLECLOUD_SCORE_VERSION``   its version being written (started empty, still uploading)
``PADDLECLOUD_SCORE_SCRIPT``    optional hooks, as for serving (their source: the form's
                                ``script``); or ``PADDLECLOUD_SERVING_SCRIPT``, a file of them
``PADDLECLOUD_SERVER``, ``PADDLECLOUD_JOB_TOKEN``  how it writes (every job has them)

Inputs and outputs
------------------
The input files are sorted by path; replica *i* takes files *i*, *i + N*, *i + 2N*, … so the
shards are fixed by the files alone. For input ``F`` the output is ``F.predictions.jsonl``:

* ``F.jsonl``: each line is one request, as serving's ``POST /predict`` body
  (``{"inputs": {"x": [[…]]}}``, or ``{"inputs": [[…]]}`` for a model with one input);
* ``F.csv``: each row of numbers is one instance of a model with one input (a first row
  that is not numbers is a header), scored in batches of ``BATCH`` rows;

and each output line answers one request (one row) in order: ``{"outputs": {NAME: …}}``,
or ``{"error": MESSAGE}`` for one the model refuses (as serving's 400). Other files are
listed as skipped. A file that cannot be read at all fails the replica.

Resuming, finishing, progress
-----------------------------
An output is uploaded only when it is whole (from a finished local file), so an output that
is in the version is done: a replica run again (a retry after a failure) skips the files
whose outputs are there and redoes only the rest. After its shard, a replica finishes the
output version when every input's output is in it; any replica may, and finishing twice is
harmless. Each file scored prints a progress line (``paddlecloud-score: 3/10 files …``).
"""

import csv
import io
import json
import os
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

PREFIX = "paddlecloud-score"
SUFFIX = ".predictions.jsonl"
BATCH = 256
SCORED = (".jsonl", ".csv")


def say(message: str) -> None:
    print(f"{PREFIX}: {message}", flush=True)


def input_files(root: Path) -> List[str]:
    """Every file below ``root`` as a relative ``/`` path, sorted; hidden ones left out."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith("."):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            found.append(rel.replace(os.sep, "/"))
    return sorted(found)


def shard(files: Sequence[str], index: int, count: int) -> List[str]:
    """Replica ``index`` of ``count``'s files: every ``count``-th from ``index``."""
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"replica {index} of {count} is not a shard")
    return list(files[index::count])


def output_path(path: str) -> str:
    return path + SUFFIX


def _numbers(row: Sequence[str]) -> Optional[List[float]]:
    try:
        return [float(cell) for cell in row]
    except ValueError:
        return None


def requests_of(path: Path) -> Iterator[Tuple[str, Any]]:
    """The requests of one input file: ``("one", body_bytes)`` per JSON line, or
    ``("rows", [[numbers], …])`` per batch of CSV rows."""
    if path.suffix == ".jsonl":
        with open(path, "rb") as f:
            for line in f:
                if line.strip():
                    yield "one", line
        return
    with open(path, newline="") as f:
        rows: List[List[float]] = []
        for i, row in enumerate(csv.reader(f)):
            if not row:
                continue
            numbers = _numbers(row)
            if numbers is None:
                if i == 0:
                    continue  # a header
                raise ValueError(f"{path.name}: row {i + 1} is not numbers: {row[:4]}")
            rows.append(numbers)
            if len(rows) == BATCH:
                yield "rows", rows
                rows = []
        if rows:
            yield "rows", rows


def score_file(service: Any, path: Path, out: io.TextIOBase) -> int:
    """Writes one answer line per request (row) of ``path`` to ``out``; returns how many."""
    answered = 0
    for kind, request in requests_of(path):
        if kind == "one":
            status, answer = service.predict_json(request)
            if status != 200:
                answer = {"error": answer.get("error", f"status {status}")}
            out.write(json.dumps(answer, allow_nan=False) + "\n")
            answered += 1
            continue
        status, answer = service.predict_json(json.dumps({"inputs": request}).encode())
        if status != 200:
            # One bad row should not cost the batch: each row on its own says which.
            for row in request:
                status, one = service.predict_json(json.dumps({"inputs": [row]}).encode())
                line = _row(one, 0) if status == 200 else {"error": one.get("error")}
                out.write(json.dumps(line, allow_nan=False) + "\n")
                answered += 1
            continue
        for i in range(len(request)):
            out.write(json.dumps(_row(answer, i), allow_nan=False) + "\n")
            answered += 1
    return answered


def _row(answer: Dict[str, Any], i: int) -> Dict[str, Any]:
    """Row ``i`` of a batch's outputs (each output's ``i``-th element)."""
    outputs = answer["outputs"]
    return {"outputs": {name: value[i] if isinstance(value, list) else value
                        for name, value in outputs.items()}}


class Output:
    """The output version, through the console's REST API with the job's token."""

    def __init__(self, client: Any, dataset: str, version: int):
        owner, _, name = dataset.partition("/")
        if not owner or not name:
            raise ValueError(f"PADDLECLOUD_SCORE_OUTPUT {dataset!r} is not owner/name")
        self.client = client
        self.owner, self.name, self.version = owner, name, version
        self.base = f"/datasets/{owner}/{urllib.parse.quote(name, safe='')}"

    def done(self) -> set:
        """The paths already in the version."""
        found, dirs = set(), [""]
        while dirs:
            folder = dirs.pop()
            query = [("dir", folder), ("version", self.version)]
            for entry in self.client._json("GET", f"{self.base}/files", query=query):
                if entry["dir"]:
                    dirs.append(entry["path"])
                else:
                    found.add(entry["path"])
        return found

    def put(self, local: str, path: str) -> None:
        self.client._put("datasets", self.owner, self.name, local, path, self.version)

    def finish(self) -> Dict[str, Any]:
        return self.client._json("POST", f"{self.base}/versions/{self.version}/finish")


def run(service: Any, inputs: Path, output: Output, index: int, count: int) -> int:
    """Scores replica ``index``'s shard into ``output``; finishes it when all is in."""
    files = input_files(inputs)
    scored = [f for f in files if f.endswith(SCORED)]
    skipped = [f for f in files if not f.endswith(SCORED)]
    mine = shard(scored, index, count)
    done = output.done()
    todo = [f for f in mine if output_path(f) not in done]
    say(f"replica {index + 1} of {count}: {len(mine)} of {len(scored)} file(s), "
        f"{len(mine) - len(todo)} already scored; {len(skipped)} not scored (not .jsonl or .csv)")
    started, rows = time.monotonic(), 0
    with tempfile.TemporaryDirectory(prefix=".score-") as work:
        for i, rel in enumerate(todo, 1):
            local = os.path.join(work, "out")
            with open(local, "w") as out:
                rows += score_file(service, inputs / rel, out)
            output.put(local, output_path(rel))
            took = time.monotonic() - started
            say(f"{i}/{len(todo)} files, {rows} rows, {took:.1f} s: {rel}")
    left = [f for f in scored if output_path(f) not in output.done()]
    if left:
        say(f"{len(left)} file(s) of other replicas not scored yet; the version stays open")
        return 0
    if not scored:
        say("nothing to score: the dataset has no .jsonl or .csv files")
        return 1
    version = output.finish()
    say(f"all {len(scored)} file(s) scored: {output.owner}/{output.name} "
        f"version {version['version']} is {version['state']}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    env = os.environ
    try:
        model_dir = Path(env["PADDLE_MODEL_DIR"])
        inputs = Path(env["PADDLE_DATASET_DIR"])
        dataset = env["PADDLECLOUD_SCORE_OUTPUT"]
        version = int(env["PADDLECLOUD_SCORE_VERSION"])
    except (KeyError, ValueError) as exc:
        say(f"not run as a batch scoring job: {exc} is missing or wrong")
        return 2
    index = int(env.get("PADDLE_TRAINER_ID", "0"))
    count = int(env.get("PADDLE_TRAINERS_NUM", "1"))
    try:
        from . import serving
        from . import default_client
    except ImportError:  # run as a file
        import paddlecloud.serving as serving  # type: ignore
        from paddlecloud import default_client  # type: ignore
    script = env.get("PADDLECLOUD_SERVING_SCRIPT")
    with tempfile.TemporaryDirectory(prefix=".model-") as work:
        source = env.get("PADDLECLOUD_SCORE_SCRIPT", "")
        if source.strip():
            # The form's hooks travel as text; serving loads them from a file.
            script = os.path.join(work, "scoring_hooks.py")
            with open(script, "w") as f:
                f.write(source)
        model = serving.prepare_model_dir(model_dir, Path(work))
        service = serving.Service(model, 1, Path(script) if script else None)
        say(service.describe())
        return run(service, inputs, Output(default_client(), dataset, version), index, count)


if __name__ == "__main__":
    sys.exit(main())
