"""Short previews of JSON values, for lists that must stay small whatever they list.

A queued call's arguments may be hundreds of KiB; a list of queued calls
shows each as its first :data:`PREVIEW_CHARS` characters and its size, and
the whole arguments only on the call's own page.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["PREVIEW_CHARS", "json_bytes", "json_preview"]

#: Characters of a preview: a line or two of a table, and 50 rows stay far below 1 MB.
PREVIEW_CHARS = 300
#: Marks a preview that was cut.
ELLIPSIS = "…"


# Encodes piece by piece (the pure-Python encoder), so a preview stops early.
_PIECES = json.JSONEncoder(ensure_ascii=False, default=str).iterencode


def json_preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """``value`` as readable JSON, cut to ``limit`` characters (then ending in ``…``).

    Only the start is encoded: a preview of a MiB of arguments costs what a
    short one does.
    """
    pieces: list[str] = []
    length = 0
    for piece in _PIECES(value):
        pieces.append(piece)
        length += len(piece)
        if length > limit:
            return "".join(pieces)[: limit - 1] + ELLIPSIS
    return "".join(pieces)


def json_bytes(value: Any) -> int:
    """Size of ``value`` as the store keeps it: compact JSON, UTF-8."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return len(text.encode("utf-8", "surrogatepass"))
