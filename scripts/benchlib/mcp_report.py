"""The report of ``scripts/bench mcp``: its table rows, its notes, its targets.

``render`` turns the results of ``scripts/bench_mcp.py`` into the Markdown
the mode prints; ``passed`` says whether every target was met. With a
baseline checkout (``--baseline-checkout``, ``--baseline-rev``), the
tools/call rows are followed by this checkout's figures beside the
baseline's, measured in the same rounds. Unless the run skipped it
(``--no-floor``), each tools/call measure also has the floor's rows: a
plain handler on Hypercorn (:mod:`benchlib.plain_handler`) serving the same
query in the same rounds, whose server CPU per call agentws's is held to.
"""

from __future__ import annotations

import math
from typing import Any

from benchlib import modern, oauth_auth, query_floor
from benchlib.raw_http import CONNECTION_NOTE
from benchlib.report import fmt, report_head, rounds_note, verdict

__all__ = [
    "BASELINE_TARGET",
    "FLOOR_CPU_TARGET",
    "SSE_TARGET_KB",
    "THROUGHPUT_TARGET",
    "TOOLSLIST_TARGET_P99_MS",
    "cpu_per_call",
    "passed",
    "render",
    "throughput_rows",
]

# agentws / the SDK's reference, tools/call per second in the same run; the
# target of both rows, 2025-11-25 sessions and 2026-07-28 stateless (issue 41).
THROUGHPUT_TARGET = 1.0
# agentws's server CPU per call / the plain handler's (the floor), same run, both rows.
FLOOR_CPU_TARGET = 1.15
BASELINE_TARGET = 0.95  # this checkout / the baseline checkout: no regression beyond 5%
SSE_TARGET_KB = 100.0  # resident memory per idle legacy SSE session
TOOLSLIST_TARGET_P99_MS = 20.0  # tools/list p99 latency, 5 connectors / 200 cached tools


def throughput_rows(summary: dict[str, Any], label: str, target: float) -> list[list[str]]:
    """The rows of one tools/call throughput measure (2025-11-25 sessions, or stateless).

    ``summary`` is ``bench_mcp``'s summary of its rounds; with a baseline
    checkout among them, its rows follow (:func:`baseline_rows`).
    """
    ours, ref = summary["agentws"], summary["reference"]
    ratio = summary["throughput_ratio"]
    rows = [
        [
            f"{label} search_context throughput (calls/s)",
            fmt(ours["throughput_rps"]),
            fmt(ref["throughput_rps"]),
            f">= {target:.2f}x reference",
            f"{verdict(throughput_passed(summary, target))} ({ratio:.2f}x)",
        ],
        [
            f"{label} latency p50 / p99 (ms)",
            f"{fmt(ours['p50_ms'])} / {fmt(ours['p99_ms'])}",
            f"{fmt(ref['p50_ms'])} / {fmt(ref['p99_ms'])}",
            "— (reported)",
            "—",
        ],
        [
            f"{label} failed calls (all rounds)",
            str(ours["errors_all_rounds"]),
            str(ref["errors_all_rounds"]),
            "0",
            verdict(ours["errors_all_rounds"] == 0 and ref["errors_all_rounds"] == 0),
        ],
    ]
    if ours.get("server_cpu_s") is not None and ref.get("server_cpu_s") is not None:
        rows.append(
            [
                f"{label} server CPU per call (ms, all threads)",
                fmt(cpu_per_call(ours), 2),
                fmt(cpu_per_call(ref), 2),
                "— (reported)",
                "—",
            ]
        )
    return rows + floor_rows(summary, label) + baseline_rows(summary, label)


def cpu_per_call(result: dict[str, Any]) -> float:
    """The server's CPU ms per measured call in one run (all its threads); NaN if unknown."""
    server = result.get("server_cpu_s")
    return 1000 * server / result["calls"] if server is not None and result["calls"] else math.nan


def floor_passed(summary: dict[str, Any]) -> bool:
    """Whether agentws's server CPU per call was at most ``FLOOR_CPU_TARGET`` times the floor's."""
    ratio = summary.get("floor_cpu_ratio", math.nan)
    return not math.isnan(ratio) and ratio <= FLOOR_CPU_TARGET


