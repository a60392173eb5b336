"""The stand-in console of the fetcher's tests (test_fetch_inputs.py): a threaded
HTTP server on 127.0.0.1 that records requests, the console's ways of answering
(JSON, its error shape, a zip streamed as it is written), and faults (an error, a
given zip, an answer cut short). Standard library only.
"""

import io
import json
import threading
import urllib.parse
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple


class Request(NamedTuple):
    path: str
    query: dict
    authorization: str


class StubConsole:
    """Serves GET requests with ``self.answer(handler, request)`` on 127.0.0.1,
    recording each in ``requests``; ``lock`` guards what tests change meanwhile."""

    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        console = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                request = Request(
                    url.path,
                    urllib.parse.parse_qs(url.query),
                    self.headers.get("Authorization", ""),
                )
                with console.lock:
                    console.requests.append(request)
                console.answer(self, request)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def answer(self, handler, request):
        raise NotImplementedError

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def zip_of(files, directories=()):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for d in directories:
            z.writestr(d.rstrip("/") + "/", b"")
        for path, data in files.items():
            z.writestr(path, data)
    return out.getvalue()


def send(handler, status, body, content_type, headers=()):
    handler.send_response(status)
    for k, v in headers:
        handler.send_header(k, v)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def send_json(handler, status, value, headers=()):
    send(handler, status, json.dumps(value).encode(), "application/json", headers)


def send_error(handler, status, code, message):
    headers = [("WWW-Authenticate", 'Bearer realm="paddlecloud"')] if status == 401 else []
    send_json(handler, status, {"error": {"code": code, "message": message, "field": None}}, headers)


def send_streamed(handler, body, headers=(), piece=64 * 1024):
    """As the console sends a zip it writes as it streams: chunked, no length."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/zip")
    for k, v in headers:
        handler.send_header(k, v)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    for at in range(0, len(body), piece):
        part = body[at : at + piece]
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
    handler.wfile.write(b"0\r\n\r\n")


# Faults: what a request meets before the normal answer (True: answered).
def refuse_with(status, code, message):
    def fault(h):
        send_error(h, status, code, message)
        return True

    return fault


def answer_with_zip(archive, headers=()):
    def fault(h):
        send_streamed(h, archive, headers)
        return True

    return fault


def cut_short(body, sent, streamed=False):
    """Promises all of ``body`` (as Content-Length, or as one chunk of a streamed
    answer) but sends ``sent`` bytes of it and hangs up."""

    def fault(h):
        h.send_response(200)
        if streamed:
            h.send_header("Content-Type", "application/zip")
            h.send_header("Transfer-Encoding", "chunked")
        else:
            h.send_header("Content-Type", "application/octet-stream")
            h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        head = b"%x\r\n" % len(body) if streamed else b""
        h.wfile.write(head + body[:sent])
        h.wfile.flush()
        h.close_connection = True
        return True

    return fault


def files_under(folder):
    """Every file below ``folder`` (which may be a link to it), by relative path."""
    folder = Path(folder)
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
