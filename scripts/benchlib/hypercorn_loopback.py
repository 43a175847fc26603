"""Serving a QuartTrio app on Hypercorn's trio worker, on a free loopback port.

The bare endpoints the benchmarks stand agentws beside, or lean on
(:mod:`benchlib.reference_hooks`, :mod:`benchlib.stream_floor`,
:mod:`benchlib.fake_messages_api`), all serve this way: bind
``127.0.0.1:0``, print ``{"base_url": ...}`` on stdout once bound (what
:func:`benchlib.procs.start_server` waits for), serve until SIGTERM or
SIGINT (a second signal ends it at once).
"""

from __future__ import annotations

import json
import logging
import signal
from collections.abc import Callable
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

__all__ = ["loopback_config", "serve_on_loopback"]


def loopback_config(**settings: Any) -> Config:
    """A Hypercorn config on a free loopback port, no access log, plus ``settings``."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.worker_class = "trio"
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    for name, value in settings.items():
        setattr(config, name, value)
    return config


async def serve_on_loopback(
    app: Any, config: Config, *, on_bound: Callable[[], None] | None = None
) -> None:
    """Serve ``app``; print its base URL once bound (after ``on_bound()``); until a signal."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        stop = trio.Event()
        async with trio.open_nursery() as nursery:

            async def watch_signals() -> None:
                async for _ in signals:
                    if stop.is_set():  # a second signal: now
                        nursery.cancel_scope.cancel()
                    stop.set()

            async def run_server(task_status: trio.TaskStatus[list[str]]) -> None:
                await serve(app, config, shutdown_trigger=stop.wait, task_status=task_status)
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch_signals)
            binds = await nursery.start(run_server)
            if on_bound is not None:
                on_bound()
            print(json.dumps({"base_url": binds[0]}), flush=True)
