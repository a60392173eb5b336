"""The one exception the SDK raises."""

from typing import Optional

# What each status means when the server's body does not say (e.g. a proxy's page).
_CODE_BY_STATUS = {
    400: "invalid",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    500: "internal",
    502: "unavailable",
    503: "unavailable",
    504: "unavailable",
}


def code_for_status(status: Optional[int]) -> Optional[str]:
    """The error code a status stands for, when the body gives none."""
    if status is None:
        return None
    if status in _CODE_BY_STATUS:
        return _CODE_BY_STATUS[status]
    return "internal" if status >= 500 else "invalid"


class PaddleCloudError(Exception):
    """A request failed, or the SDK could not make it.

    Attributes:
        status: the HTTP status (``400``, ``401``, ``404`` ...), or ``None`` when no
            answer came (server unreachable, missing credentials, timeout).
        code: the server's error code: ``invalid``, ``unauthenticated``,
            ``forbidden``, ``not_found``, ``conflict``, ``internal``,
            ``unavailable``; the SDK's own failures use ``credentials``,
            ``connection``, ``timeout`` and ``build_failed`` (an environment's
            build, see `Client.wait_environment`).
        message: what went wrong, in words to act on.
        field: the JSON key at fault (e.g. ``num_trainers``), or ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = None,
        field: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.field = field

    def __str__(self) -> str:
        text = f"{self.field}: {self.message}" if self.field else self.message
        if self.status is None:  # the SDK's own failure: the message says it all
            return text
        tag = f"{self.status} {self.code}" if self.code else str(self.status)
        return f"{text} ({tag})"

    def __repr__(self) -> str:
        return (
            f"PaddleCloudError({self.message!r}, status={self.status!r}, "
            f"code={self.code!r}, field={self.field!r})"
        )

    # Exceptions are pickled across processes (multiprocessing); keep the attributes.
    def __reduce__(self):
        return (
            _rebuild,
            (self.message, self.status, self.code, self.field),
        )


def _rebuild(message, status, code, field):
    return PaddleCloudError(message, status=status, code=code, field=field)
