"""``scripts/bench webhooks``: webhook ingest against a bare QuartTrio endpoint, and POST → message.

One run measures, on loopback, in a temp directory of its own:

1. ``POST /hooks/<token>`` on agentws (``agentws serve``, SQLite store):
   accepted events per second (202 answers) and p50/p99 latency of the
   answer under 32 concurrent senders, back to back, each on one keep-alive
   connection, posting a GitHub-style ``push`` (about 1.5 KB of JSON). A 202
   from agentws means the event is durably committed (group commit: one
   SQLite transaction, ``synchronous=FULL``, for the deliveries waiting, a
   quarter of them at a time, at least 8)
   and its worker pool runs the events (by default the real ``anthropic``
   SDK against a local Messages API that answers at once, see
   :mod:`benchlib.fake_messages_api`; ``--model offline`` for the built-in
   digest), one message each to ``local:ops``, at the same time, on the
   same store;
2. the same load on the reference: a bare QuartTrio app on Hypercorn's trio
   worker whose ``POST /hooks/<token>`` reads the body, parses the JSON,
   checks it is an object and answers 202 without storing anything (see
   :mod:`benchlib.reference_hooks`): the stack's ceiling;
3. end to end on agentws: 50 deliveries a second, open loop, for 10 s, each
   with a unique ``"n"``; for each, the time from just before its POST (the
   client's wall clock) to the ``created_at`` of its chat message (agentws's
   wall clock, the same machine's), read from the database.

Servers run one after the other, each in its own process, each agentws on a
fresh copy of the set-up database; the load comes from another process.
Results are printed as Markdown and written as JSON (``--json-out``).
Targets: agentws accepts at least 0.9x the reference's events per second;
POST → message p99 under 100 ms at 50 events/s.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import math
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import cli
from benchlib.agentws_setup import agentws_bin
from benchlib.fake_messages_api import API_KEY as MESSAGES_API_KEY
from benchlib.load import percentile
from benchlib.machine import describe_machine
from benchlib.procs import BenchError, Child, Processes
from benchlib.report import cpu_cores, fmt, report_head, rounds_note, verdict
from benchlib.webhook_load import PAYLOAD_BYTES
from benchlib.webhook_setup import (
    BURST,
    RATE,
    WEBHOOK_CONCURRENCY,
    WebhookSite,
    fresh_copy,
    set_up_webhook,
    site_env,
)

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "webhooks.json"

THROUGHPUT_TARGET = 0.9  # agentws / reference, accepted events per second (gateway scale)
E2E_TARGET_P99_MS = 100.0  # POST -> chat message, p99
# Seconds a server gets to start answering.
_START_TIMEOUT_S = 30.0
# agentws's pool of event runs (AGENTWS_WORKER_CONCURRENCY).
_WORKER_CONCURRENCY = "16"
# agentws's shutdown grace period. It waits all of it on SIGTERM, busy or idle
# (its ingest batcher only ends when cancelled): the default, 10 s, would
# only make the run slower.
_SHUTDOWN_GRACE_S = "2"
# Attempts at setting up or starting agentws (others may be editing it: a
# failed import is retried after a pause).
_ATTEMPTS = 3
_RETRY_PAUSE_S = 3.0
_PACKAGES = ["agentws", "quart", "quart-trio", "hypercorn", "trio", "h11", "httpx2"]

T = TypeVar("T")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench webhooks",
        description=(
            "Benchmark incoming webhooks: accepted events/s and p50/p99 ingest latency of "
            "POST /hooks/<token> under concurrent senders, agentws (durable commit on "
            "SQLite, worker running) beside a bare QuartTrio endpoint on Hypercorn's trio "
            "worker that parses the JSON and answers 202 without storing (the stack's "
            "ceiling); then the time from POST to the chat message on agentws, open loop at "
            "a fixed rate, with a model that answers at once (--model). About 2.5 minutes with "
            "the defaults."
        ),
        epilog=(
            f"Targets: agentws >= {THROUGHPUT_TARGET}x the reference's accepted events/s; "
            f"POST -> chat message p99 < {E2E_TARGET_P99_MS:g} ms at 50 events/s. Exit status "
            "0 when the run completed (see --check), 1 when it failed (any delivery not "
            "answered 202, or an acknowledged event missing from the database)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--duration", type=float, default=10.0, help="measured seconds per throughput run"
    )
    parser.add_argument(
        "--warmup", type=float, default=2.0, help="warm-up seconds before each throughput run"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=32,
        help="concurrent senders, each with its own client and keep-alive connection",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help=(
            "throughput runs per server, in ABBA order (agentws, reference, reference, "
            "agentws, ...); the best run of each is reported"
        ),
    )
    parser.add_argument(
        "--e2e-rate", type=float, default=50.0, help="deliveries per second in the end-to-end run"
    )
    parser.add_argument(
        "--e2e-seconds", type=float, default=10.0, help="measured seconds of the end-to-end run"
    )
    parser.add_argument(
        "--e2e-warmup",
        type=float,
        default=1.0,
        help="seconds of deliveries at the same rate before the end-to-end run, not measured",
    )
    parser.add_argument(
        "--drain",
        type=float,
        default=30.0,
        help="seconds after the last delivery to wait for the last chat messages",
    )
    parser.add_argument(
        "--model",
        choices=["fake-api", "offline"],
        default="fake-api",
        help=(
            "what runs the agent: fake-api, the real anthropic SDK against a local Messages "
            "API that answers at once (the whole path of a real run but the model's time); "
            "offline, the built-in digest (no HTTP)"
        ),
    )
    parser.add_argument(
        "--instances",
        type=int,
        default=1,
        metavar="N",
        help=(
            "with N >= 2: measure ingest on PostgreSQL with one instance and with N instances "
            "behind the load client, in the same run (instead of the default measures)"
        ),
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "AGENTWS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"
        ),
        help="the PostgreSQL database --instances makes its schemas in",
    )
    parser.add_argument(
        "--only",
        choices=["throughput", "e2e"],
        default=argparse.SUPPRESS,
        help="run one measure only (default: both)",
    )
    cli.add_output_args(parser, DEFAULT_JSON_OUT)
    args = parser.parse_args(argv)
    args.only = getattr(args, "only", None)
    if min(args.duration, args.concurrency, args.rounds, args.e2e_rate, args.e2e_seconds) <= 0:
        parser.error(
            "--duration, --concurrency, --rounds, --e2e-rate and --e2e-seconds must be positive"
        )
    if min(args.warmup, args.e2e_warmup, args.drain) < 0:
        parser.error("--warmup, --e2e-warmup and --drain cannot be negative")
    return args


_say = cli.logger("webhooks")


def _retrying(what: str, attempt: Callable[[], T]) -> T:
    for n in range(1, _ATTEMPTS + 1):
        try:
            return attempt()
        except BenchError as exc:
            if n == _ATTEMPTS:
                raise
            _say(f"{what} failed (attempt {n} of {_ATTEMPTS}), retrying: {str(exc)[-300:]}")
            time.sleep(_RETRY_PAUSE_S)
    raise AssertionError("unreachable")


def _wait_until_ready(child: Child, url: str) -> None:
    cli.wait_until_answering(child, url, _START_TIMEOUT_S, want_status=200)


def _start_model(procs: Processes) -> dict[str, str]:
    """Serve the instant Messages API; the environment that points agentws at it."""
    child = procs.start(
        "messages-api", [sys.executable, str(SCRIPTS / "benchlib" / "fake_messages_api.py")]
    )
    base_url = str(child.read_json_line(_START_TIMEOUT_S)["base_url"])
    _wait_until_ready(child, base_url + "/readyz")
    return {"ANTHROPIC_API_KEY": MESSAGES_API_KEY, "ANTHROPIC_BASE_URL": base_url}


def _start_agentws(
    procs: Processes, site: WebhookSite, database: Path, name: str, model_env: dict[str, str]
) -> tuple[Child, str]:
    """Serve ``database`` (a failed start is retried); the server and its base URL."""

    def start() -> tuple[Child, str]:
        env = site_env(
            site.directory,
            database,
            AGENTWS_BIND="127.0.0.1:0",
            AGENTWS_WORKER_CONCURRENCY=_WORKER_CONCURRENCY,
            AGENTWS_SHUTDOWN_GRACE_S=_SHUTDOWN_GRACE_S,
            **model_env,
        )
        child = procs.start(name, [str(agentws_bin()), "serve", "--json"], env=env)
        try:
            base_url = str(child.read_json_line(_START_TIMEOUT_S)["base_url"])
            _wait_until_ready(child, base_url + "/readyz")
        except BenchError:
            procs.stop(child)
            raise
        return child, base_url

    return _retrying(f"starting {name}", start)


def _stop_agentws(procs: Processes, child: Child) -> int:
    status = procs.stop(child)
    if status != 0:
        _say(f"{child.name} exited with status {status}\n{child.log_tail()}")
    return status


def _run_load(procs: Processes, job: dict[str, Any], timeout: float) -> dict[str, Any]:
    return cli.run_load_client(procs, "webhook_load.py", job, timeout)


def _closed_job(args: argparse.Namespace, url: str, pid: int) -> dict[str, Any]:
    return {
        "mode": "closed",
        "url": url,
        "concurrency": args.concurrency,
        "warmup_s": args.warmup,
        "seconds": args.duration,
        "server_pid": pid,
    }


def _closed_timeout(args: argparse.Namespace) -> float:
    return args.warmup + args.duration + 120


def _event_counts(database: Path) -> dict[str, int]:
    """Events by status, and chat messages, in an agentws database (read-only)."""
    uri = f"file:{database}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
        counts = {
            str(status): int(count)
            for status, count in conn.execute("SELECT status, count(*) FROM events GROUP BY status")
        }
        counts["events"] = sum(counts.values())
        counts["messages"] = int(conn.execute("SELECT count(*) FROM chat_messages").fetchone()[0])
    return counts


def _measure_agentws(
    args: argparse.Namespace, procs: Processes, site: WebhookSite, n: int
) -> dict[str, Any]:
    name = f"agentws-{n}"
    database = fresh_copy(site, f"throughput-{n}")
    _say(f"agentws, round {n}: serving")
    server, base_url = _start_agentws(procs, site, database, name, args.model_env)
    _say(f"agentws, round {n}: {args.concurrency} senders for {args.warmup:g}+{args.duration:g} s")
    job = _closed_job(args, base_url + site.path, server.pid)
    result = _run_load(procs, job, _closed_timeout(args))
    # What the worker had done when the load stopped (it ran all along).
    result["at_end"] = _event_counts(database)
    result["server_exit_status"] = _stop_agentws(procs, server)
    # Durability: every event answered 202 is in the database.
    stored = _event_counts(database)["events"]
    result["events_stored"] = stored
    result["acknowledged_missing"] = max(0, result["accepted_total"] - stored)
    return result


def _measure_reference(
    args: argparse.Namespace, procs: Processes, site: WebhookSite, n: int
) -> dict[str, Any]:
    _say(f"reference, round {n}: serving (QuartTrio on Hypercorn's trio worker)")
    child = procs.start(
        f"reference-{n}", [sys.executable, str(SCRIPTS / "benchlib" / "reference_hooks.py")]
    )
    base_url = str(child.read_json_line(_START_TIMEOUT_S)["base_url"])
    _wait_until_ready(child, base_url + "/readyz")
    _say(
        f"reference, round {n}: {args.concurrency} senders for {args.warmup:g}+{args.duration:g} s"
    )
    job = _closed_job(args, base_url + site.path, child.pid)
    result = _run_load(procs, job, _closed_timeout(args))
    result["server_exit_status"] = procs.stop(child)
    return result


def _note_noise(result: dict[str, Any]) -> None:
    """How much CPU other processes took during the measured window, in cores."""
    cpu_cores(result)
    result["server_cpu_cores"] = (result.get("server_cpu_s") or 0.0) / result["seconds"]
    _say(
        f"  {result['accepted_per_s']:.1f} events/s, p50 {result['p50_ms']:.1f} ms, "
        f"p99 {result['p99_ms']:.1f} ms, {result['errors']} errors, server "
        f"{result['server_cpu_cores']:.2f} cores, client {result['client_cpu_cores']:.2f} cores, "
        f"other processes {result['other_cpu_cores']:.2f} cores"
    )


def _summarise_throughput(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The best run of each server (the one least disturbed), with every run kept."""
    summary: dict[str, Any] = {}
    for name, results in runs.items():
        best = dict(max(results, key=lambda r: r["accepted_per_s"]))
        best["errors_all_rounds"] = sum(r["errors"] for r in results)
        best["accepted_per_s_all_rounds"] = [r["accepted_per_s"] for r in results]
        best["other_cpu_cores_max"] = max(r["other_cpu_cores"] for r in results)
        best["client_cpu_cores_max"] = max(r["client_cpu_cores"] for r in results)
        if name == "agentws":
            best["acknowledged_missing_all_rounds"] = sum(
                r["acknowledged_missing"] for r in results
            )
        summary[name] = best
        summary[f"{name}_rounds"] = results
    reference = summary["reference"]["accepted_per_s"]
    summary["throughput_ratio"] = (
        summary["agentws"]["accepted_per_s"] / reference if reference else math.nan
    )
    return summary


