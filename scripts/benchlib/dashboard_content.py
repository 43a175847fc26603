"""What a workspace's pages show besides its traffic, for ``scripts/bench dashboard``.

:func:`seed_content` fills a workspace (with its group, made by the CLI)
with what an operator would have set up, through the service's own
functions (the ones the CLI, the dashboard and the admin API call), so
every dashboard page has realistic content to render:

- a few more groups, each with a token;
- connectors of every kind: a remote MCP connector whose tool cache holds
  ``tools`` tools (written by :func:`~agentws.tools.cache_sync.sync_tool_cache`,
  as a refresh would: no network; its URL is loopback, which the service's
  outbound guard refuses at once), GitHub, Slack and Stripe (secrets sealed
  with the service key; their host names "resolve" to a public address
  here instead of asking DNS) and an incoming webhook; attached to groups;
- labels and permissions, for the workspace and for groups;
- two libraries with ``documents`` documents (a few of 1 MiB, some of
  64-256 KiB, most of a few KiB) and ``skills`` skills with assets;
- ``approvals`` pending calls of the remote connector's tools (written in
  bulk as the gate stores them, as ``add_approvals.py`` does), some denied
  (:func:`~agentws.approvals.decisions.deny`) and some that ran (written
  finished, as the service's runner leaves them: approving would have the
  server run them during the measures);
and :func:`pending_consent` adds a pending OAuth authorization request, as
``/oauth/authorize`` leaves one for the dashboard's consent page (call it
last: the request lapses after ``consent_ttl_s``).

Returns the counts and the values a URL of each page needs (:class:`Content`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import secrets
from datetime import timedelta
from typing import Any

import attrs
import mcp_types as types
from mcp.server.auth.provider import AuthorizationParams
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from agentws import libraries
from agentws.approvals.decisions import deny
from agentws.connectors.admin import (
    ConnectorSecret,
    add_connector,
    attach_connector,
    find_connector,
)
from agentws.connectors.url_guard import Allowlist
from agentws.core.errors import NotFoundError, ValidationError
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    CachedTool,
    Capability,
    ConnectorKind,
    McpToken,
    Permission,
    arguments_hash,
)
from agentws.domain.rules import utcnow
from agentws.libraries.checks import MAX_DOCUMENT_BYTES
from agentws.libraries.uploads import skill_from_files
from agentws.oauth.provider import Provider
from agentws.oauth.resources import GroupResolver
from agentws.oauth.settings import OAuthSettings
from agentws.settings.secret_box import SecretBox
from agentws.store.union import Store
from agentws.tools import admin as tools_admin
from agentws.tools.cache_sync import sync_tool_cache
from agentws.workspaces import admin as registry
from benchlib.add_connectors import tool_definitions

__all__ = ["Content", "pending_consent", "seed_content"]

ACTOR = "cli:bench"
REMOTE = "tracker"
_GROUPS = ("platform", "support", "finance")
#: (library slug, name, groups it is attached to, its share of the documents).
_LIBRARIES = (
    ("engineering", "Engineering handbook", ("platform",), 0.7),
    ("support-kb", "Support knowledge base", ("support",), 0.3),
)
_NATIVE = (
    ("github", ConnectorKind.GITHUB, "ghp_" + "b" * 36, ("platform",)),
    ("slack", ConnectorKind.SLACK, "xoxb-" + "1" * 40, ("support", "finance")),
    ("stripe", ConnectorKind.STRIPE, "sk_live_" + "c" * 40, ("finance",)),
)
_INCOMING = ("alerts", "https://hooks.slack.com/services/T000BENCH/B000BENCH/" + "x" * 24)
# Saving a native connector checks its host's addresses; this stands in for DNS.
_PUBLIC_ADDRESS = "140.82.121.6"
_WORDS = (
    *("deploy", "rollback", "incident", "customer", "refund", "invoice", "latency", "cache"),
    *("queue", "retry", "schema", "migration", "review", "release", "owner", "escalation"),
    *("runbook", "dashboard", "alert"),
)
# Rows per transaction for the approvals (a few MiB at most).
_CHUNK = 200
_REDIRECT = "http://127.0.0.1:1/callback"


@attrs.frozen
class Content:
    """What was seeded: counts, and the names and ids a page's URL needs."""

    counts: dict[str, int]
    #: URL values: ``name`` (the remote MCP connector), ``library``, ``document`` (the
    #: largest), ``approval_id`` (the largest pending call).
    values: dict[str, str]


