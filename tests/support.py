"""Helpers shared by the test packages: a clean environment for programs under
test, and fresh PostgreSQL schemas.

A PostgreSQL schema ``t_<hex>`` is created per test in the database named by
``AGENTWS_TEST_DATABASE_URL`` (default: the local test server) and dropped
afterwards. If PostgreSQL cannot be reached, its tests fail with a message
saying how to start it or leave them out (``pytest -m "not postgres"``): a
missing database must never pass quietly.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import trio

from agentws.core.errors import StoreUnavailableError
from agentws.store import redact_url
from agentws.store.postgres import open_postgres
from tests.in_process import run_cli_beside

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
# Creating or dropping a test schema must not hang the suite, even when cancelled.
_ADMIN_SQL_S = 15.0

# Base URL -> why PostgreSQL is unreachable, so that only the first test waits to learn it.
_postgres_down: dict[str, str] = {}


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
    schema = url.rpartition("search_path=")[2]
    await _admin_sql(postgres_base_url(), f'DROP SCHEMA "{schema}" CASCADE')


@asynccontextmanager
async def fresh_schema() -> AsyncIterator[str]:
    """The URL of a new, empty PostgreSQL schema, dropped on exit."""
    url = await create_schema()
    try:
        yield url
    finally:
        await drop_schema(url)


@contextmanager
def fresh_schema_sync() -> Iterator[str]:
    """:func:`fresh_schema` for code outside ``trio.run`` (sync tests and fixtures)."""
    url = trio.run(create_schema)
    try:
        yield url
    finally:
        trio.run(drop_schema, url)
