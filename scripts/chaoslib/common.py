"""What the chaos scenarios share: outcomes, sites, agentws processes, bounded waits.

Every wait here has a deadline and polls; nothing sleeps "a bit" hoping a
thing is done. Times are ``time.monotonic()`` seconds throughout.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx2
import trio
from benchlib.agentws_setup import agentws_bin, agentws_env
from benchlib.procs import Child, Processes, read_json

__all__ = [
    "FAKE_API",
    "Outcome",
    "ScenarioError",
    "Server",
    "ServerDied",
    "Site",
    "Skip",
    "cli",
    "free_port",
    "log_lines",
    "log_record",
    "now",
    "poll_until",
    "say",
    "set_up_site",
    "start_agentws",
    "start_fake_model",
    "stop_process",
    "wait_ready",
]

SCRIPTS = Path(__file__).resolve().parents[1]
FAKE_API = SCRIPTS / "benchlib" / "fake_messages_api.py"

WORKSPACE = "acme"
GROUP = "ops"
CHANNEL = "local:ops"
PROMPT = "Summarise the event in one line."
# From exec to /readyz 200 (imports, migrations, binding).
START_S = 30.0
# Attempts at a CLI call that crashed with a traceback (others may be editing agentws).
_CLI_ATTEMPTS = 3
_CLI_PAUSE_S = 3.0


class ScenarioError(Exception):
    """The scenario could not run (set-up failed, a server did not start): exit status 1."""


class ServerDied(ScenarioError):
    """A server exited in the middle of a scenario: agentws failed, the scenario did run."""


class Skip(Exception):
    """The scenario cannot run on this machine (the reason is the message)."""


def say(text: str) -> None:
    print(f"[chaos] {text}", file=sys.stderr, flush=True)


def now() -> float:
    return time.monotonic()


@attrs.define
class Outcome:
    """What one scenario found: losses, recovery times, checks that failed, what it saw."""

    name: str
    title: str
    #: ``pass``; ``fail`` (lost, duplicated, or a check failed); ``error`` (could not
    #: run); ``skipped``.
    status: str = "pass"
    #: Accepted deliveries that did not end as one done event with one message (None: n/a).
    lost: int | None = None
    #: Events posted more than once, or stored twice for one delivery (None: n/a).
    duplicated: int | None = None
    #: The headline recovery figure, for the table.
    recovery: str = "—"
    #: Everything measured, for the JSON (seconds unless the name says otherwise).
    figures: dict[str, Any] = attrs.field(factory=dict)
    #: Checks that failed (each makes the scenario ``fail``).
    problems: list[str] = attrs.field(factory=list)
    #: Things agentws did that are worth knowing but lose nothing.
    notes: list[str] = attrs.field(factory=list)
    seconds: float = 0.0
    error: str | None = None

    def check(self, ok: bool, problem: str) -> bool:
        if not ok:
            self.problems.append(problem)
        return ok

    def settle(self) -> None:
        if self.status in ("error", "skipped"):
            return
        if self.problems or (self.lost or 0) > 0 or (self.duplicated or 0) > 0:
            self.status = "fail"

    def as_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def poll_until(
    check: Callable[[], Awaitable[bool]],
    timeout_s: float,
    *,
    interval_s: float = 0.05,
    alive: Sequence[Child] = (),
    what: str = "",
) -> float | None:
    """Await ``check()`` until true: the time it was; None after ``timeout_s``.

    :raises ScenarioError: a process of ``alive`` exited meanwhile.
    """
    deadline = now() + timeout_s
    while True:
        if await check():
            return now()
        for child in alive:
            if child.process.poll() is not None:
                raise ServerDied(
                    f"{child.name} exited ({child.process.returncode}) while waiting for "
                    f"{what or 'a condition'}\n{child.log_tail(20)}"
                )
        if now() >= deadline:
            return None
        await trio.sleep(interval_s)


def log_lines(child: Child, needle: str) -> list[str]:
    """The lines of ``child``'s log (stderr) containing ``needle``."""
    try:
        text = child.log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if needle in line]


def log_record(line: str) -> dict[str, Any]:
    """A log line as a record: agentws logs JSON lines; anything else is its own message."""
    try:
        record = json.loads(line)
    except ValueError:
        return {"message": line}
    return record if isinstance(record, dict) else {"message": line}


