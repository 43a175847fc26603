"""``scripts/bench mcp``: the MCP group endpoint against the ``mcp`` SDK's reference server.

One run measures, on loopback, in a temp directory of its own:

1. ``tools/call`` of ``search_context`` on agentws (``agentws serve``):
   throughput and p50/p99 latency under a fixed closed-loop load;
2. the same load on the reference: the SDK's ``MCPServer`` serving an
   equivalent ``search_context`` (same documents, same FTS5 index, same
   search SQL less agentws's group-visibility joins, same result) with its
   ``streamable_http_app(json_response=True)`` (``--reference-response sse``
   for the SDK default) on uvicorn, with no auth and no audit; agentws
   additionally authenticates the bearer token, checks the session and
   the group's tools and validates the arguments on every call (the run
   also counts the audit-log rows agentws wrote);
2a. the same load on the floor (unless ``--no-floor``): a plain ASGI
   handler on Hypercorn's trio worker (:mod:`benchlib.plain_handler`)
   running the reference's query in a worker thread
   (``trio.to_thread.run_sync``) on the same copy of the database, with
   just enough MCP JSON-RPC for the same load client, and no framework, no
   MCP SDK, no token, no audit: what agentws's server CPU per call is
   held to. It is served in the same interleaved rounds as 1 and 2, and
   in measure 5 in the stateless revision;
3. the resident memory of 1,000 idle legacy (2024-11-05) SSE sessions on a
   fresh agentws process;
4. ``tools/list`` latency on agentws for a group with 5 remote MCP
   connectors and 200 cached tools (plus 3 built-ins: the 2 context tools
   and get_approval),
   under the same closed-loop load (agentws only: the cache is agentws's);
5. measure 1 again in the stateless revision, 2026-07-28: each call a
   self-contained POST with no session, against the same reference started
   in the SDK's stateless mode (``stateless_http=True``) and the floor in
   its stateless mode, same load and rounds (see :mod:`benchlib.modern`);
6. the cost of an OAuth access token per request beside a static token:
   2026-07-28 ``tools/list`` with each token in turn on one agentws (see
   :mod:`benchlib.oauth_auth`).

With ``--baseline-checkout DIR`` (or ``--baseline-rev REV``, that revision
of this repository exported into the run's directory), measures 1 and 5
also serve the other checkout's agentws, on a database its own CLI set
up with the same documents, in the same rounds (this checkout, the
baseline, the reference, the floor; then the reverse order), and report this
checkout's calls/s over the baseline's: target at least 0.95x, no
regression beyond 5%.

The servers run one after the other, each in its own process; the load
comes from a third process. Results are printed as Markdown and written as
JSON (``--json-out``). Targets, each against the peer measured in the
same run: agentws throughput at least 1.0x the SDK reference's, and
agentws's server CPU per call at most 1.15x the floor's, both with
2025-11-25 sessions and in the 2026-07-28 stateless revision; under 100 KB
of RSS per idle SSE session; tools/list p99 under 20 ms; an OAuth token's
requests at least 0.9x a static token's. The report is
:mod:`benchlib.mcp_report`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import math
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import cli, modern, oauth_auth, plain_handler, query_floor
from benchlib.agentws_setup import (
    AgentwsSite,
    set_up_agentws,
)
from benchlib.checkouts import baseline_checkout, git_commit
from benchlib.corpus import SEED, make_corpus, write_corpus
from benchlib.load import best_round
from benchlib.machine import describe_machine
from benchlib.mcp_agentws import (
    measure_oauth,
    measure_sessions,
    measure_toolslist,
    note_noise,
    run_load,
    start_agentws,
)
from benchlib.mcp_report import (
    BASELINE_TARGET,
    FLOOR_CPU_TARGET,
    SSE_TARGET_KB,
    THROUGHPUT_TARGET,
    TOOLSLIST_TARGET_P99_MS,
    cpu_per_call,
    passed,
    render,
)
from benchlib.procs import (
    BenchError,
    Child,
    Processes,
    raise_nofile_limit,
    start_server,
    stop_server,
)

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "mcp.json"

# Seconds a server gets to start listening.
_START_TIMEOUT_S = 30.0
_PACKAGES = ["agentws", "mcp", "uvicorn", "hypercorn", "trio", "anyio", "starlette", "httpx2"]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench mcp",
        description=(
            "Benchmark the MCP group endpoint: tools/call search_context throughput, "
            "latency and server CPU per call, agentws against the mcp SDK's MCPServer on "
            "uvicorn and against the floor (a plain Hypercorn/trio handler running the same "
            "query in a worker thread: no MCP SDK, no token, no audit) under the same load "
            "in the same interleaved rounds, the same in the stateless 2026-07-28 revision "
            "against the SDK's stateless mode and the floor's, resident memory of idle legacy "
            "SSE sessions, tools/list latency for a group with 5 connectors and 200 cached "
            "tools, and an OAuth access token's cost per request beside a static token's."
        ),
        epilog=(
            f"Targets, each against the peer measured in the same run: agentws calls/s >= "
            f"{THROUGHPUT_TARGET:.2f}x the SDK reference's and agentws server CPU per call <= "
            f"{FLOOR_CPU_TARGET:g}x the floor's, both for 2025-11-25 sessions and for "
            "2026-07-28 (stateless); < 100 KB RSS per idle SSE session; tools/list p99 < "
            "20 ms; OAuth token calls/s >= 0.9x a static token's. Exit status 0 when the run "
            "completed (see --check), 1 when it failed (including any failed call)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--seconds", type=float, default=15.0, help="measured seconds per server")
    parser.add_argument("--warmup", type=float, default=3.0, help="warm-up seconds per server")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=16,
        help="client workers, one MCP session each (2026-07-28: no session, calls back to back)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help=(
            "runs per server, in ABBA order (agentws, reference, floor, then floor, "
            "reference, agentws, ...); the best run of each is reported"
        ),
    )
    parser.add_argument("--limit", type=int, default=5, help="search_context 'limit' argument")
    parser.add_argument("--documents", type=int, default=200, help="context documents to index")
    parser.add_argument(
        "--sessions", type=int, default=1000, help="idle legacy SSE sessions (0 skips the measure)"
    )
    parser.add_argument(
        "--reference-response",
        choices=["json", "sse"],
        default="json",
        help=(
            "how the reference answers POSTs: 'json' is streamable_http_app(json_response=True), "
            "the format agentws answers in and the reference's faster setting; 'sse' is the "
            "SDK's default, an SSE stream per POST"
        ),
    )
    parser.add_argument(
        "--list-rate",
        type=float,
        default=5.0,
        help=(
            "tools/list calls per second of each client in the paced tools/list run "
            "(the target's run); a second run calls back to back"
        ),
    )
    parser.add_argument(
        "--only",
        choices=["throughput", "modern", "sessions", "toolslist", "oauth"],
        help=(
            "run one measure only (default: all); 'throughput' is tools/call on "
            "2025-11-25 sessions, 'modern' the same in the stateless 2026-07-28 revision, "
            "'oauth' an OAuth access token's cost per request beside a static token's"
        ),
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help=(
            "skip the floor (benchlib/plain_handler.py: a plain Hypercorn/trio handler running "
            "the same query, no MCP SDK, no token, no audit) in the tools/call rounds, and "
            "with it the target on agentws's server CPU per call"
        ),
    )
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument(
        "--baseline-checkout",
        type=Path,
        metavar="DIR",
        help=(
            "another checkout of agentws (a directory holding its agentws/ package) to measure "
            "in the same run: its agentws is served in the same rounds as this checkout's "
            "(tools/call and its stateless twin), each on a database set up by its own CLI, "
            f"and the report shows both and their ratio (target >= {BASELINE_TARGET:g}x)"
        ),
    )
    baseline.add_argument(
        "--baseline-rev",
        metavar="REV",
        help="as --baseline-checkout, with agentws/ as it was at REV of this repository "
        "(exported with git archive into the run's temp directory), e.g. HEAD~1",
    )
    cli.add_output_args(parser, DEFAULT_JSON_OUT)
    args = parser.parse_args(argv)
    if min(args.seconds, args.concurrency, args.documents, args.rounds) <= 0 or args.warmup < 0:
        parser.error("--seconds, --concurrency, --documents and --rounds must be positive")
    return args


_say = cli.logger("mcp")


def _copy_database(source: Path, target: Path) -> None:
    """A consistent copy of the agentws database, in rollback-journal mode (opened read-only)."""
    with (
        contextlib.closing(sqlite3.connect(source)) as src,
        contextlib.closing(sqlite3.connect(target)) as dst,
    ):
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")


def _audit_rows(database: Path) -> int:
    with contextlib.closing(sqlite3.connect(database)) as conn:
        return int(conn.execute("SELECT count(*) FROM audit_log").fetchone()[0])


def _start_reference(
    procs: Processes, database: Path, library: str, response: str, n: int, era: str | None
) -> tuple[Child, str]:
    """The SDK's reference on a copy of the database; the child and its MCP URL."""
    argv = [
        sys.executable,
        str(SCRIPTS / "benchlib" / "reference_server.py"),
        "--database",
        str(database),
        "--library",
        library,
    ]
    if response == "json":
        argv.append("--json-response")
    if era == modern.ERA:
        argv.append("--stateless")
    # Polled at its root (a 404): in stateless mode a GET of the MCP path opens a
    # stream that never ends.
    child, line = start_server(procs, f"reference-{n}", argv, timeout_s=_START_TIMEOUT_S)
    return child, str(line["url"])


