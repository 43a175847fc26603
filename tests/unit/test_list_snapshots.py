"""Comparing a group's lists: which documents changed between two looks."""

from __future__ import annotations

from datetime import UTC, datetime

from agentws.doors.mcp.dispatch.list_changes import Snapshot

EARLY = datetime(2026, 1, 1, tzinfo=UTC)
LATE = datetime(2026, 1, 2, tzinfo=UTC)


def _snapshot(documents: dict[str, datetime], resources: tuple[str, ...] = ()) -> Snapshot:
    return Snapshot((), (resources,), (), documents)


def test_documents_that_changed_appeared_or_went_are_updated() -> None:
    before = _snapshot({"agentws://a/x": EARLY, "agentws://a/y": EARLY, "agentws://a/z": EARLY})
    later = _snapshot({"agentws://a/x": EARLY, "agentws://a/y": LATE, "agentws://a/new": LATE})
    assert before.updated(later) == {"agentws://a/y", "agentws://a/z", "agentws://a/new"}
    assert before.updated(before) == set()


def test_lists_compare_without_document_versions() -> None:
    # A document's new text changes no list: only its resources/updated.
    assert _snapshot({"u": EARLY}, ("u",)) == _snapshot({"u": LATE}, ("u",))
    assert _snapshot({"u": EARLY}, ("u",)) != _snapshot({"u": EARLY}, ("u", "v"))
