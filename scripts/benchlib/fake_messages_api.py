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
"""

from __future__ import annotations

import itertools
import json
import signal
import sys
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

#: The key agentws is given; any other gets 401, as the real API answers.
API_KEY = "sk-ant-bench-key"
_REPLY = "Event received and summarised: nothing needs doing."
_ids = itertools.count(1)


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
    headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
    if API_KEY not in (headers.get("x-api-key"), headers.get("authorization", "")[7:]):
        error = {"type": "authentication_error", "message": "invalid x-api-key"}
        await _answer(send, 401, {"type": "error", "error": error})
        return
    request = json.loads(body)
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


async def main() -> None:
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.keep_alive_timeout = 75
    config.graceful_timeout = 1
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        stop = trio.Event()
        async with trio.open_nursery() as nursery:

            async def watch_signals() -> None:
                async for _ in signals:
                    if stop.is_set():
                        nursery.cancel_scope.cancel()
                    stop.set()

            async def run_server(task_status: trio.TaskStatus[list[str]]) -> None:
                await serve(app, config, shutdown_trigger=stop.wait, task_status=task_status)
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch_signals)
            binds = await nursery.start(run_server)
            print(json.dumps({"base_url": binds[0]}), flush=True)


if __name__ == "__main__":
    sys.exit(trio.run(main))
