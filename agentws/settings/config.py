"""Settings: every knob of the service, read once from ``AGENTWS_*`` variables.

:meth:`Settings.from_env` is the only constructor the program uses. Each
variable is parsed and checked here, at start, so a bad value stops the
process with a message that names the variable instead of failing later in
some request. Durations end in ``_s`` (seconds), sizes in ``_bytes``.
"""

from __future__ import annotations

import base64
import os
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

from agentws.core.errors import ConfigError
from agentws.domain.allowlist import Allowlist
from agentws.domain.typed_numbers import NumberError, decimal, whole_number

__all__ = [
    "DEFAULT_BIND",
    "DEFAULT_DATABASE_URL",
    "DEFAULT_MODEL",
    "MCP_ENVELOPE_BYTES",
    "Settings",
    "parse_bind",
    "parse_database_url",
]

DEFAULT_BIND = "127.0.0.1:8080"
#: What an MCP message may hold beside a tool call's arguments, by default
#: (``AGENTWS_MCP_MAX_BODY_BYTES`` is ``AGENTWS_TOOL_MAX_ARGUMENT_BYTES`` and this).
MCP_ENVELOPE_BYTES = 64 * 1024
DEFAULT_DATABASE_URL = "sqlite:///./agentws.db"
#: The model that runs the agent unless AGENTWS_MODEL names another.
DEFAULT_MODEL = "claude-sonnet-4-5"


