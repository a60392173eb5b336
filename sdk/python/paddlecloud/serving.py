"""The default model server of a PaddleCloud serving instance.

The console copies this one file next to a serving instance and runs it with a Python
that has ``paddlepaddle`` (3.3.1) and ``numpy``::

    python3 serving.py --model-dir ./model --port 8080
    python3 -m paddlecloud.serving --model-dir ./model.tar.gz --host 0.0.0.0

It uses only the standard library besides numpy and paddle, and has no relative imports.

Options (each falls back to an environment variable, then to its default)
--------------------------------------------------------------------------
``--model-dir``  ``PADDLECLOUD_MODEL_DIR``   an exported PaddlePaddle inference model
                                             (see "Finding the model" below); required
``--port``       ``PORT``                    8080; 0 picks a free port (see the ready line)
``--host``       ``HOST``                    127.0.0.1
``--script``     ``PADDLECLOUD_SERVING_SCRIPT`` a Python file with ``load``/``predict`` hooks
``--threads``    ``PADDLECLOUD_SERVING_THREADS`` CPU math threads per predictor; 1

Finding the model
-----------------
The model is a program file ``NAME.json`` (the PIR program that ``paddle.jit.save`` writes in
paddle 3) or ``NAME.pdmodel`` (the older ProgramDesc), with ``NAME.pdiparams`` beside it. The
directory and its subdirectories are searched; the shallowest pair wins, and among several at
that depth the one named ``inference`` (then ``model``). ``.json`` wins over ``.pdmodel`` when
both exist. If the directory holds no such pair but exactly one ``*.tar.gz``/``*.tgz``, or
``--model-dir`` names such a file, it is extracted into a temporary directory (removed on
exit) and searched the same way. Archive members may only be plain files and directories
inside the archive: links, devices and paths leaving it (``..``, ``/``) are refused.

The script hooks
----------------
``--script FILE`` is run as a module. If it defines ``load(model_dir)``, that is called
with the (extracted) model directory instead of loading a paddle model, and its return value
is the *state*. Otherwise the state is the loaded paddle model, whose ``state.predict(inputs)``
runs it. If the script defines ``predict(state, inputs)``, it answers each request: ``inputs``
is a dict of input name -> ``numpy.ndarray`` and it returns a dict of output name -> array,
list or number. Without it, ``state.predict(inputs)`` answers. A ``ValueError`` from either
is the client's fault (400, with its message); anything else is a 500. The script's
``predict`` is called one request at a time, so it need not be thread-safe.

HTTP
----
The server listens only once the model is loaded, and then prints one line to stdout (here
folded)::

    paddlecloud-serving: ready on http://127.0.0.1:8080
        (model: /m/inference.json, inputs: x float32[-1, 4])

``GET /healthz``   200 ``{"status": "ready"}``
``GET /metadata``  200 ``{"model": PATH, "script": PATH|null, "inputs": [{"name", "shape",
                   "dtype"}], "outputs": [NAME, ...]}``; -1 in a shape is "any size". The lists
                   are empty when a script's ``load()`` replaces the paddle model.
``POST /predict``  body ``{"inputs": {"x": [[1, 2, 3, 4]]}}``, or ``{"inputs": [[1, 2, 3, 4]]}``
                   when the model has one input. 200 ``{"outputs": {"NAME": nested list}}``;
                   NaN and infinities are ``null``. Values are cast to the input's dtype
                   (floats only to a float type unless they are whole numbers).
                   400 ``{"error": MESSAGE}`` for a body that is not JSON, an unknown or
                   missing input, a wrong shape or dtype, or inputs the model rejects; 411
                   without a Content-Length, 413 over 64 MiB; 500 ``{"error": ...}`` for
                   anything unexpected (its traceback goes to stderr, never to the client).
``GET /metrics``   Prometheus text: ``paddlecloud_serving_requests_total{code="200"}`` counts
                   the requests to /predict by status, and the
                   ``paddlecloud_serving_request_seconds`` histogram times them.
Any other path is a JSON 404, any other method a JSON 405 or 501. Requests are answered
concurrently, each connection in its own thread; model runs use up to
``cpu_count // threads`` predictors cloned from the loaded one (they share its weights).

Every request logs ``METHOD PATH STATUS MILLISECONDSms`` (and the error, if any) to stderr.
If the model cannot be loaded, the last line on stderr is
``paddlecloud-serving: cannot load the model: REASON`` and the exit status is 1; a port that
cannot be bound gives ``paddlecloud-serving: cannot listen on HOST:PORT: REASON``, also 1.
SIGTERM or SIGINT stops listening, lets requests in progress finish (up to 25 s), and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import sys
import tarfile
import tempfile
import threading
import time
import traceback
import warnings
from http import HTTPStatus
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

try:
    import numpy as np
except ImportError:  # reported as a load failure by main(), which the console shows
    np = None  # type: ignore[assignment]

PREFIX = "paddlecloud-serving"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
# Program files in order of preference: paddle 3 saves PIR .json, older paddle .pdmodel.
PROGRAM_SUFFIXES = (".json", ".pdmodel")
PREFERRED_STEMS = ("inference", "model")
MAX_BODY_BYTES = 64 << 20
# Requests still running at SIGTERM get this long; Kubernetes kills after 30 s by default.
DRAIN_SECONDS = 25.0
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class LoadError(Exception):
    """The model cannot be served; the message is the one-line reason the console shows."""


class InputError(ValueError):
    """The request's inputs are wrong: a 400 with this message."""


