"""``subscriptions/listen`` (2026-07-28): the stateless revision's stream of server events.

On that revision there is no session and no standing ``GET`` stream: a client
that wants to hear of changes sends ``subscriptions/listen``, whose response
is the stream. :class:`ListenStreams` serves those requests for every group
endpoint of the process and fans events out to them:

- list changes (``notifications/tools/list_changed`` and the resources and
  prompts ones) go to the open streams of the group that changed, when the
  stream asked for that kind (:mod:`agentws.doors.mcp.dispatch.list_changes` finds them);
- ``notifications/resources/updated`` goes to the streams that subscribed to
  the URI: a document's, or a queued call's ``agentws://approvals/<id>``,
  which is updated once an admin decided it (only the bearer token that
  queued the call hears of it; ``resources/read`` of that URI, or the
  ``get_approval`` tool, then says what happened).

The acknowledgement, the subscription id stamped on every frame and the
filter semantics are the SDK's (:mod:`mcp.shared.subscriptions`). Events are
not kept: a client whose stream dropped listens again and reads what it
needs, as the revision says. A stream whose client stops reading is ended at
``_BUFFER`` undelivered events; the streams of the process are bounded by
``max_streams`` and each bearer token's by ``max_per_token`` (so one token
cannot take them all): one more is refused with :data:`OVER_CAPACITY`, whose
``data`` says when to retry. Shutdown ends every stream gracefully (its
final result).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Any

import attrs
import mcp_types as types
import trio
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    ResourceUpdated,
    ServerEvent,
    event_matches,
    event_to_notification,
)

from agentws.core.errors import NotFoundError
from agentws.domain.models import Approval, ApprovalOutcome, Group
from agentws.doors.mcp.sessions.auth import Caller
from agentws.store.sql_records import RecordStore
from agentws.tools.approval_queue import approval_id_of, approval_uri, outcome_data

__all__ = ["OVER_CAPACITY", "ListenStreams", "read_approval"]

log = logging.getLogger("agentws.mcp")

# Undelivered events one stream may hold before its client counts as gone.
_BUFFER = 256
#: JSON-RPC error code (server-defined range) of a request refused at a limit
#: that frees up: retrying after ``data.retryAfter`` seconds may succeed.
OVER_CAPACITY = -32005
# When to retry a refused stream: streams end when their clients leave.
_RETRY_AFTER_S = 5


async def read_approval(
    store: RecordStore, caller: Caller, uri: str
) -> types.ReadResourceResult | None:
    """``resources/read`` of a queued call's URI: where it stands, as ``get_approval`` says.

    Only the bearer token that queued the call reads it; to any other it does
    not exist (None).
    """
    approval_id = approval_id_of(uri)
    approval = None
    if approval_id is not None:
        try:
            approval = await store.get(Approval, approval_id)
        except NotFoundError:
            approval = None
    if approval is None or approval.token_id != caller.token_id:
        return None
    return types.ReadResourceResult(
        contents=[
            types.TextResourceContents(
                uri=uri,
                mime_type="application/json",
                text=json.dumps(outcome_data(approval), ensure_ascii=False),
            )
        ]
    )


def _over(why: str) -> MCPError:
    return MCPError(
        OVER_CAPACITY,
        f"{why}; retry in {_RETRY_AFTER_S} s",
        {"retryAfter": _RETRY_AFTER_S},
    )


@attrs.define(eq=False)
class _Stream:
    group: Group
    token_id: str
    honored: types.SubscriptionFilter
    uris: frozenset[str]
    send: trio.MemorySendChannel[ServerEvent]


def _honored(requested: types.SubscriptionFilter) -> types.SubscriptionFilter:
    """What will be delivered, for the acknowledgement: every kind asked for."""
    return types.SubscriptionFilter(
        tools_list_changed=True if requested.tools_list_changed else None,
        prompts_list_changed=True if requested.prompts_list_changed else None,
        resources_list_changed=True if requested.resources_list_changed else None,
        resource_subscriptions=list(requested.resource_subscriptions)
        if requested.resource_subscriptions
        else None,
    )


@attrs.define(eq=False)
class ListenStreams:
    """The open listen streams of this process, by group; the request handler serving them."""

    max_streams: int = 1024
    max_per_token: int = 100
    _streams: set[_Stream] = attrs.field(factory=set, init=False)
    _by_token: Counter[str] = attrs.field(factory=Counter, init=False)

    def __len__(self) -> int:
        return len(self._streams)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """Serve one ``subscriptions/listen`` request until the client leaves or we stop."""
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(types.INVALID_REQUEST, "subscriptions/listen needs a request id")
        caller: Caller = ctx.lifespan_context.caller
        if len(self._streams) >= self.max_streams:
            raise _over(
                f"this server has {len(self._streams)} open listen streams, its limit "
                "(AGENTWS_MCP_MAX_SESSIONS)"
            )
        if self._by_token[caller.token_id] >= self.max_per_token:
            raise _over(
                f"this token has {self._by_token[caller.token_id]} open listen streams, its "
                "limit (AGENTWS_MCP_MAX_LISTEN_PER_TOKEN); close one"
            )
        honored = _honored(params.notifications)
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        send, receive = trio.open_memory_channel[ServerEvent](_BUFFER)
        stream = _Stream(
            caller.group,
            caller.token_id,
            honored,
            frozenset(honored.resource_subscriptions or ()),
            send,
        )
        # Registered before the acknowledgement: an event meanwhile is buffered, not lost.
        self._streams.add(stream)
        self._by_token[caller.token_id] += 1
        try:
            await ctx.session.send_notification(
                types.SubscriptionsAcknowledgedNotification(
                    params=types.SubscriptionsAcknowledgedNotificationParams(
                        notifications=honored, _meta=meta
                    )
                ),
                related_request_id=subscription_id,
            )
            async with receive:
                async for event in receive:
                    await ctx.session.send_notification(
                        event_to_notification(event, meta), related_request_id=subscription_id
                    )
        finally:
            self._streams.discard(stream)
            self._by_token[caller.token_id] -= 1
            if self._by_token[caller.token_id] <= 0:
                del self._by_token[caller.token_id]
            send.close()
        return types.SubscriptionsListenResult(_meta=meta)

    def publish(self, group_id: str, event: ServerEvent, *, token_id: str | None = None) -> int:
        """Hand ``event`` to the streams of ``group_id`` that asked for it; how many took it.

        ``token_id`` limits it to one bearer token's streams (a queued call's outcome).
        """
        delivered = 0
        for stream in list(self._streams):
            if stream.group.id != group_id or (
                token_id is not None and stream.token_id != token_id
            ):
                continue
            if not event_matches(stream.honored, stream.uris, event):
                continue
            try:
                stream.send.send_nowait(event)
                delivered += 1
            except trio.WouldBlock:
                log.warning("a listen stream of group %s stopped reading; ending it", group_id)
                self._streams.discard(stream)
                stream.send.close()
            except trio.ClosedResourceError:
                self._streams.discard(stream)
        return delivered

    def groups(self) -> dict[str, Group]:
        """The groups some open stream listens to, by id."""
        return {stream.group.id: stream.group for stream in self._streams}

    def awaited(self) -> set[str]:
        """Queued calls whose outcome some open stream listens for."""
        return {
            approval_id
            for stream in self._streams
            for uri in stream.uris
            if (approval_id := approval_id_of(uri)) is not None
        }

    def deliver(self, approval: ApprovalOutcome) -> int:
        """Announce that ``approval`` was decided to the streams of its token listening for it."""
        return self.publish(
            approval.group_id,
            ResourceUpdated(uri=approval_uri(approval.id)),
            token_id=approval.token_id,
        )

    def close(self) -> None:
        """End every stream gracefully (shutdown): each sends its final result."""
        for stream in list(self._streams):
            stream.send.close()
