"""PaddleCloud Console SDK: submit, watch and stop distributed PaddlePaddle jobs.

    import paddlecloud

    job = paddlecloud.create_cloud_job(
        "mnist", 2, "2Gi", 0, "500m", 1, "1Gi", "1",
        command="python3 train.py --epochs 3",
    )
    paddlecloud.wait_job("mnist")
    print(paddlecloud.logs("mnist", "trainer-0"))

A script run on your own machine is tracked like a cluster job with
``with paddlecloud.run(params={...}) as run:`` or ``paddlecloud.init()`` (see
`paddlecloud.runs`): its output, metrics, parameters and how it ended.

Inside a training job, ``paddlecloud.draw_board(loss, "train/loss")`` charts a
scalar on PaddleBoard (see `paddlecloud.board`), ``paddlecloud.dataset_dir()``
is where its dataset is, ``paddlecloud.model_dir()`` the model version it
reads, and ``paddlecloud.register_model("resnet", "output/")``
makes its output a new model version (see `paddlecloud.files`).

The module-level functions use a default `Client()`, which reads
``$PADDLECLOUD_CREDENTIALS`` or ``~/.config/paddlecloud/credentials.json``
(download it from the Account page of the console). Use `Client` directly for
another server or key.
"""

from __future__ import annotations

import inspect
import os
import threading
from typing import Any, Callable, Optional, Tuple

from .client import (
    CREDENTIALS_ENV,
    DEFAULT_CREDENTIALS,
    SERVER_ENV,
    Client,
    credentials_path,
    load_credentials,
)
from .board import Board, draw_board, flush_board
from .errors import PaddleCloudError
from .files import dataset_dir, model_dir
from .runs import Run, init, run, sync

__version__ = "0.1.0"

__all__ = [
    "Client",
    "PaddleCloudError",
    "DEFAULT_CREDENTIALS",
    "credentials_path",
    "load_credentials",
    "default_client",
    "create_cloud_job",
    "list_jobs",
    "list_jobs_page",
    "get_job",
    "wait_job",
    "stop_job",
    "delete_job",
    "job_detail",
    "aliases",
    "set_alias",
    "delete_alias",
    "alias_history",
    "pods",
    "logs",
    "follow_logs",
    "me",
    "accounts",
    "members",
    "invite",
    "save_template",
    "list_templates",
    "get_template",
    "run_template",
    "publish_template",
    "save_environment",
    "list_environments",
    "get_environment",
    "wait_environment",
    "publish_environment",
    "run_pipeline",
    "list_pipelines",
    "get_pipeline",
    "wait_pipeline",
    "stop_pipeline",
    "retry_pipeline",
    "create_schedule",
    "list_schedules",
    "get_schedule",
    "pause_schedule",
    "resume_schedule",
    "delete_schedule",
    "notebook_parameters",
    "run_notebook",
    "notebook_run_output",
    "Board",
    "draw_board",
    "flush_board",
    "log_metrics",
    "metric_tags",
    "metric_series",
    "list_datasets",
    "list_models",
    "upload_dataset",
    "register_model",
    "model_versions",
    "download_dataset",
    "download_model",
    "dataset_dir",
    "model_dir",
    "Run",
    "run",
    "init",
    "sync",
]

_lock = threading.Lock()
_default: Optional[Tuple[Tuple[Optional[str], ...], Client]] = None


def default_client() -> Client:
    """The `Client()` the module-level functions use. It is made on first use and
    made again when ``PADDLECLOUD_CREDENTIALS``, ``PADDLECLOUD_SERVER`` or
    ``PADDLECLOUD_KEY`` (a notebook's own key) change."""
    global _default
    token = os.environ.get("PADDLECLOUD_JOB_TOKEN")
    env = (
        os.environ.get(CREDENTIALS_ENV),
        os.environ.get(SERVER_ENV),
        token,
        os.environ.get("PADDLECLOUD_KEY"),
    )
    with _lock:
        if _default is None or _default[0] != env:
            # Inside a job (and no credentials file named): the job's own token.
            if token and env[1] and not env[0]:
                client = Client(server=env[1], key=token)
            else:
                client = Client()
            _default = (env, client)
        return _default[1]


def _module_function(name: str) -> Callable[..., Any]:
    method = getattr(Client, name)

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(default_client(), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = (method.__doc__ or "") + "\n\n(Uses the default client.)"
    signature = inspect.signature(method)
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=list(signature.parameters.values())[1:]
    )
    call.__module__ = __name__
    return call


create_cloud_job = _module_function("create_cloud_job")
list_jobs = _module_function("list_jobs")
list_jobs_page = _module_function("list_jobs_page")
get_job = _module_function("get_job")
wait_job = _module_function("wait_job")
stop_job = _module_function("stop_job")
delete_job = _module_function("delete_job")
job_detail = _module_function("job_detail")
aliases = _module_function("aliases")
set_alias = _module_function("set_alias")
delete_alias = _module_function("delete_alias")
alias_history = _module_function("alias_history")
pods = _module_function("pods")
logs = _module_function("logs")
follow_logs = _module_function("follow_logs")
me = _module_function("me")
accounts = _module_function("accounts")
members = _module_function("members")
invite = _module_function("invite")
save_template = _module_function("save_template")
list_templates = _module_function("list_templates")
get_template = _module_function("get_template")
run_template = _module_function("run_template")
publish_template = _module_function("publish_template")
save_environment = _module_function("save_environment")
list_environments = _module_function("list_environments")
get_environment = _module_function("get_environment")
wait_environment = _module_function("wait_environment")
publish_environment = _module_function("publish_environment")
run_pipeline = _module_function("run_pipeline")
list_pipelines = _module_function("list_pipelines")
get_pipeline = _module_function("get_pipeline")
wait_pipeline = _module_function("wait_pipeline")
stop_pipeline = _module_function("stop_pipeline")
retry_pipeline = _module_function("retry_pipeline")
create_schedule = _module_function("create_schedule")
list_schedules = _module_function("list_schedules")
get_schedule = _module_function("get_schedule")
pause_schedule = _module_function("pause_schedule")
resume_schedule = _module_function("resume_schedule")
delete_schedule = _module_function("delete_schedule")
notebook_parameters = _module_function("notebook_parameters")
run_notebook = _module_function("run_notebook")
notebook_run_output = _module_function("notebook_run_output")
log_metrics = _module_function("log_metrics")
metric_tags = _module_function("metric_tags")
metric_series = _module_function("metric_series")
list_datasets = _module_function("list_datasets")
list_models = _module_function("list_models")
upload_dataset = _module_function("upload_dataset")
register_model = _module_function("register_model")
model_versions = _module_function("model_versions")
download_dataset = _module_function("download_dataset")
download_model = _module_function("download_model")
