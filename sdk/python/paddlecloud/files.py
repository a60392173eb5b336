"""Datasets and models: upload, download, and ``register_model``.

Inside a job, ``paddlecloud.register_model("resnet", "output/")`` makes the
job's output a new version of model ``resnet``, recorded as made by the job.
``paddlecloud.dataset_dir()`` is where the executor put the job's dataset.

Files stream from and to disk (never whole in memory); each lands whole or
not at all on the server, so a failed upload is simply sent again.
"""

from __future__ import annotations

import os
import shutil
import urllib.parse
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .errors import PaddleCloudError

PathLike = Union[str, "os.PathLike[str]"]

_CHUNK = 1 << 20


def _kind(kind: str) -> str:
    plural = {"dataset": "datasets", "datasets": "datasets", "model": "models", "models": "models"}
    if kind not in plural:
        raise ValueError(f"kind is 'dataset' or 'model', not {kind!r}")
    return plural[kind]


def _file_path(path: str) -> str:
    return "/".join(urllib.parse.quote(seg, safe="") for seg in path.split("/"))


def _tag_list(tags: Union[str, Iterable[str]]) -> List[str]:
    """Tags as the API takes them, a list: ``"a, b"`` is ``["a", "b"]``."""
    items = tags.split(",") if isinstance(tags, str) else list(tags)
    return [t.strip() for t in items if t.strip()]