def log(message: str) -> None:
    sys.stderr.write(f"{message}\n")
    sys.stderr.flush()


# --- Finding the model -------------------------------------------------------------------


def prepare_model_dir(path: Path, work: Path) -> Path:
    """The directory to search for the model: `path` itself, or where its archive (or the
    single archive inside it) was extracted under `work`."""
    if not path.exists():
        raise LoadError(f"{path} does not exist")
    if path.is_file():
        if not path.name.endswith(ARCHIVE_SUFFIXES):
            raise LoadError(f"{path} is a file but not a .tar.gz or .tgz archive")
        return extract_archive(path, work)
    if _model_pairs(path):
        return path
    archives = sorted(
        p for p in path.iterdir() if p.is_file() and p.name.endswith(ARCHIVE_SUFFIXES)
    )
    if len(archives) == 1:
        return extract_archive(archives[0], work)
    return path


def extract_archive(archive: Path, work: Path) -> Path:
    """Extracts `archive` into a new directory under `work`, refusing any member that is not
    a plain file or directory, or whose path would land outside that directory."""
    dest = Path(tempfile.mkdtemp(prefix="model-", dir=work)).resolve()
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                target = (dest / member.name).resolve()
                if target != dest and dest not in target.parents:
                    raise LoadError(f"{archive}: member {member.name!r} points outside the archive")
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                elif member.isfile():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    source = tar.extractfile(member)
                    assert source is not None  # isfile() members always have data
                    with source, open(target, "wb") as out:
                        shutil.copyfileobj(source, out, 1 << 20)
                else:
                    raise LoadError(
                        f"{archive}: member {member.name!r} is a link or special file; "
                        "only files and directories are extracted"
                    )
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise LoadError(f"cannot extract {archive}: {exc}") from exc
    return dest


def _model_pairs(directory: Path) -> List[Tuple[Path, Path]]:
    """Every (program, params) pair under `directory`, .json before .pdmodel per name."""
    pairs = []
    for params in sorted(directory.rglob("*.pdiparams")):
        for suffix in PROGRAM_SUFFIXES:
            program = params.with_suffix(suffix)
            if program.is_file():
                pairs.append((program, params))
                break
    return pairs


def find_model_files(directory: Path) -> Tuple[Path, Path]:
    """The program file and params file of the model in `directory` (see the module doc)."""
    pairs = _model_pairs(directory)
    if not pairs:
        programs = sorted(
            p.relative_to(directory)
            for suffix in PROGRAM_SUFFIXES
            for p in directory.rglob(f"*{suffix}")
        )
        if programs:
            names = ", ".join(str(p) for p in programs[:5])
            raise LoadError(
                f"no .pdiparams file beside the program file(s) in {directory}: {names}"
            )
        raise LoadError(
            f"no PaddlePaddle inference model in {directory} "
            "(looked for NAME.json or NAME.pdmodel with NAME.pdiparams beside it)"
        )

    def depth(pair: Tuple[Path, Path]) -> int:
        return len(pair[0].relative_to(directory).parts)

    shallowest = [p for p in pairs if depth(p) == min(map(depth, pairs))]
    if len(shallowest) == 1:
        return shallowest[0]
    for stem in PREFERRED_STEMS:
        named = [p for p in shallowest if p[0].stem == stem]
        if len(named) == 1:
            return named[0]
    names = ", ".join(str(p[0].relative_to(directory)) for p in shallowest)
    raise LoadError(f"several models in {directory} ({names}); point --model-dir at one")


