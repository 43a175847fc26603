"""Scenario 4: an SSE client that stops reading while the server has plenty to send.

The stalled client opens a legacy (2024-11-05) HTTP+SSE session on a raw
socket with a small receive buffer, reads the ``endpoint`` event, and then
never reads again, while it POSTs ``resources/read`` of a large document
many times: the answers go to its stream, many times more than the socket
buffers hold. agentws should cut it off after ``AGENTWS_SSE_STALL_S``
(closing the session, saying so in its log) without its memory growing,
while another client on another session goes on being answered.

Seen from outside: the server's log line, the open-session count of
``/metrics`` (when the server has it), the server's end of the stalled
connection in ``/proc/net/tcp`` (its unsent bytes, and when it is gone), the
server's VmRSS, and the other client's round trips.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx2
import trio
from benchlib.procs import rss_kb
from benchlib.sse import sse_events

from chaoslib.common import (
    Outcome,
    ScenarioError,
    Server,
    free_port,
    log_lines,
    log_record,
    now,
    poll_until,
    say,
    set_up_site,
    start_agentws,
    stop_process,
)
from chaoslib.scenarios import Context

__all__ = ["slow_client"]

STALL_S = 2.0
KEEPALIVE_S = 0.5
# The document read over and over: its answers are what the stalled client does not take.
DOCUMENT_KIB = 512
READS = 24
# The stalled client's receive buffer (the kernel doubles it, and keeps a minimum).
CLIENT_RCVBUF = 4096
# How long the cut-off may take at most before the scenario says it failed.
CUT_OFF_LIMIT_S = STALL_S * 3 + 5
# The other client's requests: at most this long each, or it is not "working".
OTHER_CLIENT_SLOW_S = 1.0
_STALL_LOG = "read nothing"
_PROTOCOL = "2024-11-05"


def _document(path: Path) -> Path:
    line = "The on-call engineer acknowledges the page, reads the runbook, and writes it down.\n"
    text = "# Handbook\n\n" + line * (DOCUMENT_KIB * 1024 // len(line))
    path.write_text(text)
    return path


def _initialize(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": _PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "agentws-chaos", "version": "1"},
        },
    }


_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class WellBehavedClient:
    """A legacy SSE client that reads its stream: requests, and their answers matched by id."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.headers = {"authorization": f"Bearer {token}"}
        self.messages_url: str | None = None
        self.answers: dict[int, dict[str, Any]] = {}
        self.arrived = trio.Event()
        self.opened = trio.Event()
        self.ended: str | None = None
        self.next_id = 1
        self.client = httpx2.AsyncClient(timeout=httpx2.Timeout(10.0, read=None))

    async def hold(self) -> None:
        """Read the stream until cancelled (or the server ends it)."""
        headers = {**self.headers, "accept": "text/event-stream"}
        try:
            async with self.client.stream("GET", self.url, headers=headers) as response:
                if response.status_code != 200:
                    await response.aread()
                    self.ended = f"GET answered {response.status_code}: {response.text[:200]}"
                    self.opened.set()
                    return
                async for event, data in sse_events(response.aiter_lines()):
                    if event == "endpoint":
                        self.messages_url = urljoin(self.url, data)
                        self.opened.set()
                    elif event == "message":
                        message = json.loads(data)
                        if isinstance(message.get("id"), int):
                            self.answers[message["id"]] = message
                            self.arrived.set()
                            self.arrived = trio.Event()
            self.ended = "the server ended the stream"
        except httpx2.HTTPError as exc:
            self.ended = f"stream failed: {exc!r}"
        finally:
            self.opened.set()
            self.arrived.set()

    async def post(self, message: dict[str, Any]) -> None:
        if self.messages_url is None:
            raise ScenarioError("the other client has no messages URL")
        response = await self.client.post(
            self.messages_url,
            content=json.dumps(message),
            headers={**self.headers, "content-type": "application/json"},
        )
        if response.status_code not in (200, 202):
            raise ScenarioError(f"POST {message.get('method')}: HTTP {response.status_code}")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = self.next_id
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        if method == "initialize":
            message = _initialize(request_id)
        await self.post(message)
        while request_id not in self.answers:
            if self.ended is not None:
                raise ScenarioError(f"{method}: {self.ended}")
            await self.arrived.wait()
        answer = self.answers.pop(request_id)
        if "error" in answer:
            raise ScenarioError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer["result"]
        return result


