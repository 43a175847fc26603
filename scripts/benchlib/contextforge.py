"""IBM ContextForge (PyPI ``mcp-contextforge-gateway`` 1.0.7.x) as a gateway for ``scripts/bench``.

:func:`install` makes a venv of its own for it (pip, from the package
registry this machine is configured with; its dependencies clash with
ours, so never our venv). :func:`start` runs it on loopback in front of an
MCP upstream the way its PyPI quick start does: the ``mcpgateway`` command
(uvicorn serving ``mcpgateway.main:app``), then over its REST API the
upstream registered as a gateway (Streamable HTTP), a virtual server
holding the upstream's tools, and an API token scoped to that server. MCP
clients then call ``/servers/<id>/mcp`` with that token (its MCP transport is
mounted there, outside the ``/v1`` REST API).

Settings are ContextForge's defaults except:

- its own SQLite database, temp directory (its lock files) and working
  directory (no stray ``.env`` or catalog file is read) under ``work/``;
- per-run secrets: ``JWT_SECRET_KEY``, ``AUTH_ENCRYPTION_SECRET``, the
  platform admin's and the basic-auth password (it refuses to start on
  placeholders);
- ``SSRF_ALLOW_LOCALHOST=true``: its SSRF protection refuses to register a
  loopback upstream otherwise;
- ``RATE_LIMITING_ENABLED=false``: the default limiter allows 100 MCP
  requests a minute per user (then locks the user out for 15 minutes); a
  throughput measure would measure the limiter;
- ``OTEL_SDK_DISABLED=true``: ContextForge's OpenTelemetry is off by
  default already, this keeps any exporter from reaching out.

Nothing leaves the machine: it binds 127.0.0.1, has no exporter, catalog
or SSO configured; it tries a Redis on localhost and falls back to memory.

With ``workers > 1`` uvicorn runs a supervisor (``child``) and that many
worker processes, which do the work: :attr:`ContextForge.pids` lists them
(with one worker it is ``(child.pid,)``), measure CPU on each of those.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import httpx2

from benchlib.mcp_client import CallError, initialize_params, parse_result
from benchlib.procs import BenchError, Child, Processes, wait_until_answering

__all__ = ["PACKAGE", "ContextForge", "install", "installed_version", "start"]

PACKAGE = "mcp-contextforge-gateway"
_REQUIREMENT = f"{PACKAGE}==1.0.7.*"
_DIST_PREFIX = "mcp_contextforge_gateway-"
# The platform admin ContextForge creates on first start (its default address).
_ADMIN_EMAIL = "admin@example.com"
# First start runs its migrations on a fresh database: tens of seconds on a busy 2-core machine.
_START_TIMEOUT_S = 300.0
_INSTALL_TIMEOUT_S = 1800.0
_API_TIMEOUT_S = 60.0
# How long the upstream's tools may take to show in the catalog after registration.
_DISCOVERY_TIMEOUT_S = 60.0


@attrs.frozen
class ContextForge:
    child: Child  # the ``mcpgateway`` process (uvicorn; the supervisor when workers > 1)
    url: str  # the Streamable HTTP MCP URL of the virtual server
    token: str  # bearer token for that URL
    tool: str  # the name under which ContextForge offers the upstream's `echo` tool
    version: str  # the installed package version
    pids: tuple[int, ...]  # the processes serving requests (the uvicorn workers)


def installed_version(venv_dir: Path) -> str | None:
    """The version of ContextForge installed in ``venv_dir``, None when there is none."""
    if not (venv_dir / "bin" / "mcpgateway").exists():
        return None
    for info in sorted(venv_dir.glob(f"lib/python3*/site-packages/{_DIST_PREFIX}*.dist-info")):
        return info.name.removeprefix(_DIST_PREFIX).removesuffix(".dist-info")
    return None


def install(venv_dir: Path, say: Callable[[str], None]) -> str | None:
    """Make a venv of its own at venv_dir with mcp-contextforge-gateway (pip, from the package
    registry configured on this machine); reuse it when present. None when ready, else the reason
    it cannot be installed (one line)."""
    version = installed_version(venv_dir)
    if version is not None:
        say(f"ContextForge {version} in {venv_dir}")
        return None
    fresh = not (venv_dir / "bin" / "python").exists()
    say(f"installing {_REQUIREMENT} into {venv_dir} (a few minutes)")
    steps: list[list[str]] = []
    if fresh:
        steps.append([sys.executable, "-m", "venv", str(venv_dir)])
    steps.append(
        [str(venv_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", _REQUIREMENT]
    )
    for argv in steps:
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason = f"{Path(argv[0]).name} {argv[2]}: {exc}"
        else:
            if done.returncode == 0:
                continue
            lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
            reason = f"{argv[2]} failed ({done.returncode}): {lines[-1] if lines else 'no message'}"
        if fresh:
            # A half-made venv would be taken for a broken install next time: start over.
            shutil.rmtree(venv_dir, ignore_errors=True)
        return reason
    version = installed_version(venv_dir)
    if version is None:
        return f"pip installed {PACKAGE} but {venv_dir} has no mcpgateway command"
    say(f"ContextForge {version} installed")
    return None


def start(
    procs: Processes,
    work: Path,
    venv_dir: Path,
    upstream_url: str,
    *,
    workers: int = 1,
    name: str = "contextforge",
) -> ContextForge:
    """Start ContextForge (its own SQLite database under work/, default settings otherwise,
    `workers` uvicorn workers), register upstream_url as a gateway (Streamable HTTP),
    create a virtual server holding the upstream's tools, mint an API token, and return once the
    MCP URL answers an initialize and lists the echo tool. BenchError (benchlib.procs) with the
    log tail if anything fails.

    The settings that differ from ContextForge's defaults are in the module's docstring.
    ``pids`` are the worker processes (``(child.pid,)`` with one worker). The first start
    on a fresh database runs ContextForge's migrations: expect half a minute or more.
    """
    version = installed_version(venv_dir)
    if version is None:
        raise BenchError(f"no ContextForge in {venv_dir} (run install first)")
    home = work / name
    # A fresh database each start: a second registration of the upstream would be refused.
    shutil.rmtree(home, ignore_errors=True)
    (home / "tmp").mkdir(parents=True)
    env = _environment(venv_dir, home)
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    argv = [
        # cd: ContextForge reads ./.env and ./mcp-catalog.yml; exec keeps the pid. Its stdout
        # (migration output, later its log lines) goes to the log too: nobody reads the pipe.
        "/bin/sh",
        "-c",
        'cd "$1" && shift && exec "$@" >&2',
        "sh",
        str(home),
        str(venv_dir / "bin" / "mcpgateway"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    child = procs.start(name, argv, env=env)
    wait_until_answering(child, f"{base_url}/health", _START_TIMEOUT_S, want_status=200)
    pids = _worker_pids(child, workers)
    admin_token = _admin_token(child, venv_dir, home, env)
    with httpx2.Client(
        base_url=base_url,
        headers={"authorization": f"Bearer {admin_token}"},
        timeout=_API_TIMEOUT_S,
    ) as api:
        upstream = {"name": "bench-upstream", "url": upstream_url, "transport": "STREAMABLEHTTP"}
        gateway = _api(child, api, "POST", "/v1/gateways", upstream)
        tool_id, tool = _find_echo_tool(child, api, str(gateway["id"]))
        virtual = {"server": {"name": "bench", "associated_tools": [tool_id]}}
        server_id = str(_api(child, api, "POST", "/v1/servers", virtual)["id"])
        # An API token of the admin's, good for this virtual server only.
        scoped = {"name": "bench", "expires_in_days": 1, "scope": {"server_id": server_id}}
        minted = _api(child, api, "POST", "/v1/tokens", scoped)
    token = str(minted["access_token"])
    url = f"{base_url}/servers/{server_id}/mcp"
    _check_mcp(child, url, token, tool)
    return ContextForge(child=child, url=url, token=token, tool=tool, version=version, pids=pids)


def _environment(venv_dir: Path, home: Path) -> dict[str, str]:
    """A clean environment: ContextForge reads hundreds of settings from it, none of ours."""
    env = {
        "PATH": f"{venv_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
        "DATABASE_URL": f"sqlite:///{home.resolve() / 'contextforge.db'}",
        "JWT_SECRET_KEY": secrets.token_urlsafe(48),
        "AUTH_ENCRYPTION_SECRET": secrets.token_urlsafe(48),
        "PLATFORM_ADMIN_PASSWORD": _password(),
        "BASIC_AUTH_PASSWORD": _password(),
        "SSRF_ALLOW_LOCALHOST": "true",
        "RATE_LIMITING_ENABLED": "false",
        "OTEL_SDK_DISABLED": "true",
    }
    return env


def _password() -> str:
    # Its password policy wants upper and lower case and a special character.
    return f"Bench-{secrets.token_urlsafe(24)}-x!"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _fail(child: Child, what: str) -> BenchError:
    return BenchError(f"{child.name}: {what}\n{child.log_tail()}")


def _worker_pids(child: Child, workers: int) -> tuple[int, ...]:
    """The processes serving requests: uvicorn's spawned workers, or the child itself."""
    if workers <= 1:
        return (child.pid,)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while True:
        found = tuple(pid for pid in _children_of(child.pid) if b"spawn_main" in _cmdline(pid))
        if len(found) >= workers:
            return found
        if child.process.poll() is not None or time.monotonic() > deadline:
            raise _fail(child, f"{len(found)} of {workers} workers are running")
        time.sleep(0.1)


