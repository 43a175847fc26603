"""An Anthropic Messages API that answers at once, for ``scripts/bench webhooks``.

agentws talks to it with the real ``anthropic`` SDK (``ANTHROPIC_API_KEY``
and ``ANTHROPIC_BASE_URL`` set), so a benchmark run pays for everything a
real run does except the model's thinking: the prompt built, the request
sent over HTTP, the reply parsed, usage recorded. ``POST /v1/messages``
answers one short text message in the API's wire format, without tool
calls; ``GET /readyz`` answers 200.

Run: ``python fake_messages_api.py``. It binds 127.0.0.1 on a free port,
prints one JSON line ``{"base_url": ...}`` on stdout, and serves until
SIGTERM/SIGINT.

Options (``scripts/chaos`` uses them; without them it answers at once, as
the benchmark wants): ``--delay S`` makes every answer wait S seconds, so
runs are in flight for that long; ``--slow-first N --slow-s S`` makes the
first N requests of each *key* wait S seconds (a key is the first match of
``--key-pattern`` in the request body: the webhook payload is in the
prompt, so a payload field names its event), then answer at once.
``GET /stats`` answers ``{"requests": total, "by_key": {key: count}}``
(keys are counted with ``--slow-first`` only).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import re
import sys
from pathlib import Path
from typing import Any, ClassVar

import trio

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.hypercorn_loopback import loopback_config, serve_on_loopback

#: The key agentws is given; any other gets 401, as the real API answers.
API_KEY = "sk-ant-bench-key"
_REPLY = "Event received and summarised: nothing needs doing."
_ids = itertools.count(1)


class _Behaviour:
    """How long answers wait (set from the command line; the defaults answer at once)."""

    delay_s = 0.0
    slow_first = 0
    slow_s = 0.0
    key_pattern: re.Pattern[bytes] = re.compile(rb"chaos-key-[A-Za-z0-9_-]+")
    requests = 0
    by_key: ClassVar[collections.Counter[str]] = collections.Counter()


def _wait_s(body: bytes) -> float:
    """Count the request (by key) and say how long its answer waits."""
    _Behaviour.requests += 1
    wait = _Behaviour.delay_s
    if _Behaviour.slow_first < 1:
        return wait  # keys are counted only when they matter
    match = _Behaviour.key_pattern.search(body)
    if match is not None:
        key = match.group(0).decode("ascii", "replace")
        _Behaviour.by_key[key] += 1
        if _Behaviour.by_key[key] <= _Behaviour.slow_first:
            wait = max(wait, _Behaviour.slow_s)
    return wait


async def _read_body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def _answer(send: Any, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = await _read_body(receive)
    if scope["path"] == "/readyz":
        await _answer(send, 200, {"status": "ready"})
        return
    if scope["path"] == "/stats":
        stats = {"requests": _Behaviour.requests, "by_key": dict(_Behaviour.by_key)}
        await _answer(send, 200, stats)
        return
    headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
    if API_KEY not in (headers.get("x-api-key"), headers.get("authorization", "")[7:]):
        error = {"type": "authentication_error", "message": "invalid x-api-key"}
        await _answer(send, 401, {"type": "error", "error": error})
        return
    request = json.loads(body)
    wait_s = _wait_s(body)
    if wait_s > 0:
        await trio.sleep(wait_s)
    await _answer(
        send,
        200,
        {
            "id": f"msg_bench{next(_ids):08d}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "claude"),
            "content": [{"type": "text", "text": _REPLY}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 400, "output_tokens": 12},
        },
    )


def _parse_args(argv: list[str] | None) -> None:
    parser = argparse.ArgumentParser(description="A local Anthropic Messages API.")
    parser.add_argument(
        "--delay", type=float, default=0.0, help="seconds every answer waits (default 0)"
    )
    parser.add_argument(
        "--slow-first",
        type=int,
        default=0,
        metavar="N",
        help="the first N requests of each key wait --slow-s seconds (default 0: none)",
    )
    parser.add_argument("--slow-s", type=float, default=0.0, help="see --slow-first")
    parser.add_argument(
        "--key-pattern",
        default=_Behaviour.key_pattern.pattern.decode(),
        help="regular expression whose first match in a request body is its key",
    )
    args = parser.parse_args(argv)
    _Behaviour.delay_s = args.delay
    _Behaviour.slow_first = args.slow_first
    _Behaviour.slow_s = args.slow_s
    _Behaviour.key_pattern = re.compile(args.key_pattern.encode())


async def main() -> None:
    config = loopback_config(keep_alive_timeout=75, graceful_timeout=1)
    await serve_on_loopback(app, config)


if __name__ == "__main__":
    _parse_args(None)
    sys.exit(trio.run(main))