def _timestamp(text: str | None) -> float | None:
    """A stored ISO timestamp (UTC) as seconds since the epoch."""
    if text is None:
        return None
    value = dt.datetime.fromisoformat(str(text))
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.timestamp()


def _event_times(database: Path, ids: list[str]) -> dict[str, dict[str, Any]]:
    """received/started/finished times and status of events, their messages' created_at."""
    uri = f"file:{database}?mode=ro"
    found: dict[str, dict[str, Any]] = {}
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for row in conn.execute(
                "SELECT e.id, e.status, e.attempts, e.received_at, e.started_at, e.finished_at,"
                " m.created_at FROM events e LEFT JOIN chat_messages m ON m.event_id = e.id"
                f" WHERE e.id IN ({marks})",
                chunk,
            ):
                found[row[0]] = {
                    "status": row[1],
                    "attempts": row[2],
                    "received_at": _timestamp(row[3]),
                    "started_at": _timestamp(row[4]),
                    "finished_at": _timestamp(row[5]),
                    "message_at": _timestamp(row[6]),
                }
    return found


def _spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": percentile(ordered, 0.50),
        "p90_ms": percentile(ordered, 0.90),
        "p99_ms": percentile(ordered, 0.99),
        "max_ms": ordered[-1] if ordered else math.nan,
        "count": len(ordered),
    }


