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
3. the resident memory of 1,000 idle legacy (2024-11-05) SSE sessions on a
   fresh agentws process;
4. ``tools/list`` latency on agentws for a group with 5 remote MCP
   connectors and 200 cached tools (plus 3 built-ins: the 2 context tools
   and get_approval),
   under the same closed-loop load (agentws only: the cache is agentws's);
5. measure 1 again in the stateless revision, 2026-07-28: each call a
   self-contained POST with no session, against the same reference started
   in the SDK's stateless mode (``stateless_http=True``), same load and
   rounds (see :mod:`benchlib.modern`);
6. the cost of an OAuth access token per request beside a static token:
   2026-07-28 ``tools/list`` with each token in turn on one agentws (see
   :mod:`benchlib.oauth_auth`).

The servers run one after the other, each in its own process; the load
comes from a third process. Results are printed as Markdown and written as
JSON (``--json-out``). Targets: agentws throughput at least 1.25x the
reference (2025-11-25 sessions) and 1.25x (2026-07-28, stateless); under
100 KB of RSS per idle SSE session; tools/list p99 under 20 ms; an OAuth
token's requests at least 0.9x a static token's.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sqlite3
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import cli, modern, oauth_auth, query_floor
from benchlib.agentws_setup import (
    AgentwsSite,
    add_connectors,
    agentws_bin,
    agentws_env,
    set_up_agentws,
)
from benchlib.corpus import SEED, make_corpus, write_corpus
from benchlib.machine import describe_machine
from benchlib.procs import BenchError, Child, Processes, raise_nofile_limit
from benchlib.report import cpu_cores, fmt, report_head, rounds_note, verdict

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
DEFAULT_JSON_OUT = REPO / "bench-results" / "mcp.json"

THROUGHPUT_TARGET = 1.25  # agentws / reference, tools/call per second (gateway scale)
SSE_TARGET_KB = 100.0  # resident memory per idle legacy SSE session
TOOLSLIST_TARGET_P99_MS = 20.0  # tools/list p99 latency, 5 connectors / 200 cached tools
TOOLSLIST_CONNECTORS = 5
TOOLSLIST_TOOLS_EACH = 40
# The built-ins the group offers: the two context tools (it has a library) and
# get_approval (it has connector tools).
_BUILTIN_TOOLS = 3
# Seconds a server gets to start listening.
_START_TIMEOUT_S = 30.0
_PACKAGES = ["agentws", "mcp", "uvicorn", "hypercorn", "trio", "anyio", "starlette", "httpx2"]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scripts/bench mcp",
        description=(
            "Benchmark the MCP group endpoint: tools/call search_context throughput and "
            "latency, agentws against the mcp SDK's MCPServer on uvicorn under the same "
            "load, the same in the stateless 2026-07-28 revision against the SDK's stateless "
            "mode, resident memory of idle legacy SSE sessions, tools/list latency "
            "for a group with 5 connectors and 200 cached tools, and an OAuth access "
            "token's cost per request beside a static token's."
        ),
        epilog=(
            "Targets: agentws throughput >= 1.25x the reference (2025-11-25 sessions) and "
            ">= 1.25x (2026-07-28, stateless); < 100 KB RSS per idle "
            "SSE session; tools/list p99 < 20 ms; OAuth token calls/s >= 0.9x a static "
            "token's. Exit status 0 when the run completed "
            "(see --check), 1 when it failed (including any failed call)."
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
            "runs per server, in ABBA order (agentws, reference, reference, agentws, ...); "
            "the best run of each is reported"
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
    cli.add_output_args(parser, DEFAULT_JSON_OUT)
    args = parser.parse_args(argv)
    if min(args.seconds, args.concurrency, args.documents, args.rounds) <= 0 or args.warmup < 0:
        parser.error("--seconds, --concurrency, --documents and --rounds must be positive")
    return args


_say = cli.logger("mcp")


def _wait_until_answering(child: Child, url: str) -> None:
    cli.wait_until_answering(child, url, _START_TIMEOUT_S)


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


def _start_agentws(procs: Processes, site: AgentwsSite, name: str, sessions: int) -> Child:
    cap = str(max(1000, sessions * 2))
    env = agentws_env(
        site.database_url,
        AGENTWS_BIND="127.0.0.1:0",
        AGENTWS_MCP_MAX_SESSIONS=cap,
        AGENTWS_MCP_MAX_SESSIONS_PER_TOKEN=cap,
    )
    child = procs.start(name, [str(agentws_bin()), "serve", "--json"], env=env)
    return child


def _start_reference(
    procs: Processes, database: Path, library: str, response: str, n: int, era: str | None
) -> Child:
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
    return procs.start(f"reference-{n}", argv)


def _run_load(procs: Processes, job: dict[str, Any]) -> dict[str, Any]:
    return cli.run_load_client(procs, "load.py", job, job["warmup_s"] + job["seconds"] + 120)


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
) -> dict[str, Any]:
    _say(f"agentws, round {n}: serving" + (f" ({era})" if era else ""))
    audit_before = _audit_rows(site.database_path)
    server = _start_agentws(procs, site, f"agentws-{n}", args.sessions)
    base_url = server.read_json_line(_START_TIMEOUT_S)["base_url"]
    _wait_until_answering(server, base_url + "/healthz")
    _say(f"agentws, round {n}: load for {args.warmup:g}+{args.seconds:g} s")
    job = _job(args, base_url + site.path, site.token, server.pid, queries, era)
    result = _run_load(procs, job)
    status = procs.stop(server)
    result["server_exit_status"] = status
    result["audit_rows_written"] = _audit_rows(site.database_path) - audit_before
    if status != 0:
        _say(f"agentws exited with status {status}\n{server.log_tail()}")
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
    server = _start_reference(procs, database, library, args.reference_response, n, era)
    listening = server.read_json_line(_START_TIMEOUT_S)
    url = listening["url"]
    # Its root (a 404): in stateless mode a GET of the MCP path opens a stream that never ends.
    _wait_until_answering(server, listening["base_url"])
    _say(f"reference, round {n}: load for {args.warmup:g}+{args.seconds:g} s")
    result = _run_load(procs, _job(args, url, None, server.pid, queries, era))
    result["server_exit_status"] = procs.stop(server)
    return result


def _measure_sessions(
    args: argparse.Namespace, procs: Processes, site: AgentwsSite
) -> dict[str, Any]:
    import trio
    from benchlib.sse_idle import measure_idle_sessions

    _say(f"agentws: {args.sessions} idle legacy SSE sessions")
    server = _start_agentws(procs, site, "agentws-sessions", args.sessions)
    base_url = server.read_json_line(_START_TIMEOUT_S)["base_url"]
    _wait_until_answering(server, base_url + "/healthz")
    result: dict[str, Any] = trio.run(
        measure_idle_sessions, base_url + site.path, site.token, server.pid, args.sessions
    )
    result["server_exit_status"] = procs.stop(server)
    return result


def _measure_toolslist(
    args: argparse.Namespace, procs: Processes, site: AgentwsSite
) -> dict[str, Any]:
    _say(
        f"agentws: {TOOLSLIST_CONNECTORS} connectors with {TOOLSLIST_TOOLS_EACH} cached "
        "tools each, attached to the group"
    )
    added = add_connectors(site, TOOLSLIST_CONNECTORS, TOOLSLIST_TOOLS_EACH)
    expected = added["tools"] + _BUILTIN_TOOLS
    server = _start_agentws(procs, site, "agentws-toolslist", args.sessions)
    base_url = server.read_json_line(_START_TIMEOUT_S)["base_url"]
    _wait_until_answering(server, base_url + "/healthz")
    job = {
        "url": base_url + site.path,
        "token": site.token,
        "method": "tools/list",
        "expect_tools": expected,
        "concurrency": args.concurrency,
        "warmup_s": args.warmup,
        "seconds": args.seconds,
        "server_pid": server.pid,
    }
    result: dict[str, Any] = {
        "connectors": added["connectors"],
        "cached_tools": added["tools"],
        "tools_listed": expected,
    }
    runs = [("paced", args.list_rate), ("saturated", None)]
    for name, rate in runs:
        pace = f"{rate:g} calls/s each" if rate else "back to back"
        _say(
            f"agentws: tools/list ({expected} tools), {args.concurrency} clients {pace}, "
            f"load for {args.warmup:g}+{args.seconds:g} s"
        )
        run = _run_load(procs, {**job, "rate_per_client": rate})
        run.pop("answers", None)
        _note_noise(run)
        result[name] = run
    status = procs.stop(server)
    result["server_exit_status"] = status
    if status != 0:
        _say(f"agentws exited with status {status}\n{server.log_tail()}")
    result["errors"] = sum(result[name]["errors"] for name, _ in runs)
    return result


def _measure_oauth(args: argparse.Namespace, procs: Processes, site: AgentwsSite) -> dict[str, Any]:
    _say("agentws: an OAuth access token for the group (registration, consent, code exchange)")
    tokens = {"static": site.token, "oauth": oauth_auth.issue_oauth_token(site)}
    server = _start_agentws(procs, site, "agentws-oauth", args.sessions)
    base_url = server.read_json_line(_START_TIMEOUT_S)["base_url"]
    _wait_until_answering(server, base_url + "/healthz")
    job = {
        "url": base_url + site.path,
        # The 2026-07-28 listing has no get_approval: a stateless caller reads approvals.
        "expect_tools": _BUILTIN_TOOLS - 1,
        "concurrency": args.concurrency,
        "warmup_s": args.warmup,
        "seconds": args.seconds,
        "server_pid": server.pid,
    }

    def note(what: str, result: dict[str, Any]) -> None:
        _say(f"agentws, {what}:")
        _note_noise(result)

    try:
        result = oauth_auth.measure(job, tokens, args.rounds, lambda j: _run_load(procs, j), note)
    finally:
        status = procs.stop(server)
    result["server_exit_status"] = status
    if status != 0:
        _say(f"agentws exited with status {status}\n{server.log_tail()}")
    return result


def _parity(agentws: dict[str, Any], reference: dict[str, Any]) -> dict[str, Any]:
    ours, theirs = agentws.get("answers", {}), reference.get("answers", {})
    common = sorted(set(ours) & set(theirs))
    differing = [q for q in common if ours[q] != theirs[q]]
    return {"queries_compared": len(common), "queries_differing": differing}


def _note_noise(result: dict[str, Any]) -> None:
    """How much CPU other processes took during the measured window, in cores."""
    cpu_cores(result)
    _say(
        f"  {result['throughput_rps']:.1f} calls/s, p50 {result['p50_ms']:.1f} ms, "
        f"p99 {result['p99_ms']:.1f} ms, {result['errors']} failed, "
        f"other processes {result['other_cpu_cores']:.2f} cores"
    )


def _summarise_throughput(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The best run of each server (the one least disturbed), with every run kept."""
    summary: dict[str, Any] = {"parity": _parity(runs["agentws"][0], runs["reference"][0])}
    for name, results in runs.items():
        for result in results:
            result.pop("answers", None)
        best = dict(max(results, key=lambda r: r["throughput_rps"]))
        best["errors_all_rounds"] = sum(r["errors"] for r in results)
        best["throughput_all_rounds"] = [r["throughput_rps"] for r in results]
        best["other_cpu_cores_max"] = max(r["other_cpu_cores"] for r in results)
        best["client_cpu_cores_max"] = max(r["client_cpu_cores"] for r in results)
        summary[name] = best
        summary[f"{name}_rounds"] = results
    reference_rps = summary["reference"]["throughput_rps"]
    summary["throughput_ratio"] = (
        summary["agentws"]["throughput_rps"] / reference_rps if reference_rps else math.nan
    )
    return summary


def _throughput_rows(results: dict[str, Any]) -> list[list[str]]:
    ours, ref = results["agentws"], results["reference"]
    ratio = results["throughput_ratio"]
    rows = [
        [
            "tools/call search_context throughput (calls/s)",
            fmt(ours["throughput_rps"]),
            fmt(ref["throughput_rps"]),
            f">= {THROUGHPUT_TARGET:g}x reference",
            f"{verdict(ratio >= THROUGHPUT_TARGET)} ({ratio:.2f}x)",
        ],
        ["latency p50 (ms)", fmt(ours["p50_ms"]), fmt(ref["p50_ms"]), "— (reported)", "—"],
        ["latency p99 (ms)", fmt(ours["p99_ms"]), fmt(ref["p99_ms"]), "— (reported)", "—"],
        [
            "failed calls (all rounds)",
            str(ours["errors_all_rounds"]),
            str(ref["errors_all_rounds"]),
            "0",
            verdict(ours["errors_all_rounds"] == 0 and ref["errors_all_rounds"] == 0),
        ],
    ]
    if ours.get("server_cpu_s") is not None and ref.get("server_cpu_s") is not None:
        per_call = [
            1000 * r["server_cpu_s"] / r["calls"] if r["calls"] else math.nan for r in (ours, ref)
        ]
        rows.append(
            [
                "server CPU per call (ms, all threads)",
                fmt(per_call[0], 2),
                fmt(per_call[1], 2),
                "— (reported)",
                "—",
            ]
        )
    return rows


def _sessions_row(sessions: dict[str, Any]) -> list[str]:
    per = sessions.get("per_session_kb", math.nan)
    complete = sessions.get("opened") == sessions["count"] and not sessions.get("failed")
    passed = complete and not math.isnan(per) and per < SSE_TARGET_KB
    return [
        f"RSS per idle legacy SSE session (KB, {sessions.get('opened', 0)} of "
        f"{sessions['count']} open)",
        fmt(per),
        "n/a",
        f"< {SSE_TARGET_KB:g} KB",
        verdict(passed),
    ]


def _toolslist_rows(toolslist: dict[str, Any]) -> list[list[str]]:
    paced, saturated = toolslist["paced"], toolslist["saturated"]
    p99 = paced["p99_ms"]
    passed = paced["calls"] > 0 and toolslist["errors"] == 0 and p99 < TOOLSLIST_TARGET_P99_MS
    what = f"{toolslist['connectors']} connectors / {toolslist['cached_tools']} cached tools"
    return [
        [
            f"tools/list p99, {what}, {paced['concurrency']} clients at "
            f"{paced['rate_per_client']:g}/s each (ms)",
            fmt(p99),
            "n/a",
            f"< {TOOLSLIST_TARGET_P99_MS:g} ms",
            verdict(passed),
        ],
        [
            f"tools/list calls/s, {what}, {saturated['concurrency']} clients back to back (p99 ms)",
            f"{fmt(saturated['throughput_rps'])} ({fmt(saturated['p99_ms'])})",
            "n/a",
            "—",
            verdict(None),
        ],
    ]


def _toolslist_notes(t: dict[str, Any], config: dict[str, Any]) -> list[str]:
    lines = [
        f"- tools/list: {t['tools_listed']} tools listed ({t['cached_tools']} cached tools of "
        f"{t['connectors']} remote MCP connectors attached to the group, plus "
        f"{t['tools_listed'] - t['cached_tools']} built-ins, about "
        f"{t['paced'].get('response_kb', 0):,.0f} KB per answer), one agentws process, "
        f"{config['concurrency']} clients with a Streamable HTTP session each, "
        f"{config['warmup_s']:g} s warm-up, {config['seconds']:g} s measured per run."
    ]
    for name, how in (
        (
            "paced",
            "each calling at random (Poisson) times, latency counted from when a call was "
            "due (a call that waits behind a slow one is charged for the wait)",
        ),
        ("saturated", "each calling back to back: the most the machine serves"),
    ):
        r = t[name]
        rate = f" at {r['rate_per_client']:g}/s" if r.get("rate_per_client") else ""
        cpu = (
            f"{fmt(1000 * r['server_cpu_s'] / r['calls'], 2)} ms of agentws CPU per call, "
            if r.get("server_cpu_s") is not None and r["calls"]
            else ""
        )
        lines.append(
            f"- tools/list, {name} ({how}){rate}: {fmt(r['throughput_rps'])} calls/s, "
            f"p50 {fmt(r['p50_ms'])} ms, p90 {fmt(r['p90_ms'])} ms, p99 {fmt(r['p99_ms'])} ms, "
            f"max {fmt(r['max_ms'])} ms, {r['errors']} failed calls; {cpu}the load client "
            f"{r['client_cpu_cores']:.2f} cores, other processes {r['other_cpu_cores']:.2f} cores."
        )
    return lines


def _throughput_setup_notes(results: dict[str, Any]) -> list[str]:
    packages = results["machine"]["packages"]
    config = results["config"]
    return [
        f"- Reference: mcp {packages['mcp']} `MCPServer` + `streamable_http_app("
        + ("json_response=True" if config["reference_response"] == "json" else "")
        + f")` on uvicorn {packages['uvicorn']} (asyncio loop, "
        f"{results.get('uvicorn_http', 'h11')}), tool `search_context(query, limit)` running "
        "agentws's FTS5 query (same index: a copy of the same database; not limited to a "
        "group's libraries) in "
        "the SDK's worker threads; no auth, no audit.",
        f"- Load: one client process, {config['concurrency']} workers, each with its own "
        f"initialized Streamable HTTP session calling tools/call back to back; "
        f"{config['warmup_s']:g} s warm-up, then {config['seconds']:g} s measured; servers "
        f"one after the other, {config['rounds']} round(s) each in ABBA order, best round "
        "shown (all rounds in the JSON).",
        f"- Corpus: {config['documents']} Markdown documents ({config['corpus_kb']:,.0f} KB, "
        f"seed {config['seed']}), {config['queries']} queries in a fixed order, "
        f"limit={config['limit']}.",
    ]


def render(results: dict[str, Any]) -> str:
    machine = results["machine"]
    config = results["config"]
    rows: list[list[str]] = []
    if "agentws" in results:
        rows += _throughput_rows(results)
    if "idle_sse" in results:
        rows.append(_sessions_row(results["idle_sse"]))
    if "toolslist" in results:
        rows += _toolslist_rows(results["toolslist"])
    if "modern" in results:
        rows += modern.rows(results["modern"])
    if "oauth" in results:
        rows += oauth_auth.rows(results["oauth"])
    packages = machine["packages"]
    lines = [
        *report_head("mcp", results["date"], rows, machine),
        f"- agentws {packages['agentws']} (`agentws serve`: Hypercorn {packages['hypercorn']}, "
        f"trio {packages['trio']}, SQLite store): on every request the bearer token is "
        "looked up and the session checked against it"
        + (
            "; on every tools/call the tool is looked up among the group's, its arguments "
            "validated, and the search limited to the group's libraries" + _audit_note(results)
            if "agentws" in results
            else ""
        )
        + (
            "; on every tools/list the catalog version is read and the group's list is "
            "reused while it stands still"
            if "toolslist" in results
            else ""
        )
        + ".",
    ]
    if "agentws" in results:
        lines += _throughput_setup_notes(results)
    if "parity" in results:
        parity = results["parity"]
        differing = len(parity["queries_differing"])
        same = parity["queries_compared"] - differing
        lines.append(
            f"- Same answers (ranked URIs) from both servers for {same} of "
            f"{parity['queries_compared']} queries"
            + (
                f"; differing: {', '.join(map(repr, parity['queries_differing'][:5]))}"
                if differing
                else "."
            )
        )
    if "agentws" in results:
        rounds = ", ".join(
            f"{name} " + " / ".join(fmt(v) for v in results[name]["throughput_all_rounds"])
            for name in ("agentws", "reference")
        )
        noise = max(results[n]["other_cpu_cores_max"] for n in ("agentws", "reference"))
        client = max(results[n]["client_cpu_cores_max"] for n in ("agentws", "reference"))
        lines.append(rounds_note("Calls/s", rounds, client, noise))
    if "idle_sse" in results:
        s = results["idle_sse"]
        if "rss_before_kb" in s:
            lines.append(
                f"- Idle sessions: agentws VmRSS {s['rss_before_kb'] / 1024:,.1f} MB before, "
                f"{s['rss_open_kb'] / 1024:,.1f} MB with {s['opened']} open (initialized, "
                f"opened in {s['open_s']:.1f} s), {s['rss_after_close_kb'] / 1024:,.1f} MB "
                "after closing them (freed memory stays with the allocator and is reused)."
            )
        for error in s.get("errors", [])[:3]:
            lines.append(f"- Session error: {error}")
    if "toolslist" in results:
        lines += _toolslist_notes(results["toolslist"], config)
    if "modern" in results:
        lines += modern.notes(results, config, packages["mcp"])
    if "oauth" in results:
        lines += oauth_auth.notes(results["oauth"], config)
    if "query_floor" in results:
        floor = results["query_floor"]
        if "agentws" in results:
            lines.append(query_floor.note("2025-11-25", floor, results, THROUGHPUT_TARGET))
        if "modern" in results:
            lines.append(query_floor.note(modern.ERA, floor, results["modern"], modern.TARGET))
    for name in ("agentws", "reference"):
        for error in results.get(name, {}).get("error_samples", [])[:3]:
            lines.append(f"- {name} error: {error}")
    for name in ("paced", "saturated"):
        for error in results.get("toolslist", {}).get(name, {}).get("error_samples", [])[:3]:
            lines.append(f"- tools/list ({name}) error: {error}")
    return "\n".join(lines)


def _audit_note(results: dict[str, Any]) -> str:
    rounds = results.get("agentws_rounds")
    if not rounds:
        return ""
    rows = sum(r.get("audit_rows_written", 0) for r in rounds)
    calls = sum(r.get("calls_total", 0) for r in rounds)
    per_call = rows / calls if calls else 0.0
    return f"; audit-log rows written: {rows:,} for {calls:,} calls ({per_call:.2f} a call)"


def _uvicorn_http() -> str:
    try:
        import httptools  # noqa: F401
    except ImportError:
        return "h11"
    return "httptools"


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
            "nofile_limit": nofile,
        },
        "targets": {
            "throughput_ratio": THROUGHPUT_TARGET,
            "modern_throughput_ratio": modern.TARGET,
            "oauth_to_static_ratio": oauth_auth.TARGET,
            "idle_sse_kb_per_session": SSE_TARGET_KB,
            "toolslist_p99_ms": TOOLSLIST_TARGET_P99_MS,
        },
        "uvicorn_http": _uvicorn_http(),
    }
    with cli.workdir("mcp", args.keep) as work, Processes(work) as procs:
        _say(f"setting up agentws in {work}")
        paths = write_corpus(corpus, work / "corpus")
        site = set_up_agentws(work, paths)
        reference_db = work / "reference.db"
        if args.only in (None, "throughput", "modern"):
            _copy_database(site.database_path, reference_db)
        if args.only in (None, "throughput"):
            runs = cli.abba_rounds(
                args.rounds,
                lambda n: _measure_agentws(args, procs, site, queries, n),
                lambda n: _measure_reference(args, procs, reference_db, site.library, queries, n),
                _note_noise,
            )
            results.update(_summarise_throughput(runs))
        if args.only in (None, "modern"):
            runs = cli.abba_rounds(
                args.rounds,
                lambda n: _measure_agentws(args, procs, site, queries, n, modern.ERA),
                lambda n: _measure_reference(
                    args, procs, reference_db, site.library, queries, n, modern.ERA
                ),
                _note_noise,
            )
            results["modern"] = _summarise_throughput(runs)
        if args.only in (None, "throughput", "modern"):
            # After the rounds, on a quiet machine: the query's own cost, the floor under both.
            results["query_floor"] = query_floor.measure(
                reference_db, site.workspace, site.group, queries, args.limit
            )
        if args.only in (None, "sessions") and args.sessions:
            results["idle_sse"] = _measure_sessions(args, procs, site)
        if args.only in (None, "oauth"):
            results["oauth"] = _measure_oauth(args, procs, site)
        if args.only in (None, "toolslist"):
            # Last: the connectors it attaches would otherwise change the other measures.
            results["toolslist"] = _measure_toolslist(args, procs, site)
    return results


def _passed(results: dict[str, Any]) -> bool:
    ok = True
    if "throughput_ratio" in results:
        ok &= results["throughput_ratio"] >= THROUGHPUT_TARGET
    if "modern" in results:
        ok &= modern.passed(results["modern"])
    if "oauth" in results:
        ok &= oauth_auth.passed(results["oauth"])
    if "idle_sse" in results:
        ok &= _sessions_row(results["idle_sse"])[-1] == "PASS"
    if "toolslist" in results:
        ok &= _toolslist_rows(results["toolslist"])[0][-1] == "PASS"
    return ok


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = cli.run_and_report("mcp", args, run, render)
    if isinstance(results, int):
        return results
    failed_calls = sum(
        part.get(n, {}).get("errors_all_rounds", 0)
        for part in (results, results.get("modern", {}))
        for n in ("agentws", "reference")
    ) + results.get("toolslist", {}).get("errors", 0)
    failed_calls += sum(
        results.get("oauth", {}).get(n, {}).get("errors_all_rounds", 0) for n in ("static", "oauth")
    )
    if failed_calls:
        return 1
    if args.check and not _passed(results):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