def floor_rows(summary: dict[str, Any], label: str) -> list[list[str]]:
    """agentws beside the floor (the plain handler), same load, same rounds."""
    if "floor" not in summary:
        return []
    ours, floor = summary["agentws"], summary["floor"]
    ratio = summary["floor_cpu_ratio"]
    return [
        [
            f"{label}: the floor, a plain handler on Hypercorn (reference column), calls/s",
            fmt(ours["throughput_rps"]),
            fmt(floor["throughput_rps"]),
            "— (reported)",
            f"— ({summary['floor_throughput_ratio']:.2f}x)",
        ],
        [
            f"{label}: server CPU per call, agentws vs the floor (reference column) (ms)",
            fmt(cpu_per_call(ours), 3),
            fmt(cpu_per_call(floor), 3),
            f"<= {FLOOR_CPU_TARGET:g}x floor",
            f"{verdict(floor_passed(summary))} ({ratio:.2f}x)",
        ],
        [
            f"{label}: the floor's latency p50 / p99 (reference column) (ms)",
            f"{fmt(ours['p50_ms'])} / {fmt(ours['p99_ms'])}",
            f"{fmt(floor['p50_ms'])} / {fmt(floor['p99_ms'])}",
            "— (reported)",
            "—",
        ],
        [
            f"{label}: the floor's failed calls (all rounds)",
            str(ours["errors_all_rounds"]),
            str(floor["errors_all_rounds"]),
            "0",
            verdict(floor["errors_all_rounds"] == 0),
        ],
    ]


def throughput_passed(summary: dict[str, Any], target: float) -> bool:
    """Whether agentws served at least ``target`` times the reference's calls/s."""
    ratio = summary["throughput_ratio"]
    return not math.isnan(ratio) and ratio >= target


def baseline_passed(summary: dict[str, Any]) -> bool:
    """Whether this checkout served at least ``BASELINE_TARGET`` times the baseline's calls/s."""
    ratio = summary.get("baseline_ratio", math.nan)
    return not math.isnan(ratio) and ratio >= BASELINE_TARGET


def baseline_rows(summary: dict[str, Any], label: str) -> list[list[str]]:
    """This checkout's agentws beside the baseline checkout's, same load, same rounds."""
    if "baseline" not in summary:
        return []
    ours, base = summary["agentws"], summary["baseline"]
    ratio = summary["baseline_ratio"]
    return [
        [
            f"{label}: this checkout (agentws) vs the baseline checkout (reference column), "
            "calls/s",
            fmt(ours["throughput_rps"]),
            fmt(base["throughput_rps"]),
            f">= {BASELINE_TARGET:g}x baseline",
            f"{verdict(baseline_passed(summary))} ({ratio:.3f}x)",
        ],
        [
            f"{label}: latency p50 / p99, this checkout vs the baseline (ms)",
            f"{fmt(ours['p50_ms'])} / {fmt(ours['p99_ms'])}",
            f"{fmt(base['p50_ms'])} / {fmt(base['p99_ms'])}",
            "— (reported)",
            "—",
        ],
        [
            f"{label}: server CPU per call, this checkout vs the baseline (ms)",
            fmt(cpu_per_call(ours), 3),
            fmt(cpu_per_call(base), 3),
            "— (reported)",
            "—",
        ],
    ]


def _baseline_notes(results: dict[str, Any]) -> list[str]:
    baseline = results.get("baseline_checkout")
    if not baseline:
        return []
    lines = [
        f"- Baseline: agentws from {baseline['path']}"
        + (f" (commit {baseline['commit']})" if baseline.get("commit") else "")
        + ", beside this checkout's working tree (at commit "
        + f"{baseline.get('this_commit') or 'unknown'}): "
        "each on a database of its own set up by its own CLI with the same documents, "
        "served in turn in the same rounds (this checkout, the baseline, the reference; then "
        "the reverse order), the same load client."
    ]
    for key, label in (("agentws", "2025-11-25"), ("modern", modern.ERA)):
        part = results if key == "agentws" else results.get("modern", {})
        if "baseline" not in part:
            continue
        pairs = zip(
            part["agentws"]["throughput_rps_all_rounds"],
            part["baseline"]["throughput_rps_all_rounds"],
            strict=True,
        )
        lines.append(
            f"- {label}, this checkout over the baseline in each round: "
            + ", ".join(f"{a / b:.3f}x" if b else "n/a" for a, b in pairs)
            + "."
        )
    return lines