def _summarise_e2e(load: dict[str, Any], times: dict[str, dict[str, Any]]) -> dict[str, Any]:
    measured = [e for e in load["events"] if e["measured"]]
    accepted = [e for e in measured if e.get("event_id")]
    e2e, seen, lag, commit, queued, run, ingest = [], [], [], [], [], [], []
    for event in accepted:
        ingest.append(event["ingest_ms"])
        row = times.get(event["event_id"], {})
        message_at = row.get("message_at")
        if message_at is None:
            continue
        sent = event["sent_at"]
        e2e.append((message_at - sent) * 1000)
        first_seen = load["seen"].get(event["event_id"])
        if first_seen:
            seen.append((first_seen[0] - sent) * 1000)
            lag.append((first_seen[0] - message_at) * 1000)
        if row.get("received_at") is not None and row.get("started_at") is not None:
            commit.append((row["received_at"] - sent) * 1000)
            queued.append((row["started_at"] - row["received_at"]) * 1000)
            run.append((message_at - row["started_at"]) * 1000)
    lates = sorted(e["late_ms"] for e in measured)
    statuses: dict[str, int] = {}
    for row in times.values():
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    return {
        "rate": load["rate"],
        "sent": len(measured),
        "accepted": len(accepted),
        "arrived": len(e2e),
        "errors": load["errors"],
        "error_samples": load["error_samples"],
        "statuses": load["statuses"],
        "event_statuses": statuses,
        "retried": sum(1 for row in times.values() if (row.get("attempts") or 0) > 1),
        "e2e": _spread(e2e),
        "observed": _spread(seen),
        "created_to_seen": _spread(lag),
        "ingest": _spread(ingest),
        "post_to_commit": _spread(commit),
        "commit_to_start": _spread(queued),
        "start_to_message": _spread(run),
        "send_late_p99_ms": percentile(lates, 0.99),
        "polls": load["polls"],
    }


