"""The overview's rollup buckets and their mark, in SQL (a part of
:class:`~agentws.store.sql.SqlStore`).

``rollup_buckets`` (migration 0024) holds one row per workspace, span
(a minute, or an hour), start minute, series, key and instance. Closed
minutes are rolled up together with the move of the one-row
``rollup_marks``, in one transaction that first checks the mark is still
where the roller read it: of several instances rolling the same minutes,
one writes them, the others change nothing. The same transaction rolls the
quarter hours and hours that the move completes from their minutes: counters are summed,
gauges keep their largest sample (sessions: summed over instances per
minute first). Gauge samples are written on their own, replacing the
instance's sample of that minute.

Reads group one workspace's buckets into the steps of a chart in the
database, walking the primary key (SQLite keeps the table in its order:
``WITHOUT ROWID``): a 24-hour chart reads quarter hours and a 7-day one
hours, so about 100 or 170 rows per figure whatever the traffic was, and
the minutes of the step going on.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack

from agentws.domain.rollups import GAUGES, MINUTE, WIDER_SPANS, Bucket, RollupMark
from agentws.store.queries import Queries

if TYPE_CHECKING:
    from agentws.store.database import Transaction

__all__ = ["ChartSteps", "MarkMove", "RollupQueries", "RollupStore"]

_COLUMNS = "workspace_id, span_m, minute, series, key, value, instance_id"
_KEY = "workspace_id, span_m, minute, series, key, instance_id"
# Rows per multi-row upsert (7 parameters each).
_ROWS = 200
_GAUGE_LIST = ", ".join(f"'{g}'" for g in GAUGES)


class _Moved(Exception):
    """Another roller moved the mark first: this transaction changes nothing."""


class MarkMove(TypedDict):
    """The move of the rollup's mark (:meth:`RollupStore.roll_up`): from ``mark``, as
    read (None: never rolled), to ``to``."""

    mark: RollupMark | None
    to: RollupMark


class ChartSteps(TypedDict):
    """Which buckets make a chart's steps, and how (:meth:`RollupStore.rollup_steps`)."""

    span_m: int
    start_minute: int
    end_minute: int
    origin_minute: int
    step_m: int


class RollupStore(Protocol):
    """The overview's figures, rolled up by the minute and the hour."""

    async def rollup_mark(self) -> RollupMark | None:
        """How far the rollup of closed minutes has come; None before its first roll."""
        ...

    async def roll_up(
        self, counted: Sequence[Bucket], added: Sequence[Bucket], **move: Unpack[MarkMove]
    ) -> bool:
        """Move the rollup's mark from ``mark`` (as read) to ``to``, writing ``counted``
        (whole minutes, replacing what is there) and adding ``added`` (refusals) to their
        buckets, and rolling the hours the move completes; all in one transaction, and only
        if the mark is still ``mark``: False, and nothing written, if another moved it."""
        ...

    async def save_samples(self, buckets: Sequence[Bucket]) -> None:
        """Write gauge samples, each replacing its instance's sample of that minute."""
        ...

    async def rollup_steps(
        self, workspace_id: str, **steps: Unpack[ChartSteps]
    ) -> list[tuple[int, str, str, float]]:
        """A workspace's buckets of span ``span_m`` from ``start_minute`` to ``end_minute``
        grouped into steps of ``step_m`` minutes counted from ``origin_minute`` (at or
        before the start): ``(step, series, key, value)`` per step, series and key, the
        step counted from 0 at the origin, the value the sum (a gauge's: the largest).
        Minute sessions samples are left out (see :meth:`session_samples`)."""
        ...

    async def session_samples(
        self, workspace_id: str, *, start_minute: int, end_minute: int
    ) -> list[Bucket]:
        """A workspace's sessions samples, per minute, transport and instance."""
        ...

    async def restart_rollups(self) -> None:
        """Forget the rollup's mark and every counted bucket (gauge samples stay): the next
        roll counts the whole retention period again from the sources."""
        ...

    async def forget_rollups(self, before_minute: int) -> int:
        """Delete every bucket that starts before ``before_minute``; how many."""
        ...