def parse_bind(value: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[::1]:PORT`` for IPv6) into host and port.

    Raises:
        ValueError: the value is not a host and a port in 0..65535.
    """
    host, sep, port_text = value.rpartition(":")
    # ASCII digits only: '²' is a digit to str.isdigit(), and not to int().
    if not sep or not host or not (port_text.isascii() and port_text.isdigit()):
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    port = int(port_text)
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be 0..65535, got {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def parse_database_url(value: str) -> str:
    """Check that ``value`` names a store agentws can open; return it unchanged.

    Accepted: ``sqlite:///relative/or/absolute/path.db``, ``sqlite:///:memory:``
    and ``postgresql://`` (or ``postgres://``) URLs.

    Raises:
        ValueError: with a message saying what a valid URL looks like.
    """
    parts = urlsplit(value)
    if parts.scheme == "sqlite":
        if parts.netloc or not parts.path.startswith("/") or parts.path == "/":
            raise ValueError(
                f"a SQLite URL is sqlite:///PATH (three slashes), e.g. "
                f"{DEFAULT_DATABASE_URL}; got {value!r}"
            )
        return value
    if parts.scheme in ("postgresql", "postgres"):
        if not parts.hostname and "host=" not in parts.query:
            raise ValueError(
                f"a PostgreSQL URL needs a host, e.g. postgresql://user@host/db; got {value!r}"
            )
        return value
    raise ValueError(
        f"unsupported database URL {value!r}: use sqlite:///PATH or postgresql://USER@HOST/DB"
    )


# A setting in seconds is at most ten years (a timeout or a lifetime beyond
# is a typo, and now plus it still fits a date); a count or a size at most a
# million billion (beyond any machine, and within a database integer).
_MAX_SETTING_S = 10 * 365 * 86400.0
_MAX_SETTING_NUMBER = 10**15


def _seconds(value: str) -> float:
    try:
        return decimal(value, name="value", high=_MAX_SETTING_S)
    except NumberError as exc:
        raise ValueError(exc.why) from None


def _positive_seconds(value: str) -> float:
    number = _seconds(value)
    if number == 0:
        raise ValueError(f"expected a number of seconds > 0, got {value!r}")
    return number


# A confirm token (or an elicitation's answer) must give a person time to read
# and decide, and stay short-lived: from 5 seconds to an hour.
_CONFIRM_TTL_RANGE_S = (5.0, 3600.0)


def _confirm_ttl(value: str) -> float:
    number = _seconds(value)
    low, high = _CONFIRM_TTL_RANGE_S
    if not low <= number <= high:
        raise ValueError(f"expected {low:g} to {high:g} seconds, got {value!r}")
    return number


def _positive_int(value: str) -> int:
    try:
        return whole_number(value, name="value", low=1, high=_MAX_SETTING_NUMBER)
    except NumberError as exc:
        raise ValueError(exc.why) from None


def _count(value: str) -> int:
    try:
        return whole_number(value, name="value", low=0, high=_MAX_SETTING_NUMBER)
    except NumberError as exc:
        raise ValueError(exc.why) from None


def _days(value: str) -> float:
    number = _seconds(value)  # the same rules: finite, >= 0
    if number > 36500:
        raise ValueError(f"expected at most 36500 days, got {value!r}")
    return number


def _model_name(value: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"not a model name: {value!r}")
    return value


def _base_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"expected an http(s) URL such as https://agents.example.com, got {value!r}"
        )
    return value.rstrip("/")


def _log_level(value: str) -> str:
    level = value.upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ValueError(f"expected DEBUG, INFO, WARNING or ERROR, got {value!r}")
    return level


def _log_format(value: str) -> str:
    if value.lower() not in ("auto", "json", "text"):
        raise ValueError(f"expected auto, json or text, got {value!r}")
    return value.lower()


def _oauth_registration(value: str) -> str:
    if value.lower() not in ("open", "metadata-only", "closed"):
        raise ValueError(f"expected open, metadata-only or closed, got {value!r}")
    return value.lower()


def _instance_id(value: str) -> str:
    if not value or not all(c.isalnum() or c == "-" for c in value):
        raise ValueError(f"expected letters, digits and '-', got {value!r}")
    return value


def _patterns(value: str) -> tuple[str, ...]:
    items = tuple(item.strip().lower() for item in value.split(",") if item.strip())
    if not items or any(" " in item for item in items):
        raise ValueError(f"expected a comma-separated list without spaces, got {value!r}")
    return items


def _allowlist(value: str) -> Allowlist:
    return Allowlist.parse(value)


def _secret_key(value: str) -> str:
    # Checked here so a bad key stops the process at start; the value is never
    # echoed in the message (a key cut short is most of the real key).
    try:
        raw = base64.urlsafe_b64decode(value.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        raw = b""
    if len(raw) != 32:
        raise ValueError(
            "not a valid key (32 bytes in URL-safe base64, as `agentws init` makes in "
            "secret.key, or Fernet.generate_key())"
        )
    return value


def _default_instance_id() -> str:
    host = "".join(c for c in socket.gethostname() if c.isalnum() or c == "-")[:24] or "host"
    return f"{host}-{os.getpid()}"


# (field, variable, parser, default). The default is a string so that it goes
# through the same parser as a value an operator sets.
_VARIABLES: tuple[tuple[str, str, Callable[[str], Any], str | None], ...] = (
    ("bind", "AGENTWS_BIND", lambda v: (parse_bind(v), v)[1], DEFAULT_BIND),
    ("database_url", "AGENTWS_DATABASE_URL", parse_database_url, DEFAULT_DATABASE_URL),
    ("base_url", "AGENTWS_BASE_URL", _base_url, None),
    ("internal_url", "AGENTWS_INTERNAL_URL", _base_url, None),
    ("data_dir", "AGENTWS_DATA_DIR", Path, "."),
    ("instance_id", "AGENTWS_INSTANCE_ID", _instance_id, None),
    ("log_level", "AGENTWS_LOG_LEVEL", _log_level, "INFO"),
    ("log_format", "AGENTWS_LOG_FORMAT", _log_format, "auto"),
    ("metrics_token", "AGENTWS_METRICS_TOKEN", str, None),
    ("shutdown_grace_s", "AGENTWS_SHUTDOWN_GRACE_S", _seconds, "10"),
    ("drain_s", "AGENTWS_DRAIN_S", _seconds, "0"),
    ("run_timeout_s", "AGENTWS_RUN_TIMEOUT_S", _seconds, "120"),
    ("worker_concurrency", "AGENTWS_WORKER_CONCURRENCY", _positive_int, "16"),
    ("retry_base_s", "AGENTWS_RETRY_BASE_S", _seconds, "2"),
    ("store_timeout_s", "AGENTWS_STORE_TIMEOUT_S", _seconds, "5"),
    ("store_pool_size", "AGENTWS_STORE_POOL_SIZE", _positive_int, "10"),
    ("store_read_processes", "AGENTWS_STORE_READ_PROCESSES", _count, "1"),
    ("sse_stall_s", "AGENTWS_SSE_STALL_S", _seconds, "30"),
    ("sse_keepalive_s", "AGENTWS_SSE_KEEPALIVE_S", _seconds, "15"),
    ("mcp_idle_s", "AGENTWS_MCP_IDLE_S", _seconds, "1800"),
    ("mcp_replay_events", "AGENTWS_MCP_REPLAY_EVENTS", _positive_int, "100"),
    ("mcp_replay_s", "AGENTWS_MCP_REPLAY_S", _seconds, "300"),
    ("mcp_sse_poll_s", "AGENTWS_MCP_SSE_POLL_S", _seconds, "0"),
    ("cors_origins", "AGENTWS_CORS_ORIGINS", _patterns, None),
    ("max_body_bytes", "AGENTWS_MAX_BODY_BYTES", _positive_int, str(1024 * 1024)),
    ("allowed_hosts", "AGENTWS_ALLOWED_HOSTS", _patterns, None),
    ("allowed_origins", "AGENTWS_ALLOWED_ORIGINS", _patterns, None),
    ("mcp_max_sessions", "AGENTWS_MCP_MAX_SESSIONS", _positive_int, "10000"),
    ("mcp_max_sessions_per_token", "AGENTWS_MCP_MAX_SESSIONS_PER_TOKEN", _positive_int, "100"),
    ("mcp_max_pending_per_token", "AGENTWS_MCP_MAX_PENDING_PER_TOKEN", _positive_int, "100"),
    ("mcp_max_listen_per_token", "AGENTWS_MCP_MAX_LISTEN_PER_TOKEN", _positive_int, "100"),
    # Unset: the argument limit and room for the envelope (Settings.mcp_max_body_bytes).
    ("mcp_max_body_bytes", "AGENTWS_MCP_MAX_BODY_BYTES", _positive_int, None),
    ("mcp_max_batch_entries", "AGENTWS_MCP_MAX_BATCH_ENTRIES", _positive_int, "100"),
    ("body_read_timeout_s", "AGENTWS_BODY_READ_TIMEOUT_S", _positive_seconds, "30"),
    ("delivery_log_keep", "AGENTWS_DELIVERY_LOG_KEEP", _count, "500"),
    ("delivery_log_days", "AGENTWS_DELIVERY_LOG_DAYS", _days, "30"),
    ("rollup_retention_days", "AGENTWS_ROLLUP_RETENTION_DAYS", _positive_int, "8"),
    ("connector_allowlist", "AGENTWS_CONNECTOR_ALLOWLIST", _allowlist, ""),
    ("secret_key", "AGENTWS_SECRET_KEY", _secret_key, None),
    ("tool_timeout_s", "AGENTWS_TOOL_TIMEOUT_S", _seconds, "30"),
    (
        "tool_max_argument_bytes",
        "AGENTWS_TOOL_MAX_ARGUMENT_BYTES",
        _positive_int,
        str(1024 * 1024),
    ),
    ("tool_max_argument_depth", "AGENTWS_TOOL_MAX_ARGUMENT_DEPTH", _positive_int, "64"),
    ("tool_check_timeout_s", "AGENTWS_TOOL_CHECK_TIMEOUT_S", _positive_seconds, "0.5"),
    ("tool_max_result_bytes", "AGENTWS_TOOL_MAX_RESULT_BYTES", _positive_int, str(1024 * 1024)),
    ("connector_refresh_s", "AGENTWS_CONNECTOR_REFRESH_S", _seconds, "900"),
    ("connector_connections", "AGENTWS_CONNECTOR_CONNECTIONS", _positive_int, "64"),
    ("approval_ttl_s", "AGENTWS_APPROVAL_TTL_S", _seconds, str(7 * 24 * 3600)),
    (
        "approval_max_argument_bytes",
        "AGENTWS_APPROVAL_MAX_ARGUMENT_BYTES",
        _positive_int,
        str(256 * 1024),
    ),
    (
        "approval_max_pending_per_token",
        "AGENTWS_APPROVAL_MAX_PENDING_PER_TOKEN",
        _positive_int,
        "100",
    ),
    ("confirm_ttl_s", "AGENTWS_CONFIRM_TTL_S", _confirm_ttl, "300"),
    ("oauth_registration", "AGENTWS_OAUTH_REGISTRATION", _oauth_registration, "open"),
    ("oauth_access_ttl_s", "AGENTWS_OAUTH_ACCESS_TTL_S", _positive_seconds, "3600"),
    ("oauth_refresh_ttl_s", "AGENTWS_OAUTH_REFRESH_TTL_S", _positive_seconds, str(30 * 86400)),
    ("oauth_max_clients", "AGENTWS_OAUTH_MAX_CLIENTS", _positive_int, "1000"),
    ("anthropic_api_key", "ANTHROPIC_API_KEY", str, None),
    ("anthropic_base_url", "ANTHROPIC_BASE_URL", _base_url, None),
    ("model", "AGENTWS_MODEL", _model_name, DEFAULT_MODEL),
    ("model_timeout_s", "AGENTWS_MODEL_TIMEOUT_S", _seconds, "60"),
    ("model_max_tokens", "AGENTWS_MODEL_MAX_TOKENS", _positive_int, "2048"),
    ("admin_session_s", "AGENTWS_ADMIN_SESSION_S", _seconds, "43200"),
)


@attrs.frozen(kw_only=True)
class Settings:
    """Everything the service can be told, with units in the names.

    Build it with :meth:`from_env`; the defaults suit ``scripts/serve`` on a
    laptop: SQLite next to the working directory, loopback only.
    """

    bind: str = DEFAULT_BIND
    database_url: str = DEFAULT_DATABASE_URL
    #: Public URL printed in endpoint and webhook URLs; derived from ``bind``
    #: when unset (see :attr:`public_base_url`).
    base_url: str | None = None
    #: Where other instances on the same database reach this one, to forward
    #: requests for its MCP sessions; derived from ``bind`` when unset (see
    #: :meth:`internal_url_for`).
    internal_url: str | None = None
    data_dir: Path = Path()
    instance_id: str = attrs.field(factory=_default_instance_id)
    log_level: str = "INFO"
    #: ``json`` lines, ``text``, or ``auto``: text on a terminal, JSON otherwise.
    log_format: str = "auto"
    #: Bearer token ``/metrics`` asks for; None: the page is open.
    metrics_token: str | None = attrs.field(default=None, repr=False)
    #: From SIGTERM to exit: draining requests and runs, then cancelling the rest.
    shutdown_grace_s: float = 10.0
    #: Before shutting down: not ready and no new MCP session, for up to this long
    #: while the open sessions end (0: no drain).
    drain_s: float = 0.0
    #: Deadline of one webhook agent run.
    run_timeout_s: float = 120.0
    #: Webhook agent runs at once in this process.
    worker_concurrency: int = 16
    #: A failed run is retried after a random delay below this, doubled per attempt.
    retry_base_s: float = 2.0
    #: Deadline of one store operation seen from a request (readiness, ingest).
    store_timeout_s: float = 5.0
    #: PostgreSQL connections per process.
    store_pool_size: int = 10
    #: SQLite: processes that run searches beside this one (0: its threads do).
    store_read_processes: int = 1
    #: A stream whose client has not read for this long is closed.
    sse_stall_s: float = 30.0
    #: Interval of ``: ping`` comment lines on idle SSE streams.
    sse_keepalive_s: float = 15.0
    #: An MCP session with no request for this long expires.
    mcp_idle_s: float = 1800.0
    #: Events each Streamable HTTP SSE stream keeps for a client that
    #: reconnects with ``Last-Event-ID`` (the newest ones).
    mcp_replay_events: int = 100
    #: Kept events older than this are not replayed.
    mcp_replay_s: float = 300.0
    #: A request's SSE stream to a 2025-11-25 client is closed after this long
    #: without its response; the client resumes it with ``GET`` (0: never).
    mcp_sse_poll_s: float = 0.0
    #: Browser origins granted CORS on the MCP door (same patterns as
    #: ``allowed_origins``, which they join); None: no CORS.
    cors_origins: tuple[str, ...] | None = None
    #: Default size limit of an incoming webhook body.
    max_body_bytes: int = 1024 * 1024
    #: ``Host`` values the MCP door answers (``host:*`` for any port, ``*`` for
    #: any host); None derives them from the public URL and the bind address.
    allowed_hosts: tuple[str, ...] | None = None
    #: Browser ``Origin`` values the MCP door answers, same patterns; None
    #: derives them like ``allowed_hosts``. Requests without ``Origin`` pass.
    allowed_origins: tuple[str, ...] | None = None
    #: Open MCP sessions per process; one more is refused with 503.
    mcp_max_sessions: int = 10000
    #: Open MCP sessions per token; one more is refused with 503.
    mcp_max_sessions_per_token: int = 100
    #: Stateless calls of one token waiting for its client's input at once (each
    #: of a remote's questions may wait ``confirm_ttl_s``); one more is refused.
    mcp_max_pending_per_token: int = 100
    #: ``subscriptions/listen`` streams one token may hold open; one more is refused.
    mcp_max_listen_per_token: int = 100
    #: Messages one JSON-RPC batch (2025-03-26 sessions) may hold; a larger one is refused whole.
    mcp_max_batch_entries: int = 100
    #: A request body (webhook, MCP, admin API, dashboard) not all received
    #: this long after its headers is refused with 408 and its connection closed.
    body_read_timeout_s: float = 30.0
    #: Requests to each webhook's URL its delivery log keeps, the newest (0: no log).
    delivery_log_keep: int = 500
    #: Delivery log rows older than this many days are deleted (0: kept until trimmed).
    delivery_log_days: float = 30.0
    #: The overview's per-minute and hourly rollups older than this many days are deleted.
    rollup_retention_days: int = 8
    #: Hosts and networks connectors may use although they are not public
    #: (and, when set, the only hosts a connector may be saved with).
    connector_allowlist: Allowlist = attrs.field(factory=Allowlist)
    #: Deadline of one call forwarded to a connector.
    tool_timeout_s: float = 30.0
    #: Size limit of one tool call's arguments (compact JSON), checked before
    #: anything else is done with them: a larger call is refused.
    tool_max_argument_bytes: int = 1024 * 1024
    #: Size limit of one JSON-RPC message posted to the MCP door, refused with 413
    #: before it is parsed. Default: a call's largest arguments and 64 KiB of envelope.
    mcp_max_body_bytes: int = attrs.field(
        default=attrs.Factory(
            lambda self: self.tool_max_argument_bytes + MCP_ENVELOPE_BYTES, takes_self=True
        )
    )
    #: How deep a tool call's arguments may nest (objects and arrays).
    tool_max_argument_depth: int = 64
    #: Deadline of checking one call's arguments against a schema that cannot be
    #: checked in bounded time on the event loop (checked in a worker process).
    tool_check_timeout_s: float = 0.5
    #: Size limit of a remote MCP server's answer (a JSON body, one SSE event):
    #: a larger one is not read further, and its call gets a tool error.
    tool_max_result_bytes: int = 1024 * 1024
    #: How often remote MCP connectors' tool lists are fetched again (0: never).
    connector_refresh_s: float = 900.0
    #: HTTP connections a remote MCP connector's link keeps to its remote, all
    #: kept alive: calls beyond them wait for one (within ``tool_timeout_s``).
    connector_connections: int = 64
    #: A queued call not decided within this long expires (and never runs).
    approval_ttl_s: float = 7 * 24 * 3600.0
    #: Size limit of a queued call's arguments (compact JSON): a larger call is refused.
    approval_max_argument_bytes: int = 256 * 1024
    #: Calls one MCP token (or one webhook's runs) may have waiting for a decision at once.
    approval_max_pending_per_token: int = 100
    #: How long a caller has to confirm a destructive call (elicitation answer
    #: or confirm token, which works once, with the same bearer token), 5 to 3600.
    confirm_ttl_s: float = 300.0
    #: Which OAuth clients may register themselves: ``open`` (dynamic registration
    #: and client metadata documents), ``metadata-only`` (metadata documents only)
    #: or ``closed`` (only clients an administrator registered).
    oauth_registration: str = "open"
    #: Lifetime of an OAuth access token (its refresh token gets the next one).
    oauth_access_ttl_s: float = 3600.0
    #: Lifetime of an OAuth refresh token; each use replaces it with a new one.
    oauth_refresh_ttl_s: float = 30 * 86400.0
    #: Dynamically registered OAuth clients kept at most; registration beyond is refused.
    oauth_max_clients: int = 1000
    #: Key that encrypts stored secrets; None reads ``secret.key`` in ``data_dir``.
    secret_key: str | None = attrs.field(default=None, repr=False)
    #: The Anthropic API key: with one, runs use the real model; without, the offline one.
    anthropic_api_key: str | None = attrs.field(default=None, repr=False)
    #: Another endpoint of the Messages API (a proxy, a gateway).
    anthropic_base_url: str | None = None
    #: The model that runs the agent.
    model: str = DEFAULT_MODEL
    #: Deadline of one model turn (the run's deadline still bounds the run).
    model_timeout_s: float = 60.0
    #: Tokens a model turn may write at most.
    model_max_tokens: int = 2048
    #: A dashboard session lasts this long after signing in.
    admin_session_s: float = 12 * 3600.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Read every ``AGENTWS_*`` variable from ``environ``.

        Empty variables count as unset.

        Raises:
            ConfigError: naming the first variable whose value is malformed.
        """
        values: dict[str, Any] = {}
        for field, variable, parse, default in _VARIABLES:
            raw = environ.get(variable) or default
            if raw is None:
                continue
            try:
                values[field] = parse(raw.strip())
            except ValueError as exc:
                raise ConfigError(f"{variable}: {exc}") from None
        return cls(**values)

    @property
    def bind_host(self) -> str:
        return parse_bind(self.bind)[0]

    @property
    def bind_port(self) -> int:
        return parse_bind(self.bind)[1]

    def internal_url_for(self, port: int) -> str:
        """``internal_url`` if set, else ``http://`` + the bind host and ``port`` (the bound one).

        Bound to every interface, the host is this machine's name, which the
        other instances must be able to resolve (else set ``AGENTWS_INTERNAL_URL``).
        """
        if self.internal_url:
            return self.internal_url
        host = self.bind_host
        if host in ("0.0.0.0", "::", ""):  # noqa: S104 - naming the wildcard, not binding it
            host = socket.gethostname()
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port}"

    @property
    def public_base_url(self) -> str:
        """``base_url`` if set, else ``http://`` + the bind address."""
        return self.public_url_for(self.bind_port)

    def public_url_for(self, port: int) -> str:
        """``base_url`` if set, else ``http://`` + the bind host and ``port`` (the bound one)."""
        if self.base_url:
            return self.base_url
        host = self.bind_host
        if host in ("0.0.0.0", "::", ""):  # noqa: S104 - naming the wildcard, not binding it
            host = "localhost"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port}"
