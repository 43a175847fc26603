"""Compiled JSON Schema validators for tool arguments, and the error a caller is told.

Validation is jsonschema-rs: its regular expressions run on a linear-time
engine (a pattern that needs lookaround or a backreference falls back to a
backtracking one with a step limit), ``uniqueItems`` hashes instead of
comparing every pair, and a ``$ref`` outside the schema is never fetched
(a remote's schema must not make agentws open connections).

This module is also what a worker process imports to check arguments off
the event loop (:func:`check_in_worker`), so it imports nothing of agentws.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs

__all__ = [
    "SchemaInvalid",
    "check_in_worker",
    "compile_validator",
    "first_error",
    "needs_backtracking",
    "worker_ready",
]

# Backtracking steps one match of a lookaround or backreference pattern may take.
_BACKTRACK_LIMIT = 10_000
# What a caller reads of one error at most: messages quote the value, which
# may be the whole arguments.
_MAX_MESSAGE_CHARS = 300
# Validators a worker process keeps, by schema text.
_MAX_KEPT = 200


class SchemaInvalid(Exception):
    """The schema cannot be compiled; the message says why, for an admin."""


def _refuse(uri: str) -> Any:
    raise ValueError(f"{uri} is outside the tool's schema and is never fetched")


def _build(schema: Any, patterns: Any) -> jsonschema_rs.Validator:
    options: dict[str, Any] = {
        "validate_formats": False,
        "retriever": _refuse,
        "pattern_options": patterns,
    }
    try:
        return jsonschema_rs.validator_for(schema, **options)
    except jsonschema_rs.ValidationError as exc:
        # An unknown "$schema" is read as the current draft, as JSON Schema asks.
        if "Unknown meta-schema" not in str(exc):
            raise
        return jsonschema_rs.Draft202012Validator(schema, **options)


def compile_validator(schema: Any) -> tuple[jsonschema_rs.Validator, bool]:
    """A validator for ``schema``, and whether one of its patterns needs backtracking.

    Raises:
        SchemaInvalid: the schema is not a valid JSON Schema, or refers outside itself.
    """
    try:
        return _build(schema, jsonschema_rs.RegexOptions()), False
    except jsonschema_rs.ValidationError as linear:
        try:
            backtracking = _build(
                schema, jsonschema_rs.FancyRegexOptions(backtrack_limit=_BACKTRACK_LIMIT)
            )
        except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError) as exc:
            raise SchemaInvalid(_first_line(str(exc))) from None
        if '"regex"' not in str(linear):
            raise SchemaInvalid(_first_line(str(linear))) from None
        return backtracking, True
    except jsonschema_rs.ReferencingError as exc:
        raise SchemaInvalid(_first_line(str(exc))) from None


def needs_backtracking(pattern: str) -> bool:
    """Whether ``pattern`` (ECMA 262) has what a linear-time engine refuses."""
    try:
        _build({"pattern": pattern}, jsonschema_rs.RegexOptions())
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError):
        return True
    return False


def _first_line(text: str) -> str:
    return _cut(text.strip().splitlines()[0] if text.strip() else text)


def _cut(text: str) -> str:
    if len(text) <= _MAX_MESSAGE_CHARS:
        return text
    # Messages quote the value first and say what is wrong last: keep both ends.
    half = _MAX_MESSAGE_CHARS // 2
    return f"{text[:half]} … {text[-half:]}"


def first_error(validator: jsonschema_rs.Validator, arguments: Any) -> str | None:
    """What is wrong with ``arguments`` (the first error found, located), or None."""
    if validator.is_valid(arguments):
        return None
    try:
        validator.validate(arguments)
    except jsonschema_rs.ValidationError as error:
        where = "/".join(str(p) for p in error.instance_path)
        message = _cut(error.message)
        return f"{where}: {message}" if where else message
    return None


_kept: dict[str, jsonschema_rs.Validator] = {}


def worker_ready() -> bool:
    """In a worker process: nothing; importing this module is the start's work."""
    return True


def check_in_worker(schema_text: str, arguments_text: str) -> str | None:
    """In a worker process: what is wrong with the arguments, or None (both as JSON text).

    The schema was compiled once in the service already, so it compiles here.
    """
    validator = _kept.get(schema_text)
    if validator is None:
        if len(_kept) >= _MAX_KEPT:
            _kept.clear()
        try:
            validator = _kept[schema_text] = compile_validator(json.loads(schema_text))[0]
        except SchemaInvalid as exc:
            return f"the tool's own schema is invalid ({exc}); ask an admin"
    return first_error(validator, json.loads(arguments_text))
