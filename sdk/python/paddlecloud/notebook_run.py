"""Runs a notebook file as a job: the replica's program of a notebook run.

The console makes a notebook run (``POST /api/v1/notebooks/<name>/runs``, the
notebook history page's "Run as a job", ``paddlecloud notebook run``) a job of one
trainer whose command is::

    python3 -m paddlecloud.notebook_run --parameters '{"epochs": 5}'

in the run's environment, to which the console adds papermill and ipykernel. This
program:

1. fetches the notebook version the run took (``GET
   /api/v1/jobs/<job>/notebook/input``, with the job's own token) into
   ``input.ipynb`` in the job's folder;
2. runs it with papermill in the ``python3`` kernel of this Python, the values
   injected after the cell tagged ``parameters`` (papermill's
   ``injected-parameters`` cell), in the job's folder, each cell's output printed
   to the job's log as it comes;
3. sends the executed notebook back (``PUT /api/v1/jobs/<job>/notebook/output``)
   after each cell that changed it (at most every 2 seconds), so the job's page
   shows how far it is, and once more at the end;
4. exits 0 when every cell ran, 1 when a cell raised (the job fails; papermill
   marks that cell and the console shows it on the job's page), 2 when it could
   not run the notebook at all.

Environment (set by the console): ``PADDLECLOUD_SERVER``, ``PADDLECLOUD_JOB_TOKEN``,
``PADDLE_JOB_ID``.
"""

import argparse
import json
import logging
import os
import sys
import tempfile
import threading
import urllib.parse
import urllib.request

from paddlecloud.download import Refused, download, retrying, say

INPUT = "input.ipynb"
OUTPUT = "output.ipynb"
#: Seconds between two uploads of the notebook while it runs.
EVERY = 2.0


def notebook_url(server, job, which):
    return (
        server.rstrip("/")
        + "/api/v1/jobs/"
        + urllib.parse.quote(job, safe="")
        + "/notebook/"
        + which
    )


def upload(url, token, path):
    """PUTs the file at ``path`` (retried as downloads are)."""

    def once():
        with open(path, "rb") as f:
            body = f.read()
        request = urllib.request.Request(
            url,
            data=body,
            method="PUT",
            headers={
                "Authorization": "Bearer " + token,
                "Content-Type": "application/x-ipynb+json",
            },
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()

    retrying(once)


class Uploader(threading.Thread):
    """Sends the output notebook whenever papermill has written it anew."""

    def __init__(self, url, token, path):
        super().__init__(daemon=True)
        self.url, self.token, self.path = url, token, path
        self.sent = None
        self.done = threading.Event()
        self.lock = threading.Lock()

    def send_if_changed(self):
        with self.lock:
            try:
                stamp = os.stat(self.path).st_mtime_ns
            except FileNotFoundError:
                return
            if stamp == self.sent:
                return
            try:
                upload(self.url, self.token, self.path)
                self.sent = stamp
            except Exception as err:  # the run goes on; the last upload counts
                say(f"paddlecloud: could not send the notebook's progress: {err}")

    def run(self):
        while not self.done.wait(EVERY):
            self.send_if_changed()

    def finish(self):
        self.done.set()
        self.join()
        self.send_if_changed()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m paddlecloud.notebook_run")
    parser.add_argument("--parameters", default="{}", help="the values, a JSON object")
    parser.add_argument("--kernel", default="python3", help="the kernel to run it in")
    args = parser.parse_args(argv)
    try:
        parameters = json.loads(args.parameters)
        if not isinstance(parameters, dict):
            raise ValueError("not an object")
    except ValueError as err:
        say(f"paddlecloud: --parameters is not a JSON object: {err}")
        return 2
    server = os.environ.get("PADDLECLOUD_SERVER")
    token = os.environ.get("PADDLECLOUD_JOB_TOKEN")
    job = os.environ.get("PADDLE_JOB_ID")
    if not (server and token and job):
        say("paddlecloud: run me as a notebook run's job (PADDLECLOUD_SERVER, "
            "PADDLECLOUD_JOB_TOKEN and PADDLE_JOB_ID are unset).")
        return 2
    if not os.access(os.getcwd(), os.W_OK):
        # An image whose working directory its user cannot write (a pod's).
        os.chdir(tempfile.mkdtemp(prefix="notebook-run-"))
    try:
        import papermill
    except ImportError as err:
        say(f"paddlecloud: papermill is missing from this Python ({sys.executable}): {err}")
        return 2
    try:
        with open(INPUT, "wb") as out:
            retrying(lambda: (out.seek(0), out.truncate(), download(
                notebook_url(server, job, "input"), token, out)))
    except Refused as err:
        say(f"paddlecloud: the console refused the notebook: {err}")
        return 2
    values = ", ".join(f"{k}={v!r}" for k, v in parameters.items()) or "none"
    say(f"paddlecloud: running the notebook with papermill {papermill.__version__} "
        f"in kernel {args.kernel}; values: {values}")
    # papermill says which cell runs and prints each cell's output.
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
    uploader = Uploader(notebook_url(server, job, "output"), token, OUTPUT)
    uploader.start()
    failed = None
    try:
        papermill.execute_notebook(
            INPUT,
            OUTPUT,
            parameters=parameters,
            kernel_name=args.kernel,
            progress_bar=False,
            log_output=True,
            request_save_on_cell_execute=True,
            cwd=os.getcwd(),
        )
    except papermill.PapermillExecutionError as err:
        failed = err
    finally:
        uploader.finish()
    if failed is not None:
        say(f"paddlecloud: the cell In [{failed.exec_count}] failed: "
            f"{failed.ename}: {failed.evalue}")
        return 1
    say("paddlecloud: every cell ran.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
