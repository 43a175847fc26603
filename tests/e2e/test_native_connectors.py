"""Native GitHub, Slack and Stripe connectors against fake upstreams on loopback.

The fakes answer with the real APIs' request and response shapes (paths,
verbs, auth headers, JSON bodies, error bodies), and record what they got.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import attrs
import hypercorn.trio
import mcp_types as types
import pytest
import trio
from hypercorn.config import Config
from mcp.shared.exceptions import MCPError

from agentws.connectors.admin import (
    ConnectorSecret,
    add_connector,
    attach_connector,
    connector_headers,
)
from agentws.connectors.native import ACTIONS, run_action
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import CachedTool, Capability, Connector, ConnectorKind
from agentws.doors.mcp.dispatch.handlers import PERMISSION_DENIED
from agentws.settings.secret_box import SecretBox, ensure_key_file
from tests.e2e.asgi_fakes import lifespan, read_body
from tests.e2e.mcp_support import running, sdk_session
from tests.support import run_agentws

LOOPBACK = Allowlist.parse("127.0.0.1/32")
TIMEOUT_S = 10.0
TOKEN = "ghp_fake_token_0123456789"


@attrs.define
class Upstream:
    """Requests the fakes received: (method, path, query, headers, JSON body)."""

    seen: list[tuple[str, str, dict[str, list[str]], dict[str, str], Any]] = attrs.field(
        factory=list
    )


def _route(
    method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: Any
) -> tuple[int, Any]:
    authorization = headers.get("authorization")
    if path == "/github/user" and method == "GET":
        if authorization != f"Bearer {TOKEN}":
            return 401, {"message": "Bad credentials", "status": "401"}
        return 200, {"login": "ada", "id": 1, "type": "User"}
    if path == "/slack/api/auth.test" and method == "POST":
        if authorization != f"Bearer {TOKEN}":
            return 200, {"ok": False, "error": "invalid_auth"}
        return 200, {"ok": True, "team": "Acme", "user": "agentws-bot", "team_id": "T1"}
    if path == "/stripe/v1/balance" and method == "GET":
        if authorization != f"Bearer {TOKEN}":
            message = "Invalid API Key provided: sk_test_****"
            return 401, {"error": {"type": "invalid_request_error", "message": message}}
        return 200, {"object": "balance", "livemode": False, "available": []}
    if path == "/github/search/issues" and method == "GET":
        items = [
            {
                "number": 7,
                "title": "Refund bug",
                "state": "open",
                "html_url": "https://github.com/acme/api/issues/7",
            }
        ]
        return 200, {"total_count": 1, "incomplete_results": False, "items": items}
    if path == "/github/user/repos":
        return 200, [{"id": 1, "full_name": "acme/api", "private": True}]
    if path == "/github/repos/acme/api/issues" and method == "POST":
        return 201, {
            "number": 8,
            "title": body["title"],
            "html_url": "https://github.com/acme/api/issues/8",
        }
    if path == "/github/repos/acme/api/git/refs/heads/old" and method == "DELETE":
        return 204, None
    if path.startswith("/github/"):
        return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
    if path == "/slack/api/chat.postMessage" and method == "POST":
        if body["channel"] == "nope":
            return 200, {"ok": False, "error": "channel_not_found"}
        return 200, {
            "ok": True,
            "channel": body["channel"],
            "ts": "1700000000.000100",
            "message": {"text": body["text"]},
        }
    if path == "/slack/api/conversations.list":
        return 200, {
            "ok": True,
            "channels": [{"id": "C1", "name": "general"}],
            "response_metadata": {"next_cursor": ""},
        }
    if path == "/stripe/v1/customers/cus_123":
        return 200, {"id": "cus_123", "object": "customer", "email": "ada@example.com"}
    if path.startswith("/stripe/v1/customers/"):
        customer = path.rsplit("/", 1)[1]
        return 404, {
            "error": {"type": "invalid_request_error", "message": f"No such customer: '{customer}'"}
        }
    if path == "/stripe/v1/charges":
        return 200, {
            "object": "list",
            "data": [{"id": "ch_1", "amount": 4200, "customer": query.get("customer", [None])[0]}],
            "has_more": False,
        }
    return 404, {"error": "no such fake route"}


@asynccontextmanager
async def fake_upstreams() -> AsyncIterator[tuple[str, Upstream]]:
    upstream = Upstream()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if await lifespan(scope, receive, send):
            return
        body = await read_body(receive)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        query = parse_qs(scope["query_string"].decode())
        parsed = json.loads(body) if body else None
        upstream.seen.append((scope["method"], scope["path"], query, headers, parsed))
        status, payload = _route(scope["method"], scope["path"], query, headers, parsed)
        data = b"" if payload is None else json.dumps(payload).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": data})

    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            functools.partial(hypercorn.trio.serve, app, config, shutdown_trigger=stop.wait)
        )
        yield binds[0], upstream
        stop.set()


def _connector(kind: ConnectorKind, base: str) -> Connector:
    return Connector(workspace_id="ws_x", name=kind.value, kind=kind, url=base)


async def _run(
    connector: Connector,
    action: str,
    arguments: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> types.CallToolResult:
    with trio.fail_after(TIMEOUT_S):
        return await run_action(
            connector,
            ACTIONS[connector.kind][action],
            arguments,
            headers=headers or {},
            allowlist=LOOPBACK,
        )


def _text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


async def test_github_actions_speak_the_github_api() -> None:
    async with fake_upstreams() as (base, upstream):
        github = _connector(ConnectorKind.GITHUB, f"{base}/github")
        auth = {"Authorization": f"Bearer {TOKEN}"}
        found = await _run(
            github, "search_issues", {"query": "repo:acme/api refund", "limit": 5}, auth
        )
        assert not found.is_error
        assert (found.structured_content or {})["items"][0]["number"] == 7
        method, path, query, headers, _ = upstream.seen[-1]
        assert (method, path, query) == (
            "GET",
            "/github/search/issues",
            {"q": ["repo:acme/api refund"], "per_page": ["5"]},
        )
        assert headers["authorization"] == f"Bearer {TOKEN}"
        assert headers["accept"] == "application/vnd.github+json"
        assert headers["x-github-api-version"] == "2022-11-28"

        repos = await _run(github, "list_repos", {})
        assert (repos.structured_content or {})["items"][0]["full_name"] == "acme/api"
        created = await _run(
            github, "create_issue", {"owner": "acme", "repo": "api", "title": "Hi", "body": "x"}
        )
        assert (created.structured_content or {})["number"] == 8
        assert upstream.seen[-1][4] == {"title": "Hi", "body": "x"}
        deleted = await _run(
            github, "delete_branch", {"owner": "acme", "repo": "api", "branch": "old"}
        )
        assert not deleted.is_error
        assert upstream.seen[-1][:2] == ("DELETE", "/github/repos/acme/api/git/refs/heads/old")

        missing = await _run(
            github, "create_issue", {"owner": "acme", "repo": "missing", "title": "Hi"}
        )
        assert missing.is_error
        assert "GitHub answered HTTP 404: Not Found" in _text(missing)


async def test_slack_and_stripe_actions_and_their_errors() -> None:
    async with fake_upstreams() as (base, upstream):
        slack = _connector(ConnectorKind.SLACK, f"{base}/slack/api")
        posted = await _run(
            slack, "post_message", {"channel": "C1", "text": "*hi*", "thread_ts": "1.2"}
        )
        assert (posted.structured_content or {})["ts"] == "1700000000.000100"
        assert upstream.seen[-1][4] == {
            "channel": "C1",
            "text": "*hi*",
            "mrkdwn": True,
            "thread_ts": "1.2",
        }
        gone = await _run(slack, "post_message", {"channel": "nope", "text": "x"})
        assert gone.is_error
        assert "Slack error 'channel_not_found'" in _text(gone)
        channels = await _run(slack, "list_channels", {})
        assert (channels.structured_content or {})["channels"][0]["name"] == "general"

        stripe = _connector(ConnectorKind.STRIPE, f"{base}/stripe")
        customer = await _run(stripe, "get_customer", {"customer_id": "cus_123"})
        assert (customer.structured_content or {})["email"] == "ada@example.com"
        unknown = await _run(stripe, "get_customer", {"customer_id": "cus_missing"})
        assert unknown.is_error
        assert "Stripe answered HTTP 404: No such customer: 'cus_missing'" in _text(unknown)
        charges = await _run(stripe, "list_charges", {"customer_id": "cus_123", "limit": 3})
        assert (charges.structured_content or {})["data"][0]["customer"] == "cus_123"
        assert upstream.seen[-1][2] == {"limit": ["3"], "customer": ["cus_123"]}


async def test_an_unreachable_upstream_is_a_tool_error() -> None:
    github = _connector(ConnectorKind.GITHUB, "http://127.0.0.1:9/github")
    with trio.fail_after(TIMEOUT_S):
        result = await _run(github, "list_repos", {})
    assert result.is_error
    assert "cannot reach" in _text(result)


async def test_native_tools_on_the_endpoint_read_runs_write_is_queued(tmp_path: Path) -> None:
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_DATA_DIR": str(tmp_path)}
    ensure_key_file(tmp_path)
    async with (
        fake_upstreams() as (base, upstream),
        running(tmp_path, with_library=False, **env) as server,
    ):
        box = SecretBox.from_settings(server.runtime.settings)
        connector = await add_connector(
            server.store,
            "acme",
            "github",
            kind=ConnectorKind.GITHUB,
            url=f"{base}/github",
            headers={},
            secret=ConnectorSecret(TOKEN),
            box=box,
            allowlist=LOOPBACK,
            actor="t",
        )
        assert connector_headers(connector, box)["Authorization"] == f"Bearer {TOKEN}"
        labels = {
            t.name: t.label
            for t in await server.store.select(CachedTool, connector_id=connector.id)
        }
        assert labels == {
            "search_issues": Capability.READ,
            "list_repos": Capability.READ,
            "create_issue": Capability.WRITE,
            "delete_branch": Capability.DESTRUCTIVE,
        }
        await attach_connector(server.store, "acme", "ops", "github", actor="t")
        async with sdk_session(server, "sse") as session:
            with trio.fail_after(TIMEOUT_S):
                tools = {t.name: t for t in (await session.list_tools()).tools}
                assert set(tools) == {
                    "github_search_issues",
                    "github_list_repos",
                    "github_create_issue",
                    "github_delete_branch",
                    "get_approval",
                }
                assert tools["github_delete_branch"].annotations.destructive_hint is True  # type: ignore[union-attr]
                found = await session.call_tool("github_search_issues", {"query": "refund"})
                assert "Refund bug" in _text(found)
                # A write waits for an admin; a destructive tool is beyond the
                # default token scope (write).
                queued = await session.call_tool(
                    "github_create_issue", {"owner": "acme", "repo": "api", "title": "x"}
                )
                assert (queued.structured_content or {})["status"] == "queued"
                with pytest.raises(MCPError) as denied:
                    await session.call_tool(
                        "github_delete_branch", {"owner": "acme", "repo": "api", "branch": "old"}
                    )
                assert denied.value.code == PERMISSION_DENIED
        assert [(m, p) for m, p, *_ in upstream.seen] == [("GET", "/github/search/issues")]
        assert upstream.seen[0][3]["authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize(
    ("kind", "path", "works"),
    [
        ("github", "/github", "authenticated as ada"),
        ("slack", "/slack/api", "authenticated as agentws-bot in team Acme"),
        ("stripe", "/stripe", "authenticated (test mode)"),
    ],
)
async def test_connector_test_proves_the_credential_and_changes_nothing(
    tmp_path: Path, kind: str, path: str, works: str
) -> None:
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32"}
    async with fake_upstreams() as (base, upstream):
        for command in (["init"], ["workspace", "create", "acme"]):
            assert (await _cli(tmp_path, *command, **env))[0] == 0
        for name, token in (("good", TOKEN), ("bad", "wrong-token")):
            code, _, err = await _cli(
                tmp_path,
                *("connector", "add", "acme", name, "--kind", kind, "--url", base + path),
                "--secret-env",
                "TOKEN",
                TOKEN=token,
                **env,
            )
            assert code == 0, err
        seen_after_add = len(upstream.seen)
        code, out, err = await _cli(tmp_path, "connector", "test", "acme", "good", **env)
        assert code == 0, err
        assert out.startswith(f"Connector 'good' works: {works} (")
        assert "Nothing was changed." in out
        code, out, err = await _cli(tmp_path, "connector", "test", "acme", "bad", "--json", **env)
        assert code == 1
        assert out == ""
        error = json.loads(err)["error"]
        assert error["code"] == "upstream_error"
        assert error["message"].startswith("connector 'bad': ")
        assert {"github": "HTTP 401: Bad credentials", "slack": "'invalid_auth'"}.get(
            kind, "HTTP 401: Invalid API Key"
        ) in error["message"]
        # One read each, nothing else, and never a secret in what was printed.
        assert len(upstream.seen) == seen_after_add + 2
        assert "wrong-token" not in out + err


async def test_connector_test_names_an_unreachable_upstream(tmp_path: Path) -> None:
    env = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32"}
    for command in (["init"], ["workspace", "create", "acme"]):
        assert (await _cli(tmp_path, *command, **env))[0] == 0
    url = "http://127.0.0.1:9/github"
    code, _, err = await _cli(
        tmp_path, "connector", "add", "acme", "gh", "--kind", "github", "--url", url, **env
    )
    assert code == 0, err
    with trio.fail_after(TIMEOUT_S * 3):
        code, _, err = await _cli(tmp_path, "connector", "test", "acme", "gh", **env)
    assert code == 1
    assert f"agentws: error: connector 'gh': cannot reach {url}" in err


async def _cli(tmp_path: Path, *args: str, **env: str) -> tuple[int, str, str]:
    return await run_agentws(tmp_path, f"sqlite:///{tmp_path / 'cli.db'}", *args, **env)
