"""Value types for command-line options that several command groups take.

Each turns the text typed into a value, or raises
:class:`argparse.ArgumentTypeError`, which argparse prints with the option's
name and exit status 2; :func:`read_secret` reads what ``--secret-stdin``
promises.
"""

from __future__ import annotations

import argparse
import sys

from agentws.errors import ValidationError

__all__ = ["bounded_count", "page_size", "positive_int", "read_secret"]

# A secret read from stdin may not be longer (it is a key, not a document).
_MAX_SECRET_CHARS = 4096


def bounded_count(text: str) -> int:
    """A count from 1 to 10,000 (how many entries to show)."""
    value = int(text) if text.isdigit() else 0
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"expected a number from 1 to 10000, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def read_secret(args: argparse.Namespace) -> str | None:
    """The secret piped to ``--secret-stdin`` (None without it)."""
    if not args.secret_stdin:
        return None
    secret = sys.stdin.read(_MAX_SECRET_CHARS + 1).strip()
    if len(secret) > _MAX_SECRET_CHARS:
        raise ValidationError(f"the secret is longer than {_MAX_SECRET_CHARS} characters")
    return secret


def page_size(text: str) -> int:
    """Rows of a page: 1 to 200 (what a list's page holds at most)."""
    value = int(text) if text.isdigit() else 0
    if not 1 <= value <= 200:
        raise argparse.ArgumentTypeError(f"expected a number from 1 to 200, got {text!r}")
    return value
