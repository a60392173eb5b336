"""Notebooks and the versions of their files, from the SDK and the CLI, against
the real `paddlecloud` server running a real JupyterLab:

    python3 -m unittest discover -s sdk/python/tests -v

The server runs notebooks with a Python that has JupyterLab:
`$PADDLECLOUD_NOTEBOOK_PYTHON`, else `~/.cache/paddlecloud/pyvenv/bin/python` (which
`scripts/setup.sh test` makes). Without one the tests are skipped, or fail when
`PADDLECLOUD_REQUIRE_JUPYTER=1`.
"""

import json
import os
import subprocess
import time
import unittest
import urllib.request

import test_sdk as base
from test_sdk import REPO

from paddlecloud import Client, PaddleCloudError


def _jupyter_python():
    path = os.environ.get("PADDLECLOUD_NOTEBOOK_PYTHON") or os.path.expanduser(
        "~/.cache/paddlecloud/pyvenv/bin/python"
    )
    if os.path.exists(path) and subprocess.run(
        [path, "-c", "import jupyterlab"], capture_output=True, timeout=120
    ).returncode == 0:
        return path
    return None


def setUpModule():
    python = _jupyter_python()
    if python is None:
        message = "no Python with jupyterlab: run `scripts/setup.sh test`"
        if os.environ.get("PADDLECLOUD_REQUIRE_JUPYTER") == "1":
            raise RuntimeError(message)
        raise unittest.SkipTest(message)
    # Notebook runs build papermill into an environment: once per machine,
    # in the cache the Rust tests build theirs in.
    environments = os.path.expanduser("~/.cache/paddlecloud/environments")
    base.setUpModule(extra_args=(
        "--notebook-python", python, "--environments-dir", environments,
    ))


def tearDownModule():
    base.tearDownModule()


