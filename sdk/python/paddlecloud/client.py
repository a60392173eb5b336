"""The REST client: one `Client` per server and access key."""

from __future__ import annotations

import base64
import datetime as _dt
import http.client
import io
import json
import math
import os
import shlex
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Dict, List, Optional, Sequence, Union

from .errors import PaddleCloudError, code_for_status
from .files import FilesMixin

__all__ = ["Client", "DEFAULT_CREDENTIALS", "credentials_path", "load_credentials"]

#: Where the credentials file is looked for when neither an argument nor
#: ``PADDLECLOUD_CREDENTIALS`` names one.
DEFAULT_CREDENTIALS = os.path.join("~", ".config", "paddlecloud", "credentials.json")
CREDENTIALS_ENV = "PADDLECLOUD_CREDENTIALS"
SERVER_ENV = "PADDLECLOUD_SERVER"
ACCOUNT_ENV = "PADDLECLOUD_ACCOUNT"
# A notebook's kernels get its own key here (and the console's URL in SERVER_ENV).
KEY_ENV = "PADDLECLOUD_KEY"

#: Statuses a job does not leave by itself.
FINISHED = frozenset({"succeeded", "failed", "stopped"})

_USER_AGENT = "paddlecloud-python/0.1.0"
_HOW_TO_GET_A_KEY = (
    "Download credentials.json from the Account page of the console, or ask an "
    "administrator to run `paddlecloud admin create-key --account ACCOUNT --user EMAIL`."
)
_UNSET: Any = object()

Quantity = Union[str, int, float]
Argv = Union[str, Sequence[str]]
DateLike = Union[str, _dt.date, _dt.datetime]


def credentials_path(
    credentials: Optional[Union[str, os.PathLike]] = None, account: Optional[str] = None
) -> str:
    """The credentials file to read: the argument, else ``$PADDLECLOUD_CREDENTIALS``,
    else ``~/.config/paddlecloud/credentials.json``. A key acts in the account it was
    made in, so a user of several accounts keeps one file each: with ``account`` (or
    ``$PADDLECLOUD_ACCOUNT``) the default is ``credentials-ACCOUNT.json`` beside it."""
    chosen = credentials or os.environ.get(CREDENTIALS_ENV)
    if not chosen:
        account = (account or os.environ.get(ACCOUNT_ENV) or "").strip()
        chosen = DEFAULT_CREDENTIALS
        if account:
            chosen = os.path.join(os.path.dirname(DEFAULT_CREDENTIALS), f"credentials-{account}.json")
    return os.path.expanduser(os.fspath(chosen))


def load_credentials(path: Union[str, os.PathLike]) -> Dict[str, Any]:
    """Reads a credentials file (``{"server", "account", "user", "key"}``; other keys
    are kept but unused). Raises `PaddleCloudError` (code ``credentials``) saying what
    to do when it is missing or malformed."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise PaddleCloudError(
            f"No PaddleCloud credentials file at {path}. {_HOW_TO_GET_A_KEY} Save it "
            f"there, set {CREDENTIALS_ENV} to its path, or pass server= and key= to Client().",
            code="credentials",
        ) from None
    except (OSError, ValueError) as err:
        raise PaddleCloudError(
            f"The PaddleCloud credentials file {path} could not be read ({err}). "
            f"{_HOW_TO_GET_A_KEY}",
            code="credentials",
        ) from None
    if not isinstance(data, dict):
        raise PaddleCloudError(
            f"The PaddleCloud credentials file {path} is not a JSON object. {_HOW_TO_GET_A_KEY}",
            code="credentials",
        )
    return data


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """The API never redirects; a redirect means the address is not the API's
    (e.g. a sign-in page), and is reported rather than followed."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401
        return None


def _quote(segment: str) -> str:
    if not isinstance(segment, str) or not segment:
        raise ValueError(f"expected a non-empty name, got {segment!r}")
    return urllib.parse.quote(segment, safe="")


def _argv(value: Optional[Argv], what: str) -> List[str]:
    """A command or argument list: a string is split like a shell would."""
    if value is None:
        return []
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{what} must be a string or a list of strings, not {type(value).__name__}")
    out = []
    for item in value:
        if isinstance(item, os.PathLike):
            item = os.fspath(item)
        if not isinstance(item, str):
            raise TypeError(f"{what} items must be strings, not {type(item).__name__}")
        out.append(item)
    return out


def _env(env: Any) -> List[Dict[str, str]]:
    """``{"K": "V"}`` or ``[("K", "V")]`` → ``[{"name": "K", "value": "V"}]``."""
    if env is None:
        return []
    pairs = env.items() if isinstance(env, Mapping) else env
    out = []
    for pair in pairs:
        if isinstance(pair, Mapping):
            name, value = pair["name"], pair["value"]
        else:
            name, value = pair
        out.append({"name": str(name), "value": str(value)})
    return out


def _secret_uses(secrets: Any) -> List[Dict[str, str]]:
    """The account's secrets a workload uses: ``"S3_KEY=s3-key"`` (a variable),
    ``"file:gcp.json=gcp"`` (a file in ``$PADDLECLOUD_SECRETS_DIR``) or a dict
    ``{"secret", "env"}`` / ``{"secret", "file"}`` → a list of such dicts. A
    string alone may hold several lines, as the console's Secrets field does."""
    if secrets is None:
        return []
    if isinstance(secrets, str):
        secrets = secrets.splitlines()
    elif isinstance(secrets, (bytes, Mapping)) or not isinstance(secrets, Iterable):
        raise TypeError(
            f"secrets must be a list of 'VARIABLE=secret', 'file:name=secret' or dicts, "
            f"not {type(secrets).__name__}"
        )
    out = []
    for item in secrets:
        if isinstance(item, Mapping):
            out.append({str(k): str(v) for k, v in item.items() if v is not None})
            continue
        if not isinstance(item, str):
            raise TypeError(f"secrets items must be strings or dicts, not {type(item).__name__}")
        line = item.strip()
        if not line:
            continue
        target, eq, secret = line.rpartition("=")
        if not eq or not target.strip():
            raise ValueError(
                f"{item!r} does not say where the secret goes: write VARIABLE=secret "
                "or file:name=secret"
            )
        target, secret = target.strip(), secret.strip()
        if target.startswith("file:"):
            out.append({"secret": secret, "file": target[len("file:"):].strip()})
        else:
            out.append({"secret": secret, "env": target})
    return out


def _cpu(value: Quantity, what: str) -> str:
    """CPU as a Kubernetes quantity: ``"500m"``, ``"2"``; numbers are cores."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a quantity like '500m' or 2, not a bool")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        millis = round(value * 1000)
        return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} must be a quantity like '500m' or 2, not {type(value).__name__}")


def _memory(value: Quantity, what: str) -> str:
    """Memory as a Kubernetes quantity: ``"512Mi"``, ``"4Gi"``; an int is bytes."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError(f"{what} must be a quantity like '4Gi', not {type(value).__name__}")
    return str(value)