def _children_of(pid: int) -> list[int]:
    children: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                children.extend(int(p) for p in (task / "children").read_text().split())
    return children


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _admin_token(child: Child, venv_dir: Path, home: Path, env: Mapping[str, str]) -> str:
    """A short-lived admin JWT, made the way its quick start makes one (its own script)."""
    argv = [
        str(venv_dir / "bin" / "python"),
        "-m",
        "mcpgateway.utils.create_jwt_token",
        "--username",
        _ADMIN_EMAIL,
        "--exp",
        "60",
    ]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=dict(env),
            cwd=home,
            timeout=_API_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _fail(child, "create_jwt_token did not finish") from None
    lines = done.stdout.split()
    if done.returncode != 0 or not lines:
        raise _fail(child, f"create_jwt_token failed ({done.returncode}): {done.stderr[-500:]}")
    return lines[-1]


def _api(
    child: Child,
    api: httpx2.Client,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    params: dict[str, str] | None = None,
) -> Any:
    """One REST call to ContextForge's API; its JSON answer, BenchError on any other."""
    try:
        response = api.request(method, path, json=body, params=params)
    except httpx2.HTTPError as exc:
        raise _fail(child, f"{method} {path}: {exc!r}") from None
    if response.status_code not in (200, 201):
        raise _fail(child, f"{method} {path}: HTTP {response.status_code}: {response.text[:500]}")
    try:
        return response.json()
    except ValueError:
        raise _fail(child, f"{method} {path}: not JSON: {response.text[:300]!r}") from None