def _measure_e2e(args: argparse.Namespace, procs: Processes, site: WebhookSite) -> dict[str, Any]:
    database = fresh_copy(site, "e2e")
    _say("agentws, end to end: serving")
    server, base_url = _start_agentws(procs, site, database, "agentws-e2e", args.model_env)
    _say(
        f"agentws, end to end: {args.e2e_rate:g} deliveries/s for "
        f"{args.e2e_warmup:g}+{args.e2e_seconds:g} s, then up to {args.drain:g} s for messages"
    )
    job = {
        "mode": "paced",
        "url": base_url + site.path,
        "rate": args.e2e_rate,
        "warmup_s": args.e2e_warmup,
        "seconds": args.e2e_seconds,
        "database": str(database),
        "drain_s": args.drain,
        "poll_s": 0.005,
    }
    load = _run_load(procs, job, args.e2e_warmup + args.e2e_seconds + args.drain + 120)
    status = _stop_agentws(procs, server)
    ids = [e["event_id"] for e in load["events"] if e.get("event_id")]
    result = _summarise_e2e(load, _event_times(database, ids))
    result["server_exit_status"] = status
    e2e = result["e2e"]
    _say(
        f"  {result['arrived']} of {result['sent']} messages, POST -> message p50 "
        f"{e2e['p50_ms']:.1f} ms, p99 {e2e['p99_ms']:.1f} ms, max {e2e['max_ms']:.1f} ms"
    )
    return result


