"""SQLite read processes: a read whose shape pickles is read, and shaped, in a process of its own.

The processes start with the first such read; until one is ready the
threads read. Reads are pipelined and answered by number, so many at once
each get their own answer, and reads that take long hold no other behind
them. What the shape or the driver raises is raised as a thread's read
raises it, a shape that does not pickle is read by the threads, a process
that has ended is passed over, and closing the store ends them.
"""

from __future__ import annotations

import functools
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from agentws.core.errors import StoreError
from agentws.domain.library_records import DocumentHit
from agentws.store import open_store, sqlite_read_processes
from agentws.store.sqlite import SqliteDatabase, open_sqlite
from agentws.store.sqlite_read_processes import WORKERS
from agentws.tools.builtins import _search_answer
from tests.contract.test_library_store import doc, world
from tests.e2e.polling import wait_for, wait_until
from tests.support import migrated_sqlite_url

_TWO_ROWS = "SELECT 1 AS n UNION ALL SELECT 2 AS n ORDER BY n"
_STARTED_WITHIN_S = 30.0


class _ShapeFailed(Exception):
    pass


def _numbers_and_pid(rows: list[dict[str, Any]]) -> tuple[tuple[int, ...], int]:
    return tuple(int(row["n"]) for row in rows), os.getpid()


def _failing(rows: list[dict[str, Any]]) -> None:
    raise _ShapeFailed(len(rows))


def _number_and_pid(rows: list[dict[str, Any]]) -> tuple[int, int]:
    return int(rows[0]["n"]), os.getpid()


def _held_until(release: str, started: str, rows: list[dict[str, Any]]) -> tuple[int, int]:
    """The read's number once ``release`` exists: a read that takes as long as a test wants.

    Says it has started with a file in the directory ``started``.
    """
    number = int(rows[0]["n"])
    Path(started, str(number)).touch()
    deadline = time.monotonic() + _STARTED_WITHIN_S
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.01)
    return number, os.getpid()


class _Unrebuildable(Exception):
    """Pickles, but does not load: its class wants an argument its pickle does not keep."""

    def __init__(self, what: str, *, number: int) -> None:
        super().__init__(what)
        self.number = number


def _number_or_unrebuildable(rows: list[dict[str, Any]]) -> tuple[int, int]:
    number = int(rows[0]["n"])
    if number % 2:
        raise _Unrebuildable("odd", number=number)
    return number, os.getpid()


