"""What the webhook door checks in a delivery's body: its media type, that it is
a JSON object (or a form carrying one), and its signature.

:func:`check_delivery` runs these checks, in the order the door's table
lists them (:mod:`agentws.doors.webhooks.ingest`), on a body read whole, and
refuses with the door's :class:`~agentws.http.asgi.HttpRefusal`. The webhook
door runs them on a delivery to a webhook's URL; test events
(:mod:`agentws.doors.webhooks.sample_sends`) through :meth:`HookDoor.take
<agentws.doors.webhooks.ingest.HookDoor.take>`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

from agentws.core.errors import ConfigError, StoreError
from agentws.domain.form_bodies import FORM_MEDIA_TYPE, FormError, form_event
from agentws.domain.models import VerificationScheme, Webhook
from agentws.domain.signatures import SignatureError, Signed, verify
from agentws.http.asgi import HttpRefusal
from agentws.webhooks.intake import Intake

__all__ = ["STORE_RETRY_S", "Checked", "check_delivery"]

log = logging.getLogger("agentws.webhooks")

#: The event parsed, the event as stored, what the signature vouches for, and
#: the generation of the secret that verified it (None: no secret checked).
Checked = tuple[Any, bytes, Signed, int | None]

#: Retry-After for a store that is down: soon, but not in a tight loop.
STORE_RETRY_S = 5

# A \ud800-\udfff escape: only then can a parsed body hold a lone surrogate,
# which json accepts and no UTF-8 encoder (nor the agent's run) does.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# NaN and Infinity are not JSON.
_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def check_delivery(
    intake: Intake, webhook: Webhook, body: bytes, headers: dict[str, str]
) -> Checked:
    """The event parsed, the event as stored, what the signature vouches for, and the
    generation of the secret that verified it (None: no secret checked).

    The signature is checked on the body as received; the event stored is
    that body for JSON, the form's event (:mod:`agentws.domain.form_bodies`)
    for a form. While a rotated secret is in its grace, either secret
    verifies (:mod:`agentws.webhooks.rotation`).
    """
    media = _media_type(headers.get("content-type"))
    if _is_json(media):
        event_body = body
        try:
            # json.loads of bytes, with a decoder made once rather than per call.
            payload = _DECODER.decode(body.decode(json.detect_encoding(body), "surrogatepass"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise HttpRefusal(400, "invalid_json", "the body is not valid JSON") from None
    elif media == FORM_MEDIA_TYPE:
        try:
            payload, event_body = form_event(body, _DECODER.decode)
        except FormError as exc:
            raise HttpRefusal(exc.status, exc.code, exc.message) from None
    else:
        raise HttpRefusal(
            415,
            "unsupported_media_type",
            "send the event as Content-Type: application/json (or a form, "
            "application/x-www-form-urlencoded)",
        )
    if not isinstance(payload, dict):
        raise HttpRefusal(
            422, "not_an_object", f"the body must be a JSON object, not {_kind(payload)}"
        )
    if _SURROGATE_ESCAPE.search(event_body) and not _encodable(payload):
        raise HttpRefusal(
            400,
            "invalid_json",
            "the body has an unpaired UTF-16 surrogate escape (\\ud800-\\udfff), which is not text",
        )
    try:
        signed, generation = _verified(intake, webhook, body, headers)
    except SignatureError as exc:
        raise HttpRefusal(
            401, "invalid_signature", f"signature check failed: {exc.reason}"
        ) from None
    except (ConfigError, StoreError) as exc:
        log.error("cannot check the signature of webhook %s: %s", webhook.id, exc)
        raise HttpRefusal(
            503,
            "verification_unavailable",
            "the webhook's secret cannot be read; retry later",
            {"Retry-After": str(STORE_RETRY_S)},
        ) from None
    return payload, event_body, signed, generation


def _verified(
    intake: Intake, webhook: Webhook, body: bytes, headers: dict[str, str]
) -> tuple[Signed, int | None]:
    """What the signature vouches for, and the generation of the secret that verified it.

    Error handling:
        :class:`SignatureError` with the current secret's reason when neither
        verifies; ConfigError or StoreError when a secret cannot be unsealed.
    """
    scheme = webhook.verification
    if scheme is VerificationScheme.NONE:
        return verify(scheme, None, body, headers, now=time.time()), None
    try:
        signed = verify(scheme, intake.secret(webhook), body, headers, now=time.time())
        return signed, webhook.secret_generation
    except SignatureError:
        previous = intake.previous_secret(webhook)
        if previous is None:
            raise
        try:
            signed = verify(scheme, previous, body, headers, now=time.time())
        except SignatureError:
            pass
        else:
            return signed, webhook.secret_generation - 1
        raise


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def _is_json(media: str) -> bool:
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _encodable(payload: Any) -> bool:
    try:
        json.dumps(payload, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"