def _e2e_passed(e2e: dict[str, Any]) -> bool:
    complete = e2e["sent"] > 0 and e2e["arrived"] == e2e["sent"]
    return complete and e2e["e2e"]["p99_ms"] < E2E_TARGET_P99_MS


def _throughput_rows(results: dict[str, Any]) -> list[list[str]]:
    ours, ref = results["agentws"], results["reference"]
    ratio = results["throughput_ratio"]
    senders = ours["concurrency"]
    rows = [
        [
            f"accepted events/s, {senders} senders",
            fmt(ours["accepted_per_s"]),
            fmt(ref["accepted_per_s"]),
            f">= {THROUGHPUT_TARGET:.1f}x reference",
            f"{verdict(ratio >= THROUGHPUT_TARGET)} ({ratio:.2f}x)",
        ],
        [
            "ingest latency p50 (ms)",
            fmt(ours["p50_ms"]),
            fmt(ref["p50_ms"]),
            "— (reported)",
            "—",
        ],
        [
            "ingest latency p99 (ms)",
            fmt(ours["p99_ms"]),
            fmt(ref["p99_ms"]),
            "— (reported)",
            "—",
        ],
        [
            "errors: not 202 (all rounds)",
            str(ours["errors_all_rounds"]),
            str(ref["errors_all_rounds"]),
            "0",
            verdict(ours["errors_all_rounds"] == 0 and ref["errors_all_rounds"] == 0),
        ],
    ]
    if ours.get("server_cpu_s") is not None and ref.get("server_cpu_s") is not None:
        per_event = [
            1000 * r["server_cpu_s"] / r["accepted"] if r["accepted"] else math.nan
            for r in (ours, ref)
        ]
        rows.append(
            [
                "server CPU per event (ms, all threads)",
                fmt(per_event[0], 2),
                fmt(per_event[1], 2),
                "— (reported)",
                "—",
            ]
        )
    return rows


def _e2e_rows(e2e: dict[str, Any]) -> list[list[str]]:
    spread = e2e["e2e"]
    rate = f"{e2e['rate']:g} events/s"
    return [
        [
            f"POST → chat message p99, {rate} (ms)",
            fmt(spread["p99_ms"]),
            "n/a",
            f"< {E2E_TARGET_P99_MS:g} ms",
            verdict(_e2e_passed(e2e)),
        ],
        [
            "POST → chat message p50 / max (ms)",
            f"{fmt(spread['p50_ms'])} / {fmt(spread['max_ms'])}",
            "n/a",
            "— (reported)",
            "—",
        ],
        [
            "POST → message visible to a reader p99 (ms, polled every 5 ms)",
            fmt(e2e["observed"]["p99_ms"]),
            "n/a",
            "— (reported)",
            "—",
        ],
        [
            "chat messages arrived",
            f"{e2e['arrived']} of {e2e['sent']}",
            "n/a",
            "all",
            verdict(e2e["sent"] > 0 and e2e["arrived"] == e2e["sent"]),
        ],
    ]


