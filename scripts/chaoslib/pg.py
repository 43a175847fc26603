"""A private PostgreSQL cluster in a temp directory, to stop and start at will.

The database restart scenario must not touch a shared cluster, so it makes
its own: ``initdb`` (trust auth, user ``postgres``) in a temp directory
owned by the ``postgres`` OS user, ``pg_ctl start`` on a free loopback port
(its Unix socket in the same directory), ``pg_ctl stop -m fast`` and start
again during the scenario, and ``pg_ctl stop -m immediate`` plus the
directory removed at the end, however the run ends. PostgreSQL refuses to
run as root: as root, every command runs as ``postgres`` through
``runuser``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import trio

from chaoslib.common import ScenarioError, free_port, say

__all__ = ["PG_BIN", "PrivatePostgres", "missing_postgres", "private_postgres"]

PG_BIN = Path(os.environ.get("CHAOS_PG_BIN", "/usr/lib/postgresql/15/bin"))
_OS_USER = "postgres"
_TIMEOUT_S = 60


def missing_postgres() -> str | None:
    """Why a private cluster cannot be made here; None when it can."""
    for tool in ("initdb", "pg_ctl", "postgres"):
        if not (PG_BIN / tool).is_file():
            return f"no PostgreSQL binaries: {PG_BIN / tool} is missing (set CHAOS_PG_BIN)"
    if shutil.which("psql") is None:
        return "psql is not on PATH"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(_OS_USER)
        except KeyError:
            return f"running as root and there is no '{_OS_USER}' OS user to run PostgreSQL as"
        if shutil.which("runuser") is None:
            return "running as root and runuser is missing"
    return None


class PrivatePostgres:
    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        self.data = root / "data"
        self.log = root / "postgres.log"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _argv(self, tool: str, *args: str) -> list[str]:
        argv = [str(PG_BIN / tool), *args]
        if os.geteuid() == 0:
            return ["runuser", "-u", _OS_USER, "--", *argv]
        return argv

    def run(self, tool: str, *args: str) -> str:
        done = subprocess.run(
            self._argv(tool, *args),
            capture_output=True,
            text=True,
            check=False,
            timeout=_TIMEOUT_S,
            cwd=self.root,
        )
        if done.returncode != 0:
            raise ScenarioError(
                f"{tool} {' '.join(args)} failed ({done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-1500:]}"
            )
        return done.stdout

    async def arun(self, tool: str, *args: str) -> str:
        """:meth:`run` in a thread, so other tasks (the senders) go on meanwhile."""
        return await trio.to_thread.run_sync(self.run, tool, *args)

    def init(self) -> None:
        self.run(
            "initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip

    def _options(self) -> str:
        return (
            f"-p {self.port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories={self.root} -c max_connections=60 "
            "-c shared_buffers=32MB"
        )

    async def start(self) -> None:
        await self.arun(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", self._options(),
            "-w", "-t", str(_TIMEOUT_S), "start",
        )  # fmt: skip

    async def stop(self, mode: str = "fast") -> None:
        await self.arun(
            "pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", str(_TIMEOUT_S), "stop"
        )

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def destroy(self) -> None:
        if self.running():
            with contextlib.suppress(ScenarioError, subprocess.TimeoutExpired):
                self.run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@contextlib.contextmanager
def private_postgres(keep: bool = False, log_to: Path | None = None) -> Iterator[PrivatePostgres]:
    """A fresh cluster; stopped and removed (unless ``keep``) when the block exits.

    Its log is copied to ``log_to`` first, when given.
    """
    root = Path(tempfile.mkdtemp(prefix="agentws-chaos-pg-"))
    os.chmod(root, 0o700)
    if os.geteuid() == 0:
        entry = pwd.getpwnam(_OS_USER)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    cluster = PrivatePostgres(root, free_port())
    try:
        cluster.init()
        yield cluster
    finally:
        if log_to is not None and cluster.log.exists():
            with contextlib.suppress(OSError):
                shutil.copyfile(cluster.log, log_to)
        if keep:
            if cluster.running():
                with contextlib.suppress(ScenarioError, subprocess.TimeoutExpired):
                    cluster.run("pg_ctl", "-D", str(cluster.data), "-m", "fast", "-w", "stop")
            say(f"kept the PostgreSQL cluster in {root}")
        else:
            cluster.destroy()
