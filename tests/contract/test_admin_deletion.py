"""Deleting admins, never the last one, on SQLite and PostgreSQL.

``delete_admin_unless_last`` deletes an admin with its sessions and admin
API tokens, refuses the only admin, and lets at most one of several admins
deleting each other at once win when only two are left.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import trio

from agentws.core.errors import NotFoundError
from agentws.domain.models import Admin, AdminSession, AdminToken
from agentws.domain.rules import utcnow
from agentws.store import SqlStore


async def test_an_admin_goes_with_its_sessions_and_tokens(store: SqlStore) -> None:
    alice = await store.insert(Admin(username="alice", password_hash="x"))
    bob = await store.insert(Admin(username="bob", password_hash="x"))
    now = utcnow()
    await store.insert(
        AdminSession(
            admin_id=bob.id,
            token_hash="s",
            csrf_token="c",
            created_at=now,
            expires_at=now + timedelta(hours=1),
            last_seen_at=now,
        )
    )
    await store.insert(AdminToken(admin_id=bob.id, name="deploy", token_hash="t"))
    assert await store.delete_admin_unless_last(bob.id) is True
    assert await store.select(Admin) == [alice]
    assert await store.select(AdminSession) == [] and await store.select(AdminToken) == []
    assert await store.delete_admin_unless_last(alice.id) is False
    assert await store.select(Admin) == [alice]
    with pytest.raises(NotFoundError):
        await store.delete_admin_unless_last(bob.id)


async def test_two_admins_deleting_each_other_leave_one(store: SqlStore) -> None:
    first = await store.insert(Admin(username="alice", password_hash="x"))
    second = await store.insert(Admin(username="bob", password_hash="x"))
    outcomes: list[bool] = []

    async def delete(admin_id: str) -> None:
        outcomes.append(await store.delete_admin_unless_last(admin_id))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(delete, first.id)
        nursery.start_soon(delete, second.id)
    assert sorted(outcomes) == [False, True]
    assert len(await store.select(Admin)) == 1
