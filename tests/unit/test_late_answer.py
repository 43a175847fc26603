"""A stateless answer that turned into an SSE stream: beats from another task never cross its end.

The process's beating task (:mod:`agentws.doors.mcp.relay.beats`) may be
sending a ping when the call's answer is ready in the request's task: the
answer waits for that ping, and no beat starts once it is decided.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing
from mcp_types import JSONRPCResponse

from agentws.doors.mcp.dispatch.modern import _LateAnswer


class SlowClient:
    """An ASGI send that records what it was given; the first ping takes until ``release``."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.release = trio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.sent.append("start")
            return
        body = message["body"]
        if body.startswith(b": ping") and "ping" not in self.sent:
            await self.release.wait()
        self.sent.append("ping" if body.startswith(b": ping") else "answer")


async def test_the_answer_waits_for_the_ping_being_sent() -> None:
    client = SlowClient()
    late = _LateAnswer(client.send)
    answer = JSONRPCResponse(jsonrpc="2.0", id=1, result={"content": []})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(late.beat)
        await trio.testing.wait_all_tasks_blocked()
        late.ended = True
        assert late.started
        nursery.start_soon(late.end, answer)
        await trio.testing.wait_all_tasks_blocked()
        assert client.sent == ["start"]  # the answer has not overtaken the ping
        client.release.set()
    assert client.sent == ["start", "ping", "answer"]


async def test_no_beat_once_the_answer_is_decided() -> None:
    client = SlowClient()
    late = _LateAnswer(client.send)
    late.ended = True
    await late.beat()
    assert (late.started, client.sent) == (False, [])