def _job(
    args: argparse.Namespace,
    url: str,
    token: str | None,
    pid: int,
    queries: list[str],
    era: str | None,
) -> dict[str, Any]:
    return {
        "era": era,
        "url": url,
        "token": token,
        "tool": "search_context",
        "queries": queries,
        "limit": args.limit,
        "concurrency": args.concurrency,
        "warmup_s": args.warmup,
        "seconds": args.seconds,
        "server_pid": pid,
    }


def _measure_agentws(
    args: argparse.Namespace,
    procs: Processes,
    site: AgentwsSite,
    queries: list[str],
    n: int,
    era: str | None = None,
    name: str = "agentws",
) -> dict[str, Any]:
    _say(f"{name}, round {n}: serving" + (f" ({era})" if era else ""))
    audit_before = _audit_rows(site.database_path)
    server, base_url = start_agentws(procs, site, f"{name}-{n}", args.sessions)
    _say(f"{name}, round {n}: load for {args.warmup:g}+{args.seconds:g} s")
    job = _job(args, base_url + site.path, site.token, server.pid, queries, era)
    result = run_load(procs, job)
    result["server_exit_status"] = stop_server(procs, server, _say)
    result["audit_rows_written"] = _audit_rows(site.database_path) - audit_before
    return result


def _measure_reference(
    args: argparse.Namespace,
    procs: Processes,
    database: Path,
    library: str,
    queries: list[str],
    n: int,
    era: str | None = None,
) -> dict[str, Any]:
    how = f"{args.reference_response} responses" + (f", stateless, {era}" if era else "")
    _say(f"reference, round {n}: serving (MCPServer on uvicorn, {how})")
    server, url = _start_reference(procs, database, library, args.reference_response, n, era)
    _say(f"reference, round {n}: load for {args.warmup:g}+{args.seconds:g} s")
    result = run_load(procs, _job(args, url, None, server.pid, queries, era))
    result["server_exit_status"] = procs.stop(server)
    return result


