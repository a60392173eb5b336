#!/usr/bin/env python3
"""Load and faults: the release console under many clients, a kill -9 and a
PostgreSQL restart, with every answer checked.

    python3 scripts/load_faults.py                      # 60 s of load on SQLite
    python3 scripts/load_faults.py --db postgres        # the same on a throwaway PostgreSQL, + its restart
    python3 scripts/load_faults.py --db both
    python3 scripts/load_faults.py --short              # CI: ~10 s, small counts, SQLite and PostgreSQL (if installed)
    python3 scripts/load_faults.py --binary /path/paddlecloud --site /path/site

Python 3 standard library only; every connection goes to 127.0.0.1. For each
database it starts its own console (a temp data dir, a free port; PostgreSQL:
initdb + pg_ctl in a temp dir on a free port, as the `postgres` user when run
as root), makes an account and an access key with `paddlecloud admin`, and
submits a few real jobs on the local executor whose pods print `line N` every
50 ms and then `end N`. Then, for --seconds:

  followers  GET /api/v1/jobs/{job}/pods/{pod}/log?follow=true&tail=10&timestamps=true
             (Bearer key; `--follow-via sse` uses /events/log with a session cookie):
             every line must come in order with no gap after the first one seen, up to
             `end N`, and the stream must end when the pod ends.
  writers    POST /api/v1/jobs/{job}/metrics, batches of --batch points, each writer its
             own tag; every point answered with a 2xx is remembered.
  pages      signed in (POST /api/sign_in, each its own session), loop over /jobs, a
             job's log console, a job's resources page, PaddleBoard and /quota.

Checks (each prints PASS or FAIL; any FAIL makes the exit status 1 and is named at
the end): no 5xx anywhere; no "database is locked" in any answer or in the console's
own output (nor a panic); every acknowledged point read back (format=csv) with its
value, nothing stored that was not sent, no batch half stored; the followers; pages
that are pages (not the sign-in form). Then:

  kill -9    writers only; the console is killed with SIGKILL mid-ingestion, started
             again on the same data dir / database, and every point acknowledged before
             the kill must be there (a batch in flight: all or nothing).
  pg restart (PostgreSQL) under writers, pages, a REST probe and followers of a job
             that runs through it: pg_ctl stop -m fast, --pg-down seconds, start. While
             it is away every answer must be a 503 (or a 2xx answered once it is back,
             for a request that waited the outage out) within --hang seconds, and 503s
             must come in an outage longer than the console's 5 s wait; after it is back every client must get 2xx again within
             --recover seconds, without restarting the console; points acknowledged
             through it must be there; the followers must not miss a line.

Prints p50/p99/max and counts per route. Everything is bounded (client timeouts, a
watchdog); the console, the jobs it ran and PostgreSQL are stopped and the temp dirs
removed at the end (--keep keeps them).
"""

import argparse
import asyncio
import calendar
import collections
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
LOCKED = "database is locked"
LINE_RE = re.compile(r"^(\S+) (line|end) (\d+)$")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(msg):
    print(msg, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


_stamp_cache = {}


def parse_stamp(s):
    """RFC 3339 with nanoseconds and Z, as the executor stamps lines -> epoch seconds."""
    base, _, frac = s.rstrip("Z").partition(".")
    t = _stamp_cache.get(base)
    if t is None:
        t = calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S"))
        if len(_stamp_cache) > 10000:
            _stamp_cache.clear()
        _stamp_cache[base] = t
    return t + (float("0." + frac) if frac else 0.0)


# ---------------------------------------------------------------- results


class Run:
    """What one database's run records: latencies, statuses, failures."""

    def __init__(self, name):
        self.name = name
        self.failures = []  # (check, detail)
        self.passes = []
        self.phase = "setup"
        self.lat = collections.defaultdict(list)  # (phase, route) -> [ms]
        self.codes = collections.defaultdict(collections.Counter)  # (phase, route) -> Counter
        self.bad = []  # unexpected answers: dict
        self.locked_bodies = []
        self.t0 = time.time()
        self.events = []  # (t, client, route, status, ms) in fault windows
        self.record_events = False

    def fail(self, check, detail):
        self.failures.append((check, detail))
        log(f"  FAIL {check}: {detail}")

    def ok(self, check, detail=""):
        self.passes.append(check)
        log(f"  PASS {check}" + (f": {detail}" if detail else ""))

    def check(self, cond, check, detail_ok, detail_fail):
        if cond:
            self.ok(check, detail_ok)
        else:
            self.fail(check, detail_fail)
        return cond

    def note(self, route, status, ms, body=b"", client="", started=None):
        """Records one answer (status: int, or 'timeout'/'conn: …')."""
        key = (self.phase, route)
        self.codes[key][status] += 1
        if isinstance(status, int) and ms is not None:
            self.lat[key].append(ms)
        if body and LOCKED.encode() in body:
            self.locked_bodies.append((self.phase, route, status, body[:300]))
        if self.record_events:
            self.events.append((started if started is not None else time.time(), client, route, status, ms, body[:200]))
        elif (not isinstance(status, int)) or status >= 500:
            self.bad.append(dict(phase=self.phase, route=route, status=status, ms=ms,
                                 body=bytes(body[:300]).decode("utf-8", "replace"),
                                 t=round(time.time() - self.t0, 2), client=client))


# ---------------------------------------------------------------- HTTP client


class HttpError(Exception):
    pass


class Endpoint:
    def __init__(self, port):
        self.host = "127.0.0.1"
        self.port = port


async def read_head(reader):
    line = await reader.readline()
    if not line:
        raise HttpError("connection closed before an answer")
    parts = line.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise HttpError(f"bad status line {line[:80]!r}")
    status = int(parts[1])
    headers = {}
    while True:
        h = await reader.readline()
        if h in (b"\r\n", b"\n"):
            break
        if not h:
            raise HttpError("connection closed in the headers")
        k, _, v = h.decode("latin-1").partition(":")
        headers.setdefault(k.strip().lower(), []).append(v.strip())
    return status, headers


async def iter_body(reader, headers):
    """Yields the body's chunks as they arrive (chunked, sized or to EOF)."""
    te = ",".join(headers.get("transfer-encoding", [])).lower()
    if "chunked" in te:
        while True:
            size_line = await reader.readline()
            if not size_line:
                raise HttpError("connection closed inside a chunked body")
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers
                    t = await reader.readline()
                    if t in (b"\r\n", b"\n", b""):
                        return
            data = await reader.readexactly(size)
            await reader.readexactly(2)
            yield data
    elif "content-length" in headers:
        n = int(headers["content-length"][0])
        while n > 0:
            data = await reader.read(min(n, 1 << 16))
            if not data:
                raise HttpError("connection closed inside a body")
            n -= len(data)
            yield data
    else:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                return
            yield data


class Conn:
    """One keep-alive HTTP/1.1 connection to the console."""

    def __init__(self, ep):
        self.ep = ep
        self.reader = None
        self.writer = None

    async def close(self):
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:
                pass
        self.reader = self.writer = None

    def _request_bytes(self, method, path, headers, body):
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.ep.host}:{self.ep.port}"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")

    async def request(self, method, path, headers=None, body=None, timeout=30.0):
        """(status, headers, body). Raises HttpError / OSError / TimeoutError.
        Nothing is retried: the console keeps idle connections open, so a
        connection closed before an answer is the console's doing and is counted."""
        try:
            return await asyncio.wait_for(self._once(method, path, headers, body), timeout)
        except BaseException:
            await self.close()
            raise

    async def _once(self, method, path, headers, body):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.ep.host, self.ep.port)
        try:
            self.writer.write(self._request_bytes(method, path, headers, body))
            await self.writer.drain()
            status, h = await read_head(self.reader)
        except asyncio.IncompleteReadError as e:
            raise HttpError(f"connection closed before an answer ({len(e.partial)} bytes)")
        chunks = []
        async for c in iter_body(self.reader, h):
            chunks.append(c)
        conn_hdr = ",".join(h.get("connection", [])).lower()
        if "close" in conn_hdr or ("content-length" not in h and "chunked" not in ",".join(h.get("transfer-encoding", [])).lower()):
            await self.close()
        return status, h, b"".join(chunks)


