"""A benchmark's own agentws: database, workspace, group, token, library, documents.

Everything goes through the ``agentws`` CLI as an operator would do it,
into a fresh SQLite database in the run's temp directory, except the
documents: those go through the library functions the CLI's ``doc add``
calls, all in one process (see :mod:`benchlib.add_documents`), and the
connectors of the tools/list measure, whose tools go straight into the
tool cache (see :mod:`benchlib.add_connectors`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from benchlib.procs import BenchError, read_json

__all__ = ["AgentwsSite", "add_connectors", "agentws_env", "set_up_agentws"]

WORKSPACE = "acme"
GROUP = "ops"
LIBRARY = "handbook"


@attrs.frozen
class AgentwsSite:
    database_url: str
    database_path: Path
    token: str
    workspace: str = WORKSPACE
    group: str = GROUP
    library: str = LIBRARY

    @property
    def path(self) -> str:
        return f"/mcp/g/{self.workspace}/{self.group}"


def agentws_bin() -> Path:
    return Path(sys.executable).parent / "agentws"


def agentws_env(database_url: str, **extra: str) -> dict[str, str]:
    """The environment of an agentws child: quiet, on this database, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTWS_")}
    env.update(
        AGENTWS_DATABASE_URL=database_url,
        AGENTWS_LOG_LEVEL="WARNING",
        # The offline model: nothing here may reach the internet.
        ANTHROPIC_API_KEY="",
    )
    env.update(extra)
    return env


def run_cli(
    env: dict[str, str], *args: str, cwd: Path | None = None, stdin: str | None = None
) -> dict[str, Any]:
    """Run ``agentws ARGS --json`` and return what it printed; BenchError when it fails."""
    argv = [str(agentws_bin()), *args, "--json"]
    done = subprocess.run(
        argv, env=env, cwd=cwd, input=stdin, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise BenchError(f"`agentws {' '.join(args)}` failed:\n{done.stderr.strip()[-3000:]}")
    return read_json(done.stdout, f"`agentws {' '.join(args)}` output")


def _add_documents(env: dict[str, str], database_url: str, paths: Sequence[Path]) -> None:
    script = Path(__file__).with_name("add_documents.py")
    argv = [sys.executable, str(script), database_url, WORKSPACE, LIBRARY, "on_demand"]
    done = subprocess.run(
        [*argv, *map(str, paths)], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise BenchError(f"adding the documents failed:\n{done.stderr.strip()[-3000:]}")


def set_up_agentws(
    directory: Path, documents: Sequence[Path], database_url: str | None = None
) -> AgentwsSite:
    """Create the database in ``directory`` and everything the MCP benchmark needs in it.

    With ``database_url`` (an empty PostgreSQL database), there instead.
    """
    database_path = directory / "agentws.db"
    database_url = database_url or f"sqlite:///{database_path}"
    env = agentws_env(database_url)
    run_cli(env, "init")
    run_cli(env, "workspace", "create", WORKSPACE)
    run_cli(env, "group", "create", WORKSPACE, GROUP)
    token = run_cli(env, "token", "create", WORKSPACE, GROUP, "--name", "bench")["token"]
    run_cli(env, "library", "create", WORKSPACE, LIBRARY)
    run_cli(env, "library", "attach", WORKSPACE, GROUP, LIBRARY)
    _add_documents(env, database_url, documents)
    return AgentwsSite(database_url=database_url, database_path=database_path, token=token)


def add_connectors(site: AgentwsSite, connectors: int, tools_each: int) -> dict[str, int]:
    """Attach ``connectors`` remote MCP connectors with ``tools_each`` cached tools to the group."""
    script = Path(__file__).with_name("add_connectors.py")
    argv = [
        sys.executable,
        str(script),
        site.database_url,
        site.workspace,
        site.group,
        str(connectors),
        str(tools_each),
    ]
    env = agentws_env(site.database_url)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"adding the connectors failed:\n{done.stderr.strip()[-3000:]}")
    added: dict[str, int] = read_json(done.stdout, "add_connectors.py output")
    return added
