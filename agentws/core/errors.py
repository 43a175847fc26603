"""The agentws error tree.

Every error agentws raises on purpose derives from :class:`AgentwsError`.
Foreign errors (sqlite3, asyncpg, OSError from sockets) are converted at the
one adapter that touches them — the store drivers convert database errors —
and chained with ``raise Ours(...) from exc``, so callers never need to know
which driver or library sits underneath::

    AgentwsError
    ├── ConfigError            a setting is missing or malformed (names the variable)
    │   └── NoDatabaseError    the database named is not there (or holds no agentws schema)
    ├── ValidationError        input that breaks a domain rule (bad slug, bad policy...)
    │   └── UnsafeUrlError     an outbound URL or address connectors may not reach
    ├── NotFoundError          the addressed object does not exist
    ├── ConflictError          a uniqueness rule would be broken (duplicate slug...)
    ├── UnauthorizedError      no valid credential for what was asked (HTTP 401)
    ├── PermissionDeniedError  a tool call its caller may not make ("permission denied")
    ├── OverCapacityError      a limit on open sessions or work is reached (HTTP 503)
    ├── ListenError            the server cannot listen on its address (port in use...)
    ├── UpstreamError          a connector's third party is down, refuses us or fails
    │   └── RemoteError        ... a remote MCP server (agentws.connectors.remote_mcp)
    ├── RetryableError         an attempt failed; ``retryable`` says whether trying later may help
    │   ├── ModelError         ... the model's (agentws.agent.model)
    │   ├── SinkError          ... a chat post (agentws.chat.sinks)
    │   └── RunFailure         ... a webhook event's run (agentws.webhooks.processing)
    └── StoreError             the store failed
        ├── StoreUnavailableError  cannot reach the database (callers may retry: 503)
        └── MigrationError         the schema cannot be brought up to date

Each error carries a stable machine-readable ``code`` used by the HTTP doors
(``{"error": {"code": ..., "message": ...}}``, made by :func:`error_body`, the
one maker of error bodies) and the CLI's ``--json`` output.

trio's nurseries wrap what leaves them in exception groups;
:func:`sole_exception` unwraps the one error inside nested one-member groups.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentwsError",
    "ConfigError",
    "ConflictError",
    "ListenError",
    "MigrationError",
    "NoDatabaseError",
    "NotFoundError",
    "OverCapacityError",
    "PermissionDeniedError",
    "RetryableError",
    "StoreError",
    "StoreUnavailableError",
    "UnauthorizedError",
    "UnsafeUrlError",
    "UpstreamError",
    "ValidationError",
    "error_body",
    "sole_exception",
]


class AgentwsError(Exception):
    """Base of every error agentws raises on purpose."""

    code = "internal_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(AgentwsError):
    """A setting is missing or malformed; the message names the variable."""

    code = "config_error"


class NoDatabaseError(ConfigError):
    """The database named is not there, or holds no agentws schema; nothing was created.

    ``init_creates``: whether ``agentws init`` would make it (a SQLite file, a
    schema), or it must be made first (a PostgreSQL database).
    """

    code = "no_database"

    def __init__(self, message: str, *, init_creates: bool = True) -> None:
        super().__init__(message)
        self.init_creates = init_creates


class ValidationError(AgentwsError):
    """Input breaks a domain rule."""

    code = "invalid"


class UnsafeUrlError(ValidationError):
    """An outbound URL (or the address it resolves to) connectors may not reach."""

    code = "unsafe_url"


class NotFoundError(AgentwsError):
    """The addressed object does not exist."""

    code = "not_found"


class ConflictError(AgentwsError):
    """Creating or changing the object would break a uniqueness rule."""

    code = "conflict"


class UnauthorizedError(AgentwsError):
    """The request carries no valid credential for what it asks."""

    code = "unauthorized"


class PermissionDeniedError(AgentwsError):
    """The caller may not make this call: the tool is denied, or beyond the token's scope."""

    code = "permission_denied"


class OverCapacityError(AgentwsError):
    """A limit is reached; retrying after ``retry_after_s`` may succeed."""

    code = "over_capacity"

    def __init__(self, message: str, *, retry_after_s: int = 5) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ListenError(AgentwsError):
    """The server cannot listen on the address it was given."""

    code = "listen_error"


class UpstreamError(AgentwsError):
    """A connector's third party cannot be reached, refuses us, or answers with an error."""

    code = "upstream_error"


class RetryableError(AgentwsError):
    """An attempt failed; ``retryable`` when trying again later may succeed.

    ``retry_after_s``: not before this (a rate limit said so), if known.
    """

    code = "attempt_failed"

    def __init__(
        self, message: str, *, retryable: bool, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after_s = retry_after_s


class StoreError(AgentwsError):
    """The store failed in a way callers cannot fix by changing their input."""

    code = "store_error"


class StoreUnavailableError(StoreError):
    """The database cannot be reached; retrying later may succeed."""

    code = "store_unavailable"


class MigrationError(StoreError):
    """The schema cannot be brought to the version this code needs."""

    code = "migration_error"


def sole_exception(error: BaseException, *, first_of_several: bool = False) -> BaseException:
    """The exception inside nested one-member exception groups (``error`` itself if no group).

    At a group of several members the unwrapping stops and that group is
    returned, unless ``first_of_several``: then it goes on into the first
    member (for a description of a failure, where one cause is enough).
    """
    while isinstance(error, BaseExceptionGroup):
        if len(error.exceptions) != 1 and not first_of_several:
            return error
        error = error.exceptions[0]
    return error


def error_body(code: str, message: str, *, oauth: bool = False) -> dict[str, Any]:
    """The error every door answers with, and the CLI prints with ``--json``:
    ``{"error": {"code", "message"}}``.

    ``oauth``: the shape RFC 6749 §5.2 defines instead, ``{"error": code,
    "error_description": message}``, which OAuth clients parse: the OAuth
    door's answers (token, registration, revocation) are the one exception
    to the common shape.
    """
    if oauth:
        return {"error": code, "error_description": message}
    return {"error": {"code": code, "message": message}}
