#!/usr/bin/env python3
"""TensorBoard showing 100 runs' curves in one chart: the reference for the
run comparison's chart (`cargo bench -p server --bench compare_runs`).

Run (needs the venv of scripts/bench_compare.py: `python3 scripts/bench_compare.py --install`):

    python3 scripts/bench_compare_runs.py                      # 100 runs x 100,000 points
    python3 scripts/bench_compare_runs.py --runs 100 --points 10000 --keep

What it does, on the same shape of data as the Rust bench (100 runs, one tag
`loss`, a noisy decaying curve, steps 0..N-1):

  1. writes one event file per run with tensorboardX (`<logdir>/run-000/…`),
     two writer processes at a time, and times it;
  2. starts `tensorboard --logdir <logdir> --load_fast=auto` (the Rust data
     server) with default sampling, and waits until every run's `loss` is
     loaded to its last step (what "TensorBoard showing the 100 runs" means);
  3. times the request the Time Series dashboard makes to draw the one `loss`
     card with every run on it: POST /data/plugin/timeseries/timeSeries with
     `{"plugin": "scalars", "tag": "loss"}` (no run: all of them), p50 of 20,
     and says how many points per run come back (TensorBoard samples 1,000).

Every server runs in its own process group and is killed by its PID on exit.
Stdlib + the venv's tensorboard and tensorboardX only; all traffic on 127.0.0.1.
"""

import argparse
import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from multiprocessing import Pool

VENV = os.path.expanduser("~/.cache/paddlecloud/pyvenv-compare")
WALL0 = 1.7e9


def reexec_in_venv():
    py = os.path.join(VENV, "bin", "python")
    if os.path.realpath(sys.prefix) != os.path.realpath(VENV):
        if not os.path.exists(py):
            sys.exit(f"no venv at {VENV}: run `python3 scripts/bench_compare.py --install` first")
        os.execv(py, [py, *sys.argv])


def values(run, n):
    """The curve of run `run`: a noisy decay, a little higher per run."""
    state = (0x9E3779B97F4A7C15 ^ (run + 1)) & 0xFFFFFFFFFFFFFFFF
    out = []
    for step in range(n):
        state ^= (state << 13) & 0xFFFFFFFFFFFFFFFF
        state ^= state >> 7
        state ^= (state << 17) & 0xFFFFFFFFFFFFFFFF
        noise = (state % 10_000) / 10_000 - 0.5
        out.append(2.0 * math.exp(-step / 20_000) + 0.3 + 0.05 * noise + run * 1e-3)
    return out


def write_run(job):
    logdir, run, n = job
    from tensorboardX import SummaryWriter
    w = SummaryWriter(os.path.join(logdir, f"run-{run:03d}"), flush_secs=30, max_queue=10000)
    for step, v in enumerate(values(run, n)):
        w.add_scalar("loss", v, step, walltime=WALL0 + step * 0.01)
    w.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url, form=None):
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    t = time.perf_counter()
    with urllib.request.urlopen(url, data=data, timeout=600) as r:
        body = r.read()
    return time.perf_counter() - t, body


def main():
    reexec_in_venv()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--timeout", type=int, default=3600, help="seconds to wait for TensorBoard to load")
    ap.add_argument("--keep", action="store_true", help="keep the event files (printed path)")
    args = ap.parse_args()
    import tensorboard
    import tensorboardX
    print(f"tensorboard {tensorboard.__version__}, tensorboardX {tensorboardX.__version__}")
    tmp = tempfile.mkdtemp(prefix="bench-compare-runs-")
    logdir = os.path.join(tmp, "logs")
    proc = None
    try:
        t = time.perf_counter()
        with Pool(2) as pool:
            pool.map(write_run, [(logdir, r, args.points) for r in range(args.runs)])
        wrote = time.perf_counter() - t
        total = args.runs * args.points
        print(f"write {args.runs} runs x {args.points:,} points (tensorboardX, 2 processes): "
              f"{wrote:.1f} s ({total / wrote:,.0f} points/s)")

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        argv = [os.path.join(VENV, "bin", "tensorboard"), "--logdir", logdir, "--host", "127.0.0.1",
                "--port", str(port), "--load_fast=auto", "--reload_interval", "5"]
        log = open(os.path.join(tmp, "tensorboard.log"), "wb")
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        form = {"requests": json.dumps([{"plugin": "scalars", "tag": "loss"}])}
        url = base + "/data/plugin/timeseries/timeSeries"
        deadline = time.time() + args.timeout
        while True:
            try:
                _, body = http(url, form)
                series = json.loads(body)[0].get("runToSeries", {})
            except Exception:
                series = {}
            done = [r for r, pts in series.items() if pts and pts[-1]["step"] == args.points - 1]
            if len(done) == args.runs:
                break
            if proc.poll() is not None or time.time() > deadline:
                raise SystemExit(f"TensorBoard loaded {len(done)} of {args.runs} runs; see {tmp}")
            time.sleep(0.5)
        print(f"tensorboard --load_fast=auto: launch -> all {args.runs} runs loaded: "
              f"{time.perf_counter() - t:.1f} s")
        times, size = [], 0
        for _ in range(args.requests):
            dt, body = http(url, form)
            times.append(dt)
            size = len(body)
        per_run = statistics.median(len(p) for p in json.loads(body)[0]["runToSeries"].values())
        times.sort()
        print(f"POST timeseries/timeSeries, the `loss` card of all {args.runs} runs: "
              f"p50 {statistics.median(times) * 1e3:.1f} ms, p90 {times[int(0.9 * (len(times) - 1))] * 1e3:.1f} ms "
              f"({per_run:.0f} points per run, {size / 1e6:.2f} MB of JSON for the browser to draw)")
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