def _local_files(paths: Union[PathLike, Sequence[PathLike]], to: str) -> List[Tuple[str, str]]:
    """(local file, path inside the asset) for every file under ``paths``: a
    file by its name, a folder's files by their paths below it."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    prefix = to.strip("/") + "/" if to.strip("/") else ""
    out: List[Tuple[str, str]] = []
    for root in map(os.fspath, paths):
        if os.path.isfile(root):
            out.append((root, prefix + os.path.basename(root)))
            continue
        if not os.path.isdir(root):
            raise PaddleCloudError(f"No file or folder at {root}.", code="invalid")
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files):
                local = os.path.join(folder, name)
                rel = os.path.relpath(local, root).replace(os.sep, "/")
                out.append((local, prefix + rel))
    if not out:
        raise PaddleCloudError(f"No files to upload under {list(paths)!r}.", code="invalid")
    return out


class FilesMixin:
    """`Client` methods for datasets and models (see the module)."""

    account: Optional[str]

    def _json(self, method: str, path: str, **kwargs) -> Any:  # pragma: no cover - in Client
        raise NotImplementedError

    def _open(self, method: str, path: str, **kwargs):  # pragma: no cover - in Client
        raise NotImplementedError

    def _owner(self) -> str:
        if not self.account:
            self.account = self._json("GET", "/me")["account"]["name"]
        return self.account  # type: ignore[return-value]

    def _split(self, name: str) -> Tuple[str, str]:
        owner, _, bare = name.rpartition("/")
        return (owner or self._owner(), bare)

    def list_datasets(self) -> List[Dict[str, Any]]:
        """Datasets the key can read: the account's own, shared with it, and public."""
        return self._json("GET", "/datasets")

    def list_models(self) -> List[Dict[str, Any]]:
        """Models the key can read."""
        return self._json("GET", "/models")

    def _ensure(self, plural: str, name: str, description: str = "", tags: Sequence[str] = ()) -> None:
        owner = self._owner()
        try:
            self._json("GET", f"/{plural}/{owner}/{urllib.parse.quote(name, safe='')}")
        except PaddleCloudError as err:
            if err.status != 404:
                raise
            body = {"name": name, "description": description, "tags": list(tags)}
            try:
                self._json("POST", f"/{plural}", body=body)
            except PaddleCloudError as made:
                # Another process (a second replica, a parallel run) made it between
                # our GET and POST: it exists, which is all "made if missing" means.
                if made.status != 409:
                    raise

    def _put(self, plural: str, owner: str, name: str, local: str, path: str,
             version: Optional[int]) -> Dict[str, Any]:
        query = [("version", version)] if version is not None else None
        url = f"/{plural}/{owner}/{urllib.parse.quote(name, safe='')}/files/{_file_path(path)}"
        size = os.path.getsize(local)
        with open(local, "rb") as body:
            with self._open("PUT", url, query=query, stream=(body, size), timeout=None) as res:
                import json

                return json.loads(res.read().decode("utf-8"))

    def upload_dataset(
        self,
        name: str,
        paths: Union[PathLike, Sequence[PathLike]],
        *,
        to: str = "",
        description: str = "",
        tags: Union[str, Iterable[str]] = "",
    ) -> Dict[str, Any]:
        """Uploads files and folders into dataset ``name`` of the key's account
        (made if missing), below folder ``to``; returns the dataset."""
        tags = _tag_list(tags)
        files = _local_files(paths, to)
        self._ensure("datasets", name, description, tags)
        owner = self._owner()
        for local, path in files:
            self._put("datasets", owner, name, local, path, None)
        return self._json("GET", f"/datasets/{owner}/{urllib.parse.quote(name, safe='')}")

    def register_model(
        self,
        name: str,
        path: Union[PathLike, Sequence[PathLike]],
        *,
        description: str = "",
        tags: Union[str, Iterable[str]] = "",
        job: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Makes the files at ``path`` (a file, a folder, or a list of them) a new
        version of model ``name`` (made if missing) and returns the version
        (``{"version", "state": "ready", "job", ...}``). Inside a job it records
        the job (``$PADDLE_JOB_ID``) as the version's source."""
        tags = _tag_list(tags)
        files = _local_files(path, "")
        self._ensure("models", name)
        owner = self._owner()
        base = f"/models/{owner}/{urllib.parse.quote(name, safe='')}"
        job = job or os.environ.get("PADDLE_JOB_ID") or None
        version = self._json(
            "POST", f"{base}/versions", body={"description": description, "tags": tags, "job": job}
        )["version"]
        for local, rel in files:
            self._put("models", owner, name, local, rel, version)
        return self._json("POST", f"{base}/versions/{version}/finish")

    def save_dataset_version(
        self,
        name: str,
        *,
        description: str = "",
        tags: Union[str, Iterable[str]] = "",
    ) -> Dict[str, Any]:
        """Saves dataset ``name``'s files as they are now as its next version,
        which never changes (jobs read it as ``name:N``); returns the version
        (``{"version", "state": "ready", "files", "bytes", ...}``). Inside a job
        it records the job (``$PADDLE_JOB_ID``)."""
        owner, bare = self._split(name)
        body = {
            "description": description,
            "tags": _tag_list(tags),
            "job": os.environ.get("PADDLE_JOB_ID") or None,
        }
        return self._json(
            "POST", f"/datasets/{owner}/{urllib.parse.quote(bare, safe='')}/versions", body=body
        )

    def dataset_versions(self, name: str) -> List[Dict[str, Any]]:
        """A dataset's saved versions, newest first; ``name`` or ``owner/name``."""
        owner, bare = self._split(name)
        return self._json("GET", f"/datasets/{owner}/{urllib.parse.quote(bare, safe='')}/versions")

    def model_versions(self, name: str) -> List[Dict[str, Any]]:
        """A model's versions, newest first; ``name`` or ``owner/name``."""
        owner, bare = self._split(name)
        return self._json("GET", f"/models/{owner}/{urllib.parse.quote(bare, safe='')}/versions")

    def _download(self, plural: str, name: str, dest: PathLike, version: Optional[int]) -> List[str]:
        owner, bare = self._split(name)
        base = f"/{plural}/{owner}/{urllib.parse.quote(bare, safe='')}"
        got: List[str] = []
        dirs = [""]
        while dirs:
            folder = dirs.pop()
            query: List[Tuple[str, Any]] = [("dir", folder)]
            if version is not None:
                query.append(("version", version))
            for entry in self._json("GET", f"{base}/files", query=query):
                if entry["dir"]:
                    dirs.append(entry["path"])
                    continue
                rel = entry["path"]
                parts = rel.split("/")
                if any(p in ("", ".", "..") for p in parts) or rel.startswith("/"):
                    raise PaddleCloudError(f"Refusing the server's odd path {rel!r}.", code="invalid")
                target = os.path.join(os.fspath(dest), *parts)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                vq = [("version", version)] if version is not None else None
                with self._open("GET", f"{base}/files/{_file_path(rel)}", query=vq,
                                timeout=None, accept="*/*") as res:
                    with open(target + ".part", "wb") as out:
                        shutil.copyfileobj(res, out, _CHUNK)
                os.replace(target + ".part", target)
                got.append(target)
        return got

    def download_dataset(self, name: str, dest: PathLike, version: Optional[int] = None) -> List[str]:
        """Downloads every file of dataset ``name`` (or ``owner/name``) into
        folder ``dest``: its working files, or saved ``version``; returns the
        files written."""
        return self._download("datasets", name, dest, version)

    def download_model(self, name: str, dest: PathLike, version: Optional[int] = None) -> List[str]:
        """Downloads a model version (default: the newest finished one) into
        folder ``dest``; returns the files written."""
        if version is None:
            ready = [v for v in self.model_versions(name) if v["state"] == "ready"]
            if not ready:
                raise PaddleCloudError(f"Model {name} has no finished version.", code="not_found")
            version = ready[0]["version"]
        return self._download("models", name, dest, version)


def _input_dir(prefix: str, what: str, name: Optional[str]) -> str:
    key = prefix
    if name is not None:
        bare = name.rpartition("/")[2].partition(":")[0]
        key += "_" + "".join(c if c.isalnum() else "_" for c in bare.upper())
    value = os.environ.get(key)
    if not value:
        raise PaddleCloudError(
            f"${key} is not set: run inside a job submitted with that {what}.", code="invalid"
        )
    return value


def dataset_dir(name: Optional[str] = None) -> str:
    """Inside a job: the folder holding its dataset (the first it names, or
    ``name``), as the executor mounted it."""
    return _input_dir("PADDLE_DATASET_DIR", "dataset", name)


def model_dir(name: Optional[str] = None) -> str:
    """Inside a job: the folder holding the model version it reads (the first
    it names, or model ``name``; ``owner/`` and ``:version`` are ignored)."""
    return _input_dir("PADDLE_MODEL_DIR", "model", name)
