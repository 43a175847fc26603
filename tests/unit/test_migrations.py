"""Migration files: numbered without gaps, rendered and split into statements per dialect."""

import pytest

from agentws.core.errors import MigrationError
from agentws.store.migrations import MIGRATIONS, load_migrations, split_statements
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
            added = f"ALTER TABLE {table.name} ADD COLUMN {column} "
            assert f"    {column} " in joined or added in joined, (table.name, column)


def test_migration_2_differs_per_dialect():
    (search,) = [m for m in MIGRATIONS if m.version == 2]
    sqlite, postgres = search.statements("sqlite"), search.statements("postgres")
    assert any("USING fts5(" in s for s in sqlite)
    assert not any("tsvector" in s for s in sqlite)
    assert any("GENERATED ALWAYS AS" in s and "tsvector" in s for s in postgres)
    assert not any("fts5" in s for s in postgres)


def test_sqlite_trigger_bodies_stay_whole():
    (search,) = [m for m in MIGRATIONS if m.version == 2]
    triggers = [s for s in search.statements("sqlite") if s.startswith("CREATE TRIGGER")]
    assert len(triggers) == 3
    for trigger in triggers:
        assert " BEGIN\n" in trigger
        assert trigger.endswith("END")
        assert trigger.count(";") == trigger.count("INSERT INTO")  # its inner statements


def test_postgres_function_bodies_stay_whole():
    (search,) = [m for m in MIGRATIONS if m.version == 2]
    (function,) = [s for s in search.statements("postgres") if s.startswith("CREATE FUNCTION")]
    assert function.count("$$") == 2
    assert function.endswith("$$")
    assert "EXCEPTION WHEN program_limit_exceeded" in function


def test_split_statements():
    script = """
-- a comment; with a semicolon
CREATE TABLE a (x TEXT);
INSERT INTO a VALUES ('semicolon; inside a line');

CREATE TRIGGER t AFTER INSERT ON a BEGIN
    INSERT INTO b VALUES (1);
    INSERT INTO b VALUES (2);
END;
CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    RETURN 1;
END
$$;
SELECT $$one line$$;
SELECT 1"""
    assert split_statements(script) == [
        "CREATE TABLE a (x TEXT)",
        "INSERT INTO a VALUES ('semicolon; inside a line')",
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n"
        "    INSERT INTO b VALUES (1);\n"
        "    INSERT INTO b VALUES (2);\n"
        "END",
        "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$\nBEGIN\n    RETURN 1;\nEND\n$$",
        "SELECT $$one line$$",
        "SELECT 1",
    ]


def test_a_migration_is_one_file_or_a_dialect_pair():
    shared = ("0001_one.sql", "CREATE TABLE a (x {ts});")
    pair = [("0002_two.sqlite.sql", "S;"), ("0002_two.postgres.sql", "P;")]
    migrations = load_migrations([shared, *pair, ("README.md", "not a migration")])
    assert [(m.version, m.name) for m in migrations] == [(1, "one"), (2, "two")]
    assert migrations[0].statements("sqlite") == ["CREATE TABLE a (x TEXT)"]
    assert migrations[0].statements("postgres") == ["CREATE TABLE a (x TIMESTAMPTZ)"]
    assert (migrations[1].statements("sqlite"), migrations[1].statements("postgres")) == (
        ["S"],
        ["P"],
    )


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ([("0001_a.sqlite.sql", "")], "needs a .sqlite.sql and a .postgres.sql"),
        ([("0001_a.sql", ""), ("0001_a.sqlite.sql", "")], "conflicting files"),
        ([("0001_a.sqlite.sql", ""), ("0001_a.sql", "")], "conflicting files"),
        ([("0001_a.sql", ""), ("0001_b.sql", "")], "conflicting files"),
        ([("0001_a.sqlite.sql", ""), ("0001_b.postgres.sql", "")], "conflicting files"),
        ([("0001_a.sql", ""), ("0003_c.sql", "")], "without gaps"),
    ],
    ids=["half-pair", "shared-then-pair", "pair-then-shared", "two-names", "pair-names", "gap"],
)
def test_malformed_migration_sets_are_refused(files, message):
    with pytest.raises(MigrationError, match=message):
        load_migrations(files)
