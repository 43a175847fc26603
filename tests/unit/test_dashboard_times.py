"""Relative times with the moment on hover (agentws.doors.dashboard.times)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from markupsafe import Markup

from agentws.doors.dashboard.times import absolute, ago, ago_text, until, until_text

NOW = datetime(2026, 11, 25, 17, 45, 47, tzinfo=UTC)


def test_relative_words() -> None:
    assert ago_text(None) == "never"
    assert ago_text(NOW - timedelta(seconds=5), NOW) == "5 s ago"
    assert ago_text(NOW - timedelta(minutes=3, seconds=59), NOW) == "3 min ago"
    assert ago_text(NOW - timedelta(hours=2), NOW) == "2 h ago"
    assert ago_text(NOW - timedelta(days=9), NOW) == "9 d ago"
    assert ago_text(NOW + timedelta(seconds=30), NOW) == "0 s ago"


def test_a_time_element_with_the_moment_in_utc() -> None:
    when = datetime(2026, 11, 25, 18, 42, 47, tzinfo=timezone(timedelta(hours=1)))
    shown = ago(when, NOW)
    assert isinstance(shown, Markup)
    assert shown == (
        '<time datetime="2026-11-25T17:42:47Z" title="2026-11-25 17:42:47 UTC" '
        "data-ago>3 min ago</time>"
    )
    assert ago(None) == "never"


def test_a_time_without_a_zone_is_utc() -> None:
    assert absolute(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02 03:04:05 UTC"


def test_a_time_to_come_with_the_moment_in_utc() -> None:
    assert until_text(None) == "never"
    assert until_text(NOW + timedelta(minutes=59, seconds=30), NOW) == "in 59 min"
    assert until_text(NOW + timedelta(seconds=5), NOW) == "in 5 s"
    assert until_text(NOW - timedelta(hours=2), NOW) == "ended 2 h ago"
    shown = until(NOW + timedelta(minutes=59), NOW)
    assert isinstance(shown, Markup)
    # No data-ago: static/app.js rewrites those as times past.
    assert shown == (
        '<time datetime="2026-11-25T18:44:47Z" title="2026-11-25 18:44:47 UTC">in 59 min</time>'
    )
    assert until(None) == "never"
