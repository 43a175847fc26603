"""The ``agentws`` command line under test: :class:`Cli` and its fixtures.

Shared by the CLI test modules. Every run gets a clean environment (no
``AGENTWS_*`` of the developer's) and ``cwd=tmp_path``; no run may print a
Python traceback: :meth:`Cli.run` checks that for all of them.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from agentws.settings.secret_box import KEY_FILE
from agentws.store import open_store
from tests.support import clean_env, fresh_schema_sync

# One CLI run: interpreter start, store open and migration, one command.
RUN_S = 60.0
#: The native connectors' default hosts, allow-listed: a connector saved with an
#: allow-listed host name is not looked up, and no test may ask DNS for a name
#: (tests/conftest.py). Pass it as the ``env`` of a command that saves one.
NATIVE_HOSTS = {"AGENTWS_CONNECTOR_ALLOWLIST": "api.github.com,slack.com,api.stripe.com"}


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
        command = [*args]
        if database:
            command += ["--database", self.database]
        if command and command[0] == "serve":
            result = _in_subprocess(command, self.cwd, clean_env(**(env or {})), input)
        else:
            result = _in_process(command, self.cwd, clean_env(**(env or {})), input)
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
    """``cli`` once its database exists, with the agentws schema and nothing in it.

    Only ``init`` and ``serve`` create a database (the other commands refuse
    one that is not there); this is what ``init`` leaves, before its admin
    and key, so tests of ``init`` itself still see it make them.
    """

    async def create() -> None:
        async with open_store(cli.database, pool_size=1):
            pass

    trio.run(create)
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
    """The CLI on SQLite, then on a fresh PostgreSQL schema (created, empty)."""
    if request.param == "sqlite":
        yield created(Cli(tmp_path, f"sqlite:///{tmp_path / 'a.db'}"))
        return
    with fresh_schema_sync() as url:
        yield created(Cli(tmp_path, url))


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


def _in_process(
    argv: list[str], cwd: Path, env: dict[str, str], input: str | None
) -> subprocess.CompletedProcess[str]:
    """``agentws ARGV`` run by :func:`agentws.cli.main` in this process, as a program would be.

    A program of its own per command costs an interpreter start and every
    import (most of a CLI test's time); this runs ``main`` in a thread of its
    own (it calls ``trio.run``, and the test may be inside one) with the
    process's environment, working directory and standard streams swapped
    for the command's, then put back. Tests run one at a time, so nothing
    else sees the swap. An exception escaping ``main`` is printed as the
    traceback a program would print.
    """
    from agentws.cli import main

    out, err = _stream(), _stream()
    status: list[int] = []

    def program() -> None:
        saved_env, saved_cwd, saved_stdin = dict(os.environ), os.getcwd(), sys.stdin
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        sys.stdin = _stream((input or "").encode())
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    status.append(main(argv))
                except SystemExit as exit_:
                    code = exit_.code
                    status.append(code if isinstance(code, int) else (0 if code is None else 1))
                except BaseException:
                    traceback.print_exc(file=err)
                    status.append(1)
        finally:
            sys.stdin = saved_stdin
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)

    thread = threading.Thread(target=program, name="agentws-cli")
    thread.start()
    thread.join(RUN_S)
    assert not thread.is_alive(), f"agentws {' '.join(argv)} did not end within {RUN_S} s"
    return subprocess.CompletedProcess(["agentws", *argv], status[0], _text(out), _text(err))


def _stream(data: bytes = b"") -> io.TextIOWrapper:
    """A text stream with a byte ``buffer`` under it, as the standard streams have."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=None)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8")
