"""What was worked out once about a JSON schema, remembered by the schema object itself.

Tool schemas are long-lived dicts that the hot path sees again and again;
what is derived from one (a quick validator, whether it holds secrets) is
kept by the schema's identity, with the schema alongside so that a recycled
``id`` is never mistaken for it. The memo is bounded: when full it starts
afresh (schemas change rarely; the next look derives again).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["SchemaMemo"]

T = TypeVar("T")


class SchemaMemo(Generic[T]):
    """``derive(schema)``, once per schema object (at most ``size`` kept)."""

    __slots__ = ("_derive", "_kept", "_size")

    def __init__(self, derive: Callable[[dict[str, Any]], T], size: int = 1000) -> None:
        self._derive = derive
        self._size = size
        self._kept: dict[int, tuple[dict[str, Any], T]] = {}

    def __call__(self, schema: dict[str, Any]) -> T:
        found = self._kept.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1]
        if len(self._kept) >= self._size:
            self._kept.clear()
        derived = self._derive(schema)
        self._kept[id(schema)] = (schema, derived)
        return derived
