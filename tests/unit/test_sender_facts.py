"""The offline digest reads the common senders' events as they mean them (``sender_facts``).

Payloads written here; the 329 GitHub examples of ``@octokit/webhooks-examples``
(an npm package) are read in ``tests/e2e/test_octokit_examples.py``, where Node's
packages are set up.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentws.agent.model import EventBrief
from agentws.agent.offline import digest
from agentws.agent.sender_facts import format_minor_units, sender_facts


def brief(payload: Any, headers: dict[str, str], prompt: str = "Summarise it.") -> EventBrief:
    return EventBrief(
        webhook_name="hook",
        prompt=prompt,
        payload=payload,
        headers=headers,
        received_at="2026-11-25T10:00:00Z",
        truncated=False,
        original_bytes=len(json.dumps(payload)),
    )


def test_the_finding_a_push_to_a_branch_that_is_not_the_default() -> None:
    # Observed: "branch" was taken from repository.default_branch and the commits skipped.
    commits = [
        {
            "id": f"{n}d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
            "message": f"Fix number {n}\n\nLonger body",
            "author": {"name": "Ana", "username": "ana"},
        }
        for n in range(7)
    ]
    payload = {
        "ref": "refs/heads/release-2.4",
        "compare": "https://github.com/acme/shop/compare/9049f1265b7d...0d1a26e67d8f",
        "commits": commits,
        "pusher": {"name": "ana"},
        "repository": {"full_name": "acme/shop", "default_branch": "main", "master_branch": "main"},
        "sender": {"login": "ana"},
    }
    text = digest(brief(payload, {"x-github-event": "push"}, "Which branch, and what changed?"))
    lines = text.splitlines()
    assert lines[0] == "*hook*: push to release-2.4 in acme/shop by ana, 7 commits", lines[0]
    assert "• branch: release-2.4 (ref)" in lines
    assert not any(line.startswith("• branch:") and "main" in line for line in lines), text
    for n in range(5):
        assert f"• {n}d1a26e Fix number {n} — Ana" in lines, text
    assert "… and 2 more" in lines
    assert "Compare: https://github.com/acme/shop/compare/9049f1265b7d...0d1a26e67d8f" in lines


def test_a_pull_request_merged_says_so_and_its_branches() -> None:
    payload = {
        "action": "closed",
        "number": 88,
        "pull_request": {
            "number": 88,
            "title": "Round taxes half-even",
            "merged": True,
            "head": {"ref": "fix/tax"},
            "base": {"ref": "main"},
        },
        "repository": {"full_name": "acme/shop", "default_branch": "main"},
        "sender": {"login": "ana"},
    }
    text = digest(brief(payload, {"x-github-event": "pull_request"}, "Which branch?"))
    first = text.splitlines()[0]
    assert first == "*hook*: pull_request merged — #88 Round taxes half-even in acme/shop by ana"
    assert "Branch: fix/tax → main" in text
    assert "• branch: fix/tax (pull_request.head.ref)" in text


def test_a_workflow_run_names_the_workflow_branch_and_outcome() -> None:
    payload = {
        "action": "completed",
        "workflow_run": {"name": "CI", "head_branch": "release-2.4", "conclusion": "failure"},
        "repository": {"full_name": "acme/shop", "default_branch": "main"},
    }
    first = digest(brief(payload, {"x-github-event": "workflow_run"})).splitlines()[0]
    assert first == "*hook*: workflow_run completed — CI on release-2.4 in acme/shop: failure"


# --- Stripe --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amount", "currency", "shown"),
    [
        (129900, "usd", "1,299.00 USD"),
        (5, "eur", "0.05 EUR"),
        (500, "jpy", "500 JPY"),
        (12345, "kwd", "12.345 KWD"),
        (-2500, "gbp", "-25.00 GBP"),
        (0, "usd", "0.00 USD"),
    ],
)
def test_minor_units_are_formatted_in_their_currency(
    amount: int, currency: str, shown: str
) -> None:
    assert format_minor_units(amount, currency) == shown


def test_the_finding_a_stripe_amount_in_minor_units() -> None:
    # Observed: amount_due 129900 stayed unformatted.
    payload = {
        "id": "evt_1QbC",
        "object": "event",
        "type": "invoice.payment_failed",
        "data": {
            "object": {
                "id": "in_1QbC",
                "object": "invoice",
                "amount_due": 129900,
                "amount_paid": 0,
                "currency": "usd",
                "customer": "cus_Q1",
                "customer_email": "ops@acme.example",
                "status": "open",
                "lines": {"data": [{"amount": 129900, "currency": "usd"}]},
            }
        },
    }
    text = digest(brief(payload, {}, "Post the amount and the customer."))
    first = text.splitlines()[0]
    assert first == (
        "*hook*: invoice.payment_failed — invoice in_1QbC for ops@acme.example: "
        "1,299.00 USD due (open)"
    )
    assert "• data.object.amount_due: 1,299.00 USD" in text
    assert "129900" not in text, text


def test_a_charge_in_a_zero_decimal_currency() -> None:
    payload = {
        "object": "event",
        "type": "charge.succeeded",
        "data": {"object": {"object": "charge", "id": "ch_1", "amount": 4200, "currency": "jpy"}},
    }
    first = digest(brief(payload, {})).splitlines()[0]
    assert first == "*hook*: charge.succeeded — charge ch_1: 4,200 JPY"


# --- Standard Webhooks, and what is not recognised -----------------------------------------------


def test_a_standard_webhooks_envelope_names_its_type_and_subject() -> None:
    payload = {
        "type": "order.shipped",
        "timestamp": "2026-11-25T10:00:00Z",
        "data": {"order_id": "ord_8812", "carrier": "UPS"},
    }
    first = digest(brief(payload, {"webhook-id": "msg_1"})).splitlines()[0]
    assert first == "*hook*: order.shipped — ord_8812"


def test_other_shapes_are_left_to_the_generic_reading() -> None:
    assert sender_facts({"alert": "disk full"}, {}) is None
    assert sender_facts(["not", "an", "object"], {"x-github-event": "push"}) is None
    # Stripe-looking but not an event object: not Stripe.
    assert sender_facts({"object": "invoice", "type": "x", "amount_due": 5}, {}) is None
