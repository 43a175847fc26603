"""Fixtures every test package may use: a SQLite URL and a fresh PostgreSQL schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import fresh_schema_sync


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL schema of this test's own (a sync fixture, so it may call trio.run)."""
    with fresh_schema_sync() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'agentws.db'}"