def _server_sockets(server_port: int, client_port: int) -> list[tuple[str, int]]:
    """The server's end of the connection from ``client_port``: (TCP state, bytes unsent)."""
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state, queues = fields[1], fields[2], fields[3], fields[4]
        ports = int(local.split(":")[1], 16), int(remote.split(":")[1], 16)
        if ports == (server_port, client_port):
            found.append((state, int(queues.split(":")[0], 16)))
    return found


_STATES = {"01": "ESTABLISHED", "04": "FIN_WAIT1", "05": "FIN_WAIT2", "06": "TIME_WAIT",
           "07": "CLOSE", "08": "CLOSE_WAIT", "0B": "CLOSING"}  # fmt: skip


async def _sse_sessions(client: httpx2.AsyncClient, base_url: str) -> int | None:
    """Open SSE sessions per ``/metrics`` (None: the server has no such metric)."""
    try:
        response = await client.get(base_url + "/metrics")
    except httpx2.TransportError:
        return None
    if response.status_code != 200:
        return None
    match = re.search(r'^agentws_mcp_sessions\{transport="sse"\} ([0-9.e+]+)$', response.text, re.M)
    return int(float(match.group(1))) if match else None


class StalledClient:
    """A raw-socket SSE client with a tiny receive buffer that stops reading after the handshake."""

    def __init__(self, server: Server, path: str, token: str) -> None:
        self.server = server
        self.path = path
        self.token = token
        self.sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, CLIENT_RCVBUF)
        self.local_port = 0
        self.messages_url = ""
        self.session_id = ""

    async def open(self) -> None:
        await self.sock.connect(("127.0.0.1", self.server.port))
        self.local_port = self.sock.getsockname()[1]
        request = (
            f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1:{self.server.port}\r\n"
            f"Authorization: Bearer {self.token}\r\nAccept: text/event-stream\r\n\r\n"
        )
        await self.sock.send(request.encode())
        buffer = b""
        with trio.fail_after(10):
            while (match := re.search(rb"event: endpoint\r?\ndata: (\S+)", buffer)) is None:
                chunk = await self.sock.recv(4096)
                if not chunk:
                    raise ScenarioError(f"the stalled client's stream ended: {buffer[:300]!r}")
                buffer += chunk
        if not buffer.startswith(b"HTTP/1.1 200"):
            raise ScenarioError(f"the stalled client's GET: {buffer[:200]!r}")
        self.messages_url = urljoin(self.server.base_url + self.path, match.group(1).decode())
        self.session_id = self.messages_url.partition("session_id=")[2]
        # From here on it reads nothing.

    def close(self) -> None:
        self.sock.close()


