"""``scripts/bench approvals``: the approval queue's lists with a full queue of large calls.

One run, on loopback, in a temp directory of its own:

1. a fresh database, on each of ``--stores`` in turn (a SQLite file, a new
   PostgreSQL schema in ``--database-url``): ``agentws init``, a workspace,
   a group, an MCP token, an admin and an admin API token, through the CLI;
   then
   ``--approvals`` pending calls of that token, each with
   ``--argument-bytes`` of arguments (by default 1,000 of 256 KiB, the
   default cap ``AGENTWS_APPROVAL_MAX_ARGUMENT_BYTES``: 256 MB of
   arguments), written as the permission gate writes them (see
   :mod:`benchlib.add_approvals`);
2. ``agentws serve``; the admin signs in to the dashboard;
3. each list, ``--requests`` times one after the other after two warm-up
   requests: ``GET /dashboard/approvals`` (signed in), ``GET
   /api/v1/approvals`` (default page, 50), ``?limit=1`` and ``?limit=200``
   (the largest page); and, for scale, one call's own page (its whole
   arguments). For each: median, p95 and slowest answer, and the size of
   the body; and the server's resident memory before and after.

Target (issue 21): with 1,000 pending calls of 256 KiB, the approvals page
and ``GET /api/v1/approvals`` answer in under 200 ms (median) and in under
1 MB. Results are printed as Markdown and written as JSON (``--json-out``).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import cli
from benchlib.agentws_setup import (
    GROUP,
    WORKSPACE,
    agentws_env,
    run_cli,
    run_script,
    serve_agentws,
    set_up_admin,
    sign_in,
)
from benchlib.load import percentile, timed_gets
from benchlib.machine import describe_machine
from benchlib.postgres import store_url, stores_arg
from benchlib.procs import BenchError, Processes, rss_kb
from benchlib.report import fmt, machine_line, markdown_table, verdict

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "approvals.json"

TARGET_MS = 200.0  # median answer of a list
TARGET_BYTES = 1_000_000  # body of a list
_WARMUP = 2
_PACKAGES = ["agentws", "quart", "quart-trio", "hypercorn", "trio", "jinja2", "httpx2"]
_TOKEN, _ADMIN = "laptop", "bench"

_say = cli.logger("approvals")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench approvals",
        description=(
            "Benchmark the approval queue's lists with many large pending calls: latency "
            "and size of the dashboard's approvals page and of GET /api/v1/approvals, and "
            "the server's memory, on SQLite and on PostgreSQL (--stores). About two minutes "
            "with the defaults."
        ),
        epilog=(
            f"Target: each list answers in under {TARGET_MS:g} ms (median) and under "
            f"{TARGET_BYTES:,} bytes. Exit status 0 when the run completed (see --check), 1 "
            "when it failed."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--approvals", type=int, default=1000, help="pending calls to queue")
    parser.add_argument(
        "--argument-bytes", type=int, default=256 * 1024, help="size of each call's arguments"
    )
    parser.add_argument("--requests", type=int, default=20, help="timed requests per measure")
    parser.add_argument(
        "--stores",
        type=stores_arg,
        default=["sqlite", "postgres"],
        metavar="STORE[,STORE]",
        help="the stores to measure on, one after the other: sqlite, postgres",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "AGENTWS_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"
        ),
        help="the PostgreSQL database the postgres run makes its schema in",
    )
    cli.add_output_args(parser, DEFAULT_JSON_OUT)
    args = parser.parse_args(argv)
    if min(args.approvals, args.argument_bytes, args.requests) <= 0:
        parser.error("--approvals, --argument-bytes and --requests must be positive")
    return args


def _set_up(args: argparse.Namespace, work: Path, url: str) -> tuple[dict[str, str], str, str]:
    """The database with its queue; the server's environment, the password, the API token."""
    env = agentws_env(url, AGENTWS_DATA_DIR=str(work))
    password = set_up_admin(env, work, _TOKEN, _ADMIN)
    created = run_cli(env, "admin", "token", "create", _ADMIN, "--name", "bench", cwd=work)
    _say(f"queueing {args.approvals:,} calls of {args.argument_bytes:,} bytes")
    started = time.monotonic()
    run_script(
        "add_approvals.py",
        [url, WORKSPACE, GROUP, _TOKEN, str(args.approvals), str(args.argument_bytes)],
        env,
    )
    _say(f"  queued in {time.monotonic() - started:.1f} s")
    return env, password, str(created["token"])


