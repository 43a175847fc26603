"""Two agentws processes behind nginx, configured as ``deploy/nginx-agentws.conf``.

This module owns nginx for the e2e tests: the config (the deploy snippet
with the test instances' ports and ids, in a main config of its own that
keeps every file in the test's directory, so that Debian's package runs
without root),
running nginx (started with ``nursery.start``, ready once it accepts
connections, stopped by cancelling at exit), and what nginx wrote: its
access log (which instance answered each request) and its error log (which
must have no ``[error]`` line when a test ends, but for the ones a test
caused itself by killing an instance).
"""

from __future__ import annotations

import functools
import re
import shutil
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import trio

from tests.e2e.process_support import Server, free_port, serve_processes

__all__ = [
    "CONFIG",
    "NGINX",
    "Request",
    "access_log",
    "behind_nginx",
    "nginx_conf",
    "serve_nginx",
    "unexpected_errors",
]

CONFIG = Path(__file__).parents[2] / "deploy" / "nginx-agentws.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
# From exec to accepting connections.
NGINX_START_S = 10.0
NGINX_POLL_S = 0.02

# One line per request: status, method, path (no query), the MCP session it
# names (Mcp-Session-Id header, session_id query parameter; "-" for none),
# the upstreams tried.
_LOG_FORMAT = "$status $request_method $uri $http_mcp_session_id $arg_session_id $upstream_addr"
# nginx's messages about an upstream that is gone, and the upstream they name:
# a refused connect, a connection cut while waiting for the answer, or reset.
_GONE_UPSTREAM = re.compile(
    r"\[error\] .*(?:connect\(\) failed \(111: Connection refused\)"
    r"|upstream prematurely closed connection"
    r"|recv\(\) failed \(104: Connection reset by peer\))"
    r'.*, upstream: "http://(?P<address>[0-9.]+:[0-9]+)/'
)


def nginx_directory(tmp_path: Path) -> Path:
    """Where :func:`behind_nginx` keeps nginx's config, logs and temporary files."""
    return tmp_path / "nginx"


def nginx_conf(directory: Path, port: int, a: Server, b: Server) -> Path:
    """The deploy snippet with these instances' ports, in a main config of its own."""
    snippet = CONFIG.read_text()
    for old, new in (
        ("127.0.0.1:8081", _address(a)),
        ("127.0.0.1:8082", _address(b)),
        ("agentws-1 ", "inst-a "),
        ("agentws-2 ", "inst-b "),
        ("listen 80;", f"listen 127.0.0.1:{port};"),
    ):
        assert old in snippet, f"{old!r} is no longer in {CONFIG}"
        snippet = snippet.replace(old, new)
    (directory / "agentws.conf").write_text(snippet)
    temp = directory / "temp"
    temp.mkdir()
    main = directory / "nginx.conf"
    main.write_text(
        f"""
daemon off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/error.log warn;
events {{ worker_connections 256; }}
http {{
    log_format agentws '{_LOG_FORMAT}';
    access_log {directory}/access.log agentws;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    include {directory}/agentws.conf;
}}
"""
    )
    return main