async def stream_open(ep, path, headers, timeout):
    """Opens a streaming GET on its own connection: (reader, writer, status, headers)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(ep.host, ep.port), timeout)
    lines = [f"GET {path} HTTP/1.1", f"Host: {ep.host}:{ep.port}"] + [f"{k}: {v}" for k, v in headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()
    status, h = await asyncio.wait_for(read_head(reader), timeout)
    return reader, writer, status, h


# ---------------------------------------------------------------- processes


class Postgres:
    def __init__(self, args):
        bins = sorted(d for d in (os.path.join("/usr/lib/postgresql", v, "bin") for v in
                                  (os.listdir("/usr/lib/postgresql") if os.path.isdir("/usr/lib/postgresql") else []))
                      if os.path.exists(os.path.join(d, "initdb")))
        if not bins:
            raise SystemExit("PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin")
        self.bin = sorted(bins, key=lambda d: [int(x) if x.isdigit() else x for x in d.split("/")[-2].split(".")])[-1]
        self.dir = tempfile.mkdtemp(prefix="pc-load-pg.")
        self.port = free_port()
        self.run = []
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
            self.run = ["runuser", "-u", "postgres", "--"]
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"
        self.started = False

    def _ctl(self, *a, timeout=90):
        return subprocess.run(self.run + [os.path.join(self.bin, "pg_ctl"), "-D", f"{self.dir}/data"] + list(a),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, text=True)

    def init(self):
        r = subprocess.run(self.run + [os.path.join(self.bin, "initdb"), "-D", f"{self.dir}/data", "-U", "postgres",
                                       "--auth=trust", "-E", "UTF8"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, text=True)
        if r.returncode != 0:
            raise SystemExit("initdb failed:\n" + r.stdout)
        self.start()

    def start(self):
        # fsync off as scripts/with-postgres.sh: the OS does not crash here, so
        # nothing committed is lost by a stop or a console's kill -9.
        r = self._ctl("-l", f"{self.dir}/server.log", "-w", "-t", "60", "-o",
                      f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
                      "start")
        if r.returncode != 0:
            raise RuntimeError("pg_ctl start failed: " + r.stdout + self.server_log()[-2000:])
        self.started = True

    def stop(self, mode="fast"):
        r = self._ctl("-m", mode, "-w", "-t", "60", "stop")
        self.started = False
        return r

    def server_log(self):
        try:
            with open(f"{self.dir}/server.log", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def cleanup(self, keep):
        if self.started:
            try:
                self._ctl("-m", "immediate", "stop", timeout=30)
            except Exception:
                pass
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


class Console:
    def __init__(self, args, db_url, workdir):
        self.args = args
        self.db_url = db_url
        self.dir = workdir
        self.data = os.path.join(workdir, "data")
        os.makedirs(self.data, exist_ok=True)
        self.port = free_port()
        self.ep = Endpoint(self.port)
        self.proc = None
        self.starts = 0
        self.logs = []

    def env(self):
        e = dict(os.environ)
        e["LEPTOS_SITE_ROOT"] = self.args.site
        e.pop("DATABASE_URL", None)
        e["NO_COLOR"] = "1"
        e.setdefault("RUST_LOG", "info")
        return e

    def db_args(self):
        a = ["--data-dir", self.data]
        if self.db_url:
            a += ["--database-url", self.db_url]
        return a

    def admin(self, *a, stdin=None):
        r = subprocess.run([self.args.binary, "admin"] + list(a) + self.db_args(), input=stdin,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, env=self.env(),
                           cwd=self.dir)
        if r.returncode != 0:
            raise RuntimeError(f"paddlecloud admin {a[0]} failed: {r.stderr or r.stdout}")
        return r.stdout

    def start(self):
        self.starts += 1
        logpath = os.path.join(self.dir, f"console-{self.starts}.log")
        self.logs.append(logpath)
        out = open(logpath, "wb")
        extra = []
        for leptos in (os.path.join(os.path.dirname(self.args.site), "Leptos.toml"), os.path.join(REPO, "Leptos.toml")):
            if os.path.exists(leptos):
                extra = ["--leptos-config", leptos]
                break
        cmd = [self.args.binary, "serve", "--addr", f"127.0.0.1:{self.ep.port}", "--stop-grace", "2"] + extra + self.db_args()
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env(), cwd=self.dir,
                                     start_new_session=True)
        out.close()
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"console exited with {self.proc.returncode} at start:\n{self.log_text(-1)[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.ep.port), timeout=1) as s:
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if s.recv(64).startswith(b"HTTP/1.1 200"):
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("console did not answer /healthz within 60 s")

    def kill9(self):
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)

    def log_text(self, which=None):
        paths = self.logs if which is None else [self.logs[which]]
        text = []
        for p in paths:
            try:
                with open(p, "rb") as f:
                    text.append(ANSI.sub("", f.read().decode("utf-8", "replace")))
            except OSError:
                pass
        return "\n".join(text)


# ---------------------------------------------------------------- the run


class Load:
    def __init__(self, args, run, console, key):
        self.a = args
        self.run = run
        self.c = console
        self.key = key
        self.auth = {"Authorization": f"Bearer {key}"}
        self.jobs = []  # [(job, [pods])]
        self.writers = {}  # i -> state
        self.followers = []  # results
        # Set when the run ends early (watchdog, Ctrl-C, an error): a cancel can be
        # lost in asyncio.wait_for when the request fails at the same moment, so the
        # loops also look at this.
        self.aborted = False

    # --- helpers
    async def call(self, conn, method, path, route, body=None, headers=None, client="", timeout=None):
        h = dict(headers or {})
        if body is not None and "Content-Type" not in h:
            h["Content-Type"] = "application/json"
        t = time.time()
        try:
            status, rh, data = await conn.request(method, path, h, body, timeout or self.a.hang)
        except asyncio.TimeoutError:
            self.run.note(route, "timeout", (time.time() - t) * 1000, client=client, started=t)
            return None, None, b""
        except (HttpError, OSError, asyncio.IncompleteReadError) as e:
            self.run.note(route, f"conn: {type(e).__name__}: {e}"[:120], (time.time() - t) * 1000, client=client, started=t)
            return None, None, b""
        ms = (time.time() - t) * 1000
        self.run.note(route, status, ms, data, client=client, started=t)
        return status, rh, data

    async def submit_job(self, conn, name, seconds, trainers):
        prog = ("import time\n"
                f"end=time.time()+{seconds:.1f}\n"
                "i=0\n"
                "while time.time()<end:\n"
                " i+=1\n"
                " print('line %d' % i, flush=True)\n"
                f" time.sleep({self.a.line_interval})\n"
                "print('end %d' % i, flush=True)\n")
        spec = {"name": name, "num_trainers": trainers, "num_ps": 0,
                "trainer": {"cpu": "50m", "memory": "64Mi"},
                "command": ["python3", "-u", "-c", prog]}
        status, _, data = await self.call(conn, "POST", "/api/v1/jobs", "POST /api/v1/jobs",
                                          json.dumps(spec).encode(), self.auth)
        if status != 201:
            raise RuntimeError(f"submit {name}: {status} {data[:300]!r}")
        return [f"trainer-{i}" for i in range(trainers)]

    async def wait_running(self, conn, names, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            done = True
            for n in names:
                s, _, d = await self.call(conn, "GET", f"/api/v1/jobs/{n}/pods", "GET /api/v1/jobs/{job}/pods",
                                          headers=self.auth)
                pods = json.loads(d) if s == 200 else []
                if not pods or any(p["phase"] != "running" for p in pods):
                    done = False
            if done:
                return
            await asyncio.sleep(0.2)
        raise RuntimeError(f"jobs {names} not running within {timeout} s")

    async def job_status(self, conn, name):
        s, _, d = await self.call(conn, "GET", f"/api/v1/jobs/{name}", "GET /api/v1/jobs/{job}", headers=self.auth)
        return json.loads(d) if s == 200 else {"status": f"HTTP {s}", "message": d[:200].decode("utf-8", "replace")}

    async def sign_in(self, conn, client):
        body = urllib.parse.urlencode({"account": self.a.account, "email": self.a.email,
                                       "password": self.a.password, "next": ""}).encode()
        s, h, d = await self.call(conn, "POST", "/api/sign_in", "POST /api/sign_in", body,
                                  {"Content-Type": "application/x-www-form-urlencoded"}, client=client)
        for c in (h or {}).get("set-cookie", []):
            m = re.match(r"(pc_session=[0-9a-f]+)", c)
            if m:
                return m.group(1)
        raise RuntimeError(f"sign-in failed: {s} {d[:200]!r}")

    # --- writers
    def writer_state(self, i):
        st = self.writers.get(i)
        if st is None:
            job = self.jobs[i % len(self.jobs)][0]
            st = self.writers[i] = dict(job=job, tag=f"load/w{i:03d}", next=0, acked={}, sent={}, batches=[])
        return st

    async def writer(self, i, stop, interval):
        st = self.writer_state(i)
        conn = Conn(self.c.ep)
        route = "POST /api/v1/jobs/{job}/metrics"
        await asyncio.sleep(random.random() * interval)
        while not stop.is_set() and not self.aborted:
            steps = list(range(st["next"], st["next"] + self.a.batch))
            st["next"] += self.a.batch
            now = time.time()
            pts = [{"tag": st["tag"], "step": s, "value": i + s / 1024.0, "wall_time": now} for s in steps]
            for s in steps:
                st["sent"][s] = i + s / 1024.0
            batch = dict(steps=steps, outcome=None, phase=self.run.phase)
            st["batches"].append(batch)
            status, _, data = await self.call(conn, "POST", f"/api/v1/jobs/{st['job']}/metrics", route,
                                              json.dumps(pts).encode(), self.auth, client=f"writer-{i}")
            if status is not None and 200 <= status < 300:
                try:
                    summary = json.loads(data)
                except ValueError:
                    summary = {}
                batch["outcome"] = "acked"
                for s in steps:
                    st["acked"][s] = i + s / 1024.0
                if "lost-point" in self.a.inject and i == 0 and -1 not in st["acked"]:
                    st["acked"][-1] = st["sent"][-1] = 0.5  # never sent: the read-back must miss it
                if summary.get("accepted") != len(steps) or summary.get("replaced") != 0:
                    batch["summary"] = summary
            else:
                batch["outcome"] = "refused" if status is not None else "no answer"
                batch["status"] = status
            try:
                await asyncio.wait_for(stop.wait(), interval * (0.5 + random.random()))
            except asyncio.TimeoutError:
                pass
        await conn.close()

    # --- pages
    def page_urls(self):
        names = [j for j, _ in self.jobs]
        urls = [("/jobs", "GET /jobs", names[0])]
        for j, pods in self.jobs:
            urls.append((f"/jobs?log={j}&pod={pods[0]}", "GET /jobs?log={job}&pod={pod}", j))
            urls.append((f"/jobs/{j}/resources", "GET /jobs/{job}/resources", j))
            urls.append((f"/paddleboard?job={j}&tags={urllib.parse.quote('^load/w00')}",
                         "GET /paddleboard?job={job}&tags=…", None))
        urls.append(("/paddleboard?" + "&".join(f"job={j}" for j in names[:3]), "GET /paddleboard?job=…×3", None))
        urls.append(("/quota", "GET /quota", None))
        return urls

    async def pages(self, k, stop, cookie, bad_pages):
        conn = Conn(self.c.ep)
        urls = self.page_urls()
        random.Random(k).shuffle(urls)
        n = 0
        while not stop.is_set() and not self.aborted:
            path, route, must = urls[n % len(urls)]
            n += 1
            status, _, body = await self.call(conn, "GET", path, route, headers={"Cookie": cookie}, client=f"pages-{k}")
            if status == 200:
                problem = None
                if b"</html>" not in body:
                    problem = "no </html>"
                elif b'action="/api/sign_in"' in body:
                    problem = "the sign-in form (session lost?)"
                elif b"Something went wrong on the server" in body:
                    problem = "“Something went wrong on the server” in the page"
                elif must and must.encode() not in body:
                    problem = f"does not name {must}"
                if problem and not self.run.record_events:
                    bad_pages.append((route, problem, body[:200]))
            if self.a.page_interval:
                await asyncio.sleep(self.a.page_interval)
        await conn.close()

    # --- followers
    async def follower(self, k, job, pod, stop_at, via, cookie, res):
        """Follows one pod; fills res with what it saw."""
        res.update(job=job, pod=pod, first=None, last=None, count=0, gap=None, end=None, error=None,
                   ended=False, via=via)
        if via == "sse":
            path = f"/events/log?job={job}&pod={urllib.parse.quote(pod)}&tail={self.a.tail}"
            headers = {"Cookie": cookie, "Accept": "text/event-stream"}
            route = "GET /events/log?job=&pod= (to headers)"
        else:
            path = f"/api/v1/jobs/{job}/pods/{pod}/log?follow=true&tail={self.a.tail}&timestamps=true"
            headers = dict(self.auth)
            route = "GET /api/v1/jobs/{job}/pods/{pod}/log?follow (to headers)"
        t = time.time()
        writer = None
        try:
            reader, writer, status, h = await stream_open(self.c.ep, path, headers, self.a.hang)
            ms = (time.time() - t) * 1000
            if status != 200:
                body = b""
                try:
                    async for c in iter_body(reader, h):
                        body += c
                        if len(body) > 2000:
                            break
                except Exception:
                    pass
                self.run.note(route, status, ms, body, client=f"follower-{k}", started=t)
                res["error"] = f"HTTP {status}: {body[:200]!r}"
                return
            self.run.note(route, status, ms, client=f"follower-{k}", started=t)
            buf = b""
            lags = res.setdefault("lags", [])
            body_iter = iter_body(reader, h).__aiter__()
            while not self.aborted:
                remaining = stop_at() - time.time()
                if remaining <= 0:
                    res["error"] = "the stream did not end when the pod ended"
                    return
                try:
                    chunk = await asyncio.wait_for(body_iter.__anext__(), min(remaining, 5.0))
                except StopAsyncIteration:
                    res["ended"] = True
                    break
                except asyncio.TimeoutError:
                    continue
                if LOCKED.encode() in chunk:
                    self.run.locked_bodies.append((self.run.phase, route, 200, chunk[:300]))
                buf += chunk
                *lines, buf = buf.split(b"\n")
                now = time.time()
                for raw in lines:
                    line = raw.decode("utf-8", "replace").rstrip("\r")
                    if via == "sse":
                        if not line.startswith("data:"):
                            continue
                        line = line[5:].lstrip(" ") if line.startswith("data: ") or line == "data:" else line[5:]
                        if not line:
                            continue
                    if "gap" in self.a.inject and k == 0 and res["count"] == 5 and not res.get("skipped"):
                        res["skipped"] = True  # as if the console had dropped this line
                        continue
                    m = LINE_RE.match(line)
                    if not m:
                        if res["gap"] is None:
                            res["gap"] = f"unexpected line {line[:120]!r}"
                        continue
                    stamp, kind, num = m.group(1), m.group(2), int(m.group(3))
                    try:
                        lags.append((now - parse_stamp(stamp)) * 1000)
                    except ValueError:
                        pass
                    if kind == "end":
                        if res["end"] is not None and res["gap"] is None:
                            res["gap"] = "a second end line"
                        res["end"] = num
                        if res["last"] != num and res["gap"] is None:
                            res["gap"] = f"end {num} after line {res['last']}"
                        continue
                    if res["end"] is not None and res["gap"] is None:
                        res["gap"] = f"line {num} after end {res['end']}"
                    if res["first"] is None:
                        res["first"] = num
                    elif num != res["last"] + 1 and res["gap"] is None:
                        res["gap"] = f"line {num} after line {res['last']}"
                    res["last"] = num
                    res["count"] += 1
            if buf.strip() and via != "sse":
                res["gap"] = res["gap"] or f"a half line at the end: {buf[:80]!r}"
        except asyncio.TimeoutError:
            res["error"] = "timeout opening the stream"
            self.run.note(route, "timeout", (time.time() - t) * 1000, client=f"follower-{k}", started=t)
        except (HttpError, OSError, asyncio.IncompleteReadError) as e:
            res["error"] = f"{type(e).__name__}: {e}"
            if res["count"] == 0:
                self.run.note(route, f"conn: {type(e).__name__}", (time.time() - t) * 1000, client=f"follower-{k}", started=t)
        finally:
            if writer is not None:
                writer.close()

    def judge_followers(self, results, label):
        bad = []
        lags = []
        for k, r in enumerate(results):
            lags += r.get("lags", [])
            why = None
            if r.get("error"):
                why = r["error"]
            elif r["gap"]:
                why = r["gap"]
            elif r["count"] == 0:
                why = "saw no line"
            elif r["end"] is None:
                why = f"no end line (last line {r['last']})"
            elif not r["ended"]:
                why = "the stream did not end"
            if why:
                bad.append(f"follower {k} ({r['via']}) {r['job']}/{r['pod']}: {why}")
        lines = sum(r["count"] for r in results)
        self.run.check(not bad, f"{label}: every follower saw its pod's lines in order, no gap, to the end",
                       f"{len(results)} followers, {lines} lines; delivery lag p50 {pct(lags, 50):.0f} ms, "
                       f"p99 {pct(lags, 99):.0f} ms, max {max(lags) if lags else float('nan'):.0f} ms",
                       f"{len(bad)} of {len(results)}: " + "; ".join(bad[:5]))
        if lags:
            self.run.lat[(self.run.phase, "follow: line stamped -> received")] += lags
            self.run.codes[(self.run.phase, "follow: line stamped -> received")][200] += len(lags)

    # --- reading metrics back
    async def read_back(self, label):
        """Reads every writer's series back and checks it against what was acked/sent."""
        sem = asyncio.Semaphore(8)
        problems = []
        counts = collections.Counter()

        async def one(i, st):
            async with sem:
                conn = Conn(self.c.ep)
                path = f"/api/v1/jobs/{st['job']}/metrics/{st['tag']}?format=csv"
                status, _, body = await self.call(conn, "GET", path, "GET /api/v1/jobs/{job}/metrics/{tag}?format=csv",
                                                  headers=self.auth, timeout=120)
                await conn.close()
            if status == 404 and not st["sent"]:
                return
            if status != 200:
                problems.append(f"writer {i}: read-back HTTP {status} {body[:200]!r}")
                return
            stored = {}
            for ln in body.decode().splitlines()[1:]:
                if not ln:
                    continue
                step, _, rest = ln.partition(",")
                _, _, value = rest.partition(",")
                stored[int(step)] = float(value)
            missing = [s for s in st["acked"] if s not in stored]
            wrong = [s for s, v in st["acked"].items() if s in stored and stored[s] != v]
            phantom = [s for s in stored if s not in st["sent"] or stored[s] != st["sent"][s]]
            counts["acked"] += len(st["acked"])
            counts["stored"] += len(stored)
            if missing:
                problems.append(f"writer {i} ({st['job']} {st['tag']}): {len(missing)} acknowledged points missing, "
                                f"steps {sorted(missing)[:5]}…")
            if wrong:
                problems.append(f"writer {i}: {len(wrong)} points with another value, steps {sorted(wrong)[:5]}")
            if phantom:
                problems.append(f"writer {i}: {len(phantom)} stored points never sent, steps {sorted(phantom)[:5]}")
            for b in st["batches"]:
                if b["outcome"] == "acked":
                    if "summary" in b:
                        problems.append(f"writer {i}: a batch answered {b['summary']} (expected accepted="
                                        f"{len(b['steps'])}, replaced=0)")
                    continue
                if b["outcome"] is None:
                    continue
                present = sum(1 for s in b["steps"] if s in stored)
                if present not in (0, len(b["steps"])):
                    problems.append(f"writer {i}: a batch without a 2xx ({b.get('status')}) half stored: "
                                    f"{present} of {len(b['steps'])}")
                elif present:
                    counts["unacked but stored"] += 1
                else:
                    counts["unacked, not stored"] += 1

        await asyncio.gather(*(one(i, st) for i, st in self.writers.items()))
        batches = collections.Counter(b["outcome"] for st in self.writers.values() for b in st["batches"])
        self.run.check(not problems, f"{label}: every acknowledged metric point is there",
                       f"{counts['acked']} points acknowledged in {batches['acked']} batches, "
                       f"{counts['stored']} stored; batches without a 2xx: {counts['unacked, not stored']} "
                       f"absent, {counts['unacked but stored']} stored whole",
                       "; ".join(problems[:6]))
        return counts


