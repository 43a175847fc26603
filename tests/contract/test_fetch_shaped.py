"""A read whose rows are shaped where they are read (``fetch_shaped``), on SQLite and PostgreSQL.

On SQLite the shape runs in the reader's thread, off the event loop; on
PostgreSQL once the rows are fetched. Either way the caller gets what the
shape returned, what it raises unchanged, the driver's errors converted as
``fetch`` converts them, and the reader back in the pool.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agentws.core.errors import StoreError
from agentws.store import SqlStore

_TWO_ROWS = "SELECT 1 AS n UNION ALL SELECT 2 AS n ORDER BY n"


class _ShapeFailed(Exception):
    pass


async def test_the_caller_gets_what_the_shape_made_of_the_rows(
    store: SqlStore, backend: str
) -> None:
    shaped_in: list[threading.Thread] = []

    def numbers(rows: list[dict[str, Any]]) -> tuple[int, ...]:
        shaped_in.append(threading.current_thread())
        return tuple(int(row["n"]) for row in rows)

    assert await store.database.fetch_shaped(numbers, _TWO_ROWS) == (1, 2)
    if backend == "sqlite":
        assert shaped_in[0] is not threading.current_thread()  # the reader's thread
    else:
        assert shaped_in == [threading.current_thread()]


async def test_what_the_shape_raises_is_raised_and_the_readers_stay_in_service(
    store: SqlStore,
) -> None:
    def failing(rows: list[dict[str, Any]]) -> None:
        raise _ShapeFailed(len(rows))

    # More failures than the pool has readers: a reader kept by one would starve the last.
    for _ in range(6):
        with pytest.raises(_ShapeFailed):
            await store.database.fetch_shaped(failing, _TWO_ROWS)
    assert await store.database.fetch(_TWO_ROWS) == [{"n": 1}, {"n": 2}]


async def test_the_drivers_errors_are_converted_as_fetch_converts_them(store: SqlStore) -> None:
    with pytest.raises(StoreError):
        await store.database.fetch_shaped(len, "SELECT n FROM no_such_table")