def _throughput_notes(results: dict[str, Any]) -> list[str]:
    config = results["config"]
    packages = results["machine"]["packages"]
    ours = results["agentws"]
    rounds = ", ".join(
        f"{name} " + " / ".join(fmt(v) for v in results[name]["accepted_per_s_all_rounds"])
        for name in ("agentws", "reference")
    )
    noise = max(results[n]["other_cpu_cores_max"] for n in ("agentws", "reference"))
    client = max(results[n]["client_cpu_cores_max"] for n in ("agentws", "reference"))
    at_end = ours["at_end"]
    missing = ours["acknowledged_missing_all_rounds"]
    lines = [
        f"- Reference: quart-trio {packages['quart-trio']} (Quart {packages['quart']}) on "
        f"Hypercorn {packages['hypercorn']}'s trio worker, h11 {packages['h11']}: "
        "`POST /hooks/<token>` awaits the body, `json.loads` it, checks it is an object, "
        "answers 202 `{event_id, status}`; stores nothing, no token lookup, no rate limit.",
        f"- Load: one client process, {config['concurrency']} senders, each its own "
        f"httpx2 {packages['httpx2']} `AsyncClient` on one keep-alive connection, POSTing "
        f"back to back a GitHub `push` ({config['body_bytes']:,} bytes of JSON, a unique "
        "`n` and `X-GitHub-Delivery` each); "
        f"{config['warmup_s']:g} s warm-up, then {config['duration_s']:g} s measured; only "
        f"202s count; servers one after the other, {config['rounds']} round(s) each in ABBA "
        "order, best round shown (all rounds in the JSON).",
        rounds_note("Accepted events/s", rounds, client, noise),
        "- The machine's speed drifts between rounds; the ratio of each agentws round to the "
        "reference round run next to it: "
        + ", ".join(
            f"{a / b:.2f}x" if b else "n/a"
            for a, b in zip(
                ours["accepted_per_s_all_rounds"],
                results["reference"]["accepted_per_s_all_rounds"],
                strict=True,
            )
        )
        + ".",
        f"- agentws durability: {'every' if not missing else 'NOT every'} event answered 202 "
        f"was in the database after the server stopped ({missing} missing, all rounds). "
        f"Meanwhile its worker had posted {at_end['messages']:,} messages for the "
        f"{at_end['events']:,} events stored in the best round "
        f"({at_end.get('queued', 0):,} still queued when the load stopped).",
    ]
    return lines


def _e2e_notes(e2e: dict[str, Any], config: dict[str, Any]) -> list[str]:
    def span(name: str) -> str:
        s = e2e[name]
        return f"p50 {fmt(s['p50_ms'])} / p99 {fmt(s['p99_ms'])} ms"

    statuses = ", ".join(f"{k} {v}" for k, v in sorted(e2e["event_statuses"].items()))
    return [
        f"- End to end: {e2e['rate']:g} deliveries/s, open loop (each sent on time in a task "
        f"of its own; p99 lateness {fmt(e2e['send_late_p99_ms'], 2)} ms), "
        f"{config['e2e_warmup_s']:g} s unmeasured then {config['e2e_seconds']:g} s "
        f"({e2e['sent']} events); POST → message is the message's `created_at` minus the "
        "wall-clock time just before the POST (one machine, one clock). The same events: "
        f"202 answer {span('ingest')}; POST → event stamped for commit {span('post_to_commit')}; "
        f"→ run started {span('commit_to_start')}; → message written "
        f"{span('start_to_message')} (`created_at`, stamped before the message's insert "
        f"commits); first seen by a reader polling every 5 ms {span('observed')}, "
        f"{span('created_to_seen')} after `created_at`. Events retried: {e2e['retried']}; "
        f"statuses (warm-up included): {statuses}.",
    ]


def _model_words(results: dict[str, Any]) -> str:
    if results["config"].get("model", "offline") == "offline":
        return "the offline model (the built-in digest, no HTTP)"
    return (
        "the model through the real anthropic SDK, against a local Messages API that answers "
        "at once (one request per event over loopback HTTP)"
    )


