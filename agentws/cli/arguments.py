"""Value types for command-line options that several command groups take.

Each turns the text typed into a value, or raises
:class:`argparse.ArgumentTypeError`, which argparse prints with the option's
name and exit status 2. Numbers and durations are read by
:mod:`agentws.domain.typed_numbers` (ASCII digits, bounded), as the admin
API and the dashboard read them: :func:`whole`, :func:`seconds`,
:func:`span_ago` and :func:`per_minute_rate` make argparse types of its
parsers. :func:`read_secret` reads what ``--secret-stdin`` promises.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from agentws.core.errors import ValidationError
from agentws.domain import typed_numbers
from agentws.domain.event_lists import parse_time
from agentws.domain.rules import utcnow

__all__ = [
    "bounded_count",
    "moment",
    "page_size",
    "per_minute_rate",
    "read_secret",
    "seconds",
    "typed",
    "whole",
]

T = TypeVar("T")

# A secret read from stdin may not be longer (it is a key, not a document).
_MAX_SECRET_CHARS = 4096


def typed(parse: Callable[[str], T], name: str) -> Callable[[str], T]:
    """An argparse type of ``parse``: its ValidationError becomes argparse's error (exit 2)."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except typed_numbers.NumberError as exc:
            raise argparse.ArgumentTypeError(exc.why) from None
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    convert.__name__ = name
    return convert


def whole(low: int, high: int) -> Callable[[str], int]:
    """A whole number from ``low`` to ``high``."""
    return typed(
        lambda text: typed_numbers.whole_number(text, name="number", low=low, high=high), "number"
    )


def seconds(low: float, high: float) -> Callable[[str], float]:
    """Seconds from ``low`` to ``high`` (``30``, ``2.5``)."""
    return typed(
        lambda text: typed_numbers.decimal(text, name="seconds", low=low, high=high), "seconds"
    )


def per_minute_rate(high: int) -> Callable[[str], int]:
    """A rate typed ``R``, ``R/min`` or ``R/s``, in events a minute, from 1 to ``high``."""
    return typed(lambda text: typed_numbers.per_minute(text, name="rate", high=high), "rate")


def _moment(text: str) -> datetime:
    return parse_time(text, now=utcnow(), name="time")


#: A time typed: ISO 8601 (UTC unless it says), or a span before now (``90m``, ``24h``, ``7d``).
moment = typed(_moment, "time")

#: How many entries to show: 1 to 10,000.
bounded_count = whole(1, 10_000)

#: Rows of a page: 1 to 200 (what a list's page holds at most).
page_size = whole(1, 200)


def read_secret(args: argparse.Namespace) -> str | None:
    """The secret piped to ``--secret-stdin`` (None without it)."""
    if not args.secret_stdin:
        return None
    secret = sys.stdin.read(_MAX_SECRET_CHARS + 1).strip()
    if len(secret) > _MAX_SECRET_CHARS:
        raise ValidationError(f"the secret is longer than {_MAX_SECRET_CHARS} characters")
    return secret
