"""The webhook door's rate limit on trio's clock, driven by the autojump clock.

:class:`~agentws.doors.webhooks.ingest.Intake` keeps one token bucket per webhook
on ``trio.current_time()``; waiting out the ``Retry-After`` it answers lets
the next delivery through, and a webhook's limits are its own.
"""

from __future__ import annotations

import types

import attrs
import trio
import trio.testing

from agentws.domain.models import Webhook
from agentws.settings.secret_box import Keys
from agentws.webhooks.intake import Intake


def _webhook(name: str, *, rate_per_min: int, burst: int) -> Webhook:
    return Webhook(
        workspace_id="ws_x",
        name=name,
        channel="local:ops",
        prompt="p",
        token_hash=f"hash-{name}",
        rate_per_min=rate_per_min,
        burst=burst,
    )


def _intake() -> Intake:
    # On SQLite (one process) taking tokens touches neither the store nor the batcher.
    sqlite = types.SimpleNamespace(dialect="sqlite")
    return Intake(store=sqlite, batcher=None, keys=Keys(None, "no key"))  # type: ignore[arg-type]


async def test_retry_after_is_exactly_long_enough(autojump_clock: trio.testing.MockClock) -> None:
    intake = _intake()
    hook = _webhook("ci", rate_per_min=6, burst=2)
    assert await intake.take(hook) is None
    assert await intake.take(hook) is None
    wait = await intake.take(hook)
    assert wait == 10  # one token every 10 s
    await trio.sleep(wait - 0.5)
    assert await intake.take(hook) == 1  # not yet, and never less than a second
    await trio.sleep(0.5)
    assert await intake.take(hook) is None
    assert await intake.take(hook) == 10


async def test_each_webhook_has_its_own_bucket_and_new_limits_apply(
    autojump_clock: trio.testing.MockClock,
) -> None:
    intake = _intake()
    busy = _webhook("busy", rate_per_min=60, burst=1)
    quiet = _webhook("quiet", rate_per_min=60, burst=1)
    assert await intake.take(busy) is None
    assert await intake.take(busy) == 1
    assert await intake.take(quiet) is None
    # An admin raised the limit: the webhook gets a bucket of the new shape.
    raised = attrs.evolve(busy, rate_per_min=600, burst=5)
    assert [await intake.take(raised) for _ in range(6)] == [None] * 5 + [1]
    await trio.sleep(0.1)
    assert await intake.take(raised) is None