def notebook(lr):
    return {
        "cells": [
            {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "# Sweep"},
            {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": None,
             "outputs": [], "source": f"lr = {lr}\nprint(lr)"},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


class NotebookVersionsTest(unittest.TestCase):
    def setUp(self):
        self.client = Client(server=base.SERVER, key=base.KEY, timeout=60)
        self.name = "sdk-lab"
        self.client.create_notebook(self.name, cpu="500m", memory="1Gi")
        self.addCleanup(self._delete)
        deadline = time.monotonic() + 180
        while self.client.get_notebook(self.name)["status"] != "running":
            self.assertLess(time.monotonic(), deadline, self.client.get_notebook(self.name))
            time.sleep(0.5)

    def _delete(self):
        try:
            self.client.delete_notebook(self.name)
        except PaddleCloudError:
            pass

    def save(self, path, content):
        """A save as JupyterLab sends it, through the console's proxy with the key."""
        url = f"{base.SERVER}/notebooks/{base.ACCOUNT}/{self.name}/api/contents/{path}"
        body = json.dumps({"type": "notebook", "format": "json", "content": content})
        request = urllib.request.Request(
            url, data=body.encode(), method="PUT",
            headers={"Authorization": f"token {base.KEY}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            self.assertLess(answer.status, 300)

    def cli(self, *args):
        done = subprocess.run(
            [str(base._binary()), "notebook", *args, "--credentials", base.CREDENTIALS],
            capture_output=True, text=True, cwd=REPO, timeout=120,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_saved_versions_are_listed_compared_shown_and_restored(self):
        self.save("sweep.ipynb", notebook(0.1))
        self.save("sweep.ipynb", notebook(0.01))
        history = self.client.notebook_history(self.name)
        self.assertEqual(history["path"], "sweep.ipynb")
        old, new = history["versions"][1], history["versions"][0]
        self.assertEqual([old["reason"], new["reason"]], ["save", "save"])
        self.assertEqual(new["author"], base.EMAIL)

        diff = self.client.diff_notebook_versions(self.name, old["id"], new["id"])
        changed = [c for c in diff["cells"] if c["change"] == "changed"]
        self.assertEqual(len(changed), 1)
        self.assertIn({"change": "added", "text": "lr = 0.01"}, changed[0]["lines"])

        kept = json.loads(self.client.notebook_version(self.name, old["id"]))
        self.assertEqual(kept["cells"][1]["source"], "lr = 0.1\nprint(lr)")

        # The CLI reads the same: the history, the diff as text, a restore.
        listed = self.cli("history", self.name)
        self.assertIn("sweep.ipynb  (2 versions)", listed)
        self.assertIn(f"#{old['id']}", listed)
        printed = self.cli("diff", self.name, str(old["id"]), str(new["id"]))
        self.assertIn("@@ Cell 2 · code · changed", printed)
        self.assertIn("- lr = 0.1", printed)
        self.assertIn("+ lr = 0.01", printed)
        self.assertIn("(1 unchanged cells; --all prints them)", printed)
        said = self.cli("restore", self.name, str(old["id"]))
        self.assertIn(f"sweep.ipynb is version #{old['id']} again", said)
        latest = self.client.notebook_history(self.name, "sweep.ipynb")["versions"][0]
        self.assertEqual((latest["reason"], latest["restored_from"]), ("restore", old["id"]))

        # Stopped, it cannot be restored into; the SDK says why.
        self.client.stop_notebook(self.name)
        with self.assertRaises(PaddleCloudError) as refused:
            self.client.restore_notebook_version(self.name, new["id"])
        self.assertEqual(refused.exception.status, 409)
        self.assertIn("Start", str(refused.exception))

    def test_a_file_shared_by_link_is_read_by_anyone_holding_it_and_copied(self):
        self.save("sweep.ipynb", notebook(0.1))
        made = self.client.share_notebook_file(self.name, "sweep.ipynb", with_="link", expires_days=2)
        link = made["link"]
        self.assertTrue(link.startswith("/shared/notebooks/pcf_"), made)
        # Another account's key reads it through the link, as anyone would.
        guest = Client(server=base.SERVER, key=base.GUEST_KEY, timeout=30)
        kept = json.loads(guest.shared_notebook_file(base.SERVER + link))
        self.assertEqual(kept["cells"][1]["source"], "lr = 0.1\nprint(lr)")
        copied = self.client.copy_shared_notebook(link, self.name)
        self.assertEqual(copied["path"], "sweep-copy.ipynb")
        listed = self.cli("shares", self.name)
        self.assertIn(f"#{made['share']['id']}  sweep.ipynb  with link pcf_", listed)
        self.cli("unshare", self.name, str(made["share"]["id"]))
        self.assertEqual(self.client.notebook_shares(self.name), [])
        with self.assertRaises(PaddleCloudError) as gone:
            guest.shared_notebook_file(link)
        self.assertEqual(gone.exception.status, 404)

    def test_a_notebook_runs_as_a_job_with_values_and_its_output_is_read(self):
        self.save("train.ipynb", {
            "cells": [
                {"cell_type": "code", "id": "p", "metadata": {"tags": ["parameters"]},
                 "execution_count": None, "outputs": [], "source": "epochs = 2  # passes"},
                {"cell_type": "code", "id": "r", "metadata": {}, "execution_count": None,
                 "outputs": [], "source": "print('EPOCHS', epochs * 10)"},
            ],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5,
        })
        read = self.client.notebook_parameters(self.name, "train.ipynb")
        self.assertEqual(
            [(p["name"], p["type"], p["default"], p["description"]) for p in read["parameters"]],
            [("epochs", "int", 2, "passes")],
        )
        with self.assertRaises(PaddleCloudError) as bad:
            self.client.run_notebook(self.name, "train.ipynb", {"epochs": "many"})
        self.assertEqual((bad.exception.status, bad.exception.field), (400, "values.epochs"))
        job = self.client.run_notebook(self.name, "train.ipynb", {"epochs": 3}, job_name="sdk-run",
                                       cpu="500m")
        self.assertEqual(job["spec"]["notebook_run"]["values"], {"epochs": 3})
        ended = self.client.wait_job("sdk-run", timeout=900)
        self.assertEqual(ended["status"], "succeeded", self.client.job_detail("sdk-run"))
        executed = json.loads(self.client.notebook_run_output("sdk-run"))
        printed = json.dumps(executed["cells"])
        self.assertIn("EPOCHS 30", printed)
        detail = self.client.job_detail("sdk-run")["notebook_run"]
        self.assertEqual((detail["done"], detail["cells"]), (3, 3))
        # The CLI: the parameters, a run that waits and says how far it got.
        listed = self.cli("params", self.name, "train.ipynb")
        self.assertIn("epochs: int = 2  # passes", listed)
        said = self.cli("run", self.name, "train.ipynb", "--set", "epochs=4", "--job-name",
                        "cli-run", "--cpu", "500m", "--wait")
        self.assertIn("3 of 3 cells ran", said)
        page = self.cli("output", "cli-run", "--html")
        self.assertIn("EPOCHS 40", page)

    def test_another_accounts_key_finds_no_history(self):
        guest = Client(server=base.SERVER, key=base.GUEST_KEY, timeout=30)
        with self.assertRaises(PaddleCloudError) as caught:
            guest.notebook_history(self.name)
        self.assertEqual(caught.exception.status, 404)


if __name__ == "__main__":
    unittest.main()
