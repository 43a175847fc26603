"""Records by type, in SQL (a part of :class:`~agentws.store.sql.SqlStore`).

The generic operations take the record type (``await store.get(Group, id)``)
and return records of that type: insert, select, update and delete by the
:class:`~agentws.store.tables.Table` spec of the frozen attrs classes of
:mod:`agentws.domain.models`. Column names in generated SQL come only from
those specs, never from callers, which is what makes building them safe.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, Protocol, TypeVar

from agentws.core.errors import ConflictError, NotFoundError
from agentws.domain.models import Group, Workspace
from agentws.store.queries import Queries
from agentws.store.tables import Dialect, Table, table_for

__all__ = ["R", "RecordQueries", "RecordStore", "chunk_sizes", "find_listed"]

R = TypeVar("R")

# Rows per multi-row INSERT at most: far below either database's limit on parameters.
_MAX_ROWS_PER_STATEMENT = 128


class RecordStore(Protocol):
    """Records by type: the generic operations every table shares."""

    @property
    def dialect(self) -> Dialect:
        """The SQL the database speaks (``sqlite`` or ``postgres``)."""
        ...

    async def insert(self, record: R) -> R:
        """Store a new record; ConflictError if it breaks a uniqueness rule."""
        ...

    async def insert_many(self, records: list[Any]) -> None:
        """Store new records of one type, all in one transaction."""
        ...

    async def get(self, kind: type[R], record_id: str, /) -> R:
        """The record of type ``kind`` with ``record_id``; NotFoundError if none."""
        ...

    async def find(self, kind: type[R], /, **where: Any) -> R | None:
        """The first record whose fields equal ``where``, or None."""
        ...

    async def select(
        self, kind: type[R], /, *, limit: int | None = None, offset: int = 0, **where: Any
    ) -> list[R]:
        """Records whose fields equal ``where`` (None matches NULL), oldest first."""
        ...

    async def count(self, kind: type[Any], /, **where: Any) -> int:
        """How many records of ``kind`` match ``where``."""
        ...

    async def update(self, record: R) -> R:
        """Replace the stored record with the same id; NotFoundError if none."""
        ...

    async def delete(self, kind: type[Any], record_id: str, /) -> None:
        """Delete a record and what belongs to it; NotFoundError if none."""
        ...

    async def workspace_by_slug(self, slug: str) -> Workspace:
        """NotFoundError naming the slug if there is no such workspace."""
        ...

    async def group_by_slug(self, workspace_slug: str, group_slug: str) -> Group:
        """NotFoundError naming the workspace or group that does not exist."""
        ...

    async def in_workspace(self, kind: type[R], workspace_slug: str, /, **key: str) -> R:
        """The record of type ``kind`` in the workspace whose one ``key`` field matches.

        ``await store.in_workspace(Connector, "acme", name="github")``;
        NotFoundError naming the workspace, or the record and the CLI command
        that lists its kind, if there is none.
        """
        ...


class RecordQueries(Queries):
    """Records by type; mixed into :class:`~agentws.store.sql.SqlStore`."""

    def _where(self, table: Table, where: dict[str, Any], start: int = 1) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        for column, value in where.items():
            table.check_column(column)
            if value is None:
                clauses.append(f"{column} IS NULL")
            else:
                args.append(table.encode_value(column, value, self.dialect))
                clauses.append(f"{column} = ${start + len(args) - 1}")
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args

    async def _save(self, table: Table, record: Any, sql: str, *args: Any) -> int:
        """Run an insert or update of ``record`` in a transaction of its own; rows changed.

        A broken rule is told in the record's words: ConflictError (it exists),
        NotFoundError (it refers to a record that does not).
        """
        try:
            async with self._db.transaction() as tx:
                return await tx.execute(sql, *args)
        except ConflictError:
            raise ConflictError(f"{table.describe(record)} already exists") from None
        except NotFoundError:
            raise NotFoundError(
                f"cannot save {table.describe(record)}: it refers to a record that does not exist"
            ) from None

    async def insert(self, record: R) -> R:
        table = table_for(type(record))
        # Columns left empty are left out: NULL either way, and a database one
        # migration behind (a rolling upgrade, an old schema in a test) takes
        # the record as long as what it lacks is empty.
        given = [
            (column, value)
            for column, value in zip(table.columns, table.encode(record, self.dialect), strict=True)
            if value is not None
        ]
        placeholders = ", ".join(f"${i}" for i in range(1, len(given) + 1))
        columns = ", ".join(column for column, _ in given)
        sql = f"INSERT INTO {table.name} ({columns}) VALUES ({placeholders})"
        await self._save(table, record, sql, *(value for _, value in given))
        return record

    async def insert_many(self, records: list[Any]) -> None:
        if not records:
            return
        table = table_for(type(records[0]))
        async with self._db.transaction() as tx:
            start = 0
            for size in chunk_sizes(len(records)):
                chunk = records[start : start + size]
                start += size
                args = [v for record in chunk for v in table.encode(record, self.dialect)]
                await tx.execute(_insert_rows(table.name, table.columns, size), *args)

    async def get(self, kind: type[R], record_id: str, /) -> R:
        found = await self.find(kind, id=record_id)
        if found is None:
            raise NotFoundError(f"no {table_for(kind).noun} with id {record_id!r}")
        return found

    async def find(self, kind: type[R], /, **where: Any) -> R | None:
        found = await self.select(kind, limit=1, **where)
        return found[0] if found else None

    async def select(
        self, kind: type[R], /, *, limit: int | None = None, offset: int = 0, **where: Any
    ) -> list[R]:
        table = table_for(kind)
        condition, args = self._where(table, where)
        columns = ", ".join(table.columns)
        sql = f"SELECT {columns} FROM {table.name}{condition} ORDER BY {table.order_by}"
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        elif offset:
            sql += (
                f" LIMIT -1 OFFSET {int(offset)}"
                if self.dialect == "sqlite"
                else f" OFFSET {int(offset)}"
            )
        rows = await self._db.fetch(sql, *args)
        decoded: list[R] = [table.decode(row, self.dialect) for row in rows]
        return decoded

    async def count(self, kind: type[Any], /, **where: Any) -> int:
        table = table_for(kind)
        condition, args = self._where(table, where)
        rows = await self._db.fetch(f"SELECT COUNT(*) AS n FROM {table.name}{condition}", *args)
        return int(rows[0]["n"])

    async def update(self, record: R) -> R:
        table = table_for(type(record))
        values = table.encode(record, self.dialect)
        columns = [c for c in table.columns if c != "id"]
        assignments = ", ".join(f"{c} = ${i}" for i, c in enumerate(columns, start=2))
        by_column = dict(zip(table.columns, values, strict=True))
        sql = f"UPDATE {table.name} SET {assignments} WHERE id = $1"
        changed = await self._save(
            table, record, sql, by_column["id"], *(by_column[c] for c in columns)
        )
        if not changed:
            raise NotFoundError(f"no {table.noun} with id {getattr(record, 'id', None)!r}")
        return record

    async def delete(self, kind: type[Any], record_id: str, /) -> None:
        table = table_for(kind)
        async with self._db.transaction() as tx:
            changed = await tx.execute(f"DELETE FROM {table.name} WHERE id = $1", record_id)
        if not changed:
            raise NotFoundError(f"no {table.noun} with id {record_id!r}")

    async def workspace_by_slug(self, slug: str) -> Workspace:
        return await find_listed(self, Workspace, slug=slug)

    async def group_by_slug(self, workspace_slug: str, group_slug: str) -> Group:
        return await self.in_workspace(Group, workspace_slug, slug=group_slug)

    async def in_workspace(self, kind: type[R], workspace_slug: str, /, **key: str) -> R:
        return await find_listed(self, kind, workspace_slug=workspace_slug, **key)


async def find_listed(
    store: RecordStore, kind: type[R], /, *, workspace_slug: str | None = None, **key: Any
) -> R:
    """The ``kind`` record (of workspace ``workspace_slug``, if given) whose one
    ``key`` field equals what an operator typed: an id, a slug or a name.

    A record of a workspace is :meth:`RecordStore.in_workspace`'s; this is
    also for the records that belong to no workspace (an admin, an approval).

    Error handling:
        NotFoundError naming what was typed, and the command that lists what
        there is (``no library 'x' in workspace 'w' (see `agentws library list w`)``);
        the workspace's own NotFoundError when there is no such workspace.
    """
    (typed,) = key.values()
    noun = table_for(kind).noun
    if workspace_slug is None:
        found = await store.find(kind, **key)
        where_said, listing = "", f"agentws {noun} list"
    else:
        workspace = await store.workspace_by_slug(workspace_slug)
        found = await store.find(kind, workspace_id=workspace.id, **key)
        where_said = f" in workspace {workspace_slug!r}"
        listing = f"agentws {noun} list {workspace_slug}"
    if found is None:
        raise NotFoundError(f"no {noun} {typed!r}{where_said} (see `{listing}`)")
    return found


def chunk_sizes(count: int) -> Iterator[int]:
    """``count`` rows as multi-row INSERTs: powers of two, the largest first.

    Each number of rows is a statement of its own, which the connection
    compiles once and keeps in its statement cache (SQLite's, asyncpg's)
    with the values last bound to it. One statement for every batch size up
    to 200 (the audit log's batches vary with the load) filled SQLite's
    cache of 128 with large statements, and the process grew for tens of
    thousands of audited calls (3.3 MB in the second half of 20,000
    stateless calls through a connector; 0.5 MB since). Powers of two up to
    ``_MAX_ROWS_PER_STATEMENT`` make eight statements at most, and a batch
    a few more of them (350 rows: 128, 128, 64, 16, 8, 4, 2).
    """
    while count:
        size = min(_MAX_ROWS_PER_STATEMENT, 1 << (count.bit_length() - 1))
        yield size
        count -= size


# A table's multi-row inserts are of eight sizes at most: each text is made once.
@functools.lru_cache(maxsize=64)
def _insert_rows(name: str, columns: tuple[str, ...], count: int) -> str:
    """``INSERT`` of ``count`` rows into table ``name``, its values numbered ``$1``, ``$2``…"""
    width = len(columns)
    rows = ", ".join(
        "(" + ", ".join(f"${i * width + j + 1}" for j in range(width)) + ")" for i in range(count)
    )
    return f"INSERT INTO {name} ({', '.join(columns)}) VALUES {rows}"
