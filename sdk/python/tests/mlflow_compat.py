"""End-to-end check of an MLflow-Tracking-compatible server with the REAL mlflow client.

Run:
    PADDLECLOUD_URL=http://127.0.0.1:8080 PADDLECLOUD_TOKEN=<api key> \
        python -m unittest -v mlflow_compat

Requires the `mlflow-skinny` package (validated against mlflow-skinny 3.17.2).
Environment:
    PADDLECLOUD_URL    server base URL (the MLflow "tracking URI"); required
    PADDLECLOUD_TOKEN  API key; sent by the client as "Authorization: Bearer <key>"
                       (mlflow reads it from MLFLOW_TRACKING_TOKEN). Optional: if empty,
                       no Authorization header is sent and the bad-token test is skipped.
    MLFLOW_TEST_BIG_HISTORY  number of points logged to one metric through
                       MlflowClient.log_batch (default 26000: > 25000 forces the client to
                       follow next_page_token in get-history; 26 log-batch requests).

Only the standard library's unittest is used (no pytest).
"""
import math
import os
import sys
import time
import unittest
import uuid

BASE_URL = os.environ.get("PADDLECLOUD_URL", "").rstrip("/")
TOKEN = os.environ.get("PADDLECLOUD_TOKEN", "")

# --- client configuration (must happen before any request) -------------------------------
# Bearer auth: mlflow sends "Authorization: Bearer $MLFLOW_TRACKING_TOKEN" on every request
# (mlflow/utils/rest_utils.py: http_request). Username/password take precedence over the
# token, so make sure they are not set.
for _v in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_AUTH",
           "MLFLOW_WORKSPACE", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME"):
    os.environ.pop(_v, None)
if TOKEN:
    os.environ["MLFLOW_TRACKING_TOKEN"] = TOKEN
else:
    os.environ.pop("MLFLOW_TRACKING_TOKEN", None)
# No outbound telemetry (it would try to reach the internet) and fail fast instead of the
# default 7 retries with exponential back-off on 429/5xx (minutes).
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "60")
os.environ.setdefault("MLFLOW_ENABLE_ASYNC_LOGGING", "false")

import mlflow  # noqa: E402
from mlflow.entities import Metric  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

BIG_N = int(os.environ.get("MLFLOW_TEST_BIG_HISTORY", "26000"))
MANY_KEYS = 1100  # one log_metrics() call with 1100 keys -> 2 log-batch requests (1000 + 100)
SUFFIX = uuid.uuid4().hex[:10]
# space, slash, "+" and non-ASCII exercise query-string decoding of get-by-name ("+" = space)
EXP_NAME = f"paddlecloud mlflow-test/{SUFFIX} +ü"
RUN_NAME = f"run-{SUFFIX}"
LONG_PARAM = "p" * 6000  # MLflow's documented maximum param value length

# loss: steps 0..9 finite, then NaN, +Inf, -Inf at steps 10, 11, 12
LOSS_VALUES = [1.0 / (i + 1) for i in range(10)] + [math.nan, math.inf, -math.inf]