# --- The paddle model --------------------------------------------------------------------


def one_line(exc: BaseException) -> str:
    """The one informative line of an exception's message. Paddle's are multi-line reports
    with C++ tracebacks, hints and source locations around an `XxxError: what` line."""
    lines = [line.strip() for line in str(exc).splitlines()]
    lines = [
        line
        for line in lines
        if line
        and not line.startswith(
            ("[Hint", "In user code", "C++ Traceback", "---", "File ", "[operator")
        )
    ]
    summary = next((line for line in lines if re.match(r"\w*Error: ", line)), None)
    line = summary or (lines[0] if lines else type(exc).__name__)
    if " (at /" in line:
        line = line[: line.index(" (at /")]
    return line[:500]


def _program_input_shapes(program: Path) -> Dict[str, List[int]]:
    """Input name -> shape, read from the program file, since paddle.inference only tells
    the shape of an input after one is given. A PIR .json program declares its inputs as
    `data` ops of the top block; a .pdmodel as the variables its `feed` ops write."""
    if program.suffix == ".json":
        with open(program, encoding="utf-8") as f:
            ops = json.load(f)["program"]["regions"][0]["blocks"][0]["ops"]
        shapes = {}
        for op in ops:
            if str(op.get("#", "")).rsplit(".", 1)[-1] == "data":
                attrs = {a["N"]: a["AT"]["D"] for a in op.get("A", []) if isinstance(a, dict)}
                shapes[attrs["name"]] = [int(d) for d in attrs["shape"]]
        return shapes
    from paddle.base.proto import framework_pb2

    desc = framework_pb2.ProgramDesc.FromString(program.read_bytes())
    block = desc.blocks[0]
    dims = {var.name: list(var.type.dense_tensor.tensor.dims) for var in block.vars}
    feeds = [
        arg for op in block.ops if op.type == "feed" for out in op.outputs for arg in out.arguments
    ]
    return {name: [int(d) for d in dims[name]] for name in feeds}


