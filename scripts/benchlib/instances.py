"""``scripts/bench webhooks --instances N``: ingest on PostgreSQL, one instance beside N.

Each round gets a fresh PostgreSQL schema (made with ``psql`` on the
database ``--database-url`` names), the benchmark's webhook in it (through
the ``agentws`` CLI), and then ``agentws serve`` once (one instance) or N
times (each with its own ``AGENTWS_INSTANCE_ID`` and port). The load client's
senders are spread over the instances' URLs in turn, as a load balancer
would spread them. Rounds run 1, N, N, 1, ... (ABBA), so drift between them
shows. A 202 means the event is committed to PostgreSQL; after each round
every acknowledged event is checked to be in the database.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchlib import cli
from benchlib.agentws_setup import agentws_env, run_cli, serve_agentws
from benchlib.postgres import fresh_schema, psql
from benchlib.procs import Child, Processes
from benchlib.report import fmt, machine_line, markdown_table
from benchlib.webhook_load import closed_job
from benchlib.webhook_setup import (
    BURST,
    CHANNEL,
    PROMPT,
    RATE,
    WEBHOOK,
    WEBHOOK_CONCURRENCY,
    WORKSPACE,
)

__all__ = ["render_instances", "run_instances"]

_WORKER_CONCURRENCY = "16"

_say = cli.logger("webhooks --instances")


def _set_up_webhook(url: str, directory: Path) -> str:
    """The benchmark's webhook in the database at ``url``: its hook path."""
    env = agentws_env(url, AGENTWS_DATA_DIR=str(directory), AGENTWS_BIND="127.0.0.1:0")

    def run(*args: str) -> Any:
        return run_cli(env, *args, cwd=directory)

    run("init")
    run("workspace", "create", WORKSPACE)
    created = run(
        "webhook", "create", WORKSPACE, "--name", WEBHOOK, "--channel", CHANNEL,
        "--prompt", PROMPT, "--rate", RATE, "--burst", BURST,
        "--concurrency", WEBHOOK_CONCURRENCY,
    )  # fmt: skip
    return urlsplit(str(created["url"])).path


def _start(procs: Processes, url: str, directory: Path, name: str) -> tuple[Child, str]:
    env = agentws_env(
        url,
        AGENTWS_DATA_DIR=str(directory),
        AGENTWS_INSTANCE_ID=name,
        AGENTWS_WORKER_CONCURRENCY=_WORKER_CONCURRENCY,
        AGENTWS_SHUTDOWN_GRACE_S="5",
    )
    return serve_agentws(procs, name, env, _say)


def _measure(
    args: argparse.Namespace, procs: Processes, work: Path, instances: int, n: int
) -> dict[str, Any]:
    directory = work / f"round-{n}-{instances}"
    directory.mkdir()
    with fresh_schema(args.database_url) as (url, schema):
        path = _set_up_webhook(url, directory)
        servers = [
            _start(procs, url, directory, f"agentws-{n}-{i}") for i in range(1, instances + 1)
        ]
        _say(
            f"{instances} instance(s), round {n}: {args.concurrency} senders for "
            f"{args.duration:g} s"
        )
        job = closed_job(args, [base + path for _, base in servers], servers[0][0].pid)
        try:
            result = cli.run_load_client(
                procs, "webhook_load.py", job, args.warmup + args.duration + 120
            )
        finally:
            for child, _ in servers:
                procs.stop(child)
        stored = int(psql(args.database_url, f'SELECT COUNT(*) FROM "{schema}".events') or 0)
    result["instances"] = instances
    result["events_stored"] = stored
    result["acknowledged_missing"] = max(0, result["accepted_total"] - stored)
    _say(
        f"  {result['accepted_per_s']:.1f} events/s, p50 {result['p50_ms']:.1f} ms, "
        f"p99 {result['p99_ms']:.1f} ms, {result['errors']} errors"
    )
    return result


def run_instances(args: argparse.Namespace) -> dict[str, Any]:
    from benchlib.machine import describe_machine

    results: dict[str, Any] = {
        "mode": "webhooks-instances",
        "date": cli.now_utc(),
        "machine": describe_machine(["agentws", "hypercorn", "trio", "asyncpg"]),
        "config": {
            "instances": args.instances,
            "rounds": args.rounds,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "concurrency": args.concurrency,
            "database": urlsplit(args.database_url)._replace(netloc="…").geturl(),
        },
    }
    with cli.workdir("webhooks-instances", args.keep) as work, Processes(work) as procs:
        runs = cli.abba_rounds(
            args.rounds,
            {
                "one": lambda n: _measure(args, procs, work, 1, n),
                "many": lambda n: _measure(args, procs, work, args.instances, n),
            },
            lambda result: None,
        )
    one, many = runs["one"], runs["many"]
    results["one"], results["many"] = one, many
    best_one = max(r["accepted_per_s"] for r in one)
    best_many = max(r["accepted_per_s"] for r in many)
    results["scaling"] = best_many / best_one if best_one else 0.0
    results["errors"] = sum(r["errors"] for r in one + many)
    results["acknowledged_missing"] = sum(r["acknowledged_missing"] for r in one + many)
    return results


def render_instances(results: dict[str, Any]) -> str:
    n = results["config"]["instances"]
    best = {key: max(results[key], key=lambda r: r["accepted_per_s"]) for key in ("one", "many")}
    rows = [
        ["accepted events/s, PostgreSQL", fmt(best["one"]["accepted_per_s"]),
         fmt(best["many"]["accepted_per_s"]), f"{results['scaling']:.2f}x"],
        ["ingest latency p50 / p99 (ms)",
         f"{fmt(best['one']['p50_ms'])} / {fmt(best['one']['p99_ms'])}",
         f"{fmt(best['many']['p50_ms'])} / {fmt(best['many']['p99_ms'])}", ""],
        ["errors: not 202 (all rounds)", str(sum(r["errors"] for r in results["one"])),
         str(sum(r["errors"] for r in results["many"])), ""],
        ["acknowledged and not stored", str(sum(r["acknowledged_missing"] for r in results["one"])),
         str(sum(r["acknowledged_missing"] for r in results["many"])), ""],
    ]  # fmt: skip
    per_round = ", ".join(
        f"{r['instances']}: {r['accepted_per_s']:.1f}" for r in results["one"] + results["many"]
    )
    return "\n".join(
        [
            f"## scripts/bench webhooks --instances {n} — {results['date']}",
            "",
            markdown_table(["measure", "1 instance", f"{n} instances", f"{n} vs 1"], rows),
            "",
            machine_line(results["machine"]),
            f"- Each round: a fresh PostgreSQL schema ({results['config']['database']}), the "
            f"webhook, then `agentws serve` once or {n} times (AGENTWS_WORKER_CONCURRENCY="
            f"{_WORKER_CONCURRENCY} each, workers running); {results['config']['concurrency']} "
            "senders, each on one keep-alive connection, spread over the instances in turn. "
            "A 202 is a committed event.",
            f"- Accepted events/s per round (instances: events/s): {per_round}. On this "
            "machine's 2 cores, the instances, PostgreSQL and the load client share the CPU: "
            "more instances add capacity only where there are cores to run them.",
        ]
    )
