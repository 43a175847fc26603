"""A webhook body as the agent sees it: fenced as untrusted data, cut by structure if too big.

The whole body goes into the agent's user turn as JSON between two fence
lines that carry a random nonce::

    <<<UNTRUSTED WEBHOOK PAYLOAD 3f9c…>>>
    {"event": "deploy", ...}
    <<<END UNTRUSTED WEBHOOK PAYLOAD 3f9c…>>>

A payload cannot forge the end of the fence and speak "outside" it: it does
not know the nonce, and every ``<`` in the JSON is written as the escape
``\\u003c`` (valid JSON, the same value), so no fence marker can appear in
it at all.

Only a body too large for the model's context is cut, and then by
structure, never in the middle of the JSON text: trailing array items and
object members are dropped (with a note saying how many), and a string too
long by itself keeps its start and says how many characters were cut. The
result is wrapped as ``{"truncated": true, "original_bytes": N, "payload":
…}`` so the model knows it does not see everything.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import attrs

__all__ = ["FencedPayload", "fence_payload", "fit_to_budget", "json_size"]

_FENCE = "UNTRUSTED WEBHOOK PAYLOAD"
# Room kept for the marker that says what was cut from an array or object.
_MARKER_BYTES = 48
# A string cut shorter than this says only that it was cut.
_MIN_STRING_CHARS = 16


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON."""
    return len(_dumps(value).encode("utf-8"))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _fit_string(text: str, budget: int) -> str:
    if json_size(text) <= budget:
        return text
    keep = max(0, budget - _MARKER_BYTES)
    # Characters are cut, not bytes, so no UTF-8 sequence is split; the
    # loop settles in a few steps because it only shrinks.
    while keep > 0:
        cut = text[:keep] + f"…[{len(text) - keep} characters cut]"
        if json_size(cut) <= budget:
            return cut
        keep = keep * 3 // 4 if keep > _MIN_STRING_CHARS else 0
    return f"…[{len(text)} characters cut]"


def _fit_list(items: list[Any], budget: int) -> list[Any]:
    kept: list[Any] = []
    used = 2  # []
    for index, item in enumerate(items):
        room = budget - used - _MARKER_BYTES - (1 if kept else 0)
        if room <= 0:
            kept.append(f"…[{len(items) - index} more items]")
            return kept
        size = json_size(item)
        if size <= room:
            kept.append(item)
            used += size + (1 if len(kept) > 1 else 0)
            continue
        fitted = fit_to_budget(item, room)
        kept.append(fitted)
        rest = len(items) - index - 1
        if rest:
            kept.append(f"…[{rest} more items]")
        return kept
    return kept


def _marker_key(members: dict[str, Any]) -> str:
    key = "…"
    while key in members:  # never overwrite a member of the payload's own
        key += "…"
    return key


def _fit_dict(members: dict[str, Any], budget: int) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    used = 2  # {}
    names = list(members)
    for index, name in enumerate(names):
        key_size = json_size(name) + 1  # "name":
        room = budget - used - _MARKER_BYTES - key_size - (1 if kept else 0)
        if room <= 0:
            kept[_marker_key(members)] = f"[{len(names) - index} more members]"
            return kept
        value = members[name]
        size = json_size(value)
        if size <= room:
            kept[name] = value
            used += key_size + size + (1 if len(kept) > 1 else 0)
            continue
        kept[name] = fit_to_budget(value, room)
        rest = len(names) - index - 1
        if rest:
            kept[_marker_key(members)] = f"[{rest} more members]"
        return kept
    return kept


def fit_to_budget(value: Any, budget: int) -> Any:
    """``value`` cut by structure until its compact JSON is about ``budget`` bytes or less.

    Values that fit are returned unchanged. Arrays and objects keep their
    first items and members and say how many more there were; strings keep
    their start. Numbers, booleans and null are never changed. The result
    may exceed a tiny budget by the size of the markers.
    """
    if json_size(value) <= budget:
        return value
    if isinstance(value, str):
        return _fit_string(value, budget)
    if isinstance(value, list):
        return _fit_list(value, budget)
    if isinstance(value, dict):
        return _fit_dict(value, budget)
    return value


@attrs.frozen
class FencedPayload:
    """The body as text for the model, and what was done to it."""

    text: str
    truncated: bool
    original_bytes: int


def fence_payload(body: Any, *, max_bytes: int, nonce: str | None = None) -> FencedPayload:
    """Fence the parsed ``body``, cut by structure to about ``max_bytes`` if it is larger.

    Args:
        body: the webhook's JSON body, parsed.
        max_bytes: how much of the model's context the payload may take.
        nonce: the fence's random part (tests pass one; by default a fresh one).
    """
    original = json_size(body)
    truncated = original > max_bytes
    shown: Any = body
    if truncated:
        shown = {
            "truncated": True,
            "original_bytes": original,
            "payload": fit_to_budget(body, max(0, max_bytes - 64)),
        }
    fence = nonce or secrets.token_hex(8)
    # "<" as its JSON escape: the same value, and no fence marker can appear.
    # On one line: json's fast encoder does not indent.
    data = json.dumps(shown, ensure_ascii=False).replace("<", "\\u003c")
    text = f"<<<{_FENCE} {fence}>>>\n{data}\n<<<END {_FENCE} {fence}>>>"
    return FencedPayload(text=text, truncated=truncated, original_bytes=original)
