"""Collecting the notifications a server sends an SDK client session, and waiting for them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs
import mcp_types as types
import trio

from agentws import libraries
from agentws.store.union import Store

__all__ = ["Heard", "add_handbook_document", "change_until_heard"]


@attrs.define(eq=False)
class Heard:
    """Every server notification a session received, in order; pass :meth:`handle`
    as the session's ``message_handler``."""

    notifications: list[types.ServerNotification] = attrs.field(factory=list)
    _arrived: trio.Event = attrs.field(factory=trio.Event)

    async def handle(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            return
        self.notifications.append(message)
        self._arrived.set()
        self._arrived = trio.Event()

    def methods(self) -> list[str]:
        return [n.method for n in self.notifications]

    def updated_uris(self) -> list[str]:
        return [
            str(n.params.uri)
            for n in self.notifications
            if isinstance(n, types.ResourceUpdatedNotification)
        ]

    async def wait_for(self, predicate: Callable[[], bool]) -> bool:
        """Wait until ``predicate()`` holds, while the caller's deadline allows."""
        while not predicate():
            await self._arrived.wait()
        return True


async def change_until_heard(
    heard: Heard, change: Callable[[], Awaitable[None]], predicate: Callable[[], bool]
) -> None:
    """Make ``change`` until ``predicate`` holds (fails after 10 s).

    A group's sessions are compared from the first look the server takes
    after they open (within a poll interval); a change made before that look
    is the state they start from. Changing again until it is heard makes the
    test independent of that moment, without sleeping.
    """
    with trio.fail_after(10):
        while True:
            await change()
            with trio.move_on_after(1):
                await heard.wait_for(predicate)
                return


async def add_handbook_document(store: Store, slug: str) -> None:
    """A new document in the seeded ``handbook`` library (a change of its groups' resources)."""
    await libraries.add_document(
        store,
        "acme",
        "handbook",
        slug=slug,
        title="New",
        body="# New\n",
        mime_type="text/markdown",
        policy="on_demand",
        actor="tests",
    )
