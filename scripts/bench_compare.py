#!/usr/bin/env python3
"""Benchmark PaddleCloud next to TensorBoard and MLflow, side by side in one run.

Run (from anywhere; the first run needs PyPI to build the venv):

    python3 scripts/bench_compare.py --install          # create venv, then run every part
    python3 scripts/bench_compare.py --binary target/release/paddlecloud --site target/site
    python3 scripts/bench_compare.py --only tensorboard --points 200000
    python3 scripts/bench_compare.py --only mlflow --keep
    python3 scripts/bench_compare.py --only paddlecloud --binary PATH --site PATH
    python3 scripts/bench_compare.py --only paddlecloud --pc-parts jobs   # the job table's ratios

The script re-executes itself inside ~/.cache/paddlecloud/pyvenv-compare
(created with --install: pip install of the pinned versions below, which are the
versions this script was written and run against).  Stdlib + those packages only.
Every server it starts runs in its own process group and is killed by that PID
on exit, error or Ctrl-C.  All traffic goes to 127.0.0.1; MLflow telemetry is off.

Data (seeded, identical for every tool):
  A: one series "loss", steps 0..N-1 (N = --points, default 1,000,000), a noisy
     decaying curve with one spike (100x the level) at step 654321.
  B: 100 series of 100,000 points = 10M points.  Writing 10M points through
     tensorboardX or MLflow's REST API takes tens of minutes on 2 cores, so B is
     run as a subset (--b-series x --b-points, default 100 x 10,000 for TensorBoard,
     100 x --b-mlflow-points for MLflow); the table prints an extrapolation to full B.

What is measured:
  TensorBoard: writing A with tensorboardX; a real `tensorboard` server per
    (loader, sampling) pair: --load_fast=auto (Rust data server, works offline) and
    --load_fast=false (Python loader), each with default sampling (1,000 points via
    reservoir sampling) and --samples_per_plugin scalars=0 (all points).  Load time =
    launch until /data/plugin/scalars/scalars?tag=loss&run=. returns the complete
    series; then p50 latency of that GET (the legacy Scalars dashboard's route) and of
    POST /data/plugin/timeseries/timeSeries (the default Time Series dashboard's route),
    point count, and whether the spike at step 654321 is in the answer.
  MLflow: `mlflow server` with a SQLite store in a temp dir; MlflowClient().log_batch of
    100,000 points of A (steps 600,000..699,999, which hold the spike), 1,000 per call;
    get_metric_history p50 of 3; REST get-history; the UI chart route
    get-history-bulk-interval (max_results=320, the UI default) and whether it keeps the spike.
    Then ingestion as PaddleCloud's is measured: REST runs/log-batch (1,000 points a call,
    MLflow's maximum) with --writers concurrent writers and with one, each writer its own
    run, bodies encoded before the clock starts; points count only for 2xx answers.
  PaddleCloud (--binary, --site: the release build and its site files), `paddlecloud serve`
    on a fresh SQLite data dir (accounts and access keys by `paddlecloud admin`):
    a. ingestion: POST /api/v1/jobs/{name}/metrics (10,000 points a call, one transaction,
       durable when answered) by --writers concurrent writers, each its own job (a local
       run), and by one; points count only for 2xx answers, then read back and counted.
    b. data set A written the same way, then the p50 of the series fetch, the REST envelope
       GET /api/v1/jobs/{name}/metrics/loss?width=640 (JSON, as TensorBoard's scalars
       fetch is): the spike (max) and the minimum of A must be in it. Also the p50 of
       GET /paddleboard?job=..&tags=^loss$, the page PaddleBoard's chart is drawn in and
       that its live region fetches again (the envelope plotted to SVG on the server, with
       the points it drew in `data-pointer`, where the spike and minimum are checked too).
    c. the job table, as ratios taken in the same rounds: 10,000 jobs recorded through
       POST /api/v1/local-runs (+ .../end, no process runs), then, each by --clients
       clients for --seconds, one after the other in each of --rounds rounds:
       - the server-rendered GET /jobs;
       - MLflow (with the venv): the same 10,000 runs (name, params, outcome) logged by its
         own SqlAlchemyStore into SQLite (on tmpfs, cached under ~/.cache/paddlecloud: see
         mlflow_job_runs), `mlflow server` on it, and the call its UI makes to draw the
         experiment's runs table: POST /ajax-api/2.0/mlflow/runs/search, max_results 100,
         start_time DESC;
       - the ceiling: the bytes of that /jobs page, served by the same server process as a
         static file of its site root (a copy of --site), from the page cache.
       Each prints pages/s, p50 and the CPU a page of the server (its process group, /proc)
       and of the clients; the targets are the ratios PaddleCloud/MLflow (>= 10x) and
       PaddleCloud/ceiling (>= 0.5), the median of the rounds'.  GET /healthz is loaded once
       for information.  (--job-list-bench PATH also runs the built `cargo bench --bench
       job_list` executable and prints its lines, for information.)
    d. hydration: end2end/bench/hydration.mjs (Playwright + Debian's chromium) opens /jobs
       of the signed-in user --hydration-runs times: load event -> data-hydrated on <html>.
  The final "targets" table puts each PaddleCloud number next to its reference with the
  measured ratio and PASS/FAIL.
"""
import argparse, html, json, math, multiprocessing, os, random, re, shutil, signal
import socket, statistics, subprocess, sys, tempfile, time, urllib.error, urllib.parse
import urllib.request
from http import client as httpclient  # `http` is the helper below

VENV = os.path.expanduser("~/.cache/paddlecloud/pyvenv-compare")
PINS = ["tensorboard==2.21.0", "tensorboardX==2.6.5", "mlflow==3.17.2"]
SPIKE_STEP, SEED, WALL0 = 654321, 20240601, 1.7e9
ROWS = []      # (section, name, value) for the final table
RES = {}       # numbers the "targets" table compares
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVERS = []   # Popen objects still to kill
URL_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never use a proxy


def row(section, name, value):
    ROWS.append((section, name, value))
    print(f"  [{section}] {name}: {value}", flush=True)


# ----------------------------------------------------------------------------- venv
def ensure_venv(args, argv):
    vpy = os.path.join(VENV, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    if args.install:
        if not os.path.exists(vpy):
            subprocess.check_call([sys.executable, "-m", "venv", VENV])
        subprocess.check_call([vpy, "-m", "pip", "install", "-q", "--upgrade", "pip"])
        subprocess.check_call([vpy, "-m", "pip", "install", "-q", *PINS])
    elif not os.path.exists(vpy):
        if args.only == "paddlecloud":  # the PaddleCloud part needs the standard library only
            return
        sys.exit(f"no venv at {VENV}: run once with --install")
    argv = [a for a in argv if a != "--install"]
    os.execv(vpy, [vpy, os.path.abspath(__file__), *argv])


# ----------------------------------------------------------------------------- data
def series_a(n):
    """Data set A: noisy decaying loss, one spike of 100x the level at SPIKE_STEP."""
    rng = random.Random(SEED)
    out = []
    for step in range(n):
        level = 0.1 + 2.0 * math.exp(-step / 200_000)
        out.append(level * (1 + 0.05 * rng.gauss(0, 1)))
    if n > SPIKE_STEP:
        out[SPIKE_STEP] = 100 * (0.1 + 2.0 * math.exp(-SPIKE_STEP / 200_000))
    return out


_EXTREMES = {}


def a_extremes(n):
    """(min, max) of data set A with n points (computed once per n)."""
    if n not in _EXTREMES:
        a = series_a(n)
        _EXTREMES[n] = (min(a), max(a))
    return _EXTREMES[n]


def series_b(i, n):
    rng = random.Random(SEED + 1 + i)
    return [(0.5 + i / 100) * math.exp(-s / (n / 3)) + 0.01 * rng.random() for s in range(n)]


# ----------------------------------------------------------------------------- helpers
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(argv, log_path, env=None):
    log = open(log_path, "ab")
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         env=env, start_new_session=True)  # own group: pgid == p.pid
    SERVERS.append(p)
    return p


def stop_server(p):
    if p in SERVERS:
        SERVERS.remove(p)
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(p.pid, sig)  # the group we created (e.g. TensorBoard + its data server)
        except ProcessLookupError:
            return
        try:
            p.wait(wait)
            os.killpg(p.pid, signal.SIGKILL)  # leftover children of the group, if any
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def http(url, data=None, headers=None, timeout=600):
    if isinstance(data, dict):
        data = urllib.parse.urlencode(data).encode()
    req = urllib.request.Request(url, data=data, headers=headers or {})
    t = time.perf_counter()
    with URL_OPENER.open(req, timeout=timeout) as r:
        body = r.read()
    return time.perf_counter() - t, body