def _measure(http: httpx2.Client, name: str, path: str, requests: int) -> dict[str, Any]:
    times, size = timed_gets(http, path, requests, warmup=_WARMUP)
    result = {
        "name": name,
        "path": path,
        "median_ms": statistics.median(times),
        "p95_ms": percentile(times, 0.95),
        "max_ms": times[-1],
        "bytes": size,
    }
    _say(f"  {name}: median {result['median_ms']:.1f} ms, {result['bytes']:,} bytes")
    return result


def _run_store(args: argparse.Namespace, store: str) -> dict[str, Any]:
    _say(f"on {store}")
    results: dict[str, Any] = {"store": store}
    with (
        cli.workdir(f"approvals-{store}", args.keep) as work,
        Processes(work) as procs,
        store_url(store, work, args.database_url) as url,
    ):
        env, password, api_token = _set_up(args, work, url)
        child, base = serve_agentws(procs, "agentws", env, _say)
        rss_before = rss_kb(child.pid)
        with httpx2.Client(base_url=base, timeout=120) as http:
            sign_in(http, _ADMIN, password)
            page = http.get("/dashboard/approvals").text
            shown = re.search(r"Waiting \(([\d,]+)\)", page)
            if shown is None:
                raise BenchError("the approvals page shows no queue")
            results["waiting_shown"] = int(shown[1].replace(",", ""))
            first = re.search(r'name="id" value="(apr_[a-z0-9]+)"', page)
            measures = [_measure(http, "dashboard: /dashboard/approvals", "/dashboard/approvals",
                                 args.requests)]  # fmt: skip
            http.headers["Authorization"] = f"Bearer {api_token}"
            for name, path in (
                ("API: GET /api/v1/approvals", "/api/v1/approvals"),
                ("API: GET /api/v1/approvals?limit=1", "/api/v1/approvals?limit=1"),
                ("API: GET /api/v1/approvals?limit=200", "/api/v1/approvals?limit=200"),
            ):
                measures.append(_measure(http, name, path, args.requests))
            del http.headers["Authorization"]
            if first is not None:
                own = _measure(http, "one call's own page (whole arguments)",
                               f"/dashboard/approvals/{first[1]}", args.requests)  # fmt: skip
                own["informative"] = True
                measures.append(own)
        results["rss_before_kb"] = rss_before
        results["rss_after_kb"] = rss_kb(child.pid)
        procs.stop(child)
    for m in measures:
        if not m.get("informative"):
            m["passed"] = m["median_ms"] < TARGET_MS and m["bytes"] < TARGET_BYTES
    results["measures"] = measures
    return results


def run(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "mode": "approvals",
        "date": cli.now_utc(),
        "machine": describe_machine(_PACKAGES),
        "config": {
            "approvals": args.approvals,
            "argument_bytes": args.argument_bytes,
            "requests": args.requests,
            "stores": args.stores,
        },
        "runs": [_run_store(args, store) for store in args.stores],
    }


def render(results: dict[str, Any]) -> str:
    config = results["config"]
    rows = [
        [
            run["store"],
            m["name"],
            fmt(m["median_ms"]),
            fmt(m["p95_ms"]),
            fmt(m["max_ms"]),
            f"{m['bytes']:,}",
            "—" if m.get("informative") else f"< {TARGET_MS:g} ms, < {TARGET_BYTES / 1e6:g} MB",
            verdict(m.get("passed")),
        ]
        for run in results["runs"]
        for m in run["measures"]
    ]
    memory = "; ".join(
        f"{run['store']}: {run['rss_before_kb'] / 1024:.0f} MiB before the measures, "
        f"{run['rss_after_kb'] / 1024:.0f} MiB after "
        f"({(run['rss_after_kb'] - run['rss_before_kb']) / 1024:+.0f} MiB)"
        for run in results["runs"]
    )
    shown = ", ".join(f"{run['store']}: {run['waiting_shown']:,}" for run in results["runs"])
    return "\n".join(
        [
            f"## scripts/bench approvals — {results['date']}",
            "",
            markdown_table(
                ["store", "measure", "median ms", "p95 ms", "max ms", "bytes", "target", "result"],
                rows,
            ),
            "",
            machine_line(results["machine"]),
            f"- Queue: {config['approvals']:,} pending calls of one token, each with "
            f"{config['argument_bytes']:,} bytes of arguments; {config['requests']} timed "
            f"requests per measure, one at a time, after {_WARMUP} warm-up requests. The page's "
            f'"Waiting (N)" said {shown}.',
            f"- Server memory (RSS): {memory}.",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = cli.run_and_report("approvals", args, run, render)
    if isinstance(results, int):
        return results
    measures = [m for run in results["runs"] for m in run["measures"]]
    if args.check and not all(m.get("passed", True) for m in measures):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
