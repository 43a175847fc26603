"""One tool call's arguments with what is derived from them, each computed once. No I/O.

A call on its way through the gate is hashed (what an approval binds to),
redacted (what an admin, the audit log and a run's transcript may read),
measured as JSON (the approval queue's size limit, the size a queued call
is listed with, whether the audit log keeps the arguments or their size
only) and, when queued with secret values, sealed. :class:`CallArguments`
carries these along, so the gate, the queue, the audit and the run log
never recompute one: the arguments may be hundreds of KiB.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import attrs

from agentws.domain.previews import json_bytes, json_preview
from agentws.domain.secrets_in_arguments import redact

__all__ = ["CallArguments"]

# The arguments as compact JSON, keys sorted: one encoding the hash and the
# sizes all come from (keys sorted for the hash; sorting costs little).
_CANONICAL = json.JSONEncoder(
    separators=(",", ":"), sort_keys=True, ensure_ascii=False, default=str
).encode
# The same, ASCII only: what approvals have always been hashed over.
_CANONICAL_ASCII = json.JSONEncoder(separators=(",", ":"), sort_keys=True, default=str).encode


@attrs.frozen
class CallArguments:
    """A call's whole arguments, their redacted copy and their hash."""

    #: The arguments as the caller sent them.
    whole: dict[str, Any]
    #: The arguments as an admin reads them: values the tool's schema marks secret redacted.
    shown: dict[str, Any]
    #: SHA-256 of the tool name and the whole arguments: what an approval binds to.
    hash: str
    #: Whether some values are secret (``shown`` differs from ``whole``).
    has_secrets: bool
    #: The whole arguments as compact JSON with sorted keys (not ASCII only).
    text: str
    #: The same, ASCII only (``\\u`` escapes), which ``text`` is when it is ASCII.
    ascii_text: str = attrs.field(repr=False)

    @classmethod
    def of(cls, tool_name: str, arguments: dict[str, Any], schema: dict[str, Any]) -> CallArguments:
        """Hash and redact the ``arguments`` of a call to ``tool_name`` (schema: ``schema``).

        The arguments are encoded once (twice when they are not all ASCII):
        the hash and every size are read off that text.
        """
        text = _CANONICAL(arguments)
        # The usual case; else the hash needs the escaped text.
        ascii_text = text if text.isascii() else _CANONICAL_ASCII(arguments)
        # As models.arguments_hash makes it: [name, arguments] in the same encoding.
        canonical = f"[{json.dumps(tool_name)},{ascii_text}]"
        shown = redact(arguments, schema)
        has_secrets = shown != arguments
        return cls(
            whole=arguments,
            # Without secrets the redacted copy is the arguments: measure one of them only.
            shown=shown if has_secrets else arguments,
            hash=hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
            has_secrets=has_secrets,
            text=text,
            ascii_text=ascii_text,
        )

    @functools.cached_property
    def whole_bytes(self) -> int:
        """Size of the whole arguments as compact JSON, UTF-8 (the queue's limit)."""
        text = self.text
        return len(text) if text is self.ascii_text else len(text.encode("utf-8", "surrogatepass"))

    @functools.cached_property
    def shown_bytes(self) -> int:
        """Size of the redacted arguments as the store keeps them (compact JSON, UTF-8)."""
        return json_bytes(self.shown) if self.has_secrets else self.whole_bytes

    @functools.cached_property
    def shown_json_chars(self) -> int:
        """Length of the redacted arguments as compact, ASCII-only JSON (the audit's measure)."""
        if not self.has_secrets:
            return len(self.ascii_text)
        return len(json.dumps(self.shown, separators=(",", ":"), default=str))

    @functools.cached_property
    def preview(self) -> str:
        """The start of the redacted arguments as JSON, what lists of queued calls show."""
        return json_preview(self.shown)

    def sealable(self) -> str:
        """The whole arguments as the text sealed for a queued call with secret values."""
        return json.dumps(self.whole, separators=(",", ":"))
