"""An account's secrets from the SDK and the CLI, against the real `paddlecloud`
server: an owner sets them, a job gets them as a variable and as a file, and
their values are in no answer and in no log; bad input is refused naming the
field; a member lists them but does not set them.

    python3 -m unittest discover -s sdk/python/tests -p test_secrets.py -v
"""

import json
import os
import secrets as _random
import sqlite3
import subprocess
import time
import unittest
import urllib.request

import test_sdk as base
from test_sdk import REPO

from paddlecloud import Client, PaddleCloudError


def setUpModule():
    base.setUpModule()


def tearDownModule():
    base.tearDownModule()


def unique_value():
    """A value no other test or library prints."""
    return f"s3cr3t-{_random.token_hex(12)}"


# Proves it got both values by printing them reversed (the file's on one line,
# as JSON), and prints them as they are too, as a careless program would.
SCRIPT = (
    "import json, os\n"
    "v = os.environ['S3_KEY']\n"
    "d = os.environ['PADDLECLOUD_SECRETS_DIR']\n"
    "f = open(os.path.join(d, 'gcp.json')).read()\n"
    "print('env reversed', v[::-1])\n"
    "print('file reversed', json.dumps(f[::-1]))\n"
    "print('env as is', v)\n"
    "print('file as is')\n"
    "print(f, end='')\n"
    "print('dir', d, flush=True)\n"
)


