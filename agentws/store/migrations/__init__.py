"""Versioned schema migrations, applied at start.

Each migration is a file ``NNNN_name.sql`` in this package, written once for
both dialects with ``{ts}``, ``{json}``, ``{bytes}`` and ``{bool}`` standing
for the column types that differ. :func:`migrate` applies the missing ones
in one transaction and records each in ``schema_migrations``. It is
idempotent, and safe when several processes start at once: on PostgreSQL
they queue on an advisory lock (per schema), on SQLite on the write lock.
"""

from __future__ import annotations

import re
from importlib import resources

import attrs

from agentws.domain.rules import utcnow
from agentws.errors import MigrationError
from agentws.store.database import Database, Transaction
from agentws.store.tables import Dialect

__all__ = ["MIGRATIONS", "Migration", "migrate"]

_TYPES: dict[Dialect, dict[str, str]] = {
    "sqlite": {"ts": "TEXT", "json": "TEXT", "bytes": "BLOB", "bool": "INTEGER"},
    "postgres": {"ts": "TIMESTAMPTZ", "json": "JSONB", "bytes": "BYTEA", "bool": "BOOLEAN"},
}
_FILE = re.compile(r"(\d{4})_(\w+)\.sql")


@attrs.frozen
class Migration:
    version: int
    name: str
    sql: str

    def statements(self, dialect: Dialect) -> list[str]:
        lines = [ln for ln in self.sql.splitlines() if not ln.lstrip().startswith("--")]
        text = "\n".join(lines).format(**_TYPES[dialect])
        return [s.strip() for s in text.split(";") if s.strip()]


def _load() -> tuple[Migration, ...]:
    found = []
    for entry in resources.files(__name__).iterdir():
        match = _FILE.fullmatch(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise MigrationError(f"migrations must be numbered 1..N without gaps: {found}")
    return tuple(found)


MIGRATIONS = _load()


async def _lock(tx: Transaction, dialect: Dialect) -> None:
    if dialect == "postgres":
        await tx.execute("SELECT pg_advisory_xact_lock(hashtext('agentws:' || current_schema()))")
    # SQLite: the transaction is BEGIN IMMEDIATE, which already excludes other writers.


async def migrate(db: Database) -> list[int]:
    """Bring the schema up to date; return the versions this call applied.

    Error handling:
        Raises :class:`~agentws.errors.MigrationError` if the database was
        migrated by a newer agentws than this one, or a migration fails.
    """
    types = _TYPES[db.dialect]
    async with db.transaction() as tx:
        await _lock(tx, db.dialect)
        await tx.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            f" applied_at {types['ts']} NOT NULL)"
        )
        rows = await tx.fetch("SELECT version FROM schema_migrations")
        applied = {r["version"] for r in rows}
        newest = MIGRATIONS[-1].version if MIGRATIONS else 0
        if applied and max(applied) > newest:
            raise MigrationError(
                f"the database is at schema version {max(applied)}, newer than this "
                f"agentws knows (up to {newest}): upgrade agentws before using this database"
            )
        done = []
        for migration in MIGRATIONS:
            if migration.version in applied:
                continue
            for statement in migration.statements(db.dialect):
                await tx.execute(statement)
            now = utcnow()
            await tx.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                migration.version,
                migration.name,
                now.isoformat() if db.dialect == "sqlite" else now,
            )
            done.append(migration.version)
        return done
