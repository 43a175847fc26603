"""Serving the app with Hypercorn's trio worker, and shutting down on signals.

Shutdown is one deadline: on the first SIGTERM or SIGINT Hypercorn stops
accepting and drains open requests while the service lets its running work
finish, both within the same grace period; whatever is still running when
``shutdown_grace_s`` has passed is cancelled. With ``AGENTWS_DRAIN_S``, a
drain comes first: the instance reports not ready and takes no new MCP
session while the open ones go on, until they end or the drain is over. A second signal cancels at
once. The process then closes the store and exits 0.
"""

from __future__ import annotations

import logging
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import cast

import trio
from hypercorn.config import Config
from hypercorn.trio.run import worker_serve
from hypercorn.utils import wrap_app

from agentws.app import create_app
from agentws.bridges.hypercorn_bridge import install as install_hypercorn_bridge
from agentws.core.errors import ListenError
from agentws.http.collector import CollectorSteward, settle_after_start
from agentws.service import Runtime, run_service
from agentws.settings.config import Settings

__all__ = ["hypercorn_config", "serve", "serve_until_signalled"]

log = logging.getLogger("agentws.server")

# Added to the grace period before the hard stop, for closing the store.
_CLOSE_MARGIN_S = 0.5


def _cut_off_stalled_peers(sock: socket.socket, stall_s: float) -> None:
    """Have the kernel drop a connection whose peer has not taken our data for ``stall_s``.

    Hypercorn writes to the socket shielded from cancellation, so a client that
    stops reading would hold its connection (and its buffers) for as long as
    it stays connected. ``TCP_USER_TIMEOUT`` (Linux) bounds how long sent data
    may stay unacknowledged, a zero receive window included; accepted
    connections inherit it from the listening socket.
    """
    option = getattr(socket, "TCP_USER_TIMEOUT", None)
    if option is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, option, max(1, int(stall_s * 1000)))


def hypercorn_config(settings: Settings) -> Config:
    """Hypercorn settings derived from ours."""
    config = Config()
    config.bind = [settings.bind]
    config.graceful_timeout = settings.shutdown_grace_s
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    # Long-lived SSE streams manage their own liveness (keep-alives, stall cut-off).
    config.keep_alive_timeout = 75
    return config


async def serve(
    settings: Settings,
    *,
    shutdown_trigger: Callable[[], Awaitable[None]],
    runtime: Runtime | None = None,
    steward: bool = False,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until ``shutdown_trigger`` returns, then shut down within the grace period.

    The service (and its store) is opened first and the port bound next, so
    a database that cannot be reached or a port in use fails here, before
    anything is announced.

    Args:
        settings: what to serve and where.
        shutdown_trigger: returns when a graceful shutdown should begin.
        runtime: a running service's runtime to serve (and stop on shutdown)
            instead of opening one; tests use it to look inside.
        steward: keep the cycle collector's passes short as MCP sessions
            come and go (:mod:`agentws.http.collector`); for the process that
            serves, not for one that runs tests.
        task_status: receives the list of bound URLs (real ports when bound to 0).

    Error handling:
        :class:`~agentws.core.errors.StoreError` if the store cannot be opened,
        :class:`~agentws.core.errors.ListenError` if the address cannot be bound.
    """
    config = hypercorn_config(settings)
    install_hypercorn_bridge()
    with trio.CancelScope() as hard_stop:
        async with trio.open_nursery() as nursery:
            if runtime is None:
                runtime = cast(Runtime, await nursery.start(run_service, settings))
            service = runtime.service
            try:
                try:
                    sockets = config.create_sockets()
                    for sock in sockets.insecure_sockets + sockets.secure_sockets:
                        _cut_off_stalled_peers(sock, settings.sse_stall_s)
                        sock.listen(config.backlog)
                except OSError as exc:
                    raise ListenError(
                        f"cannot listen on {settings.bind}: {exc.strerror or exc}"
                    ) from None
                # Other instances forward requests for this one's MCP sessions here.
                bound = (sockets.insecure_sockets or sockets.secure_sockets)[0]
                port = bound.getsockname()[1]
                runtime.registry.announce(
                    settings.internal_url_for(port), settings.public_url_for(port)
                )

                async def trigger() -> None:
                    await shutdown_trigger()
                    if settings.drain_s > 0:
                        # Not ready, no new sessions; the open ones have this long.
                        log.info(
                            "draining: up to %g s for %d MCP session(s) to end",
                            settings.drain_s,
                            len(runtime.sessions),
                        )
                        with trio.move_on_after(settings.drain_s):
                            await service.drain()
                    log.info("shutting down: grace period %g s", settings.shutdown_grace_s)
                    # The service's work and the open requests share one grace
                    # period, so a slow (or idle keep-alive) connection does not
                    # eat the time runs have to finish.
                    service.request_stop()
                    hard_stop.deadline = (
                        trio.current_time() + settings.shutdown_grace_s + _CLOSE_MARGIN_S
                    )

                app = wrap_app(create_app(runtime), config.wsgi_max_body_size, "asgi")
                stewarding = trio.CancelScope()
                if steward:
                    nursery.start_soon(
                        _steward, CollectorSteward(runtime.sessions.counts), stewarding
                    )
                try:
                    await worker_serve(
                        app,
                        config,
                        sockets=sockets,
                        shutdown_trigger=trigger,
                        task_status=task_status,
                    )
                finally:
                    stewarding.cancel()
            finally:
                # Requests have drained; the service's own work has had the
                # same grace period, and is cancelled when it runs out.
                await service.stop()
    if hard_stop.cancelled_caught:
        log.warning("grace period over: cancelled what was still running")


async def _steward(steward: CollectorSteward, scope: trio.CancelScope) -> None:
    with scope:
        await steward.serve()


def serve_until_signalled(settings: Settings, *, on_started: Callable[[list[str]], None]) -> None:
    """Run the server until SIGTERM or SIGINT; a second signal cancels at once.

    Args:
        on_started: called with the bound URLs once the server accepts requests.
    """

    async def main() -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            first_signal = trio.Event()
            async with trio.open_nursery() as nursery:

                async def watch_signals() -> None:
                    async for signum in signals:
                        name = signal.Signals(signum).name
                        if not first_signal.is_set():
                            log.info("received %s", name)
                            first_signal.set()
                        else:
                            log.warning("received %s again: stopping now", name)
                            nursery.cancel_scope.cancel()

                async def run_server(task_status: trio.TaskStatus[list[str]]) -> None:
                    await serve(
                        settings,
                        shutdown_trigger=first_signal.wait,
                        steward=True,
                        task_status=task_status,
                    )
                    nursery.cancel_scope.cancel()

                nursery.start_soon(watch_signals)
                binds = await nursery.start(run_server)
                settle_after_start()
                on_started(binds)

    trio.run(main)
