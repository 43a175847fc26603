"""Fuzzing the MCP door, ``/mcp/g/<workspace>/<group>``, on a real server over TCP.

One server per test (:func:`tests.e2e.mcp_support.running`), and one hypothesis
property run against it by :func:`tests.fuzz.fuzz_support.fuzz`: ``@given``
runs in a worker thread and hands each example back to the test's trio loop,
where the server lives (``@given`` cannot decorate an async test, and a
server per example would cost the whole budget). Every run is deterministic
(``derandomize=True``, no example database).

Before the fuzz, two **bystanders** open sessions the way real clients do (the
SDK's Streamable HTTP client and its legacy HTTP+SSE client), and the test
opens two raw sessions of its own for the fuzz to aim at (one per
transport; the legacy one's stream is read all along). Then each example is
one request:

- to Streamable HTTP (``POST``) without ``Mcp-Session-Id``, with the fuzz
  session's id, or with an unknown one (random, another instance's, another
  token's); ``DELETE``/``GET`` with unknown ids; to the legacy
  ``POST …/messages?session_id=`` with the fuzz session or an unknown one;
- with a body that is arbitrary bytes, any JSON, or a JSON-RPC message with
  every field fuzzed: ``jsonrpc`` missing or wrong; ``id`` missing, null, a
  bool, a float, a big int (up to 400 digits), a long string, a list or an
  object; ``method`` missing, not a string, unknown, or every method the
  protocol has (``initialize`` included: a fuzzed ``initialize`` without a
  session may open one); ``params`` missing, of the wrong type, nested,
  or shaped for the method with fuzzed values; responses and errors as a
  client would send them; batches; bodies a few bytes either side of the
  size limit;
- with odd ``Content-Type``, ``Accept`` and ``MCP-Protocol-Version`` headers,
  and now and then no token or another group's token.

What must hold: no 5xx, ever; every answer is a 202 (empty, or ``Accepted``
on the legacy path), a JSON-RPC response or error object (as JSON or as SSE
events), or a JSON error ``{"error": {"code", "message"}}``, all of it strict
JSON; refusals carry the status their case calls for (401, 404, 413, 415,
400); every message on the legacy stream is strict JSON-RPC; afterwards both
bystanders still work (``tools/list``, ``ping``), so do both fuzz sessions,
a new session can initialize, and the server holds exactly the sessions the
test can account for (each session a fuzzed ``initialize`` opened was
named in its answer's ``Mcp-Session-Id`` and deleted at once).

The bugs this fuzzing found (a 500 on deep nesting, a NaN id echoed into
invalid JSON, a request with a float id taken for a notification) are fixed
and kept as regression tests at the end of this module.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import attrs
import httpx2
import mcp_types as types
import trio
from hypothesis import strategies as st
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.e2e.mcp_support import REQUEST_S, RawStream, Running, legacy_stream, running, sdk_session
from tests.e2e.polling import wait_for
from tests.fuzz.fuzz_support import fuzz, header_text

LIMIT = 16_384
ENV = {"AGENTWS_MCP_MAX_BODY_BYTES": str(LIMIT)}
ACCEPT = "application/json, text/event-stream"
PROTOCOL = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
# The tools the seeded group lists (its library's built-ins).
TOOLS = {"search_context", "read_context_document"}


# --- strict JSON --------------------------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(data: bytes | str) -> Any:
    """``data`` parsed as JSON proper: NaN and Infinity are not JSON."""
    return json.loads(data, parse_constant=_no_constant)


def assert_rpc(message: Any) -> None:
    """A JSON-RPC 2.0 message as the server may send it."""
    assert isinstance(message, dict), message
    assert message.get("jsonrpc") == "2.0", message
    if "error" in message:
        error = message["error"]
        assert isinstance(error, dict), message
        assert isinstance(error.get("code"), int), message
        assert isinstance(error.get("message"), str), message
        assert "id" in message, message
    elif "result" in message:
        assert "id" in message and message["id"] is not None, message
    else:
        assert isinstance(message.get("method"), str), message


def assert_http_error(body: Any) -> None:
    assert set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error, dict), body
    assert set(error) == {"code", "message"}, body
    assert isinstance(error["code"], str), body
    assert isinstance(error["message"], str), body
    assert error["message"].strip(), body


def sse_messages(text: str) -> list[Any]:
    """The data of an SSE response's ``message`` events, parsed."""
    found = []
    for block in text.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        assert lines[0] == "event: message", block
        data = "\n".join(line.removeprefix("data: ") for line in lines[1:])
        found.append(strict_json(data))
    return found


