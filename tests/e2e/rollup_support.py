"""Making a serving agentws roll the overview's minutes now, through its own task.

The service's :class:`~agentws.rollups.minutes.MinuteRollup` rolls a minute
once it has settled (:data:`~agentws.rollups.minutes.SETTLE_S` after its
end), a minute and a half later at most. A test cannot wait that long: it
asks the same task for the roll its round would make then, which counts
everything stamped so far (the current minute too) into rolled buckets and
moves the mark past it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from agentws.domain.rollups import RollupMark
from agentws.domain.rules import utcnow
from agentws.rollups.minutes import SETTLE_S
from agentws.service import Runtime

__all__ = ["roll_now"]


async def roll_now(runtime: Runtime) -> RollupMark:
    """Roll every minute up to the current one (included); the mark it left.

    Whatever is stamped later in the current minute is behind the mark: the
    test calls this once its workload is done.
    """
    next_minute = (int(utcnow().timestamp()) // 60 + 1) * 60
    await runtime.rollup.roll(datetime.fromtimestamp(next_minute + SETTLE_S + 1, UTC))
    mark = await runtime.store.rollup_mark()
    assert mark is not None and mark.minute == next_minute // 60, mark
    return mark