class SecretsTest(base.ClientTestCase):
    def get(self, path):
        """A GET of the REST API with the SDK's key, as text."""
        request = urllib.request.Request(
            f"{base.SERVER}/api/v1{path}", headers={"Authorization": f"Bearer {base.KEY}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read().decode("utf-8")

    def tearDown(self):
        super().tearDown()
        for info in self.client.secrets():
            self.client.delete_secret(info["name"])

    def test_a_secret_reaches_a_job_as_a_variable_and_a_file_and_its_value_is_nowhere_else(self):
        value = unique_value()
        private = unique_value()
        file_value = f"private_key={private}\nclient_email=ci@example.com\n"

        made = self.client.set_secret("s3-key", value, description="Read access to the bucket")
        self.assertEqual(made["name"], "s3-key")
        self.assertEqual(made["size"], len(value))
        self.assertEqual(made["description"], "Read access to the bucket")
        self.assertEqual(made["updated_by"], base.EMAIL)
        self.assertIsNone(made["last_used_at"])
        self.assertNotIn("value", made)
        gcp = self.client.set_secret("gcp", value_bytes=file_value.encode())
        self.assertEqual(gcp["size"], len(file_value.encode()))

        listed = self.client.secrets()
        self.assertEqual([s["name"] for s in listed], ["gcp", "s3-key"])
        self.assertEqual(
            set(listed[1]),
            {"name", "description", "size", "created_at", "updated_at", "updated_by",
             "last_used_at"},
        )

        job = self.submit(
            "secrets", ["python3", "-c", SCRIPT],
            secrets=["S3_KEY=s3-key", "file:gcp.json=gcp"],
        )
        name = job["name"]
        self.assertEqual(
            job["spec"]["secrets"],
            [{"secret": "s3-key", "env": "S3_KEY"}, {"secret": "gcp", "file": "gcp.json"}],
        )
        done = self.client.wait_job(name, timeout=60, poll=0.2)
        self.assertEqual(done["status"], "succeeded", done)

        log = self.client.logs(name, "trainer-0")
        self.assertIn(f"env reversed {value[::-1]}", log)
        self.assertIn(f"file reversed {json.dumps(file_value[::-1])}", log)
        self.assertIn("env as is ***\n", log)
        # Each line of a value of several lines is masked too.
        self.assertIn("file as is\n***\n***\n", log)
        folder = [line[4:] for line in log.splitlines() if line.startswith("dir ")]
        self.assertEqual(len(folder), 1, log)
        self.assertFalse(os.path.exists(folder[0]), f"{folder[0]} is left after the job")

        # Nothing a user reads holds a value.
        seen = {
            "set": json.dumps([made, gcp]),
            "secrets": json.dumps(self.client.secrets()),
            "job": json.dumps(self.client.get_job(name)),
            "detail": json.dumps(self.client.job_detail(name)),
            "log": log,
            "stamped log": self.client.logs(name, "trainer-0", timestamps=True),
            "audit": self.get("/audit"),
        }
        for what, text in seen.items():
            for secret in (value, private):
                self.assertNotIn(secret, text, f"{what} shows a value")
        self.assertIn("secret.created", seen["audit"])
        self.assertIn(f"job {name}: s3-key as S3_KEY, gcp as file gcp.json", seen["audit"])
        used = {s["name"]: s["last_used_at"] for s in self.client.secrets()}
        self.assertIsInstance(used["s3-key"], int)
        self.assertIsInstance(used["gcp"], int)

        # The CLI's --secret gives the same.
        cli_job = base.job_name("cli-secret")
        self.jobs.append(cli_job)
        done = subprocess.run(
            [str(base._binary()), "submit", cli_job, "--trainer-cpu", "250m",
             "--trainer-memory", "128Mi", "--secret", "GOT=s3-key", "--wait",
             "--credentials", base.CREDENTIALS, "--",
             "python3", "-c", "import os; v = os.environ['GOT']; print('cli', v[::-1], v)"],
            capture_output=True, text=True, cwd=REPO, timeout=120,
        )
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertNotIn(value, done.stdout + done.stderr)
        self.assertIn(f"cli {value[::-1]} ***", self.client.logs(cli_job))

        # A new value replaces the old; a deleted secret is gone, and a job
        # naming it is refused before it is recorded.
        again = self.client.set_secret("s3-key", "another-value")
        self.assertEqual(again["size"], len("another-value"))
        self.assertGreaterEqual(again["updated_at"], made["updated_at"])
        self.client.delete_secret("gcp")
        self.assertEqual([s["name"] for s in self.client.secrets()], ["s3-key"])
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.delete_secret("gcp")
        self.assertEqual((caught.exception.status, caught.exception.code), (404, "not_found"))
        refused = base.job_name("gone")
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.create_cloud_job(refused, 1, "64Mi", 0, "100m", command=["true"],
                                         secrets=[{"secret": "gcp", "file": "gcp.json"}])
        err = caught.exception
        self.assertEqual((err.status, err.field), (400, "secrets"))
        self.assertIn("There is no secret “gcp” in sdk", err.message)
        with self.assertRaises(PaddleCloudError) as caught:
            self.client.get_job(refused)
        self.assertEqual(caught.exception.status, 404)
        audit = self.get("/audit")
        self.assertIn("secret.changed", audit)
        self.assertIn("secret.deleted", audit)

    def test_bad_input_is_refused_naming_the_field(self):
        for args, kwargs, field, says in [
            (("S3", "x"), {}, "name", "not a secret name"),
            (("s3-", "x"), {}, "name", "not a secret name"),
            (("empty", ""), {}, "value", "Give the secret's value"),
            (("big", "x" * 70_000), {}, "value", "at most 64 KiB"),
            (("two-lines", "x"), {"description": "one\ntwo"}, "description", "one line"),
        ]:
            with self.assertRaises(PaddleCloudError) as caught:
                self.client.set_secret(*args, **kwargs)
            err = caught.exception
            self.assertEqual((err.status, err.code, err.field), (400, "invalid", field), str(err))
            self.assertIn(says, err.message)
        self.assertEqual(self.client.secrets(), [])

        # What the SDK itself can tell is wrong.
        with self.assertRaises(ValueError):
            self.client.set_secret("s3-key")
        with self.assertRaises(ValueError):
            self.client.set_secret("s3-key", "text", value_bytes=b"bytes")
        with self.assertRaises(ValueError):
            self.client.create_cloud_job(base.job_name("where"), 1, "64Mi", 0, "100m",
                                         command=["true"], secrets=["s3-key"])

        # Bytes that are not text are a file, not a variable.
        self.client.set_secret("blob", b"\xff\x00\xfe")
        for secrets, says in [
            (["X=blob"], "is not text"),
            (["PADDLE_PORT=blob"], "set by PaddleCloud"),
            (["file:../x=blob"], "not a file name"),
            (["A=blob", "A=blob"], "given two secrets"),
            ([{"secret": "blob"}], "a variable or a file"),
        ]:
            with self.assertRaises(PaddleCloudError) as caught:
                self.client.create_cloud_job(base.job_name("bad"), 1, "64Mi", 0, "100m",
                                             command=["true"], secrets=secrets)
            err = caught.exception
            self.assertEqual((err.status, err.field), (400, "secrets"), str(err))
            self.assertIn(says, err.message)
        job = self.submit("blob", ["sh", "-c", 'wc -c < "$PADDLECLOUD_SECRETS_DIR/blob.bin"'],
                          secrets=["file:blob.bin=blob"])
        self.assertEqual(self.client.wait_job(job["name"], timeout=60, poll=0.2)["status"],
                         "succeeded")
        self.assertEqual(self.client.logs(job["name"]).strip(), "3")

    def test_a_member_lists_secrets_but_only_owners_set_and_delete_them(self):
        self.client.set_secret("s3-key", unique_value())
        db = sqlite3.connect(os.path.join(base._tmp, "data", "paddlecloud.db"))
        with db:
            account = db.execute("SELECT id FROM accounts WHERE name = ?", (base.ACCOUNT,)).fetchone()[0]
            user = db.execute("SELECT id FROM users WHERE email = ?", (base.GUEST_EMAIL,)).fetchone()[0]
            db.execute(
                "INSERT OR REPLACE INTO memberships (account_id, user_id, role, created_at) "
                "VALUES (?, ?, 'member', ?)",
                (account, user, int(time.time() * 1000)),
            )
        db.close()
        env = dict(os.environ)
        env.pop("DATABASE_URL", None)
        out = subprocess.run(
            [str(base._binary()), "admin", "create-key", "--account", base.ACCOUNT, "--user",
             base.GUEST_EMAIL, "--data-dir", os.path.join(base._tmp, "data")],
            capture_output=True, text=True, timeout=60, check=True, cwd=REPO, env=env,
        ).stdout
        member = Client(server=base.SERVER, key=out.strip().splitlines()[-1].strip(), timeout=30)
        self.assertEqual(member.me()["role"], "member")

        self.assertEqual([s["name"] for s in member.secrets()], ["s3-key"])
        for call in (lambda: member.set_secret("mine", "value"),
                     lambda: member.delete_secret("s3-key")):
            with self.assertRaises(PaddleCloudError) as caught:
                call()
            self.assertEqual((caught.exception.status, caught.exception.code), (403, "forbidden"))
            self.assertIn("Only the account's owners", caught.exception.message)
        # A member's job uses it by name.
        name = base.job_name("member")
        self.jobs.append(name)
        member.create_cloud_job(name, 1, "64Mi", 0, "100m", secrets=["S3_KEY=s3-key"],
                                command=["sh", "-c", 'echo "key $S3_KEY"'])
        self.assertEqual(member.wait_job(name, timeout=60, poll=0.2)["status"], "succeeded")
        self.assertEqual(member.logs(name).strip(), "key ***")


if __name__ == "__main__":
    unittest.main()
