"""Fixtures of the store contract suite: every test runs on SQLite and on PostgreSQL.

``database_url`` names an empty database of its own: a SQLite file in
``tmp_path``, or a fresh PostgreSQL schema (dropped again afterwards). ``store`` is that
database opened (and so migrated) with :func:`agentws.store.open_store`; a PostgreSQL
schema is first made what the migrations make of it from a template
(:func:`tests.support.migrate_schema`), which is much quicker than running them.

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
from tests.support import fresh_schema, migrate_schema


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
async def store(database_url: str) -> AsyncIterator[SqlStore]:
    """The test's database, opened and migrated."""
    if not database_url.startswith("sqlite:"):
        await migrate_schema(database_url)
    async with open_store(database_url, pool_size=4) as opened:
        yield opened
