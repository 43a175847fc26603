"""What checking arguments against a tool's JSON Schema may cost, worked out from the schema alone.

A remote MCP server writes its tools' schemas and callers write the
arguments, so neither may decide how long a check holds the event loop.
With the validator of :mod:`agentws.tools.schema_validators` (linear-time
patterns, hashed ``uniqueItems``), a check's work is about the arguments'
size times the *width* of the schema: how many schema nodes may apply to
one place in the arguments. Plain schemas have a width of a few; the
width grows with combinators (``allOf``/``anyOf``/``oneOf``/``not``/
``if``) and ``$ref``s that apply more schemas to the same value, and it
grows exponentially when each level branches into the next twice.

:func:`assess` walks a schema once, within fixed bounds, and says its width
and what makes it hostile (the *hazards*, shown to an admin when a remote's
tools are cached). A schema with a hazard is never checked on the event
loop: the permission gate checks it in a worker process with a deadline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import jsonschema_rs

from agentws.domain.schema_memo import SchemaMemo
from agentws.tools.schema_validators import SchemaInvalid, compile_validator, needs_backtracking

__all__ = ["MAX_WIDTH", "SchemaCost", "assess"]

#: Schema nodes applied to one value at most for a schema to be checked on
#: the event loop; above, the schema is hostile (a check in a worker process).
MAX_WIDTH = 1000
# Distinct schema nodes walked at most: a larger schema is not walked further.
_MAX_NODES = 10_000
# Levels of the arguments the width is followed into (deeper arguments are refused).
_MAX_LEVELS = 64
# Schemas whose cost is kept.
_MAX_KEPT = 1000
# Hazards named at most, and the characters of a pattern quoted in one.
_MAX_HAZARDS = 5
_MAX_QUOTED = 60
# Keywords whose schemas apply to the same value as the schema holding them.
_SAME_VALUE_LISTS = ("allOf", "anyOf", "oneOf")
_SAME_VALUE_ONE = ("not", "if", "then", "else")
_SAME_VALUE_MAPS = ("dependentSchemas",)
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
# Keywords whose schemas apply to values inside the one checked.
_INNER_ONE = (
    "additionalProperties",
    "propertyNames",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contains",
)
_INNER_MAPS = ("properties", "patternProperties")
_INNER_LISTS = ("prefixItems",)


@attrs.frozen
class SchemaCost:
    """A schema's compiled validator, its width and its hazards."""

    #: None when the schema cannot be compiled (``invalid`` says why).
    validator: jsonschema_rs.Validator | None
    #: Schema nodes that may apply to one value (``MAX_WIDTH + 1``: more).
    width: int
    #: What makes the schema costly to check, in words an admin reads.
    hazards: tuple[str, ...] = ()
    #: Why the schema cannot be used, for an admin.
    invalid: str | None = None

    @property
    def on_loop(self) -> bool:
        """Whether arguments may be checked on the event loop (size permitting)."""
        return self.validator is not None and not self.hazards


class _TooLarge(Exception):
    pass


class _Loop(Exception):
    pass


@attrs.define
class _Walk:
    """One schema's walk: its local ``$ref`` targets, and what was found."""

    root: Any
    anchors: dict[str, Any] = attrs.field(factory=dict)
    widths: dict[int, int] = attrs.field(factory=dict)
    inners: dict[int, dict[int, tuple[Any, int]]] = attrs.field(factory=dict)
    visiting: set[int] = attrs.field(factory=set)
    seen: set[int] = attrs.field(factory=set)
    patterns: list[str] = attrs.field(factory=list)
    unresolved: list[str] = attrs.field(factory=list)

    def count(self, node: Any) -> None:
        if id(node) not in self.seen:
            self.seen.add(id(node))
            if len(self.seen) > _MAX_NODES:
                raise _TooLarge
            if isinstance(node, dict):
                pattern = node.get("pattern")
                if isinstance(pattern, str):
                    self.patterns.append(pattern)
                names = node.get("patternProperties")
                if isinstance(names, dict):
                    self.patterns.extend(k for k in names if isinstance(k, str))

    def resolve(self, ref: str) -> Any:
        if ref.startswith("#/") or ref == "#":
            node: Any = self.root
            for part in ref[2:].split("/") if ref != "#" else []:
                part = part.replace("~1", "/").replace("~0", "~")
                if isinstance(node, dict) and part in node:
                    node = node[part]
                elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                else:
                    return None
            return node
        if ref.startswith("#"):
            return self.anchors.get(ref[1:])
        return None

    def same_value(self, node: dict[str, Any]) -> Iterator[Any]:
        for key in _SAME_VALUE_LISTS:
            value = node.get(key)
            if isinstance(value, list):
                yield from value
        for key in _SAME_VALUE_ONE:
            if key in node:
                yield node[key]
        for key in _SAME_VALUE_MAPS:
            value = node.get(key)
            if isinstance(value, dict):
                yield from value.values()
        dependencies = node.get("dependencies")
        if isinstance(dependencies, dict):
            yield from (v for v in dependencies.values() if isinstance(v, dict | bool))
        for key in _REFS:
            ref = node.get(key)
            if isinstance(ref, str):
                target = self.resolve(ref)
                if target is None:
                    # Compiled validation knows better ($id-relative refs); the
                    # walk cannot bound what it cannot see.
                    self.unresolved.append(ref)
                else:
                    yield target

    def inner_of(self, node: dict[str, Any]) -> Iterator[Any]:
        for key in _INNER_ONE:
            if key in node:
                yield node[key]
        items = node.get("items")
        if isinstance(items, list):
            yield from items
        elif items is not None:
            yield items
        for key in _INNER_MAPS:
            value = node.get(key)
            if isinstance(value, dict):
                yield from value.values()
        for key in _INNER_LISTS:
            value = node.get(key)
            if isinstance(value, list):
                yield from value

    def width(self, node: Any) -> int:
        """Schema nodes applied to a value when ``node`` is (saturated past the bound)."""
        self.count(node)
        if not isinstance(node, dict):
            return 1
        key = id(node)
        if key in self.widths:
            return self.widths[key]
        if key in self.visiting:
            raise _Loop
        self.visiting.add(key)
        total = 1
        enum = node.get("enum")
        if isinstance(enum, list):
            total += len(enum)
        for child in self.same_value(node):
            total = min(total + self.width(child), MAX_WIDTH + 1)
        self.visiting.discard(key)
        self.widths[key] = total
        return total

    def inner(self, node: Any) -> dict[int, tuple[Any, int]]:
        """The schemas ``node`` applies to values inside its value, with how often."""
        if not isinstance(node, dict):
            return {}
        key = id(node)
        found = self.inners.get(key)
        if found is not None:
            return found
        found = {}
        for child in self.inner_of(node):
            self.count(child)
            _add(found, child, 1)
        for same in self.same_value(node):
            for child, times in self.inner(same).values():
                _add(found, child, times)
        self.inners[key] = found
        return found


