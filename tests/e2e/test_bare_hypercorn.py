"""``hypercorn --worker-class trio 'agentws.app:create_app()'``: the app's ASGI
lifespan runs the service, every door answers through it, and SIGTERM stops
both cleanly.

Run as the README writes it, with neither ``AGENTWS_BIND`` nor
``AGENTWS_BASE_URL``: the MCP and OAuth doors answer the address Hypercorn
bound (which agentws cannot see), and still refuse a foreign ``Host``.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx2
import trio

from tests.support import clean_env, run_agentws

# From exec to serving: imports, opening the store, starting the service.
STARTUP_S = 30.0
GRACE_S = 1.0
# Hypercorn's own drain of open connections (whole seconds), before the lifespan ends.
HYPERCORN_GRACE_S = 1
# Bounds a hang: the worker process, the interpreters' teardown, a loaded machine.
EXIT_SLACK_S = 10.0
_CLEANUP_S = 5.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _wait_serving(client: httpx2.AsyncClient, base: str, process: trio.Process) -> None:
    with trio.fail_after(STARTUP_S):
        while True:
            assert process.returncode is None, "hypercorn exited before serving"
            try:
                if (await client.get(f"{base}/healthz")).status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            await trio.sleep(0.05)


async def test_bare_hypercorn_runs_the_service_in_the_app_lifespan(
    tmp_path: Path, sqlite_url: str
) -> None:
    status, _, err = await run_agentws(tmp_path, sqlite_url, "init", AGENTWS_DATA_DIR=str(tmp_path))
    assert status == 0, err
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    stderr_path = tmp_path / "hypercorn.stderr"
    env = clean_env(
        AGENTWS_DATABASE_URL=sqlite_url,
        AGENTWS_DATA_DIR=str(tmp_path),
        AGENTWS_SHUTDOWN_GRACE_S=str(GRACE_S),
    )
    command = [
        *(sys.executable, "-m", "hypercorn", "--worker-class", "trio"),
        *("--graceful-timeout", str(HYPERCORN_GRACE_S)),
        *("--bind", f"127.0.0.1:{port}", "agentws.app:create_app()"),
    ]
    with stderr_path.open("wb") as stderr:
        process = await trio.lowlevel.open_process(
            command, stdout=subprocess.DEVNULL, stderr=stderr, cwd=tmp_path, env=env
        )
    try:
        async with httpx2.AsyncClient(timeout=10) as client:
            await _wait_serving(client, base, process)
            ready = await client.get(f"{base}/readyz")
            mcp = await client.post(f"{base}/mcp/g/acme/ops", json={})
            # The same by the loopback name on the bound port; a rebinding page's is refused.
            by_name = await client.post(
                f"{base}/mcp/g/acme/ops", json={}, headers={"Host": f"localhost:{port}"}
            )
            foreign = await client.post(
                f"{base}/mcp/g/acme/ops", json={}, headers={"Host": f"evil.example:{port}"}
            )
            discovery = await client.get(
                f"{base}/.well-known/oauth-protected-resource/mcp/g/acme/ops"
            )
            foreign_discovery = await client.get(
                f"{base}/.well-known/oauth-protected-resource/mcp/g/acme/ops",
                headers={"Host": "evil.example"},
            )
            hook = await client.post(f"{base}/hooks/nosuchtoken", json={"a": 1})
            api = await client.get(f"{base}/api/v1/workspaces")
            login = await client.get(f"{base}/dashboard/login")
        assert ready.status_code == 200, ready.text
        assert ready.json() == {"status": "ready"}
        # Each door answers with the service behind it: the token lookups reach the store.
        assert mcp.status_code == 401, mcp.text
        assert by_name.status_code == 401, by_name.text
        assert foreign.status_code == 403
        assert "is not allowed here" in foreign.json()["error"]["message"]
        assert discovery.status_code == 200, discovery.text
        assert discovery.json()["resource"] == f"{base}/mcp/g/acme/ops"
        assert foreign_discovery.status_code == 403
        assert hook.status_code == 404
        assert hook.json()["error"]["code"] == "not_found"
        assert api.status_code == 401
        assert login.status_code == 200 and "Sign in" in login.text

        process.send_signal(signal.SIGTERM)
        with trio.fail_after(HYPERCORN_GRACE_S + GRACE_S + EXIT_SLACK_S):
            assert await process.wait() == 0
    finally:
        with trio.move_on_after(_CLEANUP_S, shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
    assert "Traceback" not in stderr_path.read_text()