def cli(site: Site, *args: str) -> Any:
    """``agentws ARGS --json`` on ``site``'s database: its JSON output (sync; quick)."""
    argv = [str(agentws_bin()), *args, "--json"]
    done = subprocess.run(
        argv, env=site.env(), cwd=site.directory, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        raise ScenarioError(f"`agentws {' '.join(args)}` failed:\n{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


# --- set-up through the CLI, as an operator would ------------------------------------------


@attrs.frozen
class Site:
    directory: Path
    database_url: str
    #: ``/hooks/<token>``.
    hook_path: str
    #: An MCP token of the group (when the site has one).
    token: str | None = None

    def env(self, **extra: str) -> dict[str, str]:
        return agentws_env(self.database_url, AGENTWS_DATA_DIR=str(self.directory), **extra)


def _cli(env: dict[str, str], cwd: Path, *args: str) -> dict[str, Any]:
    argv = [str(agentws_bin()), *args, "--json"]
    for attempt in range(1, _CLI_ATTEMPTS + 1):
        done = subprocess.run(
            argv, env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=60
        )
        if done.returncode == 0:
            return read_json(done.stdout, f"`agentws {' '.join(args)}` output")
        # A traceback before any work (an import broken mid-edit) is worth another try.
        if "Traceback" not in done.stderr or attempt == _CLI_ATTEMPTS:
            break
        say(f"`agentws {args[0]} {args[1] if len(args) > 1 else ''}` crashed; trying again")
        time.sleep(_CLI_PAUSE_S)
    raise ScenarioError(f"`agentws {' '.join(args)}` failed:\n{done.stderr.strip()[-2000:]}")


def set_up_site(
    directory: Path,
    database_url: str,
    *,
    webhook_concurrency: int = 16,
    group: bool = False,
    document: Path | None = None,
) -> Site:
    """A workspace with one webhook (no signature, no effective rate limit) posting to local:ops.

    With ``group``, also a group ``ops`` and an MCP token for it; with
    ``document``, a library attached to the group holding that document
    (``on_demand``: an MCP resource).
    """
    directory.mkdir(parents=True, exist_ok=True)
    env = agentws_env(database_url, AGENTWS_DATA_DIR=str(directory), AGENTWS_BIND="127.0.0.1:0")
    _cli(env, directory, "init")
    _cli(env, directory, "workspace", "create", WORKSPACE)
    created = _cli(
        env, directory, "webhook", "create", WORKSPACE, "--name", "chaos",
        "--channel", CHANNEL, "--prompt", PROMPT, "--rate", "100000/min",
        "--burst", "100000", "--concurrency", str(webhook_concurrency),
    )  # fmt: skip
    path = urlsplit(str(created.get("url", ""))).path
    if not path.startswith("/hooks/"):
        raise ScenarioError(f"`agentws webhook create` printed no webhook URL: {created!r}")
    token = None
    if group or document is not None:
        _cli(env, directory, "group", "create", WORKSPACE, GROUP)
        issued = _cli(env, directory, "token", "create", WORKSPACE, GROUP, "--name", "chaos")
        token = str(issued["token"])
    if document is not None:
        _cli(env, directory, "library", "create", WORKSPACE, "handbook")
        _cli(env, directory, "library", "attach", WORKSPACE, GROUP, "handbook")
        _cli(
            env, directory, "doc", "add", WORKSPACE, "handbook", str(document),
            "--policy", "on_demand",
        )  # fmt: skip
    return Site(directory=directory, database_url=database_url, hook_path=path, token=token)


# --- processes ---------------------------------------------------------------------------


@attrs.define(eq=False)
class Server:
    child: Child
    port: int
    started_at: float
    ready_at: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.child.pid


async def wait_ready(
    child: Child, url: str, timeout_s: float = START_S, *, interval_s: float = 0.02
) -> float:
    """Poll ``url`` until it answers 200: the time it did.

    :raises ScenarioError: ``child`` exited, or ``timeout_s`` went by.
    """
    last = "no answer"
    async with httpx2.AsyncClient(timeout=2.0) as client:

        async def ready() -> bool:
            nonlocal last
            try:
                response = await client.get(url)
            except httpx2.TransportError as exc:
                last = type(exc).__name__
                return False
            last = f"HTTP {response.status_code} {response.text[:120]}"
            return response.status_code == 200

        try:
            at = await poll_until(ready, timeout_s, interval_s=interval_s, alive=[child], what=url)
        except ServerDied as exc:
            raise ScenarioError(f"{child.name} did not start: {exc}") from None
    if at is None:
        raise ScenarioError(
            f"{child.name} not ready at {url} in {timeout_s:g} s (last: {last})\n"
            f"{child.log_tail(20)}"
        )
    return at


async def start_agentws(procs: Processes, site: Site, name: str, port: int, **env: str) -> Server:
    """``agentws serve`` on ``127.0.0.1:port`` for ``site``, once ``/readyz`` answers 200."""
    environment = site.env(
        AGENTWS_BIND=f"127.0.0.1:{port}", AGENTWS_INSTANCE_ID=name, AGENTWS_LOG_LEVEL="INFO", **env
    )
    started = now()
    child = procs.start(name, [str(agentws_bin()), "serve"], env=environment)
    server = Server(child=child, port=port, started_at=started)
    server.ready_at = await wait_ready(child, f"{server.base_url}/readyz")
    return server


async def stop_process(
    procs: Processes, child: Child, sig: signal.Signals, timeout_s: float
) -> tuple[int | None, float]:
    """Send ``sig`` and wait (polling, so other tasks go on) up to ``timeout_s``.

    Returns the exit status (None: still running after ``timeout_s``, then
    killed) and how long it took to exit.
    """
    started = now()
    if child.process.poll() is None:
        os.kill(child.pid, sig)
    exited = await poll_until(
        lambda: _exited(child), timeout_s, interval_s=0.01, what=f"{child.name} to exit"
    )
    status = child.process.returncode if exited is not None else None
    procs.stop(child, grace_s=2.0)
    return status, (exited or now()) - started


async def _exited(child: Child) -> bool:
    return child.process.poll() is not None


async def start_fake_model(procs: Processes, name: str, *args: str) -> tuple[Child, dict[str, str]]:
    """The local Messages API (``benchlib/fake_messages_api.py ARGS``); agentws's env for it."""
    from benchlib.fake_messages_api import API_KEY

    child = procs.start(name, [sys.executable, str(FAKE_API), *args])
    line = await trio.to_thread.run_sync(child.read_json_line, START_S)
    base_url = str(line["base_url"])
    await wait_ready(child, base_url + "/readyz")
    return child, {"ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": base_url}


async def model_stats(base_url: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(timeout=5.0) as client:
        response = await client.get(base_url + "/stats")
    stats: dict[str, Any] = json.loads(response.text)
    return stats
