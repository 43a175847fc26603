"""The MCP group endpoint driven by the MCP Inspector's CLI (``inspector --cli``).

The Inspector (pinned in ``tests/conformance/package-lock.json``, run with the
Node 22 installed beside it) calls one method per run against a live agentws
with the group's bearer token in ``--header``, and prints the result as JSON.
It negotiates by protocol era: ``legacy`` (2025-11-25 and older, with the
``initialize`` handshake), ``modern`` (2026-07-28, stateless) or ``auto``
(modern first, falling back).

Each era lists tools, calls the read tool ``search_context``, lists and reads
resources and resource templates (a document's lines by template), lists
prompts and gets one with arguments (a skill's).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
import trio

from agentws.approvals.decisions import approve
from agentws.domain.models import Approval, ApprovalStatus, Capability
from agentws.workspaces.admin import create_token
from tests.e2e.conformance_support import INSPECTOR, NODE, NODE_CACHE, require
from tests.e2e.mcp_support import SKILL_PROMPT, Running, running
from tests.e2e.polling import wait_until
from tests.e2e.relay_support import Remote, remote_server
from tests.e2e.remote_support import SDK_CLIENT_WARNINGS, attach_remote
from tests.e2e.test_client_modes import ENV as RELAY_ENV
from tests.e2e.test_client_modes import LABELS as RELAY_LABELS
from tests.e2e.test_skill_arguments import add_review_skill
from tests.support import clean_env

# One Inspector run: Node's start-up, one connection, one request.
INSPECTOR_S = 60.0

ERAS = ["legacy", "auto", "modern"]


async def _inspect(
    server: Running, home: Path, era: str, *args: str, token: str | None = None
) -> dict[str, Any]:
    """Run the Inspector CLI once against ``server``; the ``result`` it printed."""
    entry = require(INSPECTOR) / "clients" / "launcher" / "build" / "index.js"
    command = [
        str(NODE),
        str(entry),
        "--cli",
        server.url,
        "--transport",
        "http",
        "--header",
        f"Authorization: Bearer {token or server.token}",
        "--protocol-era",
        era,
        "--format",
        "json",
        "--quiet",
        *args,
    ]
    # Its catalog and client config live under HOME: keep them in the test's folder.
    with trio.fail_after(INSPECTOR_S):
        done = await trio.run_process(
            command,
            env=clean_env(HOME=str(home), **NODE_CACHE),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{stderr}\n{stdout}"
    result: dict[str, Any] = json.loads(stdout)["result"]
    return result


@pytest.fixture(autouse=True)
def _installed() -> None:
    # A sync fixture, so a missing install fails with its message alone, not
    # wrapped in the exception group of the server's nursery.
    require(INSPECTOR)


@pytest.mark.parametrize("era", ERAS)
async def test_inspector_cli(tmp_path: Path, era: str) -> None:
    async with running(tmp_path) as server:
        tools = await _inspect(server, tmp_path, era, "--method", "tools/list")
        names = {tool["name"] for tool in tools["tools"]}
        assert {"search_context", "read_context_document"} <= names, names

        called = await _inspect(
            server,
            tmp_path,
            era,
            "--method",
            "tools/call",
            "--tool-name",
            "search_context",
            "--tool-arg",
            "query=refund",
        )
        assert not called.get("isError"), called
        assert "agentws://handbook/refunds" in called["content"][0]["text"], called

        resources = await _inspect(server, tmp_path, era, "--method", "resources/list")
        uris = {resource["uri"] for resource in resources["resources"]}
        assert "agentws://handbook/refunds" in uris, uris

        document = await _inspect(
            server,
            tmp_path,
            era,
            "--method",
            "resources/read",
            "--uri",
            "agentws://handbook/refunds",
        )
        assert document["contents"][0]["text"].startswith("# Refund policy"), document

        templates = await _inspect(server, tmp_path, era, "--method", "resources/templates/list")
        shapes = {template["uriTemplate"] for template in templates["resourceTemplates"]}
        assert "agentws://{library}/{document}{?lines}" in shapes, shapes
        lines = await _inspect(
            server,
            tmp_path,
            era,
            "--method",
            "resources/read",
            "--uri",
            "agentws://handbook/refunds?lines=1",
        )
        assert lines["contents"][0]["text"].strip() == "# Refund policy", lines

        await add_review_skill(server.store, tmp_path)
        prompts = await _inspect(server, tmp_path, era, "--method", "prompts/list")
        assert {prompt["name"] for prompt in prompts["prompts"]} == {"triage", "review"}

        prompt = await _inspect(
            server, tmp_path, era, "--method", "prompts/get", "--prompt-name", "triage"
        )
        assert SKILL_PROMPT in json.dumps(prompt["messages"]), prompt
        review = await _inspect(
            server,
            tmp_path,
            era,
            "--method",
            "prompts/get",
            "--prompt-name",
            "review",
            "--prompt-args",
            "language=go",
        )
        assert "Review this go change." in json.dumps(review["messages"]), review


@pytest.mark.filterwarnings(*SDK_CLIENT_WARNINGS)
async def test_inspector_cli_confirms_and_follows_a_queued_call(tmp_path: Path) -> None:
    """Modern era: a destructive call confirmed with its one-time token (the CLI
    declares no elicitation), a remote tool reporting progress, and a queued
    write call's outcome read back."""
    remote = Remote()
    async with running(tmp_path, **RELAY_ENV) as server, remote_server(remote) as url:
        await attach_remote(server.store, url, RELAY_LABELS)
        lead = await create_token(
            server.store, "acme", "ops", name="lead", scope=Capability.DESTRUCTIVE, actor="t"
        )
        inspect = functools.partial(_inspect, server, tmp_path, "modern", token=lead.secret)
        asked = await inspect("--method", "tools/call", "--tool-name", "third_rich")
        data = asked["structuredContent"]
        assert data["status"] == "confirmation_required", asked
        ran = await inspect(
            "--method",
            "tools/call",
            "--tool-name",
            "third_rich",
            "--tool-arg",
            f"{data['confirm_argument']}={data['confirm_token']}",
        )
        assert ran["structuredContent"] == {"total": 2, "items": ["a", "b"]}, ran

        # A remote tool that reports progress as it runs: the CLI prints the
        # result alone (test_relay_modern.py follows the progress itself).
        progressed = await inspect("--method", "tools/call", "--tool-name", "third_progress")
        assert progressed["content"] == [{"type": "text", "text": "done"}], progressed
        assert remote.progress_tokens and remote.progress_tokens[-1] is not None

        queued = await inspect("--method", "tools/call", "--tool-name", "third_failing")
        approval_id = queued["structuredContent"]["approval_id"]
        await approve(server.store, approval_id, actor="admin", reason=None)
        # The approved call runs in the service; its outcome is then read with one request.
        await wait_until(
            lambda: server.store.get(Approval, approval_id),
            lambda approval: approval.status in (ApprovalStatus.EXECUTED, ApprovalStatus.FAILED),
            what="the approved call ran",
        )
        outcome = await inspect(
            "--method", "resources/read", "--uri", f"agentws://approvals/{approval_id}"
        )
        assert json.loads(outcome["contents"][0]["text"])["status"] in ("executed", "failed")
