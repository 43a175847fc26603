"""``scripts/bench dashboard``: every dashboard page's time with a busy week in the store.

One run, on loopback, in a temp directory of its own, on each of
``--stores`` in turn (a SQLite file, a new PostgreSQL schema in
``--database-url``):

1. ``agentws init``, a workspace, a group, an MCP token and an admin,
   through the CLI; then (:mod:`benchlib.dashboard_seed`) through the
   service's functions more groups, connectors of every kind (a remote MCP
   one with ``--tools`` cached tools), permissions, two libraries with
   ``--documents`` documents (some of 1 MiB) and ``--skills`` skills,
   ``--approvals`` pending calls and some decided ones
   (:mod:`benchlib.dashboard_content`); straight into the store in bulk,
   ``--webhooks`` webhooks with ``--events`` events spread over the last
   ``--days`` days (mixed statuses, the newest with their messages) and
   ``--audit`` audited tool calls with the gate's decisions; the events'
   search index filled; last, a pending OAuth consent request;
2. ``agentws serve``; the admin signs in to the dashboard;
3. the pages are found by following links from the home page
   (:mod:`benchlib.dashboard_crawl`: same-origin GET links under
   ``/dashboard/``, ``--depth`` links deep, one page of each route); then
   each GET route of the dashboard's URL map that no link reached (the
   consent page, the sign-in page, ``overview.json``) at a URL built from
   what was seeded; the largest document's, call's and tool cache's pages too;
4. each page found, ``--requests`` times one after the other after the
   crawl's own request (the warm-up): its median and slowest answer, read
   in full, and the size of its body. The audit log's export is a
   download, not a page: its status and size are reported, not timed.

Every GET route of the dashboard must be timed: one that is not (a new
page no link reaches and no seeded value can build a URL for) is listed
and the run exits 1, its figures still printed.

The time is the client's, one request at a time on loopback: the server's
time plus a loopback round trip (well under a millisecond). Target (issue
27): every page under 300 ms with 100,000 events and 10,000 audit rows
(the defaults); a page passes when its median is under it (the slowest
answer is shown beside it). Results are printed as Markdown and written as
JSON (``--json-out``).
"""

from __future__ import annotations

import argparse
import json
import os
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
    run_script,
    serve_agentws,
    set_up_admin,
    sign_in,
)
from benchlib.dashboard_crawl import (
    Answer,
    Page,
    build_paths,
    crawl,
    get_routes,
    route_matcher,
)
from benchlib.load import timed_gets
from benchlib.machine import describe_machine
from benchlib.postgres import psql, store_url, stores_arg
from benchlib.procs import BenchError, Processes
from benchlib.report import fmt, machine_line, markdown_table, verdict

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "dashboard.json"

TARGET_MS = 300.0  # a page's median answer
# Seeding 100,000 events takes about a minute on a slow machine; this bounds a hang.
_SEED_TIMEOUT_S = 1800.0
_PACKAGES = ["agentws", "quart", "quart-trio", "hypercorn", "trio", "jinja2", "markdown-it-py"]
_TOKEN, _ADMIN = "laptop", "bench"
#: Dashboard routes that are not pages: reached and reported (status, bytes), not timed.
NOT_PAGES = {
    "dashboard.audit_export": "the audit log's JSON Lines download",
    "dashboard.event_body": "an event's whole body, as a download",
}
#: Routes also timed at the seeded record that makes them heaviest, when a link led elsewhere.
HEAVIEST = {
    "dashboard.document_page": "1 MiB",
    "dashboard.approval": "largest arguments",
    "dashboard.connector_show": "remote MCP, its tool cache",
}
#: The store's content at each --size; a size's figure stands unless its option is given.
SIZES: dict[str, dict[str, int]] = {
    "full": {
        "events": 100_000,
        "audit": 10_000,
        "approvals": 1000,
        "documents": 200,
        "skills": 20,
        "tools": 50,
    },
    "small": {
        "events": 2000,
        "audit": 500,
        "approvals": 50,
        "documents": 20,
        "skills": 4,
        "tools": 50,
    },
}

