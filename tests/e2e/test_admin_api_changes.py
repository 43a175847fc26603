"""The admin API's renames, a document's policy and connectors, on a serving agentws.

Each operation calls the service function the CLI and the dashboard call,
so it is audited alike, with ``admin:<username>`` as the actor; a test and
a refresh of a connector are :mod:`agentws.checks.connectors`, the remote a
real MCP server on loopback. (schemathesis runs over these operations too,
in ``test_admin_api.py``.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from agentws.admins.access import create_admin_token
from agentws.admins.accounts import create_admin
from agentws.domain.models import AuditEntry
from tests.e2e.mcp_support import Running, running
from tests.e2e.remote_support import (
    SDK_CLIENT_WARNINGS,
    ThirdParty,
    attach_remote,
    third_party_server,
    tool,
)

pytestmark = pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)

LOOPBACK = {"AGENTWS_CONNECTOR_ALLOWLIST": "127.0.0.1/32", "AGENTWS_CONNECTOR_REFRESH_S": "0"}


async def _api(server: Running) -> httpx2.AsyncClient:
    await create_admin(server.store, "alice", actor="t")
    _, secret = await create_admin_token(server.store, "alice", "tests", actor="t")
    return httpx2.AsyncClient(
        base_url=f"{server.base_url}/api/v1",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=30,
    )


async def _audited(server: Running, action: str) -> list[tuple[str, str, dict[str, Any]]]:
    entries = await server.store.select(AuditEntry, action=action)
    entries.sort(key=lambda e: e.created_at)
    return [(e.actor, e.target, e.detail) for e in entries]


def _error(answer: httpx2.Response, status: int) -> dict[str, str]:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"error"}
    return dict(body["error"])


async def test_renames_and_a_documents_policy(tmp_path: Path) -> None:
    async with running(tmp_path) as server, await _api(server) as api:
        workspace = await api.patch("/workspaces/acme", json={"name": "Acme Inc"})
        assert workspace.status_code == 200, workspace.text
        assert (workspace.json()["slug"], workspace.json()["name"]) == ("acme", "Acme Inc")
        assert [w["name"] for w in (await api.get("/workspaces")).json()["items"]] == ["Acme Inc"]

        group = await api.patch("/workspaces/acme/groups/ops", json={"name": "Operations"})
        assert group.status_code == 200, group.text
        shown = group.json()
        assert (shown["workspace"], shown["slug"], shown["name"]) == ("acme", "ops", "Operations")
        assert shown["url"].endswith("/mcp/g/acme/ops")  # as `group list` says it

        library = await api.patch("/workspaces/acme/libraries/handbook", json={"name": "Guides"})
        assert library.status_code == 200, library.text
        shelf = library.json()
        assert (shelf["slug"], shelf["name"], shelf["groups"]) == ("handbook", "Guides", ["ops"])
        assert "refunds" in [d["slug"] for d in shelf["documents"]]

        path = "/workspaces/acme/libraries/handbook/documents/refunds"
        document = await api.patch(path, json={"policy": "spine"})
        assert document.status_code == 200, document.text
        assert (document.json()["slug"], document.json()["policy"]) == ("refunds", "spine")
        again = await api.patch(path, json={"policy": "spine"})  # already: nothing recorded
        assert again.json()["policy"] == "spine"

        # What is wrong is said, and nothing changes.
        assert _error(await api.patch(path, json={"policy": "always"}), 400) == {
            "code": "invalid",
            "message": "policy must be one of spine, on_demand, never",
        }
        assert "'policy' is required" in _error(await api.patch(path, json={}), 400)["message"]
        gone = await api.patch(path.replace("refunds", "nope"), json={"policy": "never"})
        assert _error(gone, 404)["message"] == "no document 'nope' in library 'handbook'"
        blank = await api.patch("/workspaces/acme", json={"name": "   "})
        assert "workspace name must be 1 to" in _error(blank, 400)["message"]
        assert _error(await api.patch("/workspaces/acme", json={"name": 7}), 400) == {
            "code": "invalid",
            "message": "'name' must be a str",
        }
        unknown = await api.patch("/workspaces/acme/groups/nope", json={"name": "X"})
        assert "group 'nope'" in _error(unknown, 404)["message"]

        # Audited as the CLI's and the dashboard's changes are; a change to what is so is not.
        renames = [
            (*entry[:2], entry[2]["name"])
            for action in ("workspace.rename", "group.rename", "library.rename")
            for entry in await _audited(server, action)
        ]
        assert renames == [
            ("admin:alice", "acme", "Acme Inc"),
            ("admin:alice", "acme/ops", "Operations"),
            ("admin:alice", "acme/handbook", "Guides"),
        ]
        policies = await _audited(server, "document.policy")
        assert [(actor, target, d["was"], d["policy"]) for actor, target, d in policies] == [
            ("admin:alice", "acme/handbook/refunds", "on_demand", "spine")
        ]


async def test_connectors_listed_turned_off_and_on_tested_and_refreshed(tmp_path: Path) -> None:
    state = ThirdParty([tool("lookup", "Look things up", read_only_hint=True), tool("send", "S")])
    async with running(tmp_path, **LOOPBACK) as server, await _api(server) as api:
        async with third_party_server(state) as url:
            await _exercise(api, server, state, url)
        # The remote is down now: a test and a refresh answer 502, and the refresh is audited.
        for action in ("test", "refresh"):
            failed = await api.post(f"/workspaces/acme/connectors/third/{action}")
            error = _error(failed, 502)
            assert error["code"] == "remote_error"
            assert "connector 'third'" in error["message"]
        refreshes = await _audited(server, "connector.refresh")
        ((actor, target, detail),) = [r for r in refreshes if "error" in r[2]]
        assert (actor, target) == ("admin:alice", "acme/third")
        assert "cannot list tools" in detail["error"]


async def _exercise(api: httpx2.AsyncClient, server: Running, state: ThirdParty, url: str) -> None:
    """Connector ``third`` at ``url`` (up): listed, turned off and on, tested, refreshed."""
    await attach_remote(server.store, url, {})
    listed = (await api.get("/workspaces/acme/connectors")).json()
    assert [(c["name"], c["kind"], c["active"]) for c in listed["items"]] == [
        ("third", "remote_mcp", True)
    ]
    assert listed["next_cursor"] is None
    shown = (await api.get("/workspaces/acme/connectors/third")).json()
    assert (shown["url"], shown["secret"], shown["headers"]) == (url, None, {})

    # Off: no group lists its tools; on again: they are back, as they were.
    tools = "/workspaces/acme/groups/ops/tools"
    before = sorted(t["name"] for t in (await api.get(tools)).json()["items"])
    assert "third_lookup" in before
    off = await api.patch("/workspaces/acme/connectors/third", json={"active": False})
    assert (off.status_code, off.json()["active"]) == (200, False)
    assert not [t for t in (await api.get(tools)).json()["items"] if t["source"] == "third"]
    on = await api.patch("/workspaces/acme/connectors/third", json={"active": True})
    assert (on.status_code, on.json()["active"]) == (200, True)
    assert sorted(t["name"] for t in (await api.get(tools)).json()["items"]) == before
    refused = await api.patch("/workspaces/acme/connectors/third", json={"active": "no"})
    assert _error(refused, 400)["message"] == "'active' must be a bool"
    assert (
        "'active', 'relay_requests' or 'protocol' is required"
        in _error(await api.patch("/workspaces/acme/connectors/third", json={}), 400)["message"]
    )
    # Its link's revision: pinned, refused when unknown, and back to auto.
    pinned = await api.patch("/workspaces/acme/connectors/third", json={"protocol": "2026-07-28"})
    assert (pinned.status_code, pinned.json()["protocol"]) == (200, "2026-07-28")
    unknown = await api.patch("/workspaces/acme/connectors/third", json={"protocol": "2024-01-01"})
    assert unknown.status_code == 400, unknown.text
    auto = await api.patch("/workspaces/acme/connectors/third", json={"protocol": "auto"})
    assert auto.json()["protocol"] == "auto"
    assert [
        e.detail for e in await server.store.select(AuditEntry, action="connector.protocol")
    ] == [
        {"protocol": "2026-07-28"},
        {"protocol": "auto"},
    ]

    # A test: the handshake and the list, and nothing changes.
    calls = len(state.authorizations)
    tested = await api.post("/workspaces/acme/connectors/third/test")
    assert tested.status_code == 200, tested.text
    check = tested.json()
    assert (check["ok"], check["connector"], check["transport"], check["tools"]) == (
        True,
        "third",
        "streamable_http",
        2,
    )
    assert check["server"]["name"] == "third-party"
    assert check["detail"].startswith("third-party ")
    assert len(state.authorizations) > calls
    assert await _audited(server, "connector.refresh") == []

    # A refresh: what changed, audited.
    state.tools = [tool("lookup", "Look things up, and more", read_only_hint=True)]
    refreshed = await api.post("/workspaces/acme/connectors/third/refresh")
    assert refreshed.status_code == 200, refreshed.text
    assert refreshed.json() == {
        "workspace": "acme",
        "connector": "third",
        "added": [],
        "changed": ["lookup"],
        "removed": ["send"],
        "unchanged": 0,
        "left_out": [],
    }
    assert [(a, t) for a, t, _ in await _audited(server, "connector.refresh")] == [
        ("admin:alice", "acme/third")
    ]
    missing = await api.post("/workspaces/acme/connectors/nope/refresh")
    assert _error(missing, 404)["message"].startswith("no connector 'nope' in workspace 'acme'")


async def test_a_native_connectors_tools_are_fixed(tmp_path: Path) -> None:
    from agentws.connectors.admin import add_connector
    from agentws.domain.allowlist import Allowlist
    from agentws.domain.models import ConnectorKind

    async with running(tmp_path) as server, await _api(server) as api:
        await add_connector(
            server.store,
            "acme",
            "gh",
            kind=ConnectorKind.GITHUB,
            url=None,
            headers={},
            secret=None,
            box=None,
            # Named: saved without asking DNS for api.github.com (no test may).
            allowlist=Allowlist.parse("api.github.com"),
            actor="t",
        )
        refused = await api.post("/workspaces/acme/connectors/gh/refresh")
        assert _error(refused, 400)["message"] == "'gh' is a native connector: its tools are fixed"
        assert await _audited(server, "connector.refresh") == []


async def test_a_secret_the_service_cannot_open_is_a_503_saying_why(tmp_path: Path) -> None:
    """A connector sealed with a key this service does not have: nothing is sent, 503."""
    from agentws.connectors.admin import ConnectorSecret, add_connector
    from agentws.domain.allowlist import Allowlist
    from agentws.domain.models import ConnectorKind
    from agentws.settings.config import Settings
    from agentws.settings.secret_box import SecretBox, ensure_key_file

    elsewhere, empty = tmp_path / "elsewhere", tmp_path / "empty"
    elsewhere.mkdir()
    empty.mkdir()
    ensure_key_file(elsewhere)
    box = SecretBox.from_settings(Settings.from_env({"AGENTWS_DATA_DIR": str(elsewhere)}))
    async with running(tmp_path, AGENTWS_DATA_DIR=str(empty)) as server, await _api(server) as api:
        await add_connector(
            server.store,
            "acme",
            "gh",
            kind=ConnectorKind.GITHUB,
            url="http://127.0.0.1:9/github",
            headers={},
            secret=ConnectorSecret("ghp_not_for_this_service"),
            box=box,
            allowlist=Allowlist.parse("127.0.0.1/32"),
            actor="t",
        )
        error = _error(await api.post("/workspaces/acme/connectors/gh/test"), 503)
        assert error["code"] == "config_error"
        assert "AGENTWS_SECRET_KEY" in error["message"]
        assert "ghp_" not in error["message"]
