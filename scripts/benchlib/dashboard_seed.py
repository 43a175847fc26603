"""A workspace with a busy week behind it, for ``scripts/bench dashboard``: all its pages show.

First what an operator would have set up, through the service's own
functions (:mod:`benchlib.dashboard_content`: groups, connectors of every
kind with a remote MCP tool cache, permissions, libraries of documents and
skills, pending and decided approvals). Then a week of traffic without
sending it: webhooks, their events and the audit log's tool calls are
written straight into the store in bulk (``insert_many``, thousands of
rows per transaction), as the webhook door, the worker and the permission
gate would have left them:

- ``webhooks`` webhooks of the workspace, posting to ``local:ops``, with
  their events spread over the last ``days`` days (some webhooks busier
  than others), mostly done, some failed; a few still queued (not due for
  a month, so the server's worker leaves them be) and a few running (under
  a lease that outlives the run);
- the newest events' attempts and chat messages (what their pages show);
- ``audit`` tool calls of the group's token, with the gate's decisions
  (ran, queued, confirmed, denied) spread over the same days;
- the events' full-text index, filled before the server starts (its
  indexer would otherwise do it during the measures).

Last, a pending OAuth authorization request for the consent page.

Deterministic for a seed (``random.Random(seed)``), but for ids. Run as a
script: ``python dashboard_seed.py DATABASE_URL WORKSPACE GROUP OPTIONS``
(OPTIONS: :func:`seed_dashboard`'s keyword arguments as a JSON object; the
service key and OAuth settings come from the environment, as the service
reads them); prints :func:`seed_dashboard`'s answer as JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import attrs
import trio

from agentws.domain.models import (
    AuditEntry,
    ChatMessage,
    Event,
    EventAttempt,
    EventStatus,
    McpToken,
    Webhook,
)
from agentws.domain.rules import utcnow
from agentws.oauth.settings import OAuthSettings
from agentws.settings.config import Settings
from agentws.settings.secret_box import SecretBox
from agentws.store import open_store
from agentws.store.union import Store

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.dashboard_content import pending_consent, seed_content

__all__ = ["seed_dashboard"]

#: Rows built and written per transaction: a few MB at most.
CHUNK = 5000
#: The newest events that get an attempt and a chat message (older ones: no page shows them).
WITH_MESSAGES = 300
T = TypeVar("T")
_NAMES = ("github_pushes", "stripe_invoices", "deploys", "support_tickets", "nightly_builds")
#: How much of the traffic each webhook gets, in the order above.
_WEIGHTS = (8, 4, 2, 1, 1)
#: An event's status, and its share.
_STATUSES = (
    (EventStatus.DONE, 0.88),
    (EventStatus.FAILED, 0.09),
    (EventStatus.QUEUED, 0.02),
    (EventStatus.RUNNING, 0.01),
)
_TOOLS = (
    "search_context",
    "read_context_document",
    "github_create_issue",
    "github_list_pull_requests",
    "slack_post_message",
    "stripe_refund",
    "tracker_update_ticket",
)
#: The gate's decisions, what became of the call, and their shares.
_DECISIONS = (
    (("run", "ok"), 0.72),
    (("queue", "queued"), 0.14),
    (("confirm", "confirmed"), 0.05),
    (("deny", "denied"), 0.09),
)
_WORDS = ("build", "deploy", "refund", "invoice", "customer", "flaky", "timeout", "review")


def _pick(rng: random.Random, shares: Sequence[tuple[T, float]]) -> T:
    """One of the values, each as likely as its share says."""
    return rng.choices([value for value, _ in shares], [share for _, share in shares])[0]


def _body(rng: random.Random, n: int) -> bytes:
    payload = {
        "action": rng.choice(("opened", "closed", "completed", "requested", "paid", "failed")),
        "number": n,
        "repository": {"full_name": f"acme/service-{n % 37}"},
        "sender": {"login": f"dev{n % 211}"},
        "ref": rng.choice(
            ("refs/heads/main", "refs/heads/release", f"refs/heads/feature-{n % 97}")
        ),
        "summary": " ".join(rng.choice(_WORDS) for _ in range(12)),
        "ok": rng.random() > 0.1,
    }
    return json.dumps(payload).encode()


def _digest(name: str, event: Event) -> str:
    return (
        f"*{name}*: event {event.id} {event.status.value}\n\n"
        "Key fields:\n• repository.full_name: acme/service\n• action: completed\n\n"
        "See <https://ci.example.com/runs|the runs> and `bench` **output**."
    )


async def _webhooks(
    store: Store, workspace_id: str, group_id: str, count: int, rng: random.Random
) -> list[Webhook]:
    made = []
    for n in range(count):
        name = _NAMES[n] if n < len(_NAMES) else f"hook_{n}"
        secret = hashlib.sha256(rng.randbytes(32)).hexdigest()
        made.append(
            Webhook(
                workspace_id=workspace_id,
                group_id=group_id,
                name=name,
                channel="local:ops",
                prompt=f"Summarise the {name.replace('_', ' ')} event for the team.",
                token_hash=secret,
            )
        )
    await store.insert_many(made)
    return made


def _event(rng: random.Random, n: int, hook: Webhook, received: datetime, now: datetime) -> Event:
    status = _pick(rng, _STATUSES)
    started = received + timedelta(milliseconds=rng.randint(5, 400))
    finished = started + timedelta(milliseconds=rng.randint(300, 9000))
    base: dict[str, Any] = {
        "webhook_id": hook.id,
        "body": _body(rng, n),
        "headers": {"content-type": "application/json", "user-agent": "bench-sender/1.0"},
        "received_at": received,
        "available_at": received,
        "url_generation": 1,
        "source": "127.0.0.1",
    }
    if status is EventStatus.QUEUED:
        # Not due for a month: the server's worker leaves it queued.
        return Event(status=status, **{**base, "available_at": now + timedelta(days=30)})
    if status is EventStatus.RUNNING:
        return Event(
            status=status,
            attempts=1,
            started_at=started,
            lease_owner="bench-elsewhere",
            lease_expires_at=now + timedelta(days=30),
            **base,
        )
    error = None if status is EventStatus.DONE else "model: 529 overloaded (after 3 attempts)"
    return Event(
        status=status,
        attempts=1 if status is EventStatus.DONE else 3,
        started_at=started,
        finished_at=finished,
        error=error,
        **base,
    )


async def _events(
    store: Store, hooks: list[Webhook], total: int, days: float, now: datetime, rng: random.Random
) -> int:
    """``total`` events over the last ``days``, oldest first; the newest with a message."""
    weights = [_WEIGHTS[n] if n < len(_WEIGHTS) else 1 for n in range(len(hooks))]
    span_s = days * 86400
    # Sorted times, so each chunk is one stretch of the week (as traffic comes).
    offsets = sorted((rng.random() * span_s for _ in range(total)), reverse=True)
    messages = 0
    for start in range(0, total, CHUNK):
        batch: list[Event] = []
        attempts: list[EventAttempt] = []
        posted: list[ChatMessage] = []
        for n in range(start, min(total, start + CHUNK)):
            hook = rng.choices(hooks, weights)[0]
            received = now - timedelta(seconds=offsets[n])
            event = _event(rng, n, hook, received, now)
            if n >= total - WITH_MESSAGES and event.status.finished:
                message = ChatMessage(
                    workspace_id=hook.workspace_id,
                    channel=hook.channel,
                    text=_digest(hook.name, event),
                    event_id=event.id,
                    created_at=event.finished_at or received,
                )
                event = attrs.evolve(event, message_id=message.id)
                posted.append(message)
                attempts.append(
                    EventAttempt(
                        event_id=event.id,
                        number=1,
                        instance_id="bench",
                        outcome="done" if event.status is EventStatus.DONE else "failed",
                        error=event.error,
                        transcript={"messages": [{"role": "user", "content": "…"}]},
                        started_at=event.started_at or received,
                        finished_at=event.finished_at,
                    )
                )
            batch.append(event)
        await store.insert_many(batch)
        await store.insert_many(posted)
        await store.insert_many(attempts)
        messages += len(posted)
    return messages


async def _audit(
    store: Store,
    workspace_id: str,
    group_id: str,
    token: McpToken | None,
    total: int,
    days: float,
    now: datetime,
    rng: random.Random,
) -> None:
    actor = f"mcp:{token.id}" if token is not None else "mcp:bench"
    span_s = days * 86400
    for start in range(0, total, CHUNK):
        rows = []
        for _ in range(start, min(total, start + CHUNK)):
            tool = rng.choice(_TOOLS)
            decision, outcome = _pick(rng, _DECISIONS)
            arguments = {"q": " ".join(rng.choice(_WORDS) for _ in range(3))}
            rows.append(
                AuditEntry(
                    workspace_id=workspace_id,
                    actor=actor,
                    action="tool.call",
                    target=tool,
                    detail={
                        "group_id": group_id,
                        "capability": "read" if tool.startswith(("search", "read")) else "write",
                        "permission": "auto",
                        "scope": "write",
                        "decision": decision,
                        "outcome": outcome,
                        "arguments_hash": hashlib.sha256(repr(arguments).encode()).hexdigest(),
                        "arguments": arguments,
                    },
                    created_at=now - timedelta(seconds=rng.random() * span_s),
                )
            )
        await store.insert_many(rows)


async def seed_dashboard(
    store: Store,
    workspace: str,
    group: str,
    *,
    events: int,
    audit: int,
    box: SecretBox,
    oauth: OAuthSettings,
    webhooks: int = 4,
    days: float = 7.0,
    approvals: int = 1000,
    documents: int = 200,
    skills: int = 20,
    tools: int = 50,
    seed: int = 27,
) -> dict[str, Any]:
    """Seed ``workspace``/``group`` (both existing) with a busy week; the counts and URL values.

    Args:
        store: An open store, migrated.
        workspace, group: Slugs; the group's first MCP token is the audit rows' caller.
        events, audit: How many events and audited tool calls.
        box, oauth: The service's key and OAuth settings (see
            :func:`benchlib.dashboard_content.seed_content`).
        webhooks: How many webhooks share the events.
        days: The span the rows are spread over, up to now.
        approvals, documents, skills, tools: See :func:`~benchlib.dashboard_content.seed_content`.
        seed: The random generator's seed: the same counts give the same rows.

    Returns:
        ``events``, ``audit``, ``webhooks``, ``messages`` and the content's counts;
        ``values``: what a URL of each dashboard page needs (``workspace``,
        ``webhook``, ``event_id``, ``name``, ``library``, ``document``,
        ``approval_id``, ``grant_id``).
    """
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    now = utcnow()
    found = await store.group_by_slug(workspace, group)
    token = await store.find(McpToken, group_id=found.id)
    content = await seed_content(
        store,
        workspace,
        group,
        box=box,
        approvals=approvals,
        documents=documents,
        skills=skills,
        tools=tools,
        seed=seed,
    )
    hooks = await _webhooks(store, found.workspace_id, found.id, webhooks, rng)
    messages = await _events(store, hooks, events, days, now, rng)
    await _audit(store, found.workspace_id, found.id, token, audit, days, now, rng)
    while await store.index_events(limit=CHUNK, max_bytes=32 * 1024 * 1024):
        pass
    values = {"workspace": workspace, **content.values}
    if hooks:
        values["webhook"] = hooks[0].name
        newest = await store.recent_events(found.workspace_id, limit=1)
        if newest:
            values["event_id"] = newest[0].id
    # Last: the request lapses after oauth.consent_ttl_s (ten minutes by default).
    values["grant_id"] = await pending_consent(store, oauth, workspace, group)
    return {
        "events": events,
        "audit": audit,
        "webhooks": len(hooks),
        "messages": messages,
        **content.counts,
        "values": values,
    }


async def _main(argv: list[str]) -> None:
    url, workspace, group, options = argv
    settings = Settings.from_env(os.environ)
    async with open_store(url, pool_size=1) as store:
        counts = await seed_dashboard(
            store,
            workspace,
            group,
            box=SecretBox.from_settings(settings),
            oauth=OAuthSettings.from_settings(settings),
            **json.loads(options),
        )
    print(json.dumps(counts))


if __name__ == "__main__":
    trio.run(_main, sys.argv[1:])
