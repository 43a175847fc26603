"""Serving a reference ASGI app on uvicorn, on a free loopback port, as the benchmarks do."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import uvicorn

__all__ = ["serve_on_loopback"]


def serve_on_loopback(app: Any, urls: Callable[[str], dict[str, str]]) -> None:
    """Bind 127.0.0.1 on a free port, print ``{"base_url": ..., **urls(base_url)}``, serve.

    Serves until SIGTERM/SIGINT.
    """
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted sockets only when
    # their proto says TCP. Without it, uvicorn's response headers and body go out
    # as two segments and the body waits for the client's delayed ACK: about 40 ms
    # on every request that follows another on the same connection.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2
    )
    base_url = f"http://127.0.0.1:{port}"
    print(json.dumps({"base_url": base_url, **urls(base_url)}), flush=True)
    uvicorn.Server(config).run(sockets=[sock])