# --- strategies ---------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)

ids = st.one_of(
    st.integers(-(2**63), 2**63),
    st.integers(-(10**400), 10**400),
    st.sampled_from([0, -1, 2**53 + 1, 2**64, "", "1", "0"]),
    st.text(max_size=30),
    st.text(min_size=500, max_size=2000),
    st.floats(),  # NaN and the infinities are dumped as NaN/Infinity literals
    st.sampled_from([1.0, 1.5, -0.0, 1e300]),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)

METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/message",
]
methods = st.one_of(
    st.sampled_from(METHODS),
    st.sampled_from(METHODS),
    st.text(max_size=30),
    st.sampled_from(["", " ping", "PING", "tools/", "rpc.discover", "$/cancelRequest"]),
    st.integers(),
    st.none(),
    st.lists(st.text(max_size=5), max_size=2),
)

_uris = st.one_of(
    st.sampled_from(
        [
            "agentws://handbook/refunds",
            "agentws://handbook/salaries",
            "agentws://handbook/nope",
            "agentws://other/refunds",
            "file:///etc/passwd",
            "",
        ]
    ),
    st.text(max_size=40),
)


@st.composite
def method_params(draw: st.DrawFn, method: Any) -> Any:
    """``params`` shaped for ``method``, with fuzzed values."""
    if method == "initialize":
        return {
            "protocolVersion": draw(
                st.sampled_from(["2024-11-05", "2025-03-26", PROTOCOL, "2025-11-25", "1999-01-01"])
                | st.text(max_size=12)
                | st.integers()
            ),
            "capabilities": draw(st.sampled_from([{}, {"elicitation": {}}]) | json_values),
            "clientInfo": draw(
                st.builds(
                    lambda name, version: {"name": name, "version": version},
                    st.text(max_size=10),
                    st.text(max_size=5),
                )
                | json_values
            ),
        }
    if method == "tools/call":
        name = draw(st.sampled_from([*TOOLS, "nope", ""]) | st.text(max_size=12))
        arguments = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "query": st.text(max_size=30) | json_values,
                    "uri": _uris,
                    "offset": st.integers() | json_values,
                    "length": st.integers() | json_values,
                    "limit": st.integers() | json_values,
                    "confirm_token": st.text(max_size=20),
                },
            )
            | json_values
        )
        return {"name": name, "arguments": arguments}
    if method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
        return {"uri": draw(_uris | json_values)}
    if method == "prompts/get":
        return {
            "name": draw(st.sampled_from(["triage", "nope"]) | st.text(max_size=10)),
            "arguments": draw(
                st.dictionaries(st.text(max_size=5), st.text(max_size=5)) | json_values
            ),
        }
    if method == "logging/setLevel":
        return {
            "level": draw(st.sampled_from(["debug", "error", "emergency", "loud"]) | json_values)
        }
    if method == "notifications/cancelled":
        return {"requestId": draw(ids), "reason": draw(st.text(max_size=10))}
    if method == "notifications/progress":
        return {
            "progressToken": draw(ids),
            "progress": draw(st.floats(allow_nan=False) | st.integers() | json_values),
        }
    if method == "completion/complete":
        return {
            "ref": draw(
                st.sampled_from(
                    [
                        {"type": "ref/prompt", "name": "triage"},
                        {"type": "ref/resource", "uri": "agentws://handbook/{slug}"},
                    ]
                )
                | json_values
            ),
            "argument": {"name": draw(st.text(max_size=5)), "value": draw(st.text(max_size=5))},
        }
    return draw(st.dictionaries(st.text(max_size=8), json_values, max_size=4))


valid_ids = st.one_of(
    st.integers(-(2**63), 2**63),
    st.integers(-(10**400), 10**400),
    st.text(max_size=30),
    st.text(min_size=500, max_size=2000),
)


@st.composite
def plausible_messages(draw: st.DrawFn, method: Any = None) -> Any:
    """A JSON-RPC request or notification a client could send: only the values are odd."""
    method = method or draw(st.sampled_from(METHODS))
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if not method.startswith("notifications/") or draw(st.integers(0, 9)) == 0:
        message["id"] = draw(valid_ids)
    if draw(st.integers(0, 4)) > 0:
        message["params"] = draw(method_params(method))
    return message