def render(results: dict[str, Any]) -> str:
    machine = results["machine"]
    packages = machine["packages"]
    rows: list[list[str]] = []
    if "agentws" in results:
        rows += _throughput_rows(results)
    if "e2e" in results:
        rows += _e2e_rows(results["e2e"])
    lines = [
        *report_head("webhooks", results["date"], rows, machine),
        f"- agentws {packages['agentws']} (`agentws serve`: Hypercorn {packages['hypercorn']}, "
        f"trio {packages['trio']}, SQLite store in WAL mode, synchronous=FULL): per delivery "
        "the token is looked up (active webhooks are remembered; the commit checks the "
        "webhook still exists and is active), the body read and parsed, the rate limit and "
        "dedup key checked, and the event committed before the 202 (group commit: a quarter "
        "of the deliveries waiting, at least 8, per transaction); the event "
        f"worker (AGENTWS_WORKER_CONCURRENCY={_WORKER_CONCURRENCY}, webhook concurrency "
        f"{WEBHOOK_CONCURRENCY}, rate {RATE}, burst {BURST}) runs {_model_words(results)} and "
        "posts one message per event to `local:ops` on the same store meanwhile; while "
        "deliveries queue for their commit it runs one event at a time "
        "(deliveries first, see docs/webhooks.md).",
    ]
    if "agentws" in results:
        lines += _throughput_notes(results)
    if "e2e" in results:
        lines += _e2e_notes(results["e2e"], results["config"])
    for name in ("agentws", "reference"):
        for error in results.get(name, {}).get("error_samples", [])[:3]:
            lines.append(f"- {name} error: {error}")
    for error in results.get("e2e", {}).get("error_samples", [])[:3]:
        lines.append(f"- end-to-end error: {error}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "mode": "webhooks",
        "date": cli.now_utc(),
        "machine": describe_machine(_PACKAGES),
        "config": {
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "concurrency": args.concurrency,
            "rounds": args.rounds,
            "body_bytes": PAYLOAD_BYTES,
            "e2e_rate": args.e2e_rate,
            "e2e_seconds": args.e2e_seconds,
            "e2e_warmup_s": args.e2e_warmup,
            "drain_s": args.drain,
            "worker_concurrency": int(_WORKER_CONCURRENCY),
            "webhook_concurrency": int(WEBHOOK_CONCURRENCY),
            "shutdown_grace_s": float(_SHUTDOWN_GRACE_S),
            "model": args.model,
        },
        "targets": {"throughput_ratio": THROUGHPUT_TARGET, "e2e_p99_ms": E2E_TARGET_P99_MS},
    }
    with cli.workdir("webhooks", args.keep) as work, Processes(work) as procs:
        _say(f"setting up agentws in {work}")
        site = _retrying("setting up agentws", lambda: set_up_webhook(work))
        args.model_env = _start_model(procs) if args.model == "fake-api" else {}
        if args.only in (None, "throughput"):
            runs = cli.abba_rounds(
                args.rounds,
                lambda n: _measure_agentws(args, procs, site, n),
                lambda n: _measure_reference(args, procs, site, n),
                _note_noise,
            )
            results.update(_summarise_throughput(runs))
        if args.only in (None, "e2e"):
            results["e2e"] = _measure_e2e(args, procs, site)
    return results


def _passed(results: dict[str, Any]) -> bool:
    ok = True
    if "throughput_ratio" in results:
        ok &= results["throughput_ratio"] >= THROUGHPUT_TARGET
    if "e2e" in results:
        ok &= _e2e_passed(results["e2e"])
    return ok


def _failed(results: dict[str, Any]) -> bool:
    """Deliveries not answered 202, or events acknowledged and not stored."""
    errors = sum(results.get(n, {}).get("errors_all_rounds", 0) for n in ("agentws", "reference"))
    errors += results.get("e2e", {}).get("errors", 0)
    missing = results.get("agentws", {}).get("acknowledged_missing_all_rounds", 0)
    return bool(errors or missing)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.instances >= 2:
        from benchlib.instances import render_instances, run_instances

        if args.json_out == DEFAULT_JSON_OUT:
            args.json_out = DEFAULT_JSON_OUT.with_name("webhooks-instances.json")
        outcome = cli.run_and_report("webhooks --instances", args, run_instances, render_instances)
        if isinstance(outcome, int):
            return outcome
        return 1 if outcome["errors"] or outcome["acknowledged_missing"] else 0
    results = cli.run_and_report("webhooks", args, run, render)
    if isinstance(results, int):
        return results
    if _failed(results):
        return 1
    if args.check and not _passed(results):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
