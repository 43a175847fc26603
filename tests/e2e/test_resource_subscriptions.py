"""Resource subscriptions: a session hears when a document it follows changes.

``resources/subscribe`` takes any URI (also one no document has yet; the
conformance suite subscribes to ``test://watched-resource``); replacing a
followed document sends ``notifications/resources/updated`` with its URI to
the sessions that follow it, and to no other; ``resources/unsubscribe``
stops it.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import trio

from agentws import libraries
from tests.e2e.mcp_support import ACTOR, REQUEST_S, running, sdk_session
from tests.e2e.notifications_support import Heard, change_until_heard

# The handshake eras' subscription methods, which the SDK marks as replaced in 2026-07-28.
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

REFUNDS = "agentws://handbook/refunds"
ONBOARDING = "agentws://handbook/onboarding"


@pytest.mark.parametrize("transport", ["sse", "streamable"])
async def test_a_followed_document_that_changes_is_announced(
    tmp_path: Path, transport: str
) -> None:
    follower, bystander = Heard(), Heard()
    n = itertools.count()
    async with (
        running(tmp_path) as server,
        sdk_session(server, transport, message_handler=follower.handle) as session,
        sdk_session(server, transport, message_handler=bystander.handle) as other,
    ):
        with trio.fail_after(REQUEST_S):
            await session.subscribe_resource(REFUNDS)
            await session.subscribe_resource("test://watched-resource")
            await other.list_resources()

        async def replace(slug: str) -> None:
            await libraries.add_document(
                server.store,
                "acme",
                "handbook",
                slug=slug,
                title="Refund policy",
                body=f"# Refund policy\n\nVersion {next(n)}.\n",
                mime_type="text/markdown",
                policy="on_demand",
                replace=True,
                actor=ACTOR,
            )

        await change_until_heard(
            follower, lambda: replace("refunds"), lambda: REFUNDS in follower.updated_uris()
        )
        assert set(follower.updated_uris()) == {REFUNDS}
        # Its content changed, not the list of resources.
        assert "notifications/resources/list_changed" not in follower.methods()

        with trio.fail_after(REQUEST_S):
            await session.unsubscribe_resource(REFUNDS)
            await session.subscribe_resource(ONBOARDING)
        before = len(follower.updated_uris())
        # Refunds changes first, then onboarding: once onboarding is heard,
        # refunds would have been too.
        await replace("refunds")
        await change_until_heard(
            follower, lambda: replace("onboarding"), lambda: ONBOARDING in follower.updated_uris()
        )
        assert REFUNDS not in follower.updated_uris()[before:]
        with trio.fail_after(REQUEST_S):
            await other.send_ping()
        assert bystander.updated_uris() == []


async def test_subscribing_needs_no_existing_resource(tmp_path: Path) -> None:
    async with running(tmp_path) as server, sdk_session(server, "streamable") as session:
        with trio.fail_after(REQUEST_S):
            await session.subscribe_resource("test://watched-resource")
            await session.unsubscribe_resource("test://watched-resource")
            await session.unsubscribe_resource("agentws://handbook/never-followed")
