"""The events of a Streamable HTTP session's SSE streams, kept for clients that reconnect.

Every event the door writes on a Streamable HTTP stream has an id,
``<stream>.<seq>``: the stream is ``0`` for the session's ``GET`` stream and
a number of its own for each request's stream; ``seq`` counts that stream's
events from 1 (``<stream>.0`` is its start, the id of a priming event). A
client whose stream broke reconnects with ``GET`` and ``Last-Event-ID`` and
is sent what that stream had after that id, then its live events: as
2025-11-25 says, resuming replays the stream the event id belongs to, never
another. Ids mean nothing outside their session: the door looks one up in
the session the request names.

Bounds: each stream keeps its newest ``mcp_replay_events`` events and none
older than ``mcp_replay_s``; a session keeps at most
:data:`MAX_REQUEST_STREAMS` request streams, dropping the oldest answered
ones (one still waiting for its response is never dropped). Opening a
stream costs the same however many a session has: a batch opens one per
request.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import attrs
import trio

__all__ = [
    "CONNECTION_BUFFER",
    "MAX_REQUEST_STREAMS",
    "Connection",
    "Event",
    "ReplayStream",
    "Replays",
]

#: ``(id, data, last)``: an SSE event's id, its JSON-RPC text, whether it ends its stream.
Event = tuple[str, str, bool]

#: Answered request streams a session keeps for a late resume: enough for a
#: client's requests in flight when its connection dropped, small per session.
MAX_REQUEST_STREAMS = 32
# Answered keys remembered before the discarded ones among them are forgotten.
_COMPACT_AT = 4 * MAX_REQUEST_STREAMS
#: The key of the session's ``GET`` stream.
STANDALONE = "0"
#: Live events queued for one connection before its reader counts as slow.
CONNECTION_BUFFER = 32


@attrs.define(eq=False)
class ReplayStream:
    """One SSE stream's recent events and the channel of the connection writing it, if any."""

    key: str
    max_events: int
    max_age_s: float
    seq: int = 0
    #: The open connection's channel; None while no client reads this stream.
    listener: trio.MemorySendChannel[Event] | None = None
    #: Its last event (a request's response) is recorded.
    finished: bool = False
    #: Told the stream's key once, when its last event is recorded.
    on_finished: Callable[[str], None] | None = None
    _events: deque[tuple[int, float, str, bool]] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._events = deque(maxlen=self.max_events)

    def event_id(self, seq: int) -> str:
        return f"{self.key}.{seq}"

    def record(self, data: str, last: bool) -> Event:
        """Keep the next event of this stream and return it, with its id."""
        self.seq += 1
        now = trio.current_time()
        self._events.append((self.seq, now, data, last))
        self._prune(now)
        if last and not self.finished:
            self.finished = True
            if self.on_finished is not None:
                self.on_finished(self.key)
        return self.event_id(self.seq), data, last

    def after(self, seq: int) -> list[Event]:
        """The kept events after event ``seq`` (those older than the bounds are gone)."""
        self._prune(trio.current_time())
        return [(self.event_id(s), data, last) for s, _, data, last in self._events if s > seq]

    def connect(self) -> Connection:
        """Live events go to a new connection from now on; a previous connection's ends."""
        send, receive = trio.open_memory_channel[Event](CONNECTION_BUFFER)
        if self.listener is not None:
            self.listener.close()
        self.listener = send
        return Connection(self, receive, send)

    def detach(self, listener: trio.MemorySendChannel[Event] | None = None) -> None:
        """No connection reads this stream any more (or not ``listener``, if given)."""
        if self.listener is not None and listener in (None, self.listener):
            self.listener.close()
            self.listener = None

    def _prune(self, now: float) -> None:
        oldest = now - self.max_age_s
        while self._events and self._events[0][1] < oldest:
            self._events.popleft()


@attrs.frozen(eq=False)
class Connection:
    """One HTTP connection reading a stream's live events from ``receive``."""

    stream: ReplayStream
    receive: trio.MemoryReceiveChannel[Event]
    _send: trio.MemorySendChannel[Event]

    def close(self) -> None:
        """The connection is gone; the stream's events stay kept for a resume."""
        self.receive.close()
        self.stream.detach(self._send)


@attrs.define(eq=False)
class Replays:
    """A session's streams by key: the ``GET`` stream and its requests' streams."""

    max_events: int
    max_age_s: float
    _streams: dict[str, ReplayStream] = attrs.field(factory=dict, init=False)
    _next: int = attrs.field(default=1, init=False)
    # Keys of request streams in the order their responses were recorded (some
    # may be gone already): the oldest answered stream is at the left.
    _answered: deque[str] = attrs.field(factory=deque, init=False)
    _compact_at: int = attrs.field(default=_COMPACT_AT, init=False)

    def standalone(self) -> ReplayStream:
        """The session's ``GET`` stream (it exists from the session's start)."""
        stream = self._streams.get(STANDALONE)
        if stream is None:
            stream = self._streams[STANDALONE] = self._new(STANDALONE)
        return stream

    def open(self) -> ReplayStream:
        """A new request's stream; the oldest answered ones beyond the bound are dropped."""
        key = str(self._next)
        stream = self._streams[key] = self._new(key)
        stream.on_finished = self._finished
        self._next += 1
        answered = self._answered
        while answered and len(self._streams) - (STANDALONE in self._streams) > (
            MAX_REQUEST_STREAMS
        ):
            self._streams.pop(answered.popleft(), None)
        return stream

    def _finished(self, key: str) -> None:
        self._answered.append(key)
        if len(self._answered) > self._compact_at:
            # Forget the streams discarded since (answered with JSON). The
            # length this takes doubles at least before the next time: O(1)
            # an answer.
            self._answered = deque(key for key in self._answered if key in self._streams)
            self._compact_at = max(_COMPACT_AT, 2 * len(self._answered))

    def discard(self, stream: ReplayStream) -> None:
        """Drop a stream no client can resume (its request was answered with JSON)."""
        stream.detach()
        self._streams.pop(stream.key, None)

    def find(self, event_id: str) -> tuple[ReplayStream, int] | None:
        """The stream ``event_id`` belongs to and its position in it; None if unknown."""
        key, _, seq = event_id.strip().partition(".")
        stream = self._streams.get(key)
        if stream is None or not (seq.isascii() and seq.isdigit()) or int(seq) > stream.seq:
            return None
        return stream, int(seq)

    def resume(self, event_id: str) -> tuple[list[Event], Connection | None] | None:
        """Reattach the stream ``event_id`` belongs to (the client's ``Last-Event-ID``).

        Returns:
            The kept events after ``event_id``, and the connection to the
            stream's live events (None when it has ended: a request whose
            response is among those events). None if there is no such event.

        A connection still attached to that stream (a client that reconnected
        before the server saw it leave) is ended: the new one takes over.
        """
        found = self.find(event_id)
        if found is None:
            return None
        stream, seq = found
        missed = stream.after(seq)
        return missed, None if stream.finished else stream.connect()

    def close(self) -> None:
        """The session ended: every connection's stream ends."""
        for stream in self._streams.values():
            stream.detach()

    def _new(self, key: str) -> ReplayStream:
        return ReplayStream(key, self.max_events, self.max_age_s)
