"""Argument checks: the quick check of flat schemas never lets through what the full one refuses."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from agentws.tools.builtins import BUILTINS, GET_APPROVAL
from agentws.tools.validation import _quick_check, argument_error

SEARCH = BUILTINS["search_context"].spec.input_schema
READ = BUILTINS["read_context_document"].spec.input_schema
FLAGS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "on": {"type": "boolean"},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1.5},
        "name": {"type": "string"},
    },
}

ARGUMENTS: list[Any] = [
    {},
    {"query": "x"},
    {"query": ""},
    {"query": "x" * 1000},
    {"query": "x" * 1001},
    {"query": "é" * 1000},
    {"query": 5},
    {"query": None},
    {"query": "x", "limit": 1},
    {"query": "x", "limit": 20},
    {"query": "x", "limit": 0},
    {"query": "x", "limit": 21},
    {"query": "x", "limit": 5.0},
    {"query": "x", "limit": 5.5},
    {"query": "x", "limit": True},
    {"query": "x", "limit": "5"},
    {"query": "x", "other": 1},
    {"uri": "agentws://a/b"},
    {"id": "doc_1", "offset": 0, "length": 100_000},
    {"id": "doc_1", "offset": -1},
    {"id": "doc_1", "length": 100_001},
    {"approval_id": "apr_1"},
    {"approval_id": ""},
    {"on": True, "ratio": 1.5, "name": "n", "more": [1]},
    {"on": 1},
    {"ratio": 2},
    {"ratio": False},
    {"ratio": 0.5, "name": ["n"]},
]


@pytest.mark.parametrize("schema", [SEARCH, READ, GET_APPROVAL.input_schema, FLAGS])
def test_the_built_in_schemas_and_flat_ones_have_a_quick_check(schema: dict[str, Any]) -> None:
    assert _quick_check(schema) is not None


@pytest.mark.parametrize("schema", [SEARCH, READ, GET_APPROVAL.input_schema, FLAGS])
@pytest.mark.parametrize("arguments", ARGUMENTS)
def test_the_answer_is_the_full_validators(schema: dict[str, Any], arguments: Any) -> None:
    full = jsonschema.Draft202012Validator(schema)
    quick = _quick_check(schema)
    assert quick is not None
    valid = full.is_valid(arguments)
    if quick(arguments):
        assert valid, "the quick check passed arguments the schema refuses"
    assert (argument_error(schema, arguments) is None) == valid
    # The same answer for a copy of the schema (found by its text, not its identity).
    assert (argument_error(dict(schema), arguments) is None) == valid


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "^a"}}},
        {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
        {"type": "object", "properties": {"a": {"enum": [1, 2]}}},
        {"type": "object", "properties": {"a": {}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
        {"type": "object", "properties": {"a": {"type": "string", "minimum": 1}}},
        {"type": "object", "properties": {"a": {"type": "integer", "maximum": "9"}}},
    ],
)
def test_schemas_beyond_flat_values_take_the_full_check(schema: dict[str, Any]) -> None:
    assert _quick_check(schema) is None


def test_a_rich_schema_is_still_checked_in_full() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^a"}}}
    assert argument_error(schema, {"a": "abc"}) is None
    assert argument_error(schema, {"a": "b"}) == 'a: "b" does not match "^a"'
