"""IngestBatcher: deliveries wait for the commit of their event, keep their deadline, and make
the door busy when they wait together."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from agentws.core.errors import StoreUnavailableError
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


async def test_deliveries_waiting_together_for_their_commit_make_the_door_busy_for_a_while(
    tmp_path: Path,
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        hook = await webhook(store)
        stored = 0

        def on_stored() -> None:
            nonlocal stored
            stored += 1

        batcher = IngestBatcher(store, on_stored=on_stored, busy_s=0.2)
        ids: list[str] = []

        async def deliver(n: int) -> None:
            result = await batcher.submit(Event(webhook_id=hook.id, body=b'{"n": %d}' % n))
            assert result.outcome is IngestOutcome.ACCEPTED
            ids.append(str(result.event_id))

        async with trio.open_nursery() as nursery:
            await nursery.start(batcher.serve)
            # The writer is busy with another transaction: deliveries wait together.
            async with trio.open_nursery() as senders, store.database.transaction():
                for n in range(BUSY_BATCH - 1):
                    senders.start_soon(deliver, n)
                await trio.testing.wait_all_tasks_blocked()
                assert not batcher.busy()
                senders.start_soon(deliver, BUSY_BATCH - 1)
                await trio.testing.wait_all_tasks_blocked()
                assert batcher.busy()
                assert not ids  # none answered before its commit
            assert stored == BUSY_BATCH
            assert await store.count(Event) == BUSY_BATCH
            assert len(set(ids)) == BUSY_BATCH

            with trio.fail_after(5):
                while batcher.busy():  # noqa: ASYNC110 - busy() is a clock reading
                    await trio.sleep(0.01)
            # One at a time, deliveries do not make the door busy.
            for n in range(BUSY_BATCH):
                await deliver(n)
            assert not batcher.busy()
            batcher.close()


async def test_a_delivery_past_its_deadline_is_told_so_and_its_event_may_still_be_stored(
    tmp_path: Path,
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        hook = await webhook(store)
        batcher = IngestBatcher(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(batcher.serve)
            async with store.database.transaction():
                with pytest.raises(StoreUnavailableError, match="no answer in time"):
                    await batcher.deliver(
                        hook.id, b"{}", {}, "key-1", deadline=trio.current_time() + 0.05
                    )
            # The commit under way stored it: the sender's retry is a duplicate.
            retried = await batcher.deliver(
                hook.id, b"{}", {}, "key-1", deadline=trio.current_time() + 5
            )
            assert retried.outcome is IngestOutcome.DUPLICATE
            assert await store.count(Event) == 1
            batcher.close()


async def test_closing_ends_serving_once_the_deliveries_under_way_are_answered(
    tmp_path: Path,
) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        hook = await webhook(store)
        batcher = IngestBatcher(store)
        answers: list[IngestOutcome] = []
        served = trio.Event()

        async def serve(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            await batcher.serve(task_status=task_status)
            served.set()

        async def deliver() -> None:
            result = await batcher.deliver(
                hook.id, b"{}", {}, None, deadline=trio.current_time() + 5
            )
            answers.append(result.outcome)

        async with trio.open_nursery() as nursery:
            await nursery.start(serve)
            async with store.database.transaction():
                nursery.start_soon(deliver)
                await trio.testing.wait_all_tasks_blocked()
                batcher.close()
                await trio.testing.wait_all_tasks_blocked()
                # Still keeping the deadline of the delivery under way.
                assert not served.is_set()
        assert served.is_set()
        assert answers == [IngestOutcome.ACCEPTED]