# ---------------------------------------------------------------- phases


async def phase_load(L, run, args):
    run.phase = "load"
    log(f"-- load: {args.seconds} s, {args.followers} followers ({args.follow_via}), {args.writers} writers, "
        f"{args.pages} page clients")
    stop = asyncio.Event()
    job_end = L.job_end
    cookies = []
    conn = Conn(L.c.ep)
    for k in range(max(args.pages, 1 if args.follow_via != "rest" else 0)):
        cookies.append(await L.sign_in(conn, f"pages-{k}"))
    await conn.close()
    pods = [(j, p) for j, ps in L.jobs for p in ps]
    fres = [dict() for _ in range(args.followers)]
    tasks = []
    for k in range(args.followers):
        j, p = pods[k % len(pods)]
        via = args.follow_via if args.follow_via != "mixed" else ("sse" if k % 2 else "rest")
        tasks.append(asyncio.create_task(L.follower(k, j, p, lambda: job_end + args.follow_grace, via,
                                                    cookies[k % len(cookies)] if cookies else "", fres[k])))
    wtasks = [asyncio.create_task(L.writer(i, stop, args.write_interval)) for i in range(args.writers)]
    bad_pages = []
    ptasks = [asyncio.create_task(L.pages(k, stop, cookies[k], bad_pages)) for k in range(args.pages)]
    t0 = time.time()
    await asyncio.sleep(args.seconds)
    stop.set()
    await asyncio.wait_for(asyncio.gather(*wtasks, *ptasks), args.hang * 2 + 10)
    log(f"   writers and pages stopped after {time.time() - t0:.1f} s; waiting for the pods to end")
    await asyncio.wait_for(asyncio.gather(*tasks), max(0, job_end - time.time()) + args.follow_grace + 10)
    L.judge_followers(fres, "load")
    run.check(not bad_pages, "load: pages are pages", f"every 200 a whole page naming its job",
              f"{len(bad_pages)} bad: " + "; ".join(f"{r}: {p}" for r, p, _ in bad_pages[:4]))
    await L.read_back("load")


