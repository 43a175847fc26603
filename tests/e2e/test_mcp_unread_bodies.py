"""An MCP answer given before the door read the body ends the request, however large the upload.

The door answers some requests before it reads their body: a
``Content-Length`` over the limit (413), a token it does not know (401), a
session it does not hold (404), a protocol version the session does not speak
(400). Hypercorn hands a body to the app through a queue of ten pieces and
ends a request by putting ``http.disconnect`` into that queue: if it is full
of body nobody reads, the answer never ends, the connection is never closed,
and the client, still uploading, stalls until its own timeout. Whether the
queue is full when the door answers is a race a loaded machine loses, so
each case here holds the door (its authentication waits) until the upload
has stalled, then checks that the client gets its answer, told
``Connection: close``, and that the connection ends within seconds.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

from agentws.doors.mcp.sessions.auth import Authenticator
from tests.e2e.mcp_support import ACCEPT, Running, raw_session, running
from tests.e2e.slow_client_support import request_head
from tests.fuzz.fuzz_support import RawReply, read_until_closed

# Far more than Hypercorn's queue (ten pieces of at most 64 KiB) and the socket buffers hold.
UPLOAD_BYTES = 16 * 1024 * 1024
PIECE_BYTES = 64 * 1024
# An upload that made no progress for this long is held up by the server.
STALLED_S = 0.3
# Each upload must be answered, and its connection ended, within this.
CUT_S = 5.0


class _Upload:
    """One raw upload of ``UPLOAD_BYTES``: sent while whatever comes back is read."""

    def __init__(self) -> None:
        self.sent = 0
        self.started = trio.Event()

    async def stalled(self) -> None:
        """Return once the upload has begun and made no progress for ``STALLED_S``."""
        await self.started.wait()
        while True:
            before = self.sent
            await trio.sleep(STALLED_S)
            if self.sent == before:
                return

    async def run(self, base_url: str, head: bytes) -> tuple[RawReply, float]:
        """The reply, and the seconds until the server closed (or ``CUT_S`` passed)."""
        host, port = base_url.removeprefix("http://").rsplit(":", 1)
        received = bytearray()
        closed = False
        piece = b"x" * PIECE_BYTES
        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            await stream.send_all(head)
            started = trio.current_time()

            async def send_body() -> None:
                self.started.set()
                while self.sent < UPLOAD_BYTES:
                    try:
                        await stream.send_all(piece)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        return  # the server closed under the upload: expected
                    self.sent += len(piece)

            with trio.move_on_after(CUT_S):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(send_body)
                    closed = await read_until_closed(stream, received)
                    nursery.cancel_scope.cancel()
        return RawReply(bytes(received), closed=closed), trio.current_time() - started


@pytest.fixture
def held_door(monkeypatch: pytest.MonkeyPatch) -> list[_Upload]:
    """While an upload is in the list, the door's authentication waits for it to stall."""
    uploads: list[_Upload] = []
    authenticate = Authenticator.authenticate

    @functools.wraps(authenticate)
    async def held(self: Authenticator, *args: Any) -> Any:
        for upload in uploads:
            await upload.stalled()
        return await authenticate(self, *args)

    monkeypatch.setattr(Authenticator, "authenticate", held)
    return uploads


async def test_answers_before_the_body_end_the_connection(
    tmp_path: Path, held_door: list[_Upload]
) -> None:
    async with running(tmp_path, with_library=False) as server:
        async with httpx2.AsyncClient(timeout=10) as http:
            session = await raw_session(http, server)
        base = {**server.headers(), "Accept": ACCEPT, "Content-Type": "application/json"}
        path = server.url.removeprefix(server.base_url)
        # (what, path, headers, the answer's status)
        cases: list[tuple[str, str, dict[str, str], int]] = [
            ("over the limit", path, session, 413),
            ("unknown token", path, {**base, "Authorization": "Bearer agwt_unknown"}, 401),
            ("unknown session", f"{path}/messages?session_id=test-1.none", base, 404),
            ("unknown version", path, {**session, "MCP-Protocol-Version": "1999-01-01"}, 400),
        ]
        for name, where, headers, status in cases:
            head = request_head(where, server.base_url, headers, length=UPLOAD_BYTES)
            upload = _Upload()
            held_door[:] = [upload]
            reply, elapsed = await upload.run(server.base_url, head)
            _assert_ended(name, server, reply, elapsed, upload.sent, status)


def _assert_ended(
    name: str, server: Running, reply: RawReply, elapsed: float, sent: int, status: int
) -> None:
    assert reply.closed, (
        f"{name}: the connection was still open {CUT_S} s into the upload "
        f"({sent} bytes sent): {reply}"
    )
    assert reply.statuses == [status], f"{name}: {reply}"
    assert reply.final[0].headers.get("connection") == "close", f"{name}: {reply}"
    assert sent < UPLOAD_BYTES, f"{name}: the whole upload was read ({server.base_url})"
    assert elapsed < CUT_S, f"{name}: {elapsed:.1f} s"
