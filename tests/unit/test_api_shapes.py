"""``agentws.doors.api.shapes``: request bodies read as the API says, and the document made from
them."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from agentws.core.errors import ValidationError
from agentws.domain.models import Capability, DocumentPolicy
from agentws.doors.api.openapi import openapi_document
from agentws.doors.api.shapes import bodies
from agentws.doors.api.shapes.base import Shape
from agentws.doors.api.shapes.bodies import read_shape


@pytest.mark.parametrize(
    ("shape", "data", "says"),
    [
        (bodies.NewWebhook, {"name": 5, "channel": "ops", "prompt": "p"}, "'name' must be a str"),
        (bodies.NewWebhook, {"name": "x"}, "'channel' is required"),
        (bodies.NewWebhook, {"name": "x", "channel": None}, "'channel' is required"),
        (
            bodies.NewWebhook,
            {"name": "x", "channel": "c", "prompt": "p", "allow_tools": [1]},
            "'allow_tools' must be a list of tool names",
        ),
        (bodies.NewWebhook, {"concurrency": True}, "'name' is required"),
        (
            bodies.WebhookChanges,
            {"concurrency": "x", "alert_after": 1.5},
            "'alert_after' must be a int",
        ),
        (
            bodies.PolicyChange,
            {"policy": "always"},
            "policy must be one of spine, on_demand, never",
        ),
        (bodies.PolicyChange, {"policy": 3}, "'policy' must be a str"),
        (bodies.PolicyChange, {}, "'policy' is required"),
        (bodies.ConnectorChange, {"active": "no"}, "'active' must be a bool"),
        (bodies.ConnectorChange, {}, "'active', 'relay_requests' or 'protocol' is required"),
        (bodies.Decision, {"wait_s": 301}, "'wait_s' must be 0 to 300"),
        (bodies.Decision, {"wait_s": True}, "'wait_s' must be a int/float"),
        (bodies.EndGrace, {"which": "all"}, '"which" must be "url", "secret" or "both"'),
        (bodies.EndGrace, {"which": 1}, "'which' must be a str"),
        (bodies.BulkReplayRequest, {"since": "yesterday"}, "'since' must be an ISO 8601 time"),
        (bodies.NewOAuthClient, {"name": "n", "redirect_uris": [3]}, "'redirect_uris' is a list"),
    ],
)
def test_a_wrong_body_is_refused_saying_what_is_wrong(
    shape: type[Shape], data: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        read_shape(shape, data)
    assert says in refused.value.message


def test_a_body_gives_its_values_and_defaults() -> None:
    new = read_shape(bodies.NewDocument, {"title": "T", "body": "b", "slug": None, "x": 1})
    assert (new.slug, new.policy, new.mime_type, new.replace) == (
        None,
        DocumentPolicy.ON_DEMAND,
        "text/markdown",
        False,
    )
    assert read_shape(bodies.NewToken, {"name": "n", "scope": "read"}).scope is Capability.READ
    assert read_shape(bodies.LabelChange, {"label": ""}).label is None
    assert read_shape(bodies.Decision, {"wait_s": 5}).wait_s == 5.0
    since = read_shape(bodies.BulkReplayRequest, {"since": "2026-01-02T03:04:05"}).since
    assert since is not None and since.utcoffset() is not None


def _titles(value: Any) -> Any:
    if isinstance(value, dict):
        if isinstance(value.get("title"), str):
            yield value["title"]
        for inner in value.values():
            yield from _titles(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _titles(inner)


def test_the_document_refers_only_to_its_own_schemas() -> None:
    document = openapi_document("https://agentws.example/")
    schemas = document["components"]["schemas"]
    text = json.dumps(document)
    referred = set(re.findall(r'"#/components/schemas/(\w+)"', text))
    assert referred <= set(schemas)
    assert not [name for name in schemas if name.startswith("_")]
    # Written for OpenAPI readers: no generated titles, nullable as a list of types.
    assert not list(_titles(schemas))
    webhook = schemas["Webhook"]
    assert "prompt" in webhook["required"] and webhook["properties"]["group"] == {
        "type": ["string", "null"]
    }
    # A body's optional field is documented without null: a null is as if it were absent.
    assert schemas["WebhookChanges"]["properties"]["prompt"] == {"type": "string"}
    assert schemas["NewWebhook"]["required"] == ["name", "channel", "prompt"]
    operation = document["paths"]["/workspaces/{workspace}/webhooks"]["post"]
    assert set(operation["responses"]) == {"201", "400", "401", "403", "404", "409", "413", "503"}
    assert document["servers"] == [{"url": "https://agentws.example/api/v1"}]
