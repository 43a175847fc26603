"""Checking a call's arguments: against its tool's JSON schema (compiled validators kept),
and a native action's path arguments against its API's grammar.

Most tools' schemas are flat objects of strings, numbers and booleans with
bounds. For those a call's arguments are first checked by a few plain
comparisons (:func:`_quick_check`), which only ever say "valid": anything
they are not sure of (a float where an integer is asked, a keyword they do
not know) goes to the full JSON Schema validator, which also writes the
error. A valid call, the usual case, never pays for the full validator.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema

from agentws.connectors.native import ACTIONS
from agentws.domain.schema_memo import SchemaMemo
from agentws.tools.builtins import BUILTINS, GET_APPROVAL
from agentws.tools.spec import ToolSpec

__all__ = ["argument_error", "path_argument_error"]

QuickCheck = Callable[[dict[str, Any]], bool]

# Compiled validators by schema text; connector schemas change rarely.
_validators: dict[str, jsonschema.protocols.Validator] = {}
_MAX_VALIDATORS = 1000
# Keywords of a schema that only describe: they never make a value invalid.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated"})
_OBJECT_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}
_VALUE_KEYWORDS = _ANNOTATIONS | {"type", "minLength", "maxLength", "minimum", "maximum"}


def _compile(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _value_check(schema: Any) -> Callable[[Any], bool] | None:
    """A check that ``value`` is surely valid for a property's ``schema``; None: too rich."""
    if not isinstance(schema, dict) or set(schema) - _VALUE_KEYWORDS:
        return None
    kind = schema.get("type")
    low, high = schema.get("minimum"), schema.get("maximum")
    if not all(bound is None or _is_number(bound) for bound in (low, high)):
        return None
    if kind == "string":
        shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
        if not isinstance(shortest, int) or not (longest is None or isinstance(longest, int)):
            return None
        if low is not None or high is not None:
            return None
        # len() counts code points, as JSON Schema's lengths do.
        return lambda value: (
            isinstance(value, str)
            and len(value) >= shortest
            and (longest is None or len(value) <= longest)
        )
    if set(schema) & {"minLength", "maxLength"}:
        return None
    if kind == "boolean" and low is None and high is None:
        return lambda value: isinstance(value, bool)
    if kind in ("integer", "number"):
        # A float where an integer is asked (1.0 is one) is left to the full check.
        wanted: Callable[[Any], bool] = (
            (lambda value: type(value) is int) if kind == "integer" else _is_number
        )
        return lambda value: (
            wanted(value) and (low is None or value >= low) and (high is None or value <= high)
        )
    return None


def _quick_check(schema: dict[str, Any]) -> QuickCheck | None:
    """For a flat object schema of simple values: a check that arguments are surely valid."""
    if set(schema) - _OBJECT_KEYWORDS or schema.get("type") != "object":
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    closed = schema.get("additionalProperties", True)
    if (
        not isinstance(properties, dict)
        or not isinstance(required, list)
        or not all(isinstance(name, str) for name in required)
        or not isinstance(closed, bool)
    ):
        return None
    checks: dict[str, Callable[[Any], bool]] = {}
    for name, spec in properties.items():
        check = _value_check(spec)
        if check is None:
            return None
        checks[name] = check
    needed = tuple(required)
    extra_allowed = closed

    def quick(arguments: dict[str, Any]) -> bool:
        for name in needed:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            check = checks.get(name)
            if check is None:
                if not extra_allowed:
                    return False
            elif not check(value):
                return False
        return True

    return quick


# Quick checks by the schema object; None: the schema has none.
_quick_for = SchemaMemo(_quick_check, _MAX_VALIDATORS)


# The built-ins' schemas are module constants: compiled once, found by identity.
_BUILTIN_VALIDATORS = {
    id(spec.input_schema): _compile(spec.input_schema)
    for spec in [*(b.spec for b in BUILTINS.values()), GET_APPROVAL]
}


def _cached_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    key = json.dumps(schema, sort_keys=True)
    validator = _validators.get(key)
    if validator is None:
        if len(_validators) >= _MAX_VALIDATORS:
            _validators.clear()
        validator = _validators[key] = _compile(schema)
    return validator


def argument_error(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """What is wrong with ``arguments`` for ``schema`` (the most relevant error), or None."""
    quick = _quick_for(schema)
    if quick is not None and quick(arguments):
        return None
    validator = _BUILTIN_VALIDATORS.get(id(schema))
    if validator is None:
        try:
            validator = _cached_validator(schema)
        except jsonschema.exceptions.SchemaError as exc:
            return f"the tool's own schema is invalid ({exc.message}); ask an admin"
    error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def path_argument_error(tool: ToolSpec, arguments: dict[str, Any]) -> str | None:
    """Why a native action's ``arguments`` may not go into its request's path, or None.

    Checked before a call is queued or confirmed, so a call that could only
    be refused later is never put to an admin or a caller.
    """
    if tool.connector_kind is None:
        return None
    action = ACTIONS.get(tool.connector_kind, {}).get(tool.remote_name or "")
    if action is None:
        return None
    problem = action.argument_error(arguments)
    return None if problem is None else f"{problem}; nothing was sent"