def _read_processes() -> list[int]:
    """The pids of this process's read processes."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:
            continue
        if ppid == os.getpid() and b"sqlite_read_child" in command and not _ended(int(entry)):
            found.append(int(entry))
    return found


def _url(tmp_path: Path) -> str:
    return "sqlite:///" + str(tmp_path / "agentws.db")


def _exists(pid: int) -> bool:
    """Whether ``pid`` is a process, a zombie included (ended, not yet reaped)."""
    return Path(f"/proc/{pid}").exists()


def _ended(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie not yet reaped, or gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[SqliteDatabase]:
    async with open_sqlite(_url(tmp_path), read_processes=2) as db:
        yield db


async def _read_by_a_process(db: SqliteDatabase) -> tuple[tuple[int, ...], int]:
    """The first read a process answers (the threads answer until one is ready)."""
    return await wait_until(
        lambda: db.fetch_shaped(_numbers_and_pid, _TWO_ROWS),
        lambda read: read[1] != os.getpid(),
        what="a read process to answer",
        timeout_s=_STARTED_WITHIN_S,
    )


async def test_a_shape_that_pickles_is_read_by_a_process(database: SqliteDatabase) -> None:
    numbers, pid = await _read_by_a_process(database)
    assert numbers == (1, 2)
    assert pid in _read_processes()
    assert len(_read_processes()) == 2


async def test_a_shape_that_does_not_pickle_is_read_by_the_threads(
    database: SqliteDatabase,
) -> None:
    await _read_by_a_process(database)
    here: list[int] = []

    def numbers(rows: list[dict[str, Any]]) -> list[int]:  # a closure: it does not pickle
        here.append(os.getpid())
        return [int(row["n"]) for row in rows]

    assert await database.fetch_shaped(numbers, _TWO_ROWS) == [1, 2]
    assert here == [os.getpid()]


async def test_what_the_shape_or_the_driver_raises_is_raised_and_the_processes_read_on(
    database: SqliteDatabase,
) -> None:
    await _read_by_a_process(database)
    # More failures than there are processes: one kept by a failure would starve the rest.
    for _ in range(5):
        with pytest.raises(_ShapeFailed) as failed:
            await database.fetch_shaped(_failing, _TWO_ROWS)
        assert failed.value.args == (2,)
    with pytest.raises(StoreError):  # sqlite3's error, converted as a thread's read converts it
        await database.fetch_shaped(len, "SELECT n FROM no_such_table")
    numbers, pid = await database.fetch_shaped(_numbers_and_pid, _TWO_ROWS)
    assert numbers == (1, 2)
    assert pid != os.getpid()


async def test_many_reads_at_once_each_get_their_own_answer(database: SqliteDatabase) -> None:
    await _read_by_a_process(database)
    answers: dict[int, tuple[int, int]] = {}

    async def read(n: int) -> None:
        answers[n] = await database.fetch_shaped(_number_and_pid, "SELECT ? AS n", n)

    async with trio.open_nursery() as nursery:
        for n in range(200):
            nursery.start_soon(read, n)
    assert {n: number for n, (number, _pid) in answers.items()} == {n: n for n in range(200)}
    assert {pid for _n, pid in answers.values()} & set(_read_processes())


async def test_an_answer_that_cannot_be_loaded_fails_its_own_read_only(
    database: SqliteDatabase,
) -> None:
    await _read_by_a_process(database)
    outcomes: dict[int, object] = {}

    async def read(n: int) -> None:
        try:
            outcomes[n] = await database.fetch_shaped(_number_or_unrebuildable, "SELECT ? AS n", n)
        except StoreError as exc:
            outcomes[n] = str(exc)

    async with trio.open_nursery() as nursery:
        for n in range(40):
            nursery.start_soon(read, n)
    for n in range(40):
        if n % 2:
            assert "answer could not be loaded" in str(outcomes[n])
        else:
            assert outcomes[n] in {(n, pid) for pid in _read_processes()} | {(n, os.getpid())}


async def test_reads_that_take_long_hold_no_other_behind_them(
    database: SqliteDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process whose every worker is busy, with no answer since, is passed over at once.
    monkeypatch.setattr(sqlite_read_processes, "STALLED_S", 0.0)
    await _read_by_a_process(database)
    release, started = tmp_path / "release", tmp_path / "started"
    started.mkdir()
    shape = functools.partial(_held_until, str(release), str(started))
    held: dict[int, tuple[int, int]] = {}
    every_worker = 2 * WORKERS  # both processes'

    async def read_held(n: int) -> None:
        held[n] = await database.fetch_shaped(shape, "SELECT ? AS n", n)

    async with trio.open_nursery() as nursery:
        for n in range(every_worker):
            nursery.start_soon(read_held, n)
        await wait_for(
            lambda: len(os.listdir(started)) == every_worker, what="every worker to hold a read"
        )
        for n in range(8):  # each read by the threads, not queued behind the held ones
            assert await database.fetch_shaped(_number_and_pid, "SELECT ? AS n", n) == (
                n,
                os.getpid(),
            )
        assert held == {}
        release.touch()
    assert {n: number for n, (number, _pid) in held.items()} == {n: n for n in range(every_worker)}
    assert {pid for _n, pid in held.values()} == set(_read_processes())


async def test_processes_that_ended_are_passed_over_and_the_threads_read(
    database: SqliteDatabase,
) -> None:
    await _read_by_a_process(database)
    pids = _read_processes()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    await wait_for(lambda: all(_ended(pid) for pid in pids), what="the read processes to end")
    for _ in range(4):
        numbers, pid = await database.fetch_shaped(_numbers_and_pid, _TWO_ROWS)
        assert (numbers, pid) == ((1, 2), os.getpid())


async def test_closing_the_store_ends_the_processes(tmp_path: Path) -> None:
    async with open_sqlite(_url(tmp_path), read_processes=2) as db:
        await _read_by_a_process(db)
        pids = _read_processes()
        assert len(pids) == 2
    assert not any(_exists(pid) for pid in pids)  # ended and reaped


async def test_a_store_that_never_reads_so_starts_no_process(tmp_path: Path) -> None:
    async with open_sqlite(_url(tmp_path), read_processes=2) as db:
        assert await db.fetch(_TWO_ROWS) == [{"n": 1}, {"n": 2}]
        assert _read_processes() == []


def _with_pid(shape: Callable[[list[DocumentHit]], Any], hits: list[DocumentHit]) -> Any:
    return shape(hits), os.getpid()


async def test_search_context_s_answer_is_made_by_a_process_as_the_threads_make_it(
    tmp_path: Path,
) -> None:
    url = await migrated_sqlite_url(tmp_path / "agentws.db")
    async with open_store(url, read_processes=1) as store:
        w = await world(store)
        await doc(store, w.runbooks, "deploy", body="How to deploy: roll the deploy out slowly.")
        await doc(store, w.handbook, "leave", title="Leave policy", body="Ask before you deploy.")
        answer = functools.partial(_search_answer, "deploy")
        libraries = await store.group_libraries(w.ops.id)

        def in_threads(hits: list[DocumentHit]) -> Any:  # a closure: the threads make it
            return _with_pid(answer, hits)

        by_threads, here = await store.search_documents_shaped(
            in_threads, w.ops.id, "deploy", limit=5, libraries=libraries
        )
        assert here == os.getpid()
        by_process, _there = await wait_until(
            lambda: store.search_documents_shaped(
                functools.partial(_with_pid, answer),
                w.ops.id,
                "deploy",
                limit=5,
                libraries=libraries,
            ),
            lambda made: made[1] != os.getpid(),
            what="a read process to make the answer",
            timeout_s=_STARTED_WITHIN_S,
        )
    assert by_process == by_threads
    links = [block.name for block in by_process.content if block.type == "resource_link"]
    assert sorted(links) == ["deploy", "leave"]
