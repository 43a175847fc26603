"""Checking a call's arguments: against its tool's JSON schema (compiled validators kept),
and a native action's path arguments against its API's grammar.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from agentws.connectors.native import ACTIONS
from agentws.tools.builtins import BUILTINS, GET_APPROVAL
from agentws.tools.spec import ToolSpec

__all__ = ["argument_error", "path_argument_error"]

# Compiled validators by schema text; connector schemas change rarely.
_validators: dict[str, jsonschema.protocols.Validator] = {}
_MAX_VALIDATORS = 1000


def _compile(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


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
