"""Migration files: numbered without gaps, rendered for each dialect."""

from agentws.store.migrations import MIGRATIONS
from agentws.store.tables import TABLES


def test_migrations_are_numbered_from_one():
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))


def test_placeholders_are_filled_for_each_dialect():
    for dialect, ts in (("sqlite", "TEXT"), ("postgres", "TIMESTAMPTZ")):
        statements = MIGRATIONS[0].statements(dialect)
        assert statements
        joined = "\n".join(statements)
        assert "{" not in joined
        assert f"created_at {ts} NOT NULL" in joined


def test_every_record_table_is_created():
    joined = "\n".join(s for m in MIGRATIONS for s in m.statements("postgres"))
    for table in TABLES.values():
        assert f"CREATE TABLE {table.name} (" in joined
        for column in table.columns:
            assert f"    {column} " in joined, (table.name, column)
