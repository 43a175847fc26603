"""Load on a webhook endpoint, ``POST /hooks/<token>``, in a process of its own.

Reads a JSON job on stdin and prints one JSON document of results on stdout.
Two kinds of job:

``{"mode": "closed", "url": ..., "concurrency": 32, "warmup_s": 2,
"seconds": 10, "server_pid": 1234 or null}``
    ``concurrency`` senders, each with its own ``httpx2.AsyncClient`` (one
    keep-alive connection), POST back to back until the run ends. Only
    deliveries that start after the warm-up and finish before the end are
    measured; only 202 answers count as accepted; any other answer or a
    transport error is an error (warm-up included). The CPU time of this
    process, of the server and of the whole machine is taken at both ends
    of the measured window (:mod:`benchlib.load`'s window and loop).

``{"mode": "paced", "url": ..., "rate": 50, "warmup_s": 1, "seconds": 10,
"database": PATH, "drain_s": 30, "poll_s": 0.005}``
    Open loop: a delivery every ``1/rate`` seconds (paced by trio's clock,
    each in a task of its own, so a slow answer never delays the next
    send), from one client with a pool of keep-alive connections. The
    wall-clock time just before each POST is recorded with the ``event_id``
    answered. Meanwhile the agentws database is polled every ``poll_s``
    (read-only) for new ``chat_messages`` rows: each message's
    ``created_at`` and when it was first seen. Polling ends when every
    accepted event has its message, or ``drain_s`` after the last send.

Every delivery is a GitHub-style ``push`` (about 1.5 KB of JSON, a unique
``"n"``) with GitHub's headers, a fresh ``X-GitHub-Delivery`` included (so
agentws's dedup path runs as it would for GitHub).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx2
import trio

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.load import Tally, run_job_from_stdin, run_window
from benchlib.procs import CpuWindow

__all__ = ["PAYLOAD_BYTES", "closed_job", "payload", "run_closed", "run_paced"]

# A delivery slower than this is an error: the server is stuck, not slow.
_TIMEOUT_S = 30.0

_PUSH: dict[str, Any] = {
    "ref": "refs/heads/main",
    "before": "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
    "after": "59b20b8d5c6ff8d09518454d4dd8b7b30f095ab5",
    "created": False,
    "deleted": False,
    "forced": False,
    "base_ref": None,
    "compare": "https://github.com/acme/widgets/compare/6113728f27ae...59b20b8d5c6f",
    "repository": {
        "id": 186853002,
        "node_id": "MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=",
        "name": "widgets",
        "full_name": "acme/widgets",
        "private": True,
        "owner": {"login": "acme", "id": 21031067, "type": "Organization"},
        "html_url": "https://github.com/acme/widgets",
        "description": "Widgets and the services that make them",
        "default_branch": "main",
        "pushed_at": 1732365182,
    },
    "pusher": {"name": "octocat", "email": "octocat@example.com"},
    "organization": {"login": "acme", "id": 21031067},
    "sender": {"login": "octocat", "id": 583231, "type": "User", "site_admin": False},
    "head_commit": {
        "id": "59b20b8d5c6ff8d09518454d4dd8b7b30f095ab5",
        "tree_id": "f9d2a07e9488b91af2641b26b9407fe22a451433",
        "distinct": True,
        "message": "Fix the retry loop in the exporter\n\nThe exporter retried a 4xx "
        "response forever; give up after three attempts and log the body.",
        "timestamp": "2026-11-23T12:33:02Z",
        "url": "https://github.com/acme/widgets/commit/59b20b8d5c6ff8d09518454d4dd8b7b30f095ab5",
        "author": {"name": "Mona Octocat", "email": "octocat@example.com", "username": "octocat"},
        "committer": {"name": "GitHub", "email": "noreply@github.com", "username": "web-flow"},
        "added": [],
        "removed": [],
        "modified": ["exporter/retry.py", "exporter/tests/test_retry.py", "CHANGELOG.md"],
    },
}
# The body after '{"n": N, ': made once; each delivery only formats its number.
_TAIL = json.dumps(_PUSH)[1:].encode()
_HEADERS = {
    "content-type": "application/json",
    "user-agent": "GitHub-Hookshot/5f4c2e1",
    "x-github-event": "push",
    "x-github-hook-id": "292430182",
    "x-github-hook-installation-target-type": "organization",
    "x-github-hook-installation-target-id": "21031067",
}


def payload(n: int) -> bytes:
    """The body of delivery ``n``: a GitHub ``push`` event with ``"n": n`` first."""
    return b'{"n": %d, ' % n + _TAIL


#: The size of a typical body (n of 6 digits).
PAYLOAD_BYTES = len(payload(100_000))


def _headers() -> dict[str, str]:
    return {**_HEADERS, "x-github-delivery": str(uuid.uuid4())}


class _Closed(Tally):
    def __init__(self) -> None:
        super().__init__()
        self.accepted_total = 0
        self.next_n = 0


async def _sender(run: _Closed, url: str) -> None:
    limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
    perf_counter = time.perf_counter
    async with httpx2.AsyncClient(limits=limits, timeout=_TIMEOUT_S) as client:
        while perf_counter() < run.measure_until:
            n = run.next_n
            run.next_n += 1
            body, headers = payload(n), _headers()
            started = perf_counter()
            try:
                with trio.fail_after(_TIMEOUT_S):
                    response = await client.post(url, content=body, headers=headers)
            except (httpx2.HTTPError, trio.TooSlowError) as exc:
                run.status("transport")
                run.error(f"POST: {exc!r}")
                continue
            ended = perf_counter()
            run.status(response.status_code)
            if response.status_code != 202 or b'"queued"' not in response.content:
                run.error(f"HTTP {response.status_code}: {response.text[:200]}")
                continue
            run.accepted_total += 1
            run.record(started, ended)


def closed_job(args: Any, urls: list[str], server_pid: int) -> dict[str, Any]:
    """A ``closed`` job on ``urls`` from ``--concurrency``, ``--warmup`` and ``--duration``."""
    return {
        "mode": "closed",
        "url": urls[0],
        "urls": urls,
        "concurrency": args.concurrency,
        "warmup_s": args.warmup,
        "seconds": args.duration,
        "server_pid": server_pid,
    }


async def run_closed(job: dict[str, Any]) -> dict[str, Any]:
    """``concurrency`` senders back to back; accepted/s and latency (module docstring)."""
    run = _Closed()
    concurrency = int(job["concurrency"])
    seconds = float(job["seconds"])
    cpu = CpuWindow(job.get("server_pid"))
    # Several instances: the senders are spread over their URLs in turn.
    urls = job.get("urls") or [job["url"]]

    async def sender(index: int) -> None:
        await _sender(run, urls[index % len(urls)])

    await run_window(
        run, cpu, concurrency, sender, warmup_s=float(job["warmup_s"]), seconds=seconds
    )
    accepted = len(run.latencies)
    return {
        "mode": "closed",
        "accepted": accepted,
        "accepted_total": run.accepted_total,
        "sent_total": run.next_n,
        "seconds": seconds,
        "accepted_per_s": accepted / seconds,
        **run.figures(),
        "statuses": run.statuses,
        "concurrency": concurrency,
        "body_bytes": PAYLOAD_BYTES,
        **cpu.figures(),
    }


class _Paced(Tally):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[dict[str, Any]] = []
        # event_id -> [first seen (wall clock), created_at as stored]
        self.seen: dict[str, list[Any]] = {}
        self.waiting: set[str] = set()
        self.sending_done = False
        self.last_sent_at = 0.0
        self.polls = 0


async def _send_one(
    run: _Paced, client: httpx2.AsyncClient, url: str, n: int, late_s: float, measured: bool
) -> None:
    record: dict[str, Any] = {"n": n, "measured": measured, "late_ms": late_s * 1000}
    run.events.append(record)
    body, headers = payload(n), _headers()
    record["sent_at"] = time.time()
    started = time.perf_counter()
    try:
        with trio.fail_after(_TIMEOUT_S):
            response = await client.post(url, content=body, headers=headers)
    except (httpx2.HTTPError, trio.TooSlowError) as exc:
        record["status"] = "transport"
        run.status("transport")
        run.error(f"POST: {exc!r}")
        return
    record["ingest_ms"] = (time.perf_counter() - started) * 1000
    record["status"] = response.status_code
    run.status(response.status_code)
    try:
        event_id = response.json().get("event_id") if response.status_code == 202 else None
    except ValueError:
        event_id = None
    if not isinstance(event_id, str):
        run.error(f"HTTP {response.status_code}: {response.text[:200]}")
        return
    record["event_id"] = event_id
    if event_id not in run.seen:
        run.waiting.add(event_id)


def _new_messages(conn: sqlite3.Connection, after_rowid: int) -> list[tuple[int, str | None, str]]:
    rows = conn.execute(
        "SELECT rowid, event_id, created_at FROM chat_messages WHERE rowid > ? ORDER BY rowid",
        (after_rowid,),
    ).fetchall()
    return [(int(r[0]), r[1], str(r[2])) for r in rows]


async def _poll_messages(run: _Paced, database: str, poll_s: float, drain_s: float) -> None:
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, check_same_thread=False)
    last_rowid = 0
    try:
        while True:
            rows = await trio.to_thread.run_sync(_new_messages, conn, last_rowid)
            now = time.time()
            run.polls += 1
            for rowid, event_id, created_at in rows:
                last_rowid = max(last_rowid, rowid)
                if event_id is not None and event_id not in run.seen:
                    run.seen[event_id] = [now, created_at]
                    run.waiting.discard(event_id)
            if run.sending_done and (not run.waiting or now > run.last_sent_at + drain_s):
                return
            await trio.sleep(poll_s)
    finally:
        conn.close()


async def run_paced(job: dict[str, Any]) -> dict[str, Any]:
    """``rate`` deliveries a second, open loop; when each one's message appeared."""
    run = _Paced()
    rate = float(job["rate"])
    warmup = round(rate * float(job["warmup_s"]))
    total = warmup + round(rate * float(job["seconds"]))
    limits = httpx2.Limits(max_connections=256, max_keepalive_connections=64)
    async with (
        httpx2.AsyncClient(limits=limits, timeout=_TIMEOUT_S) as client,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(
            _poll_messages, run, job["database"], float(job["poll_s"]), float(job["drain_s"])
        )
        async with trio.open_nursery() as senders:
            t0 = trio.current_time() + 0.05
            for i in range(total):
                due = t0 + i / rate
                await trio.sleep_until(due)
                late = trio.current_time() - due
                senders.start_soon(_send_one, run, client, job["url"], i, late, i >= warmup)
            run.last_sent_at = time.time()
        run.sending_done = True
    return {
        "mode": "paced",
        "rate": rate,
        "warmup_events": warmup,
        "events": run.events,
        "seen": run.seen,
        "polls": run.polls,
        "errors": run.errors,
        "error_samples": run.error_samples,
        "statuses": run.statuses,
        "body_bytes": PAYLOAD_BYTES,
    }


def main() -> None:
    run_job_from_stdin(lambda job: run_paced if job["mode"] == "paced" else run_closed)


if __name__ == "__main__":
    main()
