"""The contract every :class:`~agentws.store.union.Store` keeps, run on SQLite and PostgreSQL.

The generic tests run once per record type (see ``KINDS``): each type says how
to build its i-th record, how to change one, and which fields to filter by.
The i-th record is created at ``_at(i)``, later as i grows, and named
``_key(i)``, which sorts the other way: a list ordered by anything but time
shows. The other tests are the rules of particular records and operations.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from subprocess import PIPE
from typing import Any

import attrs
import pytest
import trio

from agentws.core.errors import (
    ConflictError,
    MigrationError,
    NoDatabaseError,
    NotFoundError,
    StoreUnavailableError,
)
from agentws.domain.models import (
    Admin,
    Approval,
    ApprovalStatus,
    AuditEntry,
    CachedTool,
    Capability,
    ChatMessage,
    Connector,
    ConnectorKind,
    ContextDocument,
    DocumentPolicy,
    Event,
    EventAttempt,
    EventStatus,
    Group,
    GroupConnector,
    GroupLibrary,
    Library,
    McpToken,
    Permission,
    Skill,
    SkillAsset,
    ToolPermission,
    VerificationScheme,
    Webhook,
    Workspace,
    arguments_hash,
)
from agentws.domain.rules import utcnow
from agentws.store import SqlStore, open_store
from agentws.store.migrations import MIGRATIONS, has_schema, migrate
from agentws.store.sqlite import sqlite_path

from .conftest import open_database

T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
# Parents are older than every record a test builds, so they sort first.
SEED_AT = T0 - timedelta(days=1)
WORKER = Path(__file__).with_name("_worker.py")
# Bytes that are not UTF-8 (and a NUL), which a text column would mangle.
NOT_UTF8 = b"\xff\xfe\x00\x80\xc3(" + bytes(range(256))

# What an approval's row may hold: "running" is an approved row with a lease, shown
# as such but never stored.
_STORED_STATUSES = [s for s in ApprovalStatus if s is not ApprovalStatus.RUNNING]


def _at(i: int, *, later_s: int = 0) -> datetime:
    return T0 + timedelta(seconds=i + later_s, microseconds=i)


def _key(i: int) -> str:
    return f"k{9 - i}"


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _distinct(values: Iterable[Any]) -> list[Any]:
    found: list[Any] = []
    for value in values:
        if not any(value == seen and type(value) is type(seen) for seen in found):
            found.append(value)
    return found


def assert_same(got: Any, expected: Any) -> None:
    """Equal, field by field, down to the type (bytes not memoryview, enum not str, UTC)."""
    assert got == expected
    for field in attrs.fields(type(expected)):
        value, wanted = getattr(got, field.name), getattr(expected, field.name)
        assert type(value) is type(wanted), (field.name, value, wanted)
        if isinstance(value, datetime):
            assert value.utcoffset() == timedelta(0), (field.name, value)


# -- parents ------------------------------------------------------------------


@attrs.frozen
class Tree:
    """The parent records a test refers to; only what its kind needs is stored."""

    ws: Workspace
    other_ws: Workspace
    groups: tuple[Group, ...] = ()
    token: McpToken | None = None
    connectors: tuple[Connector, ...] = ()
    libraries: tuple[Library, ...] = ()
    webhooks: tuple[Webhook, ...] = ()
    events: tuple[Event, ...] = ()


_NEEDS = {
    "groups": set(),
    "token": {"groups"},
    "connectors": set(),
    "libraries": set(),
    "webhooks": {"groups"},
    "events": {"webhooks", "groups"},
}


async def seed(store: SqlStore, needs: Iterable[str] = ()) -> Tree:
    wanted = set(needs)
    for name in list(wanted):
        wanted |= _NEEDS[name]
    ws = Workspace(slug="acme", name="Acme", created_at=SEED_AT)
    other = Workspace(slug="other", name="Other", created_at=SEED_AT)
    parents: dict[str, Any] = {}
    records: list[Any] = [ws, other]
    if "groups" in wanted:
        parents["groups"] = tuple(
            Group(workspace_id=ws.id, slug=f"g{n}", name=f"G{n}", created_at=SEED_AT)
            for n in range(5)
        )
        records += parents["groups"]
    if "token" in wanted:
        parents["token"] = McpToken(
            group_id=parents["groups"][0].id,
            name="seed",
            token_hash=_hash("seed"),
            hint="seed",
            created_at=SEED_AT,
        )
        records.append(parents["token"])
    if "connectors" in wanted:
        parents["connectors"] = tuple(
            Connector(
                workspace_id=ws.id, name=f"c{n}", kind=ConnectorKind.GITHUB, created_at=SEED_AT
            )
            for n in range(2)
        )
        records += parents["connectors"]
    if "libraries" in wanted:
        parents["libraries"] = tuple(
            Library(workspace_id=ws.id, slug=f"l{n}", name=f"L{n}", created_at=SEED_AT)
            for n in range(2)
        )
        records += parents["libraries"]
    if "webhooks" in wanted:
        parents["webhooks"] = tuple(
            Webhook(
                workspace_id=ws.id,
                group_id=parents["groups"][0].id if n else None,
                name=f"w{n}",
                channel="#ops",
                prompt="Summarise",
                token_hash=_hash(f"webhook {n}"),
                created_at=SEED_AT,
            )
            for n in range(2)
        )
        records += parents["webhooks"]
    if "events" in wanted:
        parents["events"] = tuple(
            Event(webhook_id=parents["webhooks"][0].id, body=b"{}", received_at=SEED_AT)
            for _ in range(5)
        )
        records += parents["events"]
    for record in records:
        await store.insert(record)
    return Tree(ws=ws, other_ws=other, **parents)


# -- the record types ---------------------------------------------------------


@attrs.frozen
class Kind:
    record: type[Any]
    #: The i-th record (i in 0..4); odd ones fill the optional fields, even ones leave them None.
    make: Callable[[Tree, int], Any]
    #: A changed copy of a record: other values, optional fields cleared or filled.
    change: Callable[[Tree, Any], Any]
    #: Fields the filter tests select by (not JSON ones: their equality is not portable).
    filters: tuple[str, ...]
    needs: tuple[str, ...] = ()


def _workspace(t: Tree, i: int) -> Workspace:
    return Workspace(slug=_key(i), name=f"Workspace {i} (ünïcödé ✓)", created_at=_at(i))


def _group(t: Tree, i: int) -> Group:
    ws = t.other_ws if i % 2 else t.ws
    return Group(workspace_id=ws.id, slug=_key(i), name=f"Group {i}", created_at=_at(i))


def _token(t: Tree, i: int) -> McpToken:
    return McpToken(
        group_id=t.groups[i % 2].id,
        name=f"laptop-{i % 2}",
        token_hash=_hash(f"token {i}"),
        hint=f"…{i:04d}",
        scope=list(Capability)[i % 3],
        created_at=_at(i),
        last_used_at=_at(i, later_s=60) if i % 2 else None,
        revoked_at=_at(i, later_s=120) if i % 3 == 1 else None,
    )


def _connector(t: Tree, i: int) -> Connector:
    return Connector(
        workspace_id=(t.other_ws if i % 2 else t.ws).id,
        name=_key(i),
        kind=list(ConnectorKind)[i % 4],
        url=f"https://mcp{i}.example.com/mcp" if i % 2 else None,
        headers={"X-Team": f"tëam-{i}", "Accept": "application/json"} if i else {},
        secret=NOT_UTF8 + bytes([i]) if i % 2 else None,
        active=i % 2 == 0,
        created_at=_at(i),
        updated_at=_at(i, later_s=30),
    )


def _group_connector(t: Tree, i: int) -> GroupConnector:
    return GroupConnector(
        group_id=t.groups[i].id, connector_id=t.connectors[i % 2].id, created_at=_at(i)
    )


def _cached_tool(t: Tree, i: int) -> CachedTool:
    return CachedTool(
        connector_id=t.connectors[i % 2].id,
        name=_key(i),
        description=f"Tool {i}: does ünïcode things",
        input_schema={
            "type": "object",
            "properties": {"q": {"type": "string", "maxLength": 10 * i}, "n": {"type": "number"}},
            "required": ["q"],
            "additionalProperties": False,
        },
        annotations={"readOnlyHint": i % 2 == 0, "title": f"T{i}", "weight": 2.5} if i else {},
        definition_hash=_hash(f"tool {i}"),
        label=[None, Capability.READ, Capability.WRITE, Capability.DESTRUCTIVE][i % 4],
        suggested_label=Capability.READ if i % 2 else None,
        fetched_at=_at(i),
        remote_definition=(
            {"name": _key(i), "title": f"T{i} ü", "outputSchema": {"type": "object"}, "_meta": {}}
            if i
            else {}
        ),
    )


def _library(t: Tree, i: int) -> Library:
    ws = t.other_ws if i % 2 else t.ws
    return Library(workspace_id=ws.id, slug=_key(i), name=f"Library {i}", created_at=_at(i))


def _group_library(t: Tree, i: int) -> GroupLibrary:
    return GroupLibrary(
        group_id=t.groups[i].id, library_id=t.libraries[i % 2].id, created_at=_at(i)
    )


def _document(t: Tree, i: int) -> ContextDocument:
    return ContextDocument(
        library_id=t.libraries[i % 2].id,
        slug=_key(i),
        title=f"Document {i}",
        body=f"# Doc {i}\n\nünïcode ✓, 'quotes', \"double\", back\\slash; $1 ?1\n",
        mime_type="text/plain" if i % 2 else "text/markdown",
        policy=list(DocumentPolicy)[i % 3],
        created_at=_at(i),
        updated_at=_at(i, later_s=5),
    )


def _skill(t: Tree, i: int) -> Skill:
    return Skill(
        library_id=t.libraries[i % 2].id,
        slug=_key(i),
        description=f"Skill {i}",
        prompt=f"Do the thing number {i}.",
        assets=tuple(
            SkillAsset(name=f"asset{n}.md", mime_type="text/markdown", text=f"# {n} ✓")
            if n
            else SkillAsset(name="defaults.txt")
            for n in range(i % 3)
        ),
        created_at=_at(i),
        updated_at=_at(i, later_s=5),
    )


def _webhook(t: Tree, i: int) -> Webhook:
    return Webhook(
        workspace_id=(t.other_ws if i % 2 else t.ws).id,
        group_id=t.groups[0].id if i % 2 else None,
        name=_key(i),
        channel=f"#chan-{i % 2}",
        prompt=f"Tell the team about event {i}",
        active=i % 2 == 0,
        token_hash=_hash(f"webhook url {i}"),
        verification=list(VerificationScheme)[i % 6],
        secret=NOT_UTF8 if i % 2 else None,
        rate_per_min=60 + i,
        burst=30 - i,
        max_body_bytes=1024 * (i + 1),
        concurrency=1 + i,
        created_at=_at(i),
        updated_at=_at(i, later_s=1),
    )


def _event(t: Tree, i: int) -> Event:
    odd = i % 2 == 1
    return Event(
        webhook_id=t.webhooks[i % 2].id,
        status=list(EventStatus)[i % 4],
        body=NOT_UTF8 + bytes([i]) if i else b"",
        headers={"content-type": "application/json", "x-github-event": f"push-{i}"},
        dedup_key=f"delivery-{i}" if odd else None,
        attempts=i,
        lease_owner="host-a-1" if odd else None,
        lease_expires_at=_at(i, later_s=30) if odd else None,
        error="boom ✗" if odd else None,
        message_id=f"msg-{i}" if odd else None,
        received_at=_at(i),
        started_at=_at(i, later_s=1) if odd else None,
        finished_at=_at(i, later_s=2) if i == 3 else None,
    )


def _attempt(t: Tree, i: int) -> EventAttempt:
    odd = i % 2 == 1
    return EventAttempt(
        event_id=t.events[i % 2].id,
        number=i + 1,
        instance_id=f"host-{i % 2}",
        outcome="retry" if odd else "running",
        error="model: overloaded ✗" if odd else None,
        transcript={"model": "offline", "messages": [{"role": "user", "content": [i]}]},
        tool_calls={"calls": [{"name": "github_search", "outcome": "ran"}] if odd else []},
        usage={"input_tokens": i} if odd else {},
        started_at=_at(i),
        finished_at=_at(i, later_s=3) if odd else None,
    )


def _message(t: Tree, i: int) -> ChatMessage:
    return ChatMessage(
        workspace_id=t.ws.id,
        channel=f"local:chan-{i % 2}",
        text=f"Deploy {i} finished ✓",
        event_id=t.events[i].id if i % 2 else None,
        thread=f"thread-{i}" if i % 2 else None,
        external_id=f"ext-{i % 3}" if i % 2 else None,
        created_at=_at(i),
    )


def _approval(t: Tree, i: int) -> Approval:
    assert t.token is not None
    tool = f"github_{_key(i)}"
    arguments = {
        "repo": "acme/app",
        "n": i,
        "nested": {"list": [1, 2.5, None, True, "ünï"], "empty": {}},
    }
    return Approval(
        group_id=t.groups[i % 2].id,
        token_id=t.token.id if i % 2 else None,
        session_id=f"test-1.session{i}" if i % 2 else None,
        requested_by=f"mcp:{t.token.id}",
        tool_name=tool,
        capability=list(Capability)[i % 3],
        definition_hash=f"def-{i}",
        arguments=arguments,
        sealed_arguments=b"sealed\x00bytes" if i % 2 else None,
        arguments_hash=arguments_hash(tool, arguments),
        status=_STORED_STATUSES[i % len(_STORED_STATUSES)],
        error=f"failed {i}" if i % 3 == 0 else None,
        reason="needs a human" if i % 2 else None,
        decided_by="alice" if i % 2 else None,
        result={"content": [{"type": "text", "text": f"done {i}"}], "isError": False}
        if i % 2
        else None,
        created_at=_at(i),
        expires_at=_at(i, later_s=3600),
        decided_at=_at(i, later_s=10) if i % 2 else None,
        finished_at=_at(i, later_s=20) if i % 2 else None,
    )


def _audit(t: Tree, i: int) -> AuditEntry:
    return AuditEntry(
        workspace_id=t.ws.id if i % 2 else None,
        actor=f"admin:{i % 2}",
        action="group.create" if i % 3 else "token.revoke",
        target=f"group:{_key(i)}",
        detail={"slug": _key(i), "count": i, "tags": ["a", "b"]},
        created_at=_at(i),
    )


def _admin(t: Tree, i: int) -> Admin:
    return Admin(
        username=f"admin-{_key(i)}",
        password_hash=f"$argon2id$v=19$m=65536,t=3,p=4${_hash(str(i))}",
        created_at=_at(i),
    )


KINDS = [
    Kind(
        Workspace,
        _workspace,
        lambda t, r: attrs.evolve(r, slug="renamed", name="Renamed"),
        ("slug", "name", "created_at"),
    ),
    Kind(
        Group,
        _group,
        lambda t, r: attrs.evolve(r, slug="renamed", name="Renamed", workspace_id=t.ws.id),
        ("workspace_id", "slug", "name"),
        ("groups",),
    ),
    Kind(
        McpToken,
        _token,
        lambda t, r: attrs.evolve(
            r, name="renamed", scope=Capability.DESTRUCTIVE, last_used_at=None, revoked_at=T0
        ),
        ("group_id", "name", "token_hash", "scope", "last_used_at", "revoked_at"),
        ("groups",),
    ),
    Kind(
        Connector,
        _connector,
        lambda t, r: attrs.evolve(
            r,
            url=None,
            headers={"Authorization-Hint": "none"},
            secret=b"\x00\x01",
            active=True,
            kind=ConnectorKind.REMOTE_MCP,
            updated_at=_at(9),
        ),
        # Not "kind": see test_a_field_named_kind_can_be_filtered_by.
        ("workspace_id", "name", "url", "secret", "active", "updated_at"),
    ),
    Kind(
        GroupConnector,
        _group_connector,
        lambda t, r: attrs.evolve(r, connector_id=t.connectors[0].id, created_at=_at(9)),
        ("group_id", "connector_id"),
        ("groups", "connectors"),
    ),
    Kind(
        CachedTool,
        _cached_tool,
        lambda t, r: attrs.evolve(
            r,
            description="changed",
            input_schema={"type": "object", "properties": {}},
            annotations={},
            label=None,
            suggested_label=Capability.DESTRUCTIVE,
            fetched_at=_at(9),
        ),
        ("connector_id", "name", "definition_hash", "label", "suggested_label"),
        ("connectors",),
    ),
    Kind(
        Library,
        _library,
        lambda t, r: attrs.evolve(r, slug="renamed", name="Renamed"),
        ("workspace_id", "slug"),
    ),
    Kind(
        GroupLibrary,
        _group_library,
        lambda t, r: attrs.evolve(r, library_id=t.libraries[0].id),
        ("group_id", "library_id"),
        ("groups", "libraries"),
    ),
    Kind(
        ContextDocument,
        _document,
        lambda t, r: attrs.evolve(
            r, body="new body", policy=DocumentPolicy.NEVER, updated_at=_at(9)
        ),
        ("library_id", "slug", "mime_type", "policy"),
        ("libraries",),
    ),
    Kind(
        Skill,
        _skill,
        lambda t, r: attrs.evolve(
            r,
            prompt="new prompt",
            assets=(SkillAsset(name="run.py", mime_type="text/x-python", text="print('✓')\n"),),
        ),
        ("library_id", "slug", "description"),
        ("libraries",),
    ),
    Kind(
        Webhook,
        _webhook,
        lambda t, r: attrs.evolve(
            r,
            group_id=None,
            active=True,
            verification=VerificationScheme.GITHUB,
            secret=None,
            rate_per_min=1,
            updated_at=_at(9),
        ),
        ("workspace_id", "group_id", "name", "channel", "active", "verification", "secret"),
        ("groups",),
    ),
    Kind(
        Event,
        _event,
        lambda t, r: attrs.evolve(
            r,
            status=EventStatus.DONE,
            attempts=r.attempts + 1,
            lease_owner=None,
            lease_expires_at=None,
            headers={},
            finished_at=_at(9),
        ),
        ("webhook_id", "status", "dedup_key", "attempts", "lease_owner", "finished_at"),
        ("events",),
    ),
    Kind(
        EventAttempt,
        _attempt,
        lambda t, r: attrs.evolve(
            r, outcome="done", error=None, usage={"output_tokens": 7}, finished_at=_at(9)
        ),
        ("event_id", "number", "instance_id", "outcome", "error"),
        ("events",),
    ),
    Kind(
        ChatMessage,
        _message,
        lambda t, r: attrs.evolve(r, external_id="posted", thread=None, event_id=t.events[4].id),
        ("channel", "event_id", "thread", "external_id"),
        ("events",),
    ),
    Kind(
        Approval,
        _approval,
        lambda t, r: attrs.evolve(
            r,
            status=ApprovalStatus.DENIED,
            decided_by="bob",
            reason=None,
            result=None,
            token_id=None,
            decided_at=_at(9),
        ),
        ("group_id", "token_id", "tool_name", "status", "decided_by", "decided_at"),
        ("token",),
    ),
    Kind(
        AuditEntry,
        _audit,
        lambda t, r: attrs.evolve(r, workspace_id=None, detail={}, target="elsewhere"),
        ("workspace_id", "actor", "action", "target"),
    ),
    Kind(
        Admin,
        _admin,
        lambda t, r: attrs.evolve(r, username="renamed", password_hash="$argon2id$new"),
        ("username", "password_hash"),
    ),
]

by_kind = pytest.mark.parametrize("kind", KINDS, ids=[k.record.__name__ for k in KINDS])


# -- every record type --------------------------------------------------------


@by_kind
async def test_insert_get_update_delete(store: SqlStore, kind: Kind) -> None:
    t = await seed(store, kind.needs)
    records = [kind.make(t, i) for i in range(4)]
    for record in records:
        assert await store.insert(record) is record
    for record in records:
        assert_same(await store.get(kind.record, record.id), record)
        assert_same(await store.find(kind.record, id=record.id), record)
    assert await store.find(kind.record, id="missing") is None

    record, others = records[1], [records[0], *records[2:]]
    changed = kind.change(t, record)
    assert changed != record
    assert await store.update(changed) is changed
    assert_same(await store.get(kind.record, record.id), changed)
    for other in others:
        assert_same(await store.get(kind.record, other.id), other)

    total = await store.count(kind.record)
    await store.delete(kind.record, record.id)
    assert await store.count(kind.record) == total - 1
    assert await store.find(kind.record, id=record.id) is None
    for other in others:
        assert_same(await store.get(kind.record, other.id), other)

    missing = re.escape(repr(record.id))
    with pytest.raises(NotFoundError, match=missing):
        await store.get(kind.record, record.id)
    with pytest.raises(NotFoundError, match=missing):
        await store.update(changed)
    with pytest.raises(NotFoundError, match=missing):
        await store.delete(kind.record, record.id)
    assert await store.count(kind.record) == total - 1


@by_kind
async def test_select_and_count_filter_then_order_oldest_first(store: SqlStore, kind: Kind) -> None:
    t = await seed(store, kind.needs)
    existing = await store.select(kind.record)
    mine = [kind.make(t, i) for i in range(5)]
    for i in (3, 0, 4, 1, 2):
        await store.insert(mine[i])
    listed = await store.select(kind.record)
    assert len(listed) == len(existing) + len(mine)

    # Filters first, against the store's own order (checked last).
    for field in (*kind.filters, "id"):
        values = _distinct(getattr(r, field) for r in listed)
        assert len(values) > 1, f"{field} does not vary, so filtering by it proves nothing"
        # The first and last value, and None (which must match NULL, and only NULL)
        # where there is one: enough to tell, few enough to keep the suite fast.
        for value in _distinct([values[0], values[-1], *(v for v in values if v is None)]):
            expected = [r for r in listed if getattr(r, field) == value]
            where = {field: value}
            assert await store.select(kind.record, **where) == expected, where
            assert await store.count(kind.record, **where) == len(expected), where
        first = next(r for r in listed if getattr(r, field) == values[-1])
        assert await store.find(kind.record, **{field: values[-1]}) == first

    target = listed[-2]
    where = {f: getattr(target, f) for f in kind.filters}
    assert await store.select(kind.record, **where) == [
        r for r in listed if all(getattr(r, f) == v for f, v in where.items())
    ]
    assert await store.select(kind.record, id="missing") == []
    assert await store.count(kind.record, id="missing") == 0

    # Oldest first, and pages of that order.
    everything, n = existing + mine, len(existing)
    assert [r.id for r in listed] == [r.id for r in everything], "not oldest first"
    assert listed == everything
    assert await store.count(kind.record) == len(everything)
    assert await store.select(kind.record, limit=2, offset=n) == mine[:2]
    assert await store.select(kind.record, limit=2, offset=n + 1) == mine[1:3]
    assert await store.select(kind.record, offset=n + 3) == mine[3:]
    assert await store.select(kind.record, limit=100, offset=n + 4) == mine[4:]
    assert await store.select(kind.record, limit=0) == []
    assert await store.select(kind.record, offset=len(everything)) == []


# -- values that must survive the trip ----------------------------------------


async def test_datetimes_come_back_utc_to_the_microsecond(store: SqlStore) -> None:
    india = timezone(timedelta(hours=5, minutes=30))
    local = datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=india)
    ws = await store.insert(Workspace(slug="acme", name="Acme", created_at=local))
    got = await store.get(Workspace, ws.id)
    assert got.created_at == local
    assert got.created_at.utcoffset() == timedelta(0)
    assert got.created_at.microsecond == 999999
    assert await store.select(Workspace, created_at=local.astimezone(UTC)) == [got]


async def test_cached_tool_labels_round_trip(store: SqlStore) -> None:
    t = await seed(store, ["connectors"])
    labels = [None, *Capability]
    tools = [
        attrs.evolve(_cached_tool(t, i), label=label, suggested_label=labels[-1 - i])
        for i, label in enumerate(labels)
    ]
    for tool in tools:
        await store.insert(tool)
    for tool in tools:
        got = await store.get(CachedTool, tool.id)
        assert_same(got, tool)
        assert got.capability is (tool.label or Capability.WRITE)
        assert await store.select(CachedTool, label=tool.label) == [tool]
        assert await store.select(CachedTool, suggested_label=tool.suggested_label) == [tool]


async def test_context_document_policies_round_trip(store: SqlStore) -> None:
    t = await seed(store, ["libraries"])
    docs = [attrs.evolve(_document(t, i), policy=p) for i, p in enumerate(DocumentPolicy)]
    for doc in docs:
        await store.insert(doc)
    for doc in docs:
        assert_same(await store.get(ContextDocument, doc.id), doc)
        assert await store.select(ContextDocument, policy=doc.policy) == [doc]
        assert await store.count(ContextDocument, policy=doc.policy) == 1


async def test_skill_assets_round_trip_as_tuple_of_skill_assets(store: SqlStore) -> None:
    t = await seed(store, ["libraries"])
    assets = (
        SkillAsset(name="README.md", mime_type="text/markdown", text="# Use me\n\n✓ 'quoted'"),
        SkillAsset(name="defaults.txt"),
        SkillAsset(name="data.json", mime_type="application/json", text='{"a": [1, 2]}'),
    )
    skill = attrs.evolve(_skill(t, 0), assets=assets)
    empty = _skill(t, 3)
    await store.insert(skill)
    await store.insert(attrs.evolve(empty, assets=()))
    got = await store.get(Skill, skill.id)
    assert_same(got, skill)
    assert all(type(a) is SkillAsset for a in got.assets)
    assert [a.name for a in got.assets] == ["README.md", "defaults.txt", "data.json"]
    assert (await store.get(Skill, empty.id)).assets == ()


async def test_connector_secret_bytes_and_headers_dict_round_trip(store: SqlStore) -> None:
    t = await seed(store)
    connector = Connector(
        workspace_id=t.ws.id,
        name="github",
        kind=ConnectorKind.GITHUB,
        url="https://api.github.com",
        headers={"Accept": "application/vnd.github+json", "X-Ünï": "✓ \"q\" 'q'"},
        secret=NOT_UTF8,
    )
    await store.insert(connector)
    got = await store.get(Connector, connector.id)
    assert_same(got, connector)
    assert got.secret == NOT_UTF8
    assert got.headers == connector.headers


async def test_event_body_bytes_and_headers_round_trip(store: SqlStore) -> None:
    t = await seed(store, ["webhooks"])
    event = Event(
        webhook_id=t.webhooks[0].id,
        body=NOT_UTF8 * 64,
        headers={"content-type": "application/octet-stream", "x-request-id": "r-1"},
    )
    empty = Event(webhook_id=t.webhooks[0].id, body=b"")
    await store.insert(event)
    await store.insert(empty)
    got = await store.get(Event, event.id)
    assert_same(got, event)
    assert got.body == NOT_UTF8 * 64
    assert_same(await store.get(Event, empty.id), empty)


async def test_approval_result_round_trips_none_and_dicts(store: SqlStore) -> None:
    t = await seed(store, ["token"])
    results = [
        None,
        {},
        {"content": [{"type": "text", "text": "ok ✓"}], "n": 1.5, "flags": [True, None]},
    ]
    approvals = [attrs.evolve(_approval(t, i), result=r) for i, r in enumerate(results)]
    for approval in approvals:
        await store.insert(approval)
    for approval in approvals:
        got = await store.get(Approval, approval.id)
        assert_same(got, approval)
        assert got.result == approval.result
    assert await store.select(Approval, result=None) == approvals[:1]


# -- errors -------------------------------------------------------------------


async def test_duplicate_workspace_slug_conflicts(store: SqlStore) -> None:
    await store.insert(Workspace(slug="acme", name="Acme"))
    with pytest.raises(ConflictError, match=r"workspace 'acme'"):
        await store.insert(Workspace(slug="acme", name="Another"))
    taken = await store.insert(Workspace(slug="taken", name="Taken"))
    with pytest.raises(ConflictError, match=r"workspace 'acme'"):
        await store.update(attrs.evolve(taken, slug="acme"))
    assert await store.count(Workspace) == 2
    assert (await store.get(Workspace, taken.id)).slug == "taken"


async def test_group_slug_is_unique_per_workspace(store: SqlStore) -> None:
    t = await seed(store)
    first = await store.insert(Group(workspace_id=t.ws.id, slug="ops", name="Ops"))
    with pytest.raises(ConflictError, match=r"group 'ops'"):
        await store.insert(Group(workspace_id=t.ws.id, slug="ops", name="Ops again"))
    elsewhere = await store.insert(Group(workspace_id=t.other_ws.id, slug="ops", name="Ops"))
    assert await store.group_by_slug("acme", "ops") == first
    assert await store.group_by_slug("other", "ops") == elsewhere
    with pytest.raises(ConflictError, match=r"group 'ops'"):
        await store.update(attrs.evolve(elsewhere, workspace_id=t.ws.id))
    assert await store.count(Group, slug="ops") == 2


async def test_duplicate_token_hash_conflicts(store: SqlStore) -> None:
    t = await seed(store, ["groups"])
    first = McpToken(group_id=t.groups[0].id, name="ci", token_hash=_hash("x"), hint="x")
    await store.insert(first)
    again = McpToken(group_id=t.groups[1].id, name="laptop", token_hash=_hash("x"), hint="x")
    with pytest.raises(ConflictError, match=r"MCP token"):
        await store.insert(again)
    assert await store.select(McpToken) == [first]


async def test_connector_name_is_unique_per_workspace(store: SqlStore) -> None:
    t = await seed(store)
    await store.insert(Connector(workspace_id=t.ws.id, name="github", kind=ConnectorKind.GITHUB))
    with pytest.raises(ConflictError, match=r"connector 'github'"):
        await store.insert(
            Connector(workspace_id=t.ws.id, name="github", kind=ConnectorKind.REMOTE_MCP)
        )
    await store.insert(
        Connector(workspace_id=t.other_ws.id, name="github", kind=ConnectorKind.GITHUB)
    )
    assert await store.count(Connector, name="github") == 2


async def test_duplicate_admin_username_conflicts(store: SqlStore) -> None:
    await store.insert(Admin(username="alice", password_hash="h1"))
    with pytest.raises(ConflictError, match=r"admin 'alice'"):
        await store.insert(Admin(username="alice", password_hash="h2"))
    assert [a.password_hash for a in await store.select(Admin)] == ["h1"]


async def test_duplicate_id_conflicts(store: SqlStore) -> None:
    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    with pytest.raises(ConflictError):
        await store.insert(Workspace(id=ws.id, slug="other", name="Other"))
    assert await store.select(Workspace) == [ws]


def _orphans() -> list[Any]:
    return [
        Group(workspace_id="ws_missing", slug="ops", name="Ops"),
        McpToken(group_id="grp_missing", name="ci", token_hash=_hash("o"), hint="o"),
        Connector(workspace_id="ws_missing", name="github", kind=ConnectorKind.GITHUB),
        GroupConnector(group_id="grp_missing", connector_id="con_missing"),
        CachedTool(connector_id="con_missing", name="search", definition_hash="h"),
        Library(workspace_id="ws_missing", slug="docs", name="Docs"),
        GroupLibrary(group_id="grp_missing", library_id="lib_missing"),
        ContextDocument(library_id="lib_missing", slug="readme", title="R", body="b"),
        Skill(library_id="lib_missing", slug="deploy", prompt="p"),
        Webhook(workspace_id="ws_missing", name="gh", channel="#c", prompt="p", token_hash="h"),
        Event(webhook_id="wh_missing", body=b"{}"),
        ChatMessage(workspace_id="ws_missing", channel="local:c", text="t"),
        Approval(
            group_id="grp_missing",
            requested_by="mcp:tok_x",
            tool_name="x",
            capability=Capability.WRITE,
            definition_hash="d",
            arguments_hash="h",
            expires_at=T0,
        ),
        ToolPermission(
            workspace_id="ws_missing",
            tool_name="x",
            permission=Permission.DENY,
            definition_hash="d",
            set_by="a",
        ),
        AuditEntry(workspace_id="ws_missing", actor="a", action="b", target="c"),
    ]


async def test_insert_with_missing_parent_is_not_found(store: SqlStore) -> None:
    outcomes: dict[str, str] = {}
    for orphan in _orphans():
        try:
            await store.insert(orphan)
        except NotFoundError as exc:
            outcomes[type(orphan).__name__] = exc.message
        else:
            outcomes[type(orphan).__name__] = "inserted"
    assert len(outcomes) == len(_orphans())
    assert all("refers to a record that does not exist" in m for m in outcomes.values()), outcomes
    for orphan in _orphans():
        assert await store.count(type(orphan)) == 0, type(orphan).__name__


async def test_update_to_missing_parent_is_not_found(store: SqlStore) -> None:
    t = await seed(store, ["groups"])
    with pytest.raises(NotFoundError, match=r"group 'g0'"):
        await store.update(attrs.evolve(t.groups[0], workspace_id="ws_missing"))
    assert (await store.get(Group, t.groups[0].id)).workspace_id == t.ws.id


async def test_deleting_a_workspace_cascades(store: SqlStore) -> None:
    t = await seed(store, ["token", "connectors", "libraries", "events"])
    await store.insert(GroupConnector(group_id=t.groups[0].id, connector_id=t.connectors[0].id))
    await store.insert(AuditEntry(workspace_id=t.ws.id, actor="a", action="b", target="c"))
    kept_group = await store.insert(Group(workspace_id=t.other_ws.id, slug="kept", name="K"))
    kept_token = await store.insert(
        McpToken(group_id=kept_group.id, name="kept", token_hash=_hash("kept"), hint="kept")
    )
    assert await store.count(McpToken) == 2

    await store.delete(Workspace, t.ws.id)

    assert await store.select(Workspace) == [t.other_ws]
    assert await store.select(Group) == [kept_group]
    assert await store.select(McpToken) == [kept_token]
    for gone in (Connector, GroupConnector, Library, Webhook, Event):
        assert await store.count(gone) == 0, gone.__name__
    # The audit log outlives what it talks about.
    (entry,) = await store.select(AuditEntry)
    assert entry.workspace_id is None
    with pytest.raises(NotFoundError, match="'acme'"):
        await store.workspace_by_slug("acme")


async def test_deleting_a_group_detaches_webhooks_and_cascades_tokens(store: SqlStore) -> None:
    t = await seed(store, ["token", "webhooks"])
    await store.delete(Group, t.groups[0].id)
    assert await store.count(McpToken) == 0
    assert [w.group_id for w in await store.select(Webhook)] == [None, None]


async def test_deleting_an_event_keeps_its_chat_message(store: SqlStore) -> None:
    t = await seed(store, ["events"])
    message = await store.insert(
        ChatMessage(workspace_id=t.ws.id, channel="local:c", text="t", event_id=t.events[0].id)
    )
    await store.delete(Event, t.events[0].id)
    # The message is the channel's: it stays, still saying which event made it.
    assert await store.get(ChatMessage, message.id) == message


async def test_lookups_by_slug(store: SqlStore) -> None:
    t = await seed(store, ["groups"])
    assert await store.workspace_by_slug("acme") == t.ws
    assert await store.group_by_slug("acme", "g3") == t.groups[3]
    with pytest.raises(NotFoundError, match=r"no workspace 'nope'"):
        await store.workspace_by_slug("nope")
    with pytest.raises(NotFoundError, match=r"no workspace 'nope'"):
        await store.group_by_slug("nope", "g0")
    with pytest.raises(NotFoundError, match=r"no group 'nope' in workspace 'acme'"):
        await store.group_by_slug("acme", "nope")
    with pytest.raises(NotFoundError, match=r"no group 'g0' in workspace 'other'"):
        await store.group_by_slug("other", "g0")


async def test_token_by_hash(store: SqlStore) -> None:
    t = await seed(store, ["token"])
    assert t.token is not None
    assert await store.token_by_hash(_hash("seed")) == t.token
    assert await store.token_by_hash(_hash("unknown")) is None
    await store.revoke_token(t.token.id)
    revoked = await store.token_by_hash(_hash("seed"))
    assert revoked is not None
    assert revoked.revoked


async def test_revoke_token_sets_the_time_once(store: SqlStore) -> None:
    t = await seed(store, ["token"])
    assert t.token is not None
    before = utcnow()
    revoked = await store.revoke_token(t.token.id)
    after = utcnow()
    assert revoked.revoked_at is not None
    assert before <= revoked.revoked_at <= after
    assert revoked == attrs.evolve(t.token, revoked_at=revoked.revoked_at)
    assert await store.get(McpToken, t.token.id) == revoked

    again = await store.revoke_token(t.token.id)
    assert again.revoked_at == revoked.revoked_at
    long_ago = await store.update(attrs.evolve(t.token, name="old", revoked_at=T0))
    assert (await store.revoke_token(t.token.id)).revoked_at == long_ago.revoked_at

    with pytest.raises(NotFoundError, match="tok_missing"):
        await store.revoke_token("tok_missing")


async def test_touch_token_sets_last_used(store: SqlStore) -> None:
    t = await seed(store, ["token"])
    assert t.token is not None
    other = await store.insert(
        McpToken(group_id=t.groups[1].id, name="other", token_hash=_hash("o"), hint="o")
    )
    assert t.token.last_used_at is None
    before = utcnow()
    await store.touch_token(t.token.id)
    after = utcnow()
    touched = await store.get(McpToken, t.token.id)
    assert touched.last_used_at is not None
    assert before <= touched.last_used_at <= after
    assert touched == attrs.evolve(t.token, last_used_at=touched.last_used_at)
    assert await store.get(McpToken, other.id) == other

    await store.update(attrs.evolve(touched, last_used_at=T0))
    await store.touch_token(t.token.id)
    last = (await store.get(McpToken, t.token.id)).last_used_at
    assert last is not None
    assert last >= touched.last_used_at


async def test_mark_tools_fetched_sets_only_the_time_of_one_connectors_tools(
    store: SqlStore,
) -> None:
    t = await seed(store, ["connectors"])
    tools = [await store.insert(_cached_tool(t, i)) for i in range(4)]  # two per connector
    # An admin labels a tool while a refresh of its connector is under way.
    labeled = await store.update(attrs.evolve(tools[0], label=Capability.READ))
    later = T0 + timedelta(hours=1)
    await store.mark_tools_fetched(tools[0].connector_id, later)
    for tool in tools:
        got = await store.get(CachedTool, tool.id)
        if tool.connector_id == tools[0].connector_id:
            base = labeled if tool.id == labeled.id else tool
            assert_same(got, attrs.evolve(base, fetched_at=later))
        else:
            assert_same(got, tool)


async def test_the_catalog_version_moves_with_what_tool_lists_are_made_of(
    store: SqlStore,
) -> None:
    t = await seed(store, ["groups", "token", "connectors", "libraries"])
    assert t.token is not None
    versions = [await store.catalog_version()]

    async def moved() -> bool:
        versions.append(await store.catalog_version())
        return versions[-1] != versions[-2]

    tool = await store.insert(_cached_tool(t, 0))
    assert await moved()
    await store.update(attrs.evolve(tool, label=Capability.READ))
    assert await moved()
    link = await store.insert(
        GroupConnector(group_id=t.groups[0].id, connector_id=tool.connector_id)
    )
    assert await moved()
    await store.delete(GroupConnector, link.id)
    assert await moved()
    attached = await store.insert(
        GroupLibrary(group_id=t.groups[0].id, library_id=t.libraries[0].id)
    )
    assert await moved()
    await store.update(attrs.evolve(t.connectors[0], active=False))
    assert await moved()
    # Writes that no tool list is made of leave it alone.
    await store.touch_token(t.token.id)
    await store.insert(AuditEntry(workspace_id=t.ws.id, actor="a", action="x", target="y"))
    assert not await moved()
    # Cascades count: deleting the library detaches it; deleting the connector drops its tools.
    await store.delete(Library, t.libraries[0].id)
    assert await store.find(GroupLibrary, id=attached.id) is None
    assert await moved()
    await store.delete(Connector, t.connectors[0].id)
    assert await moved()
    assert versions == sorted(versions)


async def test_a_field_named_kind_can_be_filtered_by(store: SqlStore) -> None:
    # Connector.kind shares its name with the record-type parameter of select/find/count.
    t = await seed(store, ["connectors"])
    github = await store.select(Connector, kind=ConnectorKind.GITHUB)
    assert sorted(c.id for c in github) == sorted(c.id for c in t.connectors)
    assert await store.count(Connector, kind=ConnectorKind.GITHUB) == 2
    assert await store.count(Connector, kind=ConnectorKind.SLACK) == 0
    assert await store.find(Connector, kind=ConnectorKind.GITHUB) == github[0]
    assert await store.find(Connector, kind=ConnectorKind.SLACK) is None


async def test_unknown_field_is_a_value_error(store: SqlStore) -> None:
    with pytest.raises(ValueError, match=r"'colour'"):
        await store.select(Workspace, colour="red")
    with pytest.raises(ValueError, match=r"'colour'"):
        await store.select(Group, colour=None)
    with pytest.raises(ValueError, match=r"'colour'"):
        await store.count(Admin, colour="red")
    with pytest.raises(ValueError, match=r"'colour'"):
        await store.find(Event, colour="red")


# -- opening and migrating ----------------------------------------------------


async def _open_and_close(url: str) -> None:
    async with open_store(url, pool_size=1):
        pass


async def _workspace_slugs(url: str) -> list[str]:
    async with open_store(url, pool_size=1) as store:
        return [w.slug for w in await store.select(Workspace)]


async def _migration_versions(url: str) -> list[int]:
    async with open_database(url) as db, db.transaction(write=False) as tx:
        rows = await tx.fetch("SELECT version FROM schema_migrations ORDER BY version")
    return [row["version"] for row in rows]


async def test_sealed_samples_are_the_newest_sealed_value_of_each_kind(store: SqlStore) -> None:
    t = await seed(store, ["token"])
    assert await store.sealed_samples() == []
    for i in range(4):  # the even ones have no secret
        await store.insert(
            Connector(
                workspace_id=t.ws.id,
                name=_key(i),
                kind=ConnectorKind.GITHUB,
                url="https://api.github.com",
                secret=f"connector {i}".encode() if i % 2 else None,
                created_at=_at(i),
            )
        )
        await store.insert(
            attrs.evolve(_webhook(t, i), secret=f"hook {i}".encode() if i % 2 else None)
        )
    # Approvals: only a call still waiting (pending or approved) needs its arguments opened.
    stored = [s for s in ApprovalStatus if s is not ApprovalStatus.RUNNING]  # never stored
    for i, status in enumerate(stored):
        approval = attrs.evolve(
            _approval(t, i), status=status, sealed_arguments=f"{status}".encode()
        )
        await store.insert(approval)
    assert sorted(await store.sealed_samples()) == sorted(
        [b"connector 3", b"hook 3", f"{ApprovalStatus.APPROVED}".encode()]
    )


async def test_opening_twice_is_idempotent(database_url: str) -> None:
    async with open_store(database_url, pool_size=1) as store:
        await store.ping()
        await store.insert(Workspace(slug="acme", name="Acme"))
    assert await _workspace_slugs(database_url) == ["acme"]
    assert await _migration_versions(database_url) == [m.version for m in MIGRATIONS]


async def test_migrate_applies_each_migration_once(database_url: str) -> None:
    async with open_database(database_url) as db:
        assert await migrate(db) == [m.version for m in MIGRATIONS]
        assert await migrate(db) == []
    async with open_database(database_url) as db:
        assert await migrate(db) == []
    assert await _migration_versions(database_url) == [m.version for m in MIGRATIONS]


async def test_migration_29_brings_webhook_body_limits_down_to_2_mib(store: SqlStore) -> None:
    """Earlier versions let a webhook take 10 MiB; a body is parsed whole on the event loop."""
    t = await seed(store, ["webhooks"])
    big, small = t.webhooks
    await store.update(attrs.evolve(big, max_body_bytes=10 * 1024 * 1024))
    async with store.database.transaction() as tx:
        await tx.execute("DELETE FROM schema_migrations WHERE version = 29")
    assert await migrate(store.database) == [29]
    assert (await store.get(Webhook, big.id)).max_body_bytes == 2 * 1024 * 1024
    assert (await store.get(Webhook, small.id)).max_body_bytes == small.max_body_bytes


async def test_open_store_without_create_refuses_a_database_agentws_never_made(
    database_url: str,
) -> None:
    with pytest.raises(NoDatabaseError):
        async with open_store(database_url, pool_size=1, create=False):
            pass
    if database_url.startswith("sqlite"):
        assert not await trio.Path(sqlite_path(database_url)).exists()
    else:
        async with open_database(database_url) as db:
            assert not await has_schema(db)
    # Created once, it is opened (and brought up to date) without create.
    await _open_and_close(database_url)
    async with open_store(database_url, pool_size=1, create=False) as store:
        await store.ping()


async def _mark_newer(url: str, version: int) -> None:
    async with open_database(url) as db, db.transaction() as tx:
        applied_at = utcnow()
        await tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
            version,
            "from_the_future",
            applied_at.isoformat() if db.dialect == "sqlite" else applied_at,
        )


async def test_migrate_refuses_a_newer_schema(database_url: str) -> None:
    await _open_and_close(database_url)
    newer = MIGRATIONS[-1].version + 1
    await _mark_newer(database_url, newer)
    async with open_database(database_url) as db:
        with pytest.raises(MigrationError, match=rf"schema version {newer}\b"):
            await migrate(db)


async def test_open_store_refuses_a_newer_schema(database_url: str) -> None:
    await _open_and_close(database_url)
    newer = MIGRATIONS[-1].version + 1
    await _mark_newer(database_url, newer)
    with pytest.raises(MigrationError, match=rf"schema version {newer}\b"):
        await _open_and_close(database_url)


async def _get_in_fresh_store(url: str) -> None:
    async with open_store(url, pool_size=1) as store:
        await store.get(Workspace, "ws_missing")


async def test_errors_leave_open_store_unwrapped(database_url: str) -> None:
    # What a CLI command does: open, fail, expect its own error type back.
    with pytest.raises(NotFoundError, match="ws_missing"):
        await _get_in_fresh_store(database_url)


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("sqlite:////nonexistent-dir-agentws/agentws.db", id="sqlite"),
        pytest.param(
            "postgresql://postgres@127.0.0.1:1/test", id="postgres", marks=pytest.mark.postgres
        ),
    ],
)
async def test_unreachable_database_is_store_unavailable(url: str) -> None:
    with pytest.raises(StoreUnavailableError):
        await _open_and_close(url)


# -- concurrency --------------------------------------------------------------


async def test_two_tasks_insert_concurrently(store: SqlStore) -> None:
    counts: list[int] = []

    async def writer(prefix: str) -> None:
        for i in range(50):
            await store.insert(Workspace(slug=f"{prefix}-{i}", name=f"{prefix} {i}"))

    async def reader(done: trio.Event) -> None:
        while not done.is_set():
            counts.append(await store.count(Workspace))

    async with trio.open_nursery() as outer:
        done = trio.Event()
        outer.start_soon(reader, done)
        async with trio.open_nursery() as writers:
            writers.start_soon(writer, "a")
            writers.start_soon(writer, "b")
        done.set()

    slugs = {w.slug for w in await store.select(Workspace)}
    assert slugs == {f"{p}-{i}" for p in "ab" for i in range(50)}
    assert await store.count(Workspace) == 100
    assert counts == sorted(counts)
    assert all(0 <= c <= 100 for c in counts)


async def test_racing_inserts_of_one_slug_conflict_exactly_once(store: SqlStore) -> None:
    outcomes: dict[str, list[str]] = {}

    async def attempt(ws: Workspace) -> None:
        try:
            await store.insert(ws)
        except ConflictError as exc:
            outcomes.setdefault(ws.slug, []).append(f"conflict: {exc.message}")
        else:
            outcomes.setdefault(ws.slug, []).append(ws.id)

    racers = [Workspace(slug=f"same-{n}", name=f"{n}{side}") for n in range(10) for side in "ab"]
    async with trio.open_nursery() as nursery:
        for ws in racers:
            nursery.start_soon(attempt, ws)

    for slug, results in outcomes.items():
        winners = [r for r in results if not r.startswith("conflict")]
        assert len(winners) == 1, results
        assert len(results) == 2, results
        assert f"'{slug}'" in next(r for r in results if r.startswith("conflict"))
        assert (await store.workspace_by_slug(slug)).id == winners[0]
    assert await store.count(Workspace) == 10


async def _read_line(stream: trio.abc.ReceiveStream) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        chunk = await stream.receive_some()
        if not chunk:
            break
        line += chunk
    return line


async def _run_workers(url: str, count: int) -> list[int]:
    """Run two workers that open ``url`` at the same moment; their exit codes."""
    processes = []
    with trio.fail_after(30):  # a deadlock fails the test rather than hanging the suite
        async with trio.open_nursery() as nursery:
            for prefix in ("a", "b"):
                command = [sys.executable, str(WORKER), url, prefix, str(count)]
                run = partial(trio.run_process, command, stdin=PIPE, stdout=PIPE, check=False)
                processes.append(await nursery.start(run))
            # Both have imported everything; let them open the store together.
            for process in processes:
                assert await _read_line(process.stdout) == b"ready\n"
            for process in processes:
                await process.stdin.send_all(b"go\n")
                await process.stdin.aclose()
            for process in processes:
                line = await _read_line(process.stdout)
                assert line == b"done\n", "a worker failed: its traceback is in captured stderr"
    return [process.returncode for process in processes]


async def test_two_processes_open_and_write_at_once(database_url: str) -> None:
    count = 25
    if database_url.startswith("sqlite:"):
        # Create the file, in WAL mode, first. On a file that is not in WAL mode yet,
        # SQLite answers the PRAGMA journal_mode=WAL of agentws.store.sqlite._connect
        # with "database is locked" at once (no busy wait) while another process holds
        # a lock, so two processes creating the database together fail now and then.
        # That is a bug of its own; this test is about migrations and writes.
        async with open_database(database_url):
            pass
    assert await _run_workers(database_url, count) == [0, 0]
    assert await _migration_versions(database_url) == [m.version for m in MIGRATIONS]
    assert sorted(await _workspace_slugs(database_url)) == sorted(
        f"{p}-{i}" for p in "ab" for i in range(count)
    )
