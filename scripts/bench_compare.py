#!/usr/bin/env python3
"""Benchmark TensorBoard and MLflow on the data PaddleBoard is benchmarked with.

Run (from anywhere; the first run needs PyPI to build the venv):

    python3 scripts/bench_compare.py --install          # create venv, then run both parts
    python3 scripts/bench_compare.py --only tensorboard --points 200000
    python3 scripts/bench_compare.py --only mlflow --keep

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
"""
import argparse, json, math, os, random, shutil, signal, socket, statistics, subprocess, sys
import tempfile, time, urllib.error, urllib.parse, urllib.request

VENV = os.path.expanduser("~/.cache/paddlecloud/pyvenv-compare")
PINS = ["tensorboard==2.21.0", "tensorboardX==2.6.5", "mlflow==3.17.2"]
SPIKE_STEP, SEED, WALL0 = 654321, 20240601, 1.7e9
ROWS = []      # (section, name, value) for the final table
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
            row(sec, f"GET scalars/scalars p50 of {reqs}", ms(p50(lambda: http(q(tag))[0], reqs)))
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
def bench_mlflow(args, tmp):
    import mlflow
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient
    row("versions", "mlflow", mlflow.__version__)
    t_part = time.perf_counter()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="true",
               MLFLOW_TRACKING_URI=base, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    os.environ.update(env)
    argv = [os.path.join(VENV, "bin", "mlflow"), "server",
            "--backend-store-uri", f"sqlite:///{os.path.join(tmp, 'mlflow.db')}",
            "--default-artifact-root", os.path.join(tmp, "mlartifacts"),
            "--host", "127.0.0.1", "--port", str(port), "--workers", str(args.mlflow_workers)]
    t0 = time.perf_counter()
    p = start_server(argv, os.path.join(tmp, "mlflow.log"), env)
    try:
        wait_http(base + "/health", p)
        row("MLflow", f"server up (sqlite, {args.mlflow_workers} workers)", f"{time.perf_counter() - t0:.1f} s")
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
    finally:
        stop_server(p)
    row("MLflow", "part wall time", f"{time.perf_counter() - t_part:.0f} s")


def timed(fn, *a):
    t = time.perf_counter()
    fn(*a)
    return time.perf_counter() - t


# ----------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--install", action="store_true", help=f"create/refresh the venv at {VENV}")
    ap.add_argument("--only", choices=["tensorboard", "mlflow"])
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
    status = 0
    try:
        for name, fn in (("tensorboard", bench_tensorboard), ("mlflow", bench_mlflow)):
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
    return status


if __name__ == "__main__":
    sys.exit(main())
