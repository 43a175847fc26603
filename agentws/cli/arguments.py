"""Value types for command-line options that several command groups take.

Each turns the text typed into a value, or raises
:class:`argparse.ArgumentTypeError`, which argparse prints with the option's
name and exit status 2.
"""

from __future__ import annotations

import argparse

__all__ = ["bounded_count", "page_size", "positive_int"]


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


def page_size(text: str) -> int:
    """Rows of a page: 1 to 200 (what a list's page holds at most)."""
    value = int(text) if text.isdigit() else 0
    if not 1 <= value <= 200:
        raise argparse.ArgumentTypeError(f"expected a number from 1 to 200, got {text!r}")
    return value
