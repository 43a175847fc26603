"""Helpers shared by the test packages: a clean environment for programs under
test, and fresh PostgreSQL schemas.

A PostgreSQL schema ``t_<hex>`` is created per test in the database named by
``AGENTWS_TEST_DATABASE_URL`` (default: the local test server) and dropped
afterwards. It is empty (:func:`fresh_schema`), or already migrated
(:func:`migrated_schema`, :func:`migrate_schema`): running the migrations costs
most of a second, so each test process migrates one template schema once with
:func:`agentws.store.open_store`, captures it with ``pg_dump`` and replays that
script, under the new schema's name, in one round trip per test. A migrated
schema a test is done with is not dropped but emptied back to what the
template holds and kept for the next test of the process (:func:`migrated_schema`):
creating and dropping some eighty tables and indexes cost the database server
half a second of CPU per test, emptying them a hundredth.

If PostgreSQL cannot be reached, its tests fail with a message saying how to
start it or leave them out (``pytest -m "not postgres"``): a missing database
must never pass quietly.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import secrets
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import trio

from agentws.core.errors import StoreUnavailableError
from agentws.store import open_store, redact_url
from agentws.store.postgres import open_postgres
from tests.in_process import run_cli_beside

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
# Creating or dropping a test schema must not hang the suite, even when cancelled.
_ADMIN_SQL_S = 15.0

# Base URL -> the migrated template's script, its schema name written as _TEMPLATE_NAME.
_templates: dict[str, str] = {}
_TEMPLATE_NAME = "__agentws_template_schema__"
# Lines of pg_dump's that are psql commands, not SQL (pg_dump 17.6 and later write them).
_PSQL_COMMAND = re.compile(r"^\\(un)?restrict .*$", re.MULTILINE)

# Base URL -> why PostgreSQL is unreachable, so that only the first test waits to learn it.
_postgres_down: dict[str, str] = {}

# Migrated schemas tests are done with, emptied to the template's data: the URLs, by base URL.
_spare: dict[str, list[str]] = {}
# Base URL -> what a migrated schema is made of (see _shape), to know a schema a test changed.
_shapes: dict[str, str] = {}
# What a schema is made of: its relations, functions and triggers, by name and kind.
_SHAPE_SQL = """
SELECT string_agg(part, ',' ORDER BY part) AS shape FROM (
  SELECT c.relname || ':' || c.relkind::text AS part FROM pg_class c
    WHERE c.relnamespace = $1::regnamespace
  UNION ALL SELECT p.proname || ':f' FROM pg_proc p WHERE p.pronamespace = $1::regnamespace
  UNION ALL SELECT t.tgname || ':t' FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
    WHERE c.relnamespace = $1::regnamespace AND NOT t.tgisinternal
) parts
"""


async def run_agentws(
    tmp_path: Path, database_url: str, *args: str, **env: str
) -> tuple[int, str, str]:
    """Run ``agentws ARGS --database URL`` in ``tmp_path``; exit status, stdout, stderr.

    The environment is :func:`clean_env` plus ``env``. No run may print a traceback.
    The command runs in this process (:func:`tests.in_process.run_cli`), in a
    worker thread: the test's trio run (a service it serves, remotes) goes on
    meanwhile, as it would beside a program of its own.
    """
    result = await run_cli_beside(
        [*args, "--database", database_url], cwd=tmp_path, env=clean_env(**env)
    )
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result.returncode, result.stdout, result.stderr


async def run_agentws_program(
    tmp_path: Path, database_url: str, *args: str, **env: str
) -> tuple[int, str, str]:
    """:func:`run_agentws` as ``python -m agentws``, a program of its own.

    For a test whose point is another process: its own store, and a
    program's start-up time between one command and the next.
    """
    result = await trio.run_process(
        [sys.executable, "-m", "agentws", *args, "--database", database_url],
        cwd=tmp_path,
        env=clean_env(**env),
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    stdout, stderr = result.stdout.decode(), result.stderr.decode()
    assert "Traceback" not in stdout + stderr, stderr
    return result.returncode, stdout, stderr


def clean_env(**overrides: str) -> dict[str, str]:
    """This process's environment without ``AGENTWS_*`` or ``ANTHROPIC_*`` variables, plus
    ``overrides``.

    The developer's own settings must not leak into the program under test
    (and a real API key would send the tests' runs to the real model).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTWS_", "ANTHROPIC_"))}
    env.update(overrides)
    return env


# A SQLite database migrated once per process, copied for each test that wants one.
_sqlite_template: list[Path] = []


async def migrated_sqlite_url(path: Path) -> str:
    """``sqlite:///PATH``, a database :func:`agentws.store.open_store` has migrated.

    A file already at ``path`` (a test serving the same database again) is
    left as it is. Otherwise it is a copy of a template this process migrated
    once: migrating takes a test's service a tenth of a second of CPU.
    """
    if not _sqlite_template:
        template = _template_path()
        async with open_store(f"sqlite:///{template}", pool_size=1):
            pass
        _sqlite_template.append(template)
    _copy_unless_there(_sqlite_template[0], path)
    return f"sqlite:///{path}"


def _template_path() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="agentws-sqlite-template-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder / "migrated.db"


def _copy_unless_there(template: Path, path: Path) -> None:
    # Closed, the template is all in its one file (the WAL was checkpointed away).
    assert not template.with_name(template.name + "-wal").exists(), template
    if not path.exists():
        shutil.copyfile(template, path)


def postgres_base_url() -> str:
    return os.environ.get("AGENTWS_TEST_DATABASE_URL") or DEFAULT_POSTGRES_URL


def with_search_path(base_url: str, schema: str) -> str:
    separator = "&" if urlsplit(base_url).query else "?"
    return f"{base_url}{separator}search_path={schema}"


def _fail_unreachable(base_url: str) -> None:
    pytest.fail(
        f"PostgreSQL at {redact_url(base_url)} is unreachable ({_postgres_down[base_url]}); "
        "start it (scripts/test does), point AGENTWS_TEST_DATABASE_URL at one, "
        "or leave its tests out with -m 'not postgres'",
        pytrace=False,
    )


async def _admin_sql(base_url: str, sql: str) -> None:
    with trio.move_on_after(_ADMIN_SQL_S, shield=True) as scope:
        async with open_postgres(base_url, pool_size=1) as db, db.transaction() as tx:
            await tx.execute(sql)
    if scope.cancelled_caught:
        raise TimeoutError(f"PostgreSQL did not run {sql!r} within {_ADMIN_SQL_S} s")


async def create_schema() -> str:
    """Create a new, empty PostgreSQL schema; the URL that selects it."""
    base_url = postgres_base_url()
    if base_url in _postgres_down:
        _fail_unreachable(base_url)
    schema = f"t_{secrets.token_hex(8)}"
    try:
        await _admin_sql(base_url, f'CREATE SCHEMA "{schema}"')
    except StoreUnavailableError as exc:
        _postgres_down[base_url] = exc.message
        _fail_unreachable(base_url)
    return with_search_path(base_url, schema)


async def drop_schema(url: str) -> None:
    """Drop the schema of a URL made by :func:`create_schema`."""
    schema = _schema_of(url)
    await _admin_sql(postgres_base_url(), f'DROP SCHEMA "{schema}" CASCADE')


def _schema_of(url: str) -> str:
    return url.rpartition("search_path=")[2]


async def _template_script(base_url: str) -> str | None:
    """The SQL that makes an empty schema what the migrations make of it, or ``None``
    without ``pg_dump`` (the test then migrates its schema itself)."""
    if base_url in _templates:
        return _templates[base_url]
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        return None
    url = await create_schema()
    schema = _schema_of(url)
    try:
        async with open_store(url, pool_size=1):
            pass
        dumped = await trio.run_process(
            [pg_dump, f"--schema={schema}", "--inserts", "--no-owner", "--no-privileges", base_url],
            capture_stdout=True,
            capture_stderr=True,
            env=clean_env(),
            check=False,
        )
    finally:
        await drop_schema(url)
    if dumped.returncode != 0:
        raise AssertionError(f"pg_dump of {schema} failed: {dumped.stderr.decode()}")
    script = _PSQL_COMMAND.sub("", dumped.stdout.decode())
    # Only the schema is created beforehand; everything in it, and every name of it, follows.
    script = script.replace(f"CREATE SCHEMA {schema};", "")
    if re.search(rf"\b{schema}\b", script) is None:
        raise AssertionError(f"pg_dump of {schema} does not name it: {script[:500]}")
    _templates[base_url] = re.sub(rf"\b{schema}\b", _TEMPLATE_NAME, script)
    return _templates[base_url]


async def migrate_schema(url: str) -> None:
    """Make the empty schema of ``url`` (from :func:`create_schema`) fully migrated,
    exactly as :func:`agentws.store.open_store` would leave it."""
    base_url = postgres_base_url()
    script = await _template_script(base_url)
    if script is None:
        async with open_store(url, pool_size=1):
            return
    await _admin_sql(base_url, script.replace(_TEMPLATE_NAME, _schema_of(url)))


@asynccontextmanager
async def fresh_schema() -> AsyncIterator[str]:
    """The URL of a new, empty PostgreSQL schema, dropped on exit."""
    url = await create_schema()
    try:
        yield url
    finally:
        await drop_schema(url)


@asynccontextmanager
async def migrated_schema() -> AsyncIterator[str]:
    """The URL of a fully migrated PostgreSQL schema of this test's own.

    It holds what :func:`agentws.store.open_store` leaves in a new schema and
    nothing else: a new schema, or one an earlier test of this process used,
    emptied back to that. On exit it is emptied for the next test, or dropped
    if the test changed what it is made of (a table dropped, a function
    replaced) or it could not be emptied.
    """
    url = await _take_migrated()
    try:
        yield url
    finally:
        await _give_back(url)


async def _take_migrated() -> str:
    """A spare migrated schema of this process, else a new one."""
    base_url = postgres_base_url()
    spare = _spare.setdefault(base_url, [])
    if spare:
        return spare.pop()
    url = await create_schema()
    try:
        await migrate_schema(url)
        _shapes.setdefault(base_url, await _shape(base_url, url))
    except BaseException:
        await drop_schema(url)
        raise
    return url


async def _give_back(url: str) -> None:
    """Keep ``url``'s schema, emptied, for the next test; or drop it."""
    base_url = postgres_base_url()
    if await _emptied(base_url, url):
        _spare.setdefault(base_url, []).append(url)
    else:
        await drop_schema(url)


async def _shape(base_url: str, url: str) -> str:
    async with open_postgres(base_url, pool_size=1) as db:
        rows = await db.fetch(_SHAPE_SQL, _schema_of(url))
    return str(rows[0]["shape"])


async def _emptied(base_url: str, url: str) -> bool:
    """Empty ``url``'s schema back to the template's data; False if it is not the
    template's shape any more, or could not be emptied (it is then to be dropped)."""
    script = _templates.get(base_url)
    if script is None or base_url not in _shapes:
        return False
    schema = _schema_of(url)
    emptying = _emptying_script(script).replace(_TEMPLATE_NAME, f'"{schema}"')
    emptied = False
    with trio.move_on_after(_ADMIN_SQL_S, shield=True):
        try:
            async with open_postgres(base_url, pool_size=1) as db, db.transaction() as tx:
                shape = await tx.fetch(_SHAPE_SQL, schema)
                if shape[0]["shape"] != _shapes[base_url]:
                    return False
                await tx.execute(emptying)
                emptied = True
        except StoreUnavailableError:
            return False
    return emptied


@functools.cache
def _emptying_script(script: str) -> str:
    """What empties a schema made by the template ``script`` back to the template's
    data, its schema named as in the template."""
    tables = re.findall(rf"^CREATE TABLE {_TEMPLATE_NAME}\.(\w+) \(", script, re.M)
    data = re.findall(r"^(?:INSERT INTO|SELECT pg_catalog\.setval\().*$", script, re.M)
    # As a replica would: no trigger fires and no foreign key is checked, so
    # the tables empty in any order and no change is announced.
    statements = [
        "SET LOCAL session_replication_role = replica",
        *(f"DELETE FROM {_TEMPLATE_NAME}.{table}" for table in tables),
        *data,
    ]
    return ";\n".join(statements)


@atexit.register
def _drop_spares() -> None:
    """Drop the emptied schemas kept for tests this process will not run now."""
    urls = [url for spare in _spare.values() for url in spare]
    _spare.clear()
    if urls:
        trio.run(_drop_all, urls)


async def _drop_all(urls: list[str]) -> None:
    for url in urls:
        with trio.move_on_after(_ADMIN_SQL_S):
            await drop_schema(url)


@contextmanager
def fresh_schema_sync() -> Iterator[str]:
    """:func:`fresh_schema` for code outside ``trio.run`` (sync tests and fixtures)."""
    url = trio.run(create_schema)
    try:
        yield url
    finally:
        trio.run(drop_schema, url)


@contextmanager
def migrated_schema_sync() -> Iterator[str]:
    """:func:`migrated_schema` for code outside ``trio.run`` (sync tests and fixtures)."""
    url = trio.run(_take_migrated)
    try:
        yield url
    finally:
        trio.run(_give_back, url)