class RollupQueries(Queries):
    """The rollup's buckets and mark; mixed into :class:`~agentws.store.sql.SqlStore`."""

    async def rollup_mark(self) -> RollupMark | None:
        rows = await self._db.fetch("SELECT minute, delivery_id FROM rollup_marks WHERE id = 1")
        if not rows:
            return None
        return RollupMark(minute=int(rows[0]["minute"]), delivery_id=int(rows[0]["delivery_id"]))

    async def roll_up(
        self, counted: Sequence[Bucket], added: Sequence[Bucket], **move: Unpack[MarkMove]
    ) -> bool:
        mark, to = move["mark"], move["to"]
        try:
            async with self._db.transaction(durable=False) as tx:
                if mark is None:
                    moved = await tx.execute(
                        "INSERT INTO rollup_marks (id, minute, delivery_id) VALUES (1, $1, $2)"
                        " ON CONFLICT (id) DO NOTHING",
                        to.minute,
                        to.delivery_id,
                    )
                else:
                    moved = await tx.execute(
                        "UPDATE rollup_marks SET minute = $1, delivery_id = $2"
                        " WHERE id = 1 AND minute = $3 AND delivery_id = $4",
                        to.minute,
                        to.delivery_id,
                        mark.minute,
                        mark.delivery_id,
                    )
                if not moved:
                    raise _Moved
                await _upsert(tx, counted, add=False)
                await _upsert(tx, added, add=True)
                # Refusals counted late, into wider spans already rolled: added there too.
                for span in WIDER_SPANS:
                    if mark is None:
                        continue
                    done_until = mark.minute - mark.minute % span
                    late = [_widened(b, span) for b in added if b.minute < done_until]
                    await _upsert(tx, late, add=True)
                    # The spans this move completes, from their minutes.
                    first = mark.minute // span
                    for index in range(first, to.minute // span):
                        await _roll_span(tx, span, index * span)
        except _Moved:
            return False
        return True

    async def save_samples(self, buckets: Sequence[Bucket]) -> None:
        async with self._db.transaction(durable=False) as tx:
            await _upsert(tx, buckets, add=False)

    async def rollup_steps(
        self, workspace_id: str, **steps: Unpack[ChartSteps]
    ) -> list[tuple[int, str, str, float]]:
        span_m, step_m = steps["span_m"], steps["step_m"]
        if steps["end_minute"] <= steps["start_minute"]:
            return []
        sessions = " AND series <> 'sessions'" if span_m == MINUTE else ""
        if span_m == step_m:
            # A bucket per step already: read as they are, in the key's order.
            sql = (
                "SELECT (minute - $5) / $6 AS step, series, key, value AS total, value AS peak"
                " FROM rollup_buckets WHERE workspace_id = $1 AND span_m = $2"
                f" AND minute >= $3 AND minute < $4{sessions}"
            )
        else:
            sql = (
                "SELECT (minute - $5) / $6 AS step, series, key,"
                " sum(value) AS total, max(value) AS peak FROM rollup_buckets"
                " WHERE workspace_id = $1 AND span_m = $2 AND minute >= $3 AND minute < $4"
                f"{sessions} GROUP BY step, series, key"
            )
        rows = await self._db.fetch(
            sql,
            workspace_id,
            span_m,
            steps["start_minute"],
            steps["end_minute"],
            steps["origin_minute"],
            step_m,
        )
        return [
            (
                int(row["step"]),
                row["series"],
                row["key"],
                float(row["peak"] if row["series"] in GAUGES else row["total"]),
            )
            for row in rows
        ]

    async def session_samples(
        self, workspace_id: str, *, start_minute: int, end_minute: int
    ) -> list[Bucket]:
        if end_minute <= start_minute:
            return []
        rows = await self._db.fetch(
            "SELECT minute, key, instance_id, value FROM rollup_buckets"
            " WHERE workspace_id = $1 AND span_m = 1 AND minute >= $2 AND minute < $3"
            " AND series = 'sessions'",
            workspace_id,
            start_minute,
            end_minute,
        )
        return [
            Bucket(
                workspace_id=workspace_id,
                span_m=MINUTE,
                minute=int(row["minute"]),
                series="sessions",
                key=row["key"],
                value=float(row["value"]),
                instance_id=row["instance_id"],
            )
            for row in rows
        ]

    async def restart_rollups(self) -> None:
        async with self._db.transaction(durable=False) as tx:
            await tx.execute("DELETE FROM rollup_marks")
            await tx.execute(f"DELETE FROM rollup_buckets WHERE series NOT IN ({_GAUGE_LIST})")

    async def forget_rollups(self, before_minute: int) -> int:
        forgotten = 0
        async with self._db.transaction(durable=False) as tx:
            for span in (MINUTE, *WIDER_SPANS):
                forgotten += await tx.execute(
                    "DELETE FROM rollup_buckets WHERE span_m = $1 AND minute < $2",
                    span,
                    before_minute,
                )
        return forgotten


def _widened(bucket: Bucket, span: int) -> Bucket:
    return Bucket(
        workspace_id=bucket.workspace_id,
        span_m=span,
        minute=bucket.minute - bucket.minute % span,
        series=bucket.series,
        key=bucket.key,
        value=bucket.value,
        instance_id=bucket.instance_id,
    )


async def _roll_span(tx: Transaction, span: int, start: int) -> None:
    """Write the ``span`` from ``start`` (a minute) from its minutes' buckets, replacing it."""
    rows = await tx.fetch(
        f"SELECT {_COLUMNS} FROM rollup_buckets WHERE span_m = 1 AND minute >= $1 AND minute < $2",
        start,
        start + span,
    )
    sums: defaultdict[tuple[str, str, str], float] = defaultdict(float)
    # Gauges: (workspace, series, key) -> minute -> the instances' sum
    samples: defaultdict[tuple[str, str, str], defaultdict[int, float]] = defaultdict(
        lambda: defaultdict(float)
    )
    for row in rows:
        key = (row["workspace_id"], row["series"], row["key"])
        if row["series"] in GAUGES:
            samples[key][int(row["minute"])] += float(row["value"])
        else:
            sums[key] += float(row["value"])
    hour = [
        Bucket(workspace_id=ws, span_m=span, minute=start, series=series, key=key, value=total)
        for (ws, series, key), total in sums.items()
    ] + [
        Bucket(
            workspace_id=ws,
            span_m=span,
            minute=start,
            series=series,
            key=key,
            value=max(by_minute.values()),
        )
        for (ws, series, key), by_minute in samples.items()
    ]
    await _upsert(tx, hour, add=False)


async def _upsert(tx: Transaction, buckets: Sequence[Bucket], *, add: bool) -> None:
    """Insert buckets; one already there takes the new value (``add``: adds it)."""
    update = "rollup_buckets.value + excluded.value" if add else "excluded.value"
    for begin in range(0, len(buckets), _ROWS):
        chunk = buckets[begin : begin + _ROWS]
        args: list[Any] = []
        rows: list[str] = []
        for b in chunk:
            n = len(args)
            rows.append("(" + ", ".join(f"${n + i}" for i in range(1, 8)) + ")")
            args += [b.workspace_id, b.span_m, b.minute, b.series, b.key, float(b.value)]
            args.append(b.instance_id)
        await tx.execute(
            f"INSERT INTO rollup_buckets ({_COLUMNS}) VALUES {', '.join(rows)}"
            f" ON CONFLICT ({_KEY}) DO UPDATE SET value = {update}",
            *args,
        )
