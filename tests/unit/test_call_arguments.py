"""CallArguments: the hash, redaction and sizes the gate, queue and audit used to compute apart."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentws.domain.call_arguments import CallArguments
from agentws.domain.models import arguments_hash
from agentws.domain.previews import json_bytes
from agentws.domain.secrets_in_arguments import has_secrets, redact

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"token": {"type": "string", "writeOnly": True}, "text": {"type": "string"}},
}


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"text": "plain"},
        {"text": "café ☕ \U0001f600 \x7f", "n": [1, 2.5, None, True]},
        {"text": "x", "token": "s3cret"},
        {"token": "é", "nested": {"token": "not secret here"}},
    ],
)
def test_each_value_is_what_it_replaces(arguments: dict[str, Any]) -> None:
    prepared = CallArguments.of("notes_write", arguments, SCHEMA)
    shown = redact(arguments, SCHEMA)
    assert prepared.whole is arguments
    assert prepared.shown == shown
    assert prepared.hash == arguments_hash("notes_write", arguments)
    assert prepared.has_secrets is has_secrets(arguments, SCHEMA)
    assert prepared.whole_bytes == json_bytes(arguments)
    assert prepared.shown_bytes == json_bytes(shown)
    assert prepared.shown_json_chars == len(json.dumps(shown, separators=(",", ":"), default=str))
    assert prepared.sealable() == json.dumps(arguments, separators=(",", ":"))