async def serve_nginx(
    directory: Path,
    config: Path,
    port: int,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run nginx with ``config``; started once it accepts connections on ``port``.

    Use as ``await nursery.start(serve_nginx, ...)``; cancel to stop nginx
    (``trio.run_process`` sends SIGTERM: nginx's fast shutdown). nginx
    exiting by itself fails the test.
    """
    # -e: errors before the config is read go to this directory too, not /var/log.
    command = [NGINX, "-c", str(config), "-p", f"{directory}/", "-e", str(directory / "error.log")]
    with (directory / "nginx.stderr").open("wb") as stderr:
        async with trio.open_nursery() as nursery:
            run = functools.partial(trio.run_process, command, check=False, stderr=stderr)
            process: trio.Process = await nursery.start(run, name="nginx")
            await _wait_listening(directory, process, port)
            task_status.started()
    raise AssertionError(f"nginx exited ({process.returncode}):\n{_errors_text(directory)}")


async def _wait_listening(directory: Path, process: trio.Process, port: int) -> None:
    with trio.fail_after(NGINX_START_S):
        while True:
            assert process.returncode is None, (
                f"nginx exited ({process.returncode}) before it was ready:\n"
                f"{_errors_text(directory)}"
            )
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                await trio.sleep(NGINX_POLL_S)
                continue
            await stream.aclose()
            return


@asynccontextmanager
async def behind_nginx(
    tmp_path: Path, database_url: str, **env: str
) -> AsyncIterator[tuple[Server, Server, str]]:
    """Instances ``inst-a`` and ``inst-b`` and nginx in front of them: (a, b, nginx's base URL).

    ``env`` adds to both instances' environment; their public URL
    (``AGENTWS_BASE_URL``) is nginx's.

    Resource handling:
        nginx is stopped (cancelled) at exit, then both instances are killed
        and reaped. When the block ends without an exception, nginx's error
        log must have no ``[error]`` line or worse (see :func:`unexpected_errors`).
    """
    directory = nginx_directory(tmp_path)
    directory.mkdir()
    port = free_port()
    public = {"AGENTWS_BASE_URL": f"http://127.0.0.1:{port}", **env}
    async with serve_processes(tmp_path, database_url, "inst-a", "inst-b", **public) as (a, b):
        async with trio.open_nursery() as nursery:
            config = nginx_conf(directory, port, a, b)
            await nursery.start(serve_nginx, directory, config, port)
            yield a, b, f"http://127.0.0.1:{port}"
            nursery.cancel_scope.cancel()
        errors = unexpected_errors(directory, killed=[s for s in (a, b) if _was_killed(s)])
        assert not errors, "nginx logged errors:\n" + "\n".join(errors)


def unexpected_errors(directory: Path, *, killed: list[Server]) -> list[str]:
    """nginx's error log lines of level ``error`` and above, but for those about a
    ``killed`` instance.

    A test that kills an instance with SIGKILL makes nginx log, for that
    upstream only, the connections it then finds refused (requests nginx
    sent to it before noting it down, retried on the other instance) and
    the ones the kill cut while a request was on them. Those are what the
    test does on purpose; the same lines about a live instance, and every
    other ``[error]``, are failures.
    """
    gone = {_address(s) for s in killed}
    lines = _errors_text(directory).splitlines()
    unexpected = []
    for line in lines:
        if not any(f"[{level}]" in line for level in ("error", "crit", "alert", "emerg")):
            continue
        match = _GONE_UPSTREAM.search(line)
        if match is not None and match["address"] in gone:
            continue
        unexpected.append(line)
    return unexpected


@attrs.frozen
class Request:
    """One line of nginx's access log."""

    status: int
    method: str
    path: str
    #: The MCP session the request names, if any.
    session_id: str | None
    #: The instances nginx tried, in order (more than one: retried after a failure).
    upstreams: tuple[str, ...]

    def answered_by(self, server: Server) -> bool:
        return bool(self.upstreams) and self.upstreams[-1] == _address(server)


def access_log(tmp_path: Path) -> list[Request]:
    """The requests nginx has logged (read it once nginx is stopped to have them all)."""
    requests = []
    for line in (nginx_directory(tmp_path) / "access.log").read_text().splitlines():
        status, method, path, header, query, upstreams = line.split(" ", 5)
        session_id = next((s for s in (header, query) if s != "-"), None)
        tried = tuple(u.strip() for u in upstreams.split(",") if u.strip() not in ("", "-"))
        requests.append(Request(int(status), method, path, session_id, tried))
    return requests


def _address(server: Server) -> str:
    return server.base_url.removeprefix("http://")


def _was_killed(server: Server) -> bool:
    return server.process.returncode == -signal.SIGKILL


def _errors_text(directory: Path) -> str:
    path = directory / "error.log"
    stderr = directory / "nginx.stderr"
    text = path.read_text() if path.exists() else ""
    if stderr.exists() and stderr.stat().st_size:
        text += "\n(stderr)\n" + stderr.read_text()
    return text