@st.composite
def rpc_messages(draw: st.DrawFn) -> Any:
    """A JSON-RPC message with every field fuzzed (each may also be missing)."""
    kind = draw(st.sampled_from(["request", "request", "notification", "response", "error"]))
    message: dict[str, Any] = {}
    if draw(st.integers(0, 9)) > 0:
        message["jsonrpc"] = draw(
            st.sampled_from(["2.0", "2.0", "2.0", "2.0", "1.0", "2", 2.0, None, ""])
        )
    if kind != "notification" and draw(st.integers(0, 9)) > 0:
        message["id"] = draw(ids)
    if kind in ("request", "notification"):
        if draw(st.integers(0, 9)) > 0:
            method = draw(methods)
            message["method"] = method
        else:
            method = None
        shape = draw(st.integers(0, 9))
        if shape < 6:
            message["params"] = draw(method_params(method))
        elif shape < 8:
            message["params"] = draw(json_values)
    elif kind == "response":
        message["result"] = draw(json_values)
    else:
        message["error"] = draw(
            st.builds(
                lambda code, text: {"code": code, "message": text},
                st.integers() | json_values,
                st.text(max_size=10) | json_values,
            )
            | json_values
        )
    for _ in range(draw(st.integers(0, 1))):
        message[draw(st.text(max_size=8))] = draw(json_values)
    return message


@st.composite
def padded(draw: st.DrawFn) -> bytes:
    """A ``ping`` of exactly LIMIT-3 to LIMIT+3 bytes."""
    size = draw(st.integers(LIMIT - 3, LIMIT + 3))
    frame = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"pad": ""}})
    text = frame.replace('"pad": ""', '"pad": "' + "x" * (size - len(frame)) + '"')
    return text.encode()


@st.composite
def deep(draw: st.DrawFn) -> bytes:
    # Either side of pydantic's limit (~200), past Python's recursion limit (1000), and
    # past the limit hypothesis sets while a property runs (~3000: see fuzz_support).
    depth = draw(st.integers(1, 300) | st.integers(900, 1500) | st.integers(3500, 6000))
    if draw(st.booleans()):
        inner = "[" * depth + "]" * depth
    else:
        inner = '{"a":' * min(depth, 2500) + "1" + "}" * min(depth, 2500)
    return (
        '{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"a": ' + inner + "}}"
    ).encode()


SPECIAL_BODIES = [
    b"",
    b"{}",
    b"[]",
    b"null",
    b"1",
    b'"ping"',
    b"{nope",
    b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}{}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "id": 2}',
    b'{"jsonrpc": "2.0", "id": 10000000000000000000000000000000000000000, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "\\ud800"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "\\udfff"}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": null}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": []}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\x00',
    b'\xef\xbb\xbf{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": 1, "result": {}}',
    b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}}',
    b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": -Infinity, "method": "tools/list"}',
    b'{"jsonrpc": "2.0", "id": 1e999}',
    b'{"id": NaN}',
]


def _encode(value: Any, draw: st.DrawFn) -> bytes:
    text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    return text.encode(draw(st.sampled_from(["utf-8"] * 8 + ["utf-16", "utf-8-sig"])))


@st.composite
def bodies(draw: st.DrawFn, target: str) -> bytes:
    kind = draw(st.integers(0, 19))
    if target == "post_no_session" and kind < 8:
        return _encode(draw(plausible_messages("initialize")), draw)
    if kind < 8:
        return _encode(draw(plausible_messages()), draw)
    if kind < 13:
        return _encode(draw(rpc_messages()), draw)
    if kind == 13:
        return _encode(draw(st.lists(rpc_messages() | plausible_messages(), max_size=3)), draw)
    if kind == 14:
        return draw(st.one_of(st.binary(max_size=200), json_values.map(lambda v: _dump(v))))
    if kind == 15:
        return draw(padded())
    if kind in (16, 17):
        return draw(deep())
    return draw(st.sampled_from(SPECIAL_BODIES))


def _dump(value: Any) -> bytes:
    return json.dumps(value).encode()


