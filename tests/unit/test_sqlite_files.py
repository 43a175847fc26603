"""The SQLite store's files on disk: only their owner may read them.

The database holds token hashes, sealed secrets and every webhook body, so
the file SQLite creates, and the write-ahead log and shared-memory index
beside it, are 0600 whatever the process's umask (which usually leaves
new files readable by everyone).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentws.domain.models import Workspace
from agentws.store import open_store


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """The usual umask (022): what a file gets when nobody asks for less."""
    saved = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(saved)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _modes(directory: Path) -> dict[str, int]:
    return {p.name: _mode(p) for p in directory.iterdir()}


@pytest.mark.usefixtures("permissive_umask")
async def test_a_new_database_and_its_wal_and_shm_files_are_private(tmp_path: Path) -> None:
    db = tmp_path / "agentws.db"
    async with open_store(f"sqlite:///{db}", pool_size=1) as store:
        await store.insert(Workspace(slug="acme", name="Acme"))
        files = _modes(tmp_path)
    assert files == {
        "agentws.db": 0o600,
        "agentws.db-wal": 0o600,
        "agentws.db-shm": 0o600,
    }


@pytest.mark.usefixtures("permissive_umask")
async def test_an_existing_database_keeps_the_mode_its_operator_gave_it(tmp_path: Path) -> None:
    db = tmp_path / "agentws.db"
    async with open_store(f"sqlite:///{db}", pool_size=1):
        pass
    db.chmod(0o640)  # e.g. readable by a backup group
    async with open_store(f"sqlite:///{db}", pool_size=1) as store:
        await store.insert(Workspace(slug="acme", name="Acme"))
        assert _mode(db) == 0o640
        assert _mode(tmp_path / "agentws.db-wal") == 0o640
