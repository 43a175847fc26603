"""Storage: :func:`open_store`, which picks the driver.

``sqlite:///PATH`` opens the embedded store, ``postgresql://…`` the
scale-out one; both are migrated to the current schema before use. The
store's areas are protocols declared beside their queries in the
``sql_<area>`` modules; :mod:`agentws.store.union` is all of them at once.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agentws.core.errors import ConfigError, NoDatabaseError
from agentws.settings.config import parse_database_url
from agentws.store.database import Database
from agentws.store.migrations import has_schema, migrate
from agentws.store.postgres import open_postgres, redact_url
from agentws.store.sql import SqlStore
from agentws.store.sqlite import open_sqlite, sqlite_path
from agentws.store.timed import TimedDatabase

__all__ = ["SqlStore", "open_store", "redact_url"]


@asynccontextmanager
async def open_store(
    url: str, *, pool_size: int = 10, read_processes: int = 0, create: bool = True
) -> AsyncIterator[SqlStore]:
    """Open and migrate the store named by ``url``.

    Args:
        url: ``sqlite:///PATH`` or ``postgresql://USER@HOST/DB``.
        pool_size: PostgreSQL connections to keep at most.
        read_processes: SQLite: processes that run searches off this
            process's interpreter lock, started with the first search
            (:mod:`agentws.store.sqlite_read_processes`); 0 for none.
        create: make the agentws schema (and the SQLite file) if it is not
            there. Without it, a database agentws has never migrated is
            refused and left as it was; one agentws made is still upgraded.

    Resource handling:
        Connections are closed when the block exits.

    Error handling:
        :class:`~agentws.core.errors.ConfigError` for a malformed URL,
        :class:`~agentws.core.errors.NoDatabaseError` (``create=False``) for a
        missing SQLite file or a database without the agentws schema,
        :class:`~agentws.core.errors.StoreUnavailableError` if the database cannot
        be reached, :class:`~agentws.core.errors.MigrationError` if its schema
        cannot be brought up to date.
    """
    try:
        parse_database_url(url)
    except ValueError as exc:
        raise ConfigError(f"database URL: {exc}") from None
    if url.startswith("sqlite:"):
        where = _sqlite_file(url, create)
        async with open_sqlite(url, read_processes=read_processes) as sqlite_db:
            await _migrate(sqlite_db, where, create)
            yield SqlStore(TimedDatabase(sqlite_db))
    else:
        async with open_postgres(url, pool_size=pool_size) as pg_db:
            await _migrate(pg_db, redact_url(url), create)
            yield SqlStore(TimedDatabase(pg_db))


def _sqlite_file(url: str, create: bool) -> str:
    """Its absolute path (for messages); NoDatabaseError if it must exist and does not."""
    path = sqlite_path(url)
    if path == ":memory:":
        return path
    # A stat, not disk I/O worth a thread: the file is opened in one next.
    where = os.path.abspath(path)
    if not create and not os.path.exists(path):
        raise NoDatabaseError(f"no agentws database at {where}")
    return where


async def _migrate(db: Database, where: str, create: bool) -> None:
    if not create and not await has_schema(db):
        raise NoDatabaseError(f"{where} has no agentws schema")
    await migrate(db)
