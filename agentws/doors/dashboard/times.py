"""Times as the dashboard shows them: how long ago, with the moment itself on hover.

:func:`ago` (the ``ago`` filter) writes ``<time datetime="…" title="… UTC"
data-ago>3 min ago</time>``: the relative time reads at a glance, the
absolute one (UTC) is the element's title and its machine-readable
``datetime``, and static/app.js brings the relative text up to date while
the page stays open. :func:`ago_text` is the same words as plain text,
for where no element may go (an ``<option>``). A time to come (when a
token expires) is :func:`until`: "in 59 min", the moment on hover as well.
"""

from __future__ import annotations

from datetime import UTC, datetime

from markupsafe import Markup

__all__ = ["absolute", "ago", "ago_text", "until", "until_text"]

# Larger units first: the first that fits is the one shown.
_UNITS = (("d", 86400), ("h", 3600), ("min", 60))


def _utc(when: datetime) -> datetime:
    # Stored times are UTC; one without a zone is read as UTC.
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def ago_text(when: datetime | None, now: datetime | None = None) -> str:
    """``when`` as "3 min ago" ("never" for None; a future time is "0 s ago")."""
    if when is None:
        return "never"
    seconds = int(((now or datetime.now(UTC)) - _utc(when)).total_seconds())
    for unit, size in _UNITS:
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{max(0, seconds)} s ago"


def until_text(when: datetime | None, now: datetime | None = None) -> str:
    """``when`` from now: "in 59 min", or "ended 2 h ago" once it is past ("never" for None)."""
    if when is None:
        return "never"
    seconds = int((_utc(when) - (now or datetime.now(UTC))).total_seconds())
    past = seconds < 0
    seconds = abs(seconds)
    amount = f"{seconds} s"
    for unit, size in _UNITS:
        if seconds >= size:
            amount = f"{seconds // size} {unit}"
            break
    return f"ended {amount} ago" if past else f"in {amount}"


def absolute(when: datetime) -> str:
    """``when`` to the second, in UTC: ``2026-11-25 17:45:47 UTC``."""
    return _utc(when).strftime("%Y-%m-%d %H:%M:%S UTC")


def _iso(when: datetime) -> str:
    return _utc(when).isoformat(timespec="seconds").replace("+00:00", "Z")


def ago(when: datetime | None, now: datetime | None = None) -> Markup:
    """The ``ago`` filter: a ``<time>`` element; see the module."""
    if when is None:
        return Markup("never")
    return Markup('<time datetime="{}" title="{}" data-ago>{}</time>').format(
        _iso(when), absolute(when), ago_text(when, now)
    )


def until(when: datetime | None, now: datetime | None = None) -> Markup:
    """The ``until`` filter: a ``<time>`` element saying "in 59 min", the moment as its title.

    Without ``data-ago``: static/app.js keeps only times past up to date.
    """
    if when is None:
        return Markup("never")
    return Markup('<time datetime="{}" title="{}">{}</time>').format(
        _iso(when), absolute(when), until_text(when, now)
    )
