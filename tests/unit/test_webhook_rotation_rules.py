"""The pure rules of webhook rotation and form bodies: grace periods, a form's event."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agentws.core.errors import ValidationError
from agentws.domain.form_bodies import FormError, form_event
from agentws.webhooks.rotation import MAX_GRACE, parse_grace


@pytest.mark.parametrize(
    ("text", "grace"),
    [
        ("0", timedelta(0)),
        ("90s", timedelta(seconds=90)),
        ("90", timedelta(seconds=90)),
        ("30m", timedelta(minutes=30)),
        ("24h", timedelta(hours=24)),
        (" 7D ", timedelta(days=7)),
        ("30d", MAX_GRACE),
    ],
)
def test_grace_periods(text: str, grace: timedelta) -> None:
    assert parse_grace(text) == grace


@pytest.mark.parametrize(
    "text",
    [
        *("", "h", "-1h", "1.5h", "31d", "2w", "24 hours", "1e3"),
        # Digits to str.isdigit() but not to int(), or not ASCII; too big for a timedelta.
        *("²h", "\u0663h", "1_0h", "99999999999999999999d", "9" * 5000),
    ],
)
def test_grace_periods_refused_say_what_is_taken(text: str) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_grace(text)
    message = refused.value.message
    assert message.startswith("grace must be ")
    assert "24h" in message or "30 days" in message
    assert len(message) < 200


def test_a_form_with_a_payload_is_that_json() -> None:
    event, stored = form_event(b"payload=%7B%22a%22%3A+%22%C3%A9%22%7D&ignored=1")
    assert event == {"a": "é"}
    assert stored == '{"a": "é"}'.encode()


def test_a_form_without_a_payload_is_its_fields() -> None:
    event, stored = form_event(b"command=%2Fdeploy&tag=a&tag=b&empty=")
    assert event == {"command": "/deploy", "tag": ["a", "b"], "empty": ""}
    assert stored == b'{"command": "/deploy", "tag": ["a", "b"], "empty": ""}'
    assert form_event(b"") == ({}, b"{}")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"payload=%7B", "invalid_json"),
        (b"payload=%5B%5D", "not_an_object"),
        (b"payload=1&payload=2", "invalid_form"),
        (b"a=%ff", "invalid_form"),
        (b"\xff=1", "invalid_form"),
        (b"no-equals-sign", "invalid_form"),
    ],
)
def test_forms_that_make_no_event(body: bytes, code: str) -> None:
    with pytest.raises(FormError) as refused:
        form_event(body)
    assert refused.value.code == code


@pytest.mark.parametrize("body", [b'{"a":1}', b'{"a": "b=c"}', b"[1, 2]", b' {"x": {"y": []}}\n'])
def test_json_sent_as_a_form_is_told_to_say_it_is_json(body: bytes) -> None:
    with pytest.raises(FormError) as refused:
        form_event(body)
    assert (refused.value.status, refused.value.code) == (400, "invalid_form")
    assert "send it with Content-Type: application/json" in refused.value.message
