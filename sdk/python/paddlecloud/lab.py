"""The door of a notebook's JupyterLab: only the console's proxy gets in.

The console starts every notebook's server with
``--ServerApp.identity_provider_class=paddlecloud.lab.ConsoleIdentityProvider``.
The server then lets in exactly the requests that carry the notebook's token
(``Authorization: token …``), which only the console's proxy adds, after it
checked who is asking (the notebook's owner, by session or access key).

JupyterLab's default provider writes its token into every page it serves
(``jupyter-config-data``), into its runtime file and into the URL it logs, and
takes it from ``?token=`` or a login form, then hands out a cookie. This one
has no token of its own to show (``token`` is empty, so pages, the runtime
file and the logs carry none), no login form, no cookie: a browser or another
process on the machine that reaches the server's port directly gets 403, with
or without anything it read from a page.

The token reaches the server by the pipe on its standard input
(``PADDLECLOUD_LAB_TOKEN_FD=0``, the local executor: nothing in its argv, its
environment or a file that another process could read), or by
``PADDLECLOUD_LAB_TOKEN`` from the pod's Secret (Kubernetes), which is taken
out of the environment before any kernel or terminal inherits it.

Imported by JupyterLab only; ``import paddlecloud`` does not load it.
"""

from __future__ import annotations

import hmac
import os
from typing import Any, Optional

from jupyter_server.auth.identity import IdentityProvider, User
from traitlets import default

TOKEN_ENV = "PADDLECLOUD_LAB_TOKEN"
TOKEN_FD_ENV = "PADDLECLOUD_LAB_TOKEN_FD"
#: Longest token read from the pipe (the console's are 43 characters).
MAX_TOKEN = 4096


def _read_line(fd: int) -> bytes:
    """One line from ``fd``, byte by byte: nothing after it is consumed."""
    data = b""
    while len(data) < MAX_TOKEN:
        chunk = os.read(fd, 1)
        if not chunk or chunk == b"\n":
            break
        data += chunk
    return data


def read_secret() -> bytes:
    """The notebook's token, from the pipe or the Secret's variable; both
    variables are removed, so what the server starts does not inherit them."""
    value = os.environ.pop(TOKEN_ENV, "").strip().encode()
    fd = os.environ.pop(TOKEN_FD_ENV, "")
    if not value and fd.isdigit():
        value = _read_line(int(fd)).strip()
    return value


class ConsoleIdentityProvider(IdentityProvider):
    """Lets in the requests that carry the notebook's token in
    ``Authorization: token …``, as the notebook's owner; nothing else."""

    @default("token")
    def _token_default(self) -> str:
        return ""  # nothing for JupyterLab to put in its pages or files

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._secret = read_secret()
        if not self._secret:
            self.log.error("No notebook token (%s or %s): no request will get in.",
                           TOKEN_FD_ENV, TOKEN_ENV)

    def get_user(self, handler: Any) -> Optional[User]:
        header = handler.request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        if (
            self._secret
            and scheme.lower() == "token"
            and hmac.compare_digest(value.strip().encode(), self._secret)
        ):
            # As Jupyter marks a token's requests: no XSRF cookie asked of
            # the proxy (the console checks the origin of the browser's).
            handler._token_authenticated = True
            return User(username="owner", name="owner", display_name="Owner")
        return None

    @property
    def auth_enabled(self) -> bool:
        return True

    @property
    def login_available(self) -> bool:
        return False  # no login page: a request without the token gets 403

    @property
    def logout_available(self) -> bool:
        return False

    def validate_security(self, app: Any, ssl_options: Any = None) -> None:
        """Jupyter warns of a server without a token; this one has its own check."""