TARGETS = [
    "post_no_session",
    "post_no_session",
    "post_session",
    "post_session",
    "post_session",
    "post_unknown_session",
    "legacy_session",
    "legacy_session",
    "legacy_session",
    "legacy_unknown_session",
    "delete_unknown_session",
    "get_unknown_session",
]
unknown_sessions = st.one_of(
    st.from_regex(r"test-1\.[A-Za-z0-9_-]{1,30}", fullmatch=True),
    st.from_regex(r"[a-z0-9-]{1,10}\.[A-Za-z0-9_-]{1,30}", fullmatch=True),
    header_text(max_size=40),
    st.sampled_from(["", ".", "test-1.", ".x", "test-1..x", "x" * 300]),
)


@attrs.frozen
class McpCase:
    target: str
    body: bytes
    #: The id the ``*_unknown_session`` targets name (the others use the fuzz sessions' ids).
    session: str | None
    content_type: str | None
    accept: str | None
    protocol_version: str | None
    #: "ours", "none" or "other" (another group's token)
    token: str


_case_parts = st.fixed_dictionaries(
    {
        "session": unknown_sessions,
        "content_type": st.one_of(
            st.just("application/json"),
            st.just("application/json"),
            st.just("application/json"),
            st.just("application/json"),
            st.sampled_from(
                [
                    "application/json; charset=utf-8",
                    "APPLICATION/JSON",
                    "application/json-rpc",
                    "text/plain",
                    "application/x-www-form-urlencoded",
                    "",
                ]
            ),
            st.none(),
            header_text(max_size=30),
        ),
        "accept": st.one_of(
            st.just(ACCEPT),
            st.just(ACCEPT),
            st.sampled_from(["application/json", "text/event-stream", "*/*", "text/html", ""]),
            st.none(),
            header_text(max_size=30),
        ),
        "protocol_version": st.one_of(
            st.none(),
            st.none(),
            st.sampled_from([PROTOCOL, "2024-11-05", "2025-03-26", "2030-01-01", ""]),
            header_text(max_size=20),
        ),
        "token": st.sampled_from(["ours"] * 18 + ["none", "other"]),
    }
)


@st.composite
def mcp_cases(draw: st.DrawFn) -> McpCase:
    target = draw(st.sampled_from(TARGETS))
    return McpCase(target=target, body=draw(bodies(target)), **draw(_case_parts))


# --- sessions the test holds --------------------------------------------------------------


@attrs.define
class LegacyReader:
    """Reads a legacy SSE stream to its end, checking each message as it comes."""

    stream: RawStream
    messages: list[Any] = attrs.field(factory=list)
    problems: list[str] = attrs.field(factory=list)
    arrived: trio.Event = attrs.field(factory=trio.Event)

    async def run(self) -> None:
        event: str | None = None
        while (line := await self.stream.read_line()) is not None:
            if line.startswith(":") or not line:
                event = None if not line else event
                continue
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
                continue
            if not line.startswith("data: ") or event != "message":
                self.problems.append(f"unexpected SSE line {line!r} (event {event!r})")
                continue
            data = line.removeprefix("data: ")
            try:
                message = strict_json(data)
                assert_rpc(message)
            except (ValueError, AssertionError) as exc:
                self.problems.append(f"{exc!r}: {data[:300]!r}")
                continue
            self.messages.append(message)
            self.arrived.set()
            self.arrived = trio.Event()

    async def response(self, request_id: Any) -> Any:
        """The response to ``request_id``, once it has come."""
        with trio.fail_after(REQUEST_S):
            while True:
                for message in self.messages:
                    if message.get("id") == request_id and "method" not in message:
                        return message
                await self.arrived.wait()


def _headers(server: Running, who: str = "ours", **extra: str | None) -> dict[str, bytes]:
    """Headers as sent: ``who``'s token ("ours", "other", "none"), then ``extra`` (Latin-1)."""
    secret = {"ours": server.token, "other": server.other_token}.get(who)
    headers = {"Authorization": f"Bearer {secret}".encode()} if secret else {}
    for name, value in extra.items():
        if value is not None:
            headers[name.replace("_", "-")] = value.encode("latin-1")
    return headers


async def _initialize(http: httpx2.AsyncClient, server: Running) -> str:
    response = await http.post(server.url, json=INITIALIZE, headers=_headers(server, Accept=ACCEPT))
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    done = await http.post(
        server.url,
        json=INITIALIZED,
        headers=_headers(server, Accept=ACCEPT, Mcp_Session_Id=session_id),
    )
    assert done.status_code == 202, done.text
    return session_id