async def phase_kill(L, run, args):
    run.phase = "kill-9"
    log(f"-- kill -9: {args.writers} writers for {args.kill_after} s, SIGKILL, start again")
    stop = asyncio.Event()
    # Back to back, so that batches are in flight when the kill comes.
    wtasks = [asyncio.create_task(L.writer(i, stop, 0.005)) for i in range(args.writers)]
    await asyncio.sleep(args.kill_after)
    inflight_before = sum(1 for st in L.writers.values() for b in st["batches"] if b["outcome"] is None)
    L.c.kill9()
    t_kill = time.time()
    acked_at_kill = sum(len(st["acked"]) for st in L.writers.values())
    stop.set()
    await asyncio.wait_for(asyncio.gather(*wtasks), args.hang + 10)
    run.phase = "after restart"
    port_before = L.c.ep.port
    try:
        L.c.start()
    except RuntimeError as e:
        if "Address already in use" in str(e) or "in use" in str(e):
            L.c.ep.port = free_port()
            L.c.start()
        else:
            raise
    log(f"   killed with {inflight_before} batches in flight, {acked_at_kill} points acknowledged; "
        f"up again in {time.time() - t_kill:.1f} s (port {L.c.ep.port}{'' if L.c.ep.port == port_before else ', a new one'})")
    counts = await L.read_back("kill -9")
    # The restarted console takes writes again.
    stop2 = asyncio.Event()
    wtasks = [asyncio.create_task(L.writer(i, stop2, args.write_interval)) for i in range(args.writers)]
    await asyncio.sleep(1.0)
    stop2.set()
    await asyncio.gather(*wtasks)
    after = [b for st in L.writers.values() for b in st["batches"] if b["phase"] == "after restart"]
    run.check(after and all(b["outcome"] == "acked" for b in after), "kill -9: the restarted console takes writes",
              f"{len(after)} batches after the restart, all 2xx",
              f"{sum(1 for b in after if b['outcome'] != 'acked')} of {len(after)} without a 2xx: "
              f"{[b.get('status') for b in after if b['outcome'] != 'acked'][:3]}")


