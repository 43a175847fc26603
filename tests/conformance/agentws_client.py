"""agentws as the MCP client the conformance suite's ``client`` scenarios test.

Run by the suite (``conformance client --command '.venv/bin/python
tests/conformance/agentws_client.py'``) with the scenario's server URL as the
last argument, ``MCP_CONFORMANCE_SCENARIO`` naming the scenario,
``MCP_CONFORMANCE_CONTEXT`` its JSON context (a pre-registered client, a
private key, tool calls to make) and ``MCP_CONFORMANCE_PROTOCOL_VERSION`` the
revision its server speaks.

What it drives is agentws's own connector code, as a link of the running
service uses it: the transports and their URL guard (loopback allow-listed,
plain HTTP refused elsewhere for OAuth), answers bounded, the link's session
and relay (the remote's questions reach a caller channel, here one that
accepts each form with its defaults), :func:`~agentws.connectors.remote_calls.call_remote_tool`,
and the OAuth client of :mod:`agentws.connectors.upstream_auth` with an
in-memory grant. The one part played here is the person: the authorization
URL is followed headlessly, as the suite's authorization server allows (it
redirects back at once), and its ``code``, ``state`` and ``iss`` handed back.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import httpx2
import mcp_types as types
import trio
from mcp.client.auth import AuthorizationCodeResult
from mcp.client.session import ClientSession
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentws.connectors.answer_bounds import CappedTransport
from agentws.connectors.link_sessions import LinkSession, WatchedStream
from agentws.connectors.modern_link import DeclaringStream, is_modern
from agentws.connectors.relay import CallerChannel, RemoteRelay, calling
from agentws.connectors.remote_calls import call_remote_tool
from agentws.connectors.remote_mcp import list_all_tools, negotiate, open_transport
from agentws.connectors.upstream_auth import (
    HttpsOnly,
    MemoryGrant,
    UpstreamAuth,
    upstream_auth,
)
from agentws.connectors.url_guard import GuardedTransport
from agentws.domain.allowlist import Allowlist

log = logging.getLogger("agentws.conformance-client")

#: Loopback, where the suite serves its scenarios.
ALLOWLIST = Allowlist.parse("127.0.0.1/32,::1/128,localhost")
#: agentws's callback, under a base URL of its own (the suite redirects to it
#: without anyone fetching it).
REDIRECT_URI = "https://agentws.conformance.invalid/oauth/connectors/callback"
#: Where the client's metadata document is: the address the suite's
#: ``auth/basic-cimd`` expects a client to use as its id.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
TIMEOUT_S = 20.0
MAX_ANSWER_BYTES = 4 * 1024 * 1024


def _context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return json.loads(raw) if raw else {}


def _protocol(scenario: str) -> str:
    """The revision to pin the link at: the suite's leg's, so no probe reaches a mock
    that answers one era only."""
    if scenario == "json-schema-ref-no-deref":
        return "2025-11-25"  # its mock speaks the handshake whatever the leg says
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    if version is None:
        return "auto"
    return "2026-07-28" if version in MODERN_PROTOCOL_VERSIONS else "2025-11-25"


def _defaults(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        name: field["default"]
        for name, field in schema.get("properties", {}).items()
        if "default" in field
    }


@attrs.define
class Person:
    """The caller the remote's questions reach: accepts each form with its defaults."""

    confirm: bool = False

    @property
    def progress(self) -> Any:
        return None

    @property
    def asks_back(self) -> bool:
        return True

    @property
    def log(self) -> Any:
        return None

    @property
    def elicit(self) -> Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult]]:
        async def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
            if self.confirm:
                return types.ElicitResult(action="accept", content={"confirmed": True})
            schema = (
                params.requested_schema if isinstance(params, types.ElicitRequestFormParams) else {}
            )
            return types.ElicitResult(action="accept", content=_defaults(schema))

        return answer

    @property
    def sample(self) -> Callable[[types.CreateMessageRequestParams], Awaitable[Any]]:
        async def answer(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
            text = types.TextContent(type="text", text="")
            return types.CreateMessageResult(role="assistant", content=text, model="agentws")

        return answer

    @property
    def roots(self) -> Callable[[], Awaitable[types.ListRootsResult]]:
        async def answer() -> types.ListRootsResult:
            return types.ListRootsResult(roots=[])

        return answer


@attrs.define
class HeadlessAuthorizer:
    """Follows the authorization URL without a browser; the suite's server redirects back."""

    http: httpx2.AsyncClient
    result: AuthorizationCodeResult | None = None

    async def redirect(self, authorization_url: str) -> None:
        response = await self.http.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            raise RuntimeError(f"the authorization server answered {response.status_code}")
        query = parse_qs(urlsplit(location).query)
        if "code" not in query:
            raise RuntimeError(f"no code in the redirect: {location}")
        self.result = AuthorizationCodeResult(
            code=query["code"][0],
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )

    async def callback(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise RuntimeError("no redirect was followed")
        result, self.result = self.result, None
        return result


def _auth_settings(scenario: str, context: dict[str, Any]) -> tuple[UpstreamAuth, str | None]:
    """The connector's auth mode for ``scenario``, and its secret."""
    if scenario == "auth/client-credentials-jwt":
        settings = UpstreamAuth(
            mode="client_credentials",
            client_id=context["client_id"],
            client_auth="private_key_jwt",
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
        return settings, context["private_key_pem"]
    if scenario == "auth/client-credentials-basic":
        settings = UpstreamAuth(
            mode="client_credentials",
            client_id=context["client_id"],
            client_auth="client_secret_basic",
        )
        return settings, context["client_secret"]
    if scenario.startswith("auth/"):
        secret = context.get("client_secret")
        return UpstreamAuth(mode="oauth", client_id=context.get("client_id")), secret
    return UpstreamAuth(), None


def _stub_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    by_type = {
        "string": "x",
        "integer": 0,
        "number": 0,
        "boolean": False,
        "object": {},
        "array": [],
    }
    properties = schema.get("properties", {})
    return {
        name: by_type.get(properties.get(name, {}).get("type"), "x")
        for name in schema.get("required", [])
    }


@attrs.define
class Link:
    """One initialized session of agentws's link code, and how to call over it."""

    session: ClientSession
    in_flight: list[CallerChannel]
    person: Person

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        with calling(self.in_flight, self.person):
            return await call_remote_tool(
                self.session, name, arguments, channel=self.person, progress=None
            )

    async def tools(self) -> list[types.Tool]:
        return await list_all_tools(self.session)


async def _scenario(scenario: str, link: Link, context: dict[str, Any]) -> None:
    """What the scenario wants a client to do once connected."""
    tools = await link.tools()
    names = {tool.name for tool in tools}
    if scenario in ("tools_call", "request-metadata"):
        await link.call("add_numbers", {"a": 5, "b": 3})
    elif scenario == "sse-retry":
        await link.call("test_reconnection", {})
    elif scenario == "elicitation-sep1034-client-defaults":
        await link.call("test_client_elicitation_defaults", {})
    elif scenario == "json-schema-2020-12-preservation":
        focal = next(tool for tool in tools if tool.name == "json_schema_2020_12_tool")
        await link.call("json_schema_echo", {"schema": focal.input_schema})
    elif scenario == "http-standard-headers":
        if tools:
            await link.call(tools[0].name, _stub_arguments(tools[0].input_schema))
        resources = await link.session.list_resources()
        if resources.resources:
            await link.session.read_resource(resources.resources[0].uri)
        prompts = await link.session.list_prompts()
        if prompts.prompts:
            await link.session.get_prompt(prompts.prompts[0].name)
    elif scenario == "http-invalid-tool-headers":
        for tool in tools:
            await _tolerated(link.call(tool.name, _stub_arguments(tool.input_schema)))
    elif scenario == "http-custom-headers":
        for call in context.get("toolCalls", []):
            if call["name"] in names:
                await _tolerated(link.call(call["name"], call.get("arguments") or {}))
    elif scenario == "sep-2322-client-request-state":
        link.person.confirm = True
        for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state"):
            await link.call(name, {})
        await link.call("test_mrtr_no_result_type", {})
    elif scenario.startswith("auth/") and tools:
        await _tolerated(link.call(tools[0].name, {}))


async def _tolerated(call: Awaitable[Any]) -> None:
    # The scenario judges what was sent; one call's failure is its business, not the run's.
    try:
        await call
    except Exception:
        log.exception("a call failed")


async def run(url: str, scenario: str) -> None:
    context = _context()
    settings, secret = _auth_settings(scenario, context)
    guard = GuardedTransport(ALLOWLIST)
    transport = CappedTransport(HttpsOnly(guard, ALLOWLIST), MAX_ANSWER_BYTES)
    async with httpx2.AsyncClient(transport=transport, timeout=TIMEOUT_S) as person_http:
        auth = upstream_auth(
            url,
            settings,
            MemoryGrant(),
            secret=secret,
            redirect_uri=REDIRECT_URI,
            client_metadata_url=CLIENT_METADATA_URL,
            authorizer=HeadlessAuthorizer(person_http),
        )
        in_flight: list[CallerChannel] = []
        relay = RemoteRelay("conformance", in_flight, answer_s=TIMEOUT_S)
        async with (
            open_transport(
                "streamable_http",
                url,
                {},
                transport,
                timeout_s=TIMEOUT_S,
                stream_read_timeout_s=TIMEOUT_S,
                auth=auth,
            ) as (read, write),
            LinkSession(
                watched := WatchedStream(read),
                DeclaringStream(write),
                **relay.session_callbacks(),
            ) as session,
        ):
            await negotiate(session, "streamable_http", _protocol(scenario))
            watched.complete_by_default = is_modern(session)
            await _scenario(scenario, Link(session, in_flight, Person()), context)


def main() -> None:
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    if len(sys.argv) < 2:
        sys.exit(f"usage: {sys.argv[0]} SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "auth/metadata-default")
    trio.run(run, sys.argv[-1], scenario)


if __name__ == "__main__":
    main()
