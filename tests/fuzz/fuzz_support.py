"""Running a hypothesis property against a server that lives in the test's trio loop.

Hypothesis's ``@given`` cannot decorate an async (trio) test, and a sync
``@given`` test that starts a server per example (``trio.run`` each time)
would spend the whole budget starting servers. So the property runs in a
worker thread (:func:`trio.to_thread.run_sync`) while the server keeps
running in the test's own trio loop; each example's check is sent back to
that loop with :func:`trio.from_thread.run`. Hypothesis therefore drives a
real ``@given`` run, generation, explicit examples and shrinking included,
and a failure is reported as the usual "Falsifying example". The server's
state carries over from one example to the next (that is part of what is
fuzzed: no example may break the next one).

Every run is deterministic (``derandomize=True``, no example database) and
bounded by ``max_examples``, the count of the thorough tier
(``AGENTWS_THOROUGH=1``, see :mod:`tests.tiers`); the default run draws a
quarter of it. There is no deadline, since an example is a round trip to a
server.

One side effect to know of: while a property runs, hypothesis raises the
interpreter's recursion limit (by about 2000 frames), and that limit is the
whole process's, so the server under test has it too. Input that is
refused for its nesting depth (Python's json gives up at the recursion limit)
must be nested deeper than that to be refused during a fuzz run. Likewise the
global ``random`` module: hypothesis seeds it for each example, and warns
("Do not use the `random` module inside strategies") when its state changes
during a draw, which the server's own jitter (webhook retries, reconnect
backoff) does from the other thread. That one warning is ignored during a
run; no strategy here uses ``random``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs
import trio
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisDeprecationWarning

from tests.tiers import examples

__all__ = ["FUZZ_SETTINGS", "RawReply", "RawResponse", "fuzz", "header_text", "raw_exchange"]

T = TypeVar("T")

FUZZ_SETTINGS: dict[str, Any] = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": list(HealthCheck),
    "phases": (Phase.explicit, Phase.generate, Phase.shrink),
    "print_blob": False,
}

# A whole example (request and checks) never takes this long unless something hangs.
EXAMPLE_S = 10.0


async def fuzz(
    strategy: st.SearchStrategy[T],
    check: Callable[[T], Awaitable[None]],
    *,
    max_examples: int,
) -> None:
    """Run ``check`` on ``max_examples`` examples of ``strategy`` (a quarter of them
    outside the thorough tier), in this trio loop.

    ``check`` raises (an AssertionError) when an example shows a bug;
    hypothesis then shrinks it, again against the running server.
    """
    token = trio.lowlevel.current_trio_token()

    async def bounded(example: T) -> None:
        try:
            with trio.fail_after(EXAMPLE_S):
                await check(example)
        except BaseException as exc:
            # Hypothesis names the falsifying example too, but not always legibly.
            exc.add_note(f"example: {example!r}")
            raise

    # The default run's share; never below 20, so that small runs keep their point.
    count = examples(max_examples, min(max_examples, max(20, max_examples // 4)))

    @settings(max_examples=count, **FUZZ_SETTINGS)
    @given(strategy)
    def property_(example: T) -> None:
        trio.from_thread.run(bounded, example, trio_token=token)

    with warnings.catch_warnings():
        # The server, not a strategy, moved the global random state (see above).
        warnings.filterwarnings(
            "ignore",
            message="Do not use the `random` module inside strategies",
            category=HypothesisDeprecationWarning,
        )
        await trio.to_thread.run_sync(property_)


# Header values as h11 lets them through: latin-1, no control characters, no
# leading or trailing white space (h11 strips it, so it would not reach the server).
_HEADER_CHARS = st.characters(
    codec="latin-1", exclude_categories=("Cc",), exclude_characters="\x7f"
)


def header_text(*, min_size: int = 0, max_size: int = 64) -> st.SearchStrategy[str]:
    """Header values of every shape h11 will send."""
    return st.text(_HEADER_CHARS, min_size=min_size, max_size=max_size).map(
        lambda value: value.strip(" \t")
    )


@attrs.frozen
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes


class RawReply:
    """What a server sent back on a raw connection, split into responses."""

    def __init__(self, data: bytes, *, closed: bool) -> None:
        self.data = data
        #: Whether the server closed the connection (rather than the read timing out).
        self.closed = closed
        self.responses = _split_responses(data)

    @property
    def statuses(self) -> list[int]:
        return [response.status for response in self.responses]

    @property
    def final(self) -> list[RawResponse]:
        """The responses that are not interim (1xx)."""
        return [response for response in self.responses if response.status >= 200]

    def __repr__(self) -> str:
        return f"RawReply(statuses={self.statuses}, closed={self.closed}, data={self.data[:800]!r})"


_STATUS_LINE = re.compile(rb"HTTP/1\.[01] (\d{3})[^\r\n]*\r\n")


def _split_responses(data: bytes) -> list[RawResponse]:
    """HTTP/1.1 responses one after another (Content-Length framed, or to the end)."""
    responses: list[RawResponse] = []
    at = 0
    while at < len(data):
        line = _STATUS_LINE.match(data, at)
        assert line is not None, f"not an HTTP response at byte {at}: {data[at : at + 200]!r}"
        head_end = data.find(b"\r\n\r\n", line.end() - 2)
        assert head_end >= 0, f"a response head that never ends: {data[at:]!r}"
        headers: dict[str, str] = {}
        for field in data[line.end() : head_end].split(b"\r\n"):
            if field:
                name, _, value = field.partition(b":")
                headers[name.decode("latin-1").strip().lower()] = value.decode("latin-1").strip()
        status = int(line[1])
        at = head_end + 4
        if status < 200 or status in (204, 304):
            body = b""
        elif "content-length" in headers:
            length = int(headers["content-length"])
            body = data[at : at + length]
            at += length
        else:
            body, at = data[at:], len(data)
        responses.append(RawResponse(status, headers, body))
    return responses


async def raw_exchange(
    base_url: str, request: bytes, *, half_close: bool = True, read_s: float = 3.0
) -> RawReply:
    """Send ``request`` as is on a fresh TCP connection and read what comes back.

    With ``half_close`` the client's side is shut after sending (a body cut
    short ends there); reading stops when the server closes or after ``read_s``.
    """
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    data = bytearray()
    closed = False
    async with stream:
        try:
            await stream.send_all(request)
            if half_close:
                await stream.send_eof()
        except trio.BrokenResourceError:
            pass  # the server answered and closed before taking all of it
        with trio.move_on_after(read_s):
            closed = await read_until_closed(stream, data)
    return RawReply(bytes(data), closed=closed)


async def read_until_closed(stream: trio.abc.ReceiveStream, into: bytearray) -> bool:
    """Add what ``stream`` receives to ``into`` until the server closes it; True then.

    Bound it from outside (a cancel scope): what came before is kept.
    """
    while True:
        try:
            chunk = await stream.receive_some(65536)
        except trio.BrokenResourceError:
            chunk = b""
        if not chunk:
            return True
        into += chunk
