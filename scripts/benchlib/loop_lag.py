"""An event-loop stall seen from outside: ``GET /healthz`` every 10 ms on a kept-alive socket.

A server whose event loop is held up (a long collector pass, a burst of
work that never yields) answers nothing until it is free again, however
cheap the request. So a probe that asks for agentws's liveness page
(``/healthz``: no store, no session) every 10 ms, one request at a time on
one kept-alive connection, sees every stall longer than that as one long
round-trip: the largest round-trip after a revocation is the stall.

Run as a process (:mod:`benchlib.session_observe` starts it)::

    python loop_lag.py URL [--every 0.01] [--max-seconds 120]

It connects, makes one request (so the connection is warm), prints
``{"ready": true}``, then probes until the wall-clock time it reads on
stdin (or ``--max-seconds``), and prints ``{"rows": [[sent at
(time.time()), round-trip seconds, status], ...], "reconnects": N}``. A
request that fails is retried on a new connection, the failed attempt's
time charged to it. :func:`loop_lag` reads that around an origin.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.session_cpu import stop_time
from benchlib.stream_http import Body, parse_head, request_bytes

__all__ = ["STALL_TARGET_MS", "loop_lag"]

STALL_TARGET_MS = 100.0  # the issue: no event-loop stall over 100 ms in the 10 s after a revocation
_TIMEOUT_S = 30.0


class _Probe:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.request = request_bytes("GET", url, {"Accept": "application/json"})
        self.sock: socket.socket | None = None
        self.reconnects = -1

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(self.address, timeout=_TIMEOUT_S)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reconnects += 1
        return sock

    def once(self) -> int:
        """One request and its whole answer; the status (0 when it failed twice)."""
        for _ in range(2):
            try:
                if self.sock is None:
                    self.sock = self._connect()
                return self._exchange(self.sock)
            except (OSError, ValueError):
                if self.sock is not None:
                    self.sock.close()
                self.sock = None
        return 0

    def _exchange(self, sock: socket.socket) -> int:
        sock.sendall(self.request)
        buffer = b""
        head = None
        while head is None:
            data = sock.recv(65536)
            if not data:
                raise ConnectionResetError("closed before the answer")
            buffer += data
            head = parse_head(buffer)
        body = Body.for_head(head)
        body.feed(head.rest)
        while not body.done:
            data = sock.recv(65536)
            if not data:
                raise ConnectionResetError("closed in the answer's body")
            body.feed(data)
        if head.headers.get("connection", "").lower() == "close":
            sock.close()
            self.sock = None
        return head.status


def _run(url: str, every_s: float, limit_s: float) -> None:
    probe = _Probe(url)
    probe.once()
    print(json.dumps({"ready": True}), flush=True)
    rows: list[list[float]] = []
    stop = time.time() + limit_s
    due = time.monotonic()
    while time.time() < stop:
        sent_at, started = time.time(), time.perf_counter()
        status = probe.once()
        rows.append([sent_at, time.perf_counter() - started, status])
        stop = stop_time(stop)
        # The next one is due every_s after this one was; after a stall, at once.
        due = max(due + every_s, time.monotonic())
        time.sleep(max(0.0, due - time.monotonic()))
    print(json.dumps({"rows": rows, "reconnects": probe.reconnects}), flush=True)


def loop_lag(document: dict[str, Any], origin: float, after_s: float = 10.0) -> dict[str, Any]:
    """The probe's figures from ``origin`` (``time.time()``) to ``after_s`` after it.

    ``stall_ms``: the largest round-trip of a request sent in that window
    (its send time ``stall_at_ms`` after ``origin``); ``p50_ms``/``p99_ms``,
    ``probes``, ``failed``; ``before_max_ms``, the largest in the second
    before ``origin``, for comparison.
    """
    rows = document["rows"]
    inside = sorted(
        (rtt, sent - origin, status) for sent, rtt, status in rows if 0 <= sent - origin < after_s
    )
    before = [rtt for sent, rtt, _ in rows if -1.0 <= sent - origin < 0]
    rtts = sorted(rtt for rtt, _, _ in inside)
    worst = inside[-1] if inside else None

    def share(fraction: float) -> float | None:
        return rtts[min(len(rtts) - 1, int(fraction * len(rtts)))] * 1000 if rtts else None

    return {
        "probes": len(inside),
        "failed": sum(1 for _, _, status in inside if status != 200),
        "reconnects": document.get("reconnects", 0),
        "stall_ms": worst[0] * 1000 if worst else None,
        "stall_at_ms": worst[1] * 1000 if worst else None,
        "p50_ms": share(0.5),
        "p99_ms": share(0.99),
        "covered_s": max((t for _, t, _ in inside), default=0.0),
        "before_max_ms": max(before) * 1000 if before else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="GET a URL every 10 ms until told; round-trips.")
    parser.add_argument("url", help="e.g. http://127.0.0.1:8080/healthz")
    parser.add_argument("--every", type=float, default=0.01, help="seconds between requests")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="stop after this long")
    args = parser.parse_args()
    _run(args.url, args.every, args.max_seconds)


if __name__ == "__main__":
    main()
