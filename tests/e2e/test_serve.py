"""``agentws serve`` as a process: it announces itself, answers health and
readiness, exits 0 on SIGTERM or SIGINT within the grace period, and fails
with one clear line (exit 1, no traceback) when it cannot start."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pytest
import trio

from agentws.common.instances import STALE_S
from agentws.domain.rules import utcnow
from agentws.store import open_store
from tests.support import clean_env, run_agentws

GRACE_S = 3.0
# Exit must come within the grace period; this much slack covers interpreter teardown.
EXIT_SLACK_S = 1.0
# From exec to the announcement: imports, opening and migrating the store, binding.
STARTUP_S = 30.0
# Every request here is answered at once; this bounds a hang.
REQUEST_S = 10.0
# Killing and reaping a process left running by a failed test.
_CLEANUP_S = 5.0
UNREACHABLE_POSTGRES = "postgresql://postgres@127.0.0.1:1/x"


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentws", *args]


def _env(**extra: str) -> dict[str, str]:
    return clean_env(AGENTWS_SHUTDOWN_GRACE_S=str(GRACE_S), **extra)


@attrs.define
class Server:
    process: trio.Process
    announcement: dict[str, Any]
    stderr_path: Path

    @property
    def base_url(self) -> str:
        return str(self.announcement["base_url"])

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    async def stop(self, signum: signal.Signals) -> int:
        """Send ``signum`` and wait for the exit status, within the grace period."""
        self.process.send_signal(signum)
        with trio.fail_after(GRACE_S + EXIT_SLACK_S):
            return await self.process.wait()


async def _read_line(process: trio.Process) -> bytes:
    assert process.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        chunk = await process.stdout.receive_some()
        if not chunk:
            break
        line += chunk
    return line


@asynccontextmanager
async def running_serve(tmp_path: Path, database_url: str, **env: str) -> AsyncIterator[Server]:
    """``agentws serve --json`` on a free port (``env`` added), once it has announced itself.

    Resource handling:
        A process still running when the block exits is killed and reaped.
    """
    stderr_path = tmp_path / "serve.stderr"
    with stderr_path.open("wb") as stderr:
        process = await trio.lowlevel.open_process(
            _command("serve", "--bind", "127.0.0.1:0", "--database", database_url, "--json"),
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=tmp_path,
            env=_env(**env),
        )
    try:
        with trio.fail_after(STARTUP_S):
            line = await _read_line(process)
        assert line, f"serve exited before announcing itself:\n{stderr_path.read_text()}"
        yield Server(process, json.loads(line), stderr_path)
    finally:
        with trio.move_on_after(_CLEANUP_S, shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
            assert process.stdout is not None
            await process.stdout.aclose()


async def _wait_healthy(base_url: str) -> None:
    """Poll ``/healthz`` until it answers 200."""
    async with httpx2.AsyncClient() as client:
        with trio.fail_after(STARTUP_S):
            while True:
                try:
                    response = await client.get(f"{base_url}/healthz")
                except httpx2.TransportError:
                    pass
                else:
                    if response.status_code == 200:
                        assert response.json()["status"] == "ok"
                        return
                await trio.sleep(0.05)


async def _get(url: str) -> httpx2.Response:
    with trio.fail_after(REQUEST_S):
        async with httpx2.AsyncClient() as client:
            return await client.get(url)


async def _run(
    *args: str, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[bytes]:
    with trio.fail_after(STARTUP_S):
        return await trio.run_process(
            _command(*args),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=cwd,
            env=_env(**env),
        )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_serve_answers_then_exits_0_on_signal(
    tmp_path: Path, sqlite_url: str, signum: signal.Signals
) -> None:
    async with running_serve(tmp_path, sqlite_url) as server:
        base = server.base_url
        assert base.startswith("http://127.0.0.1:")
        assert not base.endswith(":0")
        assert server.announcement["binds"] == [base]
        assert server.announcement["health"] == f"{base}/healthz"
        assert server.announcement["readiness"] == f"{base}/readyz"
        assert server.announcement["dashboard"] == f"{base}/dashboard/"
        assert server.announcement["api"] == f"{base}/api/v1/openapi.json"
        assert server.announcement["database"] == sqlite_url
        assert server.announcement["model"] == "offline digest (no ANTHROPIC_API_KEY)"

        await _wait_healthy(base)
        ready = await _get(f"{base}/readyz")
        assert ready.status_code == 200
        assert ready.json() == {"status": "ready"}
        login = await _get(f"{base}/dashboard/login")
        assert login.status_code == 200 and "Sign in" in login.text
        stylesheet = await _get(f"{base}/dashboard/static/app.css")
        assert stylesheet.status_code == 200  # served from the package: no CDN

        assert await server.stop(signum) == 0
        stderr = server.stderr()
    assert "Traceback" not in stderr
    assert f"received {signum.name}" in stderr
    # The store file was created and migrated where the URL says.
    assert (tmp_path / "agentws.db").is_file()
    # Nothing listens there any more.
    with pytest.raises(httpx2.ConnectError):
        await _get(f"{base}/healthz")


async def test_second_serve_on_the_same_port_exits_1(tmp_path: Path, sqlite_url: str) -> None:
    async with running_serve(tmp_path, sqlite_url) as server:
        await _wait_healthy(server.base_url)
        bind = server.base_url.removeprefix("http://")
        second = await _run(
            "serve", "--bind", bind, "--database", f"sqlite:///{tmp_path / 'other.db'}"
        )
        # The first server is unaffected.
        assert (await _get(f"{server.base_url}/healthz")).status_code == 200
        assert await server.stop(signal.SIGTERM) == 0

    stderr = second.stderr.decode()
    assert second.returncode == 1
    assert f"cannot listen on {bind}" in stderr
    assert "Traceback" not in stderr
    assert second.stdout == b""


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
async def test_serve_on_unreachable_postgres_exits_1(as_json: bool) -> None:
    args = ["serve", "--bind", "127.0.0.1:0", "--database", UNREACHABLE_POSTGRES]
    result = await _run(*args, *(["--json"] if as_json else []))

    stderr = result.stderr.decode()
    assert result.returncode == 1
    assert result.stdout == b""
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    if as_json:
        error = json.loads(lines[0])["error"]
        assert error["code"] == "store_unavailable"
        message = error["message"]
    else:
        assert lines[0].startswith("agentws: error: ")
        message = lines[0]
    assert f"cannot connect to PostgreSQL at {UNREACHABLE_POSTGRES}" in message


@pytest.mark.postgres
async def test_serve_on_postgres_is_ready_and_exits_0(tmp_path: Path, postgres_url: str) -> None:
    async with running_serve(tmp_path, postgres_url) as server:
        assert server.announcement["database"] == postgres_url
        await _wait_healthy(server.base_url)
        ready = await _get(f"{server.base_url}/readyz")
        assert ready.status_code == 200
        assert ready.json() == {"status": "ready"}
        assert await server.stop(signal.SIGTERM) == 0
        stderr = server.stderr()
    assert "Traceback" not in stderr
    assert "received SIGTERM" in stderr


MALFORMED_KEY = "c2hvcnQta2V5LXRoYXQtaXMtbm90LTMyLWJ5dGVz"


@pytest.mark.parametrize("where", ["variable", "file"])
async def test_serve_with_a_malformed_secret_key_refuses_to_start(
    tmp_path: Path, sqlite_url: str, where: str
) -> None:
    # It used to start, say ready, and answer every signed webhook 503.
    env = {"AGENTWS_DATA_DIR": str(tmp_path)}
    if where == "variable":
        env["AGENTWS_SECRET_KEY"] = MALFORMED_KEY
        names = "AGENTWS_SECRET_KEY"
    else:
        (tmp_path / "secret.key").write_text(MALFORMED_KEY + "\n")
        names = str(tmp_path / "secret.key")
    result = await _run(
        "serve", "--bind", "127.0.0.1:0", "--database", sqlite_url, cwd=tmp_path, **env
    )
    stderr = result.stderr.decode()
    assert result.returncode == 1, stderr
    assert result.stdout == b""  # never announced, never bound
    assert "Traceback" not in stderr
    assert stderr.startswith(f"agentws: error: {names}: not a valid key"), stderr
    assert MALFORMED_KEY not in stderr


async def _wait_until_recorded(database_url: str) -> None:
    """Until the running instance's heartbeat is in the store (it follows the announcement)."""
    async with open_store(database_url, pool_size=1) as store:
        with trio.fail_after(STARTUP_S):
            while True:
                if await store.live_instances(utcnow() - timedelta(seconds=STALE_S)):
                    return
                await trio.sleep(0.05)


