"""Bulk replays: every failed event of a webhook (or those a selection takes) run again.

One action queues one replay of each failed event that matches (received in
a time range, an error containing some text) and has never been replayed,
oldest first, up to a limit: a new event with the original's body and
headers and ``replay_of`` naming it, as :func:`agentws.webhooks.events.replay_event`
makes one. The replays are spaced by a rate (by default the webhook's own
``rate_per_min``, the pace its senders are held to): each becomes available
that much after the one before, so the worker, on any instance, runs them
no faster. Asked again while the first is still going (or twice at once,
anywhere), the action finds those events replayed already and queues
nothing for them: each is replayed once. A replay that fails is a failed
event of its own, which the next bulk replay takes instead of its original.

Each replay runs with the prompt its original last ran with, or, with
``current_prompt``, the webhook's prompt when it runs. A dry run says what
would be replayed and queues nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

import attrs

from agentws.common.audit import record_webhook_action
from agentws.core.errors import ValidationError
from agentws.core.metrics import WEBHOOK_REPLAYS
from agentws.domain.models import Webhook
from agentws.domain.replays import (
    MAX_REPLAY_RATE,
    MAX_REPLAYS,
    ReplayCandidate,
    ReplayOrder,
    ReplaySelection,
    replay_times,
)
from agentws.domain.rules import new_id, utcnow
from agentws.store.sql_records import RecordStore
from agentws.store.sql_replays import ReplayStore

__all__ = [
    "DEFAULT_LIMIT",
    "BulkReplay",
    "ReplayAsk",
    "replay_asked",
    "replay_failed",
    "replay_json",
]

#: Failed events one bulk replay takes unless told otherwise.
DEFAULT_LIMIT = 1000


class _Store(RecordStore, ReplayStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen(kw_only=True)
class BulkReplay:
    """What a bulk replay did (or, dry, would do)."""

    #: Names the action in the audit log (``rpl_…``).
    id: str
    webhook: Webhook
    selection: ReplaySelection
    dry_run: bool
    rate_per_min: int
    #: The failed events taken, oldest first (dry: those that would be).
    originals: list[ReplayCandidate]
    #: Original event id → its replay's id, oldest first (dry: none). Fewer
    #: than ``originals`` when another action replayed some of them meanwhile.
    queued: dict[str, str]
    #: Matching events left for a later action (over the limit).
    left: int

    @property
    def seconds(self) -> float:
        """How long the replays take to become available, first to last."""
        count = len(self.originals if self.dry_run else self.queued)
        return max(0, count - 1) * 60 / self.rate_per_min


async def replay_failed(
    store: _Store,
    webhook: Webhook,
    selection: ReplaySelection,
    *,
    actor: str,
    rate_per_min: int | None = None,
    limit: int = DEFAULT_LIMIT,
    current_prompt: bool = False,
    dry_run: bool = False,
) -> BulkReplay:
    """Replay the failed events of ``webhook`` that ``selection`` takes, each once.

    Args:
        rate_per_min: replays made available a minute (default: the
            webhook's rate, at most ``MAX_REPLAY_RATE``).
        limit: events taken at most (1 to ``MAX_REPLAYS``).

    Error handling:
        ValidationError for a rate or limit out of range.
    """
    rate = rate_per_min if rate_per_min is not None else min(webhook.rate_per_min, MAX_REPLAY_RATE)
    if not 1 <= rate <= MAX_REPLAY_RATE:
        raise ValidationError(f"the replay rate must be 1 to {MAX_REPLAY_RATE} a minute")
    if not 1 <= limit <= MAX_REPLAYS:
        raise ValidationError(f"a bulk replay takes 1 to {MAX_REPLAYS} events")
    originals = await store.replay_candidates(webhook.id, selection, limit=limit)
    left = 0
    if len(originals) == limit:
        left = await store.count_replay_candidates(webhook.id, selection) - limit
    replay = BulkReplay(
        id=new_id("rpl"),
        webhook=webhook,
        selection=selection,
        dry_run=dry_run,
        rate_per_min=rate,
        originals=originals,
        queued={},
        left=max(0, left),
    )
    if dry_run or not originals:
        return replay
    prompts = {} if current_prompt else await store.last_run_prompts([o.id for o in originals])
    times = replay_times(utcnow(), len(originals), rate)
    orders = [
        ReplayOrder(
            original_id=original.id,
            event_id=new_id("evt"),
            # As a single replay: the prompt it last ran with; never run, the one it would have.
            prompt=None
            if current_prompt
            else prompts.get(original.id) or original.prompt or webhook.prompt,
            received_at=received,
            available_at=available,
        )
        for original, (received, available) in zip(originals, times, strict=True)
    ]
    inserted = set(await store.queue_replays(webhook.id, orders))
    queued = {o.original_id: o.event_id for o in orders if o.event_id in inserted}
    replay = attrs.evolve(replay, queued=queued)
    if not queued:
        return replay  # another action replayed them all meanwhile: nothing changed
    WEBHOOK_REPLAYS.labels("bulk").inc(len(queued))
    await record_webhook_action(
        store,
        webhook,
        actor,
        "webhook.replay",
        bulk_replay=replay.id,
        selection=selection.describe(),
        queued=len(queued),
        skipped=len(originals) - len(queued),
        rate_per_min=rate,
        current_prompt=current_prompt,
    )
    return replay


class ReplayAsk(Protocol):
    """A bulk replay as a door takes it, its names those of :func:`replay_failed`
    (``agentws webhook replay``'s options, the admin API's body)."""

    since: datetime | None
    until: datetime | None
    error_contains: str | None
    rate_per_min: int | None
    limit: int
    current_prompt: bool
    dry_run: bool


async def replay_asked(
    store: _Store, webhook: Webhook, asked: ReplayAsk, *, actor: str
) -> BulkReplay:
    """:func:`replay_failed` with the selection and the options ``asked`` holds."""
    selection = ReplaySelection(
        since=asked.since, until=asked.until, error_contains=asked.error_contains
    )
    return await replay_failed(
        store,
        webhook,
        selection,
        actor=actor,
        rate_per_min=asked.rate_per_min,
        limit=asked.limit,
        current_prompt=asked.current_prompt,
        dry_run=asked.dry_run,
    )


def replay_json(replay: BulkReplay) -> dict[str, Any]:
    """A bulk replay as the CLI's ``--json`` and the admin API give it."""
    selection = replay.selection
    return {
        "id": replay.id,
        "webhook": replay.webhook.name,
        "webhook_id": replay.webhook.id,
        "dry_run": replay.dry_run,
        "selection": {
            "status": "failed",
            "since": _iso(selection.since),
            "until": _iso(selection.until),
            "error_contains": selection.error_contains,
        },
        "rate_per_min": replay.rate_per_min,
        "matched": len(replay.originals),
        "queued": len(replay.queued),
        "left": replay.left,
        "events": [
            {
                "id": o.id,
                "received_at": _iso(o.received_at),
                "error": o.error,
                "replay_id": replay.queued.get(o.id),
            }
            for o in replay.originals
        ],
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