class PaddleModel:
    """An exported inference model on the CPU. `predict` is safe to call from many threads:
    each call borrows one of up to `cpu_count // threads` predictors cloned from the loaded
    one (clones share the weights), so concurrent requests use the cores without
    oversubscribing them."""

    def __init__(self, program: Path, params: Path, threads: int = 1):
        self.program = program
        try:
            with warnings.catch_warnings():
                # paddle warns about a missing ccache (for building C++ extensions) on import.
                warnings.simplefilter("ignore")
                import paddle.inference as paddle_inference
        except ImportError as exc:
            raise LoadError(f"paddlepaddle is not installed for {sys.executable} ({exc})") from exc
        config = paddle_inference.Config(str(program), str(params))
        config.disable_gpu()
        config.disable_glog_info()
        config.set_cpu_math_library_num_threads(threads)
        try:
            self._template = paddle_inference.create_predictor(config)
        except Exception as exc:  # paddle raises RuntimeError, ValueError, ... from C++
            raise LoadError(
                f"paddle could not read {program} and {params.name}: {one_line(exc)}"
            ) from exc
        try:
            shapes = _program_input_shapes(program)
        except Exception as exc:  # metadata only: run without shape checks rather than fail
            log(f"{PREFIX}: cannot read the input shapes in {program} ({exc!r}); not checking them")
            shapes = {}
        self.inputs = []
        for name in self._template.get_input_names():
            kind = self._template.get_input_handle(name).type().name.lower()
            try:
                dtype: Optional[np.dtype] = np.dtype(kind)
            except TypeError:  # bfloat16 and the like: numpy has no such type, paddle checks it
                dtype = None
            self.inputs.append({"name": name, "shape": shapes.get(name), "dtype": dtype})
        self.output_names: List[str] = list(self._template.get_output_names())
        # One clone now, so that the first request does not wait for it.
        self._idle: List[Any] = [self._template.clone()]
        self._made = 1
        self._max = max(1, (os.cpu_count() or 1) // max(1, threads))
        self._pool = threading.Condition()

    def describe_inputs(self) -> str:
        return ", ".join(
            f"{i['name']} {i['dtype'] if i['dtype'] is not None else '?'}"
            f"{i['shape'] if i['shape'] is not None else '[?]'}"
            for i in self.inputs
        )

    def metadata_inputs(self) -> List[Dict[str, Any]]:
        return [
            {
                "name": i["name"],
                "shape": i["shape"],
                "dtype": None if i["dtype"] is None else str(i["dtype"]),
            }
            for i in self.inputs
        ]

    def check_inputs(self, inputs: Mapping[str, Any]) -> Dict[str, "np.ndarray"]:
        """`inputs` as contiguous arrays of the model's dtypes, or an InputError saying what
        is wrong with them."""
        names = [i["name"] for i in self.inputs]
        unknown = [n for n in inputs if n not in names]
        if unknown:
            raise InputError(
                f"unknown input {unknown[0]!r}; the model's inputs are: {', '.join(names)}"
            )
        arrays = {}
        for spec in self.inputs:
            name = spec["name"]
            if name not in inputs:
                raise InputError(
                    f"missing input {name!r}; the model's inputs are: {', '.join(names)}"
                )
            arrays[name] = _cast_input(
                name, as_array(name, inputs[name]), spec["shape"], spec["dtype"]
            )
        return arrays

    def predict(self, inputs: Mapping[str, Any]) -> Dict[str, "np.ndarray"]:
        """Runs the model on `inputs` (name -> array or nested list)."""
        arrays = self.check_inputs(inputs)
        with self._predictor() as predictor:
            for name, array in arrays.items():
                handle = predictor.get_input_handle(name)
                handle.reshape(list(array.shape))
                handle.copy_from_cpu(array)
            try:
                predictor.run()
            except ValueError as exc:  # paddle's InvalidArgument: the inputs do not fit the model
                raise InputError(f"the model rejected the inputs: {one_line(exc)}") from exc
            return {
                name: predictor.get_output_handle(name).copy_to_cpu() for name in self.output_names
            }

    @contextlib.contextmanager
    def _predictor(self) -> Iterator[Any]:
        with self._pool:
            while not self._idle and self._made >= self._max:
                self._pool.wait()
            if self._idle:
                predictor = self._idle.pop()
            else:
                # The template only ever clones, so no clone races a run() on it.
                predictor = self._template.clone()
                self._made += 1
        try:
            yield predictor
        finally:
            with self._pool:
                self._idle.append(predictor)
                self._pool.notify()


def as_array(name: str, value: Any) -> "np.ndarray":
    try:
        return np.asarray(value)
    except ValueError as exc:
        raise InputError(
            f"input {name!r} is not a rectangular array: rows differ in length"
        ) from exc


def _cast_input(
    name: str, array: "np.ndarray", shape: Optional[List[int]], dtype: Optional["np.dtype"]
) -> "np.ndarray":
    if array.dtype.kind not in "biuf":
        raise InputError(f"input {name!r} must hold only numbers")
    if shape is not None and (
        array.ndim != len(shape)
        or any(want not in (-1, got) for want, got in zip(shape, array.shape))
    ):
        raise InputError(
            f"input {name!r} has shape {list(array.shape)} "
            f"but the model takes {shape} (-1: any size)"
        )
    if dtype is None or array.dtype == dtype:
        return np.ascontiguousarray(array)
    if dtype.kind == "b" and array.dtype.kind != "b":
        raise InputError(f"input {name!r} takes true/false values ({dtype})")
    if dtype.kind in "iu":
        if array.dtype.kind == "f" and not np.all(np.mod(array, 1) == 0):
            raise InputError(f"input {name!r} takes whole numbers ({dtype}), not fractions")
        info = np.iinfo(dtype)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise InputError(f"input {name!r} has values outside the range of {dtype}")
    return np.ascontiguousarray(array, dtype=dtype)


def jsonable(value: Any) -> Any:
    """An output as nested lists of plain numbers, NaN and infinities as None (JSON has
    neither)."""
    array = np.asarray(value)
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        array = np.where(np.isfinite(array), array, None)
    return array.tolist()


# --- What the server serves --------------------------------------------------------------


def load_script(path: Path) -> Any:
    """The user's script, run as the module `paddlecloud_serving_script`, with its own
    directory importable as when it is run with `python3 script.py`."""
    if not path.is_file():
        raise LoadError(f"the script {path} does not exist")
    sys.path.insert(0, str(path.resolve().parent))
    # An explicit source loader, so that a script need not be named *.py.
    loader = importlib.machinery.SourceFileLoader("paddlecloud_serving_script", str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    sys.modules[loader.name] = module
    try:
        loader.exec_module(module)
    except Exception as exc:
        traceback.print_exc()
        raise LoadError(f"the script {path} failed: {type(exc).__name__}: {one_line(exc)}") from exc
    return module


class Service:
    """The loaded state and the predict function that answers with it."""

    def __init__(self, model_dir: Path, threads: int, script_path: Optional[Path]):
        script = load_script(script_path) if script_path else None
        self.script_path = script_path
        user_load = getattr(script, "load", None)
        user_predict = getattr(script, "predict", None)
        if script is not None and user_load is None and user_predict is None:
            log(f"{PREFIX}: {script_path} defines neither load() nor predict(); ignoring it")
        if user_load is not None:
            try:
                self.state = user_load(str(model_dir))
            except Exception as exc:
                traceback.print_exc()
                raise LoadError(
                    f"the script's load() failed: {type(exc).__name__}: {one_line(exc)}"
                ) from exc
            self.model_description = f"{model_dir} loaded by {script_path}"
        else:
            self.state = PaddleModel(*find_model_files(model_dir), threads=threads)
            self.model_description = str(self.state.program)
        if user_predict is not None:
            lock = threading.Lock()

            def predict(state: Any, inputs: Dict[str, Any]) -> Any:
                with lock:
                    return user_predict(state, inputs)

            self._predict: Callable[[Any, Dict[str, Any]], Any] = predict
        elif callable(getattr(self.state, "predict", None)):
            self._predict = lambda state, inputs: state.predict(inputs)
        else:
            raise LoadError(
                f"the script's load() returned a {type(self.state).__name__} without a "
                "predict(inputs) method, and the script defines no predict(state, inputs)"
            )

    @property
    def model(self) -> Optional[PaddleModel]:
        return self.state if isinstance(self.state, PaddleModel) else None

    def describe(self) -> str:
        inputs = self.model.describe_inputs() if self.model else f"see {self.script_path}"
        return f"model: {self.model_description}, inputs: {inputs}"

    def metadata(self) -> Dict[str, Any]:
        return {
            "model": self.model_description,
            "script": str(self.script_path) if self.script_path else None,
            "inputs": self.model.metadata_inputs() if self.model else [],
            "outputs": self.model.output_names if self.model else [],
        }

    def predict_json(self, body: bytes) -> Tuple[int, Dict[str, Any]]:
        """The status and JSON answer to a /predict body. Raises only for a server fault."""
        try:
            request = json.loads(body)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError both are
            return 400, {"error": f"the body is not JSON: {exc}"}
        if not isinstance(request, dict) or "inputs" not in request:
            return 400, {"error": 'the body must be a JSON object {"inputs": {"NAME": [...], ...}}'}
        try:
            inputs = self._named_inputs(request["inputs"])
            outputs = self._predict(self.state, {n: as_array(n, v) for n, v in inputs.items()})
        except ValueError as exc:  # InputError, or a ValueError from the model or the script
            return 400, {"error": one_line(exc)}
        if not isinstance(outputs, Mapping):
            raise TypeError(f"predict() returned a {type(outputs).__name__}, not a dict of outputs")
        return 200, {"outputs": {str(name): jsonable(value) for name, value in outputs.items()}}

    def _named_inputs(self, inputs: Any) -> Dict[str, Any]:
        if isinstance(inputs, dict):
            return inputs
        names = [i["name"] for i in self.model.inputs] if self.model else []
        if len(names) == 1:
            return {names[0]: inputs}
        if names:
            raise InputError(
                f"the model has {len(names)} inputs ({', '.join(names)}); name them: "
                '{"inputs": {"NAME": [...], ...}}'
            )
        raise InputError('name the inputs: {"inputs": {"NAME": [...], ...}}')


# --- HTTP --------------------------------------------------------------------------------


class Metrics:
    """/predict requests by status and their latency, in Prometheus' text format."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._codes: Dict[int, int] = {}
        self._buckets = [0] * len(LATENCY_BUCKETS)
        self._sum = 0.0
        self._count = 0

    def observe(self, code: int, seconds: float) -> None:
        with self._lock:
            self._codes[code] = self._codes.get(code, 0) + 1
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    self._buckets[i] += 1
            self._sum += seconds
            self._count += 1

    def render(self) -> str:
        with self._lock:
            lines = [
                "# HELP paddlecloud_serving_requests_total Requests to /predict by HTTP status.",
                "# TYPE paddlecloud_serving_requests_total counter",
            ]
            lines += [
                f'paddlecloud_serving_requests_total{{code="{c}"}} {n}'
                for c, n in sorted(self._codes.items())
            ]
            lines += [
                "# HELP paddlecloud_serving_request_seconds Time to answer a /predict request.",
                "# TYPE paddlecloud_serving_request_seconds histogram",
            ]
            lines += [
                f'paddlecloud_serving_request_seconds_bucket{{le="{bound}"}} {n}'
                for bound, n in zip(LATENCY_BUCKETS, self._buckets)
            ]
            lines += [
                f'paddlecloud_serving_request_seconds_bucket{{le="+Inf"}} {self._count}',
                f"paddlecloud_serving_request_seconds_sum {self._sum}",
                f"paddlecloud_serving_request_seconds_count {self._count}",
            ]
        return "\n".join(lines) + "\n"


class Server(http.server.ThreadingHTTPServer):
    """A thread per connection, counting the requests in progress so that a shutdown can
    wait for them."""

    request_queue_size = 128  # the listen backlog; socketserver's 5 drops bursts of connections

    def __init__(self, address: Tuple[str, int], service: Service):
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.service = service
        self.metrics = Metrics()
        self._busy = 0
        self._idle = threading.Condition()

    @contextlib.contextmanager
    def request_in_progress(self) -> Iterator[None]:
        with self._idle:
            self._busy += 1
        try:
            yield
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a client's requests share one connection
    # Headers and body go out in two writes; with Nagle's algorithm the second waits for the
    # client's delayed ACK, which adds 40 ms to every answer on a kept-alive connection.
    disable_nagle_algorithm = True
    server_version = PREFIX
    server: Server

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        self._started: Optional[float] = time.perf_counter()
        self._answered = False
        path = self.path.split("?", 1)[0]
        with self.server.request_in_progress():
            try:
                self._route(path)
            except Exception as exc:
                log(f"{PREFIX}: {self.command} {path} failed:\n{traceback.format_exc().rstrip()}")
                if not self._answered:
                    self._json(
                        500, {"error": f"internal error: {type(exc).__name__}: {one_line(exc)}"}
                    )
            if not self._answered:
                log(f"{self.command} {path} - {self._elapsed() * 1000:.1f}ms: the client went away")

    def _elapsed(self) -> float:
        return time.perf_counter() - self._started if self._started is not None else 0.0

    def _record(self, status: int, error: str) -> None:
        """Counts and logs a request just before its answer goes out, so that a client that
        has its answer finds it in /metrics (and the log) too."""
        self._answered = True
        path = self.path.split("?", 1)[0]
        elapsed = self._elapsed()
        if path == "/predict" and self._started is not None:
            self.server.metrics.observe(status, elapsed)
        detail = f": {error}" if error else ""
        log(f"{self.command} {path} {status} {elapsed * 1000:.1f}ms{detail}")

    def _route(self, path: str) -> None:
        routes = {
            "/healthz": ("GET", lambda: self._json(200, {"status": "ready"})),
            "/metadata": ("GET", lambda: self._json(200, self.server.service.metadata())),
            "/metrics": ("GET", self._metrics),
            "/predict": ("POST", self._predict),
        }
        if path not in routes:
            self._json(
                404,
                {"error": f"no such path: {path} (try /predict, /metadata, /healthz, /metrics)"},
            )
            return
        method, answer = routes[path]
        if self.command != method:
            self._json(405, {"error": f"{path} takes {method}"}, {"Allow": method})
            return
        answer()

    def _metrics(self) -> None:
        body = self.server.metrics.render().encode()
        self._send(200, body, "text/plain; version=0.0.4; charset=utf-8")

    def _predict(self) -> None:
        header = self.headers.get("Content-Length")
        if header is None:
            self._json(411, {"error": "a Content-Length header is needed"}, close=True)
            return
        length = int(header) if header.isdigit() else -1
        if length < 0:
            self._json(
                400, {"error": f"Content-Length {header!r} is not a number of bytes"}, close=True
            )
            return
        if length > MAX_BODY_BYTES:
            self._json(413, {"error": f"the body is over {MAX_BODY_BYTES >> 20} MiB"}, close=True)
            return
        try:
            body = self.rfile.read(length)
        except ConnectionError:
            body = b""
        if len(body) < length:  # the client went away mid-body: nobody to answer
            self.close_connection = True
            return
        status, payload = self.server.service.predict_json(body)
        self._json(status, payload)

    def _json(
        self,
        status: int,
        payload: Dict[str, Any],
        headers: Optional[Dict[str, str]] = None,
        close: bool = False,
    ) -> None:
        body = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode()
        error = payload.get("error", "") if status >= 400 else ""
        self._send(status, body, "application/json", headers, close, error)

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        headers: Optional[Dict[str, str]] = None,
        close: bool = False,
        error: str = "",
    ) -> None:
        self._record(status, error)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")  # also sets self.close_connection
        try:
            self.end_headers()
            self.wfile.write(body)
        except ConnectionError:  # the client went away before its answer
            self.close_connection = True

    def send_error(
        self, code: int, message: Optional[str] = None, explain: Optional[str] = None
    ) -> None:
        """http.server's own errors (malformed request, unsupported method) as JSON too."""
        self._started = None  # not timed: http.server answers before any of our code runs
        self.path = getattr(self, "path", "-")
        self._json(code, {"error": message or HTTPStatus(code).phrase}, close=True)

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        """Requests are logged by _record, with their duration."""

    def log_message(self, format: str, *args: Any) -> None:
        log(f"{PREFIX}: {format % args}")


# --- Running -----------------------------------------------------------------------------


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(
        prog="paddlecloud-serving",
        description="Serve an exported PaddlePaddle inference model over HTTP "
        "(POST /predict, GET /metadata, /healthz, /metrics).",
    )
    parser.add_argument(
        "--model-dir",
        default=env("PADDLECLOUD_MODEL_DIR"),
        help="the model directory, or a .tar.gz of it (env PADDLECLOUD_MODEL_DIR)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=env("PORT", "8080"),
        help="port to listen on, 0 for any free one (env PORT; 8080)",
    )
    parser.add_argument(
        "--host",
        default=env("HOST", "127.0.0.1"),
        help="address to listen on (env HOST; 127.0.0.1)",
    )
    parser.add_argument(
        "--script",
        default=env("PADDLECLOUD_SERVING_SCRIPT"),
        help="a Python file defining load(model_dir) and/or predict(state, inputs) "
        "(env PADDLECLOUD_SERVING_SCRIPT)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=env("PADDLECLOUD_SERVING_THREADS", "1"),
        help="CPU math threads per predictor (env PADDLECLOUD_SERVING_THREADS; 1)",
    )
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}-") as work:
        try:
            if np is None:
                raise LoadError(f"numpy and paddlepaddle are not installed for {sys.executable}")
            if not args.model_dir:
                raise LoadError("no model directory: pass --model-dir or set PADDLECLOUD_MODEL_DIR")
            if args.threads < 1:
                raise LoadError(f"--threads must be 1 or more, not {args.threads}")
            model_dir = prepare_model_dir(Path(args.model_dir).resolve(), Path(work))
            service = Service(model_dir, args.threads, Path(args.script) if args.script else None)
        except LoadError as exc:
            log(f"{PREFIX}: cannot load the model: {exc}")
            return 1
        # Only now: importing paddle installs its own SIGTERM handler (in C, unseen by
        # Python's signal module), which would kill the process mid-request.
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, frame: stop.set())

        try:
            server = Server((args.host, args.port), service)
        except OSError as exc:
            log(f"{PREFIX}: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
            return 1
        threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
        host, port = server.server_address[:2]
        url_host = f"[{host}]" if ":" in host else host
        print(f"{PREFIX}: ready on http://{url_host}:{port} ({service.describe()})", flush=True)

        stop.wait()
        # From here on the process only winds down, and a repeated signal must not kill it
        # midway: Python restores the default handlers while exiting, which takes paddle ~1 s.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        log(f"{PREFIX}: stopping")
        server.shutdown()
        if not server.wait_idle(DRAIN_SECONDS):
            log(f"{PREFIX}: requests still running after {DRAIN_SECONDS:.0f}s; exiting anyway")
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