def wait_http(url, proc, timeout=180):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} (see its log)")
        try:
            http(url, timeout=5)
            return
        except Exception:
            time.sleep(0.2)
    raise TimeoutError(url)


def p50(fn, n):
    return statistics.median(fn() for _ in range(n))


def ms(s):
    return f"{s * 1000:.1f} ms"


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round((len(xs) - 1) * p))] if xs else float("nan")


# Concurrent HTTP clients: one process each (no GIL between them), one keep-alive
# connection each.  A plan is a list of requests (method, path, body, headers, weight);
# requests are encoded before the clock starts.  Set before forking: the children read it.
#
# The clients share the machine with the server they measure, so they are kept lean:
# each request is sent as prepared bytes and its answer read with a minimal HTTP/1.1
# reader.  http.client took ~270 us of CPU a request (its header parsing), which on 2
# cores was a quarter of the machine at 2,000 pages/s; this reader takes 70-180 us.
_PLANS = []


def _encode_request(port, method, path, body, headers):
    head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    if body is not None or method in ("POST", "PUT", "PATCH"):
        head.append(f"Content-Length: {len(body or b'')}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + (body or b"")


class _Conn:
    """One keep-alive HTTP/1.1 connection: `exchange(request bytes)` -> (status, body)."""

    def __init__(self, port):
        self.port, self.sock, self.buf = port, None, b""

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock, self.buf = None, b""

    def _fill(self):
        data = self.sock.recv(262144)
        if not data:
            raise ConnectionError("connection closed mid-answer")
        self.buf += data

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _line(self):
        while (i := self.buf.find(b"\r\n")) < 0:
            self._fill()
        out, self.buf = self.buf[:i], self.buf[i + 2:]
        return out

    def exchange(self, request):
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=600)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(request)
        while True:
            status = int(self._line().split(b" ", 2)[1])
            headers = {}
            while line := self._line():
                k, _, v = line.partition(b":")
                headers[k.strip().lower()] = v.strip().lower()
            if status >= 200 or status == 101:
                break  # 1xx interim answers carry no body; the real one follows
        close = headers.get(b"connection") == b"close"
        if status in (204, 304):
            body = b""
        elif b"content-length" in headers:
            body = self._take(int(headers[b"content-length"]))
        elif b"chunked" in headers.get(b"transfer-encoding", b""):
            parts = []
            while size := int(self._line().split(b";")[0], 16):
                parts.append(self._take(size))
                self._take(2)
            while self._line():  # trailers, then the empty line
                pass
            body = b"".join(parts)
        else:  # delimited by the end of the connection
            try:
                while True:
                    self._fill()
            except ConnectionError:
                body, self.buf, close = self.buf, b"", True
        if close:
            self.close()
        return status, body


def _client(i, port, start, duration, q):
    conn = _Conn(port)
    ok_weight = ok = 0
    errors, lat = {}, []
    plan = [(_encode_request(port, m, p, b, h), w) for m, p, b, h, w in _PLANS[i]]
    start.wait()
    t_end = time.perf_counter() + duration if duration else None
    while True:
        for request, weight in plan:
            t = time.perf_counter()
            try:
                status, _ = conn.exchange(request)
            except (OSError, ValueError, IndexError) as e:
                status = type(e).__name__
                conn.close()
            if isinstance(status, int) and 200 <= status < 300:
                ok_weight += weight
                ok += 1
                lat.append(time.perf_counter() - t)
            else:
                errors[str(status)] = errors.get(str(status), 0) + 1
            if t_end and time.perf_counter() >= t_end:
                break
        if not t_end or time.perf_counter() >= t_end:
            break
    q.put((ok_weight, ok, errors, lat, time.perf_counter()))


def load_clients(port, plans, duration=None):
    """Run one client process per plan at once.  Without `duration` each sends its plan
    once; with it, repeats its plan until `duration` seconds have passed.  Returns wall
    seconds (start to the last client's end), 2xx weight and count, errors by status, the
    latencies of the 2xx answers and the CPU seconds the clients used."""
    global _PLANS
    _PLANS = plans
    ctx = multiprocessing.get_context("fork")
    start, q = ctx.Event(), ctx.Queue()
    t_cpu = os.times()
    procs = [ctx.Process(target=_client, args=(i, port, start, duration, q), daemon=True)
             for i in range(len(plans))]
    try:
        for pr in procs:
            pr.start()
        time.sleep(0.2)
        t0 = time.perf_counter()
        start.set()
        got = [q.get(timeout=3600) for _ in procs]
        for pr in procs:
            pr.join()
    finally:
        _PLANS = []
        for pr in procs:
            if pr.is_alive():
                pr.kill()
    errors = {}
    for _, _, e, _, _ in got:
        for k, v in e.items():
            errors[k] = errors.get(k, 0) + v
    t_end = os.times()  # the clients are joined: their CPU time is counted
    client_cpu = (t_end.children_user + t_end.children_system
                  - t_cpu.children_user - t_cpu.children_system)
    return dict(wall=max(g[4] for g in got) - t0, weight=sum(g[0] for g in got),
                ok=sum(g[1] for g in got), errors=errors, lat=[x for g in got for x in g[3]],
                client_cpu=client_cpu)


def process_cpu(pid):
    """CPU seconds (user + system) process `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def errs(r):
    return ", ".join(f"{v} x {k}" for k, v in sorted(r["errors"].items())) or "none"


# ----------------------------------------------------------------------------- TensorBoard
def write_events(logdir, series):
    """series: dict tag -> list of values; written step-interleaved like a training loop."""
    from tensorboardX import SummaryWriter
    w = SummaryWriter(logdir, flush_secs=30, max_queue=10000)
    n = max(len(v) for v in series.values())
    t = time.perf_counter()
    for step in range(n):
        for tag, vals in series.items():
            w.add_scalar(tag, vals[step], step, walltime=WALL0 + step * 0.01)
    w.close()
    return time.perf_counter() - t


def tb_run(args, tmp, logdir, loader, samples, tags, n, label, settle=None):
    """Start tensorboard (samples: None = default sampling, else --samples_per_plugin
    scalars=<samples>), wait until `tags` are fully loaded, time the chart queries.
    With `settle` (seconds) only wait that long and report how many points come back."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [os.path.join(VENV, "bin", "tensorboard"), "--logdir", logdir, "--host", "127.0.0.1",
            "--port", str(port), f"--load_fast={loader}", "--reload_interval", "5"]
    if samples is not None:
        argv += ["--samples_per_plugin", f"scalars={samples}"]
    expect = min(1000 if samples is None else samples, n)
    sec = f"TB {label} load_fast={loader} " + ("default" if samples is None else f"scalars={samples}")
    t0 = time.perf_counter()
    p = start_server(argv, os.path.join(tmp, "tensorboard.log"))
    try:
        wait_http(base + "/data/plugins_listing", p)
        up = time.perf_counter() - t0
        q = lambda tag: f"{base}/data/plugin/scalars/scalars?" + urllib.parse.urlencode(
            {"tag": tag, "run": "."})
        if settle is not None:
            time.sleep(max(0.0, settle - (time.perf_counter() - t0)))
            pts = json.loads(http(q(tags[0]))[1])
            row(sec, f"points returned {settle:.0f} s after launch (2x default load + 5 s)", len(pts))
            return
        deadline = time.time() + args.tb_timeout
        for tag in tags:  # poll until each series is complete (last step present, full count)
            while True:
                try:
                    pts = json.loads(http(q(tag))[1])
                except urllib.error.HTTPError:  # 400/404 until the tag is loaded
                    pts = []
                if pts and pts[-1][1] == n - 1 and len(pts) == expect:
                    break
                if time.time() > deadline:
                    raise TimeoutError(f"{sec}: {tag} has {len(pts)} points after {args.tb_timeout}s")
                time.sleep(0.25)
        loaded = time.perf_counter() - t0
        row(sec, "server up (first HTTP 200)", f"{up:.1f} s")
        row(sec, "fully loaded (launch -> complete series)", f"{loaded:.1f} s")
        result = loaded
        if loader == "auto":
            kids = subprocess.run(["ps", "-o", "args=", "--ppid", str(p.pid)],
                                  capture_output=True, text=True).stdout
            row(sec, "Rust data server child running", "yes" if "data_server" in kids else "NO")
        reqs = args.requests if expect <= 1000 else args.requests_all
        if len(tags) == 1:
            tag = tags[0]
            pts = json.loads(http(q(tag))[1])
            size = len(http(q(tag))[1])
            scalars_p50 = p50(lambda: http(q(tag))[0], reqs)
            row(sec, f"GET scalars/scalars p50 of {reqs}", ms(scalars_p50))
            ts_body = {"requests": json.dumps([{"plugin": "scalars", "tag": tag, "run": "."}])}
            ts = lambda: http(base + "/data/plugin/timeseries/timeSeries", ts_body)
            ts_pts = json.loads(ts()[1])[0]["runToSeries"]["."]
            row(sec, f"POST timeseries/timeSeries p50 of {reqs}", ms(p50(lambda: ts()[0], reqs)))
            row(sec, "points returned (scalars / timeSeries)", f"{len(pts)} / {len(ts_pts)}, "
                f"{size / 1e6:.2f} MB JSON")
            spike = any(s == SPIKE_STEP for _, s, _ in pts)
            row(sec, f"spike step {SPIKE_STEP} in answer",
                ("yes" if spike else "NO") + ("" if n > SPIKE_STEP else " (not in data: N too small)"))
            row(sec, "max value returned", f"{max(v for _, _, v in pts):.4g}")
            RES.setdefault("tb_scalars", []).append(dict(
                loader=loader, samples=samples, p50=scalars_p50, points=len(pts), n=n,
                spike=spike,  # values come back as float32
                min_kept=math.isclose(min(v for _, _, v in pts), a_extremes(n)[0], rel_tol=1e-6)))
        else:  # data set B subset: a dashboard with one chart per tag
            every = lambda: sum(http(q(t))[0] for t in tags)
            row(sec, f"GET scalars for all {len(tags)} tags, p50 of 5", ms(p50(every, 5)))
            row(sec, "GET scalars for one tag, p50 of 20", ms(p50(lambda: http(q(tags[0]))[0], 20)))
        return result
    finally:
        stop_server(p)


