"""The ``agentws`` command line under test: :class:`Cli` and its fixtures.

Shared by the CLI test modules. Every run gets a clean environment (no
``AGENTWS_*`` of the developer's) and ``cwd=tmp_path``; no run may print a
Python traceback: :meth:`Cli.run` checks that for all of them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.support import clean_env, fresh_schema_sync

# One CLI run: interpreter start, store open and migration, one command.
RUN_S = 60.0


@attrs.frozen
class Cli:
    """Runs ``python -m agentws`` in ``cwd`` against ``database`` (unless told not to).

    ``input`` is text for the command's stdin; without it stdin is inherited.
    """

    cwd: Path
    database: str

    def run(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        database: bool = True,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "agentws", *args]
        if database:
            command += ["--database", self.database]
        result = subprocess.run(
            command,
            cwd=self.cwd,
            env=clean_env(**(env or {})),
            capture_output=True,
            text=True,
            timeout=RUN_S,
            check=False,
            input=input,
        )
        assert "Traceback" not in result.stdout + result.stderr, result.stderr
        return result

    def ok(self, *args: str, env: dict[str, str] | None = None, input: str | None = None) -> str:
        """Run a command that must succeed; its stdout."""
        result = self.run(*args, env=env, input=input)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        return result.stdout

    def json(self, *args: str, env: dict[str, str] | None = None, input: str | None = None) -> Any:
        """Run a command with ``--json`` that must succeed; its parsed stdout."""
        return json.loads(self.ok(*args, "--json", env=env, input=input))

    def fails(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        database: bool = True,
        input: str | None = None,
    ) -> str:
        """Run a command that must fail with status 1 and print nothing on stdout; its stderr."""
        result = self.run(*args, env=env, database=database, input=input)
        assert result.returncode == 1, (result.stdout, result.stderr)
        assert result.stdout == ""
        assert result.stderr.startswith("agentws: error: ")
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        return result.stderr

    def fails_json(self, *args: str, env: dict[str, str] | None = None) -> dict[str, str]:
        """Like :meth:`fails` with ``--json``: the error object printed on stderr."""
        result = self.run(*args, "--json", env=env)
        assert result.returncode == 1, (result.stdout, result.stderr)
        assert result.stdout == ""
        document = json.loads(result.stderr)
        assert set(document) == {"error"}
        error = document["error"]
        assert set(error) == {"code", "message"}
        assert error["message"]
        return dict(error)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """The CLI on a SQLite file of this test's own."""
    return Cli(tmp_path, f"sqlite:///{tmp_path / 'a.db'}")


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def any_cli(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cli]:
    """The CLI on SQLite, then on a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield Cli(tmp_path, f"sqlite:///{tmp_path / 'a.db'}")
        return
    with fresh_schema_sync() as url:
        yield Cli(tmp_path, url)
