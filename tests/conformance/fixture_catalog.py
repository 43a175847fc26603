"""The fixture server's resources, resource template and prompts, as the suite reads them.

The conformance suite's ``resources-read-*``, ``resources-templates-read`` and
``prompts-get-*`` scenarios read resources of fixed URIs (``test://static-text``,
``test://static-binary``, ``test://template/{id}/data``) and get prompts of
fixed names (``test_simple_prompt``...), each following the suite's own
"Server Implementation Requirements". The prompt table also holds the
2026-07-28 prompt that asks its client first (:mod:`tests.conformance.fixture_mrtr`)
and the one ``test_trigger_prompt_change`` adds and removes
(:mod:`tests.conformance.fixture_changes`).
"""

from __future__ import annotations

import base64
import io
import re
import wave
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from tests.conformance.fixture_mrtr import MRTR_PROMPT, mrtr_prompt

__all__ = [
    "DYNAMIC_PROMPT",
    "PNG",
    "PROMPTS",
    "WAV",
    "list_resource_templates",
    "list_resources",
    "read_resource",
]

Context = ServerRequestContext[Any, Any]
PromptAnswer = types.GetPromptResult | types.InputRequiredResult
PromptHandler = Callable[[Context, types.GetPromptRequestParams], Awaitable[PromptAnswer]]


def _png_pixel() -> str:
    """A 1x1 red PNG, base64."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = (1).to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode()


PNG = _png_pixel()


def _wav_silence() -> str:
    """A tenth of a second of 8 kHz mono silence, base64."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(1)
        wav.setframerate(8000)
        wav.writeframes(b"\x80" * 800)
    return base64.b64encode(out.getvalue()).decode()


WAV = _wav_silence()

# --- resources ---------------------------------------------------------------------

STATIC_TEXT = "This is the content of the static text resource."
TEMPLATE = "test://template/{id}/data"
# What the template's URIs look like: the id is one path segment.
_TEMPLATE_URI = re.compile(r"test://template/(?P<id>[^/]+)/data")
# uri -> (name, description, MIME type, contents)
_RESOURCES: dict[
    str, tuple[str, str, str, types.TextResourceContents | types.BlobResourceContents]
] = {
    "test://static-text": (
        "static-text",
        "A static text resource",
        "text/plain",
        types.TextResourceContents(
            uri="test://static-text", mime_type="text/plain", text=STATIC_TEXT
        ),
    ),
    "test://static-binary": (
        "static-binary",
        "A static binary resource (a PNG image)",
        "image/png",
        types.BlobResourceContents(uri="test://static-binary", mime_type="image/png", blob=PNG),
    ),
}


async def list_resources(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    """``resources/list``: the direct resources, not the template."""
    return types.ListResourcesResult(
        resources=[
            types.Resource(uri=uri, name=name, description=about, mime_type=mime_type)
            for uri, (name, about, mime_type, _) in _RESOURCES.items()
        ]
    )


async def list_resource_templates(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    """``resources/templates/list``: the one template."""
    return types.ListResourceTemplatesResult(
        resource_templates=[
            types.ResourceTemplate(
                uri_template=TEMPLATE,
                name="template-data",
                description="JSON data for the id in the URI",
                mime_type="application/json",
            )
        ]
    )


async def read_resource(
    ctx: Context, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    """``resources/read`` of a direct resource or of a URI of the template."""
    if params.uri in _RESOURCES:
        return types.ReadResourceResult(contents=[_RESOURCES[params.uri][3]])
    if match := _TEMPLATE_URI.fullmatch(params.uri):
        key = match["id"]
        data = f'{{"id":"{key}","templateTest":true,"data":"Data for ID: {key}"}}'
        contents = types.TextResourceContents(
            uri=params.uri, mime_type="application/json", text=data
        )
        return types.ReadResourceResult(contents=[contents])
    # SEP-2164: an unknown resource is invalid params.
    raise MCPError(types.INVALID_PARAMS, f"Resource not found: {params.uri}", {"uri": params.uri})


# --- prompts -----------------------------------------------------------------------


def _user(content: types.ContentBlock) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=content)


def _said(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _answer(*messages: types.PromptMessage) -> types.GetPromptResult:
    return types.GetPromptResult(messages=list(messages))


def _arguments(params: types.GetPromptRequestParams, *names: str) -> list[str]:
    given = params.arguments or {}
    if missing := [name for name in names if name not in given]:
        raise MCPError(types.INVALID_PARAMS, f"missing prompt arguments: {missing}")
    return [given[name] for name in names]


async def _simple(ctx: Context, params: types.GetPromptRequestParams) -> PromptAnswer:
    return _answer(_user(_said("This is a simple prompt for testing.")))


async def _with_arguments(ctx: Context, params: types.GetPromptRequestParams) -> PromptAnswer:
    arg1, arg2 = _arguments(params, "arg1", "arg2")
    return _answer(_user(_said(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")))


async def _with_resource(ctx: Context, params: types.GetPromptRequestParams) -> PromptAnswer:
    (uri,) = _arguments(params, "resourceUri")
    resource = types.TextResourceContents(
        uri=uri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return _answer(
        _user(types.EmbeddedResource(type="resource", resource=resource)),
        _user(_said("Please process the embedded resource above.")),
    )


async def _with_image(ctx: Context, params: types.GetPromptRequestParams) -> PromptAnswer:
    return _answer(
        _user(types.ImageContent(type="image", data=PNG, mime_type="image/png")),
        _user(_said("Please analyze the image above.")),
    )


async def _dynamic(ctx: Context, params: types.GetPromptRequestParams) -> PromptAnswer:
    return _answer(_user(_said("This prompt comes and goes with test_trigger_prompt_change.")))


def _required(**arguments: str) -> list[types.PromptArgument]:
    return [
        types.PromptArgument(name=name, description=about, required=True)
        for name, about in arguments.items()
    ]


#: The prompt ``test_trigger_prompt_change`` adds and removes.
DYNAMIC_PROMPT = "test_dynamic_prompt"
#: name -> (description, arguments, handler)
PROMPTS: dict[str, tuple[str, list[types.PromptArgument], PromptHandler]] = {
    "test_simple_prompt": ("A simple prompt without arguments", [], _simple),
    "test_prompt_with_arguments": (
        "A prompt with two required arguments",
        _required(arg1="First test argument", arg2="Second test argument"),
        _with_arguments,
    ),
    "test_prompt_with_embedded_resource": (
        "A prompt embedding the resource it is given",
        _required(resourceUri="URI of the resource to embed"),
        _with_resource,
    ),
    "test_prompt_with_image": ("A prompt with an image", [], _with_image),
    MRTR_PROMPT: ("Asks for its context first", [], mrtr_prompt),
    DYNAMIC_PROMPT: ("Offered or not, as test_trigger_prompt_change toggles it", [], _dynamic),
}
