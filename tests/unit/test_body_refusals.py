"""A door's refusal of a body leaves nothing of its request alive once it is handled.

A refusal is an exception; raised, it holds its traceback, and the
traceback the frames of the request that raised it, with their locals
(the connection's objects among them). A refusal object a door keeps for
every request would keep the last such request alive until the next,
beyond what reference counting frees: each is made when raised.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from agentws.doors.mcp.transports import door_requests
from agentws.doors.oauth import bodies
from agentws.doors.webhooks import ingest
from agentws.http.asgi import BodyReader, BodyRefusals, HttpRefusal


class _Connection:
    """Stands for what a request's frames hold: its connection's objects."""


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def _read(connection: _Connection, message: dict[str, Any], refusals: BodyRefusals) -> None:
    async def receive() -> dict[str, Any]:
        return message

    await BodyReader(receive, 5.0).read(None, 16, refusals)


@pytest.mark.parametrize(
    "refusals",
    [door_requests._REFUSALS, bodies._REFUSALS, ingest._REFUSALS],
    ids=["mcp", "oauth", "webhooks"],
)
@pytest.mark.parametrize(
    "message",
    [{"type": "http.disconnect"}, {"type": "http.request", "body": b"x" * 17}],
    ids=["client gone", "too large"],
)
async def test_a_refused_body_leaves_nothing_of_its_request_alive(
    refusals: BodyRefusals, message: dict[str, Any], no_collector: None
) -> None:
    connection = _Connection()
    alive = weakref.ref(connection)
    with pytest.raises(HttpRefusal):
        await _read(connection, message, refusals)
    del connection
    assert alive() is None
