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
import json
from typing import Any

import attrs

from agentws.domain.models import arguments_hash
from agentws.domain.previews import json_bytes
from agentws.domain.secrets_in_arguments import redact

__all__ = ["CallArguments"]


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

    @classmethod
    def of(cls, tool_name: str, arguments: dict[str, Any], schema: dict[str, Any]) -> CallArguments:
        """Hash and redact the ``arguments`` of a call to ``tool_name`` (schema: ``schema``)."""
        shown = redact(arguments, schema)
        has_secrets = shown != arguments
        return cls(
            whole=arguments,
            # Without secrets the redacted copy is the arguments: measure one of them only.
            shown=shown if has_secrets else arguments,
            hash=arguments_hash(tool_name, arguments),
            has_secrets=has_secrets,
        )

    @functools.cached_property
    def whole_bytes(self) -> int:
        """Size of the whole arguments as compact JSON, UTF-8 (the queue's limit)."""
        return json_bytes(self.whole)

    @functools.cached_property
    def shown_bytes(self) -> int:
        """Size of the redacted arguments as the store keeps them (compact JSON, UTF-8)."""
        return json_bytes(self.shown) if self.has_secrets else self.whole_bytes

    @functools.cached_property
    def shown_json_chars(self) -> int:
        """Length of the redacted arguments as compact, ASCII-only JSON (the audit's measure)."""
        return len(json.dumps(self.shown, separators=(",", ":"), default=str))

    def sealable(self) -> str:
        """The whole arguments as the text sealed for a queued call with secret values."""
        return json.dumps(self.whole, separators=(",", ":"))
