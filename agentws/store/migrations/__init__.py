"""Versioned schema migrations, applied at start.

Each migration is a file ``NNNN_name.sql`` in this package, written once for
both dialects with ``{ts}``, ``{json}``, ``{bytes}`` and ``{bool}`` standing
for the column types that differ. A migration that needs different SQL per
dialect (full-text search is FTS5 on SQLite, ``tsvector`` on PostgreSQL)
comes instead as the pair ``NNNN_name.sqlite.sql`` and
``NNNN_name.postgres.sql``, one version between them.

Scripts are split into statements at a ``;`` that ends a line, except inside
a SQLite trigger body (from a line ending in ``BEGIN`` to a line ``END;``)
and inside a PostgreSQL dollar-quoted body (``$$ ... $$``), whose own
statements end in ``;`` too. Lines starting with ``--`` are comments.

:func:`migrate` applies the missing ones in one transaction and records each
in ``schema_migrations``. It is idempotent, and safe when several processes
start at once: on PostgreSQL they queue on an advisory lock (per schema), on
SQLite on the write lock.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Iterable
from importlib import resources

import attrs

from agentws.core.errors import MigrationError
from agentws.domain.rules import utcnow
from agentws.store.database import Database, Transaction
from agentws.store.tables import Dialect

__all__ = [
    "MIGRATIONS",
    "Migration",
    "has_schema",
    "load_migrations",
    "migrate",
    "split_statements",
]

_TYPES: dict[Dialect, dict[str, str]] = {
    "sqlite": {"ts": "TEXT", "json": "TEXT", "bytes": "BLOB", "bool": "INTEGER"},
    "postgres": {"ts": "TIMESTAMPTZ", "json": "JSONB", "bytes": "BYTEA", "bool": "BOOLEAN"},
}
_DIALECTS: tuple[Dialect, ...] = ("sqlite", "postgres")
_FILE = re.compile(r"(\d{4})_(\w+?)(?:\.(sqlite|postgres))?\.sql")
_BLOCK_START = re.compile(r"\bBEGIN\s*$", re.IGNORECASE)
_BLOCK_END = re.compile(r"END\s*;", re.IGNORECASE)


def split_statements(script: str) -> list[str]:
    """The statements of a script, without comment lines or the final ``;``."""
    statements: list[str] = []
    current: list[str] = []
    in_block = in_dollar = False
    for line in script.splitlines():
        if line.lstrip().startswith("--"):
            continue
        current.append(line)
        # An odd number of $$ on a line opens or closes a dollar-quoted body.
        if line.count("$$") % 2:
            in_dollar = not in_dollar
        if in_dollar:
            continue
        stripped = line.strip()
        if in_block:
            if not _BLOCK_END.fullmatch(stripped):
                continue
            in_block = False
        elif _BLOCK_START.search(stripped):
            in_block = True
            continue
        if stripped.endswith(";"):
            statements.append("\n".join(current).strip().removesuffix(";").strip())
            current = []
    rest = "\n".join(current).strip()
    if rest:
        statements.append(rest)
    return [s for s in statements if s]


@attrs.frozen
class Migration:
    version: int
    name: str
    #: The script for each dialect: the same text unless the migration comes as a pair.
    scripts: dict[Dialect, str] = attrs.field(hash=False)

    def statements(self, dialect: Dialect) -> list[str]:
        return split_statements(self.scripts[dialect].format(**_TYPES[dialect]))


def load_migrations(files: Iterable[tuple[str, str]]) -> tuple[Migration, ...]:
    """The migrations in ``(file name, text)`` pairs, by version; other names are ignored.

    Raises:
        MigrationError: for gaps in the numbering, two files of one version
        (other than a dialect pair), or half a pair.
    """
    # version -> (name, {dialect, or None for both: text})
    found: dict[int, tuple[str, dict[Dialect | None, str]]] = {}
    for file_name, text in files:
        match = _FILE.fullmatch(file_name)
        if not match:
            continue
        version, name = int(match[1]), match[2]
        dialect = typing.cast("Dialect | None", match[3])
        known_name, texts = found.setdefault(version, (name, {}))
        # One version: a single shared file, or one file per dialect with one name.
        mixed = bool(texts) and (None in texts) != (dialect is None)
        if known_name != name or dialect in texts or mixed:
            raise MigrationError(f"migration {version} has conflicting files: {file_name}")
        texts[dialect] = text
    migrations = []
    for version, (name, texts) in sorted(found.items()):
        if None in texts:
            scripts = dict.fromkeys(_DIALECTS, texts[None])
        elif set(texts) == set(_DIALECTS):
            scripts = {d: texts[d] for d in _DIALECTS}
        else:
            raise MigrationError(f"migration {version} needs a .sqlite.sql and a .postgres.sql")
        migrations.append(Migration(version, name, scripts))
    if [m.version for m in migrations] != list(range(1, len(migrations) + 1)):
        raise MigrationError(f"migrations must be numbered 1..N without gaps: {migrations}")
    return tuple(migrations)


MIGRATIONS = load_migrations(
    (entry.name, entry.read_text("utf-8"))
    for entry in resources.files(__name__).iterdir()
    if entry.name.endswith(".sql")
)


async def _lock(tx: Transaction, dialect: Dialect) -> None:
    if dialect == "postgres":
        await tx.execute("SELECT pg_advisory_xact_lock(hashtext('agentws:' || current_schema()))")
    # SQLite: the transaction is BEGIN IMMEDIATE, which already excludes other writers.


async def has_schema(db: Database) -> bool:
    """Whether agentws has migrated this database (its current schema, on PostgreSQL)."""
    if db.dialect == "sqlite":
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    else:
        sql = (
            "SELECT 1 FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
        )
    return bool(await db.fetch(sql))


async def migrate(db: Database) -> list[int]:
    """Bring the schema up to date; return the versions this call applied.

    Error handling:
        Raises :class:`~agentws.core.errors.MigrationError` if the database was
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