async def phase_pg_restart(L, run, args, pg):
    run.phase = "pg-restart"
    nw, np_ = min(args.writers, 10), min(args.pages, 4)
    log(f"-- PostgreSQL restart under load: {nw} writers, {np_} page clients, a REST probe, "
        f"{args.pg_followers} followers; down {args.pg_down} s")
    conn = Conn(L.c.ep)
    cookies = [await L.sign_in(conn, f"pg-pages-{k}") for k in range(max(np_, 1))]
    span = 3 + args.pg_down + args.recover + 4
    name = f"pgfault-{int(time.time()) % 100000}"
    pods = await L.submit_job(conn, name, span, 1)
    await L.wait_running(conn, [name])
    job_end = time.time() + span
    run.record_events = True
    stop = asyncio.Event()
    fres = [dict() for _ in range(args.pg_followers)]
    ftasks = [asyncio.create_task(L.follower(k, name, pods[0], lambda: job_end + args.follow_grace + 30, "rest", "",
                                             fres[k])) for k in range(args.pg_followers)]
    wtasks = [asyncio.create_task(L.writer(i, stop, args.write_interval)) for i in range(nw)]
    bad_pages = []
    ptasks = [asyncio.create_task(L.pages(k, stop, cookies[k], bad_pages)) for k in range(np_)]

    async def probe_once(path, route, headers, client):
        c = Conn(L.c.ep)
        await L.call(c, "GET", path, route, headers=headers, client=client)
        await c.close()

    async def probe():
        # Open loop: a new request every 0.25 s whether or not the last one was
        # answered, so requests start all through the outage.
        pending = []
        n = 0
        while not stop.is_set() and not L.aborted:
            n += 1
            if n % 2:
                pending.append(asyncio.create_task(probe_once("/api/v1/jobs?per_page=5", "GET /api/v1/jobs", L.auth,
                                                              "probe")))
            else:
                pending.append(asyncio.create_task(probe_once("/quota", "GET /quota", {"Cookie": cookies[0]},
                                                              "probe")))
            await asyncio.sleep(0.25)
        await asyncio.gather(*pending)

    prt = asyncio.create_task(probe())
    await asyncio.sleep(3)
    t_stop = time.time()
    r = await asyncio.to_thread(pg.stop, args.pg_stop_mode)
    t_down = time.time()
    log(f"   pg_ctl stop -m {args.pg_stop_mode}: {r.returncode} in {t_down - t_stop:.1f} s")
    await asyncio.sleep(args.pg_down)
    t_start = time.time()
    await asyncio.to_thread(pg.start)
    t_up = time.time()
    log(f"   pg_ctl start: up after {t_up - t_down:.1f} s away")
    await asyncio.sleep(args.recover)
    stop.set()
    await asyncio.wait_for(asyncio.gather(*wtasks, *ptasks, prt), args.hang * 2 + 10)
    run.record_events = False
    await asyncio.wait_for(asyncio.gather(*ftasks), max(0, job_end - time.time()) + args.follow_grace + 40)

    ev = run.events
    run.events = []
    before = [e for e in ev if e[0] < t_stop]
    stopping = [e for e in ev if t_stop <= e[0] < t_down]
    away = [e for e in ev if t_down <= e[0] < t_start]
    starting = [e for e in ev if t_start <= e[0] < t_up]
    after = [e for e in ev if e[0] >= t_up]

    def summary(es):
        c = collections.Counter()
        for e in es:
            c[(e[2], e[3])] += 1
        return ", ".join(f"{route} {status}×{n}" for (route, status), n in sorted(c.items(), key=str)) or "none"

    def lat(es):
        ms = [e[4] for e in es if e[4] is not None]
        return f"p50 {pct(ms, 50):.0f} ms, max {max(ms) if ms else float('nan'):.0f} ms" if ms else "none"

    log(f"   before the stop: {len(before)} requests: {summary(before)}")
    log(f"   while stopping ({t_down - t_stop:.1f} s): {len(stopping)}: {summary(stopping)}")
    log(f"   while away ({t_start - t_down:.1f} s): {len(away)} requests ({lat(away)}): {summary(away)}")
    log(f"   while starting ({t_up - t_start:.1f} s): {len(starting)}: {summary(starting)}")
    shown = []
    for e in away[:1] + [e for e in away if e[3] != 503][:2] + [e for e in ev if e[3] == 500][:2]:
        if e in shown:
            continue
        shown.append(e)
        answered = e[0] + (e[4] or 0) / 1000
        log(f"     e.g. {e[1]} {e[2]} sent {e[0] - t_down:+.2f} s after the stop -> {e[3]} after {e[4] or 0:.0f} ms "
            f"({answered - t_up:+.2f} s from PostgreSQL back): {bytes(e[5]).decode('utf-8', 'replace')[:120]!r}")
    ok2 = lambda e: isinstance(e[3], int) and 200 <= e[3] < 300
    run.check(all(ok2(e) for e in before), "pg restart: 2xx before the stop", f"{len(before)} requests",
              summary([e for e in before if not ok2(e)]))
    five00 = [e for e in ev if e[3] == 500 or (isinstance(e[3], int) and e[3] >= 500 and e[3] != 503)]
    run.check(not five00, "pg restart: no 5xx other than 503", "", f"{len(five00)}: {summary(five00)}; first body: "
              f"{bytes(five00[0][5]).decode('utf-8', 'replace')[:200]!r}" if five00 else "")
    hung = [e for e in ev if e[3] == "timeout" or (e[4] or 0) > args.hang * 1000]
    run.check(not hung, f"pg restart: every request answered within {args.hang} s", "",
              f"{len(hung)}: {summary(hung)}")
    # A request sent while PostgreSQL is away gets a 503 (the console waits
    # 5 s for a connection), or a 2xx only when it waited the outage out and
    # was answered once PostgreSQL was back; any 503 at all must come when the
    # outage is longer than that wait.
    back = lambda e: e[0] + (e[4] or 0) / 1000 >= t_start
    not503 = [e for e in away if e[3] != 503 and not (ok2(e) and back(e))]
    got503 = [e for e in away if e[3] == 503]
    run.check(away and not not503 and (got503 or args.pg_down <= 5),
              "pg restart: 503 while PostgreSQL is away (or answered once it is back)",
              f"{len(away)} requests: {summary(away)} ({lat(away)})",
              (f"{len(not503)} of {len(away)} neither 503 nor answered after PostgreSQL was back: "
               f"{summary(not503)}" if not503 else f"no 503 in a {args.pg_down} s outage: {summary(away)}")
              if away else "no request was made")
    # Recovery: per route, the last answer that was an error status or a
    # timeout (a connection dropped by the panic above is counted apart).
    dropped = lambda e: isinstance(e[3], str) and e[3].startswith("conn:")
    for e in before + after:
        if dropped(e):
            run.bad.append(dict(phase="pg-restart, outside the outage", route=e[2], status=e[3], ms=e[4], body="",
                                t=round(e[0] - run.t0, 2), client=e[1]))
    last_bad = {}
    first_good = {}
    for e in after:
        if dropped(e):
            continue
        if not ok2(e):
            last_bad[e[2]] = max(last_bad.get(e[2], 0), e[0] - t_up)
        elif e[2] not in first_good:
            first_good[e[2]] = e[0] - t_up
    tail = [e for e in after if e[0] >= t_up + args.recover - 2 and not dropped(e)]
    log(f"   after the start: {len(after)} requests: {summary(after)}")
    log("   first 2xx after the start: " + ", ".join(f"{r} +{t:.1f} s" for r, t in sorted(first_good.items())))
    if last_bad:
        log("   last error after the start: " + ", ".join(f"{r} +{t:.1f} s" for r, t in sorted(last_bad.items())))
    run.check(tail and all(ok2(e) for e in tail) and len(first_good) >= 3,
              f"pg restart: recovered without a console restart within {args.recover} s",
              f"every route 2xx again; last error at +{max(last_bad.values()) if last_bad else 0:.1f} s",
              f"in the last 2 s of the window: {summary([e for e in tail if not ok2(e)])}; "
              f"routes that got a 2xx after the start: {sorted(first_good)}")
    L.judge_followers(fres, "pg restart")
    st = await L.job_status(conn, name)
    deadline = time.time() + 20
    while st.get("status") in ("running", "pending") and time.time() < deadline:
        await asyncio.sleep(0.5)
        st = await L.job_status(conn, name)
    run.check(st.get("status") == "succeeded", "pg restart: the job that ran through it succeeded",
              "", f"status {st.get('status')}: {st.get('message')}")
    await conn.close()
    await L.read_back("pg restart")
    pg_log = pg.server_log()
    log(f"   PostgreSQL log: {pg_log.count('FATAL')} FATAL lines (connections refused while it stopped/started)")


