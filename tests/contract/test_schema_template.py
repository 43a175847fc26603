"""The migrated PostgreSQL schemas of the test suite (:func:`tests.support.migrated_schema`)
are exactly what :func:`agentws.store.open_store` makes of an empty one.

They are replayed from a captured template rather than migrated, so every store test
relies on the copy being faithful; a new kind of object that ``pg_dump`` left out
would show here as a difference. A schema a test is done with is emptied for the
next one, back to exactly that, or dropped if the test changed what it is made of.
"""

from __future__ import annotations

import re

import pytest
import trio

from agentws.store import open_store
from agentws.store.migrations import MIGRATIONS, migrate
from tests.support import fresh_schema, migrated_schema, postgres_base_url

from .conftest import open_database

pytestmark = pytest.mark.postgres


async def _dump(url: str) -> str:
    schema = url.rpartition("search_path=")[2]
    dumped = await trio.run_process(
        ["pg_dump", f"--schema={schema}", "--no-owner", "--no-privileges", postgres_base_url()],
        capture_stdout=True,
    )
    text = re.sub(r"^\\(un)?restrict .*$", "", dumped.stdout.decode(), flags=re.MULTILINE)
    return text.replace(schema, "<schema>")


async def test_a_migrated_schema_is_what_open_store_makes() -> None:
    async with fresh_schema() as url:
        async with open_store(url, pool_size=1):
            pass
        migrated_by_open_store = await _dump(url)
    async with migrated_schema() as url:
        copied = await _dump(url)
        async with open_database(url) as db:
            assert await migrate(db) == []
            async with db.transaction(write=False) as tx:
                rows = await tx.fetch("SELECT version FROM schema_migrations ORDER BY version")
        assert [row["version"] for row in rows] == [m.version for m in MIGRATIONS]
    # The rows of schema_migrations differ in when they were applied, and are compared above.
    applied_at = re.compile(r"^COPY <schema>\.schema_migrations .*?^\\\.$", re.M | re.S)
    assert applied_at.sub("", copied) == applied_at.sub("", migrated_by_open_store)


async def test_a_schema_a_test_is_done_with_comes_back_as_the_template_made_it() -> None:
    async with migrated_schema() as first:
        made = await _dump(first)
        async with open_database(first) as db, db.transaction() as tx:
            await tx.execute(
                "INSERT INTO workspaces (id, slug, name, created_at)"
                " VALUES ('w1', 'acme', 'Acme', now())"
            )
            await tx.execute("UPDATE catalog_version SET version = version + 7")
            await tx.execute("DELETE FROM schema_migrations WHERE version = 1")
    async with migrated_schema() as second:
        assert second == first  # kept, emptied
        assert await _dump(second) == made


async def test_a_schema_a_test_changed_the_shape_of_is_dropped() -> None:
    async with migrated_schema() as first, open_database(first) as db, db.transaction() as tx:
        await tx.execute("DROP TABLE audit_log")
    async with migrated_schema() as second:
        assert second != first
        async with open_database(second) as db:
            assert await migrate(db) == []
