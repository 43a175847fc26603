"""The schemas and operations of the admin API's OpenAPI document, made from the shapes.

:func:`components` turns the shapes (:mod:`agentws.doors.api.shapes`) into the
document's ``components/schemas`` with pydantic's JSON Schema generator,
written the way OpenAPI 3.1 readers expect: no generated titles, a
nullable field as ``"type": [..., "null"]``, and the shapes a shape is
made of inline when they are private (``_Skill``). :func:`operation`
makes one operation from its row in the path table
(:mod:`agentws.doors.api.openapi`): its answer, the errors every operation may
answer, its parameters and its body.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema

__all__ = ["Operation", "components", "operation"]

_REF = "#/components/schemas/{model}"

_ERRORS = {
    "400": "invalid input",
    "401": "no valid credentials",
    "403": "not allowed (a session's unsafe call without its CSRF token)",
    "404": "no such object",
    "409": "conflicts with the current state",
    "503": "the store is unavailable, or the service lacks a setting this needs (its key)",
}

# See agentws.doors.api.calls.MAX_BODY_BYTES and DOCUMENT_BODY_BYTES.
_TOO_LARGE = (
    "the body is larger than the endpoint reads: 256 KiB, or 2 MiB + 64 KiB to add a document "
    "(refused before it is parsed; the connection is closed)"
)


class _Schemas(GenerateJsonSchema):
    """pydantic's JSON Schema, as the document writes it."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        described = super().model_schema(schema)
        described.pop("title", None)
        return described

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        described = super().default_schema(schema)
        if described.get("default", 0) is None:
            del described["default"]
        return described

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        described = super().dict_schema(schema)
        if described.get("additionalProperties") is True:  # what an object allows anyway
            del described["additionalProperties"]
        return described

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        kind = inner.get("type")
        if isinstance(kind, str):
            return {**inner, "type": [kind, "null"]}
        return {"oneOf": [inner, {"type": "null"}]}


class _BodySchemas(_Schemas):
    """A request body's fields: a null is as if the field were not there, so not documented."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF.format(model=name)}


def _generated(
    shapes: list[type[BaseModel]], generator: type[GenerateJsonSchema]
) -> dict[str, Any]:
    _, document = models_json_schema(
        [(shape, "validation") for shape in shapes],
        ref_template=_REF,
        schema_generator=generator,
    )
    defs: dict[str, Any] = document.get("$defs", {})
    return defs


def _inlined(value: Any, parts: dict[str, Any]) -> Any:
    """``value`` with each reference to one of ``parts`` replaced by the part itself."""
    if isinstance(value, dict):
        target = value.get("$ref", "")
        name = target.rsplit("/", 1)[-1]
        if name in parts and len(value) == 1:
            return _inlined(parts[name], parts)
        return {k: _inlined(v, parts) for k, v in value.items()}
    if isinstance(value, list):
        return [_inlined(v, parts) for v in value]
    return value


def components(answers: list[type[BaseModel]], bodies: list[type[BaseModel]]) -> dict[str, Any]:
    """The document's schemas: one per public shape given or used by one, by its name
    (a private shape, ``_Skill``, is written where it is used)."""
    defs = {**_generated(answers, _Schemas), **_generated(bodies, _BodySchemas)}
    parts = {name: schema for name, schema in defs.items() if name.startswith("_")}
    named = {name: _inlined(defs[name], parts) for name in sorted(defs) if name not in parts}
    # A field's enum may leave its own schema behind, which nothing refers to.
    used = {shape.__name__ for shape in [*answers, *bodies]} | set(
        re.findall(r'"#/components/schemas/(\w+)"', json.dumps(named))
    )
    return {name: schema for name, schema in named.items() if name in used}


def query_params(shape: type[BaseModel]) -> list[dict[str, Any]]:
    """``shape``'s fields as query parameters (a field's description is the parameter's)."""
    properties = shape.model_json_schema(schema_generator=_BodySchemas)["properties"]
    params = []
    for name, schema in properties.items():
        param: dict[str, Any] = {"name": name, "in": "query"}
        if "description" in schema:
            param["description"] = schema.pop("description")
        params.append({**param, "schema": schema})
    return params


@attrs.frozen
class Operation:
    """A row of the path table: one operation of the document."""

    method: str
    path: str
    operation_id: str
    summary: str
    #: The answer's shape, and its status.
    answer: type[BaseModel]
    status: str = "200"
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    #: Answered too when the upstream (the model, a connector's service) fails: why.
    bad_gateway: str | None = None


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref("Error")}}}


def operation(row: Operation) -> dict[str, Any]:
    """The document's operation for ``row``: its answer and the errors, its parameters
    (the path's, then the query's) and its JSON body."""
    answers: dict[str, Any] = {
        row.status: {
            "description": row.summary,
            "content": {"application/json": {"schema": _ref(row.answer.__name__)}},
        },
        **{code: _error(text) for code, text in _ERRORS.items()},
    }
    described: dict[str, Any] = {
        "operationId": row.operation_id,
        "summary": row.summary,
        "responses": answers,
    }
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"\{(\w+)\}", row.path)
    ]
    if row.query is not None:
        params += query_params(row.query)
    if params:
        described["parameters"] = params
    if row.body is not None:
        described["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(row.body.__name__)}},
        }
        answers["413"] = _error(_TOO_LARGE)
    if row.bad_gateway is not None:
        answers["502"] = _error(row.bad_gateway)
    return described