async def slow_client(ctx: Context, out: Outcome) -> None:
    """Stop reading an SSE stream the server has megabytes for; the server must cut it off."""
    ctx.directory.mkdir(parents=True, exist_ok=True)
    document = _document(ctx.directory / "runbook.md")
    site = await trio.to_thread.run_sync(
        lambda: set_up_site(
            ctx.directory, f"sqlite:///{ctx.directory / 'agentws.db'}", document=document
        )
    )
    if site.token is None:
        raise ScenarioError("the site has no MCP token")
    env = {"AGENTWS_SSE_STALL_S": str(STALL_S), "AGENTWS_SSE_KEEPALIVE_S": str(KEEPALIVE_S)}
    server = await start_agentws(ctx.procs, site, "slowclient", free_port(), **env)
    path = "/mcp/g/acme/ops"
    url = server.base_url + path
    out.figures["config"] = {
        **env,
        "document_kib": DOCUMENT_KIB,
        "reads_to_post": READS,
        "client_rcvbuf_bytes": CLIENT_RCVBUF,
    }
    good = WellBehavedClient(url, site.token)
    async with (
        trio.open_nursery() as nursery,
        httpx2.AsyncClient(timeout=5.0) as probe,
    ):
        nursery.start_soon(good.hold)
        with trio.fail_after(10):
            await good.opened.wait()
        if good.messages_url is None:
            raise ScenarioError(f"the other client could not open its stream: {good.ended}")
        with trio.fail_after(10):
            await good.request("initialize")
            await good.post(_INITIALIZED)
            listed = await good.request("resources/list")
        uris = [r["uri"] for r in listed.get("resources", [])]
        if not uris:
            raise ScenarioError(f"the group lists no resource: {listed}")
        uri = uris[0]
        with trio.fail_after(10):
            read = await good.request("resources/read", {"uri": uri})
        size = len(json.dumps(read))
        sessions_before = await _sse_sessions(probe, server.base_url)
        rss_before = rss_kb(server.pid)

        # The stalled client: handshake, then many large answers it will never read.
        stalled = StalledClient(server, path, site.token)
        await stalled.open()
        sessions_with_stalled = await _sse_sessions(probe, server.base_url)
        say(f"slow-client: stalled session open; posting {READS} reads of {size // 1024} KiB")
        posted = 0
        burst_at = now()
        async with httpx2.AsyncClient(timeout=5.0) as poster:
            headers = {"authorization": f"Bearer {site.token}", "content-type": "application/json"}
            messages = [_initialize(1), _INITIALIZED] + [
                {"jsonrpc": "2.0", "id": 10 + i, "method": "resources/read", "params": {"uri": uri}}
                for i in range(READS)
            ]
            for message in messages:
                try:
                    response = await poster.post(
                        stalled.messages_url, content=json.dumps(message), headers=headers
                    )
                except httpx2.TransportError as exc:
                    out.figures["stalled_post_error"] = repr(exc)
                    break
                if response.status_code != 202:
                    out.figures["stalled_post_status"] = response.status_code
                    break
                posted += 1
                if posted == 3:
                    burst_at = now()

        # Meanwhile the other client keeps asking; the server's state is watched.
        latencies: list[float] = []
        failures: list[str] = []
        stop_other = trio.Event()

        async def keep_asking() -> None:
            methods = ["ping", "resources/list", "tools/list"]
            i = 0
            while not stop_other.is_set():
                started = time.monotonic()
                try:
                    with trio.fail_after(10):
                        await good.request(methods[i % len(methods)], {})
                except (ScenarioError, trio.TooSlowError, httpx2.HTTPError) as exc:
                    failures.append(repr(exc)[:200])
                else:
                    latencies.append(time.monotonic() - started)
                i += 1
                with trio.move_on_after(0.1):
                    await stop_other.wait()

        other_done = trio.Event()

        async def run_other() -> None:
            try:
                await keep_asking()
            finally:
                other_done.set()

        nursery.start_soon(run_other)
        rss_peak = rss_before
        unsent_max = 0
        seen: dict[str, float] = {}

        async def cut_off() -> bool:
            nonlocal rss_peak, unsent_max
            if server.child.process.poll() is None:
                rss_peak = max(rss_peak, rss_kb(server.pid))
            ends = _server_sockets(server.port, stalled.local_port)
            unsent_max = max([unsent_max, *(q for _, q in ends)])
            if "log" not in seen and log_lines(server.child, _STALL_LOG):
                seen["log"] = now()
            if "closed_log" not in seen and log_lines(server.child, f"{stalled.session_id} closed"):
                seen["closed_log"] = now()
            if "socket" not in seen and not any(state == "01" for state, _ in ends):
                seen["socket"] = now()
                seen_states = sorted({_STATES.get(s, s) for s, _ in ends}) or ["gone"]
                out.figures["server_socket_after_cut_off"] = seen_states
            if "socket_gone" not in seen and not ends:
                seen["socket_gone"] = now()
            if "sessions" not in seen and sessions_with_stalled is not None:
                count = await _sse_sessions(probe, server.base_url)
                if count is not None and count < sessions_with_stalled:
                    seen["sessions"] = now()
            # Cut off: the session is gone (per /metrics, else per the log) and so is the socket.
            session_gone = "sessions" if sessions_with_stalled is not None else "closed_log"
            return {session_gone, "socket_gone"} <= seen.keys()

        finished = await poll_until(
            cut_off, CUT_OFF_LIMIT_S + 10, interval_s=0.05, alive=[server.child], what="cut-off"
        )
        # The other client goes on a second after the cut-off: still working?
        after_cut = len(latencies)
        await poll_until(
            lambda: _after(latencies, after_cut + 3), 5, alive=[server.child], what="requests"
        )
        stop_other.set()
        with trio.fail_after(15):
            await other_done.wait()
        rss_after = rss_kb(server.pid)
        sessions_after = await _sse_sessions(probe, server.base_url)
        stalled.close()
        nursery.cancel_scope.cancel()
    await good.client.aclose()

    def since(key: str) -> float | None:
        return round(seen[key] - burst_at, 2) if key in seen else None

    lines = log_lines(server.child, _STALL_LOG)
    out.figures.update(
        reads_posted=max(0, posted - 2),
        answer_bytes_each=size,
        cut_off_logged_s=since("log"),
        session_closed_logged_s=since("closed_log"),
        server_socket_not_established_s=since("socket"),
        server_socket_released_s=since("socket_gone"),
        session_count_fell_s=since("sessions"),
        sse_sessions={
            "before": sessions_before,
            "with_stalled": sessions_with_stalled,
            "after": sessions_after,
        },
        server_unsent_bytes_max=unsent_max,
        rss_kib={"before": rss_before, "peak": rss_peak, "after": rss_after},
        log_line=str(log_record(lines[0]).get("message"))[:200] if lines else None,
        other_client={
            "requests": len(latencies),
            "requests_after_cut_off": len(latencies) - after_cut,
            "failures": failures[:5],
            "max_s": round(max(latencies), 3) if latencies else None,
            "stream": good.ended or "open",
        },
    )
    cut_at = min((seen[k] for k in ("sessions", "closed_log", "log") if k in seen), default=None)
    out.figures["cut_off_s"] = None if cut_at is None else round(cut_at - burst_at, 2)
    out.check(finished is not None, "the server did not cut the client off (session and socket)")
    out.check(
        cut_at is not None and cut_at - burst_at <= CUT_OFF_LIMIT_S,
        f"no cut-off within {CUT_OFF_LIMIT_S:g} s of the burst",
    )
    out.check("socket_gone" in seen, "the server still holds the stalled connection")
    if sessions_with_stalled is not None:
        out.check("sessions" in seen, "the open-session count did not fall")
    else:
        out.notes.append("/metrics has no agentws_mcp_sessions: session count read as n/a")
    if not lines:
        closed = "an INFO 'session … closed' line" if "closed_log" in seen else "nothing"
        out.notes.append(
            f"agentws cut the stalled client off but its log says only {closed}, not the "
            f"WARNING 'client {_STALL_LOG} for {STALL_S:g} s; closing it' (in other runs it "
            "does): likely the kernel's TCP_USER_TIMEOUT, which agentws sets to "
            "AGENTWS_SSE_STALL_S on the listening socket, dropped the connection before the "
            "session's stall timer of the same length fired, and a dropped connection is "
            "logged as an ordinary close"
        )
    out.check(not failures, f"the other client failed meanwhile: {failures[:3]}")
    slowest = max(latencies, default=0.0)
    out.check(
        slowest <= OTHER_CLIENT_SLOW_S,
        f"the other client waited {slowest:.2f} s for an answer (limit {OTHER_CLIENT_SLOW_S:g} s)",
    )
    out.check(good.ended is None, f"the other client's stream ended: {good.ended}")
    growth_mib = (rss_after - rss_before) / 1024
    peak_mib = (rss_peak - rss_before) / 1024
    out.recovery = (
        f"cut off {out.figures['cut_off_s']} s after the burst (stall {STALL_S:g} s); RSS "
        f"{rss_before / 1024:.0f}→{rss_peak / 1024:.0f} (peak)→{rss_after / 1024:.0f} MiB"
    )
    out.lost = None
    out.duplicated = None
    out.figures["rss_growth_mib"] = {"peak": round(peak_mib, 1), "after": round(growth_mib, 1)}
    status, took = await stop_process(ctx.procs, server.child, signal.SIGTERM, 15)
    out.figures["slowclient_sigterm_exit"] = {"status": status, "seconds": round(took, 2)}
    out.check(status == 0, f"slowclient exited with {status} after SIGTERM")
    for line in log_lines(server.child, "Traceback")[:1]:
        out.notes.append(f"slowclient: traceback in its log: {line[:160]}")


async def _after(latencies: list[float], count: int) -> bool:
    return len(latencies) >= count
