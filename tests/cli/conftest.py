"""The ``agentws`` command line under test: :class:`Cli` and its fixtures.

Shared by the CLI test modules. Every run gets a clean environment (no
``AGENTWS_*`` of the developer's) and ``cwd=tmp_path``; no run may print a
Python traceback: :meth:`Cli.run` checks that for all of them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from agentws.settings.secret_box import KEY_FILE
from tests.in_process import run_cli
from tests.support import clean_env, migrated_schema_sync, migrated_sqlite_url

# One ``serve`` run as a program: interpreter start, store open and migration.
RUN_S = 60.0
#: The native connectors' default hosts, allow-listed: a connector saved with an
#: allow-listed host name is not looked up, and no test may ask DNS for a name
#: (tests/conftest.py). Pass it as the ``env`` of a command that saves one.
NATIVE_HOSTS = {"AGENTWS_CONNECTOR_ALLOWLIST": "api.github.com,slack.com,api.stripe.com"}


@attrs.frozen
class Cli:
    """Runs ``agentws`` in ``cwd`` against ``database`` (unless told not to).

    Every command but ``serve`` runs in this process (:func:`tests.in_process.run_cli`);
    ``serve`` runs as ``python -m agentws``. ``input`` is text for the command's stdin
    (empty without it).
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
        command = [*args]
        if database:
            command += ["--database", self.database]
        if command and command[0] == "serve":
            result = _in_subprocess(command, self.cwd, clean_env(**(env or {})), input)
        else:
            result = run_cli(command, cwd=self.cwd, env=clean_env(**(env or {})), input=input)
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


def created(cli: Cli) -> Cli:
    """``cli`` once its SQLite database exists, with the agentws schema and nothing in it.

    Only ``init`` and ``serve`` create a database (the other commands refuse
    one that is not there); this is what ``init`` leaves, before its admin
    and key, so tests of ``init`` itself still see it make them. It is a copy
    of a database migrated once (:func:`tests.support.migrated_sqlite_url`).
    """
    trio.run(migrated_sqlite_url, cli.cwd / "a.db")
    return cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """The CLI on a SQLite file of this test's own (created, empty)."""
    return created(Cli(tmp_path, f"sqlite:///{tmp_path / 'a.db'}"))


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def any_cli(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cli]:
    """The CLI on SQLite, then on a PostgreSQL schema of its own (created, empty)."""
    if request.param == "sqlite":
        yield created(Cli(tmp_path, f"sqlite:///{tmp_path / 'a.db'}"))
        return
    with migrated_schema_sync() as url:
        yield Cli(tmp_path, url)


def seeded_copy(template: Path, tmp_path: Path) -> Cli:
    """The CLI on a copy of ``template``'s seeded SQLite database ``a.db`` (and its key)."""
    for path in template.iterdir():
        if path.name.startswith("a.db") or path.name == KEY_FILE:
            shutil.copy(path, tmp_path / path.name)
    return Cli(tmp_path, f"sqlite:///{tmp_path / 'a.db'}")


def _in_subprocess(
    argv: list[str], cwd: Path, env: dict[str, str], input: str | None
) -> subprocess.CompletedProcess[str]:
    """``python -m agentws ARGV`` as a program of its own (``serve`` installs signal handlers)."""
    return subprocess.run(
        [sys.executable, "-m", "agentws", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_S,
        check=False,
        input=input,
    )
