"""Instances and change notifications, on SQLite and PostgreSQL.

- ``heartbeat`` inserts or refreshes an instance's row (its start time
  stays), and ``live_instances`` lists those heard from since a time.
- :class:`~agentws.common.changes.ChangeFeed` on PostgreSQL hears, through
  LISTEN/NOTIFY, a token revoked, an approval decided and a catalog change
  made by another connection, each on its own topic; not a token's last use,
  and not a change in another schema of the same database. A lost listening
  connection makes it deaf (readiness says why) until it reconnects, and
  both moves wake every topic. On SQLite it never listens and consumers poll,
  but it sees commits made by any connection, and wakes those who ask.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
import trio

from agentws.common.changes import ChangeFeed, Topic
from agentws.domain.models import (
    Approval,
    ApprovalStatus,
    Capability,
    Connector,
    ConnectorKind,
    Group,
    Instance,
    McpToken,
    Workspace,
    arguments_hash,
)
from agentws.domain.rules import utcnow
from agentws.store import SqlStore, open_store
from agentws.store.postgres import LISTENER_NAME
from tests.support import fresh_schema

# A notification crosses the database within milliseconds; this is the patience.
HEARD_S = 5.0


async def test_heartbeats_keep_the_start_and_live_instances_are_the_recent_ones(
    store: SqlStore,
) -> None:
    now = utcnow()
    first = Instance(id="inst-a", internal_url="http://10.0.0.1:8081", started_at=now)
    await store.heartbeat(first)
    later = Instance(
        id="inst-a",
        internal_url="http://10.0.0.1:9091",
        started_at=now + timedelta(minutes=1),
        heartbeat_at=now + timedelta(seconds=30),
        draining=True,
        public_url="https://agents.example.com",
    )
    await store.heartbeat(later)
    old = Instance(id="inst-b", internal_url="http://b", heartbeat_at=now - timedelta(minutes=5))
    await store.heartbeat(old)

    (found,) = await store.live_instances(now)
    assert found.id == "inst-a"
    assert found.internal_url == "http://10.0.0.1:9091"
    assert found.draining
    assert found.public_url == "https://agents.example.com"
    assert abs(found.started_at - now) < timedelta(milliseconds=1)
    both = await store.live_instances(now - timedelta(minutes=10))
    assert {i.id for i in both} == {"inst-a", "inst-b"}
    assert {i.id: i.public_url for i in both}["inst-b"] is None  # not said: none

    await store.delete(Instance, "inst-a")
    assert await store.live_instances(now) == []


async def test_sqlite_announces_nothing_and_the_feed_polls(sqlite_url: str) -> None:
    async with open_store(sqlite_url) as store, trio.open_nursery() as nursery:
        assert not store.notifies
        feed = ChangeFeed(store)
        await nursery.start(feed.serve)
        assert not feed.listening
        assert feed.version(Topic.TOKENS) is None  # "assume changed"
        assert feed.problem() is None  # nothing is wrong: there is nothing to listen to
        with trio.move_on_after(0.05) as waited:
            await feed.wait(Topic.TOKENS, feed.generation(Topic.TOKENS), poll_s=0.01)
        assert not waited.cancelled_caught  # returned at the polling interval
        nursery.cancel_scope.cancel()


async def test_on_sqlite_the_feed_sees_commits_made_by_another_process(sqlite_url: str) -> None:
    async with (
        open_store(sqlite_url) as store,
        # Its own connections to the same file, as the CLI has.
        open_store(sqlite_url) as writer,
        trio.open_nursery() as nursery,
    ):
        _, token, _ = await _seed(writer)
        feed = ChangeFeed(store)
        await nursery.start(feed.serve)
        commits = feed.commits()
        assert commits is not None
        seen = feed.generation(Topic.TOKENS)
        await writer.revoke_token(token.id)
        with trio.fail_after(HEARD_S):
            # Long before the polling interval: the commit wakes the waiter.
            await feed.wait(Topic.TOKENS, seen, poll_s=3600, commits=commits)
        assert feed.commits() != commits
        assert feed.generation(Topic.TOKENS) == seen  # a commit names no topic
        nursery.cancel_scope.cancel()


async def _seed(store: SqlStore) -> tuple[Group, McpToken, Approval]:
    ws = await store.insert(Workspace(slug="acme", name="Acme"))
    group = await store.insert(Group(workspace_id=ws.id, slug="ops", name="Ops"))
    token = await store.insert(
        McpToken(group_id=group.id, name="t", token_hash=hashlib.sha256(b"t").hexdigest(), hint="t")
    )
    approval = await store.insert(
        Approval(
            group_id=group.id,
            token_id=token.id,
            requested_by=f"mcp:{token.id}",
            tool_name="github_merge",
            capability=Capability.WRITE,
            definition_hash="d" * 64,
            arguments={},
            arguments_hash=arguments_hash("github_merge", {}),
            expires_at=utcnow() + timedelta(hours=1),
        )
    )
    return group, token, approval


async def _moved(feed: ChangeFeed, topic: Topic, seen: int) -> None:
    with trio.fail_after(HEARD_S):
        while feed.generation(topic) == seen:
            await feed.wait(topic, seen, poll_s=HEARD_S)


@pytest.mark.postgres
async def test_postgres_announces_revocations_decisions_and_catalog_changes() -> None:
    async with (
        fresh_schema() as url,
        fresh_schema() as other_url,
        open_store(url) as store,
        open_store(other_url) as other_store,
        # The writer is another connection pool, as another instance or the CLI would be.
        open_store(url) as writer,
        trio.open_nursery() as nursery,
    ):
        group, token, approval = await _seed(writer)
        _, other_token, _ = await _seed(other_store)
        feed = ChangeFeed(store)
        await nursery.start(feed.serve)
        assert feed.listening and feed.problem() is None
        seen = {topic: feed.generation(topic) for topic in Topic}
        assert feed.version(Topic.CATALOG) == seen[Topic.CATALOG]

        # Neither a token's last use nor a change in another schema is announced here.
        await writer.touch_token(token.id)
        await other_store.revoke_token(other_token.id)
        await writer.revoke_token(token.id)
        await _moved(feed, Topic.TOKENS, seen[Topic.TOKENS])
        assert feed.generation(Topic.TOKENS) == seen[Topic.TOKENS] + 1
        assert feed.generation(Topic.APPROVALS) == seen[Topic.APPROVALS]

        decided = await writer.decide_approval(
            approval.id,
            status=ApprovalStatus.DENIED,
            decided_by="admin:a",
            reason="no",
            now=utcnow(),
        )
        assert decided is not None
        await _moved(feed, Topic.APPROVALS, seen[Topic.APPROVALS])

        await writer.insert(
            Connector(workspace_id=group.workspace_id, name="gh", kind=ConnectorKind.GITHUB)
        )
        await _moved(feed, Topic.CATALOG, seen[Topic.CATALOG])
        assert feed.generation(Topic.TOKENS) == seen[Topic.TOKENS] + 1
        nursery.cancel_scope.cancel()


@pytest.mark.postgres
async def test_a_lost_listener_is_reported_and_reconnects() -> None:
    async with (
        fresh_schema() as url,
        open_store(url) as store,
        trio.open_nursery() as nursery,
    ):
        feed = ChangeFeed(store)
        await nursery.start(feed.serve)
        assert feed.listening
        seen = feed.generation(Topic.CATALOG)
        schema = url.rpartition("search_path=")[2]
        async with store.database.transaction() as tx:
            await tx.fetch(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = $1",
                f"{LISTENER_NAME} {schema}",
            )
        with trio.fail_after(HEARD_S):
            while feed.listening:
                await feed.wait(Topic.CATALOG, feed.generation(Topic.CATALOG), poll_s=0.01)
        # Deaf: caches must ask the store, readiness says why, and every topic moved.
        assert feed.version(Topic.CATALOG) is None
        problem = feed.problem()
        assert problem is not None and problem.startswith("change listener:"), problem
        assert feed.generation(Topic.CATALOG) > seen

        with trio.fail_after(HEARD_S):
            while not feed.listening:
                await feed.wait(Topic.CATALOG, feed.generation(Topic.CATALOG), poll_s=0.01)
        assert feed.problem() is None
        # Listening again, it hears changes again.
        seen = feed.generation(Topic.CATALOG)
        ws = await store.insert(Workspace(slug="acme", name="Acme"))
        await store.insert(Connector(workspace_id=ws.id, name="gh", kind=ConnectorKind.GITHUB))
        await _moved(feed, Topic.CATALOG, seen)
        nursery.cancel_scope.cancel()