async def _cli_ok(tmp_path: Path, database_url: str, *args: str, **env: str) -> str:
    code, stdout, stderr = await run_agentws(tmp_path, database_url, *args, **env)
    assert code == 0, stderr
    return stdout


_HOOK_URL = re.compile(r"^  (http\S+/hooks/agwh_\S+)$", re.MULTILINE)
_TRY_IT = re.compile(r"^  curl -X POST .* -d '(.+)' '(http\S+)'$", re.MULTILINE)


async def test_cli_prints_the_urls_of_the_running_instance(tmp_path: Path, sqlite_url: str) -> None:
    # What a new user saw: serve on another port, then URLs for :8080 that failed.
    async with running_serve(tmp_path, sqlite_url) as server:
        base = server.base_url
        assert not base.endswith(":8080")
        await _wait_until_recorded(sqlite_url)
        await _cli_ok(tmp_path, sqlite_url, "workspace", "create", "acme")
        group = await _cli_ok(tmp_path, sqlite_url, "group", "create", "acme", "ops")
        assert f"Endpoint: {base}/mcp/g/acme/ops\n" in group
        token = await _cli_ok(tmp_path, sqlite_url, "token", "create", "acme", "ops", "--name", "t")
        assert f"Endpoint: {base}/mcp/g/acme/ops\n" in token
        assert "AGENTWS_BASE_URL" not in token  # no note: the URL is right

        (tmp_path / "prompt.txt").write_text("Say what happened.")
        args = ("--channel", "ops", "--prompt-file", str(tmp_path / "prompt.txt"))
        hook = await _cli_ok(
            tmp_path, sqlite_url, "webhook", "create", "acme", "--name", "ci", *args
        )
        (url,) = _HOOK_URL.findall(hook)
        assert url.startswith(f"{base}/hooks/")
        ((body, tried),) = _TRY_IT.findall(hook)
        assert tried == url
        # The printed "try it" works.
        with trio.fail_after(REQUEST_S):
            async with httpx2.AsyncClient() as client:
                response = await client.post(
                    tried, content=body, headers={"Content-Type": "application/json"}
                )
        assert response.status_code == 202, response.text

        # AGENTWS_BASE_URL, where the CLI runs, still wins.
        token = await _cli_ok(
            tmp_path,
            sqlite_url,
            "token",
            "create",
            "acme",
            "ops",
            "--name",
            "u",
            AGENTWS_BASE_URL="https://agents.example.com",
        )
        assert "Endpoint: https://agents.example.com/mcp/g/acme/ops\n" in token
        assert await server.stop(signal.SIGTERM) == 0

    # Nobody serves this database now: the default, and a note on how to set it.
    token = await _cli_ok(tmp_path, sqlite_url, "token", "create", "acme", "ops", "--name", "v")
    assert "Endpoint: http://127.0.0.1:8080/mcp/g/acme/ops\n" in token
    assert "AGENTWS_BASE_URL" in token


async def test_cli_prints_the_public_url_the_running_instance_was_given(
    tmp_path: Path, sqlite_url: str
) -> None:
    public = "https://agents.example.com"
    async with running_serve(tmp_path, sqlite_url, AGENTWS_BASE_URL=public) as server:
        await _wait_until_recorded(sqlite_url)
        await _cli_ok(tmp_path, sqlite_url, "workspace", "create", "acme")
        group = await _cli_ok(tmp_path, sqlite_url, "group", "create", "acme", "ops", "--json")
        assert json.loads(group)["url"] == f"{public}/mcp/g/acme/ops"
        assert await server.stop(signal.SIGTERM) == 0