def bench_tensorboard(args, tmp):
    import tensorboard, tensorboardX
    row("versions", "tensorboard / tensorboardX", f"{tensorboard.__version__} / {tensorboardX.__version__}")
    n = args.points
    t = time.perf_counter()
    vals = series_a(n)
    logdir = os.path.join(tmp, "tb_A")
    wt = write_events(logdir, {"loss": vals})
    row("TB write A", f"tensorboardX add_scalar of {n:,} points", f"{wt:.1f} s ({n / wt:,.0f} pts/s)")
    row("TB write A", "event file size",
        f"{sum(os.path.getsize(os.path.join(logdir, f)) for f in os.listdir(logdir)) / 1e6:.1f} MB")
    del vals
    for i, loader in enumerate(args.tb_loaders.split(",")):
        loaded = tb_run(args, tmp, logdir, loader, None, ["loss"], n, "A")
        if i == 0:  # the documented "all points" value: the plugins then ask for 0 points
            tb_run(args, tmp, logdir, loader, 0, ["loss"], n, "A", settle=2 * loaded + 5)
        tb_run(args, tmp, logdir, loader, n, ["loss"], n, "A")  # a count >= N keeps every point
    if args.b_series and args.b_points:
        nb, ns = args.b_points, args.b_series
        logdir_b = os.path.join(tmp, "tb_B")
        wt = write_events(logdir_b, {f"s{i:03d}": series_b(i, nb) for i in range(ns)})
        row("TB write B-subset", f"{ns} x {nb:,} points", f"{wt:.1f} s ({ns * nb / wt:,.0f} pts/s)")
        row("TB write B-subset", "extrapolated write of full B (10M)", f"{10e6 / (ns * nb / wt) / 60:.0f} min")
        tb_run(args, tmp, logdir_b, "auto", None, [f"s{i:03d}" for i in range(ns)], nb, "B-subset")
    row("TB", "part wall time", f"{time.perf_counter() - t:.0f} s")


