"""Storage: the :class:`Store` protocol and :func:`open_store`, which picks the driver.

``sqlite:///PATH`` opens the embedded store, ``postgresql://…`` the
scale-out one; both are migrated to the current schema before use.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agentws.config import parse_database_url
from agentws.errors import ConfigError
from agentws.store.base import Store
from agentws.store.migrations import migrate
from agentws.store.postgres import open_postgres, redact_url
from agentws.store.sql import SqlStore
from agentws.store.sqlite import open_sqlite
from agentws.store.timed import TimedDatabase

__all__ = ["SqlStore", "Store", "open_store", "redact_url"]


@asynccontextmanager
async def open_store(url: str, *, pool_size: int = 10) -> AsyncIterator[SqlStore]:
    """Open and migrate the store named by ``url``.

    Args:
        url: ``sqlite:///PATH`` or ``postgresql://USER@HOST/DB``.
        pool_size: PostgreSQL connections to keep at most.

    Resource handling:
        Connections are closed when the block exits.

    Error handling:
        :class:`~agentws.errors.ConfigError` for a malformed URL,
        :class:`~agentws.errors.StoreUnavailableError` if the database cannot
        be reached, :class:`~agentws.errors.MigrationError` if its schema
        cannot be brought up to date.
    """
    try:
        parse_database_url(url)
    except ValueError as exc:
        raise ConfigError(f"database URL: {exc}") from None
    if url.startswith("sqlite:"):
        async with open_sqlite(url) as sqlite_db:
            await migrate(sqlite_db)
            yield SqlStore(TimedDatabase(sqlite_db))
    else:
        async with open_postgres(url, pool_size=pool_size) as pg_db:
            await migrate(pg_db)
            yield SqlStore(TimedDatabase(pg_db))
