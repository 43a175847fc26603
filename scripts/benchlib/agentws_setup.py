"""A benchmark's own agentws: its environment, its set-up and ``agentws serve`` itself.

Everything goes through the ``agentws`` CLI as an operator would do it
(:func:`run_cli`), into a fresh SQLite database in the run's temp
directory, except the documents: those go through the library functions
the CLI's ``doc add`` calls, all in one process (see
:mod:`benchlib.add_documents`), and the connectors of the tools/list
measure, whose tools go straight into the tool cache (see
:mod:`benchlib.add_connectors`); such set-up scripts run through
:func:`run_script`. :func:`serve_agentws` starts the server every mode
measures.

The agentws run is the one Python imports: this checkout's when it is
installed editable here, or whatever ``PYTHONPATH`` says. A ``checkout``
(:func:`agentws_env`, :class:`AgentwsSite`) puts another checkout's
``agentws`` first instead, so one run can stand two versions side by side.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import httpx2

from benchlib.procs import BenchError, Child, Processes, read_json, retrying, start_server

__all__ = [
    "AgentwsSite",
    "add_connectors",
    "agentws_bin",
    "agentws_env",
    "run_cli",
    "run_script",
    "serve_agentws",
    "set_up_admin",
    "set_up_agentws",
    "sign_in",
]

_LIB = Path(__file__).resolve().parent
# Seconds agentws gets to start answering.
_START_TIMEOUT_S = 60.0

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
    #: The checkout whose agentws serves this site (None: the one Python imports).
    checkout: Path | None = None

    @property
    def path(self) -> str:
        return f"/mcp/g/{self.workspace}/{self.group}"


def agentws_bin() -> Path:
    return Path(sys.executable).parent / "agentws"


def agentws_env(database_url: str, checkout: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of an agentws child: quiet, on this database, plus ``extra``.

    With ``checkout``, that checkout's ``agentws`` package is the one imported.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTWS_")}
    env.update(
        AGENTWS_DATABASE_URL=database_url,
        AGENTWS_LOG_LEVEL="WARNING",
        # The offline model: nothing here may reach the internet.
        ANTHROPIC_API_KEY="",
    )
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    env.update(extra)
    return env


def run_cli(
    env: dict[str, str], *args: str, cwd: Path | None = None, stdin: str | None = None
) -> Any:
    """Run ``agentws ARGS --json`` and return what it printed; BenchError when it fails."""
    argv = [str(agentws_bin()), *args, "--json"]
    done = subprocess.run(
        argv, env=env, cwd=cwd, input=stdin, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise BenchError(f"`agentws {' '.join(args)}` failed:\n{done.stderr.strip()[-3000:]}")
    return read_json(done.stdout, f"`agentws {' '.join(args)}` output")


def run_script(
    script: str,
    args: Sequence[str],
    env: dict[str, str],
    *,
    timeout_s: float | None = None,
) -> Any:
    """Run ``benchlib/<script> ARGS`` (a set-up step) and return the JSON it printed.

    :raises BenchError: it failed, printed no JSON, or ran over ``timeout_s``.
    """
    argv = [sys.executable, str(_LIB / script), *args]
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, check=False, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        raise BenchError(f"{script} did not finish in {timeout_s:g} s") from None
    if done.returncode != 0:
        raise BenchError(f"{script} failed:\n{done.stderr.strip()[-3000:]}")
    return read_json(done.stdout, f"{script} output")


def serve_agentws(
    procs: Processes,
    name: str,
    env: dict[str, str],
    say: Any,
    *,
    ready_path: str = "/readyz",
    attempts: int = 1,
) -> tuple[Child, str]:
    """``agentws serve`` on ``env`` (which binds a free port); the child and its base URL.

    Waits until ``ready_path`` answers (200 for ``/readyz``, anything for
    another path); a failed start is tried ``attempts`` times in all.
    """
    argv = [str(agentws_bin()), "serve", "--json"]
    serve_env = {"AGENTWS_BIND": "127.0.0.1:0", **env}
    want = 200 if ready_path == "/readyz" else None

    def start() -> tuple[Child, str]:
        child, line = start_server(
            procs,
            name,
            argv,
            env=serve_env,
            timeout_s=_START_TIMEOUT_S,
            ready=lambda line: str(line["base_url"]) + ready_path,
            want_status=want,
        )
        return child, str(line["base_url"])

    return retrying(f"starting {name}", start, say, attempts=attempts)


def set_up_agentws(
    directory: Path,
    documents: Sequence[Path],
    database_url: str | None = None,
    checkout: Path | None = None,
) -> AgentwsSite:
    """Create the database in ``directory`` and everything the MCP benchmark needs in it.

    With ``database_url`` (an empty PostgreSQL database), there instead;
    with ``checkout``, through that checkout's agentws.
    """
    database_path = directory / "agentws.db"
    database_url = database_url or f"sqlite:///{database_path}"
    env = agentws_env(database_url, checkout)
    run_cli(env, "init")
    run_cli(env, "workspace", "create", WORKSPACE)
    run_cli(env, "group", "create", WORKSPACE, GROUP)
    token = run_cli(env, "token", "create", WORKSPACE, GROUP, "--name", "bench")["token"]
    run_cli(env, "library", "create", WORKSPACE, LIBRARY)
    run_cli(env, "library", "attach", WORKSPACE, GROUP, LIBRARY)
    run_script(
        "add_documents.py",
        [database_url, WORKSPACE, LIBRARY, "on_demand", *map(str, documents)],
        env,
    )
    return AgentwsSite(
        database_url=database_url, database_path=database_path, token=token, checkout=checkout
    )


def add_connectors(site: AgentwsSite, connectors: int, tools_each: int) -> dict[str, int]:
    """Attach ``connectors`` remote MCP connectors with ``tools_each`` cached tools to the group."""
    args = [site.database_url, site.workspace, site.group, str(connectors), str(tools_each)]
    added: dict[str, int] = run_script(
        "add_connectors.py", args, agentws_env(site.database_url, site.checkout)
    )
    return added


def set_up_admin(env: dict[str, str], cwd: Path, token_name: str, admin: str) -> str:
    """``agentws init``, the workspace, the group, an MCP token and an admin; his password."""
    run_cli(env, "init", cwd=cwd)
    run_cli(env, "workspace", "create", WORKSPACE, cwd=cwd)
    run_cli(env, "group", "create", WORKSPACE, GROUP, cwd=cwd)
    run_cli(env, "token", "create", WORKSPACE, GROUP, "--name", token_name, cwd=cwd)
    return str(run_cli(env, "admin", "create", admin, cwd=cwd)["password"])


def sign_in(http: httpx2.Client, username: str, password: str) -> None:
    """Sign ``username`` in to the dashboard on ``http`` (its cookies kept there)."""
    form = http.get("/dashboard/login")
    token = re.search(r'name="login_token" value="([^"]*)"', form.text)
    if token is None:
        raise BenchError("the sign-in page has no login_token")
    answer = http.post(
        "/dashboard/login",
        data={"login_token": token[1], "username": username, "password": password, "next": ""},
    )
    if answer.status_code != 302:
        raise BenchError(f"signing in answered {answer.status_code}")