def _count(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    return value


def _json_float(value: Any) -> Union[float, str]:
    """A metric value for JSON: a number, or "NaN"/"Infinity"/"-Infinity",
    which JSON cannot write as numbers. Accepts anything ``float()`` takes,
    and 1-element tensors or arrays through ``.item()``."""
    if hasattr(value, "item") and not isinstance(value, (int, float)):
        value = value.item()
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _from_json_float(value: Any) -> float:
    return float(value) if not isinstance(value, str) else float(value.replace("Infinity", "inf"))


def _date(value: Optional[DateLike], what: str) -> Optional[str]:
    """A day as the API takes it: ``YYYY-MM-DD`` (UTC)."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc)
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} must be a date, a datetime or 'YYYY-MM-DD', not {type(value).__name__}")


class Client(FilesMixin):
    """A connection to one PaddleCloud Console as one user, by access key.

    ``Client()`` reads the credentials file (see `credentials_path`); ``server`` and
    ``key`` override it, and ``$PADDLECLOUD_SERVER`` overrides the file's server.
    With ``$PADDLECLOUD_SERVER`` and ``$PADDLECLOUD_KEY`` set (a notebook's kernel
    has both) no file is read.
    ``timeout`` is in seconds, per request (followed logs wait for as long as the
    pod is quiet unless ``idle_timeout`` is given).
    """

    def __init__(
        self,
        server: Optional[str] = None,
        key: Optional[str] = None,
        credentials: Optional[Union[str, os.PathLike]] = None,
        timeout: Optional[float] = 30,
        account: Optional[str] = None,
    ) -> None:
        self.account: Optional[str] = None
        self.user: Optional[str] = None
        server = server or os.environ.get(SERVER_ENV) or None
        if not key and not credentials and not account and server:
            # In a notebook: its own key, with no credentials file to read.
            key = os.environ.get(KEY_ENV) or None
        if not server or not key:
            path = credentials_path(credentials, account)
            data = load_credentials(path)
            server = server or data.get("server")
            key = key or data.get("key")
            self.account = data.get("account")
            self.user = data.get("user")
            missing = [k for k, v in (("server", server), ("key", key)) if not v]
            if missing:
                raise PaddleCloudError(
                    f"The PaddleCloud credentials file {path} has no "
                    f"{' or '.join(repr(m) for m in missing)}. {_HOW_TO_GET_A_KEY}",
                    code="credentials",
                )
        if not isinstance(server, str) or not server.startswith(("http://", "https://")):
            raise PaddleCloudError(
                f"The server address {server!r} is not a URL: give it like http://127.0.0.1:3000.",
                code="credentials",
            )
        if not isinstance(key, str):
            raise PaddleCloudError("The access key must be a string.", code="credentials")
        self.server = server.rstrip("/")
        self._key = key.strip()
        self.timeout = timeout
        self._opener = urllib.request.build_opener(_NoRedirect)

    def __repr__(self) -> str:
        who = f" account={self.account!r} user={self.user!r}" if self.account else ""
        return f"<paddlecloud.Client {self.server}{who}>"

    # ----------------------------------------------------------------- transport

    def _open(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Sequence[tuple]] = None,
        body: Any = _UNSET,
        timeout: Any = _UNSET,
        accept: str = "application/json",
        stream: Optional[tuple] = None,
        headers: Optional[Mapping[str, str]] = None,
    ):
        url = f"{self.server}/api/v1{path}"
        if query:
            pairs = [(k, str(v)) for k, v in query if v is not None]
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        headers = {
            **(headers or {}),
            "Authorization": f"Bearer {self._key}",
            "Accept": accept,
            "User-Agent": _USER_AGENT,
        }
        data = None
        if stream is not None:
            # (file object, size): http.client sends it block by block.
            data = stream[0]
            headers["Content-Type"] = "application/octet-stream"
            headers["Content-Length"] = str(stream[1])
        elif body is not _UNSET:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        elif method in ("POST", "PUT", "PATCH"):
            data = b""
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        wait = self.timeout if timeout is _UNSET else timeout
        try:
            return self._opener.open(request, timeout=wait)
        except urllib.error.HTTPError as err:
            raise self._http_error(err) from None
        except urllib.error.URLError as err:
            if isinstance(err.reason, socket.timeout):
                raise self._timeout(wait) from None
            raise PaddleCloudError(
                f"Could not reach the PaddleCloud server at {self.server}: {err.reason}.",
                code="connection",
            ) from None
        except socket.timeout:
            raise self._timeout(wait) from None
        except (ConnectionError, http.client.HTTPException) as err:
            raise PaddleCloudError(
                f"The connection to {self.server} failed: {err}.", code="connection"
            ) from None

    def _timeout(self, wait) -> PaddleCloudError:
        return PaddleCloudError(
            f"The PaddleCloud server at {self.server} did not answer within {wait} s.",
            code="timeout",
        )

    def _http_error(self, err: urllib.error.HTTPError) -> PaddleCloudError:
        status = err.code
        try:
            raw = err.read()
        except Exception:  # the body is a courtesy; the status is what counts
            raw = b""
        finally:
            err.close()
        code = message = field = None
        try:
            payload = json.loads(raw.decode("utf-8"))
        except ValueError:
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
            detail = payload["error"]
            code, message, field = detail.get("code"), detail.get("message"), detail.get("field")
        if 300 <= status < 400:
            message = (
                f"The server redirected to {err.headers.get('Location')!r}: is {self.server} "
                "the PaddleCloud Console's address?"
            )
        if not message:
            text = raw.decode("utf-8", "replace").strip()
            if text and not text.lstrip().startswith("<"):
                message = text[:500]
            else:
                message = f"{err.reason or 'HTTP error'} ({err.url})"
        if status == 401:
            message = f"{message} The access key was refused. {_HOW_TO_GET_A_KEY}"
        return PaddleCloudError(
            message, status=status, code=code or code_for_status(status), field=field
        )

    def _json(self, method: str, path: str, **kwargs) -> Any:
        with self._open(method, path, **kwargs) as response:
            raw = self._read(response)
            if response.status == 204 or not raw.strip():
                return None
            try:
                return json.loads(raw.decode("utf-8"))
            except ValueError:
                raise PaddleCloudError(
                    f"The server's answer to {method} {path} is not JSON: {raw[:200]!r}",
                    status=response.status,
                    code="internal",
                ) from None

    def _read(self, response) -> bytes:
        try:
            return response.read()
        except socket.timeout:
            raise self._timeout(self.timeout) from None
        except (ConnectionError, http.client.HTTPException) as err:
            raise PaddleCloudError(
                f"The connection to {self.server} broke while reading the answer: {err}.",
                code="connection",
            ) from None

    # ---------------------------------------------------------------------- jobs

    def create_cloud_job(
        self,
        name: str,
        num_trainer: int,
        mem_per_trainer: Quantity,
        gpu_per_trainer: int,
        cpu_per_trainer: Quantity,
        num_ps: int = 0,
        mem_per_ps: Quantity = "1Gi",
        cpu_per_ps: Quantity = "1",
        *,
        command: Argv,
        args: Optional[Argv] = (),
        image: str = "",
        working_dir: str = "",
        env: Any = None,
        secrets: Any = None,
        datasets: Sequence[str] = (),
        environment: Optional[str] = None,
        models: Sequence[str] = (),
        priority: str = "normal",
        max_runtime: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Submits a distributed job and returns it (status ``pending`` or later).

        ``num_trainer`` trainers each get ``cpu_per_trainer`` CPU (``"500m"``, ``"2"``
        or a number of cores), ``mem_per_trainer`` memory (``"4Gi"``, or bytes as an
        int) and ``gpu_per_trainer`` GPUs; ``num_ps`` parameter servers each get
        ``cpu_per_ps`` and ``mem_per_ps``. ``command`` is the program (a list, or a
        string split like a shell would), ``args`` more arguments, ``env`` a dict of
        extra environment variables for every replica. ``secrets`` names the
        account's secrets every replica gets (see `set_secret`): ``"S3_KEY=s3-key"``
        as a variable, ``"file:gcp.json=gcp"`` as a file in the folder
        ``$PADDLECLOUD_SECRETS_DIR`` names, or dicts ``{"secret", "env"}`` /
        ``{"secret", "file"}``; the spec holds only their names, and the job's
        logs show their values as ``***``. ``datasets`` names the
        datasets it reads (``name`` or ``owner/name``): in the job,
        `paddlecloud.dataset_dir()` is where the first one is. ``environment`` is
        the environment it runs in (``name``, ``owner/name``, either with
        ``:version``; see `save_environment`): the job's ``spec["environment"]``
        records the exact ``owner/name:version`` and ``spec["environment_use"]``
        what it resolved to. ``models`` names the model versions it reads
        (``name``, ``owner/name``, either with ``:version``; none: the newest
        finished one): the job records each as ``owner/name:version`` and
        `paddlecloud.model_dir()` is where the first one is. ``priority``
        (``"low"``, ``"normal"``, ``"high"``) orders it among the account's own
        waiting work; ``"high"`` is for owners and the members they allow
        (others get a `PaddleCloudError` with status 403). See `queue`.
        ``max_runtime`` (``"90m"``, ``"2h"``; ``s``, ``m``, ``h``, ``d``) is its
        time limit once running: past it the job is stopped and fails, and the
        queue estimates starts from it.
        """
        if priority not in ("low", "normal", "high"):
            raise ValueError(f"priority must be low, normal or high, not {priority!r}")
        spec = {
            "name": name,
            "image": image or "",
            "command": _argv(command, "command"),
            "args": _argv(args, "args"),
            "working_dir": working_dir or "",
            "env": _env(env),
            "num_ps": _count(num_ps, "num_ps"),
            "num_trainers": _count(num_trainer, "num_trainer"),
            "ps": {
                "cpu": _cpu(cpu_per_ps, "cpu_per_ps"),
                "memory": _memory(mem_per_ps, "mem_per_ps"),
                "gpu": 0,
            },
            "trainer": {
                "cpu": _cpu(cpu_per_trainer, "cpu_per_trainer"),
                "memory": _memory(mem_per_trainer, "mem_per_trainer"),
                "gpu": _count(gpu_per_trainer, "gpu_per_trainer"),
            },
            "datasets": [datasets] if isinstance(datasets, str) else list(datasets),
            "models": [models] if isinstance(models, str) else list(models),
        }
        uses = _secret_uses(secrets)
        if uses:
            spec["secrets"] = uses
        if environment is not None:
            spec["environment"] = environment
        if priority != "normal":
            spec["priority"] = priority
        if max_runtime is not None:
            spec["max_runtime"] = max_runtime
        return self._json("POST", "/jobs", body=spec)

    def list_jobs_page(
        self,
        status: Optional[str] = None,
        name: Optional[str] = None,
        since: Optional[DateLike] = None,
        until: Optional[DateLike] = None,
        sort: Optional[str] = None,
        page: Optional[int] = None,
        per_page: Optional[int] = None,
    ) -> Dict[str, Any]:
        """One page of jobs: ``{"jobs": [...], "total", "page", "per_page", "now"}``.

        ``status`` is one of pending, running, succeeded, failed, stopped; ``name``
        matches part of the name; ``since``/``until`` are days (``date``, ``datetime``
        or ``"YYYY-MM-DD"``, UTC, both inclusive) the job was submitted in; ``sort``
        is newest (default), oldest, name or status.
        """
        query = [
            ("status", status),
            ("name", name),
            ("from", _date(since, "since")),
            ("to", _date(until, "until")),
            ("sort", sort),
            ("page", page),
            ("per_page", per_page),
        ]
        return self._json("GET", "/jobs", query=query)

    def list_jobs(
        self,
        status: Optional[str] = None,
        name: Optional[str] = None,
        since: Optional[DateLike] = None,
        until: Optional[DateLike] = None,
        sort: Optional[str] = None,
        page: Optional[int] = None,
        per_page: Optional[int] = None,
    ) -> List[Dict[str, Any]]:
        """The jobs that match, as a list (see `list_jobs_page` for the filters).

        Without ``page``, every matching job (all pages are fetched); with it, that
        page only.
        """
        if page is not None:
            return self.list_jobs_page(status, name, since, until, sort, page, per_page)["jobs"]
        jobs: List[Dict[str, Any]] = []
        seen = set()
        number = 1
        while True:
            result = self.list_jobs_page(
                status, name, since, until, sort, number, per_page or 200
            )
            rows = result.get("jobs") or []
            for job in rows:
                if job.get("name") not in seen:
                    seen.add(job.get("name"))
                    jobs.append(job)
            size = result.get("per_page") or len(rows)
            if not rows or number * size >= int(result.get("total") or 0):
                return jobs
            number += 1

    def get_job(self, name: str) -> Dict[str, Any]:
        """The job called ``name``."""
        return self._json("GET", f"/jobs/{_quote(name)}")

    def wait_job(
        self, name: str, timeout: Optional[float] = None, poll: float = 1.0
    ) -> Dict[str, Any]:
        """Waits until the job has ended (succeeded, failed or stopped) and returns it.

        ``timeout`` in seconds (``None``: as long as it takes); when it passes, a
        `PaddleCloudError` with code ``timeout`` is raised.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.get_job(name)
            if job.get("status") in FINISHED:
                return job
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PaddleCloudError(
                        f"Job {name} is still {job.get('status')} after {timeout} s.",
                        code="timeout",
                    )
                time.sleep(min(poll, left))
            else:
                time.sleep(poll)

    def stop_job(self, name: str) -> Dict[str, Any]:
        """Stops every replica of the job; returns the job."""
        return self._json("POST", f"/jobs/{_quote(name)}/stop")

    def stack_dump(self, name: str) -> List[Dict[str, Any]]:
        """A stack dump (py-spy) of each running replica of the job, also
        written into the replicas' logs: ``[{"pod", "text"}]``, or ``error``
        instead of ``text`` for a replica that could not be dumped. A job
        marked stalled has ``stalled_since`` (ms) in :meth:`job`."""
        return self._json("POST", f"/jobs/{_quote(name)}/stack-dump")

    def queue(self) -> Dict[str, Any]:
        """The queue where this account's jobs run: ``waiting`` in the order
        it will be taken (each with ``position``, ``work`` — ``kind``,
        ``account`` and, for this account's own, ``name`` —, ``priority``,
        ``asks``, ``since``, ``reason`` and ``held_by``, the running work
        holding what it lacks), ``running``, and each account's ``shares``
        of the machine. ``ordered_here`` is false on Kubernetes, whose
        scheduler orders its own queue."""
        return self._json("GET", "/queue")

    def idle_gpu_jobs(self) -> List[Dict[str, Any]]:
        """The running jobs of every account whose GPUs have stayed under 5%
        utilisation for the console's stall window, longest idle first:
        ``[{"account", "job", "submitted_by", "gpus", "since"}]`` (site
        admins; others get a 403). A job's own mark is ``gpus_idle_since``."""
        return self._json("GET", "/admin/idle-gpus")

    def delete_job(self, name: str) -> None:
        """Deletes the job, its files and logs."""
        self._json("DELETE", f"/jobs/{_quote(name)}")

    def job_detail(self, name: str) -> Dict[str, Any]:
        """The job with what its page shows: ``job``, ``pods``, ``history``
        (each change of status, phase or reason, oldest first: ``at`` ms,
        ``pod`` or None for the job, ``state``, ``message``, ``exit_code``)
        and ``registered`` (the model versions it registered)."""
        return self._json("GET", f"/jobs/{_quote(name)}/detail")

    # -------------------------------------------------------------- model aliases

    def _model_path(self, model: str) -> str:
        owner, _, name = model.rpartition("/")
        if not owner:
            owner = self.me()["account"]["name"]
        return f"/models/{_quote(owner)}/{_quote(name)}"

    def aliases(self, model: str) -> List[Dict[str, Any]]:
        """A model's aliases (``model`` is ``name`` or ``owner/name``):
        ``[{"alias", "version", "protected", "updated_by", "updated_at"}]``."""
        return self._json("GET", f"{self._model_path(model)}/aliases")

    def set_alias(
        self, model: str, alias: str, version: int, *, protected: Optional[bool] = None
    ) -> Dict[str, Any]:
        """Points ``model@alias`` at ``version``, creating or moving it;
        ``protected`` (owners only) keeps others from moving it (None: as
        it was). Use ``model@alias`` wherever a version goes."""
        body: Dict[str, Any] = {"version": version}
        if protected is not None:
            body["protected"] = protected
        return self._json(
            "PUT", f"{self._model_path(model)}/aliases/{_quote(alias)}", body=body
        )

    def delete_alias(self, model: str, alias: str) -> None:
        """Deletes ``model@alias`` (its history stays)."""
        self._json("DELETE", f"{self._model_path(model)}/aliases/{_quote(alias)}")

    def alias_history(self, model: str) -> List[Dict[str, Any]]:
        """Every set, move and delete of ``model``'s aliases, newest first:
        ``[{"alias", "from", "to", "protected", "by", "at"}]``."""
        return self._json("GET", f"{self._model_path(model)}/alias-history")

    def lineage(self, node: str) -> Dict[str, Any]:
        """What a dataset, job, model version or serving instance came from and what
        came of it, two steps each way: ``node`` is ``dataset:owner/name``,
        ``job:owner/name``, ``model:owner/name:3`` or ``serving:owner/name``. Returns
        ``{"root", "nodes": [{"node", "depth", "detail"}], "edges": [{"from", "to",
        "relation"}]}`` (``relation``: read, registered, serves, canary, shadow)."""
        return self._json("GET", "/lineage", query=[("node", node)])

    def pods(self, name: str) -> List[Dict[str, Any]]:
        """The job's replicas: ``ps-0``, ``trainer-0`` ... with phase and exit code."""
        return self._json("GET", f"/jobs/{_quote(name)}/pods")

    # ------------------------------------------------------------------- serving

    def launch_serving(
        self,
        name: str,
        model: str,
        *,
        version: Optional[int] = None,
        replicas: int = 1,
        cpu: Quantity = "1",
        memory: Quantity = "1Gi",
        gpu: int = 0,
        file: str = "",
        script: str = "",
        command: Optional[Argv] = None,
        image: str = "",
        env: Any = None,
        autoscale: Optional[Mapping[str, int]] = None,
        environment: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Serves a model version over HTTP and returns the instance (``pending``
        until its replicas answer, ``failed`` with the reason if the model does not
        load). ``model`` is ``name`` or ``owner/name``; ``version`` defaults to the
        newest ready one; ``cpu``/``memory``/``gpu`` are per replica; ``file`` a
        ``.tar.gz`` inside the version to serve; ``script`` a Python serving script
        (``load(model_dir)``, ``predict(state, inputs)``); ``command`` replaces the
        default predict server; ``autoscale`` is ``{"min", "max", "cpu_percent"}``;
        ``environment`` the environment its replicas run in (``name``,
        ``owner/name``, either with ``:version``; it needs paddlepaddle for the
        default server), recorded as the exact ``owner/name:version``."""
        spec = {
            "name": name,
            "model": model,
            "version": version,
            "file": file,
            "script": script,
            "command": _argv(command, "command") if command else [],
            "image": image or "",
            "env": _env(env),
            "replicas": _count(replicas, "replicas"),
            "resources": {
                "cpu": _cpu(cpu, "cpu"),
                "memory": _memory(memory, "memory"),
                "gpu": _count(gpu, "gpu"),
            },
            "autoscale": dict(autoscale) if autoscale else None,
        }
        if environment is not None:
            spec["environment"] = environment
        return self._json("POST", "/serving", body=spec)

    def save_template(self, template: Mapping[str, Any]) -> Dict[str, Any]:
        """Saves a template (``name``, ``description``, ``parameters``, ``job`` with
        ``{{parameter}}`` placeholders) as the next version of its name; returns it
        with its ``version``. A bad field raises naming it (``parameters[1].default``)."""
        return self._json("POST", "/templates", body=dict(template))

    def list_templates(self) -> List[Dict[str, Any]]:
        """The account's templates, then those other accounts published, each at its
        newest version (with its ``owner`` and ``public``)."""
        return self._json("GET", "/templates")["templates"]

    def get_template(
        self, name: str, version: Optional[int] = None, *, owner: Optional[str] = None
    ) -> Dict[str, Any]:
        """A template: its newest version, or ``version``; ``owner``: another
        account's published one (e.g. ``"paddlecloud"``)."""
        query = [("owner", owner), ("version", int(version) if version is not None else None)]
        return self._json("GET", f"/templates/{_quote(name)}", query=query)

    def run_template(
        self,
        name: str,
        values: Optional[Mapping[str, Any]] = None,
        *,
        job_name: Optional[str] = None,
        version: Optional[int] = None,
        owner: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Runs a template with ``values`` (those left out take their defaults) and
        returns the job, whose ``spec["template"]`` records the owner, version and
        values. A bad value raises naming ``values.<parameter>``; without
        ``job_name`` the job is named after the template. ``owner``: run another
        account's published template (e.g. ``owner="paddlecloud"``,
        ``"fit-a-line"``); the job is this account's."""
        body: Dict[str, Any] = {"values": dict(values or {})}
        if job_name is not None:
            body["name"] = job_name
        if version is not None:
            body["version"] = int(version)
        if owner is not None:
            body["owner"] = owner
        return self._json("POST", f"/templates/{_quote(name)}/jobs", body=body)

    def publish_template(
        self, name: str, public: bool = True, *, owner: Optional[str] = None
    ) -> Dict[str, Any]:
        """Publishes a template (every version) for every account, or with
        ``public=False`` takes it back; ``owner`` defaults to this account. Site
        admins only (others get a 403). Returns its newest version."""
        return self._publish("templates", name, public, owner)

    def save_environment(self, environment: Mapping[str, Any]) -> Dict[str, Any]:
        """Saves an environment (``name``, ``description``, ``image``,
        ``requirements``: pip lines like ``"tomli-w==1.0.0"``, ``setup_notes``) as
        the next version of its name; returns it with its ``owner`` and
        ``version``. The console starts building its requirements from PyPI (see
        `wait_environment`). A bad field raises naming it (``requirements[1]``)."""
        return self._json("POST", "/environments", body=dict(environment))

    def list_environments(self) -> List[Dict[str, Any]]:
        """The account's environments, then those published for everyone (owner
        ``paddlecloud``: ``paddle-cpu``, ``minimal``), each at its newest version:
        ``[{"environment": {...}, "state"}]``, ``state`` being its local build's
        (``not_built``, ``building``, ``ready`` or ``failed``)."""
        return self._json("GET", "/environments")["environments"]

    def get_environment(
        self, name: str, *, owner: Optional[str] = None, version: Optional[int] = None
    ) -> Dict[str, Any]:
        """An environment: its newest version, or ``version``; ``owner``: another
        account's published one. ``{"environment", "versions" (newest first),
        "build": {"state", "message", "log"}, "can_edit"}``."""
        query = [("owner", owner), ("version", int(version) if version is not None else None)]
        return self._json("GET", f"/environments/{_quote(name)}", query=query)

    def wait_environment(
        self,
        name: str,
        *,
        owner: Optional[str] = None,
        version: Optional[int] = None,
        timeout: Optional[float] = None,
        poll: float = 1.0,
    ) -> Dict[str, Any]:
        """Waits until the environment's build is ``ready`` and returns it (as
        `get_environment` does).

        A failed build raises `PaddleCloudError` with code ``build_failed`` and the
        build's message (its log is in ``get_environment(name)["build"]["log"]``).
        ``timeout`` in seconds (``None``: as long as it takes); when it passes, a
        `PaddleCloudError` with code ``timeout`` is raised. A console that runs
        jobs on Kubernetes builds nothing itself: there the state stays
        ``not_built`` until the timeout.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            detail = self.get_environment(name, owner=owner, version=version)
            build = detail.get("build") or {}
            state = build.get("state")
            if state == "ready":
                return detail
            env = detail.get("environment") or {}
            which = f"{env.get('owner')}/{env.get('name')}:{env.get('version')}"
            if state == "failed":
                why = (build.get("message") or "").strip()
                if not why:
                    lines = (build.get("log") or "").strip().splitlines()
                    why = lines[-1] if lines else "no reason given"
                raise PaddleCloudError(
                    f"Environment {which} failed to build: {why}", code="build_failed"
                )
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PaddleCloudError(
                        f"Environment {which} is still {state} after {timeout} s.",
                        code="timeout",
                    )
                time.sleep(min(poll, left))
            else:
                time.sleep(poll)

    def publish_environment(
        self, name: str, public: bool = True, *, owner: Optional[str] = None
    ) -> Dict[str, Any]:
        """Publishes an environment (every version) for every account, or with
        ``public=False`` takes it back; ``owner`` defaults to this account. Site
        admins only (others get a 403). Returns its newest version."""
        return self._publish("environments", name, public, owner)

    def _publish(self, kind: str, name: str, public: bool, owner: Optional[str]) -> Dict[str, Any]:
        body: Dict[str, Any] = {"public": bool(public)}
        if owner is not None:
            body["owner"] = owner
        return self._json("POST", f"/{kind}/{_quote(name)}/publish", body=body)

    # ----------------------------------------------------------------- notebooks

    def list_notebooks(self) -> List[Dict[str, Any]]:
        """The account's notebooks, newest first: ``name``, ``owner``,
        ``status`` (pending, running, stopped, failed), ``message``, ``spec``."""
        return self._json("GET", "/notebooks")["notebooks"]

    def create_notebook(
        self,
        name: str,
        *,
        cpu: str = "1",
        memory: str = "2Gi",
        gpu: int = 0,
        idle_minutes: Optional[int] = None,
        environment: Optional[str] = None,
        image: str = "",
        secrets: Any = None,
    ) -> Dict[str, Any]:
        """Creates a notebook (a private JupyterLab, opened at
        ``/notebooks/<account>/<name>/lab``) and starts it: it is pending
        until its server answers. ``environment`` names the environment its
        kernel runs in; ``idle_minutes`` stops it after that long unused;
        ``secrets`` names the account's secrets its kernels and terminals get,
        as `create_cloud_job` takes them (read each time its server starts)."""
        spec: Dict[str, Any] = {
            "name": name,
            "resources": {"cpu": cpu, "memory": memory, "gpu": gpu},
            "image": image,
        }
        if idle_minutes is not None:
            spec["idle_minutes"] = idle_minutes
        if environment is not None:
            spec["environment"] = environment
        uses = _secret_uses(secrets)
        if uses:
            spec["secrets"] = uses
        return self._json("POST", "/notebooks", body=spec)

    def get_notebook(self, name: str) -> Dict[str, Any]:
        """One notebook: ``status`` and why (``message``), ``owner``, ``spec``."""
        return self._json("GET", f"/notebooks/{_quote(name)}")

    def delete_notebook(self, name: str) -> None:
        """Stops it if need be and deletes it with its workspace and the
        versions of its files."""
        self._json("DELETE", f"/notebooks/{_quote(name)}")

    def start_notebook(self, name: str) -> Dict[str, Any]:
        """Starts a stopped notebook (its workspace as it was)."""
        return self._json("POST", f"/notebooks/{_quote(name)}/start")

    def stop_notebook(self, name: str) -> Dict[str, Any]:
        """Stops a notebook; each notebook file of its workspace is kept as
        a version first."""
        return self._json("POST", f"/notebooks/{_quote(name)}/stop")

    def notebook_history(self, name: str, path: Optional[str] = None) -> Dict[str, Any]:
        """The notebook's files that have versions (``files``: ``path``,
        ``versions``, ``latest``) and the versions of ``path`` (the file
        changed last when None), newest first (``versions``: ``id``, ``path``,
        ``at`` ms, ``author``, ``reason`` save/checkpoint/stop/restore,
        ``cells``, ``bytes``, ``sha256``, ``restored_from``)."""
        return self._json(
            "GET", f"/notebooks/{_quote(name)}/history", query=[("path", path)]
        )

    def notebook_version(self, name: str, version: int, *, html: bool = False) -> bytes:
        """Version ``version``'s file (the .ipynb's bytes), or with ``html``
        the page nbconvert made of it."""
        path = f"/notebooks/{_quote(name)}/versions/{int(version)}"
        if html:
            path += "/html"
        accept = "text/html" if html else "application/x-ipynb+json"
        with self._open("GET", path, accept=accept) as response:
            return self._read(response)

    def diff_notebook_versions(self, name: str, old: int, new: int) -> Dict[str, Any]:
        """Versions ``old`` and ``new`` compared cell by cell: ``cells``, each
        with ``change`` (same, added, removed, changed), ``cell_type``,
        ``lines`` (``change`` and ``text``) and, when its outputs changed,
        ``old_outputs`` and ``new_outputs`` as text."""
        return self._json(
            "GET",
            f"/notebooks/{_quote(name)}/diff",
            query=[("from", int(old)), ("to", int(new))],
        )

    def restore_notebook_version(self, name: str, version: int) -> Dict[str, Any]:
        """Puts version ``version`` back into the running notebook's
        workspace (the file as it is is kept as a version first); returns
        the restore's own version."""
        return self._json(
            "POST", f"/notebooks/{_quote(name)}/versions/{int(version)}/restore"
        )

    def share_notebook_file(
        self,
        name: str,
        path: str,
        *,
        with_: str = "members",
        account: Optional[str] = None,
        expires_days: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Shares file ``path`` of notebook ``name`` read-only: ``with_`` is
        ``members`` (the account's), ``account`` (name it) or ``link``
        (``expires_days`` or until revoked). Returns ``{"share", "link"}``;
        a link's path (``/shared/notebooks/pcf_…``) is given this once."""
        body: Dict[str, Any] = {"path": path, "with": with_}
        if account is not None:
            body["account"] = account
        if expires_days is not None:
            body["expires_days"] = int(expires_days)
        return self._json("POST", f"/notebooks/{_quote(name)}/shares", body=body)

    def notebook_shares(self, name: str) -> List[Dict[str, Any]]:
        """Notebook ``name``'s shares, newest first."""
        return self._json("GET", f"/notebooks/{_quote(name)}/shares")

    def revoke_notebook_share(self, name: str, share: int) -> None:
        """Ends a share: its recipients, or its link, no longer see the file."""
        self._json("DELETE", f"/notebooks/{_quote(name)}/shares/{int(share)}")

    def shared_notebook_files(self) -> List[Dict[str, Any]]:
        """Notebook files others shared with your account or its members:
        ``share``, ``owner_account``, ``owner``, ``notebook``, ``path``,
        ``with`` and ``version`` (the newest, which is what they see)."""
        return self._json("GET", "/notebook-shares")

    def shared_notebook_file(self, share: Union[int, str]) -> bytes:
        """The .ipynb of a file shared with you (``share``'s id) or of a
        link (its token, or the link itself)."""
        return self._shared_bytes(share, "file", "application/x-ipynb+json")

    def copy_shared_notebook(self, share: Union[int, str], into: str) -> Dict[str, Any]:
        """Copies a shared file (an id, or a link) into your running notebook
        ``into``, under a name no file there has; the copy's version."""
        return self._json("POST", self._shared_path(share, "copy"), body={"notebook": into})

    def notebook_parameters(
        self, name: str, path: str, version: Optional[int] = None
    ) -> Dict[str, Any]:
        """The parameters file ``path`` of notebook ``name`` declares in its
        cell tagged ``parameters`` (its newest version unless ``version``):
        ``cell`` (its position, ``None`` without one) and ``parameters``, each
        with ``name``, ``type`` (``int``, ``float``, ``bool``, ``string``),
        ``default``, ``description`` (the line's comment) and ``written``
        (the default as the cell writes it)."""
        query = [("path", path), ("version", None if version is None else int(version))]
        return self._json("GET", f"/notebooks/{_quote(name)}/parameters", query=query)

    def run_notebook(
        self,
        name: str,
        path: str,
        values: Optional[Mapping[str, Any]] = None,
        *,
        version: Optional[int] = None,
        job_name: Optional[str] = None,
        environment: Optional[str] = None,
        cpu: Quantity = "1",
        memory: Quantity = "1Gi",
        gpu: int = 0,
        datasets: Optional[Sequence[str]] = None,
    ) -> Dict[str, Any]:
        """Runs file ``path`` of your notebook ``name`` as a job with papermill
        (its newest version unless ``version``), ``values`` injected after its
        parameters cell (each checked against the parameter's type; one it
        does not declare raises naming it). The job runs in ``environment``
        (default: the notebook's, else ``paddlecloud/minimal``) with papermill
        added. Returns the job; `wait_job` waits for it and
        `notebook_run_output` reads the executed notebook."""
        body: Dict[str, Any] = {
            "path": path,
            "values": dict(values or {}),
            "resources": {
                "cpu": _cpu(cpu, "cpu"),
                "memory": _memory(memory, "memory"),
                "gpu": _count(gpu, "gpu"),
            },
            "datasets": list(datasets or []),
        }
        if version is not None:
            body["version"] = int(version)
        if job_name is not None:
            body["name"] = job_name
        if environment is not None:
            body["environment"] = environment
        return self._json("POST", f"/notebooks/{_quote(name)}/runs", body=body)

    def notebook_run_output(self, job: str, *, html: bool = False) -> bytes:
        """Notebook run ``job``'s executed notebook so far (the .ipynb's
        bytes, each cell's outputs and papermill's marks), or with ``html``
        its page. How far it got and the cell it failed at are in
        ``job_detail(job)["notebook_run"]``."""
        path = f"/jobs/{_quote(job)}/notebook/output"
        if html:
            path += "/html"
        accept = "text/html" if html else "application/x-ipynb+json"
        with self._open("GET", path, accept=accept) as response:
            return self._read(response)

    def _shared_path(self, share: Union[int, str], what: str) -> str:
        if isinstance(share, int) or str(share).isdigit():
            return f"/notebook-shares/{int(share)}/{what}"
        token = str(share).rstrip("/").rsplit("/", 1)[-1]
        return f"/shared/notebooks/{_quote(token)}/{what}"

    def _shared_bytes(self, share: Union[int, str], what: str, accept: str) -> bytes:
        with self._open("GET", self._shared_path(share, what), accept=accept) as response:
            return self._read(response)

    # ----------------------------------------------------------------- schedules

    def create_schedule(
        self,
        name: str,
        cron: str,
        target: Mapping[str, Any],
        *,
        timezone: str = "UTC",
        overlap: str = "forbid",
        catch_up: str = "latest",
        description: str = "",
    ) -> Dict[str, Any]:
        """Saves a schedule: ``target`` runs on ``cron`` (5 fields, or 6 with
        seconds first; ``@daily``) read in ``timezone`` (IANA). ``target`` is
        ``{"kind": "template", "name", "owner", "version", "values"}``,
        ``{"kind": "pipeline", "pipeline", "values"}`` or ``{"kind":
        "notebook", "notebook", "run": {"path", "values", ...}}``.
        ``overlap`` (``forbid``, ``allow``, ``replace``) says what a tick does
        while the previous run goes; ``catch_up`` (``latest``, ``all``,
        ``none``) which ticks missed while the console was down run. What it
        runs is checked now; a bad field raises naming it (``cron``,
        ``timezone``, ``target.values.lr``)."""
        body = {
            "name": name,
            "cron": cron,
            "timezone": timezone,
            "overlap": overlap,
            "catch_up": catch_up,
            "description": description,
            "target": dict(target),
        }
        return self._json("POST", "/schedules", body=body)

    def list_schedules(self) -> List[Dict[str, Any]]:
        """The account's schedules, by name."""
        return self._json("GET", "/schedules")

    def get_schedule(self, name: str) -> Dict[str, Any]:
        """One schedule with its newest ``runs``: ``tick``, ``outcome``
        (``started``, ``skipped``, ``missed``, ``failed``), ``started`` (the
        job or pipeline run), ``status`` and ``message``."""
        return self._json("GET", f"/schedules/{_quote(name)}")

    def pause_schedule(self, name: str) -> Dict[str, Any]:
        """Pauses it: no tick runs until it is resumed."""
        return self._json("POST", f"/schedules/{_quote(name)}/pause")

    def resume_schedule(self, name: str) -> Dict[str, Any]:
        """Resumes it: ticks from now on (those missed while paused do not run)."""
        return self._json("POST", f"/schedules/{_quote(name)}/resume")

    def delete_schedule(self, name: str) -> None:
        """Deletes it; what its runs started stays."""
        self._json("DELETE", f"/schedules/{_quote(name)}")

    # -------------------------------------------------------------------- alerts

    def create_alert_rule(
        self,
        name: str,
        tag: str,
        *,
        above: Optional[float] = None,
        below: Optional[float] = None,
        not_finite: bool = False,
        silent_minutes: Optional[int] = None,
        job: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Saves a metric alert rule on the PaddleBoard ``tag`` of every
        running job (or of ``job``): it fires when the newest value is
        ``above`` or ``below`` a threshold, when a value is NaN or infinite
        (``not_finite``), or when no point came for ``silent_minutes``. Give
        exactly one condition. A bad field raises naming it (``tag``,
        ``condition.threshold``, …)."""
        given = [c for c in (above is not None, below is not None, not_finite,
                             silent_minutes is not None) if c]
        if len(given) != 1:
            raise ValueError("give exactly one of above, below, not_finite, silent_minutes")
        if above is not None:
            condition: Dict[str, Any] = {"kind": "above", "threshold": float(above)}
        elif below is not None:
            condition = {"kind": "below", "threshold": float(below)}
        elif not_finite:
            condition = {"kind": "not_finite"}
        else:
            condition = {"kind": "silent", "minutes": int(silent_minutes)}
        body: Dict[str, Any] = {"name": name, "tag": tag, "condition": condition}
        if job is not None:
            body["job"] = job
        return self._json("POST", "/alert-rules", body=body)

    def list_alert_rules(self) -> List[Dict[str, Any]]:
        """The account's alert rules, each with its ``open`` alerts."""
        return self._json("GET", "/alert-rules")

    def delete_alert_rule(self, name: str) -> None:
        """Deletes a rule and its alerts."""
        self._json("DELETE", f"/alert-rules/{_quote(name)}")

    def alerts(self, job: Optional[str] = None) -> List[Dict[str, Any]]:
        """The account's newest alerts, open first: ``rule``, ``job``,
        ``tag``, ``step``, ``value``, ``message``, ``raised_at`` and
        ``resolved_at`` (absent while open)."""
        return self._json("GET", "/alerts", query=[("job", job)])

    # ------------------------------------------------------------------- secrets

    def secrets(self) -> List[Dict[str, Any]]:
        """The account's secrets by name: ``[{"name", "description", "size",
        "created_at", "updated_at", "updated_by", "last_used_at"}]`` (times in
        Unix ms; ``last_used_at`` is ``None`` until a workload uses it). Never a
        value."""
        return self._json("GET", "/secrets")

    def set_secret(
        self,
        name: str,
        value: Optional[Union[str, bytes]] = None,
        *,
        value_bytes: Optional[bytes] = None,
        description: str = "",
    ) -> Dict[str, Any]:
        """Sets secret ``name`` (lower-case letters, digits and ``-``, e.g.
        ``s3-key``) to ``value`` (text), or to ``value_bytes`` (a file's bytes,
        sent in base64; ``bytes`` given as ``value`` are sent so too), at most
        64 KiB; a name that exists gets the new value and the old one is gone.
        ``description`` says what it is for (one line, at most 200 characters).
        Owners only (others get a `PaddleCloudError` with status 403). Returns
        what `secrets` lists for it; the value is never returned. A bad field
        raises naming it (``name``, ``value``, ``description``)."""
        if isinstance(value, (bytes, bytearray, memoryview)):
            if value_bytes is not None:
                raise ValueError("give value or value_bytes, not both")
            value, value_bytes = None, bytes(value)
        if (value is None) == (value_bytes is None):
            raise ValueError("give exactly one of value and value_bytes")
        body: Dict[str, Any] = {"description": description or ""}
        if value_bytes is not None:
            body["value_base64"] = base64.b64encode(bytes(value_bytes)).decode("ascii")
        else:
            if not isinstance(value, str):
                raise TypeError(f"value must be str or bytes, not {type(value).__name__}")
            body["value"] = value
        return self._json("PUT", f"/secrets/{_quote(name)}", body=body)

    def delete_secret(self, name: str) -> None:
        """Deletes secret ``name`` (owners only). Running workloads keep what
        they were given; a new one that names it is refused."""
        self._json("DELETE", f"/secrets/{_quote(name)}")

    # ------------------------------------------------------------- notifications

    def subscribe(
        self,
        kind: str,
        name: Optional[str] = None,
        *,
        events: Sequence[str] = ("failed",),
        webhook: Optional[str] = None,
        slack: bool = False,
    ) -> Dict[str, Any]:
        """Follows a ``job``, ``pipeline`` (run), ``experiment`` or
        ``serving`` instance named ``name``, or the whole ``account``, for
        ``events`` (``failed``, ``succeeded``, ``over_quota``): by email, or
        by a POST to ``webhook`` (signed as the Standard Webhooks
        specification says; ``slack`` shapes the body as Slack's incoming
        webhooks take it). A webhook's answer has its signing ``secret``
        (``whsec_…``). A name the account does not have raises naming
        ``subject.name``."""
        subject: Dict[str, Any] = {"kind": kind}
        if kind != "account":
            subject["name"] = name
        if webhook is None:
            channel: Dict[str, Any] = {"kind": "email"}
        else:
            channel = {"kind": "webhook", "url": webhook, "format": "slack" if slack else "json"}
        body = {"subject": subject, "events": list(events), "channel": channel}
        return self._json("POST", "/notifications/subscriptions", body=body)

    def list_subscriptions(self) -> List[Dict[str, Any]]:
        """What the caller follows in the account, newest first."""
        return self._json("GET", "/notifications/subscriptions")

    def test_subscription(self, subscription: int) -> Dict[str, Any]:
        """Sends a test (event ``test``) through one of the caller's
        subscriptions now; returns its delivery, pending."""
        return self._json("POST", f"/notifications/subscriptions/{int(subscription)}/test")

    def unsubscribe(self, subscription: int) -> None:
        """Ends one of the caller's subscriptions; its log goes with it."""
        self._json("DELETE", f"/notifications/subscriptions/{int(subscription)}")

    def deliveries(
        self,
        *,
        status: Optional[str] = None,
        subscription: Optional[int] = None,
        before: Optional[int] = None,
    ) -> List[Dict[str, Any]]:
        """The log of what was sent through the caller's subscriptions,
        newest first, 50 a page: each delivery's ``notice``, ``status``
        (``pending``, ``delivered``, ``failed``), ``attempts``,
        ``last_error`` and ``response_code``. ``before`` (a delivery's
        ``id``) pages back."""
        query = [("status", status), ("subscription", subscription), ("before", before)]
        return self._json("GET", "/notifications/deliveries", query=query)

    # ----------------------------------------------------------------- pipelines

    def run_pipeline(
        self,
        pipeline: Mapping[str, Any],
        *,
        name: Optional[str] = None,
        values: Optional[Mapping[str, Any]] = None,
    ) -> Dict[str, Any]:
        """Submits a run of ``pipeline`` (``name``, ``nodes``: each a ``job`` or a
        ``template`` with ``after``, ``retries``, ``backoff_secs``; ``parameters``;
        ``fail_fast``) with ``values`` for its parameters, and returns the run.
        Everything is checked first; a bad field raises naming it
        (``nodes[2].after``, ``values.lr``), a cycle is named in the message."""
        body: Dict[str, Any] = {"pipeline": dict(pipeline), "values": dict(values or {})}
        if name is not None:
            body["name"] = name
        return self._json("POST", "/pipelines", body=body)

    def list_pipelines(self) -> List[Dict[str, Any]]:
        """The account's pipeline runs, newest first (without their nodes)."""
        return self._json("GET", "/pipelines")["runs"]

    def get_pipeline(self, name: str) -> Dict[str, Any]:
        """One run with its ``nodes`` (``status``, ``message``, ``attempt``, ``job``)."""
        return self._json("GET", f"/pipelines/{_quote(name)}")

    def wait_pipeline(
        self, name: str, *, timeout: Optional[float] = None, poll: float = 1.0
    ) -> Dict[str, Any]:
        """Waits until the run has ended (``succeeded``, ``failed`` or ``stopped``)
        and returns it; a `PaddleCloudError` with code ``timeout`` after
        ``timeout`` seconds (``None``: as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            run = self.get_pipeline(name)
            if run["status"] != "running":
                return run
            if deadline is not None and time.monotonic() >= deadline:
                raise PaddleCloudError(
                    f"Pipeline run {name} is still running after {timeout} s.", code="timeout"
                )
            time.sleep(poll)

    def stop_pipeline(self, name: str) -> Dict[str, Any]:
        """Stops a running run (its running jobs too)."""
        return self._json("POST", f"/pipelines/{_quote(name)}/stop")

    def retry_pipeline(self, name: str) -> Dict[str, Any]:
        """Runs a failed or stopped run again from what did not succeed."""
        return self._json("POST", f"/pipelines/{_quote(name)}/retry")

    # --------------------------------------------------------------- experiments

    def score_dataset(
        self,
        model: str,
        dataset: str,
        output: str,
        *,
        replicas: int = 1,
        cpu: str = "",
        memory: str = "",
        environment: str = "",
        name: str = "",
        script: str = "",
    ) -> Dict[str, Any]:
        """Starts a batch scoring and returns its job: ``model`` (``name``,
        ``owner/name``, with ``:N`` or ``@alias``) scores every ``.jsonl`` and
        ``.csv`` file of the saved dataset version ``dataset`` (``name:N``;
        without ``:N`` its newest), ``replicas`` sharing the files, into a new
        version of the dataset ``output`` (made if need be). Follow it with
        `scoring` or `wait_job`; after a failure `retry_scoring` redoes only
        the files not scored. ``script`` is Python source with serving's hooks
        (``load(model_dir)``, ``predict(state, inputs)``; at most 64 KiB): with
        it the model need not be a PaddlePaddle inference model (``.jsonl``
        requests then name their inputs)."""
        body = {
            "model": model, "dataset": dataset, "output": output, "replicas": replicas,
            "cpu": cpu, "memory": memory, "environment": environment, "name": name,
            "script": script,
        }
        return self._json("POST", "/scorings", body=body)

    def scoring(self, job: str) -> Dict[str, Any]:
        """How far scoring job ``job`` got: ``inputs``, ``scored``, ``skipped``,
        ``output``, ``version``, ``output_state`` (``ready`` once complete),
        ``status`` (the job's), ``model``, ``dataset``, ``attempt``."""
        return self._json("GET", f"/scorings/{_quote(job)}")

    def retry_scoring(self, job: str) -> Dict[str, Any]:
        """Starts the next try of scoring job ``job`` (ended, its output not
        complete): the same model version, input and output version; returns
        the new try's job."""
        return self._json("POST", f"/scorings/{_quote(job)}/retry")

    def create_experiment(self, experiment: Mapping[str, Any]) -> Dict[str, Any]:
        """Starts an experiment: a search over a template's parameters.
        ``experiment`` has ``name``, ``template`` (``name`` or ``owner/name``),
        ``parameters`` (each ``{"name", "type": "int"|"float"|"enum"|"bool",
        "min", "max", "log", "choices"}``), ``objective`` (``{"metric",
        "direction": "minimize"|"maximize", "value": "last"|"best", "goal"}``)
        and optionally ``values`` (fixed values), ``algorithm`` (``{"type":
        "grid"|"random"|"tpe"}``, TPE by default), ``early_stopping``
        (``{"type": "median"|"asha"}``), ``max_trials``, ``parallel_trials``,
        ``max_failed_trials``, ``seed``. Everything is checked first; a bad
        field raises naming it (``parameters[0].max``, ``values.lr``)."""
        return self._json("POST", "/experiments", body=dict(experiment))

    def list_experiments(self) -> List[Dict[str, Any]]:
        """The account's experiments, newest first: each without its trials,
        with their ``trials`` counts by status and the ``best`` one."""
        return self._json("GET", "/experiments")["experiments"]

    def get_experiment(self, name: str) -> Dict[str, Any]:
        """One experiment with its ``trials``."""
        return self._json("GET", f"/experiments/{_quote(name)}")

    def trials(self, name: str) -> List[Dict[str, Any]]:
        """An experiment's trials by number: each with ``values``, ``status``
        (``waiting``, ``running``, ``succeeded``, ``failed``, ``pruned``,
        ``stopped``), ``objective``, ``step``, ``message`` and its ``job``."""
        return self.get_experiment(name)["trials"]

    def best_trial(self, name: str) -> Optional[Dict[str, Any]]:
        """The trial with the best objective so far among those that ran to
        their end (the earliest of equals), or ``None`` before any has."""
        try:
            return self._json("GET", f"/experiments/{_quote(name)}/best")
        except PaddleCloudError as err:
            if err.status == 404:
                self.get_experiment(name)  # raises if the experiment is not there
                return None
            raise

    def wait_experiment(
        self, name: str, *, timeout: Optional[float] = None, poll: float = 1.0
    ) -> Dict[str, Any]:
        """Waits until the experiment has ended (``succeeded``, ``failed`` or
        ``stopped``) and returns it; a `PaddleCloudError` with code
        ``timeout`` after ``timeout`` seconds (``None``: as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            experiment = self.get_experiment(name)
            if experiment["status"] not in ("running", "paused"):
                return experiment
            if deadline is not None and time.monotonic() >= deadline:
                raise PaddleCloudError(
                    f"Experiment {name} is still {experiment['status']} after {timeout} s.",
                    code="timeout",
                )
            time.sleep(poll)

    def stop_experiment(self, name: str) -> Dict[str, Any]:
        """Stops an experiment and its running trials."""
        return self._json("POST", f"/experiments/{_quote(name)}/stop")

    def pause_experiment(self, name: str) -> Dict[str, Any]:
        """Starts no new trial; those running go on."""
        return self._json("POST", f"/experiments/{_quote(name)}/pause")

    def resume_experiment(self, name: str) -> Dict[str, Any]:
        """Starts trials again after a pause."""
        return self._json("POST", f"/experiments/{_quote(name)}/resume")

    def extend_experiment(self, name: str, more: int) -> Dict[str, Any]:
        """Runs ``more`` trials more, the search learning from every trial so
        far; an experiment that ended runs again."""
        return self._json("POST", f"/experiments/{_quote(name)}/extend",
                          body={"more": _count(more, "more")})

    def retry_experiment(self, name: str) -> Dict[str, Any]:
        """Runs each failed trial's values again as a new trial."""
        return self._json("POST", f"/experiments/{_quote(name)}/retry")

    def list_serving(self) -> List[Dict[str, Any]]:
        """The account's serving instances, newest first, with the last minute's
        traffic (``recent``: requests, errors, p50/p99 latency)."""
        return self._json("GET", "/serving")["instances"]

    def get_serving(self, name: str) -> Dict[str, Any]:
        """One serving instance."""
        return self._json("GET", f"/serving/{_quote(name)}")

    def scale_serving(
        self,
        name: str,
        replicas: Optional[int] = None,
        *,
        autoscale: Optional[Mapping[str, int]] = None,
    ) -> Dict[str, Any]:
        """Sets the number of replicas, or the autoscaler's bounds."""
        body = {"replicas": replicas, "autoscale": dict(autoscale) if autoscale else None}
        return self._json("POST", f"/serving/{_quote(name)}/scale", body=body)

    def start_canary(
        self, name: str, version: int, percent: int = 10, *, replicas: int = 1
    ) -> Dict[str, Any]:
        """Serves ``version`` of the instance's model beside its main one, answering
        ``percent`` (1-99) of the calls, spread evenly; calling it again changes the
        canary. Returns the instance (its ``tracks``)."""
        return self._release(name, {"action": "canary", "version": version,
                                    "percent": percent, "replicas": replicas})

    def start_shadow(
        self, name: str, version: int, percent: int = 100, *, replicas: int = 1
    ) -> Dict[str, Any]:
        """Sends ``version`` a copy of ``percent`` (1-100) of the calls; its answers
        are recorded beside the main version's (see :meth:`shadow_calls`), never
        returned to the caller."""
        return self._release(name, {"action": "shadow", "version": version,
                                    "percent": percent, "replicas": replicas})

    def promote_canary(self, name: str) -> Dict[str, Any]:
        """The canary's version takes every call: the main replicas roll to it one by
        one (none lost), and an alias the instance follows moves to it."""
        return self._release(name, {"action": "promote"})

    def rollback_canary(self, name: str) -> Dict[str, Any]:
        """Ends the canary; every call goes to the main version again."""
        return self._release(name, {"action": "rollback"})

    def end_shadow(self, name: str) -> Dict[str, Any]:
        """Ends the shadow."""
        return self._release(name, {"action": "end_shadow"})

    def shadow_calls(self, name: str, limit: int = 50) -> List[Dict[str, Any]]:
        """The newest calls mirrored to the shadow, newest first: ``[{"at", "version",
        "path", "primary_status", "shadow_status", "primary_ms", "shadow_ms", "agrees",
        "request", "primary", "shadow"}]`` (bodies cut at 512 bytes)."""
        return self._json("GET", f"/serving/{_quote(name)}/shadow-calls",
                          query=[("limit", _count(limit, "limit"))])

    def serving_traffic(
        self, name: str, *, start: Optional[float] = None, end: Optional[float] = None
    ) -> Dict[str, Any]:
        """Calls per bucket over ``[start, end]`` (Unix s; by default the last hour):
        ``points`` for the whole instance, ``versions`` by version (a shadow's copies
        apart), each bucket with ``requests``, ``errors``, ``p50_ms``, ``p90_ms``,
        ``p99_ms``."""
        return self._json("GET", f"/serving/{_quote(name)}/traffic",
                          query=[("from", start), ("to", end)])

    def _release(self, name: str, body: Dict[str, Any]) -> Dict[str, Any]:
        return self._json("POST", f"/serving/{_quote(name)}/release", body=body)

    def stop_serving(self, name: str) -> Dict[str, Any]:
        """Stops every replica, keeping the record; returns the instance."""
        return self._json("POST", f"/serving/{_quote(name)}/stop")

    def delete_serving(self, name: str) -> None:
        """Deletes the instance's record (stopping it first)."""
        self._json("DELETE", f"/serving/{_quote(name)}")

    def predict(self, name: str, inputs: Any, *, path: str = "predict") -> Dict[str, Any]:
        """Calls a serving instance of this account through the console's endpoint
        (``/serve/<account>/<name>/<path>``) with ``{"inputs": inputs}``; returns the
        answer (``{"outputs": ...}`` from the default predict server)."""
        account = self.me()["account"]["name"]
        url = f"{self.server}/serve/{_quote(account)}/{_quote(name)}/{path}"
        request = urllib.request.Request(
            url,
            data=json.dumps({"inputs": inputs}).encode("utf-8"),
            method="POST",
            headers={
                "Authorization": f"Bearer {self._key}",
                "Content-Type": "application/json",
                "User-Agent": _USER_AGENT,
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as err:
            raise self._http_error(err) from None

    # ---------------------------------------------------------------------- logs

    def _log_path(self, name: str, pod: Optional[str]) -> str:
        if pod is None:
            pods = self.pods(name)
            if not pods:
                raise PaddleCloudError(f"Job {name} has no pods yet.", code="not_found")
            pod = pods[0]["name"]
        return f"/jobs/{_quote(name)}/pods/{_quote(pod)}/log"

    def logs(
        self,
        name: str,
        pod: Optional[str] = None,
        tail: Optional[int] = None,
        *,
        timestamps: bool = False,
    ) -> str:
        """A pod's log so far (``pod`` default: the job's first pod); ``tail``: only
        the last N lines; ``timestamps``: keep each line's RFC 3339 timestamp."""
        query = [("tail", tail), ("timestamps", "true" if timestamps else None)]
        with self._open(
            "GET", self._log_path(name, pod), query=query, accept="text/plain"
        ) as response:
            return self._read(response).decode("utf-8", "replace")

    def follow_logs(
        self,
        name: str,
        pod: Optional[str] = None,
        tail: Optional[int] = None,
        *,
        timestamps: bool = False,
        idle_timeout: Optional[float] = None,
    ) -> Iterator[str]:
        """Yields a pod's log lines (without the newline) as they are printed, until
        the pod ends and the server closes the stream.

        The request is made at once, so a wrong job or pod raises here rather than
        on the first ``next()``. ``idle_timeout``: seconds to wait for the next line
        before raising (``None``: wait as long as the pod is quiet). Closing the
        generator (or leaving a ``for`` loop) closes the connection.
        """
        query = [
            ("tail", tail),
            ("follow", "true"),
            ("timestamps", "true" if timestamps else None),
        ]
        response = self._open(
            "GET",
            self._log_path(name, pod),
            query=query,
            timeout=idle_timeout,
            accept="text/plain",
        )
        return self._lines(response, idle_timeout)

    def _lines(self, response, idle_timeout) -> Iterator[str]:
        with response:
            while True:
                try:
                    line = response.readline()
                except socket.timeout:
                    raise PaddleCloudError(
                        f"No log line for {idle_timeout} s.", code="timeout"
                    ) from None
                except (ConnectionError, http.client.HTTPException) as err:
                    raise PaddleCloudError(
                        f"The log stream from {self.server} broke: {err}.", code="connection"
                    ) from None
                if not line:
                    return
                text = line.decode("utf-8", "replace")
                if text.endswith("\n"):
                    text = text[:-1]
                    if text.endswith("\r"):
                        text = text[:-1]
                yield text

    # ------------------------------------------------------------------- metrics

    def log_metrics(self, name: str, points: Iterable[Mapping[str, Any]]) -> Dict[str, Any]:
        """Stores points of job ``name`` in one call (at most 10,000):
        ``[{"tag": "loss", "step": 3, "value": 0.25, "wall_time": 1.7e9}]``.
        ``wall_time`` (seconds) defaults to now; NaN and ±inf are kept. A step
        that repeats replaces the tag's points from that step on (a resumed
        job). Returns ``{"accepted", "tags", "replaced"}``."""
        body = [
            {
                "tag": p["tag"],
                "step": _count(int(p["step"]), "step"),
                "value": _json_float(p["value"]),
                **({"wall_time": float(p["wall_time"])} if p.get("wall_time") is not None else {}),
            }
            for p in points
        ]
        return self._json("POST", f"/jobs/{_quote(name)}/metrics", body=body)

    def ship_metric_file(
        self,
        name: str,
        path: str,
        offset: int,
        data: bytes,
        plugin_tags: Sequence[Mapping[str, Any]] = (),
    ) -> Dict[str, Any]:
        """Sends the bytes of a TensorBoard or VisualDL file (``path``, relative
        to the replica's directory) from ``offset`` for the console to read as
        job ``name``'s metrics. Returns ``{"offset", "points", "plugin_tags",
        "stalled", "warnings"}``: send the file's next piece from ``offset``
        with these ``plugin_tags``. `paddlecloud.ship` does this for a pod."""
        url = f"/jobs/{_quote(name)}/metric-files/" + urllib.parse.quote(path, safe="/")
        extra = {"PaddleCloud-Plugin-Tags": json.dumps(list(plugin_tags))} if plugin_tags else None
        return self._json(
            "POST",
            url,
            query=[("offset", int(offset))],
            stream=(io.BytesIO(data), len(data)),
            headers=extra,
        )

    def metric_tags(self, name: str) -> List[Dict[str, Any]]:
        """Job ``name``'s series: ``[{"tag", "points", "last_step", "last_value"}]``."""
        return self._json("GET", f"/jobs/{_quote(name)}/metrics")

    def metric_series(
        self,
        name: str,
        tag: str,
        *,
        start: Optional[int] = None,
        end: Optional[int] = None,
        width: int = 1000,
    ) -> Dict[str, Any]:
        """A series between steps ``start`` and ``end`` as a chart ``width`` pixels
        wide sees it: every point when there are few, else each bucket's minimum
        and maximum (no spike lost). ``{"points": [{"step", "wall_time",
        "value"}], "min", "max", "total", ...}``; values may be ``nan``/``inf``."""
        query = [("from", start), ("to", end), ("width", width)]
        path = f"/jobs/{_quote(name)}/metrics/" + urllib.parse.quote(tag, safe="")
        result = self._json("GET", path, query=query)
        for point in result.get("points", []):
            point["value"] = _from_json_float(point["value"])
        return result

    # ------------------------------------------------------------------- account

    def me(self) -> Dict[str, Any]:
        """Who the key belongs to: ``{"user_id", "email", "role", "account": {...}}``."""
        return self._json("GET", "/me")

    def accounts(self) -> List[Dict[str, Any]]:
        """The accounts the key's user belongs to: ``[{"account", "role"}]``. To act
        in another, use a key made there: ``Client(account="NAME")`` reads
        ``credentials-NAME.json``."""
        return self._json("GET", "/me/accounts")

    def members(self) -> Dict[str, Any]:
        """The account's ``members`` (``{"user_id", "email", "role", "created_at"}``)
        and, for its owners, open ``invitations``."""
        return self._json("GET", "/members")

    def invite(self, email: str, role: str = "member") -> Dict[str, Any]:
        """Mails ``email`` an invitation to the account as ``owner``, ``member`` or
        ``viewer`` (owners only)."""
        return self._json("POST", "/invitations", body={"email": email, "role": role})

