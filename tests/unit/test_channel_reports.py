"""The follow-up message a channel gets when a run's queued call is decided (``report_text``)."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest

from agentws.approvals.channel_reports import report_text
from agentws.domain.models import Approval, ApprovalStatus, Capability

NOW = datetime(2026, 11, 23, tzinfo=UTC)
PENDING = Approval(
    id="apr_one",
    group_id="grp_x",
    requested_by="webhook:wh_x",
    tool_name="github_create_issue",
    capability=Capability.WRITE,
    definition_hash="h",
    arguments_hash="a",
    expires_at=NOW,
    event_id="evt_x",
)


def test_an_executed_call_says_who_approved_it_and_starts_the_result() -> None:
    result = {"content": [{"type": "text", "text": "issue #8 opened\n```x```" + "y" * 700}]}
    executed = attrs.evolve(
        PENDING, status=ApprovalStatus.EXECUTED, decided_by="admin:alice", result=result
    )
    text = report_text(executed)
    assert text.startswith(
        "✅ Approved by admin:alice: github_create_issue (approval apr_one) ran."
    )
    body = text.split("\n```\n", 1)[1]
    assert body.startswith("issue #8 opened\n'''x'''")  # cannot close the code block early
    assert body.endswith(" …\n```")
    assert len(text) < 800


@pytest.mark.parametrize(
    ("status", "fields", "expected"),
    [
        (
            ApprovalStatus.FAILED,
            {"decided_by": "admin:bob", "error": "the tool changed since it was queued"},
            "⚠️ Approved by admin:bob, but github_create_issue (approval apr_one) failed: "
            "the tool changed since it was queued",
        ),
        (
            ApprovalStatus.DENIED,
            {"decided_by": "admin:bob", "reason": "not now"},
            "❌ Denied by admin:bob: github_create_issue (approval apr_one) did not run. "
            "Reason: not now",
        ),
        (
            ApprovalStatus.DENIED,
            {},
            "❌ Denied by an admin: github_create_issue (approval apr_one) did not run.",
        ),
        (
            ApprovalStatus.EXPIRED,
            {},
            "⌛ github_create_issue (approval apr_one) expired without a decision: it did not run.",
        ),
    ],
)
def test_other_outcomes(status: ApprovalStatus, fields: dict[str, str], expected: str) -> None:
    assert report_text(attrs.evolve(PENDING, status=status, **fields)) == expected