async def _ping(http: httpx2.AsyncClient, server: Running, session_id: str) -> None:
    response = await http.post(
        server.url,
        json={"jsonrpc": "2.0", "id": "after", "method": "ping"},
        headers=_headers(server, Accept=ACCEPT, Mcp_Session_Id=session_id),
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"jsonrpc": "2.0", "id": "after", "result": {}}


@asynccontextmanager
async def legacy_session(
    server: Running, http: httpx2.AsyncClient
) -> AsyncIterator[tuple[str, LegacyReader]]:
    """A raw legacy session, initialized, its stream read by a task of its own."""
    async with legacy_stream(server) as (session_id, stream), trio.open_nursery() as nursery:
        reader = LegacyReader(stream)
        nursery.start_soon(reader.run)
        try:
            url = f"{server.url}/messages?session_id={session_id}"
            sent = await http.post(url, json=INITIALIZE, headers=_headers(server))
            assert sent.status_code == 202, sent.text
            initialized = await reader.response(1)
            assert initialized["result"]["protocolVersion"], initialized
            sent = await http.post(url, json=INITIALIZED, headers=_headers(server))
            assert sent.status_code == 202, sent.text
            yield session_id, reader
        finally:
            # The reader would read on until the stream ends, which is after this block.
            nursery.cancel_scope.cancel()


# --- the fuzz -----------------------------------------------------------------------------


@attrs.define
class Tally:
    statuses: dict[int, int] = attrs.field(factory=dict)
    opened: list[str] = attrs.field(factory=list)


async def test_fuzzed_mcp_requests(tmp_path: Path) -> None:
    async with (
        running(tmp_path, **ENV) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
        sdk_session(server, "streamable") as bystander,
        sdk_session(server, "sse") as legacy_bystander,
        legacy_session(server, http) as (legacy_id, legacy_reader),
    ):
        fuzz_id = await _initialize(http, server)
        baseline = len(server.runtime.sessions)
        assert baseline == 4
        tally = Tally()

        async def send(case: McpCase) -> None:
            headers = _headers(
                server,
                case.token,
                Content_Type=case.content_type,
                Accept=case.accept,
                MCP_Protocol_Version=case.protocol_version,
            )
            url, method = server.url, "POST"
            target = case.target
            if target == "post_session":
                headers["Mcp-Session-Id"] = fuzz_id.encode()
            elif target in (
                "post_unknown_session",
                "delete_unknown_session",
                "get_unknown_session",
            ):
                headers["Mcp-Session-Id"] = (case.session or "").encode("latin-1")
                method = target.split("_")[0].upper()
            elif target == "legacy_session":
                url = f"{server.url}/messages?session_id={legacy_id}"
            elif target == "legacy_unknown_session":
                url = f"{server.url}/messages?session_id={quote(case.session or '', safe='')}"
            body = case.body if method == "POST" else b""
            response = await http.request(method, url, content=body, headers=headers)
            status = response.status_code
            tally.statuses[status] = tally.statuses.get(status, 0) + 1
            opened = response.headers.get("mcp-session-id")
            if target == "post_no_session" and opened is not None:
                # A fuzzed initialize opened a session: it must say which, and end on DELETE.
                tally.opened.append(opened)
                gone = await http.delete(
                    server.url, headers=_headers(server, Mcp_Session_Id=opened)
                )
                assert gone.status_code == 204, gone.text
            check_answer(case, body, response, fuzz_id, legacy_id)

        await fuzz(mcp_cases(), send, max_examples=1000)
        print(f"statuses: {tally.statuses}; sessions opened: {len(tally.opened)}")

        # The bystanders never noticed.
        with trio.fail_after(REQUEST_S):
            for session in (bystander, legacy_bystander):
                await session.send_ping()
                assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS
        # Neither did the sessions the fuzz aimed at.
        await _ping(http, server, fuzz_id)
        messages_url = f"{server.url}/messages?session_id={legacy_id}"
        ping = {"jsonrpc": "2.0", "id": "legacy-after", "method": "ping"}
        assert (
            await http.post(messages_url, json=ping, headers=_headers(server))
        ).status_code == 202
        assert (await legacy_reader.response("legacy-after"))["result"] == {}
        assert legacy_reader.problems == [], legacy_reader.problems[:5]
        # No session leaked; a new one opens and closes.
        await wait_for(
            lambda: len(server.runtime.sessions) == baseline,
            what=f"no more than the {baseline} sessions the test holds",
        )
        fresh = await _initialize(http, server)
        await _ping(http, server, fresh)
        assert len(server.runtime.sessions) == baseline + 1
        deleted = await http.delete(server.url, headers=_headers(server, Mcp_Session_Id=fresh))
        assert deleted.status_code == 204
        await wait_for(lambda: len(server.runtime.sessions) == baseline, what="fresh one closed")