def _floor_setup_note(results: dict[str, Any]) -> list[str]:
    if "floor" not in results and "floor" not in results.get("modern", {}):
        return []
    packages = results["machine"]["packages"]
    return [
        "- Floor: a plain ASGI handler (`benchlib/plain_handler.py`) on Hypercorn "
        f"{packages['hypercorn']} (trio {packages['trio']} worker, configured as `agentws serve` "
        "configures it) running the reference's query and formatting its result in a worker "
        "thread (`trio.to_thread.run_sync`); just enough MCP JSON-RPC for the same load "
        "client (initialize with a session id, 2026-07-28 requests on their own), JSON "
        "answers; no framework, no MCP SDK, no token, no audit. Served in the same rounds as "
        "the other two; the target holds agentws's server CPU per call to "
        f"{FLOOR_CPU_TARGET:g}x the floor's."
    ]


def _floor_notes(label: str, summary: dict[str, Any]) -> list[str]:
    """For a measure with the floor: its answers beside the reference's, each round's calls/s."""
    if "floor" not in summary:
        return []
    parity = summary["floor_parity"]
    differing = len(parity["queries_differing"])
    lines = [
        f"- {label}, the floor: same answers (ranked URIs) as the reference for "
        f"{parity['queries_compared'] - differing} of {parity['queries_compared']} queries"
        + (
            f"; differing: {', '.join(map(repr, parity['queries_differing'][:5]))}"
            if differing
            else ""
        )
        + "; calls/s in each round "
        + " / ".join(fmt(v) for v in summary["floor"]["throughput_rps_all_rounds"])
        + ", server CPU per call (ms, best round) "
        + f"agentws {fmt(cpu_per_call(summary['agentws']), 3)}, "
        + f"reference {fmt(cpu_per_call(summary['reference']), 3)}, "
        + f"floor {fmt(cpu_per_call(summary['floor']), 3)}."
    ]
    for error in summary["floor"].get("error_samples", [])[:3]:
        lines.append(f"- {label} floor error: {error}")
    return lines


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
        f"initialized Streamable HTTP session calling tools/call back to back over "
        f"{CONNECTION_NOTE}; "
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
        rows += throughput_rows(results, "tools/call", THROUGHPUT_TARGET)
    if "idle_sse" in results:
        rows.append(_sessions_row(results["idle_sse"]))
    if "toolslist" in results:
        rows += _toolslist_rows(results["toolslist"])
    if "modern" in results:
        rows += throughput_rows(results["modern"], modern.LABEL, THROUGHPUT_TARGET)
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
    lines += _floor_setup_note(results)
    lines += _baseline_notes(results)
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
    lines += _floor_notes("2025-11-25", results)
    if "agentws" in results:
        peers = [n for n in ("agentws", "reference", "floor") if n in results]
        rounds = ", ".join(
            f"{name} " + " / ".join(fmt(v) for v in results[name]["throughput_rps_all_rounds"])
            for name in peers
        )
        noise = max(results[n]["other_cpu_cores_max"] for n in peers)
        client = max(results[n]["client_cpu_cores_max"] for n in peers)
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
        lines += _floor_notes(modern.ERA, results["modern"])
    if "oauth" in results:
        lines += oauth_auth.notes(results["oauth"], config)
    if "query_floor" in results:
        floor = results["query_floor"]
        if "agentws" in results:
            lines.append(query_floor.note("2025-11-25", floor, results, THROUGHPUT_TARGET))
        if "modern" in results:
            lines.append(query_floor.note(modern.ERA, floor, results["modern"], THROUGHPUT_TARGET))
    for name in ("agentws", "reference", "baseline"):
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


def passed(results: dict[str, Any]) -> bool:
    """Whether every target of the run was met."""
    ok = True
    if "throughput_ratio" in results:
        ok &= throughput_passed(results, THROUGHPUT_TARGET)
    for part in (results, results.get("modern", {})):
        if "baseline" in part:
            ok &= baseline_passed(part)
        if "floor" in part:
            ok &= floor_passed(part) and part["floor"]["errors_all_rounds"] == 0
    if "modern" in results:
        ok &= throughput_passed(results["modern"], THROUGHPUT_TARGET)
    if "oauth" in results:
        ok &= oauth_auth.passed(results["oauth"])
    if "idle_sse" in results:
        ok &= _sessions_row(results["idle_sse"])[-1] == "PASS"
    if "toolslist" in results:
        ok &= _toolslist_rows(results["toolslist"])[0][-1] == "PASS"
    return ok