def _measure_floor(
    args: argparse.Namespace,
    procs: Processes,
    database: Path,
    library: str,
    queries: list[str],
    n: int,
    era: str | None = None,
) -> dict[str, Any]:
    _say(f"floor, round {n}: serving (plain handler on Hypercorn" + (f", {era})" if era else ")"))
    server, url = plain_handler.start(
        procs, f"floor-{n}", database, library, stateless=era == modern.ERA
    )
    _say(f"floor, round {n}: load for {args.warmup:g}+{args.seconds:g} s")
    result = run_load(procs, _job(args, url, None, server.pid, queries, era))
    result["server_exit_status"] = stop_server(procs, server, _say)
    return result


def _parity(agentws: dict[str, Any], reference: dict[str, Any]) -> dict[str, Any]:
    ours, theirs = agentws.get("answers", {}), reference.get("answers", {})
    common = sorted(set(ours) & set(theirs))
    differing = [q for q in common if ours[q] != theirs[q]]
    return {"queries_compared": len(common), "queries_differing": differing}


def _summarise_throughput(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The best run of each server (the one least disturbed), with every run kept.

    ``throughput_ratio``: agentws over the reference; with a baseline
    checkout, ``baseline_ratio``: this checkout's agentws over the baseline's;
    with the floor, ``floor_cpu_ratio``: agentws's server CPU per call over
    the floor's, and ``floor_throughput_ratio``: agentws's calls/s over the
    floor's (each server's best run).
    """
    summary: dict[str, Any] = {"parity": _parity(runs["agentws"][0], runs["reference"][0])}
    if "floor" in runs:
        summary["floor_parity"] = _parity(runs["floor"][0], runs["reference"][0])
    for name, results in runs.items():
        for result in results:
            result.pop("answers", None)
        summary[name] = best_round(results, "throughput_rps")
        summary[f"{name}_rounds"] = results
    ours = summary["agentws"]["throughput_rps"]
    for key, other in (("throughput_ratio", "reference"), ("baseline_ratio", "baseline")):
        if other in summary:
            theirs = summary[other]["throughput_rps"]
            summary[key] = ours / theirs if theirs else math.nan
    if "floor" in summary:
        floor = summary["floor"]
        floor_rps, floor_cpu = floor["throughput_rps"], cpu_per_call(floor)
        summary["floor_throughput_ratio"] = ours / floor_rps if floor_rps else math.nan
        summary["floor_cpu_ratio"] = (
            cpu_per_call(summary["agentws"]) / floor_cpu if floor_cpu else math.nan
        )
    return summary


def _uvicorn_http() -> str:
    # Looked up, not imported: uvicorn picks httptools when it can be found.
    return "httptools" if importlib.util.find_spec("httptools") else "h11"


def run(args: argparse.Namespace) -> dict[str, Any]:
    nofile = raise_nofile_limit(max(4096, args.sessions * 3 + 512))
    if args.sessions and nofile < args.sessions * 2 + 256:
        raise BenchError(
            f"the open-files limit is {nofile}: too low for {args.sessions} sessions "
            "(raise the hard limit, or pass a smaller --sessions)"
        )
    corpus = make_corpus(documents=args.documents, seed=SEED)
    queries = list(corpus.queries)
    results: dict[str, Any] = {
        "mode": "mcp",
        "date": cli.now_utc(),
        "machine": describe_machine(_PACKAGES),
        "config": {
            "seconds": args.seconds,
            "warmup_s": args.warmup,
            "concurrency": args.concurrency,
            "limit": args.limit,
            "rounds": args.rounds,
            "documents": args.documents,
            "corpus_kb": corpus.total_bytes / 1024,
            "seed": SEED,
            "queries": len(queries),
            "sessions": args.sessions,
            "reference_response": args.reference_response,
            "floor": not args.no_floor,
            "nofile_limit": nofile,
        },
        "targets": {
            "throughput_ratio": THROUGHPUT_TARGET,
            "modern_throughput_ratio": THROUGHPUT_TARGET,
            "floor_cpu_ratio": FLOOR_CPU_TARGET,
            "oauth_to_static_ratio": oauth_auth.TARGET,
            "idle_sse_kb_per_session": SSE_TARGET_KB,
            "toolslist_p99_ms": TOOLSLIST_TARGET_P99_MS,
        },
        "uvicorn_http": _uvicorn_http(),
    }
    with cli.workdir("mcp", args.keep) as work, Processes(work) as procs:
        _say(f"setting up agentws in {work}")
        paths = write_corpus(corpus, work / "corpus")
        baseline = baseline_checkout(args, REPO, work, _say)
        # With a baseline, the candidate is this checkout's agentws, whatever is installed.
        site = set_up_agentws(work, paths, checkout=REPO if baseline else None)
        baseline_site = None
        if baseline is not None and args.only in (None, "throughput", "modern"):
            _say(f"setting up the baseline agentws ({baseline}) in {work / 'baseline'}")
            (work / "baseline").mkdir()
            baseline_site = set_up_agentws(work / "baseline", paths, checkout=baseline)
            results["baseline_checkout"] = {
                "path": str(args.baseline_checkout or args.baseline_rev),
                "commit": git_commit(
                    *((REPO, args.baseline_rev) if args.baseline_rev else (baseline,))
                ),
                "this_commit": git_commit(REPO),
            }
        reference_db = work / "reference.db"
        if args.only in (None, "throughput", "modern"):
            _copy_database(site.database_path, reference_db)
        for only, era in (("throughput", None), ("modern", modern.ERA)):
            if args.only not in (None, only):
                continue
            measures: dict[str, Callable[[int], dict[str, Any]]] = {
                "agentws": functools.partial(_measure_agentws, args, procs, site, queries, era=era),
                "reference": functools.partial(
                    _measure_reference, args, procs, reference_db, site.library, queries, era=era
                ),
            }
            if not args.no_floor:
                measures["floor"] = functools.partial(
                    _measure_floor, args, procs, reference_db, site.library, queries, era=era
                )
            if baseline_site is not None:
                measures["baseline"] = functools.partial(
                    _measure_agentws, args, procs, baseline_site, queries, era=era, name="baseline"
                )
                # This checkout and the baseline next to each other: A B R F, then F R B A.
                order = ("agentws", "baseline", "reference", "floor")
                measures = {k: measures[k] for k in order if k in measures}
            summary = _summarise_throughput(cli.abba_rounds(args.rounds, measures, note_noise))
            if era is None:
                results.update(summary)
            else:
                results["modern"] = summary
        if args.only in (None, "throughput", "modern"):
            # After the rounds, on a quiet machine: the query's own cost, the floor under both.
            results["query_floor"] = query_floor.measure(
                reference_db, site.workspace, site.group, queries, args.limit
            )
        if args.only in (None, "sessions") and args.sessions:
            results["idle_sse"] = measure_sessions(args, procs, site)
        if args.only in (None, "oauth"):
            results["oauth"] = measure_oauth(args, procs, site)
        if args.only in (None, "toolslist"):
            # Last: the connectors it attaches would otherwise change the other measures.
            results["toolslist"] = measure_toolslist(args, procs, site)
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = cli.run_and_report("mcp", args, run, render)
    if isinstance(results, int):
        return results
    failed_calls = sum(
        part.get(n, {}).get("errors_all_rounds", 0)
        for part in (results, results.get("modern", {}))
        for n in ("agentws", "reference", "baseline", "floor")
    ) + results.get("toolslist", {}).get("errors", 0)
    failed_calls += sum(
        results.get("oauth", {}).get(n, {}).get("errors_all_rounds", 0) for n in ("static", "oauth")
    )
    if failed_calls:
        return 1
    if args.check and not passed(results):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
