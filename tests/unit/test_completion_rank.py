"""Ranking completion values: what starts with the typed text first, then what contains it."""

from __future__ import annotations

from agentws.doors.mcp.dispatch.completion import rank


def test_prefixes_first_then_contains_case_insensitively() -> None:
    values = ["Python", "cpython", "go", "py-lint", "python"]
    assert rank(values, "PY") == ["Python", "py-lint", "python", "cpython"]
    assert rank(values, "") == values
    assert rank(values, "rust") == []
    assert rank(["go", "go"], "g") == ["go"]