def check_answer(
    case: McpCase, body_sent: bytes, response: httpx2.Response, fuzz_id: str, legacy_id: str
) -> None:
    """One answer: never a 5xx, well formed, the status its case calls for."""
    status = response.status_code
    raw = response.content
    content_type = response.headers.get("content-type", "").split(";")[0].strip()
    assert status < 500, f"{status}: {raw[:500]!r}"
    target = case.target
    if case.token != "ours":
        assert status == 401, (status, raw)
        assert response.headers["www-authenticate"].startswith("Bearer")
    elif target in ("delete_unknown_session", "get_unknown_session"):
        assert status in (400, 404, 406), (status, raw)
    elif target == "legacy_unknown_session":
        assert status in (400, 404), (status, raw)
    elif target == "post_unknown_session":
        assert status in (400, 404, 406, 413, 415), (status, raw)
    elif target == "legacy_session":
        assert status in (202, 400, 413, 415), (status, raw)
    elif target == "post_session":
        assert status in (200, 202, 400, 406, 413, 415), (status, raw)
    else:
        assert status in (200, 400, 406, 413, 415), (status, raw)
    if status == 406:
        # A Streamable HTTP POST must take both JSON and SSE (or */*).
        assert case.accept not in (ACCEPT, "*/*"), case.accept
    if status == 202:
        assert raw in (b"", b"Accepted"), raw
        expected_id = legacy_id if target == "legacy_session" else fuzz_id
        assert response.headers["mcp-session-id"] == expected_id
        return
    if content_type == "text/event-stream":
        assert status == 200, status
        messages = sse_messages(response.text)
        assert messages, response.text
        for message in messages:
            assert_rpc(message)
        return
    assert content_type == "application/json", (status, content_type, raw[:300])
    body = strict_json(raw)
    assert isinstance(body, dict), body
    if "jsonrpc" in body:
        assert_rpc(body)
        assert "result" in body or "error" in body, body
    else:
        assert status != 200, body
        assert_http_error(body)
    if status == 413:
        assert body["error"]["code"] == "too_large", body
        assert len(body_sent) > LIMIT, len(body_sent)
    elif len(body_sent) > LIMIT and status != 401 and target != "legacy_unknown_session":
        # Headers are checked before the body is read: Accept, then the session's version.
        assert status in (404, 406, 413, 415) or _unknown_version(case, body), (status, body)
    if status == 415:
        assert body["error"]["code"] == "unsupported_media_type", body
        media = (case.content_type or "").split(";")[0].strip().lower()
        assert media != "application/json", case.content_type


def _unknown_version(case: McpCase, body: Any) -> bool:
    """A 400 for a session request naming a protocol version agentws does not speak."""
    code = body.get("error", {}).get("code") if isinstance(body, dict) else None
    known = (None, *HANDSHAKE_PROTOCOL_VERSIONS)
    return code == types.UNSUPPORTED_PROTOCOL_VERSION and case.protocol_version not in known


# --- bugs the fuzzing found, kept as regression tests ---------------------------------------


async def test_a_deeply_nested_body_is_a_parse_error_not_a_500(tmp_path: Path) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        response = await http.post(
            server.url,
            content=b"[" * 5000 + b"]" * 5000,
            headers=_headers(server, Accept=ACCEPT, Content_Type="application/json"),
        )
        assert response.status_code == 400, response.text


async def test_a_nan_id_is_not_echoed_into_invalid_json(tmp_path: Path) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        response = await http.post(
            server.url,
            content=b'{"id": NaN}',
            headers=_headers(server, Accept=ACCEPT, Content_Type="application/json"),
        )
        assert response.status_code == 400
        strict_json(response.content)


async def test_a_request_with_a_float_id_is_refused_not_taken_as_a_notification(
    tmp_path: Path,
) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        session_id = await _initialize(http, server)
        response = await http.post(
            server.url,
            content=b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
            headers=_headers(
                server, Accept=ACCEPT, Content_Type="application/json", Mcp_Session_Id=session_id
            ),
        )
        assert response.status_code != 202, "a request was taken as a notification"
