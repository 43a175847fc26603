"""Results the MCP door sends again and again, turned into JSON once.

A group's ``tools/list`` answer is the same object for every listing until
the catalog changes (see ``_ListingReuse`` in :mod:`agentws.doors.mcp.dispatch.handlers`).
For hundreds of tools its JSON is the largest single cost of a listing, so
it is made once, when the result is first kept, and the router of each
session (:meth:`agentws.doors.mcp.sessions.supervisor.McpSession.route`) splices it into the
response. A result is recognised by the identity of its values, which the
SDK passes through unchanged; this module keeps those values alive, so an
identity can never be reused by another object while it is remembered.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import attrs
from mcp_types import JSONRPCResponse

__all__ = ["RenderedResults"]

# Results remembered; beyond it the least recently used is forgotten. One per
# group and protocol version in use is what a busy process needs.
_CAPACITY = 256

_Key = tuple[tuple[str, int], ...]


def _key(result: dict[str, Any]) -> _Key:
    return tuple((name, id(value)) for name, value in result.items())


@attrs.define(eq=False)
class RenderedResults:
    """Remembered results and their JSON text."""

    capacity: int = _CAPACITY
    # key -> (the values, kept alive; the result's JSON)
    _texts: OrderedDict[_Key, tuple[tuple[Any, ...], str]] = attrs.field(
        factory=OrderedDict, init=False
    )

    def remember(self, result: dict[str, Any]) -> None:
        """Make the JSON of ``result`` now, for every response that carries it later."""
        key = _key(result)
        if key in self._texts:
            self._texts.move_to_end(key)
            return
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
        self._texts[key] = (tuple(result.values()), text)
        while len(self._texts) > self.capacity:
            self._texts.popitem(last=False)

    def response_json(self, message: JSONRPCResponse) -> str | None:
        """The JSON of ``message`` if its result is a remembered one; None otherwise."""
        result = message.result
        if not isinstance(result, dict):
            return None
        found = self._texts.get(_key(result))
        if found is None:
            return None
        self._texts.move_to_end(_key(result))
        return f'{{"jsonrpc":"2.0","id":{json.dumps(message.id)},"result":{found[1]}}}'
