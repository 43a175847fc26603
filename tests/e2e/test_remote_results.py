"""A remote's tool results are bounded, and checked against its output schema off the loop.

A remote MCP server decides what its tools answer and the output schema
their structured content is checked against. Neither may hold the event
loop: a result of more than ``AGENTWS_TOOL_MAX_RESULT_BYTES`` or with too
many content items is refused (a tool error naming the connector and the
limit) before it is parsed as a result, and structured content is checked
as arguments are, in linear time, in a worker process for a schema too
costly for the loop. The remote answers with bytes made beforehand
(:class:`~tests.e2e.remote_support.ThirdParty` ``canned``), over the
stateless revision (the link's own calls) and over a handshake (the SDK's
session), while ``/healthz`` is asked again and again and no step of the
service may use more than 100 ms of CPU (on the reference machine:
:mod:`tests.e2e.loop_steps`). One known exception is tested
apart, marked as expected to fail: over a handshake the SDK's transport
parses the largest answer on the loop.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
import trio

from agentws.domain.models import AuditEntry, Capability
from tests.e2e.loop_steps import healthz_throughout, watch_steps
from tests.e2e.mcp_support import (
    REQUEST_S,
    jsonrpc_answer,
    raw_session,
    result_text,
    running,
)
from tests.e2e.remote_support import (
    MODERN_LINK,
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

ALLOW = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}
MIB = 1024 * 1024
# Far longer than any of these calls takes now, far shorter than they took before.
CALL_S = 10.0
# Quadratic for a checker that compares every pair (the SDK's jsonschema).
UNIQUE = {
    "type": "object",
    "properties": {"items": {"type": "array", "uniqueItems": True}},
    "required": ["items"],
}
# Exponential for a checker that tries each branch: flagged when cached.
BRANCHES: dict[str, Any] = {
    "type": "object",
    "properties": {"v": {"$ref": "#/$defs/l0"}},
    "$defs": {
        f"l{level}": {
            "anyOf": [
                {"$ref": f"#/$defs/l{level + 1}"} if level < 39 else {"type": "string"},
                {"allOf": [{"$ref": f"#/$defs/l{level + 1}"} if level < 39 else {}, {}]},
            ]
        }
        for level in range(40)
    },
}
DISTINCT = [{"n": n, "k": f"v{n}"} for n in range(20_000)]
# Within the default bound (1 MiB) with room for the rest of the answer.
LARGE = MIB - 4096
ROWS = [{"a": 1}] * (LARGE // 10)


def _result(handshake: bool, content: list[Any], structured: Any = None) -> bytes:
    result: dict[str, Any] = {"content": content}
    if structured is not None:
        result["structuredContent"] = structured
    if not handshake:
        result["resultType"] = "complete"
    return json.dumps(result).encode()


def _text(text: str) -> list[Any]:
    return [{"type": "text", "text": text}]


def _remote(handshake: bool) -> ThirdParty:
    state = ThirdParty(
        [
            tool("many", "Too many content items"),
            tool("huge", "Too many bytes"),
            tool("large", "Large but within bounds"),
            types.Tool(
                name="rows",
                description="Many small objects",
                input_schema={"type": "object"},
                output_schema={"type": "object"},
            ),
            types.Tool(
                name="unique",
                description="Distinct items",
                input_schema={"type": "object"},
                output_schema=UNIQUE,
            ),
            types.Tool(
                name="repeated",
                description="Items that are not distinct",
                input_schema={"type": "object"},
                output_schema=UNIQUE,
            ),
            types.Tool(
                name="branches",
                description="A costly output schema",
                input_schema={"type": "object"},
                output_schema=BRANCHES,
            ),
        ],
        handshake_only=handshake,
    )
    state.canned = {
        "many": _result(handshake, _text("") * 30_000),
        "huge": _result(handshake, _text("x" * 2 * MIB)),
        "large": _result(handshake, _text("y" * LARGE)),
        # The costliest shape to parse and pass on, per byte.
        "rows": _result(handshake, _text("rows"), {"rows": ROWS}),
        "unique": _result(handshake, _text("distinct"), {"items": DISTINCT}),
        "repeated": _result(handshake, _text("repeated"), {"items": [*DISTINCT, DISTINCT[0]]}),
        "branches": _result(handshake, _text("branches"), {"v": 5}),
    }
    return state


# A session's answers are parsed by the SDK's transport as they arrive, on the
# loop: the largest answer of small rows takes it 70-130 ms of CPU depending
# on the machine (the link's own stateless calls parse it on a thread). See
# test_a_session_s_largest_answer_is_parsed_off_the_loop.
_PARSED_ON_THE_LOOP = ("rows",)


@pytest.mark.parametrize("handshake", [False, True], ids=["stateless", "handshake"])
async def test_remote_results_are_bounded_and_checked_off_the_loop(
    tmp_path: Path, handshake: bool
) -> None:
    state = _remote(handshake)
    async with (
        running(tmp_path, with_library=False, **ALLOW) as server,
        third_party_server(state) as url,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        names = ("many", "huge", "large", "rows", "unique", "repeated", "branches")
        labels = {f"third_{n}": Capability.READ for n in names}
        await attach_remote(
            server.store, url, labels, protocol="auto" if handshake else MODERN_LINK
        )
        session = await raw_session(http, server)
        calls = {
            name: json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": index,
                    "method": "tools/call",
                    "params": {"name": f"third_{name}", "arguments": {}},
                }
            ).encode()
            for index, name in enumerate(names)
        }
        answers: dict[str, dict[str, Any]] = {}

        async def call(name: str) -> None:
            with trio.fail_after(CALL_S):
                response = await http.post(server.url, content=calls[name], headers=session)
            assert response.status_code == 200, response.text
            answers[name] = jsonrpc_answer(response)["result"]

        with watch_steps() as steps:
            async with healthz_throughout(server.base_url):
                for name in names:
                    if not (handshake and name in _PARSED_ON_THE_LOOP):
                        await call(name)
        if handshake:
            for name in _PARSED_ON_THE_LOOP:
                await call(name)
        texts = {name: result_text({"result": answer}) for name, answer in answers.items()}
        assert answers["many"]["isError"], texts["many"]
        assert texts["many"] == (
            "third answered with 30,000 content items, more than the 1,000 agentws passes on; "
            "nothing of it was passed on"
        )
        assert answers["huge"]["isError"], texts["huge"]
        assert texts["huge"] == (
            f"third answered with more than {MIB:,} bytes (AGENTWS_TOOL_MAX_RESULT_BYTES); "
            "nothing of it was passed on"
        )
        assert not answers["large"].get("isError") and texts["large"] == "y" * LARGE
        assert answers["rows"].get("structuredContent") == {"rows": ROWS}, texts["rows"]
        assert answers["unique"]["structuredContent"] == {"items": DISTINCT}
        assert answers["repeated"]["isError"]
        assert texts["repeated"].startswith(
            "third answered what cannot be passed on: "
            "Invalid structured content returned by tool repeated: "
        ), texts["repeated"]
        assert texts["repeated"].endswith("has non-unique elements"), texts["repeated"]
        # Checked in the worker process, within the deadline, whatever it makes of it.
        assert answers["branches"]["isError"] or texts["branches"] == "branches", texts
        steps.assert_none_long()
        # Caching flagged the one output schema a check cannot bound on the loop.
        flagged = await server.store.select(AuditEntry, action="tool.schema_flagged")
        assert [e.target for e in flagged] == ["third_branches"]
        assert flagged[0].detail["hazards"][0].startswith("output schema: ")
    assert sorted(state.calls) == sorted(names)


@pytest.mark.xfail(
    reason="the SDK's transport parses a session's answer on the loop; "
    "the largest answer of small rows takes it over 100 ms of CPU on a slow machine",
    strict=False,
)
async def test_a_session_s_largest_answer_is_parsed_off_the_loop(tmp_path: Path) -> None:
    state = _remote(True)
    async with (
        running(tmp_path, with_library=False, **ALLOW) as server,
        third_party_server(state) as url,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        await attach_remote(server.store, url, {"third_rows": Capability.READ})
        session = await raw_session(http, server)
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "third_rows", "arguments": {}},
        }
        with watch_steps() as steps:
            with trio.fail_after(CALL_S):
                response = await http.post(server.url, json=body, headers=session)
        assert jsonrpc_answer(response)["result"].get("structuredContent") == {"rows": ROWS}
        steps.assert_none_long()
