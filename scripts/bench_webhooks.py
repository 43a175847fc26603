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
import math
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import cli
from benchlib.agentws_setup import serve_agentws
from benchlib.fake_messages_api import API_KEY as MESSAGES_API_KEY
from benchlib.load import best_round, say_round
from benchlib.machine import describe_machine
from benchlib.procs import Child, Processes, retrying, start_server, stop_server
from benchlib.webhook_events import event_counts, event_times, summarise_e2e
from benchlib.webhook_load import PAYLOAD_BYTES, closed_job
from benchlib.webhook_setup import (
    WEBHOOK_CONCURRENCY,
    WebhookSite,
    fresh_copy,
    set_up_webhook,
    site_env,
)
from benchlib.webhooks_report import (
    E2E_TARGET_P99_MS,
    THROUGHPUT_TARGET,
    WORKER_CONCURRENCY,
    e2e_passed,
    render,
)

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "webhooks.json"

# Seconds a server gets to start answering.
_START_TIMEOUT_S = 30.0
# agentws's shutdown grace period. It waits all of it on SIGTERM, busy or idle
# (its ingest batcher only ends when cancelled): the default, 10 s, would
# only make the run slower.
_SHUTDOWN_GRACE_S = "2"
# Attempts at setting up or starting agentws (others may be editing it: a
# failed import is retried after a pause).
_ATTEMPTS = 3
_PACKAGES = ["agentws", "quart", "quart-trio", "hypercorn", "trio", "h11", "httpx2"]


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


def _start_model(procs: Processes) -> dict[str, str]:
    """Serve the instant Messages API; the environment that points agentws at it."""
    argv = [sys.executable, str(SCRIPTS / "benchlib" / "fake_messages_api.py")]
    _, line = start_server(
        procs,
        "messages-api",
        argv,
        timeout_s=_START_TIMEOUT_S,
        ready=lambda line: str(line["base_url"]) + "/readyz",
        want_status=200,
    )
    return {"ANTHROPIC_API_KEY": MESSAGES_API_KEY, "ANTHROPIC_BASE_URL": str(line["base_url"])}


def _start_agentws(
    procs: Processes, site: WebhookSite, database: Path, name: str, model_env: dict[str, str]
) -> tuple[Child, str]:
    """Serve ``database`` (a failed start is retried); the server and its base URL."""
    env = site_env(
        site.directory,
        database,
        AGENTWS_WORKER_CONCURRENCY=WORKER_CONCURRENCY,
        AGENTWS_SHUTDOWN_GRACE_S=_SHUTDOWN_GRACE_S,
        **model_env,
    )
    return serve_agentws(procs, name, env, _say, attempts=_ATTEMPTS)


def _run_load(procs: Processes, job: dict[str, Any], timeout: float) -> dict[str, Any]:
    return cli.run_load_client(procs, "webhook_load.py", job, timeout)


def _closed_timeout(args: argparse.Namespace) -> float:
    return args.warmup + args.duration + 120


def _measure_agentws(
    args: argparse.Namespace, procs: Processes, site: WebhookSite, n: int
) -> dict[str, Any]:
    name = f"agentws-{n}"
    database = fresh_copy(site, f"throughput-{n}")
    _say(f"agentws, round {n}: serving")
    server, base_url = _start_agentws(procs, site, database, name, args.model_env)
    _say(f"agentws, round {n}: {args.concurrency} senders for {args.warmup:g}+{args.duration:g} s")
    job = closed_job(args, [base_url + site.path], server.pid)
    result = _run_load(procs, job, _closed_timeout(args))
    # What the worker had done when the load stopped (it ran all along).
    result["at_end"] = event_counts(database)
    result["server_exit_status"] = stop_server(procs, server, _say)
    # Durability: every event answered 202 is in the database.
    stored = event_counts(database)["events"]
    result["events_stored"] = stored
    result["acknowledged_missing"] = max(0, result["accepted_total"] - stored)
    return result


def _measure_reference(
    args: argparse.Namespace, procs: Processes, site: WebhookSite, n: int
) -> dict[str, Any]:
    _say(f"reference, round {n}: serving (QuartTrio on Hypercorn's trio worker)")
    argv = [sys.executable, str(SCRIPTS / "benchlib" / "reference_hooks.py")]
    child, line = start_server(
        procs,
        f"reference-{n}",
        argv,
        timeout_s=_START_TIMEOUT_S,
        ready=lambda line: str(line["base_url"]) + "/readyz",
        want_status=200,
    )
    _say(
        f"reference, round {n}: {args.concurrency} senders for {args.warmup:g}+{args.duration:g} s"
    )
    job = closed_job(args, [str(line["base_url"]) + site.path], child.pid)
    result = _run_load(procs, job, _closed_timeout(args))
    result["server_exit_status"] = procs.stop(child)
    return result


def _note_noise(result: dict[str, Any]) -> None:
    say_round(_say, result, "accepted_per_s", "events/s")


def _summarise_throughput(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The best run of each server (the one least disturbed), with every run kept."""
    summary: dict[str, Any] = {}
    for name, results in runs.items():
        best = best_round(results, "accepted_per_s")
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
    status = stop_server(procs, server, _say)
    ids = [e["event_id"] for e in load["events"] if e.get("event_id")]
    result = summarise_e2e(load, event_times(database, ids))
    result["server_exit_status"] = status
    e2e = result["e2e"]
    _say(
        f"  {result['arrived']} of {result['sent']} messages, POST -> message p50 "
        f"{e2e['p50_ms']:.1f} ms, p99 {e2e['p99_ms']:.1f} ms, max {e2e['max_ms']:.1f} ms"
    )
    return result


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
            "worker_concurrency": int(WORKER_CONCURRENCY),
            "webhook_concurrency": int(WEBHOOK_CONCURRENCY),
            "shutdown_grace_s": float(_SHUTDOWN_GRACE_S),
            "model": args.model,
        },
        "targets": {"throughput_ratio": THROUGHPUT_TARGET, "e2e_p99_ms": E2E_TARGET_P99_MS},
    }
    with cli.workdir("webhooks", args.keep) as work, Processes(work) as procs:
        _say(f"setting up agentws in {work}")
        site = retrying("setting up agentws", lambda: set_up_webhook(work), _say)
        args.model_env = _start_model(procs) if args.model == "fake-api" else {}
        if args.only in (None, "throughput"):
            runs = cli.abba_rounds(
                args.rounds,
                {
                    "agentws": lambda n: _measure_agentws(args, procs, site, n),
                    "reference": lambda n: _measure_reference(args, procs, site, n),
                },
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
        ok &= e2e_passed(results["e2e"])
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