# ----------------------------------------------------------------------------- MLflow
def start_mlflow(args, tmp, db, section):
    """`mlflow server` on the SQLite database `db` (created if absent), up and answering:
    (process, port, base URL).  Telemetry off; the client library is pointed at it."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="true",
               MLFLOW_TRACKING_URI=base, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    os.environ.update(env)
    argv = [os.path.join(VENV, "bin", "mlflow"), "server",
            "--backend-store-uri", f"sqlite:///{db}",
            "--default-artifact-root", os.path.join(tmp, "mlartifacts"),
            "--host", "127.0.0.1", "--port", str(port), "--workers", str(args.mlflow_workers)]
    t0 = time.perf_counter()
    p = start_server(argv, os.path.join(tmp, "mlflow.log"), env)
    try:
        wait_http(base + "/health", p)
    except BaseException:
        stop_server(p)
        raise
    row(section, f"server up (sqlite, {args.mlflow_workers} workers)", f"{time.perf_counter() - t0:.1f} s")
    return p, port, base


def bench_mlflow(args, tmp):
    import mlflow
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient
    row("versions", "mlflow", mlflow.__version__)
    t_part = time.perf_counter()
    p, port, base = start_mlflow(args, tmp, os.path.join(tmp, "mlflow.db"), "MLflow")
    try:
        client = MlflowClient(tracking_uri=base)
        exp = client.create_experiment("bench")
        # (a) ingestion: a 100k-step window of A that holds the spike
        a = series_a(max(args.points, SPIKE_STEP + 1))
        start = max(0, SPIKE_STEP - args.mlflow_points * 54321 // 100_000)
        steps = range(start, min(len(a), start + args.mlflow_points))
        run = client.create_run(exp).info.run_id
        ts0 = int(WALL0 * 1000)
        t = time.perf_counter()
        for i in range(0, len(steps), 1000):
            client.log_batch(run, metrics=[Metric("loss", a[s], ts0 + s * 10, s) for s in steps[i:i + 1000]])
        dt = time.perf_counter() - t
        sec = f"MLflow A[{steps[0]}..{steps[-1]}]"
        row(sec, f"log_batch {len(steps):,} points (1,000/call)", f"{dt:.1f} s ({len(steps) / dt:,.0f} pts/s)")
        # (b) client get_metric_history (paginates 25,000 per request)
        hist = client.get_metric_history(run, "loss")
        row(sec, "get_metric_history points", f"{len(hist):,}")
        row(sec, "get_metric_history p50 of 3", f"{p50(lambda: timed(client.get_metric_history, run, 'loss'), 3):.2f} s")
        # (c) REST directly: full history in one response, and the UI chart route
        u = f"{base}/api/2.0/mlflow/metrics/get-history?" + urllib.parse.urlencode(
            {"run_id": run, "metric_key": "loss"})
        body = http(u)[1]
        row(sec, "REST get-history (1 request) p50 of 3",
            f"{p50(lambda: http(u)[0], 3):.2f} s, {len(json.loads(body)['metrics']):,} points, {len(body) / 1e6:.1f} MB")
        ui = f"{base}/ajax-api/2.0/mlflow/metrics/get-history-bulk-interval?" + urllib.parse.urlencode(
            {"run_ids": run, "metric_key": "loss", "max_results": 320})
        pts = json.loads(http(ui)[1])["metrics"]
        row(sec, "UI chart route bulk-interval(320) p50 of 20", ms(p50(lambda: http(ui)[0], 20)))
        row(sec, f"bulk-interval points; spike step {SPIKE_STEP} kept",
            f"{len(pts)}; {'yes' if any(int(m['step']) == SPIKE_STEP for m in pts) else 'NO'}")
        # data set B subset: many metrics in one run, interleaved by step
        if args.b_series and args.b_mlflow_points:
            nb, ns = args.b_mlflow_points, args.b_series
            run_b = client.create_run(exp).info.run_id
            b = [series_b(i, nb) for i in range(ns)]
            batch, t = [], time.perf_counter()
            for s in range(nb):
                for i in range(ns):
                    batch.append(Metric(f"s{i:03d}", b[i][s], ts0 + s * 10, s))
                    if len(batch) == 1000:
                        client.log_batch(run_b, metrics=batch)
                        batch = []
            if batch:
                client.log_batch(run_b, metrics=batch)
            dt = time.perf_counter() - t
            sec = f"MLflow B-subset {ns} x {nb:,}"
            row(sec, "log_batch (1,000/call)", f"{dt:.1f} s ({ns * nb / dt:,.0f} pts/s)")
            row(sec, "extrapolated ingestion of full B (10M)", f"{10e6 / (ns * nb / dt) / 60:.0f} min")
            uis = [f"{base}/ajax-api/2.0/mlflow/metrics/get-history-bulk-interval?" + urllib.parse.urlencode(
                {"run_ids": run_b, "metric_key": f"s{i:03d}", "max_results": 320}) for i in range(ns)]
            row(sec, f"UI charts for all {ns} metrics, p50 of 3", ms(p50(lambda: sum(http(x)[0] for x in uis), 3)))
        # ingestion as PaddleCloud's is measured: concurrent writers, pre-encoded bodies
        if args.mlflow_ingest_points:
            for writers in sorted({args.writers, 1}, reverse=True):
                RES[f"ml_ingest_{'n' if writers == args.writers else '1'}"] = mlflow_ingest(
                    args, client, exp, port, writers, series_a(args.mlflow_ingest_points))
    finally:
        stop_server(p)
    row("MLflow", "part wall time", f"{time.perf_counter() - t_part:.0f} s")


def mlflow_ingest(args, client, exp, port, writers, vals):
    """REST runs/log-batch of `vals` split over `writers` concurrent writers, each its own
    run, 1,000 points a call (MLflow's limit); points/s of the 2xx answers."""
    per = len(vals) // writers
    plans, runs = [], []
    hdr = {"Content-Type": "application/json"}
    for w in range(writers):
        run = client.create_run(exp, run_name=f"ingest-{writers}-{w}").info.run_id
        runs.append(run)
        plan = []
        for i in range(0, per, 1000):
            steps = range(i, min(per, i + 1000))
            body = json.dumps({"run_id": run, "metrics": [
                {"key": "loss", "value": vals[w * per + s], "timestamp": int((WALL0 + s * 0.01) * 1000),
                 "step": s} for s in steps]}).encode()
            plan.append(("POST", "/api/2.0/mlflow/runs/log-batch", body, hdr, len(steps)))
        plans.append(plan)
    r = load_clients(port, plans)
    rate = r["weight"] / r["wall"]
    sec = f"MLflow ingest, {writers} writer{'s' if writers > 1 else ''}"
    row(sec, f"REST log-batch {writers} x {per:,} points (1,000/call), 2xx only",
        f"{r['wall']:.1f} s, {rate:,.0f} pts/s, p50 call {ms(pct(r['lat'], 0.5))}, errors: {errs(r)}")
    stored = sum(len(client.get_metric_history(run, "loss")) for run in runs)
    row(sec, "points read back (get_metric_history)", f"{stored:,} of {writers * per:,}")
    return dict(rate=rate, writers=writers, points=writers * per, ok_points=r["weight"], errors=r["errors"])


def timed(fn, *a):
    t = time.perf_counter()
    fn(*a)
    return time.perf_counter() - t


# ----------------------------------------------------------------------------- PaddleCloud
PC_PASSWORD = "a long bench password"


def api(port, method, path, body=None, key=None, cookie=None, headers=None):
    """One request on a fresh connection: (status, headers, body bytes)."""
    h = dict(headers or {})
    if key:
        h["Authorization"] = f"Bearer {key}"
    if cookie:
        h["Cookie"] = cookie
    if isinstance(body, (dict, list)):
        body, h["Content-Type"] = json.dumps(body).encode(), "application/json"
    conn = httpclient.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        return r.status, r.headers, r.read()
    finally:
        conn.close()


def api_ok(port, method, path, body=None, key=None, cookie=None, headers=None):
    status, hdrs, data = api(port, method, path, body, key, cookie, headers)
    if not 200 <= status < 300:
        raise RuntimeError(f"{method} {path} answered {status}: {data[:300]!r}")
    return hdrs, data


def start_local_run(port, key, name):
    api_ok(port, "POST", "/api/v1/local-runs", {"client_id": f"bench-{name}", "name": name}, key=key)


def metric_plan(name, key, vals, steps0=0, batch=10_000):
    """POSTs of `vals` as tag loss of job `name`, `batch` points a call."""
    hdr = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    plan = []
    for i in range(0, len(vals), batch):
        pts = [{"tag": "loss", "step": steps0 + s, "value": vals[s], "wall_time": WALL0 + (steps0 + s) * 0.01}
               for s in range(i, min(len(vals), i + batch))]
        plan.append(("POST", f"/api/v1/jobs/{name}/metrics", json.dumps(pts).encode(), hdr, len(pts)))
    return plan


def stored_points(port, key, name):
    tags = json.loads(api_ok(port, "GET", f"/api/v1/jobs/{name}/metrics", key=key)[1])
    return sum(t["points"] for t in tags)


def sign_in(port, account, email):
    body = urllib.parse.urlencode({"account": account, "email": email, "password": PC_PASSWORD}).encode()
    status, hdrs, data = api(port, "POST", "/api/sign_in", body,
                             headers={"Content-Type": "application/x-www-form-urlencoded"})
    for c in hdrs.get_all("Set-Cookie") or []:
        if c.startswith("pc_session=") and not c.startswith("pc_session=;"):
            return c.split(";", 1)[0]
    raise RuntimeError(f"sign-in answered {status} without a session cookie: {data[:200]!r}")


def pc_ingest(args, port, key):
    vals = series_a(args.pc_ingest_points)
    for writers in sorted({args.writers, 1}, reverse=True):
        per = len(vals) // writers
        names = [f"ingest-{writers}-{w}" for w in range(writers)]
        for n in names:
            start_local_run(port, key, n)
        plans = [metric_plan(n, key, vals[w * per:(w + 1) * per]) for w, n in enumerate(names)]
        r = load_clients(port, plans)
        rate = r["weight"] / r["wall"]
        stored = sum(stored_points(port, key, n) for n in names)
        sec = f"PaddleCloud ingest, {writers} writer{'s' if writers > 1 else ''}"
        row(sec, f"REST metrics {writers} x {per:,} points (10,000/call), 2xx only",
            f"{r['wall']:.1f} s, {rate:,.0f} pts/s, p50 call {ms(pct(r['lat'], 0.5))}, errors: {errs(r)}")
        row(sec, "points read back (GET .../metrics)", f"{stored:,} of {writers * per:,}")
        RES[f"pc_ingest_{'n' if writers == args.writers else '1'}"] = dict(
            rate=rate, writers=writers, points=writers * per, stored=stored, errors=r["errors"])


def pointer_series(page):
    """The series PaddleBoard drew, from the chart's `data-pointer` (what the pointer reads)."""
    m = re.search(r'data-pointer="([^"]*)"', page)
    if not m:
        raise RuntimeError("no data-pointer in the PaddleBoard page")
    return json.loads(html.unescape(m.group(1)))["series"][0]


def pc_series(args, port, key, cookie):
    n = args.points
    vals = series_a(n)
    lo, hi = a_extremes(n)
    job = "series-a"
    start_local_run(port, key, job)
    r = load_clients(port, [metric_plan(job, key, vals)])
    sec = f"PaddleCloud A ({n:,} points)"
    row(sec, "write A, 1 writer, REST 10,000/call",
        f"{r['wall']:.1f} s ({r['weight'] / r['wall']:,.0f} pts/s), errors: {errs(r)}")
    del vals
    page = "/paddleboard?" + urllib.parse.urlencode({"job": job, "tags": "^loss$"})
    hdr = {"Cookie": cookie, "Accept": "text/html"}
    t = time.perf_counter()
    body = api_ok(port, "GET", page, cookie=cookie, headers={"Accept": "text/html"})[1].decode()
    row(sec, "first GET /paddleboard after writing", ms(time.perf_counter() - t))
    ser = pointer_series(body)
    values = [v for v in ser["values"] if isinstance(v, (int, float))]
    spike = max(values) == hi and (SPIKE_STEP in ser["steps"] or n <= SPIKE_STEP)
    kept_min = min(values) == lo
    reqs = args.requests
    rr = load_clients(port, [[("GET", page, None, hdr, 1)] * reqs])
    fetch = pct(rr["lat"], 0.5)
    row(sec, f"GET /paddleboard (the chart's page) p50 of {reqs}",
        f"{ms(fetch)} (p90 {ms(pct(rr['lat'], 0.9))}), {len(body) / 1e3:.0f} KB HTML, errors: {errs(rr)}")
    row(sec, "points drawn (envelope) / total",
        f"{len(ser['values']):,} / {ser['total']:,}, full resolution: {ser['full_resolution']}")
    row(sec, f"spike (max {hi:.4g} at step {SPIKE_STEP}) kept; min {lo:.4g} kept",
        f"{'yes' if spike else 'NO'}; {'yes' if kept_min else 'NO'}")
    rest = f"/api/v1/jobs/{job}/metrics/loss?width=640"
    env = json.loads(api_ok(port, "GET", rest, key=key)[1])
    rr = load_clients(port, [[("GET", rest, None, {"Authorization": f"Bearer {key}"}, 1)] * reqs])
    rest_ok = env["max"] == hi and env["min"] == lo and (n <= SPIKE_STEP or any(p["step"] == SPIKE_STEP for p in env["points"]))
    row(sec, f"REST GET {rest.split('?')[0].replace(job, '{job}')}?width=640 p50 of {reqs}",
        f"{ms(pct(rr['lat'], 0.5))}, {len(env['points'])} points, spike and min kept: {'yes' if rest_ok else 'NO'}")
    RES["pc_fetch"] = dict(p50=fetch, spike=spike, min=kept_min, n=n, rest_p50=pct(rr["lat"], 0.5),
                           rest_ok=rest_ok)


# The job table is measured as ratios taken in the same minutes, not as an absolute
# rate: the same binary reads 2,562 pages/s on one VM and 1,240 on another, but what it
# does against MLflow, and against the same server sending bytes it already has, is the
# VM's to slow down for all three alike.
JOB_OUTCOMES = ["succeeded", "failed", "stopped", "succeeded", "succeeded"]
MLFLOW_STATUS = {"succeeded": "FINISHED", "failed": "FAILED", "stopped": "KILLED"}
# What MLflow's UI asks for to draw an experiment's runs table (read from mlflow 3.17.2's
# bundle, server/js/build: searchRuns with `maxResults: a || 100` (its SEARCH_MAX_RESULTS),
# run_view_type ACTIVE_ONLY, ordered by the default sort key, start_time, descending, no filter).
MLFLOW_UI_RUNS_PAGE = 100
MLFLOW_UI_ORDER_BY = ["attributes.start_time DESC"]
# Bump when mlflow_job_runs writes different runs: the cached database is keyed by it.
MLFLOW_RUNS_FORMAT = 1
CEILING_PATH = "/bench-ceiling/jobs.html"  # under the site root copy bench_paddlecloud makes


def group_cpu(pgid):
    """CPU seconds used so far by the live processes of group `pgid` (a server and its
    workers: MLflow's are child processes, which /proc/<pid>/stat does not count)."""
    total = 0.0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(") ", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def mlflow_job_runs(args, tmp, sec):
    """A SQLite database with experiment "jobs" holding args.jobs finished runs that
    match PaddleCloud's jobs (name, params lr and epochs, outcome, start and end time),
    written by MLflow's own tracking store, one run at a time as a client would log it:
    create_run, log_batch of the params, update_run_info with the status.  Returns its path.

    The store commits three times a run; on this VM's disk a commit waits ~9 ms, so the
    database is written on tmpfs (/dev/shm) and then copied, at ~22 runs/s on a busy
    2-core VM (MLflow's CPU).  10,000 runs take 7.5 minutes, so the result is kept under
    ~/.cache/paddlecloud keyed by MLflow's version, the run count and MLFLOW_RUNS_FORMAT,
    and copied from there on later runs.  Every row in it was written by MLflow's code;
    none is made by hand."""
    import mlflow
    from mlflow.entities import Param, RunStatus
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    db = os.path.join(tmp, "mlflow-jobs.db")
    cache = os.path.join(os.path.dirname(VENV),
                         f"bench-mlflow-runs-{mlflow.__version__}-{args.jobs}-v{MLFLOW_RUNS_FORMAT}.db")
    if os.path.exists(cache):
        shutil.copyfile(cache, db)
        row(sec, f"{args.jobs:,} runs logged by MLflow's store", f"from the cache of a previous run ({cache})")
        return db
    scratch = tempfile.mkdtemp(prefix="bench_mlflow_", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else tmp)
    try:
        path = os.path.join(scratch, "runs.db")
        store = SqlAlchemyStore(f"sqlite:///{path}", os.path.join(tmp, "mlartifacts"))
        exp = store.create_experiment("jobs")
        t = time.perf_counter()
        for i in range(args.jobs):
            out = JOB_OUTCOMES[i % len(JOB_OUTCOMES)]
            start = int(WALL0 * 1000) + i * 60_000  # a minute apart, the newest last, like the jobs
            run = store.create_run(exp, user_id="bench", start_time=start, tags=[], run_name=f"resnet-{i:05d}")
            store.log_batch(run.info.run_id, metrics=[], tags=[],
                            params=[Param("lr", "0.1"), Param("epochs", str(i % 10))])
            store.update_run_info(run.info.run_id, RunStatus.from_string(MLFLOW_STATUS[out]), start + 30_000, None)
        dt = time.perf_counter() - t
        store.engine.dispose()
        row(sec, f"log {args.jobs:,} runs with MLflow's SqlAlchemyStore (create_run, log_batch, "
                 "update_run_info), SQLite on tmpfs", f"{dt:.0f} s ({args.jobs / dt:,.0f} runs/s)")
        shutil.copyfile(path, db)
        shutil.copyfile(path, cache + ".part")
        os.replace(cache + ".part", cache)  # whole or absent
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return db


def measure(port, request, pgid, clients, seconds):
    """`clients` clients sending `request` for `seconds`: pages/s of the 2xx answers, their
    p50, and the CPU a page of the server's process group and of the clients."""
    cpu0 = group_cpu(pgid)
    m = load_clients(port, [[request]] * clients, duration=seconds)
    ok = max(m["ok"], 1)
    m.update(rate=m["ok"] / m["wall"], p50=pct(m["lat"], 0.5), p90=pct(m["lat"], 0.9),
             server_us=(group_cpu(pgid) - cpu0) / ok * 1e6, client_us=m["client_cpu"] / ok * 1e6)
    return m


def pc_jobs(args, tmp, port, key, cookie, server_pid, site_root):
    hdr = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    seeders = 4
    plans = [[] for _ in range(seeders)]
    for i in range(args.jobs):
        name = f"resnet-{i:05d}"
        out = JOB_OUTCOMES[i % len(JOB_OUTCOMES)]
        plans[i % seeders] += [
            ("POST", "/api/v1/local-runs", json.dumps(
                {"client_id": f"bench-{name}", "name": name, "params": {"lr": 0.1, "epochs": i % 10}}).encode(), hdr, 1),
            ("POST", f"/api/v1/local-runs/{name}/end", json.dumps(
                {"outcome": out, "exit_code": 0 if out == "succeeded" else 1,
                 "message": "" if out == "succeeded" else "exited with code 1"}).encode(), hdr, 1)]
    r = load_clients(port, plans)
    sec = f"PaddleCloud /jobs ({args.jobs:,} jobs)"
    row(sec, "record jobs: POST /api/v1/local-runs + .../end, 4 clients",
        f"{r['wall']:.1f} s, {r['ok']:,} of {2 * args.jobs:,} answered 2xx, errors: {errs(r)}")
    total = json.loads(api_ok(port, "GET", "/api/v1/jobs?per_page=1", key=key)[1])
    total = total["total"]
    page_hdr = {"Cookie": cookie, "Accept": "text/html"}
    get = ("GET", "/jobs", None, page_hdr, 1)
    conn = _Conn(port)
    status, body = conn.exchange(_encode_request(port, *get[:4]))
    if status != 200 or b"resnet-" not in body:
        raise RuntimeError(f"GET /jobs answered {status} without a seeded job")
    row(sec, "jobs in the account (GET /api/v1/jobs total); /jobs HTML", f"{total}; {len(body) / 1e3:.0f} KB")

    # The ceiling: the very bytes of that page, served by the same server process through
    # its static file service (ServeDir, the router's fallback, which serves the wasm bundle),
    # from a file in the site root copy, which the page cache keeps in memory after the first
    # read.  Same listener, runtime, router and compression layer; no session look-up, no
    # database, no rendering: what this server and these clients can move at all, a page
    # of this size.  (A route returning the bytes from the heap would skip the file's stat,
    # open and read on tokio's blocking pool, a few tens of us, so this ceiling is that much
    # lower; it needs no code in the product to exist only for a benchmark.)
    ceiling_file = os.path.join(site_root, *CEILING_PATH.strip("/").split("/"))
    os.makedirs(os.path.dirname(ceiling_file), exist_ok=True)
    with open(ceiling_file, "wb") as f:
        f.write(body)
    ceil = ("GET", CEILING_PATH, None, page_hdr, 1)  # same request headers as the page
    status, same = conn.exchange(_encode_request(port, *ceil[:4]))
    conn.close()
    if status != 200 or same != body:
        raise RuntimeError(f"GET {CEILING_PATH} answered {status}, {len(same)} bytes, not the page's {len(body)}")

    targets = [("PaddleCloud /jobs", port, get, server_pid, 300),
               ("ceiling: same bytes, static file", port, ceil, server_pid, 300)]
    ml_proc = None
    try:
        try:
            import mlflow  # noqa: F401  (the venv's; without it the ceiling is the only reference)
        except ImportError:
            row(sec, "MLflow runs search", "not run: no venv (python3 scripts/bench_compare.py --install)")
        else:
            msec = f"MLflow runs search ({args.jobs:,} runs)"
            db = mlflow_job_runs(args, tmp, msec)
            ml_proc, ml_port, ml_base = start_mlflow(args, tmp, db, msec)
            exp = json.loads(http(f"{ml_base}/api/2.0/mlflow/experiments/get-by-name?experiment_name=jobs")[1])
            search_body = json.dumps({"experiment_ids": [exp["experiment"]["experiment_id"]],
                                      "run_view_type": "ACTIVE_ONLY", "max_results": MLFLOW_UI_RUNS_PAGE,
                                      "order_by": MLFLOW_UI_ORDER_BY}).encode()
            search = ("POST", "/ajax-api/2.0/mlflow/runs/search", search_body,
                      {"Content-Type": "application/json"}, 1)
            # /health answers once one of its workers is up; on a busy machine another may
            # still be starting (or be restarted by uvicorn's supervisor) and close the
            # connection: a few tries before the answer is judged.
            for attempt in range(10):
                conn = _Conn(ml_port)
                try:
                    status, answer = conn.exchange(_encode_request(ml_port, *search[:4]))
                    break
                except ConnectionError:
                    if attempt == 9:
                        raise
                    time.sleep(2)
                finally:
                    conn.close()
            runs = json.loads(answer).get("runs", []) if status == 200 else []
            first = next((t["value"] for t in runs[0]["data"].get("tags", []) if t["key"] == "mlflow.runName"),
                         None) if runs else None
            if status != 200 or len(runs) != MLFLOW_UI_RUNS_PAGE or first != f"resnet-{args.jobs - 1:05d}":
                raise RuntimeError(f"runs/search answered {status}, {len(runs)} runs, first {first!r}")
            row(msec, f"POST /ajax-api/2.0/mlflow/runs/search (the UI's runs table: max_results "
                      f"{MLFLOW_UI_RUNS_PAGE}, {MLFLOW_UI_ORDER_BY[0]})",
                f"{len(runs)} runs, newest {first}, {len(answer) / 1e3:.0f} KB JSON")
            targets.append(("MLflow runs search", ml_port, search, ml_proc.pid, 50))
        for name, tport, req, pgid, n in targets:
            load_clients(tport, [[req] * 20])  # warm-up
            one = load_clients(tport, [[req] * n])
            row(sec, f"{name}: 1 client, p50 / p90 / p99 of {n}",
                f"{ms(pct(one['lat'], 0.5))} / {ms(pct(one['lat'], 0.9))} / {ms(pct(one['lat'], 0.99))}, "
                f"errors: {errs(one)}")
            if name == targets[0][0]:
                p50_one = pct(one["lat"], 0.5)
        # Runs of one build differ by 10-25% on a shared 2-core VM from one minute to the
        # next: each round loads the three one after the other and takes its ratios, and
        # the table reports the median round's rates and the median of the rounds' ratios.
        rounds = []
        for r in range(1, args.rounds + 1):
            got = {}
            for name, tport, req, pgid, _ in targets:
                m = got[name] = measure(tport, req, pgid, args.clients, args.seconds)
                # Clients and server share the cores: what each took a page says how far apart they are.
                row(sec, f"round {r}, {name}: {args.clients} clients for {args.seconds} s: pages/s; "
                         "p50 / p90; CPU a page: server / clients",
                    f"{m['rate']:,.0f} pages/s ({m['ok']:,} pages); {ms(m['p50'])} / {ms(m['p90'])}; "
                    f"{m['server_us']:,.0f} us / {m['client_us']:,.0f} us, errors: {errs(m)}")
            pc = got[targets[0][0]]["rate"]
            got["ratio_ceiling"] = pc / max(got[targets[1][0]]["rate"], 1e-9)
            got["ratio_mlflow"] = pc / max(got[targets[2][0]]["rate"], 1e-9) if len(targets) > 2 else None
            # For information beside the rates: the same comparison in the server's CPU a
            # page, which outside load on the machine moves less than it moves rates.
            pc_us = max(got[targets[0][0]]["server_us"], 1e-9)
            row(sec, f"round {r}: PaddleCloud / MLflow; PaddleCloud / ceiling (server CPU a page: "
                     "MLflow / PaddleCloud; ceiling / PaddleCloud)",
                (f"{got['ratio_mlflow']:,.1f}x" if got["ratio_mlflow"] else "-") + f"; {got['ratio_ceiling']:.2f} ("
                + (f"{got[targets[2][0]]['server_us'] / pc_us:,.1f}x" if len(targets) > 2 else "-")
                + f"; {got[targets[1][0]]['server_us'] / pc_us:.2f})")
            rounds.append(got)
        # For information: the job table with as many rows as MLflow's page (its UI asks for
        # 100 runs; PaddleCloud's table shows 25 unless asked for more).
        if len(targets) > 2:
            req = ("GET", f"/jobs?per_page={MLFLOW_UI_RUNS_PAGE}", None, page_hdr, 1)
            conn = _Conn(port)
            size = len(conn.exchange(_encode_request(port, *req[:4]))[1])
            conn.close()
            load_clients(port, [[req] * 20])  # warm-up
            h = measure(port, req, server_pid, args.clients, args.seconds)
            row(sec, f"for information, GET /jobs?per_page={MLFLOW_UI_RUNS_PAGE} ({size / 1e3:.0f} KB): "
                     f"{args.clients} clients for {args.seconds} s",
                f"{h['rate']:,.0f} pages/s; p50 {ms(h['p50'])}; {h['server_us']:,.0f} us / "
                f"{h['client_us']:,.0f} us a page, errors: {errs(h)}")
        # For information: a small JSON answer made in memory (/healthz, no session, no
        # file): the most requests a second this server and these clients manage at all.
        h = measure(port, ("GET", "/healthz", None, {}, 1), server_pid, args.clients, args.seconds)
        row(sec, f"for information, GET /healthz: {args.clients} clients for {args.seconds} s",
            f"{h['rate']:,.0f} answers/s; p50 {ms(h['p50'])}; {h['server_us']:,.0f} us / {h['client_us']:,.0f} us "
            f"a request, errors: {errs(h)}")
    finally:
        if ml_proc:
            stop_server(ml_proc)

    def median(xs):
        return statistics.median(xs) if xs else None

    def summary(name):
        ms_ = [g[name] for g in rounds]
        mid = sorted(ms_, key=lambda m: m["rate"])[len(ms_) // 2]
        return dict(rate=mid["rate"], p50=mid["p50"], rates=[m["rate"] for m in ms_],
                    errors=sum(sum(m["errors"].values()) for m in ms_))

    res = dict(summary(targets[0][0]), p50_one=p50_one, clients=args.clients, jobs=args.jobs,
               rounds=len(rounds), bytes=len(body), ceiling=summary(targets[1][0]),
               ratio_ceiling=median([g["ratio_ceiling"] for g in rounds]),
               ratios_ceiling=[g["ratio_ceiling"] for g in rounds])
    if len(targets) > 2:
        res.update(mlflow=dict(summary(targets[2][0]), runs=MLFLOW_UI_RUNS_PAGE, bytes=len(answer)),
                   ratio_mlflow=median([g["ratio_mlflow"] for g in rounds]),
                   ratios_mlflow=[g["ratio_mlflow"] for g in rounds])
    for name, key in ((targets[0][0], None), (targets[1][0], "ceiling"), ("MLflow runs search", "mlflow")):
        s = res if key is None else res.get(key)
        if s and len(rounds) > 1:
            row(sec, f"{name}: median of {len(rounds)} rounds: pages/s; p50",
                f"{s['rate']:,.0f} pages/s; {ms(s['p50'])} (rounds: " + ", ".join(f"{x:,.0f}" for x in s["rates"]) + ")")
    RES["pc_jobs"] = res


def job_list_bench(args):
    """(i): the `cargo bench -p server --bench job_list` executable, built elsewhere."""
    env = dict(os.environ, JOB_LIST_BENCH_JOBS=str(args.jobs), JOB_LIST_BENCH_CLIENTS=str(args.clients),
               JOB_LIST_BENCH_SECONDS=str(args.seconds))
    out = subprocess.run([args.job_list_bench, "--bench"], env=env, capture_output=True, text=True,
                         timeout=3600, cwd=REPO)
    if out.returncode:
        raise RuntimeError(f"{args.job_list_bench} exited {out.returncode}: {out.stderr[-500:]}")
    sec = "job_list bench (--job-list-bench)"
    for line in (out.stderr + out.stdout).splitlines():
        if line.strip():
            row(sec, "line", line.strip())
    m = re.search(r"throughput, (\d+) clients for (\d+) s: (\d+) req/s", out.stdout)
    m1 = re.search(r"first page.*?p50\s+([\d.]+) ms", out.stdout)
    if m:
        RES.setdefault("bench_jobs", dict(rate=float(m.group(3)), p50_one=float(m1.group(1)) / 1e3 if m1 else None,
                                          clients=int(m.group(1))))


def pc_hydration(args, port, cookie):
    node = shutil.which("node")
    script = os.path.join(REPO, "end2end", "bench", "hydration.mjs")
    if not node or not os.path.isdir(os.path.join(REPO, "end2end", "node_modules", "@playwright")):
        raise RuntimeError("needs node and end2end/node_modules (cd end2end && npm ci)")
    argv = [node, script, "--url", f"http://127.0.0.1:{port}/jobs", "--cookie", cookie,
            "--runs", str(args.hydration_runs), "--json"]
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, cwd=os.path.join(REPO, "end2end"))
        SERVERS.append(p)  # killed with its group (chromium) on exit or error
        try:
            rc = p.wait(timeout=60 + 30 * args.hydration_runs)
        finally:
            stop_server(p)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if rc:
        raise RuntimeError(f"hydration.mjs exited {rc}: {text[-800:]}")
    d = json.loads(text.strip().splitlines()[-1])
    sec = f"PaddleCloud hydration /jobs (chromium, {args.hydration_runs} runs)"
    row(sec, "load event -> data-hydrated: p50 / p90 (first, cold cache)",
        f"{d['p50_load_to_interactive_ms']:.0f} / {d['p90_load_to_interactive_ms']:.0f} ms "
        f"({d['cold_load_to_interactive_ms']:.0f} ms)")
    row(sec, "navigation -> interactive p50 / p90; navigation -> load p50",
        f"{d['p50_nav_to_interactive_ms']:.0f} / {d['p90_nav_to_interactive_ms']:.0f} ms; "
        f"{d['p50_nav_to_load_ms']:.0f} ms; {d['islands']} island(s), marked before load {d['marked_before_load']}x")
    if d.get("errors"):
        row(sec, "page errors", "; ".join(d["errors"])[:300])
    RES["pc_hydration"] = dict(p50=d["p50_load_to_interactive_ms"] / 1e3, p90=d["p90_load_to_interactive_ms"] / 1e3,
                               runs=args.hydration_runs, errors=bool(d.get("errors")))


def bench_paddlecloud(args, tmp):
    binary, site = os.path.abspath(args.binary), os.path.abspath(args.site)
    for what, path in (("--binary", binary), ("--site", os.path.join(site, "pkg"))):
        if not os.path.exists(path):
            raise FileNotFoundError(f"{what}: {path} does not exist (make build, or pass it)")
    row("versions", "paddlecloud", subprocess.run([binary, "--version"], capture_output=True,
                                                 text=True).stdout.strip() + f" ({binary})")
    t_part = time.perf_counter()
    data = os.path.join(tmp, "pc_data")
    # The console on its embedded defaults; nothing of the caller's configuration.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PADDLECLOUD_", "LEPTOS_", "AWS_")) and k != "DATABASE_URL"}
    # The server reads its site from a copy (1-2 MB), where the job table's part writes the
    # ceiling's file; the caller's --site is only read.
    site_root = os.path.join(tmp, "pc_site")
    shutil.copytree(site, site_root, symlinks=True)
    env.update(LEPTOS_SITE_ROOT=site_root, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    keys = {}
    for account in ("metrics", "jobtable"):
        email = f"owner@{account}.example.com"
        subprocess.run([binary, "admin", "create-account", "--name", account, "--email", email,
                        "--password-stdin", "--data-dir", data], input=PC_PASSWORD + "\n", env=env,
                       check=True, capture_output=True, text=True)
        out = subprocess.run([binary, "admin", "create-key", "--account", account, "--user", email,
                              "--data-dir", data], env=env, check=True, capture_output=True, text=True)
        keys[account] = out.stdout.strip().splitlines()[-1].strip()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [binary, "serve", "--addr", f"127.0.0.1:{port}", "--data-dir", data,
            "--leptos-config", os.path.join(REPO, "Leptos.toml")]
    t0 = time.perf_counter()
    p = start_server(argv, os.path.join(tmp, "paddlecloud.log"), env)
    status = 0
    try:
        wait_http(base + "/healthz", p)
        row("PaddleCloud", "server up (SQLite, fresh data dir)", f"{time.perf_counter() - t0:.1f} s")
        cookie_m = sign_in(port, "metrics", "owner@metrics.example.com")
        cookie_j = sign_in(port, "jobtable", "owner@jobtable.example.com")
        parts = (("ingest", lambda: pc_ingest(args, port, keys["metrics"])),
                 ("series", lambda: pc_series(args, port, keys["metrics"], cookie_m)),
                 ("jobs", lambda: pc_jobs(args, tmp, port, keys["jobtable"], cookie_j, p.pid, site_root)),
                 ("hydration", lambda: pc_hydration(args, port, cookie_j)))
        for name, fn in parts:
            if name not in args.pc_parts.split(","):
                continue
            try:
                fn()
            except Exception as e:  # report and go on with the next part
                status = 1
                row(f"PaddleCloud {name}", "FAILED", f"{type(e).__name__}: {e}")
            if p.poll() is not None:
                raise RuntimeError(f"paddlecloud exited with {p.returncode} (see its log)")
    finally:
        stop_server(p)
    if args.job_list_bench:
        job_list_bench(args)
    row("PaddleCloud", "part wall time", f"{time.perf_counter() - t_part:.0f} s")
    if status:
        raise RuntimeError("a PaddleCloud part failed (see above)")


# ----------------------------------------------------------------------------- targets
def targets(args):
    """(target, PaddleCloud, reference, ratio, goal, result) rows."""
    out = []
    pc, mn, m1 = RES.get("pc_ingest_n"), RES.get("ml_ingest_n"), RES.get("ml_ingest_1")
    if pc:
        lost = pc["stored"] != pc["points"] or pc["errors"]
        refs = [(r, label) for r, label in ((mn, f"MLflow {args.writers} writers"), (m1, "MLflow 1 writer"))
                if r is not None] or [(None, None)]
        for ref, label in refs:
            ratio = pc["rate"] / ref["rate"] if ref else None
            out.append((f"a. ingestion, {pc['writers']} writers, durable (pts/s)",
                        f"{pc['rate']:,.0f}" + (" (POINTS LOST)" if lost else ""),
                        f"{label} {ref['rate']:,.0f}" if ref else "MLflow not run",
                        f"{ratio:,.0f}x" if ratio else "-", ">= 100x",
                        ("PASS" if ratio >= 100 and not lost else "FAIL") if ratio else "n/a"))
    f, tbs = RES.get("pc_fetch"), RES.get("tb_scalars", [])
    if f:
        extremes = f["spike"] and f["min"]
        same = [t for t in tbs if t["n"] == f["n"]]
        tb = min(same, key=lambda t: t["p50"]) if same else None  # TensorBoard at its fastest
        ratio = tb["p50"] / f["p50"] if tb else None
        what = (f"TB {ms(tb['p50'])} (load_fast={tb['loader']}, "
                f"{'default sampling' if tb['samples'] is None else 'scalars=' + str(tb['samples'])}, "
                f"{tb['points']:,} pts, spike {'kept' if tb['spike'] else 'lost'})") if tb else "TensorBoard not run"
        verdict = lambda r, ok: ("PASS" if r >= 10 and ok else "FAIL") if r else ("n/a" if ok else "FAIL")
        # Like for like: TensorBoard's scalars fetch is the series as JSON, drawn
        # by the browser; so is PaddleCloud's REST envelope. The chart page also
        # draws the SVG on the server: shown beside it, for information.
        ratio = tb["p50"] / f["rest_p50"] if tb else None
        out.append((f"b. {f['n']:,}-point series fetch p50 (REST envelope, width=640)",
                    f"{ms(f['rest_p50'])}, spike and min {'kept' if f['rest_ok'] else 'LOST'}",
                    what, f"{ratio:,.1f}x" if ratio else "-", ">= 10x, no extreme lost",
                    verdict(ratio, f["rest_ok"])))
        ratio = tb["p50"] / f["p50"] if tb else None
        out.append(("b'. same, the chart's page with its SVG drawn (GET /paddleboard)",
                    f"{ms(f['p50'])}, spike {'kept' if f['spike'] else 'LOST'}, min {'kept' if f['min'] else 'LOST'}",
                    "same TB fetch", f"{ratio:,.1f}x" if ratio else "-", "(for information)",
                    f"({verdict(ratio, extremes)})"))
    j = RES.get("pc_jobs")
    if j:
        # The job table's targets are ratios of rates taken in the same rounds (see pc_jobs):
        # the median of the rounds' ratios, with each round's.
        what = (f"{j['rate']:,.0f} pages/s, p50 {ms(j['p50'])} (1 client {ms(j['p50_one'])}), "
                f"{j['bytes'] / 1e3:.0f} KB" + (f", {j['errors']} ERRORS" if j["errors"] else ""))
        head = f"c. /jobs SSR, {args.jobs:,} jobs, {j['clients']} clients, median of {j['rounds']} round{'s' if j['rounds'] > 1 else ''}"
        m = j.get("mlflow")
        if m:
            ok = not j["errors"] and not m["errors"]
            out.append((f"{head}, vs MLflow's runs table", what,
                        f"MLflow runs/search ({m['runs']} of {args.jobs:,} runs, {m['bytes'] / 1e3:.0f} KB JSON) "
                        f"{m['rate']:,.0f}/s, p50 {ms(m['p50'])}" + (f", {m['errors']} ERRORS" if m["errors"] else ""),
                        f"{j['ratio_mlflow']:,.1f}x (" + ", ".join(f"{x:,.1f}" for x in j["ratios_mlflow"]) + ")",
                        ">= 10x", "PASS" if j["ratio_mlflow"] >= 10 and ok else "FAIL"))
        else:
            out.append((f"{head}, vs MLflow's runs table", what, "MLflow not run (no venv)", "-", ">= 10x", "n/a"))
        c = j["ceiling"]
        out.append((f"c'. same /jobs vs the ceiling", "same",
                    f"the page's bytes as a static file of the same server {c['rate']:,.0f}/s, p50 {ms(c['p50'])}",
                    f"{j['ratio_ceiling']:.2f} (" + ", ".join(f"{x:.2f}" for x in j["ratios_ceiling"]) + ")",
                    ">= 0.5", "PASS" if j["ratio_ceiling"] >= 0.5 and not j["errors"] and not c["errors"] else "FAIL"))
    b = RES.get("bench_jobs")
    if b:  # another process, no reference beside it: for information
        out.append((f"c''. /jobs, cargo bench job_list, {b['clients']} clients",
                    f"{b['rate']:,.0f} pages/s" + (f" (1 client {ms(b['p50_one'])})" if b.get("p50_one") else ""),
                    "-", "-", "(for information)", "-"))
    h = RES.get("pc_hydration")
    if h:
        out.append(("d. hydration of /jobs, load -> interactive",
                    f"p50 {ms(h['p50'])}, p90 {ms(h['p90'])}", "target 300 ms",
                    f"{h['p50'] / 0.3:.2f}x of budget", "p50 <= 300 ms",
                    "PASS" if h["p50"] <= 0.3 and not h["errors"] else "FAIL"))
    return out


def print_targets(rows):
    if not rows:
        return
    head = ("target", "PaddleCloud", "reference", "ratio", "goal", "result")
    w = [max(len(str(r[i])) for r in [head, *rows]) for i in range(6)]
    line = lambda r: " | ".join(str(c).ljust(w[i]) for i, c in enumerate(r))
    print("\nSpeed side by side (targets)")
    print(line(head))
    print("-+-".join("-" * x for x in w))
    for r in rows:
        print(line(r))


# ----------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--install", action="store_true", help=f"create/refresh the venv at {VENV}")
    ap.add_argument("--only", choices=["tensorboard", "mlflow", "paddlecloud"])
    ap.add_argument("--binary", default=os.path.join(REPO, "target", "release", "paddlecloud"),
                    help="the paddlecloud release binary (default: target/release/paddlecloud)")
    ap.add_argument("--site", default=os.path.join(REPO, "target", "site"),
                    help="its site files, with pkg/ (default: target/site); LEPTOS_SITE_ROOT")
    ap.add_argument("--writers", type=int, default=8, help="concurrent writers for ingestion")
    ap.add_argument("--pc-ingest-points", type=int, default=2_000_000,
                    help="PaddleCloud ingestion: points in all, split over the writers")
    ap.add_argument("--mlflow-ingest-points", type=int, default=40_000,
                    help="MLflow ingestion: points in all, split over the writers (0: skip)")
    ap.add_argument("--jobs", type=int, default=10_000, help="jobs in the job table")
    ap.add_argument("--clients", type=int, default=8, help="concurrent clients loading /jobs")
    ap.add_argument("--seconds", type=int, default=10, help="seconds of /jobs load, per round")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of /jobs load; the table reports the median round")
    ap.add_argument("--hydration-runs", type=int, default=30)
    ap.add_argument("--pc-parts", default="ingest,series,jobs,hydration",
                    help="PaddleCloud parts to run (comma-separated)")
    ap.add_argument("--job-list-bench", metavar="PATH",
                    help="also run this built `cargo bench -p server --bench job_list` executable")
    ap.add_argument("--points", type=int, default=1_000_000, help="points in data set A")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (data, logs)")
    ap.add_argument("--requests", type=int, default=50, help="requests per p50 (default sampling)")
    ap.add_argument("--requests-all", type=int, default=10, help="requests per p50 (all points)")
    ap.add_argument("--tb-loaders", default="auto,false", help="--load_fast values to run")
    ap.add_argument("--tb-timeout", type=int, default=900, help="max seconds to wait for a load")
    ap.add_argument("--mlflow-points", type=int, default=100_000)
    ap.add_argument("--mlflow-workers", type=int, default=4, help="mlflow server --workers (its default)")
    ap.add_argument("--b-series", type=int, default=100)
    ap.add_argument("--b-points", type=int, default=10_000, help="TensorBoard B subset: points/series")
    ap.add_argument("--b-mlflow-points", type=int, default=1_000, help="MLflow B subset: points/series")
    args = ap.parse_args()
    ensure_venv(args, sys.argv[1:])

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` blocks run
    tmp = tempfile.mkdtemp(prefix="bench_compare_")
    t0, load0 = time.perf_counter(), load()
    print(f"bench_compare: python {sys.version.split()[0]}, nproc {os.cpu_count()}, "
          f"load {load0}, tmp {tmp}", flush=True)
    if os.getloadavg()[0] > 0.5 * (os.cpu_count() or 1):
        print(f"WARNING: the machine is busy (load {load0}): numbers will be low", flush=True)
    status = 0
    try:
        for name, fn in (("tensorboard", bench_tensorboard), ("mlflow", bench_mlflow),
                         ("paddlecloud", bench_paddlecloud)):
            if args.only in (None, name):
                try:
                    fn(args, tmp)
                except Exception as e:  # report and go on with the other part
                    status = 1
                    row(name, "FAILED", f"{type(e).__name__}: {e}")
    finally:
        for p in list(SERVERS):
            stop_server(p)
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    row("machine", "nproc / load avg start / end", f"{os.cpu_count()} / {load0} / {load()}")
    row("machine", "total wall time", f"{time.perf_counter() - t0:.0f} s")
    w = max(len(f"{s} | {n}") for s, n, _ in ROWS)
    print("\n" + "=" * (w + 30))
    for s, n, v in ROWS:
        print(f"{(s + ' | ' + n).ljust(w)} | {v}")
    print_targets(targets(args))
    return status


if __name__ == "__main__":
    sys.exit(main())
