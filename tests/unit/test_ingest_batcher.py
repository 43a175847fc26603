"""IngestBatcher: deliveries that arrive together share a commit, and make the door busy."""

from __future__ import annotations

from pathlib import Path

import trio

from agentws.domain.deliveries import IngestOutcome
from agentws.domain.models import Event, Webhook, Workspace
from agentws.store import SqlStore, open_store
from agentws.webhooks.batcher import BUSY_BATCH, IngestBatcher


async def webhook(store: SqlStore) -> Webhook:
    workspace = await store.insert(Workspace(slug="acme", name="Acme"))
    return await store.insert(
        Webhook(
            workspace_id=workspace.id, name="ci", channel="local:ops", prompt="p", token_hash="h"
        )
    )


async def submit_together(batcher: IngestBatcher, hook: Webhook, count: int) -> list[str]:
    """``count`` deliveries handed over in one turn of the loop; their event ids."""
    ids: list[str] = []

    async def one(n: int) -> None:
        stored = await batcher.submit(Event(webhook_id=hook.id, body=b'{"n": %d}' % n))
        assert stored.outcome is IngestOutcome.ACCEPTED
        ids.append(str(stored.event_id))

    async with trio.open_nursery() as nursery:
        for n in range(count):
            nursery.start_soon(one, n)
    return ids


async def test_deliveries_queueing_for_a_commit_make_the_door_busy_for_a_while(
    tmp_path: Path,
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        hook = await webhook(store)
        commits = 0

        def stored() -> None:
            nonlocal commits
            commits += 1

        batcher = IngestBatcher(store, on_stored=stored, busy_s=0.2)
        async with trio.open_nursery() as nursery:
            await nursery.start(batcher.serve)
            await submit_together(batcher, hook, BUSY_BATCH - 1)
            assert not batcher.busy()
            assert commits == 1  # seven deliveries, one commit

            ids = await submit_together(batcher, hook, BUSY_BATCH)
            assert batcher.busy()
            assert commits == 2
            assert await store.count(Event) == 2 * BUSY_BATCH - 1
            assert len(set(ids)) == BUSY_BATCH

            with trio.fail_after(5):
                while batcher.busy():  # noqa: ASYNC110 - busy() is a clock reading
                    await trio.sleep(0.01)
            batcher.close()