def _same_float(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b


class MlflowClientCompat(unittest.TestCase):
    """setUpClass performs the whole logging session once; tests then read it back."""

    @classmethod
    def setUpClass(cls):
        if not BASE_URL:
            raise unittest.SkipTest("PADDLECLOUD_URL is not set")
        mlflow.set_tracking_uri(BASE_URL)
        cls.client = MlflowClient()

        # set_experiment (new): get-by-name -> 404 RESOURCE_DOES_NOT_EXIST -> create -> get
        cls.t_before = int(time.time() * 1000)
        cls.exp_new = mlflow.set_experiment(EXP_NAME)
        # set_experiment (existing): get-by-name -> 200
        cls.exp_again = mlflow.set_experiment(EXP_NAME)

        run = mlflow.start_run(
            run_name=RUN_NAME,
            tags={"team": "paddle", "priority": "P1"},
            description="compat test run",
        )
        cls.run_id = run.info.run_id
        cls.started_run = run
        try:
            mlflow.log_param("lr", 0.01)
            mlflow.log_params({"batch_size": 32, "optimizer": "adam", "long": LONG_PARAM})
            # re-logging the same value is allowed (idempotent)
            mlflow.log_param("lr", 0.01)

            cls.loss_ts0 = int(time.time() * 1000)
            for i, v in enumerate(LOSS_VALUES):
                mlflow.log_metric("loss", v, step=i, timestamp=cls.loss_ts0 + i)
            # log_metric without explicit step/timestamp -> step 0, timestamp = now
            mlflow.log_metric("single", 42.5)

            mlflow.log_metrics({"acc": 0.5, "f1": 0.25}, step=1)
            mlflow.log_metrics({"acc": 0.75, "f1": 0.5}, step=2)
            # 1100 keys in one call: client splits into 1000 + 100 metrics per log-batch
            mlflow.log_metrics({f"k_{i}": float(i) for i in range(MANY_KEYS)}, step=3)

            # one metric, BIG_N points, via the client's log_batch (chunks of 1000)
            cls.big_ts0 = int(time.time() * 1000)
            cls.client.log_batch(
                cls.run_id,
                metrics=[Metric("big", float(i), cls.big_ts0 + i, i) for i in range(BIG_N)],
            )

            mlflow.set_tag("stage", "test")
            mlflow.set_tags({"a.b/c d": "x", "empty": ""})
        finally:
            mlflow.end_run()  # status FINISHED: get-run (url print) + runs/update
        cls.t_after = int(time.time() * 1000)

    # ------------------------------------------------------------------ experiments
    def test_set_experiment_new_and_existing(self):
        self.assertEqual(self.exp_new.name, EXP_NAME)
        self.assertTrue(self.exp_new.experiment_id)
        self.assertIsInstance(self.exp_new.experiment_id, str)
        self.assertEqual(self.exp_new.lifecycle_stage, "active")
        self.assertEqual(self.exp_again.experiment_id, self.exp_new.experiment_id)

    def test_get_experiment_by_name(self):
        exp = self.client.get_experiment_by_name(EXP_NAME)
        self.assertIsNotNone(exp)
        self.assertEqual(exp.experiment_id, self.exp_new.experiment_id)
        self.assertEqual(exp.name, EXP_NAME)
        self.assertEqual(exp.lifecycle_stage, "active")
        self.assertIsInstance(exp.creation_time, int)
        self.assertGreaterEqual(exp.creation_time, self.t_before - 60_000)  # allow clock skew
        self.assertIsInstance(exp.artifact_location, str)

    def test_get_experiment_by_name_missing_returns_none(self):
        self.assertIsNone(self.client.get_experiment_by_name(f"does-not-exist-{SUFFIX}"))

    def test_get_experiment_by_id(self):
        exp = self.client.get_experiment(self.exp_new.experiment_id)
        self.assertEqual(exp.name, EXP_NAME)

    def test_create_existing_experiment_fails(self):
        with self.assertRaises(MlflowException) as cm:
            self.client.create_experiment(EXP_NAME)
        self.assertEqual(cm.exception.error_code, "RESOURCE_ALREADY_EXISTS")

    # ------------------------------------------------------------------ run info
    def test_start_run_result(self):
        info = self.started_run.info
        self.assertEqual(info.run_name, RUN_NAME)
        self.assertEqual(info.experiment_id, self.exp_new.experiment_id)
        self.assertEqual(info.status, "RUNNING")
        self.assertIsNone(info.end_time)
        self.assertRegex(info.run_id, r"^[a-zA-Z0-9][\w\-]{0,255}$")
        self.assertEqual(self.started_run.data.tags.get("team"), "paddle")

    def test_get_run_info(self):
        run = self.client.get_run(self.run_id)
        info = run.info
        self.assertEqual(info.run_id, self.run_id)
        self.assertEqual(info.run_name, RUN_NAME)
        self.assertEqual(info.experiment_id, self.exp_new.experiment_id)
        self.assertEqual(info.status, "FINISHED")
        self.assertEqual(info.lifecycle_stage, "active")
        self.assertIsInstance(info.start_time, int)
        self.assertIsInstance(info.end_time, int)
        self.assertGreaterEqual(info.end_time, info.start_time)
        self.assertLessEqual(info.end_time, self.t_after + 1)
        self.assertIsInstance(info.artifact_uri, str)

    def test_get_run_params(self):
        params = self.client.get_run(self.run_id).data.params
        self.assertEqual(params, {"lr": "0.01", "batch_size": "32", "optimizer": "adam",
                                  "long": LONG_PARAM})

    def test_get_run_tags(self):
        tags = self.client.get_run(self.run_id).data.tags
        self.assertEqual(tags.get("team"), "paddle")
        self.assertEqual(tags.get("priority"), "P1")
        self.assertEqual(tags.get("stage"), "test")
        self.assertEqual(tags.get("a.b/c d"), "x")
        self.assertEqual(tags.get("empty"), "")
        self.assertEqual(tags.get("mlflow.runName"), RUN_NAME)
        self.assertEqual(tags.get("mlflow.note.content"), "compat test run")
        # context tags the client adds itself
        for k in ("mlflow.user", "mlflow.source.name", "mlflow.source.type"):
            self.assertIn(k, tags)

    def test_get_run_latest_metrics(self):
        metrics = self.client.get_run(self.run_id).data.metrics
        # latest = value at the highest step (then latest timestamp)
        self.assertEqual(metrics["loss"], -math.inf)
        self.assertEqual(metrics["single"], 42.5)
        self.assertEqual(metrics["acc"], 0.75)
        self.assertEqual(metrics["f1"], 0.5)
        self.assertEqual(metrics["big"], float(BIG_N - 1))
        for i in (0, 999, 1000, MANY_KEYS - 1):
            self.assertEqual(metrics[f"k_{i}"], float(i))
        self.assertEqual(len([k for k in metrics if k.startswith("k_")]), MANY_KEYS)

    # ------------------------------------------------------------------ metric history
    def test_metric_history_with_nan_inf(self):
        hist = self.client.get_metric_history(self.run_id, "loss")
        self.assertEqual(len(hist), len(LOSS_VALUES))
        for i, (m, expected) in enumerate(zip(hist, LOSS_VALUES)):
            self.assertEqual(m.key, "loss")
            self.assertEqual(m.step, i)
            self.assertIsInstance(m.step, int)
            self.assertEqual(m.timestamp, self.loss_ts0 + i)
            self.assertIsInstance(m.timestamp, int)
            self.assertTrue(_same_float(m.value, expected), f"step {i}: {m.value!r} != {expected!r}")

    def test_metric_history_defaults(self):
        hist = self.client.get_metric_history(self.run_id, "single")
        self.assertEqual(len(hist), 1)
        self.assertEqual(hist[0].step, 0)
        self.assertEqual(hist[0].value, 42.5)
        self.assertGreater(hist[0].timestamp, 1_600_000_000_000)  # milliseconds

    def test_metric_history_batch_logged(self):
        hist = self.client.get_metric_history(self.run_id, "acc")
        self.assertEqual([(m.step, m.value) for m in hist], [(1, 0.5), (2, 0.75)])

    def test_metric_history_big_paginated(self):
        hist = self.client.get_metric_history(self.run_id, "big")
        self.assertEqual(len(hist), BIG_N)
        self.assertEqual([m.step for m in hist], list(range(BIG_N)))
        self.assertEqual([m.value for m in hist], [float(i) for i in range(BIG_N)])
        self.assertEqual(hist[-1].timestamp, self.big_ts0 + BIG_N - 1)

    def test_metric_history_unknown_key_is_empty(self):
        self.assertEqual(list(self.client.get_metric_history(self.run_id, "nope")), [])

    # ------------------------------------------------------------------ errors
    def test_get_run_unknown_id(self):
        with self.assertRaises(MlflowException) as cm:
            self.client.get_run(uuid.uuid4().hex)
        self.assertEqual(cm.exception.error_code, "RESOURCE_DOES_NOT_EXIST")

    def test_metric_history_unknown_run(self):
        with self.assertRaises(MlflowException) as cm:
            self.client.get_metric_history(uuid.uuid4().hex, "loss")
        self.assertEqual(cm.exception.error_code, "RESOURCE_DOES_NOT_EXIST")

    def test_log_to_unknown_run(self):
        with self.assertRaises(MlflowException) as cm:
            self.client.log_metric(uuid.uuid4().hex, "x", 1.0)
        self.assertEqual(cm.exception.error_code, "RESOURCE_DOES_NOT_EXIST")

    def test_changing_param_value_rejected(self):
        run = self.client.create_run(self.exp_new.experiment_id, run_name=f"err-{SUFFIX}")
        try:
            self.client.log_param(run.info.run_id, "p", "1")
            self.client.log_param(run.info.run_id, "p", "1")  # same value: ok
            with self.assertRaises(MlflowException) as cm:
                self.client.log_param(run.info.run_id, "p", "2")
            self.assertEqual(cm.exception.error_code, "INVALID_PARAMETER_VALUE")
            with self.assertRaises(MlflowException) as cm:
                self.client.log_batch(run.info.run_id, params=[mlflow.entities.Param("p", "3")])
            self.assertEqual(cm.exception.error_code, "INVALID_PARAMETER_VALUE")
        finally:
            self.client.set_terminated(run.info.run_id, "KILLED")
        self.assertEqual(self.client.get_run(run.info.run_id).info.status, "KILLED")

    def test_bad_token_rejected(self):
        if not TOKEN:
            self.skipTest("PADDLECLOUD_TOKEN not set; server auth not exercised")
        os.environ["MLFLOW_TRACKING_TOKEN"] = "definitely-not-a-valid-key-" + SUFFIX
        try:
            with self.assertRaises(MlflowException) as cm:
                MlflowClient().get_experiment_by_name(EXP_NAME)
            self.assertIn(cm.exception.error_code, ("UNAUTHENTICATED", "PERMISSION_DENIED"))
        finally:
            os.environ["MLFLOW_TRACKING_TOKEN"] = TOKEN


if __name__ == "__main__":
    print(f"mlflow {mlflow.__version__} -> {BASE_URL}", file=sys.stderr)
    unittest.main(verbosity=2)
