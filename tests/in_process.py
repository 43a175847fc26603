"""``agentws ARGV`` run by :func:`agentws.cli.main` inside the test process, as a program would be.

A program of its own per command costs an interpreter start and every
import (most of a CLI test's time). :func:`run_cli` runs ``main`` in a
thread of its own instead (it calls ``trio.run``, and the caller may be
inside one), with the process's environment, working directory and
standard streams swapped for the command's, then put back, and answers
what :func:`subprocess.run` would: the exit status (``sys.exit`` codes
included), stdout and stderr. An exception escaping ``main`` is printed as
the traceback a program would print, with status 1.

The swap is the whole process's: one command runs at a time (a lock), and
nothing a test runs beside it may read the environment or rely on the
working directory meanwhile. A service served in the test's own trio run
read its settings when it started, so it may go on serving while a command
runs (:func:`run_cli_beside` awaits one in a worker thread).
``agentws serve`` installs signal handlers, which only a program's main
thread may: run it as a program.

Each command's variables are its own: the process's environment is put
back whole after every command, so nothing leaks from one command (or one
test) to the next.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import subprocess
import sys
import threading
import traceback

import trio

__all__ = ["RUN_S", "run_cli", "run_cli_beside"]

#: One command: store open and migration, one command (no interpreter start).
RUN_S = 60.0

_one_at_a_time = threading.Lock()


def run_cli(
    argv: list[str], *, cwd: str | os.PathLike[str], env: dict[str, str], input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``agentws ARGV`` in ``cwd`` with exactly the variables ``env``, reading ``input`` on
    stdin (empty without); its status, stdout and stderr.

    Error handling:
        Fails (AssertionError) if the command has not ended within :data:`RUN_S`.
    """
    from agentws.cli import main

    out, err = _stream(), _stream()
    status: list[int] = []

    def program() -> None:
        with _one_at_a_time:
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

    thread = threading.Thread(target=program, name="agentws-cli", daemon=True)
    thread.start()
    thread.join(RUN_S)
    assert not thread.is_alive(), f"agentws {' '.join(argv)} did not end within {RUN_S} s"
    return subprocess.CompletedProcess(["agentws", *argv], status[0], _text(out), _text(err))


async def run_cli_beside(
    argv: list[str], *, cwd: str | os.PathLike[str], env: dict[str, str], input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """:func:`run_cli` from a trio task, in a worker thread: the caller's trio run (a
    service it serves, remotes) goes on meanwhile, as it would beside a program."""
    return await trio.to_thread.run_sync(
        functools.partial(run_cli, argv, cwd=cwd, env=env, input=input)
    )


def _stream(data: bytes = b"") -> io.TextIOWrapper:
    """A text stream with a byte ``buffer`` under it, as the standard streams have."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=None)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8")
