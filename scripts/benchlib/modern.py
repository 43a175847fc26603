"""The 2026-07-28 row of ``scripts/bench mcp``: its stateless client and its lines in the report.

The stateless revision has no ``initialize`` and no session: every POST is
self-contained. :class:`StatelessClient` speaks it for the load generator
(:mod:`benchlib.load` picks it for a job with ``"era": "2026-07-28"``): it
has the ``StreamableSession`` calls the workers use, and each call posts one
JSON-RPC request with the revision's headers (``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name`` for a named method) and its ``_meta``
(protocol version, client capabilities, client info), names and encodings
taken from the ``mcp`` SDK. A result that is not ``resultType: "complete"``
(an ``input_required`` asking the client something) fails the call.

The row compares agentws with the SDK's ``MCPServer`` started with
``streamable_http_app(stateless_http=True)``, whose session manager hands
any request naming a stateless revision to the SDK's single-exchange
handler, under the same closed-loop load and rounds as the 2025-11-25 row.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    encode_header_value,
)
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)
from mcp_types.version import LATEST_MODERN_VERSION

from benchlib.mcp_client import CallError, HttpClient, parse_result, request_headers
from benchlib.report import fmt

__all__ = [
    "ERA",
    "LABEL",
    "StatelessClient",
    "notes",
]

ERA = LATEST_MODERN_VERSION
LABEL = f"tools/call, {ERA} (stateless)"
# The methods whose Mcp-Name header carries a parameter, and which one.
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class StatelessClient:
    """Requests of the stateless revision to one URL; ``call`` posts one and returns its result."""

    def __init__(self, client: HttpClient, url: str, token: str | None) -> None:
        self._client = client
        self._url = url
        self._headers = {**request_headers(token), MCP_PROTOCOL_VERSION_HEADER: ERA}
        self._meta = {
            PROTOCOL_VERSION_META_KEY: ERA,
            CLIENT_CAPABILITIES_META_KEY: {},
            CLIENT_INFO_META_KEY: {"name": "agentws-bench", "version": "1"},
        }
        # Per (method, name): the headers of such a request, built once.
        self._request_headers: dict[tuple[str, str | None], dict[str, str]] = {}
        self._next_id = 0

    async def initialize(self) -> None:
        """Nothing to do: the revision has no handshake."""

    def _headers_for(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        key = _NAMED.get(method)
        name = params.get(key) if key else None
        cached = self._request_headers.get((method, name))
        if cached is None:
            cached = {**self._headers, MCP_METHOD_HEADER: method}
            if name is not None:
                cached[MCP_NAME_HEADER] = encode_header_value(name)
            self._request_headers[(method, name)] = cached
        return cached

    async def call_raw(self, method: str, params: dict[str, Any]) -> tuple[int, str, bytes]:
        """Post a request; its id, the answer's content type and its body, unparsed."""
        self._next_id += 1
        request_id = self._next_id
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": method,
                "params": {**params, "_meta": self._meta},
            }
        )
        response = await self._client.post(
            self._url, content=body.encode(), headers=self._headers_for(method, params)
        )
        if response.status_code != 200:
            raise CallError(f"{method}: HTTP {response.status_code}: {response.text[:200]}")
        if "mcp-session-id" in response.headers:
            raise CallError(f"{method}: a stateless request was given a session")
        return request_id, response.headers.get("content-type", ""), response.content

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result = parse_result(method, *await self.call_raw(method, params))
        if result.get("resultType") != "complete":
            raise CallError(f"{method}: resultType {result.get('resultType')!r}, not 'complete'")
        return result

    async def aclose(self) -> None:
        """Nothing to end: there is no session."""


def notes(results: dict[str, Any], config: dict[str, Any], mcp_version: str) -> list[str]:
    """The report's notes on how the row was measured, and what came back."""
    modern = results["modern"]
    parity = modern["parity"]
    differing = len(parity["queries_differing"])
    response = "json_response=True, " if config["reference_response"] == "json" else ""
    lines = [
        f"- {LABEL}: the reference is mcp {mcp_version} `MCPServer` + `streamable_http_app("
        f"{response}stateless_http=True)` on uvicorn (its session manager hands every request "
        f"naming {ERA} to the SDK's single-exchange handler), the same tool and database; "
        "agentws authenticates the bearer token on every request (there is no session), "
        "looks the tool up among the group's, validates the arguments and audits the call; "
        f"{config['concurrency']} workers, each POSTing self-contained requests back to back "
        f"(no initialize, no session; `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` headers "
        f"and the `_meta` protocol version, capabilities and client info on every request), "
        f"same warm-up, seconds and ABBA rounds as the 2025-11-25 row. Same answers (ranked "
        f"URIs) for {parity['queries_compared'] - differing} of {parity['queries_compared']} "
        "queries"
        + (
            f"; differing: {', '.join(map(repr, parity['queries_differing'][:5]))}."
            if differing
            else "."
        ),
        f"- {ERA} calls/s in each round: "
        + ", ".join(
            f"{name} " + " / ".join(fmt(v) for v in modern[name]["throughput_rps_all_rounds"])
            for name in ("agentws", "reference")
        )
        + "; other processes up to "
        + f"{max(modern[n]['other_cpu_cores_max'] for n in ('agentws', 'reference')):.2f} cores.",
    ]
    for name in ("agentws", "reference"):
        for error in modern[name].get("error_samples", [])[:3]:
            lines.append(f"- {ERA} {name} error: {error}")
    return lines
