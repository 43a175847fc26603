"""Serving a test's ASGI app (a remote MCP server, the conformance fixture) on loopback.

:func:`serve_loopback` runs Hypercorn on ``127.0.0.1`` for the length of a
block and yields the base URL it bound. The servers it runs are remotes
agentws keeps links to: stopping them does not wait long for those streams.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import hypercorn.trio
import trio
from hypercorn.config import Config

__all__ = ["serve_loopback"]


@asynccontextmanager
async def serve_loopback(
    app: Any, port: int = 0, *, tls: tuple[Path, Path] | None = None
) -> AsyncIterator[str]:
    """Serve ``app`` at ``http://127.0.0.1:<port>`` until the block ends; yield that base URL.

    With ``tls`` (a certificate file and its key file), serve HTTPS instead.
    """
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    if tls is not None:
        config.certfile, config.keyfile = str(tls[0]), str(tls[1])
    # Our links hold a stream open: do not wait long for it when stopping.
    config.graceful_timeout = 0.2
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            functools.partial(hypercorn.trio.serve, app, config, shutdown_trigger=stop.wait)
        )
        try:
            yield binds[0]
        finally:
            stop.set()