async def _public(host: str, port: int) -> list[str]:
    return [_PUBLIC_ADDRESS]


def _remote_tools(count: int, rng: random.Random) -> list[types.Tool]:
    tools = []
    for tool in tool_definitions(REMOTE, count, rng):
        verb = tool["name"].split("_", 1)[0]
        hints = types.ToolAnnotations(
            read_only_hint=verb in ("list", "get", "search", "export"),
            destructive_hint=verb == "delete",
        )
        tools.append(
            types.Tool(
                name=tool["name"],
                description=tool["description"],
                input_schema=tool["input_schema"],
                annotations=hints,
            )
        )
    return tools


async def _groups(store: Store, workspace: str) -> list[str]:
    existing = {g.slug for g in await registry.list_groups(store, workspace)}
    for slug in _GROUPS:
        if slug not in existing:
            await registry.create_group(store, workspace, slug, name=None, actor=ACTOR)
            await registry.create_token(store, workspace, slug, name=f"{slug}-ci", actor=ACTOR)
    return [*sorted(existing), *(s for s in _GROUPS if s not in existing)]


async def _connectors(
    store: Store, workspace: str, group: str, box: SecretBox, tools: int, rng: random.Random
) -> int:
    connector = await add_connector(
        store,
        workspace,
        REMOTE,
        kind=ConnectorKind.REMOTE_MCP,
        url="http://127.0.0.1:9/mcp",
        headers={"X-Team": "platform"},
        secret=ConnectorSecret("remote-" + "d" * 32),
        box=box,
        allowlist=Allowlist.parse("127.0.0.1/32"),
        actor=ACTOR,
    )
    await sync_tool_cache(store, connector, _remote_tools(tools, rng), actor=ACTOR)
    for slug in (group, "platform"):
        await attach_connector(store, workspace, slug, REMOTE, actor=ACTOR)
    for name, kind, secret, groups in _NATIVE:
        await add_connector(
            store,
            workspace,
            name,
            kind=kind,
            url=None,
            headers={},
            secret=ConnectorSecret(secret),
            box=box,
            allowlist=Allowlist.parse(""),
            actor=ACTOR,
            resolve=_public,
        )
        for slug in (group, *groups):
            await attach_connector(store, workspace, slug, name, actor=ACTOR)
    name, url = _INCOMING
    await add_connector(
        store,
        workspace,
        name,
        kind=ConnectorKind.INCOMING_WEBHOOK,
        url=None,
        headers={},
        secret=ConnectorSecret(url),
        box=box,
        allowlist=Allowlist.parse(""),
        actor=ACTOR,
        resolve=_public,
    )
    return 2 + len(_NATIVE)


async def _permissions(store: Store, workspace: str, groups: list[str]) -> int:
    """Labels on the remote tools an admin reviewed, and permissions at both scopes."""
    remote = await find_connector(store, workspace, REMOTE)
    cached = sorted(await store.select(CachedTool, connector_id=remote.id), key=lambda t: t.name)
    for tool in cached[::3]:  # an admin reviewed a third of them: the suggestion taken
        await tools_admin.set_label(
            store, workspace, f"{REMOTE}_{tool.name}", tool.suggested_label, actor=ACTOR
        )
    names = [f"{REMOTE}_{t.name}" for t in cached[:24]]
    for native, _, _, _ in _NATIVE:
        connector = await find_connector(store, workspace, native)
        actions = await store.select(CachedTool, connector_id=connector.id)
        names += [f"{native}_{t.name}" for t in sorted(actions, key=lambda t: t.name)[:2]]
    choices = (Permission.REQUIRES_APPROVAL, Permission.REQUIRES_CONFIRMATION, Permission.DENY)
    rows = 0
    for n, name in enumerate(names):
        # Every other one also gets a group's own permission, over the workspace's.
        for scope in (None, groups[n % len(groups)]) if n % 2 else (None,):
            permission = Permission.ALLOW if n % 4 == 0 else choices[n % len(choices)]
            try:
                await tools_admin.set_permission(
                    store, workspace, name, permission, group_slug=scope, actor=ACTOR
                )
            except (ValidationError, NotFoundError):
                # allow on a destructive tool; a tool the group does not offer
                continue
            rows += 1
    return rows


