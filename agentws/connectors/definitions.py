"""The identity of a tool's definition: what a caller relies on, hashed."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["definition_hash"]


def definition_hash(name: str, description: str | None, input_schema: dict[str, Any]) -> str:
    """SHA-256 of a tool's name, description and input schema (canonical JSON)."""
    definition = {"name": name, "description": description or "", "inputSchema": input_schema}
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