# ---------------------------------------------------------------- one database


def console_log_checks(run, console, label):
    text = console.log_text()
    lines = text.splitlines()
    locked = [l for l in lines if LOCKED in l]
    panics = [l for l in lines if "panicked" in l]
    warn = [l for l in lines if " WARN " in l or " ERROR " in l]
    example = locked[0][:300] if locked else (repr(run.locked_bodies[0][:4]) if run.locked_bodies else "")
    run.check(not locked and not run.locked_bodies, f'{label}: no "{LOCKED}"',
              f"none in {len(lines)} console log lines nor in any answer",
              f"{len(locked)} console log lines, {len(run.locked_bodies)} answers; e.g. {example}")
    if panics:
        where = collections.Counter()
        for n, l in enumerate(lines):
            if "panicked" in l:
                frames = [f.strip() for f in lines[n + 1:n + 12] if re.match(r"\s+\d+: ", f)]
                where[(l.split(" panicked at ")[-1][:120], (lines[n + 1] if n + 1 < len(lines) else "")[:120],
                       next((f for f in frames if "reactive_graph" not in f and "core::" not in f
                             and "rust_begin_unwind" not in f), "")[:120])] += 1
        detail = f"{len(panics)} panics: " + "; ".join(f"{n}× at {a} “{m}” in {f}" for (a, m, f), n in where.most_common(3))
    else:
        detail = ""
    run.check(not panics, f"{label}: no panic in the console's output", "", detail)
    if warn:
        msgs = collections.Counter(re.sub(r"^\S+\s+", "", l)[:160] for l in warn)
        log(f"   console log: {len(warn)} WARN/ERROR lines; most common:")
        for m, n in msgs.most_common(6):
            log(f"     {n}× {m}")


