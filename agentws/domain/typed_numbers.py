"""Numbers and durations a person types, read strictly and bounded.

Operators type numbers in many places: ``--grace 24h``, ``--since 7d``,
``--rate 30/min``, ``?limit=50``, a form's rate, ``AGENTWS_RUN_TIMEOUT_S``.
Python's own readers are lenient in ways that surprise: ``str.isdigit()``
is true of ``²``, which ``int()`` then refuses; ``int()`` takes ``٣``,
``1_000`` and spaces; ``float()`` takes ``nan``, ``inf`` and ``1e999``;
and a number with no bound becomes a ``timedelta`` or a date that
overflows. So every such value is read here: ASCII digits only (a decimal
point where a fraction makes sense), a bounded length, a stated range,
and on anything else a :class:`NumberError` naming the field, which each
door turns into its refusal: a 400 naming the field (admin API), a form
error (dashboard), exit status 2 naming the option (CLI).
"""

from __future__ import annotations

import re
from datetime import timedelta

from agentws.core.errors import ValidationError

__all__ = [
    "MAX_AGO",
    "UNIT_S",
    "NumberError",
    "decimal",
    "per_minute",
    "span",
    "whole_number",
]

# 18 digits stay under 2**63, so any number read here fits a database integer.
_WHOLE = re.compile(r"[0-9]{1,18}")
_DECIMAL = re.compile(r"[0-9]{1,18}(?:\.[0-9]{1,9})?")
_SPAN = re.compile(r"([0-9]{1,18})\s*([a-z]?)")
#: Seconds in each unit a span may be typed in.
UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
#: The longest "ago" a person may type (``--since 7d``): a century, far
#: inside what a date can hold.
MAX_AGO = timedelta(days=36500)
# What of a refused value the error repeats.
_SHOWN_CHARS = 40


class NumberError(ValidationError):
    """A typed number or duration that is not one, or is out of its range.

    The message names the field: ``grace must be a duration such as 24h,
    not '²h'``. ``field`` is where it was typed (``--grace``, ``grace``,
    ``rate per minute``); ``why`` says the same without the name
    (``expected …, got …``), for argparse, which names the option itself.
    """

    def __init__(self, field: str, expected: str, text: str) -> None:
        shown = repr(text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…")
        super().__init__(f"{field} must be {expected}, not {shown}")
        self.field = field
        self.why = f"expected {expected}, got {shown}"


def whole_number(text: str, *, name: str, low: int = 0, high: int) -> int:
    """``text`` as a whole number from ``low`` to ``high``: ASCII digits, nothing else.

    Error handling:
        :class:`NumberError` naming ``name``.
    """
    typed = text.strip()
    if _WHOLE.fullmatch(typed) and low <= int(typed) <= high:
        return int(typed)
    raise NumberError(name, f"a whole number from {low} to {high}", text)


def decimal(text: str, *, name: str, low: float = 0.0, high: float, unit: str = "seconds") -> float:
    """``text`` as a number from ``low`` to ``high``: ``30``, ``2.5``; no sign, no exponent.

    Error handling:
        :class:`NumberError` naming ``name``.
    """
    typed = text.strip()
    if _DECIMAL.fullmatch(typed) and low <= float(typed) <= high:
        return float(typed)
    raise NumberError(name, f"{unit} from {low:g} to {high:g}", text)


def span(
    text: str,
    *,
    name: str,
    high: timedelta,
    units: str = "smhd",
    bare: str | None = "s",
    examples: str = "90s, 30m, 24h, 7d",
) -> timedelta:
    """``text`` as a duration: a whole number and one of ``units`` (``s m h d w``).

    Args:
        high: the longest accepted.
        bare: the unit of a number typed without one (None: a unit is needed).
        examples: what the error shows as valid.

    Error handling:
        :class:`NumberError` naming ``name``: not a span, a unit not in
        ``units``, or longer than ``high``.
    """
    found = _SPAN.fullmatch(text.strip().lower())
    unit = (found[2] or bare) if found else None
    if found is None or unit is None or unit not in units:
        raise NumberError(name, f"a duration such as {examples}", text)
    seconds = int(found[1]) * UNIT_S[unit]
    if seconds > high.total_seconds():
        raise NumberError(name, f"at most {_words(high)}", text)
    return timedelta(seconds=seconds)


def per_minute(text: str, *, name: str, high: int) -> int:
    """A rate typed as ``R``, ``R/min`` or ``R/s``, in events a minute, from 1 to ``high``.

    Error handling:
        :class:`NumberError` naming ``name``.
    """
    number, _, unit = text.strip().partition("/")
    factor = {"": 1, "m": 1, "min": 1, "minute": 1, "s": 60, "sec": 60, "second": 60}.get(
        unit.strip().lower()
    )
    typed = number.strip()
    if factor is None or not _WHOLE.fullmatch(typed):
        raise NumberError(name, "a rate such as 60/min or 2/s", text)
    rate = int(typed) * factor
    if not 1 <= rate <= high:
        raise NumberError(name, f"1 to {high} a minute", text)
    return rate


def _words(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"