def _markdown(rng: random.Random, title: str, size: int) -> str:
    parts = [f"# {title}\n\n"]
    total = len(parts[0])
    section = 0
    while total < size:
        section += 1
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(40, 120)))
        item = _WORDS[section % len(_WORDS)]
        text = f"## Section {section}\n\n{words.capitalize()}.\n\n- check the `{item}`\n\n"
        parts.append(text)
        total += len(text)
    return "".join(parts)[:size]


async def _libraries(
    store: Store, workspace: str, documents: int, skills: int, rng: random.Random
) -> tuple[str, str]:
    """The libraries; the slugs of the library and document with the largest document."""
    large = max(1, documents // 40)  # 1 MiB each
    medium = documents // 10  # 64-256 KiB
    made = 0
    for n, (slug, name, groups, share) in enumerate(_LIBRARIES):
        await libraries.create_library(store, workspace, slug, name=name, actor=ACTOR)
        for group in groups:
            await libraries.attach_library(store, workspace, group, slug, actor=ACTOR)
        count = documents - made if n == len(_LIBRARIES) - 1 else round(documents * share)
        for i in range(count):
            number = made + i
            if number < large:
                size = MAX_DOCUMENT_BYTES
            elif number < large + medium:
                size = rng.randint(64, 256) * 1024
            else:
                size = rng.randint(1, 16) * 1024
            title = f"{rng.choice(_WORDS).capitalize()} guide {number:03d}"
            mime = "text/plain" if number % 9 == 4 else "text/markdown"
            await libraries.add_document(
                store,
                workspace,
                slug,
                slug=f"guide-{number:03d}",
                title=title,
                body=_markdown(rng, title, size),
                mime_type=mime,
                policy=("on_demand", "spine", "never")[number % 7 % 3],
                actor=ACTOR,
            )
        made += count
        for i in range(n, skills, len(_LIBRARIES)):
            folder = f"skill-{i:02d}"
            files = [
                (
                    f"{folder}/SKILL.md",
                    f"---\nname: {folder}\ndescription: Handle a {rng.choice(_WORDS)} case "
                    f"step by step\n---\n{_markdown(rng, 'Steps', 2000)}\n".encode(),
                ),
                (f"{folder}/checklist.md", _markdown(rng, "Checklist", 1500).encode()),
                (f"{folder}/data/labels.json", json.dumps(rng.sample(_WORDS, 6)).encode()),
            ]
            if i % 3 == 0:
                files.append(
                    (f"{folder}/reference.md", _markdown(rng, "Reference", 24_000).encode())
                )
            await libraries.add_skill(store, workspace, slug, skill_from_files(files), actor=ACTOR)
    return _LIBRARIES[0][0], "guide-000"


def _arguments(rng: random.Random, n: int) -> dict[str, Any]:
    # Most calls are small; one in fifty carries a large body (a pasted log).
    size = 64 * 1024 if n % 50 == 0 else rng.randint(80, 3000)
    body = " ".join(rng.choice(_WORDS) for _ in range(size // 7))[:size]
    return {"project": "OPS", "title": f"Bench call {n}", "body": body}


async def _approvals(
    store: Store, workspace: str, group: str, pending: int, rng: random.Random
) -> tuple[dict[str, int], str]:
    """Pending, denied and finished calls; the counts and the largest pending call's id."""
    found = await store.group_by_slug(workspace, group)
    token = await store.find(McpToken, group_id=found.id)
    remote = await find_connector(store, workspace, REMOTE)
    tools = sorted(await store.select(CachedTool, connector_id=remote.id), key=lambda t: t.name)
    writes = [t for t in tools if t.suggested_label is not Capability.READ] or tools
    decided = max(3, pending // 5)
    now = utcnow()
    largest = ("", -1)
    rows: list[Approval] = []
    for n in range(pending + decided):
        tool = writes[n % len(writes)]
        name = f"{REMOTE}_{tool.name}"
        arguments = _arguments(rng, n)
        created = now - timedelta(seconds=(pending + decided - n) * 37)
        approval = Approval(
            group_id=found.id,
            token_id=token.id if token else None,
            requested_by=f"mcp:{token.id}" if token else "mcp:bench",
            tool_name=name,
            capability=Capability.WRITE,
            definition_hash=tool.definition_hash,
            arguments=arguments,
            arguments_hash=arguments_hash(name, arguments),
            created_at=created,
            expires_at=now + timedelta(days=7),
        )
        ran = n - (pending + decided // 2)
        if ran >= 0:  # ran: as the runner leaves a call it ran; one in three failed
            ok = ran % 3 != 0
            approval = attrs.evolve(
                approval,
                status=ApprovalStatus.EXECUTED if ok else ApprovalStatus.FAILED,
                decided_by="dashboard:bench",
                decided_at=created + timedelta(minutes=3),
                finished_at=created + timedelta(minutes=3, seconds=2),
                result={"content": [{"type": "text", "text": "created OPS-" + str(n)}]}
                if ok
                else None,
                error=None if ok else "the remote answered 502 Bad Gateway",
                lease_owner="bench",
                attempts=1,
            )
        elif n < pending and approval.arguments_bytes > largest[1]:
            largest = (approval.id, approval.arguments_bytes)
        rows.append(approval)
        if len(rows) >= _CHUNK:
            await store.insert_many(rows)
            rows = []
    await store.insert_many(rows)
    # The other half of the decided ones: denied by an admin, as the dashboard does.
    to_deny = await store.select(Approval, status=ApprovalStatus.PENDING)
    to_deny = sorted(to_deny, key=lambda a: a.created_at)[pending:]
    for approval in to_deny:
        await deny(store, approval.id, actor="dashboard:bench", reason="not this week")
    return {"pending": pending, "decided": decided}, largest[0]


async def pending_consent(store: Store, settings: OAuthSettings, workspace: str, group: str) -> str:
    """A pending authorization request (a client waiting for the consent page); its id."""
    base = "http://127.0.0.1"
    provider = Provider(store, settings, GroupResolver(store, base), None, consent_url=str)
    client_id = "bench-" + secrets.token_hex(4)
    await provider.register_client(
        OAuthClientInformationFull(
            client_id=client_id,
            client_name="Bench desktop client",
            redirect_uris=[AnyUrl(_REDIRECT)],
            token_endpoint_auth_method="none",  # noqa: S106 - a method, not a secret
            scope="read write destructive",
        )
    )
    client = await provider.get_client(client_id)
    if client is None:
        raise RuntimeError("the client just registered is not there")
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return await provider.authorize(
        client,
        AuthorizationParams(
            state="bench",
            scopes=["read", "write"],
            code_challenge=base64.urlsafe_b64encode(digest).decode().rstrip("="),
            redirect_uri=AnyUrl(_REDIRECT),
            redirect_uri_provided_explicitly=True,
            resource=f"{base}/mcp/g/{workspace}/{group}",
        ),
    )


async def seed_content(
    store: Store,
    workspace: str,
    group: str,
    *,
    box: SecretBox,
    approvals: int = 1000,
    documents: int = 200,
    skills: int = 20,
    tools: int = 50,
    seed: int = 27,
) -> Content:
    """Seed ``workspace``/``group`` (both existing) with groups, connectors, libraries, calls.

    Args:
        box: The service key's box (the connectors' secrets are sealed with it).
        approvals: Pending calls; a fifth as many more are decided.
        documents, skills: Across the two libraries.
        tools: In the remote MCP connector's cache (at most 128).
    """
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    groups = await _groups(store, workspace)
    connectors = await _connectors(store, workspace, group, box, tools, rng)
    permissions = await _permissions(store, workspace, groups)
    library, document = await _libraries(store, workspace, documents, skills, rng)
    calls, approval_id = await _approvals(store, workspace, group, approvals, rng)
    counts = {
        "groups": len(groups),
        "connectors": connectors,
        "tools": tools,
        "permissions": permissions,
        "documents": documents,
        "skills": skills,
        "approvals": calls["pending"],
        "decided": calls["decided"],
    }
    values = {
        "name": REMOTE,
        "library": library,
        "document": document,
        "approval_id": approval_id,
    }
    return Content(counts, values)