def _add(into: dict[int, tuple[Any, int]], node: Any, times: int) -> None:
    held = into.get(id(node))
    into[id(node)] = (node, min((held[1] if held else 0) + times, MAX_WIDTH + 1))


def _anchors(walk: _Walk, node: Any, depth: int = 0) -> None:
    """Index the ``$anchor``s of the schema (within the walk's bounds)."""
    if depth > _MAX_LEVELS * 4:
        return
    if isinstance(node, dict):
        walk.count(node)
        anchor = node.get("$anchor")
        if isinstance(anchor, str):
            walk.anchors.setdefault(anchor, node)
        for value in node.values():
            if isinstance(value, dict | list):
                _anchors(walk, value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            if isinstance(value, dict | list):
                _anchors(walk, value, depth + 1)


def _widest(walk: _Walk) -> int:
    level: dict[int, tuple[Any, int]] = {id(walk.root): (walk.root, 1)}
    widest = 0
    for _ in range(_MAX_LEVELS + 1):
        width = sum(times * walk.width(node) for node, times in level.values())
        widest = min(max(widest, width), MAX_WIDTH + 1)
        if widest > MAX_WIDTH:
            break
        deeper: dict[int, tuple[Any, int]] = {}
        for node, times in level.values():
            for child, inner_times in walk.inner(node).values():
                _add(deeper, child, times * inner_times)
        if not deeper:
            break
        level = deeper
    return widest


def _quoted(pattern: str) -> str:
    return repr(pattern if len(pattern) <= _MAX_QUOTED else pattern[:_MAX_QUOTED] + "…")


def _assess(schema: dict[str, Any]) -> SchemaCost:
    try:
        validator, backtracking = compile_validator(schema)
    except SchemaInvalid as exc:
        return SchemaCost(None, 0, (f"the schema is invalid: {exc}",), invalid=str(exc))
    hazards: list[str] = []
    walk = _Walk(schema)
    width = MAX_WIDTH + 1
    try:
        _anchors(walk, schema)
        width = _widest(walk)
    except _TooLarge:
        hazards.append(f"more than {_MAX_NODES:,} schema nodes")
    except _Loop:
        hazards.append("a $ref loop that applies to the same value forever")
    except RecursionError:
        hazards.append("schemas nested too deeply to follow")
    if width > MAX_WIDTH and not hazards:
        hazards.append(
            f"combinators and $refs that apply more than {MAX_WIDTH:,} schemas to one value "
            "(they branch at every level)"
        )
    if walk.unresolved:
        hazards.append(f"$refs the check cannot follow ahead: {_quoted(walk.unresolved[0])}")
    if backtracking:
        slow = [p for p in walk.patterns if needs_backtracking(p)]
        named = ", ".join(_quoted(p) for p in slow[:2]) or "a pattern"
        hazards.append(f"patterns that need backtracking (lookaround, backreferences): {named}")
    return SchemaCost(validator, width, tuple(hazards[:_MAX_HAZARDS]))


# Costs by schema text too: a schema read again from the store is a new object.
_by_text: dict[str, SchemaCost] = {}


def _assess_once(schema: dict[str, Any]) -> SchemaCost:
    text = json.dumps(schema, sort_keys=True)
    found = _by_text.get(text)
    if found is None:
        if len(_by_text) >= _MAX_KEPT:
            _by_text.clear()
        found = _by_text[text] = _assess(schema)
    return found


#: A schema's cost, worked out once per schema (object, or text).
assess = SchemaMemo(_assess_once, _MAX_KEPT)
