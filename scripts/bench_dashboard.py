"""``scripts/bench dashboard``: every dashboard page's time with a busy week in the store.

One run, on loopback, in a temp directory of its own, on each of
``--stores`` in turn (a SQLite file, a new PostgreSQL schema in
``--database-url``):

1. ``agentws init``, a workspace, a group, an MCP token and an admin,
   through the CLI; then, straight into the store in bulk
   (:mod:`benchlib.dashboard_seed`), ``--webhooks`` webhooks with
   ``--events`` events spread over the last ``--days`` days (mixed
   statuses, the newest with their messages) and ``--audit`` audited tool
   calls with the gate's decisions; the events' search index filled;
2. ``agentws serve``; the admin signs in to the dashboard;
3. the pages are found by following links from the home page
   (:mod:`benchlib.dashboard_crawl`: same-origin GET links under
   ``/dashboard/``, ``--depth`` links deep, one page of each route), so a
   page added to the dashboard is measured without being listed here;
4. each page found, ``--requests`` times one after the other after the
   crawl's own request (the warm-up): its median and slowest answer, read
   in full, and the size of its body.

The time is the client's, one request at a time on loopback: the server's
time plus a loopback round trip (well under a millisecond). Target (issue
27): every page under 300 ms with 100,000 events and 10,000 audit rows
(the defaults); a page passes when its median is under it (the slowest
answer is shown beside it). Results are printed as Markdown and written as
JSON (``--json-out``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import cli
from benchlib.agentws_setup import agentws_bin, agentws_env, run_cli
from benchlib.dashboard_crawl import Answer, Page, crawl, route_matcher
from benchlib.instances import psql
from benchlib.machine import describe_machine
from benchlib.procs import BenchError, Processes, read_json
from benchlib.report import fmt, machine_line, markdown_table, verdict

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "dashboard.json"

TARGET_MS = 300.0  # a page's median answer
_START_TIMEOUT_S = 60.0
# Seeding 100,000 events takes about a minute on a slow machine; this bounds a hang.
_SEED_TIMEOUT_S = 1800.0
_PACKAGES = ["agentws", "quart", "quart-trio", "hypercorn", "trio", "jinja2", "markdown-it-py"]
_WORKSPACE, _GROUP, _TOKEN, _ADMIN = "acme", "ops", "laptop", "bench"

_say = cli.logger("dashboard")


def _stores(text: str) -> list[str]:
    stores = [part.strip() for part in text.split(",") if part.strip()]
    if not stores or any(store not in ("sqlite", "postgres") for store in stores):
        raise argparse.ArgumentTypeError(f"expected sqlite, postgres or both, got {text!r}")
    return stores


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench dashboard",
        description=(
            "Benchmark every dashboard page with a busy week in the store: the pages are "
            "found by following links from the home page, then each is timed. About three "
            "minutes with the defaults on SQLite (most of it seeding)."
        ),
        epilog=(
            f"Target: every page's median answer under {TARGET_MS:g} ms. Exit status 0 when "
            "the run completed (see --check), 1 when it failed (a page found answered 5xx)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--events", type=int, default=100_000, help="webhook events to seed")
    parser.add_argument("--audit", type=int, default=10_000, help="audited tool calls to seed")
    parser.add_argument("--webhooks", type=int, default=4, help="webhooks sharing the events")
    parser.add_argument("--days", type=float, default=7.0, help="days the rows are spread over")
    parser.add_argument("--requests", type=int, default=5, help="timed requests per page")
    parser.add_argument(
        "--depth", type=int, default=2, help="links from the home page to follow at most"
    )
    parser.add_argument(
        "--stores",
        type=_stores,
        default=["sqlite"],
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
    if min(args.events, args.audit, args.webhooks, args.requests) < 0 or args.requests == 0:
        parser.error("--events, --audit and --webhooks may not be negative; --requests >= 1")
    if args.webhooks == 0 and args.events:
        parser.error("events need a webhook: --webhooks >= 1")
    return args


def _set_up(
    args: argparse.Namespace, work: Path, url: str
) -> tuple[dict[str, str], str, dict[str, Any]]:
    """The database with its busy week; the server's environment, the password, the counts."""
    env = agentws_env(url, AGENTWS_DATA_DIR=str(work), AGENTWS_BIND="127.0.0.1:0")
    run_cli(env, "init", cwd=work)
    run_cli(env, "workspace", "create", _WORKSPACE, cwd=work)
    run_cli(env, "group", "create", _WORKSPACE, _GROUP, cwd=work)
    run_cli(env, "token", "create", _WORKSPACE, _GROUP, "--name", _TOKEN, cwd=work)
    password = str(run_cli(env, "admin", "create", _ADMIN, cwd=work)["password"])
    _say(f"seeding {args.events:,} events and {args.audit:,} audit rows")
    started = time.monotonic()
    script = SCRIPTS / "benchlib" / "dashboard_seed.py"
    argv = [sys.executable, str(script), url, _WORKSPACE, _GROUP]
    argv += [str(args.events), str(args.audit), str(args.days), str(args.webhooks)]
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, check=False, timeout=_SEED_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise BenchError(f"seeding did not finish in {_SEED_TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        raise BenchError(f"seeding failed:\n{done.stderr.strip()[-3000:]}")
    counts: dict[str, Any] = read_json(done.stdout, "dashboard_seed.py output")
    if url.startswith("postgresql"):
        # After a bulk load PostgreSQL has no statistics until autovacuum comes by
        # (within a minute on a live service); without them the planner guesses.
        psql(args.database_url, "ANALYZE")
    counts["seconds"] = round(time.monotonic() - started, 1)
    _say(f"  seeded in {counts['seconds']:.1f} s")
    return env, password, counts


def sign_in(http: httpx2.Client, username: str, password: str) -> None:
    """Sign ``username`` in to the dashboard on ``http`` (its cookies kept there)."""
    form = http.get("/dashboard/login")
    token = re.search(r'name="login_token" value="([^"]*)"', form.text)
    if token is None:
        raise BenchError("the sign-in page has no login_token")
    answer = http.post(
        "/dashboard/login",
        data={"login_token": token[1], "username": username, "password": password, "next": ""},
    )
    if answer.status_code != 302:
        raise BenchError(f"signing in answered {answer.status_code}")


def fetcher(http: httpx2.Client, timings: dict[str, float]) -> Any:
    """A crawl's ``fetch`` over ``http``: an HTML page read in full (its time in ``timings``)."""

    def fetch(path: str) -> Answer:
        started = time.perf_counter()
        with http.stream("GET", path) as answer:
            kind = answer.headers.get("content-type", "")
            # A download (an export) is not a page: its head is enough.
            text = answer.read().decode("utf-8", "replace") if kind.startswith("text/") else ""
        timings[path] = (time.perf_counter() - started) * 1000
        return Answer(answer.status_code, kind, answer.headers.get("location"), text)

    return fetch


def measure(http: httpx2.Client, page: Page, requests: int) -> dict[str, Any]:
    """``page`` answered ``requests`` times in a row: median, slowest, size."""
    times: list[float] = []
    size = 0
    for _ in range(requests):
        started = time.perf_counter()
        answer = http.get(page.path)
        times.append((time.perf_counter() - started) * 1000)
        size = max(size, len(answer.content))
        if answer.status_code != page.status:
            raise BenchError(f"{page.path} answered {answer.status_code}, then {page.status}")
    return {
        "route": page.route,
        "path": page.path,
        "depth": page.depth,
        "status": page.status,
        "median_ms": statistics.median(times),
        "max_ms": max(times),
        "bytes": size,
        "passed": statistics.median(times) < TARGET_MS,
    }


@contextlib.contextmanager
def _database(args: argparse.Namespace, store: str, work: Path) -> Iterator[str]:
    """The URL of an empty database on ``store``: a SQLite file, or a fresh PostgreSQL schema."""
    if store == "sqlite":
        yield f"sqlite:///{work / 'agentws.db'}"
        return
    schema = f"bench_{secrets.token_hex(6)}"
    psql(args.database_url, f'CREATE SCHEMA "{schema}"')
    joiner = "&" if "?" in args.database_url else "?"
    try:
        yield f"{args.database_url}{joiner}search_path={schema}"
    finally:
        psql(args.database_url, f'DROP SCHEMA "{schema}" CASCADE')


def measure_site(
    base: str, username: str, password: str, *, depth: int, requests: int
) -> tuple[list[Page], list[dict[str, Any]]]:
    """Sign in at ``base``, find the pages, time each; the pages found and the measures."""
    route = route_matcher()
    with httpx2.Client(base_url=base, timeout=120, follow_redirects=False) as http:
        sign_in(http, username, password)
        pages = crawl(fetcher(http, {}), route, depth=depth)
        broken = [p for p in pages if p.status >= 500]
        if broken:
            raise BenchError("pages failed: " + ", ".join(f"{p.path} ({p.status})" for p in broken))
        measures = [
            measure(http, page, requests) for page in pages if page.html or 300 <= page.status < 400
        ]
    return pages, measures


def _run_store(args: argparse.Namespace, store: str) -> dict[str, Any]:
    _say(f"on {store}")
    with (
        cli.workdir(f"dashboard-{store}", args.keep) as work,
        Processes(work) as procs,
        _database(args, store, work) as url,
    ):
        env, password, counts = _set_up(args, work, url)
        child = procs.start("agentws", [str(agentws_bin()), "serve", "--json"], env=env)
        base = str(child.read_json_line(_START_TIMEOUT_S)["base_url"])
        cli.wait_until_answering(child, base + "/readyz", _START_TIMEOUT_S, want_status=200)
        pages, measures = measure_site(
            base, _ADMIN, password, depth=args.depth, requests=args.requests
        )
        procs.stop(child)
    for m in measures:
        _say(f"  {m['route']}: median {m['median_ms']:.1f} ms, max {m['max_ms']:.1f} ms")
    skipped = [
        {"path": p.path, "status": p.status, "content_type": p.content_type}
        for p in pages
        if not (p.html or 300 <= p.status < 400)
    ]
    return {"store": store, "seeded": counts, "measures": measures, "not_pages": skipped}


def run(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "mode": "dashboard",
        "date": cli.now_utc(),
        "machine": describe_machine(_PACKAGES),
        "config": {
            "events": args.events,
            "audit": args.audit,
            "webhooks": args.webhooks,
            "days": args.days,
            "requests": args.requests,
            "depth": args.depth,
            "stores": args.stores,
        },
        "runs": [_run_store(args, store) for store in args.stores],
    }


def render(results: dict[str, Any]) -> str:
    config = results["config"]
    rows = [
        [
            run["store"],
            m["route"],
            m["path"] if len(m["path"]) <= 60 else m["path"][:59] + "…",
            str(m["status"]),
            fmt(m["median_ms"]),
            fmt(m["max_ms"]),
            f"{m['bytes']:,}",
            f"< {TARGET_MS:g} ms",
            verdict(m["passed"]),
        ]
        for run in results["runs"]
        for m in run["measures"]
    ]
    notes = []
    for run in results["runs"]:
        seeded = run["seeded"]
        notes.append(
            f"- {run['store']}: seeded {seeded['events']:,} events over {seeded['webhooks']} "
            f"webhooks, {seeded['audit']:,} audit rows and {seeded['messages']:,} messages in "
            f"{seeded['seconds']:.0f} s; {len(run['measures'])} pages found."
        )
        for other in run["not_pages"]:
            notes.append(
                f"  Not timed (not a page): {other['path']} ({other['status']}, "
                f"{other['content_type'] or 'no content type'})."
            )
    return "\n".join(
        [
            f"## scripts/bench dashboard — {results['date']}",
            "",
            markdown_table(
                [
                    "store",
                    "route",
                    "path",
                    "status",
                    "median ms",
                    "max ms",
                    "bytes",
                    "target",
                    "result",
                ],
                rows,
            ),
            "",
            machine_line(results["machine"]),
            f"- Store: {config['events']:,} events over the last {config['days']:g} days and "
            f"{config['audit']:,} audited tool calls. Pages found from the home page, "
            f"{config['depth']} links deep, one of each route; {config['requests']} timed "
            "requests each, one at a time, after the crawl's own (the warm-up). Time: the "
            "client's on loopback, body read in full.",
            *notes,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = cli.run_and_report("dashboard", args, run, render)
    if isinstance(results, int):
        return results
    measures = [m for run in results["runs"] for m in run["measures"]]
    if args.check and not all(m["passed"] for m in measures):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
