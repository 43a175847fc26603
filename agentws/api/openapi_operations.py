"""The pieces every operation of the admin API's OpenAPI document is made of.

Its answers (the documented one, and the errors every operation may
answer), its path parameters and the paging parameters of a list;
:mod:`agentws.api.openapi` and :mod:`agentws.api.openapi_changes` build
their operations from them.
"""

from __future__ import annotations

from typing import Any

from .openapi_schemas import ref

__all__ = ["PAGING", "operation", "path_params", "responses", "upstream_operation"]


_ERRORS = {
    "400": "invalid input",
    "401": "no valid credentials",
    "403": "not allowed (a session's unsafe call without its CSRF token)",
    "404": "no such object",
    "409": "conflicts with the current state",
    "503": "the store is unavailable, or the service lacks a setting this needs (its key)",
}


# See agentws.api.calls.MAX_BODY_BYTES and DOCUMENT_BODY_BYTES.
_TOO_LARGE = (
    "the body is larger than the endpoint reads: 256 KiB, or 2 MiB + 64 KiB to add a document "
    "(refused before it is parsed; the connection is closed)"
)


def responses(status: str, schema: str, description: str) -> dict[str, Any]:
    """The documented answer, and every error answer (the error body)."""
    answers: dict[str, Any] = {
        status: {
            "description": description,
            "content": {"application/json": {"schema": ref(schema)}},
        }
    }
    for code, text in _ERRORS.items():
        answers[code] = {
            "description": text,
            "content": {"application/json": {"schema": ref("Error")}},
        }
    return answers


def path_params(*names: str) -> list[dict[str, Any]]:
    """Each of ``names`` as a required string in the path."""
    return [
        {"name": n, "in": "path", "required": True, "schema": {"type": "string"}} for n in names
    ]


#: The paging parameters of a list (see :func:`agentws.api.calls.page_of`).
PAGING = [
    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
]


def operation(
    summary: str,
    response: str,
    *,
    status: str = "200",
    params: list[dict[str, Any]] | None = None,
    body: str | None = None,
    operation_id: str,
) -> dict[str, Any]:
    """One operation: ``response`` (a schema's name) answered with ``status``, and the
    errors; its parameters and its JSON body (a schema's name), if it has them."""
    described: dict[str, Any] = {
        "operationId": operation_id,
        "summary": summary,
        "responses": responses(status, response, summary),
    }
    if params:
        described["parameters"] = params
    if body is not None:
        described["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": ref(body)}},
        }
        described["responses"]["413"] = {
            "description": _TOO_LARGE,
            "content": {"application/json": {"schema": ref("Error")}},
        }
    return described


def upstream_operation(
    summary: str, response: str, *, params: list[dict[str, Any]], operation_id: str
) -> dict[str, Any]:
    """An operation that calls a connector's upstream: also 502 when that fails."""
    described = operation(summary, response, params=params, operation_id=operation_id)
    described["responses"]["502"] = {
        "description": "the upstream is down, refused the credential, or took too long",
        "content": {"application/json": {"schema": ref("Error")}},
    }
    return described
