"""OAuth 2.1 with Node's ``@modelcontextprotocol/sdk`` auth client, end to end.

A real agentws serves on loopback. ``tests/node/oauth.mjs`` is a desktop
client built on the TypeScript SDK: its in-memory ``OAuthClientProvider``
lets the SDK meet the endpoint's 401, discover the authorization server,
register (RFC 7591) and build the authorization URL, which it prints. This
test is the browser: an administrator (:class:`~tests.e2e.oauth_support.Browser`)
signs in and decides on the dashboard's consent page, and the query the
redirect URI was sent goes back to the script on its stdin. Approved, the
script exchanges the code (``transport.finishAuth``), calls tools, refreshes
its tokens with the SDK's ``auth()`` and calls again with the new access
token; denied, it reports the error and holds no token.

Without Node or the pinned SDK these tests fail, never skip (see
:mod:`tests.e2e.node_support`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx2
import trio

from agentws.domain.models import AuditEntry, McpToken, OAuthClient
from tests.e2e.mcp_support import Running, running
from tests.e2e.node_support import NODE_DIR, Lines, require_node
from tests.e2e.oauth_support import REDIRECT, admin_browser, mcp_status, refresh
from tests.support import clean_env

SCRIPT = NODE_DIR / "oauth.mjs"
SDK = "@modelcontextprotocol/sdk"

# oauth.mjs's own hard limit for the whole run, the wait for the browser included.
NODE_LIMIT_MS = 30_000
# Node's start-up, discovery, registration and the authorization URL.
REDIRECT_S = 20.0
# The exchange, two connections, the refresh, and the process's exit.
FINISH_S = 20.0


@attrs.frozen
class _Script:
    """oauth.mjs running: its stdout lines, its stdin, and where its stderr goes."""

    process: trio.Process
    lines: Lines
    stderr_path: Path

    async def document(self, what: str) -> dict[str, Any]:
        line = await self.lines.next()
        assert line, f"oauth.mjs ended before {what}:\n{self.stderr_path.read_text()}"
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    async def answer(self, query: dict[str, str]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(json.dumps(query).encode() + b"\n")

    async def finished(self) -> None:
        """The script printed nothing more and exited cleanly."""
        assert await self.lines.next() is None
        returncode = await self.process.wait()
        assert returncode == 0, self.stderr_path.read_text()
        assert self.stderr_path.read_text() == ""


@asynccontextmanager
async def _script(server: Running, tmp_path: Path) -> AsyncIterator[_Script]:
    node = require_node(SDK)
    stderr_path = tmp_path / "node.stderr"
    with stderr_path.open("wb") as stderr:
        process = await trio.lowlevel.open_process(
            [
                *(node, str(SCRIPT), "--url", server.url, "--redirect-uri", REDIRECT),
                *("--timeout-ms", str(NODE_LIMIT_MS)),
            ],
            cwd=NODE_DIR,
            env=clean_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    try:
        assert process.stdout is not None
        yield _Script(process, Lines(process.stdout), stderr_path)
    finally:
        if process.returncode is None:
            process.kill()
            with trio.move_on_after(FINISH_S, shield=True):
                await process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                await stream.aclose()


def _check_authorization_request(server: Running, out: dict[str, Any]) -> None:
    """What the SDK asked for: this endpoint, every scope it offers, PKCE S256."""
    asked = out["authorize"]
    assert asked["client_id"] == out["clientId"]
    assert asked["resource"] == server.url
    assert asked["scope"] == "read write destructive"
    assert asked["code_challenge_method"] == "S256"
    assert asked["redirect_uri"] == REDIRECT
    assert out["clientIssuer"] == f"{server.base_url}/oauth"


async def test_the_ts_sdk_client_gets_consent_calls_tools_and_refreshes(tmp_path: Path) -> None:
    async with (
        running(tmp_path) as server,
        admin_browser(server) as browser,
        _script(server, tmp_path) as script,
    ):
        with trio.fail_after(REDIRECT_S):
            authorization_url = (await script.document("the redirect"))["authorize"]
        assert authorization_url.startswith(f"{server.base_url}/oauth/authorize?")
        sent_back = await browser.authorize(authorization_url, scope="write")
        assert set(sent_back) == {"code", "state", "iss"}
        await script.answer(sent_back)
        with trio.fail_after(FINISH_S):
            out = await script.document("its calls were done")
            await script.finished()

        _check_authorization_request(server, out)
        assert out["redirect"] == {"state": sent_back["state"], "iss": f"{server.base_url}/oauth"}

        # The code's tokens: the administrator chose write, so "read write".
        tokens = out["tokens"]
        assert tokens["accessToken"].startswith("agwo_")
        assert tokens["refreshToken"].startswith("agwor_")
        assert (tokens["tokenType"].lower(), tokens["scope"]) == ("bearer", "read write")
        assert tokens["expiresIn"] > 0
        assert "search_context" in out["tools"]
        assert out["search"]["isError"] is False, out["search"]
        assert "Refund policy" in out["search"]["text"]

        # The refresh: new access and refresh tokens, no browser, and they work.
        assert out["refreshResult"] == "AUTHORIZED"
        refreshed = out["refreshed"]
        assert refreshed["accessToken"].startswith("agwo_")
        assert refreshed["accessToken"] != tokens["accessToken"]
        assert refreshed["refreshToken"] not in (None, tokens["refreshToken"])
        assert refreshed["scope"] == "read write"
        assert out["searchRefreshed"]["isError"] is False, out["searchRefreshed"]
        assert "Refund policy" in out["searchRefreshed"]["text"]
        assert (out["redirects"], out["tokensSaved"]) == (1, 2)

        # Registered under its own name; consented to once, by the administrator.
        [client] = await server.store.select(OAuthClient, client_id=out["clientId"])
        assert client.name == "Node test client"
        issued = [t for t in await server.store.select(McpToken) if t.oauth_client_id]
        assert len(issued) == 2
        assert {t.oauth_client_id for t in issued} == {out["clientId"]}
        assert {t.scope.value for t in issued} == {"write"}
        consented = await server.store.select(AuditEntry, action="oauth.consent")
        assert [e.actor for e in consented] == ["admin:alice"]

        # The first refresh token was spent by the refresh: presented again, it is
        # refused, and the whole family goes with it (the new access token too).
        assert await mcp_status(server, refreshed["accessToken"]) == 200
        async with httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http:
            replay = await refresh(http, out["clientId"], tokens["refreshToken"])
        assert replay.status_code == 400
        assert replay.json()["error"] == "invalid_grant"
        assert await mcp_status(server, refreshed["accessToken"]) == 401


async def test_the_ts_sdk_client_is_told_of_a_denial(tmp_path: Path) -> None:
    async with (
        running(tmp_path) as server,
        admin_browser(server) as browser,
        _script(server, tmp_path) as script,
    ):
        with trio.fail_after(REDIRECT_S):
            authorization_url = (await script.document("the redirect"))["authorize"]
        denied = await browser.decide(await browser.consent_page(authorization_url), "deny")
        assert denied.status_code == 303, denied.text
        location = httpx2.URL(denied.headers["location"])
        assert str(location).startswith(REDIRECT)
        await script.answer(dict(location.params))
        with trio.fail_after(FINISH_S):
            out = await script.document("it was told")
            await script.finished()

        _check_authorization_request(server, out)
        assert out["refused"]["error"] == "access_denied"
        assert out["tokens"] is None
        assert not [t for t in await server.store.select(McpToken) if t.oauth_client_id]
        denials = await server.store.select(AuditEntry, action="oauth.deny")
        assert [e.actor for e in denials] == ["admin:alice"]