def _find_echo_tool(child: Child, api: httpx2.Client, gateway_id: str) -> tuple[str, str]:
    """The id and public name of the upstream's ``echo`` tool in ContextForge's catalog."""
    deadline = time.monotonic() + _DISCOVERY_TIMEOUT_S
    while True:
        tools = _api(child, api, "GET", "/v1/tools", params={"gateway_id": gateway_id})
        if isinstance(tools, dict):  # a paginated answer
            tools = tools.get("items") or tools.get("data") or []
        for tool in tools:
            if tool.get("gatewayId") == gateway_id and tool.get("originalName") == "echo":
                return str(tool["id"]), str(tool["name"])
        if time.monotonic() > deadline:
            raise _fail(child, f"the upstream's echo tool is not in the catalog: {tools!r:.500}")
        time.sleep(0.2)


def _check_mcp(child: Child, url: str, token: str, tool: str) -> None:
    """initialize, tools/list (the tool is there), tools/call of it: the URL is ready."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}",
    }
    with httpx2.Client(headers=headers, timeout=_API_TIMEOUT_S) as client:

        def post(method: str, message: dict[str, Any]) -> httpx2.Response:
            try:
                response = client.post(url, json=message)
            except httpx2.HTTPError as exc:
                raise _fail(child, f"{method} at {url}: {exc!r}") from None
            if response.status_code not in (200, 202):
                raise _fail(
                    child, f"{method} at {url}: HTTP {response.status_code}: {response.text[:300]}"
                )
            session_id = response.headers.get("mcp-session-id")
            if session_id:  # stateful sessions are off by default; followed when on
                client.headers["mcp-session-id"] = session_id
            return response

        def call(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            response = post(method, message)
            content_type = response.headers.get("content-type", "")
            try:
                return parse_result(method, request_id, content_type, response.content)
            except (CallError, ValueError, KeyError) as exc:
                raise _fail(child, f"{method} at {url}: {exc}") from None

        result = call(1, "initialize", initialize_params())
        client.headers["mcp-protocol-version"] = str(result.get("protocolVersion", ""))
        post("notifications/initialized", {"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = call(2, "tools/list", {})
        names = [t.get("name") for t in listed.get("tools", [])]
        if tool not in names:
            raise _fail(child, f"tools/list at {url} has no {tool!r}: {names}")
        echoed = call(3, "tools/call", {"name": tool, "arguments": {"text": "ready"}})
        if echoed.get("isError") or "ready" not in str(echoed.get("content")):
            raise _fail(child, f"tools/call {tool} at {url} answered {echoed!r:.300}")
