"""The HTTP surface, served in-process on a loopback port: health, readiness,
JSON errors, and shutdown within the grace period with no task left behind."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import hypercorn.trio
import pytest
import trio
from cryptography.fernet import Fernet
from hypercorn.config import Config

import agentws.server
from agentws import __version__
from agentws.app import create_app
from agentws.core.errors import StoreUnavailableError
from agentws.domain.models import VerificationScheme
from agentws.server import serve
from agentws.service import Runtime, Service
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store import open_store
from agentws.webhooks.admin import WebhookOptions, create_webhook
from agentws.workspaces.admin import create_workspace

GRACE_S = 3.0
# Shutdown with nothing in flight must end within the grace period; this much
# slack covers closing the store and scheduling.
SHUTDOWN_SLACK_S = 1.0
# Every request of these tests is answered at once; this bounds a hang.
REQUEST_S = 10.0


def _settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env(
        {
            "AGENTWS_BIND": "127.0.0.1:0",
            "AGENTWS_DATABASE_URL": f"sqlite:///{tmp_path / 'http.db'}",
            "AGENTWS_SHUTDOWN_GRACE_S": str(GRACE_S),
            **env,
        }
    )


def _all_tasks() -> set[trio.lowlevel.Task]:
    tasks: set[trio.lowlevel.Task] = set()
    pending = [trio.lowlevel.current_root_task()]
    while pending:
        task = pending.pop()
        tasks.add(task)
        for nursery in task.child_nurseries:
            pending.extend(nursery.child_tasks)
    return tasks


@asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[str]:
    """Run :func:`agentws.server.serve` and yield its base URL.

    On exit the shutdown trigger fires; the server must return within the grace
    period and leave no task of its own behind.
    """
    before = _all_tasks()
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(functools.partial(serve, settings, shutdown_trigger=stop.wait))
        assert len(binds) == 1
        assert binds[0].startswith("http://127.0.0.1:")
        assert not binds[0].endswith(":0")
        yield binds[0]
        stop.set()
        nursery.cancel_scope.deadline = (
            trio.current_time() + settings.shutdown_grace_s + SHUTDOWN_SLACK_S
        )
    assert not nursery.cancel_scope.cancelled_caught, "serve() outlived the grace period"
    assert _all_tasks() == before


async def _get(url: str, method: str = "GET") -> httpx2.Response:
    with trio.fail_after(REQUEST_S):
        async with httpx2.AsyncClient() as client:
            return await client.request(method, url)


async def test_healthz_says_ok(tmp_path: Path) -> None:
    async with serving(_settings(tmp_path)) as base_url:
        response = await _get(f"{base_url}/healthz")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"status": "ok", "version": __version__}


async def test_readyz_is_ready_when_the_store_answers(tmp_path: Path) -> None:
    async with serving(_settings(tmp_path)) as base_url:
        response = await _get(f"{base_url}/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready"}
    assert "retry-after" not in response.headers


async def test_the_root_leads_to_the_dashboard_and_unknown_paths_are_json_404s(
    tmp_path: Path,
) -> None:
    async with serving(_settings(tmp_path)) as base_url:
        # The base URL `agentws serve` prints: a browser opening it lands on the dashboard.
        root = await _get(f"{base_url}/")
        response = await _get(f"{base_url}/no/such/thing")
    assert root.status_code == 302, root.text
    assert root.headers["location"] == "/dashboard/"
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == "not_found"
    assert isinstance(error["message"], str)
    assert error["message"]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
async def test_wrong_method_is_a_json_405(tmp_path: Path, method: str) -> None:
    async with serving(_settings(tmp_path)) as base_url:
        response = await _get(f"{base_url}/healthz", method)
    assert response.status_code == 405
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == "method_not_allowed"
    assert error["message"]


async def test_shutdown_trigger_ends_serve_within_grace(tmp_path: Path) -> None:
    before = _all_tasks()
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            functools.partial(serve, _settings(tmp_path), shutdown_trigger=stop.wait)
        )
        assert (await _get(f"{binds[0]}/healthz")).status_code == 200
        stop.set()
        stopped_at = trio.current_time()
        nursery.cancel_scope.deadline = stopped_at + GRACE_S + SHUTDOWN_SLACK_S
    assert not nursery.cancel_scope.cancelled_caught, "serve() outlived the grace period"
    # Nothing was in flight, so nothing should have waited for the grace period.
    assert trio.current_time() - stopped_at < GRACE_S
    assert _all_tasks() == before
    # The port is closed again.
    with pytest.raises(httpx2.ConnectError):
        await _get(f"{binds[0]}/healthz")


async def test_shutdown_with_an_idle_keep_alive_connection_ends_within_grace(
    tmp_path: Path,
) -> None:
    """A client holding an idle connection open does not hold shutdown past the grace period.

    (Today it holds it for all of the grace period: Hypercorn waits for the
    connection until ``graceful_timeout``. A short grace keeps this test quick.)
    """
    settings = _settings(tmp_path, AGENTWS_SHUTDOWN_GRACE_S="0.5")
    async with httpx2.AsyncClient() as client, serving(settings) as base_url:
        with trio.fail_after(REQUEST_S):
            first = await client.get(f"{base_url}/healthz")
            second = await client.get(f"{base_url}/readyz")
        assert (first.status_code, second.status_code) == (200, 200)
        # ``serving`` now shuts down with the client's connection still open.


async def test_an_idle_keep_alive_connection_is_closed_after_its_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a response of the Quart app, Hypercorn's keep-alive timer runs again.

    Quart-Trio's body reader used to cancel the end of the last send, before
    Hypercorn restarted that timer: an idle connection was then never closed
    (see agentws.http.quart_fix). A short keep-alive keeps this test quick.
    """
    keep_alive_s = 0.5
    configure = agentws.server.hypercorn_config

    def short_keep_alive(settings: Settings) -> Config:
        config = configure(settings)
        config.keep_alive_timeout = keep_alive_s
        return config

    monkeypatch.setattr(agentws.server, "hypercorn_config", short_keep_alive)
    async with serving(_settings(tmp_path)) as base_url:
        host, port = base_url.removeprefix("http://").rsplit(":", 1)
        async with await trio.open_tcp_stream(host, int(port)) as stream:
            await stream.send_all(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            received, chunk = b"", b"not closed"
            with trio.move_on_after(REQUEST_S):
                while chunk := await stream.receive_some(65536):
                    received += chunk
            assert received.startswith(b"HTTP/1.1 200"), received
            assert not chunk, f"the idle connection was still open after {REQUEST_S} s"


class _FailingStore:
    """A store at the seam whose database has stopped answering.

    ``hang``: ``ping`` never returns (a database that does not answer);
    otherwise it raises as the drivers do when the database cannot be reached.
    """

    def __init__(self, *, hang: bool) -> None:
        self.hang = hang
        self.pings = 0

    async def ping(self) -> None:
        self.pings += 1
        if self.hang:
            await trio.sleep_forever()
        raise StoreUnavailableError("cannot connect to PostgreSQL at postgresql://db/x")

    def data_version(self) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        # Every other store call fails as the drivers fail when the database is gone.
        async def unavailable(*args: Any, **kwargs: Any) -> Any:
            raise StoreUnavailableError("cannot connect to PostgreSQL at postgresql://db/x")

        return unavailable


@pytest.mark.parametrize(
    ("hang", "detail"),
    [
        pytest.param(False, "store: cannot connect to PostgreSQL", id="ping-raises"),
        pytest.param(True, "store: no answer within 0.2 s", id="ping-hangs"),
    ],
)
async def test_readyz_is_503_when_the_store_stops_answering(
    tmp_path: Path, hang: bool, detail: str
) -> None:
    settings = _settings(tmp_path, AGENTWS_STORE_TIMEOUT_S="0.2")
    store = _FailingStore(hang=hang)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        runtime: Runtime = await nursery.start(Service(settings, store).serve)
        app = create_app(runtime)
        binds = await nursery.start(
            functools.partial(hypercorn.trio.serve, app, config, shutdown_trigger=stop.wait)
        )
        ready = await _get(f"{binds[0]}/readyz")
        health = await _get(f"{binds[0]}/healthz")
        stop.set()
        await runtime.service.stop()
        nursery.cancel_scope.deadline = trio.current_time() + GRACE_S + SHUTDOWN_SLACK_S
    assert not nursery.cancel_scope.cancelled_caught

    assert store.pings == 1
    assert ready.status_code == 503
    assert int(ready.headers["retry-after"]) > 0
    body = ready.json()
    assert body["status"] == "unavailable"
    assert body["detail"].startswith(detail)
    # Liveness does not depend on the store.
    assert health.status_code == 200


class _DeafStore:
    """A working store whose change notifications cannot be listened to (a PostgreSQL
    whose listening connection keeps failing)."""

    notifies = True

    def __init__(self, store: Any) -> None:
        self._store = store
        self.attempts = 0

    async def listen_for_changes(self, on_change: Any, *, task_status: Any = None) -> None:
        self.attempts += 1
        raise StoreUnavailableError("PostgreSQL: the listening connection was closed")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


async def test_readyz_is_503_while_the_change_listener_is_down(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    stop = trio.Event()
    async with open_store(settings.database_url) as real, trio.open_nursery() as nursery:
        store = _DeafStore(real)
        runtime: Runtime = await nursery.start(Service(settings, store).serve)  # type: ignore[arg-type]
        app = create_app(runtime)
        binds = await nursery.start(
            functools.partial(hypercorn.trio.serve, app, config, shutdown_trigger=stop.wait)
        )
        ready = await _get(f"{binds[0]}/readyz")
        stop.set()
        await runtime.service.stop()
    assert store.attempts >= 1
    assert ready.status_code == 503
    assert ready.json()["detail"] == (
        "change listener: PostgreSQL: the listening connection was closed"
    )


async def _seal_a_webhook_secret(settings: Settings) -> None:
    """A GitHub-signed webhook, its secret sealed with ``settings``' key."""
    async with open_store(settings.database_url, pool_size=1) as store:
        await create_workspace(store, "acme", name=None, actor="test")
        options = WebhookOptions(verification=VerificationScheme.GITHUB, secret="gh-secret")
        await create_webhook(
            store,
            settings,
            Keys.load(settings),
            "acme",
            name="gh",
            channel="ops",
            prompt="Say it.",
            options=options,
            actor="test",
        )


@pytest.mark.parametrize("key", ["another", "none"])
async def test_readyz_is_503_while_stored_secrets_cannot_be_opened(
    tmp_path: Path, key: str
) -> None:
    # Ready while every signed delivery got 503 verification_unavailable, before.
    sealed_with = Fernet.generate_key().decode()
    await _seal_a_webhook_secret(_settings(tmp_path, AGENTWS_SECRET_KEY=sealed_with))
    empty = tmp_path / "no-key-here"
    empty.mkdir()
    if key == "another":
        env = {"AGENTWS_SECRET_KEY": Fernet.generate_key().decode()}
    else:
        env = {"AGENTWS_DATA_DIR": str(empty)}

    async with serving(_settings(tmp_path, **env)) as base_url:
        response = await _get(f"{base_url}/readyz")
    assert response.status_code == 503
    assert int(response.headers["retry-after"]) > 0
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["detail"].startswith("secret key: "), body
    assert sealed_with not in response.text and str(empty) not in response.text

    async with serving(_settings(tmp_path, AGENTWS_SECRET_KEY=sealed_with)) as base_url:
        response = await _get(f"{base_url}/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready"}


async def test_readyz_without_a_key_or_stored_secrets_is_ready(tmp_path: Path) -> None:
    empty = tmp_path / "no-key-here"
    empty.mkdir()
    async with serving(_settings(tmp_path, AGENTWS_DATA_DIR=str(empty))) as base_url:
        response = await _get(f"{base_url}/readyz")
    assert response.status_code == 200
