"""The reference for ``scripts/bench webhooks``: a bare QuartTrio webhook on Hypercorn (trio).

``POST /hooks/<token>`` reads the body, parses it as JSON, checks that it is
an object and answers 202 ``{"event_id": "evt_…", "status": "queued"}``,
the answer agentws gives. It stores nothing, checks no token, keeps no rate
limit and runs no agent: it is what the stack (Hypercorn, trio, Quart)
costs, the ceiling a durable endpoint on it can approach. A body that is
not JSON gets 400, JSON that is not an object 422, as agentws answers.

Hypercorn is configured as ``agentws serve`` configures it (no access log,
75 s keep-alive), and the objects made at start are frozen out of the
collector's reach (``gc.freeze()``) as agentws does once it serves.

Run: ``python reference_hooks.py``. It binds 127.0.0.1 on a free port,
prints one JSON line ``{"base_url": ...}`` on stdout, and serves until
SIGTERM/SIGINT.
"""

from __future__ import annotations

import gc
import json
import logging
import secrets
import sys
from pathlib import Path
from typing import Any

import trio
from hypercorn.config import Config
from quart import request
from quart_trio import QuartTrio

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.hypercorn_loopback import loopback_config, serve_on_loopback

_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"


def _event_id() -> str:
    return "evt_" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(16))


def make_app() -> QuartTrio:
    app = QuartTrio("agentws-bench-reference-hooks")

    @app.post("/hooks/<token>")
    async def hook(token: str) -> tuple[dict[str, Any], int]:
        body = await request.get_data()
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return {"error": {"code": "invalid_json", "message": "not JSON"}}, 400
        if not isinstance(payload, dict):
            return {"error": {"code": "not_an_object", "message": "not an object"}}, 422
        return {"event_id": _event_id(), "status": "queued"}, 202

    @app.get("/readyz")
    async def readyz() -> dict[str, str]:
        return {"status": "ready"}

    return app


def hypercorn_config() -> Config:
    """As ``agentws.server.hypercorn_config`` sets it, on a free loopback port."""
    return loopback_config(keep_alive_timeout=75, graceful_timeout=2)


async def main() -> None:
    await serve_on_loopback(make_app(), hypercorn_config(), on_bound=gc.freeze)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    trio.run(main)
