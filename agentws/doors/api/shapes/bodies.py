"""The admin API's request bodies, and how a body is checked against one.

:func:`read_shape` takes the parsed JSON object (:func:`agentws.doors.api.calls.json_body`
parsed it, under a size cap) and gives the shape, or raises
:class:`~agentws.core.errors.ValidationError` saying the first thing wrong in
the words the API has always used: ``'name' is required``, ``'name' must
be a str``, ``policy must be one of spine, on_demand, never``. A null is
as if the field were not there.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any, Literal, TypeVar, get_args

import annotated_types
from pydantic import Field, ValidationInfo, WithJsonSchema, field_validator, model_validator
from pydantic import ValidationError as ShapeError

from agentws.core.errors import ValidationError
from agentws.domain.models import (
    Capability,
    DocumentPolicy,
    LinkProtocol,
    Permission,
    VerificationScheme,
)
from agentws.domain.replays import MAX_REPLAY_RATE, MAX_REPLAYS
from agentws.domain.sample_deliveries import SampleKind
from agentws.doors.api.shapes.base import LAX, Names, Shape, choice
from agentws.webhooks.admin import MAX_ALERT_AFTER
from agentws.webhooks.replays import DEFAULT_LIMIT

__all__ = [
    "BulkReplayRequest",
    "ConnectorChange",
    "Decision",
    "EndGrace",
    "LabelChange",
    "NameChange",
    "NewDocument",
    "NewOAuthClient",
    "NewToken",
    "NewWebhook",
    "PermissionChange",
    "PolicyChange",
    "Replay",
    "RotateSecret",
    "RotateUrl",
    "TestEventRequest",
    "TryPrompt",
    "WebhookChanges",
    "read_shape",
]

S = TypeVar("S", bound=Shape)

_WRITE_ONLY: dict[str, Any] = {"writeOnly": True}
_MENTIONS = "its messages may ping a whole channel (@channel, @here...); false: made inert"
_CAPTURE = (
    "while a draft, keep deliveries as samples (202 captured) instead of refusing them; "
    "a webhook created to capture is a draft unless active says otherwise"
)
_ALERT_AFTER = "failed events in a row that post one alert; 0: no alerts"
# The service checks the range (agentws.webhooks.admin); the document says it.
_ALERT_RANGE: dict[str, Any] = {"minimum": 0, "maximum": MAX_ALERT_AFTER}
_ALERTS_CHANNEL = 'where alerts go (a channel reference); "": the webhook\'s own channel'
_PAUSE = "the alert also pauses the webhook (deliveries get 403 until activated)"
_GRACE = "how long the current {} {}: 90s, 30m, 24h, 7d (at most 30d), or 0; default 24h"
# A moment in a body, as documented.
_MOMENT = {"type": "string", "format": "date-time"}

# A redirect URI, as documented (the service checks it).
_Uri = Annotated[str, WithJsonSchema({"type": "string", "maxLength": 2048})]

# What a list field's items must be, in the words of its error.
_LIST_OF = {
    "allow_tools": "must be a list of tool names",
    "disallow_tools": "must be a list of tool names",
    "redirect_uris": "is a list of strings",
}
# The name of the type an error says a field must be.
_KIND = {
    "string_type": "str",
    "int_type": "int",
    "bool_type": "bool",
    "float_type": "int/float",
    "list_type": "list",
    "dict_type": "dict",
}


class NewWebhook(Shape):
    name: str
    channel: str = Field(description="local:NAME, slack:CHANNEL-ID, webhook:CONNECTOR")
    prompt: str
    group: str | None = None
    active: bool | None = Field(None, description="default: true, unless it captures")
    concurrency: int = 4
    verification: Annotated[VerificationScheme, LAX, choice(VerificationScheme)] = (
        VerificationScheme.NONE
    )
    secret: str | None = Field(None, json_schema_extra=_WRITE_ONLY)
    rate_per_min: int = 60
    burst: int | None = None
    max_body_bytes: int | None = Field(
        None,
        description="the largest body accepted, 1 to 2 MiB (default AGENTWS_MAX_BODY_BYTES, 1 MiB)",
    )
    allow_tools: Names = Field(default_factory=list)
    allow_mentions: bool = Field(False, description=_MENTIONS)
    capture: bool = Field(False, description=_CAPTURE)
    alert_after: int = Field(3, description=_ALERT_AFTER, json_schema_extra=_ALERT_RANGE)
    alerts_channel: str | None = Field(None, description=_ALERTS_CHANNEL)
    pause_on_failure: bool = Field(False, description=_PAUSE)


class WebhookChanges(Shape):
    """What changes: the fields given."""

    prompt: str | None = None
    channel: str | None = None
    group: str | None = Field(None, description='a group slug; "" for none')
    active: bool | None = None
    allow_tools: Names = Field(default_factory=list)
    disallow_tools: Names = Field(default_factory=list)
    allow_mentions: bool | None = Field(None, description=_MENTIONS)
    capture: bool | None = Field(None, description=_CAPTURE)
    alert_after: int | None = Field(None, description=_ALERT_AFTER, json_schema_extra=_ALERT_RANGE)
    alerts_channel: str | None = Field(None, description=_ALERTS_CHANNEL)
    pause_on_failure: bool | None = Field(None, description=_PAUSE)


class RotateUrl(Shape):
    grace: str | None = Field(None, description=_GRACE.format("URL", "keeps working"))


class RotateSecret(Shape):
    secret: str = Field(json_schema_extra=_WRITE_ONLY)
    grace: str | None = Field(None, description=_GRACE.format("secret", "still verifies"))


class EndGrace(Shape):
    which: Literal["url", "secret", "both"] = "both"

    @field_validator("which", mode="before")
    @classmethod
    def _known(cls, which: Any) -> Any:
        if isinstance(which, str) and which not in ("url", "secret", "both"):
            raise ValueError(f'"which" must be "url", "secret" or "both", not {which!r}')
        return which


class BulkReplayRequest(Shape):
    """Which failed events to replay, and how: a :class:`~agentws.webhooks.replays.ReplayAsk`
    (the service checks the ranges: :func:`agentws.webhooks.replays.replay_failed`)."""

    since: Annotated[datetime | None, Field(json_schema_extra=_MOMENT)] = Field(
        None, description="received at or after (UTC unless it says)"
    )
    until: Annotated[datetime | None, Field(json_schema_extra=_MOMENT)] = Field(
        None, description="received before"
    )
    error_contains: str | None = Field(None, json_schema_extra={"maxLength": 200})
    rate_per_min: int | None = Field(
        None,
        description="replays a minute at most; default: the webhook's rate",
        json_schema_extra={"minimum": 1, "maximum": MAX_REPLAY_RATE},
    )
    limit: int = Field(DEFAULT_LIMIT, json_schema_extra={"minimum": 1, "maximum": MAX_REPLAYS})
    current_prompt: bool = False
    dry_run: bool = False

    @field_validator("since", "until", mode="before")
    @classmethod
    def _moment(cls, text: Any, info: ValidationInfo) -> Any:
        if not isinstance(text, str):
            return text
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{info.field_name!r} must be an ISO 8601 time") from None
        return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class TestEventRequest(Shape):
    sample: Annotated[SampleKind | None, LAX, choice(SampleKind)] = Field(
        None, description="whose delivery to imitate; default: the webhook's scheme's sender"
    )


class Replay(Shape):
    current_prompt: bool = False


# How long approve/retry wait for the service to run the call before answering, by
# default and at most (the answer then shows it approved or running).
_OUTCOME_WAIT_S = 30.0
_MAX_OUTCOME_WAIT_S = 300


class Decision(Shape):
    reason: str | None = None
    wait_s: float = Field(
        _OUTCOME_WAIT_S,
        ge=0,
        le=_MAX_OUTCOME_WAIT_S,
        description="approve/retry: seconds to wait for the service to run the call before "
        "answering (default 30); the answer shows it approved or running if it has not "
        "finished by then",
    )


class NewToken(Shape):
    name: str
    scope: Annotated[Capability, LAX, choice(Capability)] = Capability.WRITE


class NewOAuthClient(Shape):
    name: str = Field(json_schema_extra={"minLength": 1, "maxLength": 200})
    # Required, as documented; when missing it is an empty list, which the service refuses
    # in its own words (agentws.oauth.operator_clients).
    model_config = Shape.model_config | {
        "json_schema_extra": {"required": ["name", "redirect_uris"]}
    }

    redirect_uris: list[_Uri] = Field(
        default_factory=list,
        description="exact URIs: https, plain http only on loopback (where any port matches), "
        "or an app's own scheme in reverse-domain form (com.example.app:/callback); no user "
        "info, no fragment",
        json_schema_extra={"minItems": 1, "maxItems": 10},
    )
    confidential: bool = Field(
        False, description="issue a client secret (default: a public client, PKCE only)"
    )


class LabelChange(Shape):
    label: Annotated[Capability | None, LAX, choice(Capability, nullable=True)] = Field(
        None, description="null: unlabeled (write)"
    )

    @field_validator("label", mode="before")
    @classmethod
    def _blank_is_none(cls, label: Any) -> Any:
        return label or None


class PermissionChange(Shape):
    permission: Annotated[Permission | None, LAX, choice(Permission, nullable=True)] = Field(
        None, description="null: back to the workspace's, or the capability's default"
    )
    group: str | None = Field(None, description="omitted: for the whole workspace")


class NameChange(Shape):
    name: str = Field(description="the new display name (the slug, in URLs, stays)")


class PolicyChange(Shape):
    policy: Annotated[DocumentPolicy, LAX, choice(DocumentPolicy)] = Field(
        description="spine: always in the agent's context; on_demand: read when needed; "
        "never: kept but never shown to the agent or MCP clients"
    )


class NewDocument(Shape):
    title: str
    body: str
    slug: str | None = None
    mime_type: str = "text/markdown"
    policy: Annotated[DocumentPolicy, LAX, choice(DocumentPolicy)] = DocumentPolicy.ON_DEMAND
    replace: bool = False


class ConnectorChange(Shape):
    active: bool | None = Field(
        None,
        description="false: no group lists its tools and no link connects to it; its "
        "settings, secret, tools and attachments are kept",
    )
    relay_requests: bool | None = Field(
        None,
        description="false: the remote's requests to a caller during a call (elicitation, "
        "sampling, roots) are refused; true: they are passed on, marked as the connector's "
        "(remote MCP connectors only)",
    )
    protocol: LinkProtocol | None = Field(
        None,
        description="the MCP revision its link speaks: auto (a handshake revision when the "
        "remote speaks one, so that it can ask callers mid-call; else 2026-07-28) or a pinned "
        "revision (remote MCP connectors only)",
    )

    model_config = Shape.model_config | {"json_schema_extra": {"minProperties": 1}}

    @model_validator(mode="after")
    def _something(self) -> ConnectorChange:
        if self.active is None and self.relay_requests is None and self.protocol is None:
            raise ValueError(
                "'active', 'relay_requests' or 'protocol' is required: active true to offer "
                "its tools, false to stop; relay_requests false to refuse its remote's "
                "requests to callers; protocol to pin its link's MCP revision"
            )
        return self


class TryPrompt(Shape):
    """Exactly one of sample_id and event_id (an event of this webhook)."""

    sample_id: str | None = None
    event_id: str | None = None
    prompt: str | None = Field(None, description="the candidate; default: the webhook's")


def read_shape(shape: type[S], data: dict[str, Any]) -> S:
    """``data`` (a request's JSON object) as ``shape``.

    Error handling:
        ValidationError saying the first thing wrong with it.
    """
    given = {name: value for name, value in data.items() if value is not None}
    try:
        return shape.model_validate(given)
    except ShapeError as exc:
        raise ValidationError(_say(shape, exc.errors()[0])) from None


def _say(shape: type[Shape], error: Any) -> str:
    kind, loc = error["type"], error["loc"]
    name = str(loc[0]) if loc else ""
    if kind == "value_error":
        return str(error["ctx"]["error"])
    if kind == "missing":
        return f"{name!r} is required"
    if len(loc) > 1 and name in _LIST_OF:
        return f"{name!r} {_LIST_OF[name]}"
    if kind in ("enum", "literal_error"):
        if not isinstance(error["input"], str):
            return f"{name!r} must be a str"
        allowed = ", ".join(str(v) for v in _enum_of(shape, name))
        return f"{name} must be one of {allowed}"
    if kind in ("greater_than_equal", "less_than_equal"):
        low, high = _bounds(shape, name)
        return f"{name!r} must be {low:g} to {high:g}"
    return f"{name!r} must be a {_KIND.get(kind, kind)}"


def _enum_of(shape: type[Shape], name: str) -> list[Any]:
    annotation = shape.model_fields[name].annotation
    for kind in (annotation, *get_args(annotation)):
        if isinstance(kind, type) and issubclass(kind, Enum):
            return [member.value for member in kind]
    return []


def _bounds(shape: type[Shape], name: str) -> tuple[float, float]:
    low, high = float("-inf"), float("inf")
    for rule in shape.model_fields[name].metadata:
        if isinstance(rule, annotated_types.Ge):
            low = float(rule.ge)  # type: ignore[arg-type]
        elif isinstance(rule, annotated_types.Le):
            high = float(rule.le)  # type: ignore[arg-type]
    return low, high
