"""The event a form-encoded webhook delivery carries (``application/x-www-form-urlencoded``).

Some senders post forms instead of JSON: GitHub's "application/x-www-form-
urlencoded" content type and Slack's interactivity requests put the event's
JSON in one field, ``payload``; others (Slack slash commands, Twilio) send
the event's fields themselves. The signature, where there is one, covers
the raw body as sent, so it is checked on that; the event stored and run is
JSON either way:

- a form with a ``payload`` field: that field's JSON, which must be an
  object (the other fields, if any, are the sender's framing and dropped);
- any other form: an object of its fields, each a string, or a list of
  strings for a field that comes more than once.

A body that is a JSON object or array is not a form, whatever its content
type says: ``curl -d '{"a":1}'`` sends JSON as a form (curl's default
content type). It is refused with a hint to send it as
``Content-Type: application/json``, rather than read as a form's fields.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

__all__ = ["FORM_MEDIA_TYPE", "FormError", "form_event"]

FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"
# More fields than this is not a webhook's form (and parsing it is work for nothing).
_MAX_FIELDS = 1000


class FormError(ValueError):
    """A form body that makes no event: ``code`` and ``message`` for the sender."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def form_event(body: bytes, decode: Any = json.loads) -> tuple[dict[str, Any], bytes]:
    """The event object of a form body, and that event as the JSON bytes to store.

    Args:
        body: the body as received.
        decode: parses a JSON text (the door's strict decoder: no NaN).

    Raises:
        FormError: 400 ``invalid_form`` (not UTF-8 or not a form),
            400 ``invalid_json`` (a ``payload`` that is not JSON),
            422 ``not_an_object`` (a ``payload`` that is not an object).
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormError(400, "invalid_form", f"the body is not a URL-encoded form: {exc}") from None
    if _is_json(text, decode):
        raise FormError(
            400,
            "invalid_form",
            "the body is JSON, sent as a form (Content-Type: application/x-www-form-urlencoded, "
            "what curl -d sends unless told otherwise): send it with Content-Type: "
            "application/json (curl -H 'Content-Type: application/json')",
        )
    try:
        fields = parse_qs(
            text,
            keep_blank_values=True,
            strict_parsing=bool(text),
            encoding="utf-8",
            errors="strict",
            max_num_fields=_MAX_FIELDS,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise FormError(400, "invalid_form", f"the body is not a URL-encoded form: {exc}") from None
    if "payload" in fields:
        values = fields["payload"]
        if len(values) != 1:
            raise FormError(400, "invalid_form", "the form has more than one payload field")
        try:
            event = decode(values[0])
        except (ValueError, RecursionError):
            raise FormError(
                400, "invalid_json", "the form's payload field is not valid JSON"
            ) from None
        if not isinstance(event, dict):
            raise FormError(
                422, "not_an_object", "the form's payload field must hold a JSON object"
            )
        return event, values[0].encode("utf-8")
    event = {name: values[0] if len(values) == 1 else values for name, values in fields.items()}
    return event, json.dumps(event, ensure_ascii=False).encode("utf-8")


def _is_json(text: str, decode: Any) -> bool:
    """Whether ``text`` is a JSON object or array (a form never starts with a brace)."""
    if not text.lstrip().startswith(("{", "[")):
        return False
    try:
        decode(text)
    except (ValueError, RecursionError):
        return False
    return True
