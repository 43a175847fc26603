"""Fixtures of the store contract suite: every test runs on SQLite and on PostgreSQL.

``database_url`` names an empty database of its own: a SQLite file in
``tmp_path``, or a fresh PostgreSQL schema (dropped again afterwards), for the
tests of migrating. ``store_url`` names one already migrated, as
:func:`agentws.store.open_store` leaves it, made much quicker than by running
the migrations: a copy of a SQLite database migrated once per process
(:func:`tests.support.migrated_sqlite_url`), or a PostgreSQL schema of
:func:`tests.support.migrated_schema`. ``store`` is that one, opened.

If PostgreSQL cannot be reached its tests fail (see :mod:`tests.support`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from agentws.store import SqlStore, open_store
from agentws.store.postgres import open_postgres
from agentws.store.sqlite import open_sqlite
from tests.support import fresh_schema, migrated_schema, migrated_sqlite_url


def open_database(url: str) -> AbstractAsyncContextManager[Any]:
    """The driver-level database for ``url``, not migrated (for migration tests)."""
    if url.startswith("sqlite:"):
        return open_sqlite(url)
    return open_postgres(url, pool_size=1)


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def backend(request: pytest.FixtureRequest) -> str:
    """Which store the test runs on."""
    return str(request.param)


@pytest.fixture
async def database_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    """The URL of an empty database of this test's own."""
    if backend == "sqlite":
        yield "sqlite:///" + str((tmp_path / "agentws.db").absolute())
        return
    async with fresh_schema() as url:
        yield url


@pytest.fixture
async def store_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    """The URL of a migrated database of this test's own."""
    if backend == "sqlite":
        yield await migrated_sqlite_url(tmp_path / "agentws.db")
        return
    async with migrated_schema() as url:
        yield url


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[SqlStore]:
    """The test's migrated database, opened."""
    async with open_store(store_url, pool_size=4) as opened:
        yield opened
