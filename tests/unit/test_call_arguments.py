"""CallArguments: the hash, redaction and sizes the gate, queue and audit used to compute apart."""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentws.domain.call_arguments import CallArguments
from agentws.domain.models import arguments_hash
from agentws.domain.previews import PREVIEW_CHARS, json_bytes, json_preview
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
        {"text": "\ud800 lone", "big": 1e300, "keys": {"b": 1, "a": [{"z": 0, "y": 1}]}},
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


def _cpu_ms(work: Callable[[], object]) -> float:
    """The least CPU time ``work`` took in three runs (the collector's passes apart)."""
    best = float("inf")
    gc.disable()
    try:
        for _ in range(3):
            started = time.thread_time()
            work()
            best = min(best, time.thread_time() - started)
    finally:
        gc.enable()
    return best * 1000


# A call's largest arguments in the costliest shape to encode: 1 MiB of short members.
LARGE = {f"k{n:07d}": n for n in range(70_000)}
PLAIN: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}}


def test_large_arguments_are_encoded_once() -> None:
    def measured() -> None:
        prepared = CallArguments.of("notes_write", LARGE, PLAIN)
        _ = (prepared.hash, prepared.whole_bytes, prepared.shown_bytes, prepared.shown_json_chars)

    # The hash, the sizes the queue and the audit read: one encoding of the
    # arguments between them (they used to encode them once each).
    once = _cpu_ms(lambda: json.dumps(LARGE, separators=(",", ":")))
    assert _cpu_ms(measured) < 2 * once


def test_a_preview_costs_what_it_shows() -> None:
    preview = json_preview(LARGE)
    assert len(preview) == PREVIEW_CHARS
    assert preview == json.dumps(LARGE, ensure_ascii=False)[: PREVIEW_CHARS - 1] + "…"
    once = _cpu_ms(lambda: json.dumps(LARGE, separators=(",", ":")))
    assert _cpu_ms(lambda: json_preview(LARGE)) < once / 10