_say = cli.logger("dashboard")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench dashboard",
        description=(
            "Benchmark every dashboard page with a busy week in the store: the pages are "
            "found by following links from the home page (the routes no link reaches at "
            "URLs built from what was seeded), then each is timed. About three minutes "
            "with the defaults on SQLite (most of it seeding); --size small takes seconds."
        ),
        epilog=(
            f"Target: every page's median answer under {TARGET_MS:g} ms. Exit status 0 when "
            "the run completed (see --check), 1 when it failed (a page found answered 4xx or "
            "5xx, or a GET route of the dashboard was left untimed: listed on stderr)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--size",
        choices=sorted(SIZES),
        default="full",
        help="the store's content: full is the target's (100,000 events, 10,000 audit rows, "
        "1,000 pending calls, 200 documents); small is a quick check (2,000 events)",
    )
    for name, what in (
        ("events", "webhook events to seed"),
        ("audit", "audited tool calls to seed"),
        ("approvals", "pending calls to seed (a fifth as many more are decided)"),
        ("documents", "library documents to seed (one in 40 of 1 MiB)"),
        ("skills", "library skills to seed"),
        ("tools", "tools in the remote MCP connector's cache (at most 128)"),
    ):
        parser.add_argument(f"--{name}", type=int, default=None, help=f"{what} (default: --size's)")
    parser.add_argument("--webhooks", type=int, default=4, help="webhooks sharing the events")
    parser.add_argument("--days", type=float, default=7.0, help="days the rows are spread over")
    parser.add_argument("--requests", type=int, default=5, help="timed requests per page")
    parser.add_argument(
        "--depth", type=int, default=2, help="links from the home page to follow at most"
    )
    parser.add_argument(
        "--stores",
        type=stores_arg,
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
    for name, value in SIZES[args.size].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    counts = [args.events, args.audit, args.approvals, args.documents, args.skills, args.tools]
    if min(*counts, args.webhooks, args.requests) < 0 or args.requests == 0:
        parser.error("counts may not be negative; --requests >= 1")
    if args.documents < 1 or args.tools < 1 or args.tools > 128:
        parser.error("every page needs a document (--documents >= 1) and 1 to 128 --tools")
    if args.webhooks == 0 and args.events:
        parser.error("events need a webhook: --webhooks >= 1")
    return args


def _set_up(
    args: argparse.Namespace, work: Path, url: str
) -> tuple[dict[str, str], str, dict[str, Any]]:
    """The database with its busy week; the server's environment, the password, the counts."""
    env = agentws_env(url, AGENTWS_DATA_DIR=str(work))
    password = set_up_admin(env, work, _TOKEN, _ADMIN)
    _say(
        f"seeding {args.events:,} events, {args.audit:,} audit rows, {args.approvals:,} "
        f"pending calls, {args.documents:,} documents"
    )
    started = time.monotonic()
    options = {
        name: getattr(args, name)
        for name in ("events", "audit", "webhooks", "days", "approvals", "documents", "skills")
    }
    options["tools"] = args.tools
    counts: dict[str, Any] = run_script(
        "dashboard_seed.py",
        [url, WORKSPACE, GROUP, json.dumps(options)],
        env,
        timeout_s=_SEED_TIMEOUT_S,
    )
    if url.startswith("postgresql"):
        # After a bulk load PostgreSQL has no statistics until autovacuum comes by
        # (within a minute on a live service); without them the planner guesses.
        psql(args.database_url, "ANALYZE")
    counts["seconds"] = round(time.monotonic() - started, 1)
    _say(f"  seeded in {counts['seconds']:.1f} s")
    return env, password, counts


def fetcher(http: httpx2.Client, timings: dict[str, float]) -> Any:
    """A crawl's ``fetch`` over ``http``: the body read in full (its time in ``timings``)."""

    def fetch(path: str) -> Answer:
        started = time.perf_counter()
        answer = http.get(path)
        timings[path] = (time.perf_counter() - started) * 1000
        kind = answer.headers.get("content-type", "")
        # Only a page is read for links.
        text = answer.content.decode("utf-8", "replace") if kind.startswith("text/html") else ""
        return Answer(
            answer.status_code, kind, answer.headers.get("location"), text, len(answer.content)
        )

    return fetch


def measure(
    http: httpx2.Client, page: Page, requests: int, route: str | None = None
) -> dict[str, Any]:
    """``page`` answered ``requests`` times in a row: median, slowest, size."""
    times, size = timed_gets(http, page.path, requests, status=page.status)
    return {
        "route": route or page.route,
        "endpoint": page.endpoint,
        "path": page.path,
        "depth": page.depth,
        "status": page.status,
        "median_ms": statistics.median(times),
        "max_ms": max(times),
        "bytes": size,
        "passed": statistics.median(times) < TARGET_MS,
    }


def measure_site(
    base: str,
    username: str,
    password: str,
    *,
    depth: int,
    requests: int,
    values: dict[str, str],
) -> dict[str, Any]:
    """Sign in at ``base``, find the pages, time each.

    ``values`` are what URLs are built from for the routes no link reaches
    (see :func:`benchlib.dashboard_crawl.build_paths`). Returns ``pages``
    (every page found), ``measures``, ``not_pages`` (found, not timed: see
    :data:`NOT_PAGES`) and ``untimed``: the dashboard's GET routes neither
    timed nor in :data:`NOT_PAGES`, which should be none.
    """
    route = route_matcher()
    built = build_paths(values)
    with httpx2.Client(base_url=base, timeout=120, follow_redirects=False) as http:
        sign_in(http, username, password)
        pages = crawl(fetch=fetcher(http, {}), route=route, depth=depth, built=built)
        broken = [p for p in pages if p.status >= 400]
        if broken:
            raise BenchError("pages failed: " + ", ".join(f"{p.path} ({p.status})" for p in broken))
        timed = [p for p in pages if p.endpoint not in NOT_PAGES]
        measures = [measure(http, page, requests) for page in timed]
        linked = {p.endpoint: p.path for p in timed}
        for endpoint, what in HEAVIEST.items():
            path = built.get(endpoint)
            if path is not None and linked.get(endpoint) != path:
                heavy = Page(path, endpoint, -1, 200, "text/html")
                measures.append(measure(http, heavy, requests, f"{endpoint} ({what})"))
    found = {p.endpoint for p in pages}
    not_pages = [
        {"route": p.route, "path": p.path, "status": p.status, "content_type": p.content_type}
        | {"bytes": p.size}
        for p in pages
        if p.endpoint in NOT_PAGES
    ]
    untimed = sorted(
        set(get_routes()) - {m["endpoint"] for m in measures} - (found & set(NOT_PAGES))
    )
    return {"pages": pages, "measures": measures, "not_pages": not_pages, "untimed": untimed}


def _run_store(args: argparse.Namespace, store: str) -> dict[str, Any]:
    _say(f"on {store}")
    with (
        cli.workdir(f"dashboard-{store}", args.keep) as work,
        Processes(work) as procs,
        store_url(store, work, args.database_url) as url,
    ):
        env, password, counts = _set_up(args, work, url)
        child, base = serve_agentws(procs, "agentws", env, _say)
        site = measure_site(
            base,
            _ADMIN,
            password,
            depth=args.depth,
            requests=args.requests,
            values=counts.pop("values"),
        )
        procs.stop(child)
    for m in site["measures"]:
        _say(f"  {m['route']}: median {m['median_ms']:.1f} ms, max {m['max_ms']:.1f} ms")
    return {
        "store": store,
        "seeded": counts,
        "measures": site["measures"],
        "not_pages": site["not_pages"],
        "untimed": site["untimed"],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "mode": "dashboard",
        "date": cli.now_utc(),
        "machine": describe_machine(_PACKAGES),
        "config": {
            "size": args.size,
            "events": args.events,
            "audit": args.audit,
            "approvals": args.approvals,
            "documents": args.documents,
            "skills": args.skills,
            "tools": args.tools,
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
            f"{seeded['seconds']:.0f} s, with {seeded['groups']} groups, "
            f"{seeded['connectors']} connectors ({seeded['tools']} remote MCP tools), "
            f"{seeded['permissions']} permissions, {seeded['documents']} documents, "
            f"{seeded['skills']} skills, {seeded['approvals']:,} pending calls and "
            f"{seeded['decided']} decided; {len(run['measures'])} pages timed."
        )
        for other in run["not_pages"]:
            notes.append(
                f"  Not timed (not a page): {other['path']} ({other['status']}, "
                f"{other['content_type'] or 'no content type'}, {other['bytes']:,} bytes)."
            )
        if run["untimed"]:
            notes.append(f"  NOT TIMED (no link or seeded URL): {', '.join(run['untimed'])}.")
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
            f"{config['audit']:,} audited tool calls (--size {config['size']}). Pages found "
            f"from the home page, {config['depth']} links deep, one of each route; every other "
            "GET route of the dashboard at a URL built from the seeded records (depth -1), "
            f"and the heaviest document, call and connector; {config['requests']} timed "
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
    for one in results["runs"]:
        if one["untimed"]:
            print(
                f"scripts/bench dashboard: on {one['store']}, these GET routes of the dashboard "
                f"were not timed (no link reached them and the seed gives no URL for them; "
                f"seed what they show and add their URL's values): {', '.join(one['untimed'])}",
                file=sys.stderr,
            )
    if any(one["untimed"] for one in results["runs"]):
        return 1
    measures = [m for one in results["runs"] for m in one["measures"]]
    if args.check and not all(m["passed"] for m in measures):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
