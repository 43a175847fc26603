"""Argument values a tool's schema marks secret, and their redaction. No I/O.

A value is secret when the JSON schema that describes it says so in one of
the ways schemas in the wild do: ``"writeOnly": true`` (JSON Schema's own
word for a value that is sent but never shown back, such as a password),
``"format": "password"`` (OpenAPI), or ``"x-secret": true`` / ``"secret":
true``. Properties, ``items``, ``additionalProperties`` and
``patternProperties``, ``prefixItems`` (and draft-07 tuple ``items``),
``dependentSchemas`` are followed, as are ``allOf``/``anyOf``/``oneOf`` and
``if``/``then``/``else`` branches and local ``$ref``s into
``$defs``/``definitions`` (chains of them too), so a secret nested anywhere
in the arguments is found. When in doubt it redacts: values nested deeper
than ``_MAX_DEPTH``, and all of them when a schema is too convoluted to
walk in bounded time.

Redacted copies go to the audit log, to the approval an admin reads and to
logs; the whole arguments go only to the tool (and, sealed with the service
key, into an approval that will run them later).
"""

from __future__ import annotations

from typing import Any

import attrs

from agentws.domain.patterns import pattern_search
from agentws.domain.schema_memo import SchemaMemo

__all__ = ["REDACTED", "has_secrets", "redact"]

#: What a secret value reads as once redacted.
REDACTED = "[redacted]"

# Deeper than this, values are redacted whatever the schema says: arguments
# are JSON from callers, and schemas come from remote servers.
_MAX_DEPTH = 32
# Schema nodes visited per redaction at most. A hostile schema can make the
# walk exponential (a $ref that branches into itself twice); past this the
# whole arguments are redacted rather than the caller waiting.
_MAX_VISITS = 20_000
# A $ref that points at a $ref is followed this many times at most.
_MAX_REF_HOPS = 16
# Keys whose schemas apply to the same value (applicators).
_BRANCH_LISTS = ("allOf", "anyOf", "oneOf")
_BRANCH_SCHEMAS = ("if", "then", "else")
# Every keyword the walk follows into another schema.
_FOLLOWED = frozenset(
    {
        "$ref",
        *_BRANCH_LISTS,
        *_BRANCH_SCHEMAS,
        "properties",
        "patternProperties",
        "additionalProperties",
        "dependentSchemas",
        "items",
        "prefixItems",
        "additionalItems",
    }
)


class _TooComplex(Exception):
    pass


def _is_secret(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    return (
        schema.get("writeOnly") is True
        or schema.get("format") == "password"
        or schema.get("x-secret") is True
        or schema.get("secret") is True
    )


def _resolve(schema: Any, root: dict[str, Any]) -> Any:
    for _ in range(_MAX_REF_HOPS):
        if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
            return schema
        ref: str = schema["$ref"]
        target: Any = None
        for prefix in ("#/$defs/", "#/definitions/"):
            if ref.startswith(prefix):
                container = root.get(prefix[2:-1])
                if isinstance(container, dict):
                    name = ref[len(prefix) :].replace("~1", "/").replace("~0", "~")
                    target = container.get(name)
        if not isinstance(target, dict):
            return schema
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _branches(schema: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    for key in _BRANCH_LISTS:
        value = schema.get(key)
        if isinstance(value, list):
            found += value
    found += [schema[key] for key in _BRANCH_SCHEMAS if isinstance(schema.get(key), dict)]
    return found


@attrs.define
class _Walk:
    root: dict[str, Any]
    visits: int = 0

    def redact(self, value: Any, schema: Any, depth: int) -> Any:
        self.visits += 1
        if self.visits > _MAX_VISITS:
            raise _TooComplex
        if depth > _MAX_DEPTH:
            return REDACTED
        schema = _resolve(schema, self.root)
        if _is_secret(schema):
            return REDACTED
        if not isinstance(schema, dict):
            return value
        branches = [_resolve(b, self.root) for b in _branches(schema)]
        if any(_is_secret(b) for b in branches):
            return REDACTED
        for branch in branches:
            value = self.redact(value, branch, depth + 1)
        if isinstance(value, dict):
            return self._object(value, schema, depth)
        if isinstance(value, list):
            return self._array(value, schema, depth)
        return value

    def _object(self, value: dict[str, Any], schema: dict[str, Any], depth: int) -> Any:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        patterns = schema.get("patternProperties")
        patterns = patterns if isinstance(patterns, dict) else {}
        extra = schema.get("additionalProperties")
        dependent = schema.get("dependentSchemas")
        dependent = dependent if isinstance(dependent, dict) else {}
        redacted: dict[str, Any] = {}
        for key, item in value.items():
            matched = key in properties
            if matched:
                item = self.redact(item, properties[key], depth + 1)
            # JSON Schema applies every matching pattern, declared property or not.
            for pattern, sub in patterns.items():
                self.visits += 1
                if self.visits > _MAX_VISITS:
                    raise _TooComplex
                # A pattern that cannot run in linear time applies, in doubt.
                hit = pattern_search(pattern, key) if isinstance(pattern, str) else False
                if hit is None or hit:
                    matched = True
                    item = self.redact(item, sub, depth + 1)
            if not matched and isinstance(extra, dict):
                item = self.redact(item, extra, depth + 1)
            redacted[key] = item
        for key, sub in dependent.items():
            if key in value and isinstance(sub, dict):
                redacted = self.redact(redacted, sub, depth + 1)
        return redacted

    def _array(self, value: list[Any], schema: dict[str, Any], depth: int) -> Any:
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        if isinstance(items, list):  # the draft-07 tuple form
            prefix, items = items, schema.get("additionalItems")
        out = []
        for index, item in enumerate(value):
            if isinstance(prefix, list) and index < len(prefix):
                out.append(self.redact(item, prefix[index], depth + 1))
            elif isinstance(items, dict):
                out.append(self.redact(item, items, depth + 1))
            else:
                out.append(item)
        return out


def _plain(schema: dict[str, Any]) -> bool:
    """Whether the walk can only copy arguments of ``schema``: a flat object schema, nothing secret.

    Its properties' schemas lead nowhere (no keyword the walk follows) and
    none is marked secret, so no value is redacted, and the walk stays far
    from its depth and visit limits whatever the arguments.
    """
    if _is_secret(schema) or (set(schema) & _FOLLOWED) - {"properties", "additionalProperties"}:
        return False
    properties = schema.get("properties", {})
    if isinstance(schema.get("additionalProperties"), dict) or not isinstance(properties, dict):
        return False
    return len(properties) < _MAX_VISITS and all(
        not isinstance(sub, dict) or not (_is_secret(sub) or set(sub) & _FOLLOWED)
        for sub in properties.values()
    )


# Whether a schema is plain (:func:`_plain`), by the schema object.
_is_plain = SchemaMemo(_plain)


def redact(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``arguments``, each value ``schema`` marks secret replaced by ``[redacted]``."""
    if _is_plain(schema):
        # Most tools' schemas: nothing to redact, so nothing to walk (a call's
        # hot path redacts its arguments for the audit log).
        return dict(arguments)
    try:
        redacted = _Walk(schema).redact(arguments, schema, 0)
    except _TooComplex:
        return dict.fromkeys(arguments, REDACTED)
    return redacted if isinstance(redacted, dict) else {}


def has_secrets(arguments: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Whether any value of ``arguments`` is one ``schema`` marks secret."""
    return redact(arguments, schema) != arguments
