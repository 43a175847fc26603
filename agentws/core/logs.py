"""Logging: JSON lines for collectors, text for people, and the work's ids on every line.

:func:`configure_logging` sets up the root logger once, for ``agentws serve``.
Lines are JSON objects (one per line) unless stderr is a terminal, or
``AGENTWS_LOG_FORMAT`` says ``json`` or ``text``.

Every line carries the ids of the work in hand — ``request_id``,
``workspace``, ``group``, ``session``, ``webhook``, ``event`` — taken from a
context variable that the doors and the worker fill in as they learn them
(:func:`add_log_context`). Trio copies context variables into the tasks a
task starts, so the ids follow the work into its child tasks, and each
request, session and run (each its own task) has its own.

Secrets are kept out by construction: secret fields are ``repr=False``,
database URLs are redacted, and the HTTP clients' own request lines (which
name full URLs, and chat incoming-webhook URLs are credentials) are not
logged below WARNING.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import IO, Any

__all__ = ["JsonFormatter", "TextFormatter", "add_log_context", "configure_logging", "log_context"]

_CONTEXT: ContextVar[Mapping[str, str]] = ContextVar("agentws_log_context", default={})  # noqa: B039 - never mutated
# Fields a line has of its own; context never overrides them.
_OWN = ("ts", "level", "logger", "message", "exc")
# Loggers of libraries whose INFO lines name full URLs (some of them secrets).
_QUIET = ("httpx2", "httpcore2", "httpx", "httpcore", "hpack", "asyncio")


def add_log_context(**fields: str | None) -> None:
    """Add ids to every line the current task (and the tasks it starts from now) logs."""
    current = _CONTEXT.get()
    added = {k: v for k, v in fields.items() if v and current.get(k) != v}
    if added:
        _CONTEXT.set({**current, **added})


def log_context(**fields: str | None) -> AbstractContextManager[None]:
    """Lines logged inside the block carry ``fields``; the block's end restores the context.

    ``request_id`` starts afresh: a new request's lines never carry the ids
    of the one before it on the same connection.
    """
    base = {} if "request_id" in fields else _CONTEXT.get()
    return _Scoped({**base, **{k: v for k, v in fields.items() if v}})


class _Scoped:
    """:func:`log_context`'s block: every request enters one, so it is a plain class
    (a generator-based context manager costs several times as much)."""

    __slots__ = ("_context", "_token")

    _token: Token[Mapping[str, str]]

    def __init__(self, context: Mapping[str, str]) -> None:
        self._context = context

    def __enter__(self) -> None:
        self._token = _CONTEXT.set(self._context)

    def __exit__(self, *exc_info: object) -> None:
        _CONTEXT.reset(self._token)


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.agentws_context = _CONTEXT.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``message``, ids, ``exc``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in getattr(record, "agentws_context", {}).items():
            if key not in _OWN:
                line[key] = value
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message [id=value ...]`` for a terminal."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        context = getattr(record, "agentws_context", {})
        if context:
            ids = " ".join(f"{key}={value}" for key, value in context.items())
            first, newline, rest = text.partition("\n")
            text = f"{first} [{ids}]{newline}{rest}"
        return text


def configure_logging(
    level: str, *, log_format: str = "auto", stream: IO[str] | None = None
) -> None:
    """Log to ``stream`` (stderr) at ``level``, as JSON lines or text.

    Args:
        level: ``DEBUG``, ``INFO``, ``WARNING`` or ``ERROR``.
        log_format: ``json``, ``text``, or ``auto`` (text on a terminal, else JSON).
    """
    stream = stream or sys.stderr
    as_json = log_format == "json" or (log_format == "auto" and not stream.isatty())
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if as_json else TextFormatter())
    handler.addFilter(_ContextFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in _QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLevelName(level)))
