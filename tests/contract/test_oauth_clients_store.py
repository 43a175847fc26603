"""OAuth clients in the store, on SQLite and PostgreSQL: the cap on self-registered clients."""

from __future__ import annotations

import trio

from agentws.domain.models import ClientKind, OAuthClient
from agentws.store import SqlStore


def _client(number: int, kind: ClientKind = ClientKind.DYNAMIC) -> OAuthClient:
    return OAuthClient(client_id=f"client-{kind.value}-{number}", kind=kind, name=f"c{number}")


async def test_the_cap_counts_clients_of_the_kind_registered(store: SqlStore) -> None:
    await store.insert(_client(0, ClientKind.OPERATOR))
    assert await store.insert_oauth_client_within(_client(1), limit=2)
    assert await store.insert_oauth_client_within(_client(2), limit=2)
    refused = _client(3)
    assert not await store.insert_oauth_client_within(refused, limit=2)
    assert await store.find(OAuthClient, client_id=refused.client_id) is None
    # Operator clients have no such cap: the count is of the kind inserted.
    assert await store.insert_oauth_client_within(_client(4, ClientKind.OPERATOR), limit=2)


async def test_concurrent_registrations_cannot_pass_the_cap_together(store: SqlStore) -> None:
    taken: list[bool] = []

    async def register(number: int) -> None:
        taken.append(await store.insert_oauth_client_within(_client(number), limit=3))

    async with trio.open_nursery() as nursery:
        for number in range(20):
            nursery.start_soon(register, number)
    assert sorted(taken) == [False] * 17 + [True] * 3
    assert await store.count(OAuthClient, kind=ClientKind.DYNAMIC) == 3
