"""The one error body: agentws's shape for every door, RFC 6749's for the OAuth door."""

from __future__ import annotations

from agentws.core.errors import NotFoundError, error_body


def test_every_door_answers_code_and_message() -> None:
    error = NotFoundError("no webhook at this URL")
    assert error_body(error.code, error.message) == {
        "error": {"code": "not_found", "message": "no webhook at this URL"}
    }


def test_the_oauth_door_answers_in_rfc_6749s_shape() -> None:
    assert error_body("invalid_target", "not that endpoint", oauth=True) == {
        "error": "invalid_target",
        "error_description": "not that endpoint",
    }
