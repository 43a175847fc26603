"""PostgreSQL for the benchmarks: ``psql``, and a fresh schema or database for one run.

The modes that measure agentws on PostgreSQL (``approvals``, ``dashboard``,
``sessions``, ``webhooks --instances``) make what they need beside the
database ``--database-url`` names, and drop it afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from benchlib.procs import BenchError

__all__ = ["fresh_database", "fresh_schema", "psql", "store_url", "stores_arg"]


def psql(base_url: str, sql: str) -> str:
    """Run ``sql`` with ``psql`` on ``base_url``'s database; what it printed, unaligned."""
    parts = urlsplit(base_url)
    argv = [
        "psql",
        "-X",
        "-q",
        "-t",
        "-A",
        "-h",
        parts.hostname or "127.0.0.1",
        "-p",
        str(parts.port or 5432),
        "-U",
        parts.username or "postgres",
        "-d",
        parts.path.lstrip("/") or "postgres",
        "-c",
        sql,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"psql failed ({sql[:60]}…): {done.stderr.strip()}")
    return done.stdout.strip()


@contextlib.contextmanager
def fresh_schema(base_url: str) -> Iterator[tuple[str, str]]:
    """A new schema in ``base_url``'s database: agentws's URL for it and its name; dropped after."""
    schema = f"bench_{secrets.token_hex(6)}"
    psql(base_url, f'CREATE SCHEMA "{schema}"')
    joiner = "&" if "?" in base_url else "?"
    try:
        yield f"{base_url}{joiner}search_path={schema}", schema
    finally:
        psql(base_url, f'DROP SCHEMA "{schema}" CASCADE')


@contextlib.contextmanager
def fresh_database(base_url: str, prefix: str) -> Iterator[str]:
    """A new database beside ``base_url``'s: its URL; dropped after."""
    name = f"{prefix}_{secrets.token_hex(6)}"
    psql(base_url, f'CREATE DATABASE "{name}"')
    head, _, tail = base_url.partition("?")
    url = head.rsplit("/", 1)[0] + "/" + name + ("?" + tail if tail else "")
    try:
        yield url
    finally:
        psql(base_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def store_url(store: str, work: Path, base_url: str) -> Iterator[str]:
    """The URL of an empty database on ``store``: a SQLite file, or a fresh PostgreSQL schema."""
    if store == "sqlite":
        yield f"sqlite:///{work / 'agentws.db'}"
        return
    with fresh_schema(base_url) as (url, _):
        yield url


def stores_arg(text: str) -> list[str]:
    """``--stores``: ``sqlite``, ``postgres`` or both, comma-separated, in order."""
    stores = [part.strip() for part in text.split(",") if part.strip()]
    if not stores or any(store not in ("sqlite", "postgres") for store in stores):
        raise argparse.ArgumentTypeError(f"expected sqlite, postgres or both, got {text!r}")
    return stores
