"""Which sessions wait for an approval's outcome: only those are looked at, not every open one."""

from __future__ import annotations

from agentws.settings.config import Settings
from tests.unit.supervisor_support import make_caller, running_supervisor


async def test_only_the_sessions_that_queued_a_call_wait_for_its_outcome() -> None:
    async with running_supervisor(Settings(), "awaiting") as supervisor:
        caller = make_caller()
        waiting, idle, closing = [await supervisor.open(caller, "sse") for _ in range(3)]
        assert supervisor.awaited() == set()

        waiting.await_outcome("approval-1")
        waiting.await_outcome("approval-2")
        closing.await_outcome("approval-3")
        assert supervisor.awaited() == {"approval-1", "approval-2", "approval-3"}

        closing.close()  # a closed session waits for nothing
        assert supervisor.awaited() == {"approval-1", "approval-2"}
        supervisor.forget("approval-1")
        assert supervisor.awaited() == {"approval-2"}
        assert idle.awaiting == {}
        # Told of its last outcome (or not: it has no client here), it waits no more.
        waiting.awaiting.clear()
        assert supervisor.awaited() == set()
        waiting.await_outcome("approval-4")
        assert supervisor.awaited() == {"approval-4"}