def print_table(run):
    rows = []
    for (phase, route), codes in sorted(run.codes.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        ms = run.lat.get((phase, route), [])
        n = sum(codes.values())
        ok = sum(v for k, v in codes.items() if isinstance(k, int) and 200 <= k < 300)
        other = ", ".join(f"{k}×{v}" for k, v in codes.items() if not (isinstance(k, int) and 200 <= k < 300))
        rows.append((phase, route, n, ok, other, pct(ms, 50), pct(ms, 99), max(ms) if ms else float("nan")))
    w = max([len(r[1]) for r in rows] + [5])
    log(f"\n{'phase':<14} {'route':<{w}} {'count':>7} {'2xx':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  other")
    for r in rows:
        log(f"{r[0]:<14} {r[1]:<{w}} {r[2]:>7} {r[3]:>7} {r[5]:>8.1f} {r[6]:>8.1f} {r[7]:>8.1f}  {r[4][:70]}")


async def run_db(args, kind):
    run = Run(kind)
    pg = None
    workdir = tempfile.mkdtemp(prefix=f"pc-load-{kind}.")
    console = None
    L = None
    log(f"\n==== {kind}: work dir {workdir} ====")
    try:
        if kind == "postgres":
            pg = Postgres(args)
            t = time.time()
            await asyncio.to_thread(pg.init)
            log(f"   PostgreSQL ({pg.bin}) on 127.0.0.1:{pg.port} in {time.time() - t:.1f} s")
        console = Console(args, pg.url if pg else None, workdir)
        console.admin("create-account", "--name", args.account, "--email", args.email, "--password-stdin",
                      stdin=args.password + "\n")
        key = console.admin("create-key", "--account", args.account, "--user", args.email).strip().splitlines()[-1]
        t = time.time()
        console.start()
        log(f"   console on 127.0.0.1:{console.ep.port} ({args.binary}), up in {time.time() - t:.1f} s")
        L = Load(args, run, console, key)
        conn = Conn(console.ep)
        names = [f"lines-{n}" for n in range(1, args.jobs + 1)]
        lead = 4.0
        for n in names:
            pods = await L.submit_job(conn, n, args.seconds + lead, args.trainers)
            L.jobs.append((n, pods))
        await L.wait_running(conn, names)
        L.job_end = time.time() + args.seconds + lead
        await conn.close()
        await phase_load(L, run, args)
        conn = Conn(console.ep)
        statuses = {}
        deadline = max(time.time(), L.job_end) + 20
        for n in names:
            st = await L.job_status(conn, n)
            while st.get("status") in ("running", "pending") and time.time() < deadline:
                await asyncio.sleep(0.5)
                st = await L.job_status(conn, n)
            statuses[n] = f"{st.get('status')} {st.get('message') or ''}".strip()
        run.check(all(v == "succeeded" for v in statuses.values()), "load: the log jobs succeeded",
                  f"{len(names)} jobs", "; ".join(f"{n}: {v}" for n, v in statuses.items() if v != "succeeded"))
        await conn.close()
        if not args.no_kill:
            await phase_kill(L, run, args)
        if pg is not None and not args.no_pg_restart:
            await phase_pg_restart(L, run, args, pg)
        run.phase = "end"
        if "5xx" in args.inject:
            run.note("GET /injected", 500, 1.0, b"injected")
        if "locked" in args.inject:
            run.note("GET /injected", 200, 1.0, b"error: database is locked")
        bad = [b for b in run.bad if b["phase"] in ("setup", "load", "after restart", "end",
                                                    "pg-restart, outside the outage")]
        fives = [b for b in bad if isinstance(b["status"], int) and b["status"] >= 500]
        conns = [b for b in bad if not isinstance(b["status"], int)]
        run.check(not fives, f"{kind}: no 5xx outside the fault windows", f"{sum(sum(c.values()) for c in run.codes.values())} answers",
                  f"{len(fives)}: " + "; ".join(f"t+{b['t']} s {b['route']} {b['status']} {b['body'][:150]!r}" for b in fives[:4]))
        by_route = collections.Counter(f"{b['route']} {b['status']}" for b in conns)
        run.check(not conns, f"{kind}: no timeouts or broken connections outside the fault windows", "",
                  f"{len(conns)}: " + ", ".join(f"{k} ×{n}" for k, n in by_route.most_common()) +
                  "; first at " + ", ".join(f"t+{b['t']} s" for b in conns[:4]))
        kill_bad = [b for b in run.bad if b["phase"] == "kill-9" and isinstance(b["status"], int)]
        run.check(not kill_bad, f"{kind}: no 5xx before the kill", "",
                  "; ".join(f"{b['route']} {b['status']} {b['body'][:150]!r}" for b in kill_bad[:4]))
        console_log_checks(run, console, kind)
        print_table(run)
    except Exception as e:
        import traceback
        traceback.print_exc()
        run.fail(f"{kind}: the run itself", f"{type(e).__name__}: {e}")
        if console:
            log("   console log tail:\n" + "\n".join(console.log_text().splitlines()[-15:]))
    finally:
        if L is not None:
            L.aborted = True
        if console:
            console.stop()
        if pg:
            pg.cleanup(args.keep)
        # The console stopped; any pod process left (none expected: each ends on its own) is ours to end.
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"   kept {workdir}" + (f" and {pg.dir}" if pg else ""))
    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=os.path.join(REPO, "target/release/paddlecloud"),
                   help="the console binary (default: target/release/paddlecloud of this repository)")
    p.add_argument("--site", default=None, help="the built site, LEPTOS_SITE_ROOT (default: target/site of this "
                   "repository); a Leptos.toml beside it, or the repository's, is passed as --leptos-config")
    p.add_argument("--db", choices=["sqlite", "postgres", "both", "auto"], default=None,
                   help="default: sqlite; with --short: auto (both when PostgreSQL is installed)")
    p.add_argument("--short", action="store_true", help="CI: ~10 s of load, small counts, kill -9, both databases")
    p.add_argument("--seconds", type=float, default=None, help="load phase (default 60; --short 10)")
    p.add_argument("--followers", type=int, default=None, help="default 200; --short 20")
    p.add_argument("--writers", type=int, default=None, help="default 50; --short 5")
    p.add_argument("--pages", type=int, default=None, help="default 20; --short 4")
    p.add_argument("--follow-via", choices=["rest", "sse", "mixed"], default="rest",
                   help="followers use the REST log route (Bearer key), /events/log (session cookie) or both")
    p.add_argument("--jobs", type=int, default=4, help="jobs whose pods print lines (default 4)")
    p.add_argument("--trainers", type=int, default=2, help="pods per job (default 2)")
    p.add_argument("--line-interval", type=float, default=0.05)
    p.add_argument("--tail", type=int, default=10)
    p.add_argument("--batch", type=int, default=100, help="points per metrics POST (default 100)")
    p.add_argument("--write-interval", type=float, default=0.5, help="mean seconds between a writer's batches")
    p.add_argument("--page-interval", type=float, default=0.0, help="seconds between a page client's requests")
    p.add_argument("--kill-after", type=float, default=None, help="seconds of writes before the kill (5; --short 3)")
    p.add_argument("--pg-down", type=float, default=8.0, help="seconds PostgreSQL stays stopped (longer than the console's 5 s wait for a connection, so that 503s must come)")
    p.add_argument("--pg-stop-mode", choices=["smart", "fast", "immediate"], default="fast")
    p.add_argument("--pg-followers", type=int, default=4)
    p.add_argument("--recover", type=float, default=15.0, help="seconds the console gets to answer 2xx again")
    p.add_argument("--hang", type=float, default=15.0, help="a request slower than this is a hang")
    p.add_argument("--follow-grace", type=float, default=15.0, help="seconds a follow stream may outlive its pod")
    p.add_argument("--no-kill", action="store_true")
    p.add_argument("--no-pg-restart", action="store_true")
    p.add_argument("--keep", action="store_true", help="keep the temp dirs")
    p.add_argument("--account", default="loadtest")
    p.add_argument("--email", default="load@example.com")
    p.add_argument("--password", default="a long load password")
    p.add_argument("--watchdog", type=float, default=None, help="seconds before giving up on everything")
    p.add_argument("--inject", default="", help="comma-separated faults the checks must catch (a self-test of this "
                   "script): lost-point, gap, 5xx, locked")
    args = p.parse_args()

    short = args.short
    def d(v, full, s):
        return v if v is not None else (s if short else full)
    args.seconds = d(args.seconds, 60.0, 10.0)
    args.followers = d(args.followers, 200, 20)
    args.writers = d(args.writers, 50, 5)
    args.pages = d(args.pages, 20, 4)
    args.kill_after = d(args.kill_after, 5.0, 3.0)
    if short:
        args.pg_down = min(args.pg_down, 7.0)
        args.recover = min(args.recover, 10.0)
    args.db = args.db or ("auto" if short else "sqlite")
    args.binary = os.path.abspath(args.binary)
    if args.site is None:
        args.site = os.path.join(REPO, "target/site")
    args.site = os.path.abspath(args.site)
    if not os.access(args.binary, os.X_OK):
        raise SystemExit(f"no console binary at {args.binary} (build it, or pass --binary)")
    if not os.path.isdir(args.site):
        raise SystemExit(f"no site at {args.site} (pass --site)")
    have_pg = any(os.path.exists(f"/usr/lib/postgresql/{v}/bin/initdb")
                  for v in (os.listdir("/usr/lib/postgresql") if os.path.isdir("/usr/lib/postgresql") else []))
    dbs = {"sqlite": ["sqlite"], "postgres": ["postgres"], "both": ["sqlite", "postgres"],
           "auto": ["sqlite"] + (["postgres"] if have_pg else [])}[args.db]
    if args.db == "auto" and not have_pg:
        log("(PostgreSQL binaries not found: SQLite only)")
    per_db = args.seconds + args.follow_grace + args.kill_after + 90 + (
        args.pg_down + args.recover + args.follow_grace + 60)
    watchdog = args.watchdog or per_db * len(dbs) + 60

    started = time.time()
    runs = []

    async def all_dbs():
        for kind in dbs:
            runs.append(await run_db(args, kind))

    loop = asyncio.new_event_loop()
    main_task = loop.create_task(asyncio.wait_for(all_dbs(), watchdog))
    try:
        loop.run_until_complete(main_task)
    except asyncio.TimeoutError:
        log(f"FAIL watchdog: gave up after {watchdog:.0f} s")
        runs.append(Run("watchdog"))
        runs[-1].failures.append(("watchdog", f"no result after {watchdog:.0f} s"))
    except KeyboardInterrupt:
        # Let every run's finally stop its console and PostgreSQL.
        main_task.cancel()
        loop.run_until_complete(asyncio.gather(main_task, return_exceptions=True))
        raise SystemExit("interrupted")
    finally:
        left = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in left:
            t.cancel()
        if left:
            done, pending = loop.run_until_complete(asyncio.wait(left, timeout=10))
            for t in pending:
                log(f"(a task did not stop: {t!r:.200})")
        loop.close()
    log(f"\nTotal {time.time() - started:.0f} s on {os.cpu_count()} CPUs; databases: {', '.join(dbs)}")
    failed = [(r.name, c, d) for r in runs for c, d in r.failures]
    if failed:
        log(f"RESULT: FAIL ({len(failed)})")
        for name, c, d in failed:
            log(f"  [{name}] {c}: {d[:400]}")
        sys.exit(1)
    log(f"RESULT: PASS ({sum(len(r.passes) for r in runs)} checks)")


if __name__ == "__main__":
    main()
